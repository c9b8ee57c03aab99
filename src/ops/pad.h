/* Pad's geometry, shared by pad.c and the CUDA kernels of cuda/ops/pad.cu:
 * the per-axis kept range and begin pad, and the map from an output index
 * to the input index it copies (AMD_HD: host and device under nvcc, so both
 * sides run the same formula). */
#ifndef AMD_OPS_PAD_H
#define AMD_OPS_PAD_H

#ifdef __cplusplus
extern "C" {
#endif
#include "op.h"
#ifdef __cplusplus
}
#endif

#include "random.h" /* AMD_HD */

#ifdef __cplusplus
extern "C" {
#endif

enum { AMD_PAD_CONSTANT, AMD_PAD_REFLECT, AMD_PAD_EDGE, AMD_PAD_WRAP };

/* Along axis i the input elements lo[i] .. lo[i] + len[i] are kept (negative
 * pads crop), and output index k copies input amd_pad_map(mode, k, lo[i],
 * len[i], pb[i]) (-1: the fill value); pb[i] is the positive begin pad. */
typedef struct amd_pad_geom {
  int rank, mode;
  int64_t xdims[AMD_MAX_RANK], ydims[AMD_MAX_RANK];
  int64_t lo[AMD_MAX_RANK], len[AMD_MAX_RANK], pb[AMD_MAX_RANK];
} amd_pad_geom;

/* The geometry of a Pad node for x = in[0] (the pads and the axes read from
 * the attributes or from inputs 1 and 3, on the host; input 2 is not read, so
 * it may be in device memory); y's dims are what the node's inference gives. */
int amd_pad_geometry(const amd_node *n, const amd_tensor *const *in, amd_pad_geom *g, amd_status *st);
/* Constant mode's fill value: the attribute, or input 2 (read: on the host), or 0. */
double amd_pad_fill(const amd_node *n, const amd_tensor *const *in);

static inline AMD_HD int64_t amd_pad_map(int mode, int64_t k, int64_t lo, int64_t len, int64_t pb) {
  int64_t j = k - pb;
  if (j >= 0 && j < len) return lo + j;
  switch (mode) {
  case AMD_PAD_EDGE:
    return lo + (j < 0 ? 0 : len - 1);
  case AMD_PAD_WRAP:
    return lo + ((j % len) + len) % len;
  case AMD_PAD_REFLECT: {
    if (len == 1) return lo;
    int64_t period = 2 * (len - 1);
    int64_t m = ((j % period) + period) % period;
    return lo + (m < len ? m : period - m);
  }
  default:
    return -1;
  }
}

#ifdef __cplusplus
}
#endif
#endif

/* Shared by the files of cuda/ (not by host code): the backend's state, the
 * caching allocator, launch helpers and the per-op entry points.
 *
 * Every kernel is queued on amd_cu.stream; nothing synchronises except the
 * copies to the host. Launches are followed by AMD_CUDA_CHECK_LAUNCH. */
#ifndef AMD_CUDA_INTERNAL_H
#define AMD_CUDA_INTERNAL_H

#include "backend_cuda.h"
#include "cuda_check.h"
#include "mode_gemm.h"

extern "C" {
#include "../src/ops/attrs.h"
#include "../src/report/profile.h"
}

struct amd_cuda_state {
  int open, device;
  int poison_outputs; /* amd_cuda_poison_outputs: native outputs start as NaN (tests) */
  int capturing;      /* the stream is being captured into a CUDA graph */
  cudaStream_t stream;
  amd_cuda_gemm_ctx *gemm;
};
extern amd_cuda_state amd_cu;

/* Caching allocator: device memory by rounded size, reused without
 * cudaMalloc once a pass has run (blocks go back on free, stream order keeps
 * reuse safe). amd_cu_malloc does not zero. */
int amd_cu_malloc(void **p, size_t bytes, amd_status *st);
void amd_cu_free(void *p);

/* Scratch for the large transient buffers of one op (Conv's im2col matrix,
 * its reordered output / gradient, and its bias spread over an image for the
 * GEMMs that add it themselves), given back with amd_cu_scratch_done
 * when the op has queued its kernels (the one stream orders the reuse). With
 * the arena it is arena memory held only while the op runs, so the peak
 * counts it only where it adds to what is live then (a training step's peak
 * comes early in its backward pass, at ResNet-50's small last layers, while
 * the largest im2col matrices belong to the first). With the block cache it
 * is one grow-only buffer per slot that every Conv shares (cached blocks of
 * each layer's own size would all stay held) and _done does nothing. */
enum { AMD_CU_WS_COL, AMD_CU_WS_OUT, AMD_CU_WS_BIAS, AMD_CU_WS_COUNT };
int amd_cu_scratch(int slot, size_t bytes, void **p, amd_status *st);
void amd_cu_scratch_done(void *p);

/* Frees the q8 ops' device state and their q8 GEMM context (cuda/ops/q8f.cu; at backend close). */
void q8f_close(void);

/* A launch configuration for n independent elements (grid-stride loops). */
static inline unsigned amd_cu_blocks(int64_t n, int threads = 256) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  if (b > 65536) b = 65536;
  return (unsigned)b;
}
#define AMD_CU_LOOP(i, n)                                                                                    \
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                                  \
       i += (int64_t)gridDim.x * blockDim.x)

/* --profile: a stage's GPU time, from the backend's device clock (CUDA
 * events, backend_cuda.cu; 0 when not profiling). */
static inline double amd_cu_prof_t0(void) { return amd_prof_on ? amd_prof_clock() : 0; }
static inline void amd_cu_prof_stage(double t0, amd_prof_stage s, double macs) {
  if (amd_prof_on) amd_prof_stage_add(s, amd_prof_clock() - t0, macs);
}

/* Per-op entry points (cuda/ops/: the table by op index in dispatch.cu, the
 * kernels in <family>.cu): forward / backward of one native node, with the
 * signatures of amd_backend.forward / backward. */
typedef int (*amd_cu_fwd_fn)(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                             amd_status *st);
typedef int (*amd_cu_bwd_fn)(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in,
                             const amd_tensor *out, const amd_tensor *const *dout, amd_tensor *const *din,
                             amd_status *st);
/* Whether the kernels handle a node of the op (attributes, ranks; in may be
 * NULL), beyond its data inputs being float. */
typedef int (*amd_cu_supports_fn)(const amd_node *n, const amd_tensor *const *in);
typedef struct amd_cu_op {
  amd_cu_fwd_fn forward; /* NULL: no kernels (host fallback) */
  amd_cu_bwd_fn backward;
  unsigned host_inputs;
  unsigned bwd_overwrite;      /* inputs k whose din the backward can write over (ctx->bwd_overwrite) */
  amd_cu_supports_fn supports; /* NULL: every node with float data inputs */
  /* where set, the inputs read on the host for this node (replaces host_inputs) */
  unsigned (*host_inputs_of)(const amd_node *n);
} amd_cu_op;
/* The table entry of a node's op (by its op index), or NULL (host fallback). */
const amd_cu_op *amd_cu_find_op(const amd_node *n);
/* 1 when the native kernels handle this node with these inputs (dtypes,
 * ranks, attributes); in may be NULL. */
int amd_cu_node_ok(const amd_node *n, const amd_tensor *const *in);

#endif

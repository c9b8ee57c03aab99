/* The geometry of the index ops of index.c that the CUDA kernels of
 * cuda/ops/index.cu share: GatherND's offsets, Trilu's diagonal and the
 * element maps of DepthToSpace / SpaceToDepth. The inline functions are
 * AMD_HD (host and device under nvcc), so both sides run the same formulas. */
#ifndef AMD_OPS_INDEX_H
#define AMD_OPS_INDEX_H

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

/* GatherND: batch_dims (0 before version 12). */
typedef struct amd_gathernd_attrs {
  int64_t batch_dims;
} amd_gathernd_attrs;

/* GatherND of data x by indices idx (int32 / int64, on the host): cnt index
 * tuples, each naming a slice of `slice` contiguous elements of x that starts
 * at element off[t] (off: cnt entries, filled when not NULL; negative indices
 * add the axis size, others out of range fail). Checks the shapes; out_dims /
 * out_rank (when not NULL) get the output's shape. */
int amd_gathernd_geometry(const amd_tensor *x, const amd_tensor *idx, int64_t batch_dims, int64_t *off,
                          int64_t *cnt, int64_t *slice, int64_t *out_dims, int *out_rank, amd_status *st);

/* GatherElements, ScatterElements, Scatter (index.c) and ScatterND
 * (expand.c): the reduction that combines an update with its element. */
enum { AMD_SCATTER_NONE, AMD_SCATTER_ADD, AMD_SCATTER_MUL, AMD_SCATTER_MAX, AMD_SCATTER_MIN };
typedef struct amd_elements_attrs {
  int64_t axis;
  int reduction; /* ScatterElements from 16 */
} amd_elements_attrs;

/* GatherElements / ScatterElements of data x by indices idx (int32 / int64,
 * on the host) along axis: checks the shapes, and when off is given fills
 * off[i], the element of x that index element i names (negative indices add
 * the axis size, others out of range fail). */
int amd_elements_geometry(const amd_tensor *x, const amd_tensor *idx, int64_t axis, int64_t *off,
                          amd_status *st);

typedef struct amd_scatternd_attrs {
  int reduction; /* from 16 */
} amd_scatternd_attrs;

/* ScatterND of in[2] (updates) into in[0] (data) at in[1] (indices, on the
 * host): *cnt updates of *slice contiguous elements each, into data of
 * *slots slots (the elements of its first k axes); slot[u] (when not NULL)
 * is update u's slot (index values checked). Checks the shapes. */
int amd_scatternd_geometry(const amd_tensor *const *in, int64_t *cnt, int64_t *slice, int64_t *slots,
                           int64_t *slot, amd_status *st);

/* The combination of element y with update v, as the CPU folds them. */
#define AMD_SCATTER_COMBINE(red, y, v)                                                                       \
  ((red) == AMD_SCATTER_ADD   ? (y) + (v)                                                                    \
   : (red) == AMD_SCATTER_MUL ? (y) * (v)                                                                    \
   : (red) == AMD_SCATTER_MAX ? ((y) >= (v) ? (y) : (v))                                                     \
                              : ((y) <= (v) ? (y) : (v)))

/* Trilu: upper (1) or lower (0); the diagonal k from input 1 (host) or 0. */
typedef struct amd_trilu_attrs {
  int upper;
} amd_trilu_attrs;
int amd_trilu_k(const amd_node *n, const amd_tensor *const *in, int64_t *k, amd_status *st);

/* Element (row i, column j) of a matrix is kept: j - i >= k (upper) or <= k (lower). */
static inline AMD_HD int amd_trilu_keep(int upper, int64_t k, int64_t i, int64_t j) {
  return upper ? j - i >= k : j - i <= k;
}

/* DepthToSpace (mode DCR or CRD) and SpaceToDepth: blocksize b. */
typedef struct amd_d2s_attrs {
  int64_t blocksize;
  int crd; /* mode CRD (else DCR): DepthToSpace from 11, SpaceToDepth from 28 */
} amd_d2s_attrs;

/* Output [n, oc, oh, ow] from input [n, ic, ih, iw]: every output element is
 * one input element (a permutation). s2d: SpaceToDepth, else DepthToSpace. */
typedef struct amd_space_geom {
  int64_t n, oc, oh, ow, ic, ih, iw, b;
  int crd, s2d;
} amd_space_geom;

/* The input element that output element o is. DepthToSpace: y[n, c, h*b+i,
 * w*b+j] = x[n, ic, h, w] with ic = (i*b + j)*oc + c (DCR) or c*b*b + i*b + j
 * (CRD); SpaceToDepth: y[n, oc, h, w] = x[n, c, h*b+i, w*b+j] with oc = (i*b +
 * j)*ic + c (DCR) or c*b*b + i*b + j (CRD, from version 28). */
static inline AMD_HD int64_t amd_space_src(const amd_space_geom *g, int64_t o) {
  int64_t ow = o % g->ow, r = o / g->ow;
  int64_t oh = r % g->oh;
  r /= g->oh;
  int64_t oc = r % g->oc, n = r / g->oc, b = g->b;
  if (g->s2d) {
    int64_t q = g->crd ? oc % (b * b) : oc / g->ic, c = g->crd ? oc / (b * b) : oc % g->ic;
    int64_t h = oh * b + q / b, w = ow * b + q % b;
    return ((n * g->ic + c) * g->ih + h) * g->iw + w;
  }
  int64_t h = oh / b, i = oh % b, w = ow / b, j = ow % b;
  int64_t ic = g->crd ? oc * b * b + i * b + j : (i * b + j) * g->oc + oc;
  return ((n * g->ic + ic) * g->ih + h) * g->iw + w;
}

/* The geometry from the input x and the node (DepthToSpace or SpaceToDepth);
 * checks the shape (rank 4, divisible sizes). */
int amd_space_geometry(const amd_node *n, const amd_tensor *x, amd_space_geom *g, amd_status *st);

#ifdef __cplusplus
}
#endif

#endif

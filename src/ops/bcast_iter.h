/* An element-by-element walk over a numpy broadcast (header-only, for the op
 * files that combine operands of different dtypes or many operands: Pow, Min,
 * Max in elementwise.c; Where, the comparisons and the logic ops in logic.c).
 *
 * bc_init takes the output shape and up to BC_MAX_OPS operand shapes (each
 * broadcastable to it, already checked by the op's infer); after it, off[k] is
 * the element offset in operand k of output element 0, and bc_next moves every
 * offset on to the next output element in row-major order. Operands that are
 * broadcast along an axis have stride 0 there. Dims of size 1 are dropped and
 * adjacent dims merged where every operand allows it, so an equal-shape walk
 * is one flat run. */
#ifndef AMD_OPS_BCAST_ITER_H
#define AMD_OPS_BCAST_ITER_H

#include "op.h"

#define BC_MAX_OPS 3

typedef struct bc_iter {
  int nd, nops;
  int64_t dim[AMD_MAX_RANK], idx[AMD_MAX_RANK];
  int64_t str[BC_MAX_OPS][AMD_MAX_RANK];
  int64_t off[BC_MAX_OPS];
} bc_iter;

static inline void bc_init(bc_iter *it, const amd_tensor *out, const amd_tensor *const *ops, int nops) {
  int64_t full[BC_MAX_OPS][AMD_MAX_RANK];
  AMD_ASSERT(nops >= 1 && nops <= BC_MAX_OPS);
  it->nops = nops;
  for (int k = 0; k < nops; k++) amd_broadcast_strides(ops[k], out, full[k]);
  int nd = 0;
  for (int i = 0; i < out->rank; i++) {
    if (out->dims[i] == 1) continue;
    int merge = nd > 0;
    for (int k = 0; merge && k < nops; k++) merge = it->str[k][nd - 1] == full[k][i] * out->dims[i];
    if (merge) {
      it->dim[nd - 1] *= out->dims[i];
      for (int k = 0; k < nops; k++) it->str[k][nd - 1] = full[k][i];
      continue;
    }
    it->dim[nd] = out->dims[i];
    for (int k = 0; k < nops; k++) it->str[k][nd] = full[k][i];
    nd++;
  }
  it->nd = nd;
  for (int d = 0; d < nd; d++) it->idx[d] = 0;
  for (int k = 0; k < nops; k++) it->off[k] = 0;
}

static inline void bc_next(bc_iter *it) {
  for (int d = it->nd - 1; d >= 0; d--) {
    for (int k = 0; k < it->nops; k++) it->off[k] += it->str[k][d];
    if (++it->idx[d] < it->dim[d]) return;
    for (int k = 0; k < it->nops; k++) it->off[k] -= it->str[k][d] * it->dim[d];
    it->idx[d] = 0;
  }
}

#endif

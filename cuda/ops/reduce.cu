/* CUDA kernels of ReduceMean over trailing axes (src/ops/reduce.c). */
#include "ops_internal.h"

/* ================================================================ ReduceMean (trailing axes) */

/* The [outer, inner] view when the reduced axes are exactly the trailing
 * ones (dims of size 1 ignored); 0 when not. */
static int mean_view(const amd_node *n, const amd_tensor *const *in, int64_t *outer, int64_t *inner) {
  amd_status st;
  int mask[AMD_MAX_RANK];
  const amd_tensor *x = in[0];
  if (amd_red_mask(n, in, mask, &st) != 0) return 0;
  int k = x->rank;
  while (k > 0 && (mask[k - 1] || x->dims[k - 1] == 1)) k--;
  for (int d = 0; d < k; d++)
    if (mask[d] && x->dims[d] != 1) return 0;
  *outer = prod(x->dims, 0, k);
  *inner = prod(x->dims, k, x->rank);
  return *inner > 0;
}

__global__ void k_mean_fwd(int64_t outer, int64_t inner, const float *x, float *y) {
  AMD_CU_LOOP(o, outer) {
    double acc = 0;
    for (int64_t i = 0; i < inner; i++) acc += x[o * inner + i];
    y[o] = (float)(acc / (double)inner);
  }
}

__global__ void k_mean_bwd(int64_t total, int64_t inner, double scale, const float *g, float *dx) {
  AMD_CU_LOOP(i, total) dx[i] += (float)(g[i / inner] * scale);
}

int mean_forward(FWD_ARGS) {
  (void)ctx;
  int64_t outer, inner;
  if (!mean_view(n, in, &outer, &inner)) return amd_fail(st, "ReduceMean: not over trailing axes");
  if (!outer) return 0;
  k_mean_fwd<<<amd_cu_blocks(outer, 128), 128, 0, amd_cu.stream>>>(outer, inner, F(in[0]), F(&out[0]));
  AMD_CUDA_CHECK_LAUNCH("k_mean_fwd", st);
  return 0;
}

int mean_backward(BWD_ARGS) {
  (void)ctx, (void)out;
  if (!dout[0] || !din[0]) return 0;
  int64_t outer, inner;
  if (!mean_view(n, in, &outer, &inner)) return amd_fail(st, "ReduceMean: not over trailing axes");
  int64_t total = outer * inner;
  if (!total) return 0;
  k_mean_bwd<<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(total, inner, (double)outer / (double)total,
                                                              F(dout[0]), F(din[0]));
  AMD_CUDA_CHECK_LAUNCH("k_mean_bwd", st);
  return 0;
}

int mean_supported(const amd_node *n, const amd_tensor *const *in) {
  int64_t o, i;
  return !in || (in[0] && mean_view(n, in, &o, &i));
}

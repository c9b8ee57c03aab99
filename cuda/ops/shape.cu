/* CUDA kernels of the shape ops (src/ops/shape.c): the copies (Flatten,
 * Reshape, Identity, Squeeze, Unsqueeze), Concat and Dropout. */
#include "ops_internal.h"

/* ================================================================ copies: Flatten, Reshape, Identity,
 * Squeeze, Unsqueeze */

int copy_forward(FWD_ARGS) {
  (void)n, (void)ctx;
  size_t bytes = amd_tensor_nbytes(&out[0]);
  if (bytes)
    AMD_CUDA_CHECK(cudaMemcpyAsync(out[0].data, in[0]->data, bytes, cudaMemcpyDeviceToDevice, amd_cu.stream),
                   st);
  return 0;
}

int copy_backward(BWD_ARGS) {
  (void)n, (void)in, (void)out;
  if (!dout[0] || !din[0]) return 0;
  return add_into(F(din[0]), F(dout[0]), amd_tensor_numel(din[0]), st, acc_of(ctx, 0));
}

/* ================================================================ Concat */

int concat_forward(FWD_ARGS) {
  (void)ctx;
  const amd_axis_attrs *a = (const amd_axis_attrs *)n->attrs;
  int axis = amd_axis(a->axis, out[0].rank, st);
  if (axis < 0) return -1;
  int64_t outer = prod(out[0].dims, 0, axis), inner = prod(out[0].dims, axis + 1, out[0].rank);
  size_t row = (size_t)(out[0].dims[axis] * inner) * 4, off = 0;
  for (int k = 0; k < n->n_in; k++) {
    size_t block = (size_t)(in[k]->dims[axis] * inner) * 4;
    if (block && outer)
      AMD_CUDA_CHECK(cudaMemcpy2DAsync((char *)out[0].data + off, row, in[k]->data, block, block,
                                       (size_t)outer, cudaMemcpyDeviceToDevice, amd_cu.stream),
                     st);
    off += block;
  }
  return 0;
}

__global__ void k_concat_bwd(int64_t outer, int64_t block, int64_t row, int64_t off, const float *g,
                             float *d) {
  AMD_CU_LOOP(i, outer * block) d[i] += g[(i / block) * row + off + i % block];
}

int concat_backward(BWD_ARGS) {
  (void)ctx;
  if (!dout[0]) return 0;
  const amd_axis_attrs *a = (const amd_axis_attrs *)n->attrs;
  int axis = amd_axis(a->axis, out[0].rank, st);
  if (axis < 0) return -1;
  int64_t outer = prod(out[0].dims, 0, axis), inner = prod(out[0].dims, axis + 1, out[0].rank);
  int64_t row = out[0].dims[axis] * inner, off = 0;
  for (int k = 0; k < n->n_in; k++) {
    int64_t block = in[k]->dims[axis] * inner;
    if (din[k] && block && outer) {
      k_concat_bwd<<<amd_cu_blocks(outer * block), 256, 0, amd_cu.stream>>>(outer, block, row, off,
                                                                            F(dout[0]), F(din[k]));
      AMD_CUDA_CHECK_LAUNCH("k_concat_bwd", st);
    }
    off += block;
  }
  return 0;
}

/* ================================================================ Dropout */

/* the masks: draw i of the stream at ctx->rng for element i (amd_splitmix_at,
 * src/ops/random.h), the draws the CPU makes one after the other */
__global__ void k_dropout(int64_t cnt, uint64_t s0, double ratio, double scale, const float *x, float *y,
                          int accumulate) {
  AMD_CU_LOOP(i, cnt) {
    double u = amd_rng_u01(amd_splitmix_at(s0, i));
    int keep = u >= ratio;
    if (accumulate) {
      if (keep) y[i] += (float)(x[i] * scale);
    } else {
      y[i] = keep ? (float)((double)x[i] * scale) : 0.0f;
    }
  }
}

int dropout_forward(FWD_ARGS) {
  double ratio;
  int training;
  amd_dropout_mode(n, ctx, in, &ratio, &training);
  int64_t cnt = amd_tensor_numel(in[0]);
  if (!training || ratio == 0) {
    if (cnt)
      AMD_CUDA_CHECK(
          cudaMemcpyAsync(out[0].data, in[0]->data, (size_t)cnt * 4, cudaMemcpyDeviceToDevice, amd_cu.stream),
          st);
    return 0;
  }
  if (!(ratio >= 0 && ratio <= 1)) return amd_fail(st, "ratio %g out of [0, 1]", ratio);
  double scale = ratio < 1 ? 1.0 / (1.0 - ratio) : 0.0;
  if (cnt) {
    k_dropout<<<amd_cu_blocks(cnt), 256, 0, amd_cu.stream>>>(cnt, ctx->rng, ratio, scale, F(in[0]),
                                                             F(&out[0]), 0);
    AMD_CUDA_CHECK_LAUNCH("k_dropout", st);
  }
  ctx->rng = amd_splitmix_skip(ctx->rng, cnt); /* as cnt sequential draws */
  return 0;
}

int dropout_backward(BWD_ARGS) {
  (void)out;
  if (!dout[0] || !din[0]) return 0;
  double ratio;
  int training;
  amd_dropout_mode(n, ctx, in, &ratio, &training);
  int64_t cnt = amd_tensor_numel(in[0]);
  if (!cnt) return 0;
  if (!training || ratio == 0) return add_into(F(din[0]), F(dout[0]), cnt, st);
  if (!(ratio >= 0 && ratio <= 1)) return amd_fail(st, "ratio %g out of [0, 1]", ratio);
  double scale = ratio < 1 ? 1.0 / (1.0 - ratio) : 0.0;
  k_dropout<<<amd_cu_blocks(cnt), 256, 0, amd_cu.stream>>>(cnt, ctx->rng, ratio, scale, F(dout[0]), F(din[0]),
                                                           1);
  AMD_CUDA_CHECK_LAUNCH("k_dropout", st);
  return 0;
}

int dropout_supported(const amd_node *n, const amd_tensor *const *in) {
  (void)in;
  return !(n->n_out > 1 && n->out[1] >= 0); /* no mask output */
}

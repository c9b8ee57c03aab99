/* CUDA kernels of the shape ops (src/ops/shape.c): the copies (Flatten,
 * Reshape, Identity, Squeeze, Unsqueeze), Concat, Dropout, Transpose and
 * Gather. */
#include "../train_cuda.h" /* amd_cu_from_host: Gather's indices */
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

/* The ratio (input 1) is read on the host unless the loader took it from a
 * constant (amd_dropout_attrs.ratio_const); training_mode (input 2) is a
 * bool, which lives on the host anyway. */
unsigned dropout_host_inputs(const amd_node *n) {
  const amd_dropout_attrs *a = (const amd_dropout_attrs *)n->attrs;
  return a->ratio_const ? 0x4u : 0x6u;
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

/* ================================================================ Transpose */

/* The output is a view of x (a permutation of its strides): forward gathers
 * it, backward scatter-adds dY through the same view (a bijection, so no two
 * threads write one element). */
int transpose_forward(FWD_ARGS) {
  (void)ctx;
  amd_view v;
  if (amd_transpose_view(n, in[0], &v, st)) return -1;
  return view_launch(v, amd_tensor_numel(in[0]), F(in[0]), F(&out[0]), false, st);
}

int transpose_backward(BWD_ARGS) {
  (void)ctx, (void)out;
  if (!dout[0] || !din[0]) return 0;
  amd_view v;
  if (amd_transpose_view(n, in[0], &v, st)) return -1;
  return view_launch(v, amd_tensor_numel(in[0]), F(dout[0]), F(din[0]), true, st);
}

/* ================================================================ Gather */

/* y[o, j, i] = x[o, idx[j], i] (x viewed as [outer, dim, inner], indices
 * already made non-negative on the host; one index (idx NULL) comes by
 * value as idx0: nothing to upload, so a step with it can be captured into
 * a CUDA graph, e.g. a ViT's class token) */
template <typename I>
__global__ void k_gather(I outer, I cnt, I inner, I dim, const int64_t *idx, I idx0, const float *x,
                         float *y) {
  AMD_CU_LOOP_I(I, e, outer * cnt * inner) {
    const I i = e % inner, oj = e / inner, j = oj % cnt, o = oj / cnt;
    y[e] = x[((int64_t)o * dim + (idx ? (I)idx[j] : idx0)) * inner + i];
  }
}

/* dx[o, v, i] += dy[o, j, i] for every j with idx[j] == v, in the order of j
 * (the CPU's order: repeated indices add up the same way); one thread per
 * element of dx, so no atomics. */
__global__ void k_gather_bwd(int64_t outer, int64_t cnt, int64_t inner, int64_t dim, const int64_t *idx,
                             int64_t idx0, const float *dy, float *dx) {
  AMD_CU_LOOP(e, outer * dim * inner) {
    const int64_t i = e % inner, v = (e / inner) % dim, o = e / (inner * dim);
    float acc = dx[e];
    bool hit = false;
    for (int64_t j = 0; j < cnt; j++)
      if ((idx ? idx[j] : idx0) == v) {
        acc += dy[(o * cnt + j) * inner + i];
        hit = true;
      }
    if (hit) dx[e] = acc;
  }
}

/* k_gather_bwd for a single index (a class token, one of the parts that a
 * fused projection is split into): dx[o, idx0, i] += dy[o, i], one thread per
 * element of dy, the rest of dx untouched. */
template <typename I>
__global__ void k_gather_bwd1(I outer, I inner, I dim, I idx0, const float *dy, float *dx) {
  AMD_CU_LOOP_I(I, e, outer * inner) {
    const I o = e / inner, i = e - o * inner;
    float &d = dx[((int64_t)o * dim + idx0) * inner + i];
    d = d + dy[e];
  }
}

/* The geometry of a Gather node, its indices checked, made non-negative and
 * uploaded into idx (the caller's scratch); a single index is left in *idx0
 * instead (idx->p stays NULL). */
static int gather_setup(const amd_node *n, const amd_tensor *const *in, int64_t *outer, int64_t *cnt,
                        int64_t *inner, int64_t *dim, scratch *idx, int64_t *idx0, amd_status *st) {
  const amd_axis_attrs *a = (const amd_axis_attrs *)n->attrs;
  const amd_tensor *x = in[0], *ind = in[1];
  if (ind->device != AMD_DEVICE_CPU) return amd_fail(st, "Gather's indices are not on the host");
  const int axis = amd_axis(a->axis, x->rank, st);
  if (axis < 0) return -1;
  *outer = prod(x->dims, 0, axis);
  *dim = x->dims[axis];
  *inner = prod(x->dims, axis + 1, x->rank);
  *cnt = amd_tensor_numel(ind);
  int64_t *h = (int64_t *)malloc((size_t)(*cnt ? *cnt : 1) * sizeof *h);
  if (!h) return amd_fail(st, "out of memory");
  for (int64_t j = 0; j < *cnt; j++) {
    int64_t v = amd_tensor_get_i64(ind, j);
    if (v < -*dim || v >= *dim) {
      free(h);
      return amd_fail(st, "index %lld out of range for axis %d of size %lld", (long long)v, axis,
                      (long long)*dim);
    }
    h[j] = v < 0 ? v + *dim : v;
  }
  *idx0 = *cnt == 1 ? h[0] : 0;
  const size_t bytes = (size_t)*cnt * sizeof *h;
  int rc = *cnt != 1 && (idx->get(bytes, st) || (bytes && amd_cu_from_host(idx->p, h, bytes, st)));
  free(h);
  return rc ? -1 : 0;
}

int gather_forward(FWD_ARGS) {
  (void)ctx;
  int64_t outer, cnt, inner, dim, idx0;
  scratch idx;
  if (gather_setup(n, in, &outer, &cnt, &inner, &dim, &idx, &idx0, st)) return -1;
  const int64_t total = outer * cnt * inner;
  if (!total) return 0;
  const int64_t *ix = (const int64_t *)idx.p;
  if (fits32(outer * dim * inner) && fits32(total))
    k_gather<int><<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>((int)outer, (int)cnt, (int)inner, (int)dim,
                                                                   ix, (int)idx0, F(in[0]), F(&out[0]));
  else
    k_gather<int64_t><<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(outer, cnt, inner, dim, ix, idx0,
                                                                       F(in[0]), F(&out[0]));
  AMD_CUDA_CHECK_LAUNCH("k_gather", st);
  return 0;
}

int gather_backward(BWD_ARGS) {
  (void)ctx, (void)out;
  if (!dout[0] || !din[0]) return 0;
  int64_t outer, cnt, inner, dim, idx0;
  scratch idx;
  if (gather_setup(n, in, &outer, &cnt, &inner, &dim, &idx, &idx0, st)) return -1;
  const int64_t total = outer * dim * inner;
  if (!total || !cnt) return 0;
  if (cnt == 1) {
    if (fits32(total))
      k_gather_bwd1<int><<<amd_cu_blocks(outer * inner), 256, 0, amd_cu.stream>>>(
          (int)outer, (int)inner, (int)dim, (int)idx0, F(dout[0]), F(din[0]));
    else
      k_gather_bwd1<int64_t><<<amd_cu_blocks(outer * inner), 256, 0, amd_cu.stream>>>(outer, inner, dim, idx0,
                                                                                      F(dout[0]), F(din[0]));
    AMD_CUDA_CHECK_LAUNCH("k_gather_bwd1", st);
    return 0;
  }
  k_gather_bwd<<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(outer, cnt, inner, dim, (const int64_t *)idx.p,
                                                                idx0, F(dout[0]), F(din[0]));
  AMD_CUDA_CHECK_LAUNCH("k_gather_bwd", st);
  return 0;
}

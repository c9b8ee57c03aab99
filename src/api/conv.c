/* The library's GPU convolution on a caller's stream (include/amdnn.h:
 * amdnn_conv2d_plan, amdnn_conv2d_cuda, amdnn_conv2d_backward_cuda): the
 * shape checked and resolved by the Conv op's own geometry
 * (amd_conv_geometry, src/ops/conv.c), then the Conv node's kernels and
 * GEMM calls (cuda/conv2d.h) through the GEMM context of the caller's
 * stream. */
#include <string.h>

#include "../ops/attrs.h"
#include "api.h"
#ifdef AMD_HAVE_CUDA
#include "../../cuda/conv2d.h"
#endif

/* The Conv geometry of s, or a status naming what is wrong with it. */
static amdnn_status *geometry_of(const char *fn, const amdnn_conv2d_shape *s, amd_conv_geom *g) {
  if (!s) return api_error(AMDNN_ERR_ARGUMENT, "%s: no shape", fn);
  const int64_t at_least_1[] = {s->c, s->h, s->w, s->m, s->kh, s->kw, s->groups, s->stride[0], s->stride[1],
                                s->dilation[0], s->dilation[1]};
  int positive = s->n >= 0;
  for (size_t i = 0; i < sizeof at_least_1 / sizeof at_least_1[0]; i++) positive &= at_least_1[i] >= 1;
  for (int i = 0; i < 4; i++) positive &= s->pads[i] >= 0;
  if (!positive)
    return api_error(AMDNN_ERR_ARGUMENT, "%s: a size, group count, stride or dilation under 1, a negative batch "
                     "or a negative pad", fn);
  /* every tensor's element count must fit comfortably in 64 bits */
  const double limit = 0x1p60, x = (double)s->n * s->c * s->h * s->w, w = (double)s->m * s->c * s->kh * s->kw;
  if (x > limit || w > limit || (double)s->h * s->w * s->kh * s->kw * s->c > limit)
    return api_error(AMDNN_ERR_ARGUMENT, "%s: the tensors are too large", fn);
  amd_conv_attrs a;
  memset(&a, 0, sizeof a);
  a.auto_pad = AMD_PAD_NOTSET;
  a.group = s->groups;
  a.n_kernel = 2, a.kernel_shape[0] = s->kh, a.kernel_shape[1] = s->kw;
  a.n_strides = 2, a.strides[0] = s->stride[0], a.strides[1] = s->stride[1];
  a.n_dilations = 2, a.dilations[0] = s->dilation[0], a.dilations[1] = s->dilation[1];
  a.n_pads = 4;
  for (int i = 0; i < 4; i++) a.pads[i] = s->pads[i];
  amd_tensor xt, wt;
  amd_tensor_set_shape(&xt, AMD_FLOAT, 4, (const int64_t[]){s->n, s->c, s->h, s->w});
  amd_tensor_set_shape(&wt, AMD_FLOAT, 4, (const int64_t[]){s->m, s->c / s->groups, s->kh, s->kw});
  amd_status st = {{0}};
  if (s->c % s->groups)
    return api_error(AMDNN_ERR_ARGUMENT, "%s: %lld channels are not divisible by %lld groups", fn, (long long)s->c,
                     (long long)s->groups);
  if (amd_conv_geometry(&a, &xt, &wt, g, &st)) return api_error(AMDNN_ERR_ARGUMENT, "%s: %s", fn, st.msg);
  return NULL;
}

amdnn_status *amdnn_conv2d_plan(const amdnn_conv2d_shape *s, int64_t *oh, int64_t *ow, size_t *forward_bytes,
                                size_t *backward_bytes) {
  amd_conv_geom g;
  amdnn_status *bad = geometry_of("amdnn_conv2d_plan", s, &g);
  if (bad) return bad;
  if (oh) *oh = g.out[0];
  if (ow) *ow = g.out[1];
#ifdef AMD_HAVE_CUDA
  if (forward_bytes) *forward_bytes = amd_cuda_conv2d_workspace(&g, 0);
  if (backward_bytes) *backward_bytes = amd_cuda_conv2d_workspace(&g, 1);
#else
  if (forward_bytes) *forward_bytes = 0;
  if (backward_bytes) *backward_bytes = 0;
#endif
  return NULL;
}

/* The checks both directions share: the multiplier, the shape, the pointers. */
static amdnn_status *check_call(const char *fn, const amdnn_multiplier *m, const amdnn_conv2d_shape *s,
                                amd_conv_geom *g, int n_ptrs, const void *const *ptrs) {
  if (m && m->m.q8)
    return api_error(AMDNN_ERR_ARGUMENT, "%s: %s is an 8-bit table, whose GEMM is on integer codes", fn, m->m.name);
  amdnn_status *bad = geometry_of(fn, s, g);
  if (bad) return bad;
  if (g->n > 0)
    for (int i = 0; i < n_ptrs; i++)
      if (!ptrs[i]) return api_error(AMDNN_ERR_ARGUMENT, "%s: a NULL tensor", fn);
  return NULL;
}

amdnn_status *amdnn_conv2d_cuda(const amdnn_multiplier *m, amdnn_gemm_tier tier, const amdnn_conv2d_shape *s,
                                const float *x, const float *w, const float *bias, float *y, void *workspace,
                                size_t workspace_bytes, void *cuda_stream) {
  const char *fn = "amdnn_conv2d_cuda";
  amd_conv_geom g;
  amdnn_status *bad = check_call(fn, m, s, &g, 3, (const void *const[]){x, w, y});
  if (bad) return bad;
#ifdef AMD_HAVE_CUDA
  amd_status st = {{0}};
  amd_cuda_gemm_ctx *ctx;
  if (api_cuda_gemm_ctx(cuda_stream, tier, &ctx, &st)) return api_from(&st, AMDNN_ERR_FAILED);
  if (amd_cuda_conv2d_forward(ctx, (cudaStream_t)cuda_stream, m ? &m->m : NULL, &g, x, w, bias, y, workspace,
                              workspace_bytes, &st))
    return api_error(AMDNN_ERR_FAILED, "%s: %s", fn, st.msg);
  return NULL;
#else
  (void)tier, (void)bias, (void)workspace, (void)workspace_bytes, (void)cuda_stream;
  return api_error(AMDNN_ERR_FAILED, "%s: this build has no CUDA backend (rebuild where nvcc is found)", fn);
#endif
}

amdnn_status *amdnn_conv2d_backward_cuda(const amdnn_multiplier *m, amdnn_gemm_tier tier, const amdnn_conv2d_shape *s,
                                         const float *x, const float *w, const float *dy, float *dx, float *dw,
                                         void *workspace, size_t workspace_bytes, void *cuda_stream) {
  const char *fn = "amdnn_conv2d_backward_cuda";
  amd_conv_geom g;
  amdnn_status *bad = check_call(fn, m, s, &g, 3, (const void *const[]){x, w, dy});
  if (bad) return bad;
#ifdef AMD_HAVE_CUDA
  amd_status st = {{0}};
  amd_cuda_gemm_ctx *ctx;
  if (api_cuda_gemm_ctx(cuda_stream, tier, &ctx, &st)) return api_from(&st, AMDNN_ERR_FAILED);
  if (amd_cuda_conv2d_backward(ctx, (cudaStream_t)cuda_stream, m ? &m->m : NULL, &g, x, w, dy, dx, dw, workspace,
                               workspace_bytes, &st))
    return api_error(AMDNN_ERR_FAILED, "%s: %s", fn, st.msg);
  return NULL;
#else
  (void)tier, (void)dx, (void)dw, (void)workspace, (void)workspace_bytes, (void)cuda_stream;
  return api_error(AMDNN_ERR_FAILED, "%s: this build has no CUDA backend (rebuild where nvcc is found)", fn);
#endif
}

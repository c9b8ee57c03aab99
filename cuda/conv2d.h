/* The library's GPU convolution (cuda/ops/conv.cu) for the public API
 * (amdnn_conv2d_cuda, src/api/conv.c): the same kernels and GEMM calls as
 * the Conv node, so the same bits, queued on a caller's stream through a
 * GEMM context bound to that stream, with the caller's workspace instead of
 * the backend's. Nothing synchronises with the host. */
#ifndef AMD_CUDA_CONV2D_H
#define AMD_CUDA_CONV2D_H

#include <stddef.h>

#include <cuda_runtime.h>

#include "mode_gemm.h"

#ifdef __cplusplus
extern "C" {
#endif

#include "../src/ops/attrs.h"

/* Bytes of workspace a forward (backward 0) or backward (1) pass of g needs
 * (0: none). */
size_t amd_cuda_conv2d_workspace(const amd_conv_geom *g, int backward);

/* y = conv(x, w) + bias (bias NULL: none), every product through mult (NULL: acc32). */
int amd_cuda_conv2d_forward(amd_cuda_gemm_ctx *gemm, cudaStream_t s, const amd_mult *mult, const amd_conv_geom *g,
                            const float *x, const float *w, const float *bias, float *y, void *ws, size_t ws_bytes,
                            amd_status *st);

/* dx and dw (either NULL: not wanted) written, not added to, from dy, both
 * GEMMs through mult. */
int amd_cuda_conv2d_backward(amd_cuda_gemm_ctx *gemm, cudaStream_t s, const amd_mult *mult, const amd_conv_geom *g,
                             const float *x, const float *w, const float *dy, float *dx, float *dw, void *ws,
                             size_t ws_bytes, amd_status *st);

#ifdef __cplusplus
}
#endif

#endif

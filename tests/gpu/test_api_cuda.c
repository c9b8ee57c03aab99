/* The public API on a GPU (include/amdnn.h and the CUDA runtime alone): the
 * device GEMM on a caller's stream (amdnn_gemm_cuda) against the host GEMM
 * (amdnn_gemm), strided and batched, with a stride-0 (broadcast) operand and
 * beta, on every mode: with K = 1 every output is one product (plus beta C)
 * and equal bit for bit; with K > 1 the two sum the same products in other
 * orders (the CPU's vector lanes, the GPU's tiles and split-K), so each
 * output is within (K + 4) 2^-23 S, S = sum |products| + |beta C| (the
 * bound of tests/gpu/test_cuda_gemm.cu); the convolution on a caller's
 * stream (amdnn_conv2d_cuda, its backward) against sums of the products on
 * the host within the same bound; and a session on cuda evaluating the
 * model to the CPU session's top-1 within 2 of 1000 samples (the other ops
 * sum in other orders: only a near tie can move). Skips (77) without a GPU.
 * usage: test_api_cuda MODELS_DIR IDX_DATA_DIR */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../api/api_check.h"

/* The bound of one output of a host GEMM: (K + 4) 2^-23 (sum over k of |a_ik b_kj| + |beta c_ij|). */
static double bound_of(const amdnn_multiplier *m, int ta, int tb, int M, int N, int K, const float *A, const float *B,
                       float beta, float c, int i, int j) {
  double s = fabs((double)beta * c);
  for (int k = 0; k < K; k++) {
    const float a = ta ? A[(size_t)k * M + i] : A[(size_t)i * K + k], b = tb ? B[(size_t)j * K + k] : B[(size_t)k * N + j];
    float p;
    amdnn_multiply(m, &a, &b, &p, 1);
    s += fabs((double)p);
  }
  return K == 1 ? 0 : (K + 4) * ldexp(1.0, -23) * s;
}

/* C_b = op(A) op(B_b) + beta C_b on the device and on the host, b < batch; A is broadcast (stride 0). */
static void compare(const char *mode, amdnn_gemm_tier tier, int ta, int tb, int M, int N, int K, int batch,
                    float beta, cudaStream_t stream) {
  amdnn_multiplier *m = NULL;
  if (!ok(amdnn_multiplier_open(mode, &m), mode)) return;
  const size_t na = (size_t)M * K, nb = (size_t)K * N * batch, nc = (size_t)M * N * batch;
  float *A = malloc(na * 4), *B = malloc(nb * 4), *C = malloc(nc * 4), *C0 = malloc(nc * 4), *G = malloc(nc * 4);
  uint32_t s = 12345u + (uint32_t)(M * 7 + N * 3 + K);
  for (size_t i = 0; i < na + nb + nc; i++) {
    s = s * 1664525u + 1013904223u;
    const float v = (float)((int)(s >> 9) % 4001 - 2000) / 700.0f;
    if (i < na) A[i] = v;
    else if (i < na + nb) B[i - na] = v;
    else C[i - na - nb] = C0[i - na - nb] = v;
  }
  float *dA, *dB, *dC;
  cudaMalloc((void **)&dA, na * 4), cudaMalloc((void **)&dB, nb * 4), cudaMalloc((void **)&dC, nc * 4);
  cudaMemcpyAsync(dA, A, na * 4, cudaMemcpyHostToDevice, stream);
  cudaMemcpyAsync(dB, B, nb * 4, cudaMemcpyHostToDevice, stream);
  cudaMemcpyAsync(dC, C, nc * 4, cudaMemcpyHostToDevice, stream);
  const int lda = ta ? M : K, ldb = tb ? K : N;
  char what[160];
  snprintf(what, sizeof what, "%s %s ta %d tb %d %dx%dx%d batch %d beta %g", mode, tier ? "exact" : "fast", ta, tb,
           M, N, K, batch, beta);
  int good = ok(amdnn_gemm_cuda(m, tier, ta, tb, M, N, K, 1.0f, dA, lda, 0, dB, ldb, (int64_t)K * N, beta, dC, N,
                                (int64_t)M * N, batch, stream), what);
  cudaMemcpyAsync(G, dC, nc * 4, cudaMemcpyDeviceToHost, stream);
  CHECK(cudaStreamSynchronize(stream) == cudaSuccess, "%s: the stream", what);
  for (int b = 0; good && b < batch; b++)
    good = ok(amdnn_gemm(m, ta, tb, M, N, K, 1.0f, A, lda, B + (size_t)b * K * N, ldb, beta, C + (size_t)b * M * N, N),
              what);
  size_t differ = 0, over = 0;
  double worst = 0;
  for (int b = 0; good && b < batch; b++)
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) {
        const size_t at = (size_t)b * M * N + (size_t)i * N + j;
        const double d = fabs((double)C[at] - G[at]);
        differ += memcmp(&C[at], &G[at], 4) != 0;
        worst = fmax(worst, d);
        if (d > 0) over += d > bound_of(m, ta, tb, M, N, K, A, B + (size_t)b * K * N, beta, C0[at], i, j);
      }
  CHECK(!good || over == 0, "%s: %zu of %zu outputs outside the summation bound (max |diff| %g)", what, over, nc, worst);
  if (good) printf("ok   %s: %zu of %zu differ, max %g, all within the bound\n", what, differ, nc, worst);
  cudaFree(dA), cudaFree(dB), cudaFree(dC);
  free(A), free(B), free(C), free(C0), free(G);
  amdnn_multiplier_close(m);
}

/* The convolution on a caller's stream (amdnn_conv2d_cuda and its backward)
 * against sums of amdnn_multiply's products on the host, in double: each
 * output of Y, dX and dW is within (terms + 4) 2^-23 of the sum of the
 * |products| it adds (bit for bit where it adds one product); the bias is
 * added exactly as a last term. */
typedef struct conv_ref {
  double *sum, *abs;
  int *terms;
} conv_ref;

static void ref_add(conv_ref *r, size_t at, const amdnn_multiplier *m, float a, float b) {
  float p;
  amdnn_multiply(m, &a, &b, &p, 1);
  r->sum[at] += p, r->abs[at] += fabs((double)p), r->terms[at]++;
}

static size_t over_bound(const float *got, const conv_ref *r, size_t n, double *worst) {
  size_t over = 0;
  for (size_t i = 0; i < n; i++) {
    const double d = fabs((double)got[i] - r->sum[i]);
    *worst = fmax(*worst, d);
    const double bound = r->terms[i] <= 1 ? ldexp(fabs(r->sum[i]), -24) : (r->terms[i] + 4) * ldexp(1.0, -23) * r->abs[i];
    over += d > bound;
  }
  return over;
}

static void compare_conv(const char *mode, amdnn_gemm_tier tier, amdnn_conv2d_shape s, cudaStream_t stream) {
  amdnn_multiplier *m = NULL;
  if (!ok(amdnn_multiplier_open(mode, &m), mode)) return;
  int64_t oh, ow;
  size_t fb, bb;
  if (!ok(amdnn_conv2d_plan(&s, &oh, &ow, &fb, &bb), "plan")) return;
  const int64_t cg = s.c / s.groups, mg = s.m / s.groups;
  const size_t nx = (size_t)(s.n * s.c * s.h * s.w), nw = (size_t)(s.m * cg * s.kh * s.kw),
               ny = (size_t)(s.n * s.m * oh * ow);
  float *x = malloc(nx * 4), *w = malloc(nw * 4), *b = malloc((size_t)s.m * 4), *dy = malloc(ny * 4);
  float *y = malloc(ny * 4), *dx = malloc(nx * 4), *dw = malloc(nw * 4);
  uint32_t r = 777u + (uint32_t)(s.c * 13 + s.kh);
  float *all[] = {x, w, b, dy};
  const size_t len[] = {nx, nw, (size_t)s.m, ny};
  for (int t = 0; t < 4; t++)
    for (size_t i = 0; i < len[t]; i++) r = r * 1664525u + 1013904223u, all[t][i] = (float)((int)(r >> 9) % 4001 - 2000) / 900.0f;
  conv_ref ry = {calloc(ny, 8), calloc(ny, 8), calloc(ny, sizeof(int))};
  conv_ref rx = {calloc(nx, 8), calloc(nx, 8), calloc(nx, sizeof(int))};
  conv_ref rw = {calloc(nw, 8), calloc(nw, 8), calloc(nw, sizeof(int))};
  for (int64_t n = 0; n < s.n; n++)
    for (int64_t o = 0; o < s.m; o++)
      for (int64_t oy = 0; oy < oh; oy++)
        for (int64_t ox = 0; ox < ow; ox++) {
          const size_t yi = (size_t)(((n * s.m + o) * oh + oy) * ow + ox);
          const int64_t gi = o / mg;
          for (int64_t ci = 0; ci < cg; ci++)
            for (int64_t ki = 0; ki < s.kh; ki++)
              for (int64_t kj = 0; kj < s.kw; kj++) {
                const int64_t iy = oy * s.stride[0] - s.pads[0] + ki * s.dilation[0],
                              ix = ox * s.stride[1] - s.pads[1] + kj * s.dilation[1];
                if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
                const size_t xi = (size_t)(((n * s.c + gi * cg + ci) * s.h + iy) * s.w + ix),
                             wi = (size_t)(((o * cg + ci) * s.kh + ki) * s.kw + kj);
                ref_add(&ry, yi, m, w[wi], x[xi]);  /* the forward GEMM: W col */
                ref_add(&rw, wi, m, dy[yi], x[xi]); /* dW = dYt col^T */
                ref_add(&rx, xi, m, w[wi], dy[yi]); /* dcol = W^T dYt */
              }
          ry.sum[yi] += b[o], ry.abs[yi] += fabs((double)b[o]);
        }
  float *d_x, *d_w, *d_b, *d_dy, *d_y, *d_dx, *d_dw;
  void *ws_f = NULL, *ws_b = NULL;
  cudaMalloc((void **)&d_x, nx * 4), cudaMalloc((void **)&d_w, nw * 4), cudaMalloc((void **)&d_b, (size_t)s.m * 4);
  cudaMalloc((void **)&d_dy, ny * 4), cudaMalloc((void **)&d_y, ny * 4), cudaMalloc((void **)&d_dx, nx * 4);
  cudaMalloc((void **)&d_dw, nw * 4);
  if (fb) cudaMalloc(&ws_f, fb);
  if (bb) cudaMalloc(&ws_b, bb);
  cudaMemcpyAsync(d_x, x, nx * 4, cudaMemcpyHostToDevice, stream);
  cudaMemcpyAsync(d_w, w, nw * 4, cudaMemcpyHostToDevice, stream);
  cudaMemcpyAsync(d_b, b, (size_t)s.m * 4, cudaMemcpyHostToDevice, stream);
  cudaMemcpyAsync(d_dy, dy, ny * 4, cudaMemcpyHostToDevice, stream);
  cudaMemsetAsync(d_dw, 0xff, nw * 4, stream); /* NaN: the backward must write dW, not add to it */
  char what[160];
  snprintf(what, sizeof what, "conv2d %s %s %lldx%lldx%lldx%lld, %lld filters %lldx%lld, groups %lld", mode,
           tier ? "exact" : "fast", (long long)s.n, (long long)s.c, (long long)s.h, (long long)s.w, (long long)s.m,
           (long long)s.kh, (long long)s.kw, (long long)s.groups);
  int good = ok(amdnn_conv2d_cuda(m, tier, &s, d_x, d_w, d_b, d_y, ws_f, fb, stream), what) &&
             ok(amdnn_conv2d_backward_cuda(m, tier, &s, d_x, d_w, d_dy, d_dx, d_dw, ws_b, bb, stream), what);
  if (good) {
    if (bb) /* refused before anything is written: the results read below are still the good call's */
      fails_with(amdnn_conv2d_backward_cuda(m, tier, &s, d_x, d_w, d_dy, d_dx, d_dw, ws_b, bb - 1, stream),
                 AMDNN_ERR_FAILED, "workspace", "a short workspace");
    cudaMemcpyAsync(y, d_y, ny * 4, cudaMemcpyDeviceToHost, stream);
    cudaMemcpyAsync(dx, d_dx, nx * 4, cudaMemcpyDeviceToHost, stream);
    cudaMemcpyAsync(dw, d_dw, nw * 4, cudaMemcpyDeviceToHost, stream);
    CHECK(cudaStreamSynchronize(stream) == cudaSuccess, "%s: the stream", what);
    double wy = 0, wx = 0, ww = 0;
    const size_t oy_ = over_bound(y, &ry, ny, &wy), ox_ = over_bound(dx, &rx, nx, &wx), ow_ = over_bound(dw, &rw, nw, &ww);
    CHECK(oy_ + ox_ + ow_ == 0, "%s: outside the bound: Y %zu of %zu (max |diff| %g), dX %zu of %zu (%g), dW %zu of %zu (%g)",
          what, oy_, ny, wy, ox_, nx, wx, ow_, nw, ww);
    if (oy_ + ox_ + ow_ == 0) printf("ok   %s: Y, dX, dW within the bound (max |diff| %g, %g, %g)\n", what, wy, wx, ww);
  }
  cudaFree(d_x), cudaFree(d_w), cudaFree(d_b), cudaFree(d_dy), cudaFree(d_y), cudaFree(d_dx), cudaFree(d_dw);
  cudaFree(ws_f), cudaFree(ws_b);
  free(x), free(w), free(b), free(dy), free(y), free(dx), free(dw);
  free(ry.sum), free(ry.abs), free(ry.terms), free(rx.sum), free(rx.abs), free(rx.terms);
  free(rw.sum), free(rw.abs), free(rw.terms);
  amdnn_multiplier_close(m);
}

/* The top-1 of the model on a device. */
static double top1_on(const char *model, const char *device, const char *data) {
  amdnn_options *o = NULL, *ev = NULL;
  amdnn_session *s = NULL;
  amdnn_eval_result *r = NULL;
  double top1 = -1;
  if (ok(amdnn_options_create(&o), "options") && ok(amdnn_options_set(o, "device", device), "device") &&
      ok(amdnn_options_set(o, "mode", "am16"), "mode") && ok(amdnn_options_set(o, "gemm", "exact"), "gemm") &&
      ok(amdnn_options_create(&ev), "options") && ok(amdnn_options_set(ev, "data", data), "data") &&
      ok(amdnn_options_set(ev, "limit", "1000"), "limit") && ok(amdnn_session_open(model, o, &s), "open") &&
      ok(amdnn_session_evaluate(s, ev, NULL, &r), "evaluate"))
    top1 = (double)r->top1 / (double)r->n;
  amdnn_eval_result_free(r);
  amdnn_session_close(s);
  amdnn_options_free(o), amdnn_options_free(ev);
  return top1;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: test_api_cuda MODELS_DIR IDX_DATA_DIR\n");
    return 2;
  }
  if (amdnn_cuda_device_count() == 0) {
    printf("SKIP: no CUDA device\n");
    return 77;
  }
  cudaStream_t stream;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) return 1;
  static const char *const modes[] = {"acc16", "am16", "am32", "fp16", "mit16", "mit32", "mbm14", "mbm12", "mit14"};
  for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
    compare(modes[i], AMDNN_GEMM_EXACT, 0, 0, 70, 90, 1, 3, 0.0f, stream); /* one product: bit for bit */
    compare(modes[i], AMDNN_GEMM_EXACT, 0, 0, 70, 90, 150, 3, 0.0f, stream);
    compare(modes[i], AMDNN_GEMM_EXACT, 1, 1, 33, 17, 300, 2, 0.5f, stream);
  }
  compare("acc32", AMDNN_GEMM_FAST, 0, 1, 128, 256, 576, 2, 0.0f, stream);
  compare("am16", AMDNN_GEMM_FAST, 0, 0, 128, 512, 1152, 2, 0.0f, stream);
  compare("am16", AMDNN_GEMM_EXACT, 0, 0, 128, 512, 1152, 2, 0.0f, stream);
  compare("mit16", AMDNN_GEMM_EXACT, 0, 0, 64, 64, 64, 1, 0.0f, NULL); /* the default stream */
  /* the general path (groups, strides, dilation, uneven pads), the pointwise path (1x1 on 32x32 images), and
   * one product per output (one channel, 1x1: Y bit for bit up to the bias's rounding) */
  const amdnn_conv2d_shape general = {.n = 3, .c = 4, .h = 11, .w = 10, .m = 6, .kh = 3, .kw = 3, .groups = 2,
                                      .stride = {2, 1}, .dilation = {1, 2}, .pads = {1, 0, 2, 1}},
                           pointwise = {.n = 2, .c = 8, .h = 32, .w = 32, .m = 16, .kh = 1, .kw = 1, .groups = 1,
                                        .stride = {1, 1}, .dilation = {1, 1}},
                           single = {.n = 2, .c = 1, .h = 8, .w = 8, .m = 5, .kh = 1, .kw = 1, .groups = 1,
                                     .stride = {1, 1}, .dilation = {1, 1}, .pads = {1, 1, 0, 0}};
  for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) compare_conv(modes[i], AMDNN_GEMM_EXACT, general, stream);
  compare_conv("acc32", AMDNN_GEMM_FAST, general, stream);
  compare_conv("am16", AMDNN_GEMM_FAST, pointwise, stream);
  compare_conv("am16", AMDNN_GEMM_EXACT, pointwise, stream);
  compare_conv("acc32", AMDNN_GEMM_FAST, pointwise, stream);
  compare_conv("mit16", AMDNN_GEMM_EXACT, single, NULL);
  cudaStreamDestroy(stream);
  char model[4096], data[4096];
  snprintf(model, sizeof model, "%s/lenet5.onnx", argv[1]);
  snprintf(data, sizeof data, "mnist:%s", argv[2]);
  const double cpu = top1_on(model, "cpu", data), gpu = top1_on(model, "cuda", data);
  CHECK(cpu >= 0 && gpu >= 0 && fabs(cpu - gpu) <= 0.002, "am16 (exact tier) top-1 on the CPU %.4f, on the GPU %.4f",
        cpu, gpu);
  printf("ok   a session on cuda: top-1 %.4f, on the CPU %.4f\n", gpu, cpu);
  return check_summary();
}

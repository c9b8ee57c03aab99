/* The public API on a GPU (include/amdnn.h and the CUDA runtime alone): the
 * device GEMM on a caller's stream (amdnn_gemm_cuda) against the host GEMM
 * (amdnn_gemm), strided and batched, with a stride-0 (broadcast) operand and
 * beta, on every mode: with K = 1 every output is one product (plus beta C)
 * and equal bit for bit; with K > 1 the two sum the same products in other
 * orders (the CPU's vector lanes, the GPU's tiles and split-K), so each
 * output is within (K + 4) 2^-23 S, S = sum |products| + |beta C| (the
 * bound of tests/gpu/test_cuda_gemm.cu); and a session on cuda evaluating the
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

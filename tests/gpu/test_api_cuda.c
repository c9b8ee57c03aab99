/* The public API on a GPU (include/amdnn.h and the CUDA runtime alone): the
 * device GEMM on a caller's stream (amdnn_gemm_cuda) against the host GEMM
 * (amdnn_gemm): the emulated modes in the exact tier bit for bit,
 * strided and batched, with a stride-0 (broadcast) operand and beta; the fast
 * tier of am16 and acc32 (cuBLAS) within fp32 summation bounds; and a session
 * on cuda evaluating the model to the CPU session's top-1 within 2 of 1000
 * samples (the other ops sum in other orders: logits agree to about 1e-6, so
 * only a near tie can move). Skips (77) without a
 * GPU. usage: test_api_cuda MODELS_DIR IDX_DATA_DIR */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test_check.h"
#include "amdnn.h"

static int ok(amdnn_status *st, const char *what) {
  checks++;
  if (!st) return 1;
  failures++;
  printf("FAIL %s: %s\n", what, amdnn_status_message(st));
  amdnn_status_free(st);
  return 0;
}

/* C_b = alpha op(A_b) op(B_b) + beta C_b on the device and on the host, b < batch; A is broadcast (stride 0). */
static void compare(const char *mode, amdnn_gemm_tier tier, int ta, int tb, int M, int N, int K, int batch,
                    float beta, cudaStream_t stream, double tol) {
  amdnn_multiplier *m = NULL;
  if (!ok(amdnn_multiplier_open(mode, &m), mode)) return;
  const size_t na = (size_t)M * K, nb = (size_t)K * N * batch, nc = (size_t)M * N * batch;
  float *A = malloc(na * 4), *B = malloc(nb * 4), *C = malloc(nc * 4), *G = malloc(nc * 4);
  uint32_t s = 12345u + (uint32_t)(M * 7 + N * 3 + K);
  for (size_t i = 0; i < na + nb + nc; i++) {
    s = s * 1664525u + 1013904223u;
    const float v = (float)((int)(s >> 9) % 4001 - 2000) / 700.0f;
    if (i < na) A[i] = v;
    else if (i < na + nb) B[i - na] = v;
    else C[i - na - nb] = v;
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
  double worst = 0, scale = 0;
  size_t differ = 0;
  for (size_t i = 0; good && i < nc; i++) {
    differ += memcmp(&C[i], &G[i], 4) != 0;
    worst = fmax(worst, fabs((double)C[i] - G[i]));
    scale = fmax(scale, fabs((double)C[i]));
  }
  if (good && tol == 0) CHECK(differ == 0, "%s: %zu of %zu differ from the host GEMM (max %g)", what, differ, nc, worst);
  else if (good) CHECK(worst <= tol * scale, "%s: max |diff| %g > %g x %g", what, worst, tol, scale);
  if (good) printf("ok   %s: %zu of %zu differ, max %g\n", what, differ, nc, worst);
  cudaFree(dA), cudaFree(dB), cudaFree(dC);
  free(A), free(B), free(C), free(G);
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
  static const char *const exact[] = {"acc16", "am16", "am32", "fp16", "mit16", "mit32", "mbm14", "mbm12", "mit14"};
  for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++) {
    compare(exact[i], AMDNN_GEMM_EXACT, 0, 0, 70, 90, 150, 3, 0.0f, stream, 0);
    compare(exact[i], AMDNN_GEMM_EXACT, 1, 1, 33, 17, 300, 2, 0.5f, stream, 0);
  }
  compare("acc32", AMDNN_GEMM_FAST, 0, 1, 128, 256, 576, 2, 0.0f, stream, 1e-5);
  compare("am16", AMDNN_GEMM_FAST, 0, 0, 128, 512, 1152, 2, 0.0f, stream, 1e-4);
  compare("am16", AMDNN_GEMM_EXACT, 0, 0, 128, 512, 1152, 2, 0.0f, stream, 0);
  /* the default stream too (NULL) */
  compare("mit16", AMDNN_GEMM_EXACT, 0, 0, 64, 64, 64, 1, 0.0f, NULL, 0);
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

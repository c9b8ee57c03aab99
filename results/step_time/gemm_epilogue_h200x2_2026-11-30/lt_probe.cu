// Probe: does cuBLASLt take row-major (CUBLASLT_ORDER_ROW) fp32 GEMMs with a bias
// broadcast over rows, a residual as C and a Relu, at ResNet-50's pointwise shapes,
// and how fast against cublasSgemmStridedBatched + a separate epilogue pass?
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA %s line %d\n", cudaGetErrorString(e_), __LINE__); exit(1); } } while (0)
#define CB(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) { printf("cuBLAS %d line %d\n", (int)s_, __LINE__); exit(1); } } while (0)

__global__ void k_epi(long n, long m, long osz, const float *bias, const float *res, int relu, float *y) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n / 4; i += (long)gridDim.x * blockDim.x) {
    float4 v = ((float4 *)y)[i];
    float b = bias[(i * 4 / osz) % m];
    v.x += b, v.y += b, v.z += b, v.w += b;
    if (res) { float4 r = ((const float4 *)res)[i]; v.x += r.x, v.y += r.y, v.z += r.z, v.w += r.w; }
    if (relu) v.x = fmaxf(v.x, 0.f), v.y = fmaxf(v.y, 0.f), v.z = fmaxf(v.z, 0.f), v.w = fmaxf(v.w, 0.f);
    ((float4 *)y)[i] = v;
  }
}

__global__ void k_fill(float *p, long n, unsigned seed) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    h ^= h >> 13, h *= 0x5bd1e995u, h ^= h >> 15;
    p[i] = (float)(h & 0xffff) / 32768.0f - 1.0f;
  }
}

static float time_it(cudaStream_t s, int reps, void (*f)(void *), void *arg) {
  cudaEvent_t a, b;
  cudaEventCreate(&a), cudaEventCreate(&b);
  f(arg);
  cudaEventRecord(a, s);
  for (int i = 0; i < reps; i++) f(arg);
  cudaEventRecord(b, s);
  CK(cudaEventSynchronize(b));
  float ms;
  cudaEventElapsedTime(&ms, a, b);
  return ms / reps * 1000.0f;
}

struct Shape { const char *name; long M, K, N, batch; int resid, relu; };

struct Run {
  cublasHandle_t cb; cublasLtHandle_t lt; cudaStream_t s;
  Shape sh; float *W, *X, *Y, *Y2, *R, *bias; void *ws; size_t wsb;
  cublasLtMatmulDesc_t op; cublasLtMatrixLayout_t la, lb, lc; cublasLtMatmulAlgo_t algo; int epi;
};

static void run_ref(void *p) {
  Run *r = (Run *)p;
  const float one = 1, zero = 0;
  // row-major Y_b[M][N] = W[M][K] X_b[K][N]: column-major Y^T = X^T W^T
  CB(cublasSgemmStridedBatched(r->cb, CUBLAS_OP_N, CUBLAS_OP_N, r->sh.N, r->sh.M, r->sh.K, &one, r->X, r->sh.N,
                               r->sh.K * r->sh.N, r->W, r->sh.K, 0, &zero, r->Y, r->sh.N, r->sh.M * r->sh.N, r->sh.batch));
  long n = r->sh.M * r->sh.N * r->sh.batch;
  k_epi<<<(unsigned)((n / 4 + 255) / 256 > 65536 ? 65536 : (n / 4 + 255) / 256), 256, 0, r->s>>>(n, r->sh.M, r->sh.N, r->bias, r->sh.resid ? r->R : NULL, r->sh.relu, r->Y);
}
static void run_gemm_only(void *p) {
  Run *r = (Run *)p;
  const float one = 1, zero = 0;
  CB(cublasSgemmStridedBatched(r->cb, CUBLAS_OP_N, CUBLAS_OP_N, r->sh.N, r->sh.M, r->sh.K, &one, r->X, r->sh.N,
                               r->sh.K * r->sh.N, r->W, r->sh.K, 0, &zero, r->Y, r->sh.N, r->sh.M * r->sh.N, r->sh.batch));
}
static void run_lt(void *p) {
  Run *r = (Run *)p;
  const float one = 1, zero = 0;
  CB(cublasLtMatmul(r->lt, r->op, &one, r->W, r->la, r->X, r->lb, r->sh.resid ? &one : &zero,
                    r->sh.resid ? r->R : r->Y2, r->lc, r->Y2, r->lc, &r->algo, r->ws, r->wsb, r->s));
}

static int setup_lt(Run *r, int order_row, int epi_on, int *nres) {
  Shape &s = r->sh;
  cublasLtOrder_t ord = order_row ? CUBLASLT_ORDER_ROW : CUBLASLT_ORDER_COL;
  CB(cublasLtMatmulDescCreate(&r->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasLtEpilogue_t epi = !epi_on ? CUBLASLT_EPILOGUE_DEFAULT : s.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  CB(cublasLtMatmulDescSetAttribute(r->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
  if (epi_on) CB(cublasLtMatmulDescSetAttribute(r->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &r->bias, sizeof r->bias));
  // rows/cols are the matrix's own; ld: elements between rows (ROW) or columns (COL)
  CB(cublasLtMatrixLayoutCreate(&r->la, CUDA_R_32F, s.M, s.K, order_row ? s.K : s.M));
  CB(cublasLtMatrixLayoutCreate(&r->lb, CUDA_R_32F, s.K, s.N, order_row ? s.N : s.K));
  CB(cublasLtMatrixLayoutCreate(&r->lc, CUDA_R_32F, s.M, s.N, order_row ? s.N : s.M));
  cublasLtMatrixLayout_t ls[3] = {r->la, r->lb, r->lc};
  long long strides[3] = {0, s.K * s.N, s.M * s.N};
  int bc = (int)s.batch;
  for (int i = 0; i < 3; i++) {
    CB(cublasLtMatrixLayoutSetAttribute(ls[i], CUBLASLT_MATRIX_LAYOUT_ORDER, &ord, sizeof ord));
    CB(cublasLtMatrixLayoutSetAttribute(ls[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc));
    CB(cublasLtMatrixLayoutSetAttribute(ls[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &strides[i], sizeof strides[i]));
  }
  cublasLtMatmulPreference_t pref;
  CB(cublasLtMatmulPreferenceCreate(&pref));
  CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &r->wsb, sizeof r->wsb));
  cublasLtMatmulHeuristicResult_t res[8];
  *nres = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(r->lt, r->op, r->la, r->lb, r->lc, r->lc, pref, 8, res, nres);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || *nres == 0) { printf("  heuristic status %d, %d algos\n", (int)st, *nres); return -1; }
  r->algo = res[0].algo;
  return 0;
}

static double max_rel(const float *a, const float *b, long n) {
  double m = 0, big = 0;
  for (long i = 0; i < n; i++) { double d = fabs((double)a[i] - b[i]); if (d > m) m = d; if (fabs(a[i]) > big) big = fabs(a[i]); }
  return big > 0 ? m / big : m;
}

int main() {
  Shape shapes[] = {
      {"l1.conv1 64<-64 56x56 bias relu", 64, 64, 3136, 256, 0, 1},
      {"l1.conv1 64<-256 56x56 bias relu", 64, 256, 3136, 256, 0, 1},
      {"l1.conv3 256<-64 56x56 bias resid relu", 256, 64, 3136, 256, 1, 1},
      {"l1.down 256<-64 56x56 bias", 256, 64, 3136, 256, 0, 0},
      {"l2.0.conv1 128<-256 56x56 bias relu", 128, 256, 3136, 256, 0, 1},
      {"l2.conv3 512<-128 28x28 bias resid relu", 512, 128, 784, 256, 1, 1},
      {"l2.conv1 128<-512 28x28 bias relu", 128, 512, 784, 256, 0, 1},
  };
  Run r = {};
  CK(cudaStreamCreate(&r.s));
  CB(cublasCreate(&r.cb));
  CB(cublasSetStream(r.cb, r.s));
  CB(cublasSetMathMode(r.cb, CUBLAS_DEFAULT_MATH));
  CB(cublasLtCreate(&r.lt));
  r.wsb = 32u << 20;
  CK(cudaMalloc(&r.ws, r.wsb));
  void *cbws;
  CK(cudaMalloc(&cbws, r.wsb));
  CB(cublasSetWorkspace(r.cb, cbws, r.wsb));
  float tot_ref = 0, tot_lt = 0, tot_gemm = 0;
  for (Shape &s : shapes) {
    r.sh = s;
    long nw = s.M * s.K, nx = s.K * s.N * s.batch, ny = s.M * s.N * s.batch;
    CK(cudaMalloc(&r.W, nw * 4)); CK(cudaMalloc(&r.X, nx * 4)); CK(cudaMalloc(&r.Y, ny * 4));
    CK(cudaMalloc(&r.Y2, ny * 4)); CK(cudaMalloc(&r.R, ny * 4)); CK(cudaMalloc(&r.bias, s.M * 4));
    k_fill<<<1024, 256, 0, r.s>>>(r.W, nw, 1); k_fill<<<1024, 256, 0, r.s>>>(r.X, nx, 2);
    k_fill<<<1024, 256, 0, r.s>>>(r.R, ny, 3); k_fill<<<1024, 256, 0, r.s>>>(r.bias, s.M, 4);
    printf("%s: M %ld K %ld N %ld batch %ld\n", s.name, s.M, s.K, s.N, s.batch);
    float t_ref = time_it(r.s, 10, run_ref, &r), t_g = time_it(r.s, 10, run_gemm_only, &r);
    run_ref(&r);
    printf("  cublasSgemmStridedBatched + epilogue pass: %.1f us (GEMM alone %.1f)\n", t_ref, t_g);
    for (int order_row = 1; order_row >= 0; order_row--)
      for (int epi_on = 1; epi_on >= 0; epi_on--) {
        if (!order_row && epi_on) continue;  // a column-major bias would run along the wrong dimension
        int nres;
        printf("  Lt %s %s:\n", order_row ? "ORDER_ROW" : "ORDER_COL", epi_on ? "bias/resid/relu epilogue" : "no epilogue");
        if (setup_lt(&r, order_row, epi_on, &nres) == 0) {
          float t = time_it(r.s, 10, run_lt, &r);
          printf("    %d algos, %.1f us", nres, t);
          if (order_row && epi_on) {
            std::vector<float> a(ny), b(ny);
            run_ref(&r); run_lt(&r);
            CK(cudaMemcpy(a.data(), r.Y, ny * 4, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(b.data(), r.Y2, ny * 4, cudaMemcpyDeviceToHost));
            printf(", max |diff| / max |y| = %.3g", max_rel(a.data(), b.data(), ny));
            tot_lt += t; tot_ref += t_ref; tot_gemm += t_g;
          }
          printf("\n");
        }
        cublasLtMatmulDescDestroy(r.op); cublasLtMatrixLayoutDestroy(r.la); cublasLtMatrixLayoutDestroy(r.lb);
        cublasLtMatrixLayoutDestroy(r.lc);
      }
    cudaFree(r.W); cudaFree(r.X); cudaFree(r.Y); cudaFree(r.Y2); cudaFree(r.R); cudaFree(r.bias);
  }
  printf("sum over the shapes that ran fused: reference %.1f us, Lt fused %.1f us, GEMM alone %.1f us\n", tot_ref, tot_lt, tot_gemm);
  return 0;
}

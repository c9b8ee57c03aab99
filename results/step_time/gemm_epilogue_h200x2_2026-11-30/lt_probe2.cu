// Probe 2: cuBLASLt fp32 GEMMs of ResNet-50's convolutions with the bias as a
// C matrix broadcast over the images (batch stride 0) and a Relu epilogue, in
// the column-major operand swap cublasSgemm uses; the residual as C; and the
// im2col convolutions' per-image GEMMs reading their columns out of one col
// matrix and writing y directly. Each against cuBLAS SGEMM + a separate pass.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA %s line %d\n", cudaGetErrorString(e_), __LINE__); exit(1); } } while (0)
#define CB(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) { printf("cuBLAS %d line %d\n", (int)s_, __LINE__); exit(1); } } while (0)

// y[img][m][p] = relu?(yt[m][img*osz + p] + bias[m] (+ res)) when yt != y (reorder), or in place
__global__ void k_epi(long nb, long m, long osz, const float *yt, const float *bias, const float *res, int relu, float *y) {
  long n = nb * m * osz;
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
    long p = i % osz, mm = (i / osz) % m, img = i / (osz * m);
    float v = yt == y ? y[i] : yt[mm * nb * osz + img * osz + p];
    v += bias[mm];
    if (res) v += res[i];
    if (relu) v = fmaxf(v, 0.f);
    y[i] = v;
  }
}
__global__ void k_bmat(long m, long osz, const float *bias, float *bm) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < m * osz; i += (long)gridDim.x * blockDim.x) bm[i] = bias[i / osz];
}
__global__ void k_fill(float *p, long n, unsigned seed) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    h ^= h >> 13, h *= 0x5bd1e995u, h ^= h >> 15;
    p[i] = (float)(h & 0xffff) / 32768.0f - 1.0f;
  }
}

static cudaStream_t S;
static cublasHandle_t CBH;
static cublasLtHandle_t LT;
static void *WS;
static const size_t WSB = 32u << 20;

struct Conv { const char *name; long M, K, osz, nb; int resid, relu, im2col; };
struct Bufs { float *W, *X, *Y, *Y2, *T, *R, *bias, *bm; };

static unsigned blocks(long n) { long b = (n + 255) / 256; return (unsigned)(b > 65536 ? 65536 : b); }

// reference: one cuBLAS GEMM (im2col: over all nb*osz columns into T then reorder; pointwise: batched into Y) + pass
static void ref(const Conv &c, Bufs &b) {
  const float one = 1, zero = 0;
  if (c.im2col) {
    long L = c.nb * c.osz;
    CB(cublasSgemm(CBH, CUBLAS_OP_N, CUBLAS_OP_N, L, c.M, c.K, &one, b.X, L, b.W, c.K, &zero, b.T, L));
    k_epi<<<blocks(c.nb * c.M * c.osz), 256, 0, S>>>(c.nb, c.M, c.osz, b.T, b.bias, c.resid ? b.R : NULL, c.relu, b.Y);
  } else {
    CB(cublasSgemmStridedBatched(CBH, CUBLAS_OP_N, CUBLAS_OP_N, c.osz, c.M, c.K, &one, b.X, c.osz, c.K * c.osz, b.W, c.K, 0,
                                 &zero, b.Y, c.osz, c.M * c.osz, c.nb));
    k_epi<<<blocks(c.nb * c.M * c.osz), 256, 0, S>>>(c.nb, c.M, c.osz, b.Y, b.bias, c.resid ? b.R : NULL, c.relu, b.Y);
  }
}

struct LtPlan { cublasLtMatmulDesc_t op; cublasLtMatrixLayout_t la, lb, lc, ld; cublasLtMatmulAlgo_t algo; int ok; float beta; const float *A, *B, *C; float *D; };

static cublasLtMatrixLayout_t layout(long rows, long cols, long ld, long batch, long stride, cublasLtOrder_t ord) {
  cublasLtMatrixLayout_t l;
  CB(cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, rows, cols, ld));
  int bc = (int)batch;
  long long s = stride;
  CB(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &ord, sizeof ord));
  CB(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc));
  CB(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &s, sizeof s));
  return l;
}

static void plan_done(LtPlan &p) {
  cublasLtMatmulDescDestroy(p.op);
  cublasLtMatrixLayoutDestroy(p.la), cublasLtMatrixLayoutDestroy(p.lb), cublasLtMatrixLayoutDestroy(p.lc), cublasLtMatrixLayoutDestroy(p.ld);
}

static int plan_find(LtPlan &p, const char *what) {
  cublasLtMatmulPreference_t pref;
  CB(cublasLtMatmulPreferenceCreate(&pref));
  CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &WSB, sizeof WSB));
  cublasLtMatmulHeuristicResult_t res[4];
  int n = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(LT, p.op, p.la, p.lb, p.lc, p.ld, pref, 4, res, &n);
  cublasLtMatmulPreferenceDestroy(pref);
  p.ok = st == CUBLAS_STATUS_SUCCESS && n > 0;
  if (p.ok) p.algo = res[0].algo;
  else printf("  %s: heuristic status %d, %d algos\n", what, (int)st, n);
  return p.ok;
}

static void plan_run(const LtPlan &p) {
  const float one = 1;
  CB(cublasLtMatmul(LT, p.op, &one, p.A, p.la, p.B, p.lb, &p.beta, p.C, p.lc, p.D, p.ld, &p.algo, WS, WSB, S));
}

// column-major operand swap: D_img^T (osz x M) = X_img^T (osz x K) W^T (K x M) + C
static LtPlan swap_plan(const Conv &c, Bufs &b, cublasLtEpilogue_t epi, const float *C, long c_stride) {
  LtPlan p = {};
  CB(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  CB(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
  const long ldx = c.im2col ? c.nb * c.osz : c.osz, sx = c.im2col ? c.osz : c.K * c.osz;
  p.la = layout(c.osz, c.K, ldx, c.nb, sx, CUBLASLT_ORDER_COL);
  p.lb = layout(c.K, c.M, c.K, c.nb, 0, CUBLASLT_ORDER_COL);
  p.lc = layout(c.osz, c.M, c.osz, c.nb, c_stride, CUBLASLT_ORDER_COL);
  p.ld = layout(c.osz, c.M, c.osz, c.nb, c.M * c.osz, CUBLASLT_ORDER_COL);
  p.A = b.X, p.B = b.W, p.C = C, p.D = b.Y2, p.beta = 1.0f;
  return p;
}

static float timed(int reps, const Conv &c, Bufs &b, const LtPlan *p, int with_bmat) {
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0), cudaEventCreate(&e1);
  for (int r = -1; r < reps; r++) {
    if (r == 0) cudaEventRecord(e0, S);
    if (p) {
      if (with_bmat) k_bmat<<<blocks(c.M * c.osz), 256, 0, S>>>(c.M, c.osz, b.bias, b.bm);
      plan_run(*p);
    } else {
      ref(c, b);
    }
  }
  cudaEventRecord(e1, S);
  CK(cudaEventSynchronize(e1));
  float ms;
  cudaEventElapsedTime(&ms, e0, e1);
  return ms * 1000.0f / reps;
}

static double diff(const Conv &c, Bufs &b) {
  long n = c.nb * c.M * c.osz;
  std::vector<float> x(n), y(n);
  CK(cudaMemcpy(x.data(), b.Y, n * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(y.data(), b.Y2, n * 4, cudaMemcpyDeviceToHost));
  double m = 0, big = 0;
  for (long i = 0; i < n; i++) { m = fmax(m, fabs((double)x[i] - y[i])); big = fmax(big, fabs((double)x[i])); }
  return big > 0 ? m / big : m;
}

int main() {
  Conv convs[] = {
      {"l1.0.conv1 1x1 64<-64 56x56 bias relu", 64, 64, 3136, 256, 0, 1, 0},
      {"l1.conv1 1x1 64<-256 56x56 bias relu", 64, 256, 3136, 256, 0, 1, 0},
      {"l1.down 1x1 256<-64 56x56 bias", 256, 64, 3136, 256, 0, 0, 0},
      {"l2.0.conv1 1x1 128<-256 56x56 bias relu", 128, 256, 3136, 256, 0, 1, 0},
      {"l2.conv1 1x1 128<-512 28x28 bias relu", 128, 512, 784, 256, 0, 1, 0},
      {"l1.conv3 1x1 256<-64 56x56 bias resid relu", 256, 64, 3136, 256, 1, 1, 0},
      {"l2.conv3 1x1 512<-128 28x28 bias resid relu", 512, 128, 784, 256, 1, 1, 0},
      {"conv1 7x7/2 64<-3 112x112 bias relu (chunk of 43)", 64, 147, 12544, 43, 0, 1, 1},
      {"l1.conv2 3x3 64<-64 56x56 bias relu (chunk of 256)", 64, 576, 3136, 256, 0, 1, 1},
      {"l2.conv2 3x3 128<-128 28x28 bias relu", 128, 1152, 784, 256, 0, 1, 1},
  };
  CK(cudaStreamCreate(&S));
  CB(cublasCreate(&CBH)); CB(cublasSetStream(CBH, S)); CB(cublasSetMathMode(CBH, CUBLAS_DEFAULT_MATH));
  CB(cublasLtCreate(&LT));
  CK(cudaMalloc(&WS, WSB));
  void *cbws; CK(cudaMalloc(&cbws, WSB)); CB(cublasSetWorkspace(CBH, cbws, WSB));
  double sum_ref = 0, sum_new = 0;
  for (const Conv &c : convs) {
    Bufs b;
    long nw = c.M * c.K, nx = c.K * c.osz * c.nb, ny = c.M * c.osz * c.nb;
    CK(cudaMalloc(&b.W, nw * 4)); CK(cudaMalloc(&b.X, nx * 4)); CK(cudaMalloc(&b.Y, ny * 4)); CK(cudaMalloc(&b.Y2, ny * 4));
    CK(cudaMalloc(&b.T, ny * 4)); CK(cudaMalloc(&b.R, ny * 4)); CK(cudaMalloc(&b.bias, c.M * 4)); CK(cudaMalloc(&b.bm, c.M * c.osz * 4));
    k_fill<<<1024, 256, 0, S>>>(b.W, nw, 1); k_fill<<<1024, 256, 0, S>>>(b.X, nx, 2);
    k_fill<<<1024, 256, 0, S>>>(b.R, ny, 3); k_fill<<<1024, 256, 0, S>>>(b.bias, c.M, 4);
    float t_ref = timed(10, c, b, NULL, 0);
    printf("%s: M %ld K %ld osz %ld images %ld\n  cuBLAS SGEMM + pass: %.1f us\n", c.name, c.M, c.K, c.osz, c.nb, t_ref);
    ref(c, b);
    cublasLtEpilogue_t relu = c.relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT;
    if (!c.resid) {
      LtPlan p = swap_plan(c, b, relu, b.bm, 0);
      if (plan_find(p, "swap, C = bias matrix (batch stride 0), Relu")) {
        float t = timed(10, c, b, &p, 1);
        plan_run(p);
        printf("  Lt swap, C = bias matrix (batch stride 0)%s, bias matrix made each time: %.1f us (%.2fx), max diff %.3g\n",
               c.relu ? ", Relu epilogue" : "", t, t_ref / t, diff(c, b));
        sum_ref += t_ref, sum_new += t;
      }
      plan_done(p);
    } else {
      LtPlan p = swap_plan(c, b, relu, b.R, c.M * c.osz);
      if (plan_find(p, "swap, C = residual, Relu")) {
        float t = timed(10, c, b, &p, 0);
        printf("  Lt swap, C = residual, Relu epilogue, no bias (time only): %.1f us\n", t);
      }
      plan_done(p);
    }
  }
  printf("sum over the fused shapes: SGEMM + pass %.1f us, Lt %.1f us\n", sum_ref, sum_new);
  return 0;
}

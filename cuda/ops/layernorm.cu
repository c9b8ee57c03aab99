/* CUDA kernels of LayerNormalization (src/ops/layernorm.c): X as [rows, cols]
 * (cols: the product of the normalised dims), Scale and B of cols elements
 * (layernorm_supported sends broadcast ones and empty tensors to the host).
 *
 * Forward, k_ln_fwd: one warp (cols <= 256) or one block per row. Each
 * thread reads its columns once, keeping up to LN_ITEMS of them in
 * registers (rows up to 4096 wide: the whole row), and sums (x - K) and
 * (x - K)^2 in double with K the row's first element; the row's totals come
 * from one fixed-order reduction (warp shuffles, then the warps' partial sums
 * through shared memory), so Mean = K + S1/n, Var = S2/n - (S1/n)^2 lose
 * nothing to cancellation at float inputs (the shift keeps S1/n near the
 * spread, double keeps 29 bits more than the data has). Y is then written
 * from the registers, (x - Mean) * InvStdDev * Scale + B in double as on the
 * CPU: one read and one write of the row. Wider rows read their row a second
 * time (from L2) for Y.
 *
 * Backward, k_ln_bwd_dx: the same per-row layout; the statistics again from X
 * (the same code as forward, so the same values), then with g = dY * Scale
 * the two sums sum(g), sum(g * xhat) in one reduction, then dX. It also
 * writes each row's (Mean, InvStdDev) for the parameter gradients:
 * k_ln_param_part gives each block 32 columns (a warp reads 128 contiguous
 * bytes of a row) and a slice of the rows, sums dY * xhat and dY in double
 * and writes them per slice; k_ln_param_final adds a column's slices into
 * dScale and dB in a fixed order (eight interleaved runs, then their sums).
 * The slicing depends only on the shape and no float atomics are used: every
 * result is reproducible run to run. */
#include "ops_internal.h"

/* ================================================================ LayerNormalization */

enum { LN_ITEMS = 8, LN_TILE = 32, LN_STEP = 8 };

/* The sums of a row's threads (TPR: 32, one warp, or the whole block), the
 * same totals in every thread: the first lane's / first thread's order. */
template <int TPR> __device__ __forceinline__ double2 ln_group_sum(double2 v, double2 *sh) {
  for (int o = 16; o > 0; o >>= 1) {
    v.x += __shfl_down_sync(0xffffffffu, v.x, o);
    v.y += __shfl_down_sync(0xffffffffu, v.y, o);
  }
  if (TPR == 32) {
    v.x = __shfl_sync(0xffffffffu, v.x, 0);
    v.y = __shfl_sync(0xffffffffu, v.y, 0);
    return v;
  }
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  if (lane == 0) sh[w] = v;
  __syncthreads();
  double2 t = make_double2(0.0, 0.0);
  for (int i = 0; i < TPR / 32; i++) t.x += sh[i].x, t.y += sh[i].y;
  __syncthreads(); /* sh is used again by the next sum */
  return t;
}

/* Which row a thread works on and its index among the row's threads;
 * false for the warps of a warp-per-row block past the last row. */
template <int TPR> __device__ __forceinline__ bool ln_row_of(int64_t rows, int64_t *row, int *t) {
  if (TPR == 32) {
    *row = (int64_t)blockIdx.x * (blockDim.x / 32) + (threadIdx.x >> 5);
    *t = threadIdx.x & 31;
  } else {
    *row = blockIdx.x;
    *t = threadIdx.x;
  }
  return *row < rows;
}

/* A row's Mean and InvStdDev (shifted sums in double, see the top); with
 * ITEMS > 0 the thread's columns t, t + TPR, ... stay in v. */
template <int TPR, int ITEMS>
__device__ __forceinline__ void ln_stats(const float *xr, int64_t cols, int t, double eps, float *v,
                                         double2 *sh, double *mean, double *inv) {
  const double K = xr[0];
  double2 s = make_double2(0.0, 0.0);
  if (ITEMS > 0) {
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
      const int64_t c = t + (int64_t)i * TPR;
      v[i] = c < cols ? xr[c] : 0.0f;
      const double d = c < cols ? (double)v[i] - K : 0.0;
      s.x += d;
      s.y += d * d;
    }
  } else {
    for (int64_t c = t; c < cols; c += TPR) {
      const double d = (double)xr[c] - K;
      s.x += d;
      s.y += d * d;
    }
  }
  s = ln_group_sum<TPR>(s, sh);
  const double n = (double)cols, dm = s.x / n;
  double var = s.y / n - dm * dm;
  if (var < 0) var = 0;
  *mean = K + dm;
  *inv = 1.0 / sqrt(var + eps);
}

template <int TPR, int ITEMS>
__global__ void __launch_bounds__(TPR < 128 ? 128 : TPR)
    k_ln_fwd(int64_t rows, int64_t cols, const float *x, const float *scale, const float *bias, double eps,
             float *y, float *mean_out, float *inv_out) {
  __shared__ double2 sh[TPR / 32];
  int64_t row;
  int t;
  if (!ln_row_of<TPR>(rows, &row, &t)) return;
  const float *xr = x + row * cols;
  float *yr = y + row * cols;
  float v[ITEMS > 0 ? ITEMS : 1];
  double m, inv;
  ln_stats<TPR, ITEMS>(xr, cols, t, eps, v, sh, &m, &inv);
  if (t == 0) {
    if (mean_out) mean_out[row] = (float)m;
    if (inv_out) inv_out[row] = (float)inv;
  }
  if (ITEMS > 0) {
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
      const int64_t c = t + (int64_t)i * TPR;
      if (c < cols)
        yr[c] = (float)(((double)v[i] - m) * inv * (double)scale[c] + (bias ? (double)bias[c] : 0.0));
    }
  } else {
    for (int64_t c = t; c < cols; c += TPR)
      yr[c] = (float)(((double)xr[c] - m) * inv * (double)scale[c] + (bias ? (double)bias[c] : 0.0));
  }
}

/* dX += InvStdDev (g - sum(g) / n - xhat sum(g xhat) / n) per row (dx NULL:
 * only the statistics); stats[row] = (Mean, InvStdDev) when stats is set. */
template <int TPR, int ITEMS>
__global__ void __launch_bounds__(TPR < 128 ? 128 : TPR)
    k_ln_bwd_dx(int64_t rows, int64_t cols, const float *x, const float *dy, const float *scale, double eps,
                float *dx, bool acc, double2 *stats) {
  __shared__ double2 sh[TPR / 32];
  int64_t row;
  int t;
  if (!ln_row_of<TPR>(rows, &row, &t)) return;
  const float *xr = x + row * cols, *gr = dy + row * cols;
  float v[ITEMS > 0 ? ITEMS : 1], gv[ITEMS > 0 ? ITEMS : 1];
  double m, inv;
  ln_stats<TPR, ITEMS>(xr, cols, t, eps, v, sh, &m, &inv);
  if (stats && t == 0) stats[row] = make_double2(m, inv);
  if (!dx) return;
  double2 s = make_double2(0.0, 0.0);
  if (ITEMS > 0) {
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
      const int64_t c = t + (int64_t)i * TPR;
      gv[i] = c < cols ? gr[c] : 0.0f;
      if (c < cols) {
        const double g = (double)gv[i] * (double)scale[c];
        s.x += g;
        s.y += g * (((double)v[i] - m) * inv);
      }
    }
  } else {
    for (int64_t c = t; c < cols; c += TPR) {
      const double g = (double)gr[c] * (double)scale[c];
      s.x += g;
      s.y += g * (((double)xr[c] - m) * inv);
    }
  }
  s = ln_group_sum<TPR>(s, sh);
  const double c0 = s.x / (double)cols, c1 = s.y / (double)cols;
  float *dr = dx + row * cols;
  if (ITEMS > 0) {
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
      const int64_t c = t + (int64_t)i * TPR;
      if (c < cols) {
        const double g = (double)gv[i] * (double)scale[c];
        dr[c] = (acc ? dr[c] : 0.0f) + (float)(inv * (g - c0 - ((double)v[i] - m) * inv * c1));
      }
    }
  } else {
    for (int64_t c = t; c < cols; c += TPR) {
      const double g = (double)gr[c] * (double)scale[c];
      dr[c] = (acc ? dr[c] : 0.0f) + (float)(inv * (g - c0 - ((double)xr[c] - m) * inv * c1));
    }
  }
}

/* Block (LN_TILE, LN_STEP) over columns [bx * 32, +32) and rows [by * per,
 * +per): part[(by * cols + c) * 2 + {0, 1}] = sum dY * xhat, sum dY (x NULL:
 * the first is not computed). */
__global__ void __launch_bounds__(LN_TILE *LN_STEP)
    k_ln_param_part(int64_t rows, int64_t cols, int64_t per, const float *x, const float *dy,
                    const double2 *stats, double *part) {
  __shared__ double sh[LN_STEP][LN_TILE][2];
  const int64_t c = (int64_t)blockIdx.x * LN_TILE + threadIdx.x;
  const int64_t r0 = (int64_t)blockIdx.y * per, r1 = r0 + per < rows ? r0 + per : rows;
  double ds = 0, db = 0;
  if (c < cols)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += LN_STEP) {
      const double g = dy[r * cols + c];
      db += g;
      if (x) {
        const double2 st = stats[r];
        ds += g * (((double)x[r * cols + c] - st.x) * st.y);
      }
    }
  sh[threadIdx.y][threadIdx.x][0] = ds;
  sh[threadIdx.y][threadIdx.x][1] = db;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    double ts = 0, tb = 0;
    for (int k = 0; k < LN_STEP; k++) ts += sh[k][threadIdx.x][0], tb += sh[k][threadIdx.x][1];
    part[((int64_t)blockIdx.y * cols + c) * 2 + 0] = ts;
    part[((int64_t)blockIdx.y * cols + c) * 2 + 1] = tb;
  }
}

/* dScale[c] += the slices' sums of column c, dB likewise: a block takes
 * LN_TILE columns, its LN_STEP rows of threads every LN_STEP-th slice each,
 * then one thread a column adds their sums in row order (a fixed order) */
__global__ void k_ln_param_final(int64_t cols, int slices, const double *part, float *dscale, bool acc_s,
                                 float *dbias, bool acc_b) {
  __shared__ double sh[LN_STEP][LN_TILE][2];
  const int64_t c = (int64_t)blockIdx.x * LN_TILE + threadIdx.x;
  double ts = 0, tb = 0;
  if (c < cols)
    for (int s = threadIdx.y; s < slices; s += LN_STEP)
      ts += part[((int64_t)s * cols + c) * 2], tb += part[((int64_t)s * cols + c) * 2 + 1];
  sh[threadIdx.y][threadIdx.x][0] = ts;
  sh[threadIdx.y][threadIdx.x][1] = tb;
  __syncthreads();
  if (threadIdx.y != 0 || c >= cols) return;
  ts = 0, tb = 0;
  for (int k = 0; k < LN_STEP; k++) ts += sh[k][threadIdx.x][0], tb += sh[k][threadIdx.x][1];
  if (dscale) dscale[c] = (float)((acc_s ? (double)dscale[c] : 0.0) + ts);
  if (dbias) dbias[c] = (float)((acc_b ? (double)dbias[c] : 0.0) + tb);
}

/* The per-row layout for cols columns: threads per row and the columns each
 * keeps in registers (0: none, the row is read again). */
static int ln_config(int64_t cols, int *items) {
  *items = LN_ITEMS;
  if (cols <= 32 * LN_ITEMS) return 32;
  if (cols <= 128 * LN_ITEMS) return 128;
  if (cols <= 256 * LN_ITEMS) return 256;
  if (cols > 512 * LN_ITEMS) *items = 0;
  return 512;
}

/* grid and block for TPR threads per row */
static inline unsigned ln_blocks(int64_t rows, int tpr) {
  return (unsigned)(tpr == 32 ? (rows + 3) / 4 : rows);
}
static inline unsigned ln_threads(int tpr) { return tpr == 32 ? 128 : (unsigned)tpr; }

#define LN_LAUNCH(KERNEL, TPR, ITEMS, ...)                                                                   \
  KERNEL<TPR, ITEMS><<<ln_blocks(rows, TPR), ln_threads(TPR), 0, amd_cu.stream>>>(__VA_ARGS__)
#define LN_SWITCH(KERNEL, ...)                                                                               \
  do {                                                                                                       \
    int items, tpr = ln_config(cols, &items);                                                                \
    if (tpr == 32)                                                                                           \
      LN_LAUNCH(KERNEL, 32, LN_ITEMS, __VA_ARGS__);                                                          \
    else if (tpr == 128)                                                                                     \
      LN_LAUNCH(KERNEL, 128, LN_ITEMS, __VA_ARGS__);                                                         \
    else if (tpr == 256)                                                                                     \
      LN_LAUNCH(KERNEL, 256, LN_ITEMS, __VA_ARGS__);                                                         \
    else if (items)                                                                                          \
      LN_LAUNCH(KERNEL, 512, LN_ITEMS, __VA_ARGS__);                                                         \
    else                                                                                                     \
      LN_LAUNCH(KERNEL, 512, 0, __VA_ARGS__);                                                                \
  } while (0)

int layernorm_forward(FWD_ARGS) {
  (void)ctx;
  const amd_ln_attrs *a = (const amd_ln_attrs *)n->attrs;
  int64_t rows, cols;
  if (amd_ln_view(n, in, &rows, &cols, NULL, st)) return -1;
  if (!rows || !cols) return 0;
  float *mo = n->n_out > 1 && out[1].data ? F(&out[1]) : NULL;
  float *io = n->n_out > 2 && out[2].data ? F(&out[2]) : NULL;
  const float *bias = n->n_in > 2 ? F(in[2]) : NULL;
  LN_SWITCH(k_ln_fwd, rows, cols, F(in[0]), F(in[1]), bias, a->epsilon, F(&out[0]), mo, io);
  AMD_CUDA_CHECK_LAUNCH("k_ln_fwd", st);
  return 0;
}

int layernorm_backward(BWD_ARGS) {
  (void)out;
  const amd_ln_attrs *a = (const amd_ln_attrs *)n->attrs;
  const amd_tensor *dy = dout[0]; /* Mean's and InvStdDev's gradients are ignored, as on the CPU */
  amd_tensor *dx = din[0], *dscale = din[1], *dbias = n->n_in > 2 ? din[2] : NULL;
  if (!dy || (!dx && !dscale && !dbias)) return 0;
  int64_t rows, cols;
  if (amd_ln_view(n, in, &rows, &cols, NULL, st)) return -1;
  if (!rows || !cols) return 0;
  scratch stats, part;
  if (dscale && stats.get((size_t)rows * sizeof(double2), st)) return -1;
  if (dx || dscale) {
    LN_SWITCH(k_ln_bwd_dx, rows, cols, F(in[0]), F(dy), F(in[1]), a->epsilon, F(dx), acc_of(ctx, 0),
              dscale ? (double2 *)stats.p : NULL);
    AMD_CUDA_CHECK_LAUNCH("k_ln_bwd_dx", st);
  }
  if (!dscale && !dbias) return 0;
  /* about 16 blocks of 256 threads per SM on 132 SMs, each at least 64 rows */
  const int64_t tiles = (cols + LN_TILE - 1) / LN_TILE;
  int64_t slices = (2112 + tiles - 1) / tiles, most = (rows + 63) / 64;
  if (slices > most) slices = most;
  if (slices > 256) slices = 256;
  if (slices < 1) slices = 1;
  const int64_t per = (rows + slices - 1) / slices;
  slices = (rows + per - 1) / per; /* no empty slice */
  if (part.get((size_t)slices * cols * 2 * sizeof(double), st)) return -1;
  k_ln_param_part<<<dim3((unsigned)tiles, (unsigned)slices), dim3(LN_TILE, LN_STEP), 0, amd_cu.stream>>>(
      rows, cols, per, dscale ? F(in[0]) : NULL, F(dy), (const double2 *)stats.p, part.d());
  AMD_CUDA_CHECK_LAUNCH("k_ln_param_part", st);
  k_ln_param_final<<<(unsigned)tiles, dim3(LN_TILE, LN_STEP), 0, amd_cu.stream>>>(
      cols, (int)slices, part.d(), F(dscale), acc_of(ctx, 1), F(dbias), acc_of(ctx, 2));
  AMD_CUDA_CHECK_LAUNCH("k_ln_param_final", st);
  return 0;
}

int layernorm_supported(const amd_node *n, const amd_tensor *const *in) {
  if (!in) return 1; /* decided per call, from the shapes */
  amd_status st;
  int64_t rows, cols;
  int full;
  /* a node the CPU refuses goes there for its message; broadcast parameters and empty tensors too */
  if (amd_ln_view(n, in, &rows, &cols, &full, &st)) return 0;
  return full && rows > 0 && cols > 0;
}

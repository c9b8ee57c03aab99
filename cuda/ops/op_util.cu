/* Kernels several op families share (ops_internal.h declares them): a gradient
 * added into a buffer, and the per-channel sums of BatchNormalization that
 * Conv's bias gradient uses too. */
#include "ops_internal.h"

/* V floats a thread (float4 where n and both pointers allow) */
template <int V> __global__ void k_add_into(float *d, const float *s, int64_t n, bool acc) {
  AMD_CU_LOOP(i, n / V) {
    const vecf<V> sv = ((const vecf<V> *)s)[i];
    ((vecf<V> *)d)[i] = acc ? vec_add(((const vecf<V> *)d)[i], sv) : vec_add(sv, 0.0f);
  }
}

int add_into(float *d, const float *s, int64_t n, amd_status *st, bool acc) {
  if (n <= 0) return 0;
  if (n % 4 == 0 && aligned16(d) && aligned16(s))
    k_add_into<4><<<amd_cu_blocks(n / 4), 256, 0, amd_cu.stream>>>(d, s, n, acc);
  else
    k_add_into<1><<<amd_cu_blocks(n), 256, 0, amd_cu.stream>>>(d, s, n, acc);
  AMD_CUDA_CHECK_LAUNCH("k_add_into", st);
  return 0;
}

/* ---- row and column sums (ops_internal.h) ---- */

/* part[slice][c] = the sum of x[r][c] over the slice's rows (threads along c
 * read consecutive elements) */
__global__ void k_col_partial(int64_t R, int64_t C, int64_t rows_per_slice, const float *x, double *part) {
  const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, slice = blockIdx.y;
  if (c >= C) return;
  const int64_t r1 = min(R, (slice + 1) * rows_per_slice);
  double t = 0;
  for (int64_t r = slice * rows_per_slice; r < r1; r++) t += x[r * C + c];
  part[slice * C + c] = t;
}

/* d[c] = (acc ? d[c] : 0) + scale * the slices' partial sums part[k][c],
 * in a fixed order: a block takes 32 columns, its 8 rows of threads every
 * 8th slice each, then one thread a column adds their 8 sums in row order */
__global__ void k_col_total(int64_t C, int64_t slices, const double *part, float scale, bool acc, float *d) {
  __shared__ double red[8][32];
  const int64_t c = (int64_t)blockIdx.x * 32 + threadIdx.x;
  double t = 0;
  if (c < C)
    for (int64_t k = threadIdx.y; k < slices; k += 8) t += part[k * C + c];
  red[threadIdx.y][threadIdx.x] = t;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    t = 0;
    for (int y = 0; y < 8; y++) t += red[y][threadIdx.x];
    d[c] = (acc ? d[c] : 0.0f) + scale * (float)t;
  }
}

int col_partials_total(const double *part, int64_t slices, int64_t C, float scale, bool acc, float *d,
                       amd_status *st) {
  k_col_total<<<(unsigned)((C + 31) / 32), dim3(32, 8), 0, amd_cu.stream>>>(C, slices, part, scale, acc, d);
  AMD_CUDA_CHECK_LAUNCH("k_col_total", st);
  return 0;
}

int col_sum_into(const float *x, int64_t R, int64_t C, float scale, float *d, amd_status *st) {
  if (R <= 0 || C <= 0) return 0;
  /* slices of 64 rows, at most 65535 of them (grid y) */
  int64_t rows_per_slice = 64;
  if ((R + rows_per_slice - 1) / rows_per_slice > 65535) rows_per_slice = (R + 65534) / 65535;
  const int64_t slices = (R + rows_per_slice - 1) / rows_per_slice;
  scratch part;
  if (part.get((size_t)(slices * C) * sizeof(double), st)) return -1;
  const dim3 grid((unsigned)((C + 127) / 128), (unsigned)slices);
  k_col_partial<<<grid, 128, 0, amd_cu.stream>>>(R, C, rows_per_slice, x, part.d());
  AMD_CUDA_CHECK_LAUNCH("k_col_partial", st);
  return col_partials_total(part.d(), slices, C, scale, true, d, st);
}

/* d[r] += scale * the sum of row r: one warp a row, lane-strided in double,
 * then a shuffle tree */
__global__ void k_row_sum(int64_t R, int64_t C, const float *x, float scale, float *d) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
  for (int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; r < R; r += warps) {
    double t = 0;
    for (int64_t c = lane; c < C; c += 32) t += x[r * C + c];
    for (int o = 16; o > 0; o >>= 1) t += __shfl_down_sync(0xffffffffu, t, o);
    if (lane == 0) d[r] += scale * (float)t;
  }
}

int row_sum_into(const float *x, int64_t R, int64_t C, float scale, float *d, amd_status *st) {
  if (R <= 0 || C <= 0) return 0;
  k_row_sum<<<amd_cu_blocks(R * 32), 256, 0, amd_cu.stream>>>(R, C, x, scale, d);
  AMD_CUDA_CHECK_LAUNCH("k_row_sum", st);
  return 0;
}

/* ---- per-channel sums (ops_internal.h) ---- */

__device__ __forceinline__ double warp_sum_d(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

template <typename I>
__global__ void __launch_bounds__(CHAN_THREADS)
    k_chan_partial(chan_slicing s, const float *x, const float *dy, double *part) {
  __shared__ double red[CHAN_SUMS][CHAN_THREADS / 32];
  const I c = (I)blockIdx.x, sl = (I)blockIdx.y, sp = (I)s.sp, ch = (I)s.ch, cnt = (I)s.cnt;
  const I lo = (I)((int64_t)cnt * sl / s.slices), hi = (I)((int64_t)cnt * (sl + 1) / s.slices);
  const double K = chan_shift(s, x, c);
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (I e = lo + (I)threadIdx.x; e < hi; e += (I)blockDim.x) {
    I img = e / sp;
    int64_t off = ((int64_t)img * ch + c) * sp + (e - img * sp);
    double d = x ? (double)x[off] - K : 0.0;
    s0 += d;
    s1 += d * d;
    if (dy) {
      double g = dy[off];
      s2 += g;
      s3 += g * d;
    }
  }
  s0 = warp_sum_d(s0), s1 = warp_sum_d(s1), s2 = warp_sum_d(s2), s3 = warp_sum_d(s3);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) red[0][warp] = s0, red[1][warp] = s1, red[2][warp] = s2, red[3][warp] = s3;
  __syncthreads();
  if (threadIdx.x < CHAN_SUMS) {
    double t = 0;
    for (int w = 0; w < CHAN_THREADS / 32; w++) t += red[threadIdx.x][w];
    part[((int64_t)c * s.slices + sl) * CHAN_SUMS + threadIdx.x] = t;
  }
}

/* Launches k_chan_partial into part (ch * slices * CHAN_SUMS doubles). */
int chan_partial(const chan_slicing &s, const float *x, const float *dy, double *part, amd_status *st) {
  dim3 grid((unsigned)s.ch, (unsigned)s.slices);
  if (fits32(s.batch * s.ch * s.sp))
    k_chan_partial<int><<<grid, CHAN_THREADS, 0, amd_cu.stream>>>(s, x, dy, part);
  else
    k_chan_partial<int64_t><<<grid, CHAN_THREADS, 0, amd_cu.stream>>>(s, x, dy, part);
  AMD_CUDA_CHECK_LAUNCH("k_chan_partial", st);
  return 0;
}

/* out[c] += sum of part[c][..][k] over the slices */
__global__ void k_chan_add_sum(chan_slicing s, const double *part, int k, float *out) {
  AMD_CU_LOOP(c, s.ch) {
    double t[CHAN_SUMS];
    chan_total(part, c, s.slices, t);
    out[c] = (float)((double)out[c] + t[k]);
  }
}

/* out[c] += the sum of v[batch][c][sp] over batch and sp (a bias gradient). */
int channel_sum_into(int64_t batch, int64_t ch, int64_t sp, const float *v, float *out, amd_status *st) {
  chan_slicing s = chan_slices(batch, ch, sp);
  scratch part;
  if (part.get((size_t)ch * s.slices * CHAN_SUMS * sizeof(double), st) ||
      chan_partial(s, NULL, v, part.d(), st))
    return -1;
  k_chan_add_sum<<<amd_cu_blocks(ch, 128), 128, 0, amd_cu.stream>>>(s, part.d(), 2, out);
  AMD_CUDA_CHECK_LAUNCH("k_chan_add_sum", st);
  return 0;
}

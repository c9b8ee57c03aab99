/* Kernels several op families share (ops_internal.h declares them): a gradient
 * added into a buffer, and the per-channel sums of BatchNormalization that
 * Conv's bias gradient uses too. */
#include "ops_internal.h"

__global__ void k_add_into(float *d, const float *s, int64_t n, bool acc) {
  AMD_CU_LOOP(i, n) d[i] = (acc ? d[i] : 0.0f) + s[i];
}

int add_into(float *d, const float *s, int64_t n, amd_status *st, bool acc) {
  if (n <= 0) return 0;
  k_add_into<<<amd_cu_blocks(n), 256, 0, amd_cu.stream>>>(d, s, n, acc);
  AMD_CUDA_CHECK_LAUNCH("k_add_into", st);
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

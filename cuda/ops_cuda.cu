/* Native CUDA forward and backward kernels of the ops the exported CNNs use.
 *
 * Each op mirrors its CPU file in src/ops/ (same attribute structs from
 * src/ops/attrs.h, same geometry functions, same formulas and, where cheap,
 * the same summation order and precision: double sums where the CPU sums in
 * double). Backward functions ACCUMULATE (+=) into din, as op.h requires.
 *
 * Conv (2-D, any group / stride / pad / dilation): for a chunk of nb images,
 * im2col writes col[g][c*kh*kw][nb*OH*OW] (one row per channel and kernel
 * tap, one column per output position of every image), then per group
 *   forward  Yt_g[mg, L] = W_g[mg, kdim] col_g[kdim, L]           (node->mult)
 *   backward dW_g += dYt_g col_g^T,  dcol_g = W_g^T dYt_g          (node->bwd_mult)
 * all through amd_cuda_gemm; Yt / dYt are [M][L] transposes of Y / dY, and
 * col2im gathers dcol back onto each input element (deterministic: no
 * atomics). Gradients of pools gather per input element too, in the CPU's
 * output order, so they are bit-identical to the CPU's. */
#include <float.h>
#include <math.h>
#include <string.h>

#include <type_traits>

#include "cuda_internal.h"

#define FWD_ARGS const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out, amd_status *st
#define BWD_ARGS                                                                                             \
  const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,                       \
      const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st

static float *F(const amd_tensor *t) { return t ? (float *)t->data : NULL; }

/* A scratch buffer from the caching allocator, released at scope end. */
struct scratch {
  void *p = NULL;
  ~scratch() {
    if (p) amd_cu_free(p);
  }
  int get(size_t bytes, amd_status *st) { return amd_cu_malloc(&p, bytes ? bytes : 4, st); }
  float *f() { return (float *)p; }
  double *d() { return (double *)p; }
};

/* V consecutive floats as one load or store: float4 (16 bytes) or float */
template <int V> using vecf = typename std::conditional<V == 4, float4, float>::type;
__device__ __forceinline__ float vec_add(float v, float b) { return v + b; }
__device__ __forceinline__ float4 vec_add(float4 v, float b) {
  return make_float4(v.x + b, v.y + b, v.z + b, v.w + b);
}

static bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* ================================================================ small kernels */

/* A backward's gradient buffers: accumulated into (+=), or where the trainer
 * allows it (ctx->bwd_overwrite, amd_cu_op.bwd_overwrite) written over their
 * unzeroed memory; then an element is 0 + v, the same bits as adding to a
 * zeroed buffer. acc_of: whether din[k] is added to. */
static bool acc_of(const amd_ctx *ctx, int k) { return !(ctx && ((ctx->bwd_overwrite >> k) & 1u)); }

__global__ void k_add_into(float *d, const float *s, int64_t n, bool acc) {
  AMD_CU_LOOP(i, n) d[i] = (acc ? d[i] : 0.0f) + s[i];
}

static int add_into(float *d, const float *s, int64_t n, amd_status *st, bool acc = true) {
  if (n <= 0) return 0;
  k_add_into<<<amd_cu_blocks(n), 256, 0, amd_cu.stream>>>(d, s, n, acc);
  AMD_CUDA_CHECK_LAUNCH("k_add_into", st);
  return 0;
}

/* ================================================================ Conv */

struct conv2d {
  int64_t nb, c, cg, g, h, w, kh, kw, oh, ow, sh, sw, dh, dw, ph, pw, kdim, osz, L;
};

static conv2d make_conv2d(const amd_conv_geom *g, int64_t nb) {
  conv2d c;
  c.nb = nb, c.c = g->c, c.cg = g->cg, c.g = g->group, c.h = g->in[0], c.w = g->in[1], c.kh = g->k[0],
  c.kw = g->k[1];
  c.oh = g->out[0], c.ow = g->out[1], c.sh = g->stride[0], c.sw = g->stride[1], c.dh = g->dil[0],
  c.dw = g->dil[1];
  c.ph = g->pad0[0], c.pw = g->pad0[1], c.kdim = g->cg * g->kvol, c.osz = g->osize, c.L = nb * g->osize;
  return c;
}

/* Index arithmetic in I: int when every index fits (the common case; 64-bit
 * division is several times slower on the GPU), int64_t otherwise. */
#define AMD_CU_LOOP_I(I, i, n)                                                                               \
  for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < (I)(n); i += (I)gridDim.x * (I)blockDim.x)
static bool fits32(int64_t n) { return n < ((int64_t)1 << 31) - ((int64_t)1 << 24); }

/* Per-channel sums over an NCHW tensor, [batch][ch][sp], in two launches so
 * that the whole GPU works on them (one block per channel left most of the
 * SMs idle for the wide early layers): k_chan_partial gives each
 * (channel, slice) block a contiguous slice of the channel's batch x sp
 * elements and writes its sums in double; the caller's finalize kernel adds
 * a channel's slices in slice order. The slicing depends only on the shape,
 * so the sums are reproducible (no atomics).
 *
 * Sums, with the shift K = the channel's first element, or shift[c] when
 * given (so that a mean far from zero costs no precision in the variance;
 * ranks that add their sums share a shift):
 *   part[.., 0] = sum (x - K)      part[.., 1] = sum (x - K)^2
 *   part[.., 2] = sum dy           part[.., 3] = sum dy (x - K)
 * x or dy may be NULL: their sums are then not computed (left 0). */
enum { CHAN_SUMS = 4, CHAN_THREADS = 256 };

struct chan_slicing {
  int64_t batch, ch, sp, cnt; /* cnt = batch * sp elements per channel */
  int slices;
  const float *shift; /* per channel (device), or NULL: each channel's first element */
};

/* the shift K of channel c */
__device__ __forceinline__ double chan_shift(const chan_slicing &s, const float *x, int64_t c) {
  return s.shift ? (double)s.shift[c] : (x ? (double)x[c * s.sp] : 0.0);
}

static chan_slicing chan_slices(int64_t batch, int64_t ch, int64_t sp) {
  chan_slicing s;
  s.batch = batch, s.ch = ch, s.sp = sp, s.cnt = batch * sp, s.shift = NULL;
  /* about 8 resident blocks per SM on 132 SMs, and at least 2048 elements a block */
  int64_t want = (1056 + ch - 1) / ch, most = (s.cnt + 2047) / 2048;
  if (want > most) want = most;
  if (want > 256) want = 256;
  s.slices = want < 1 ? 1 : (int)want;
  return s;
}

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
static int chan_partial(const chan_slicing &s, const float *x, const float *dy, double *part,
                        amd_status *st) {
  dim3 grid((unsigned)s.ch, (unsigned)s.slices);
  if (fits32(s.batch * s.ch * s.sp))
    k_chan_partial<int><<<grid, CHAN_THREADS, 0, amd_cu.stream>>>(s, x, dy, part);
  else
    k_chan_partial<int64_t><<<grid, CHAN_THREADS, 0, amd_cu.stream>>>(s, x, dy, part);
  AMD_CUDA_CHECK_LAUNCH("k_chan_partial", st);
  return 0;
}

/* A channel's sums: its slices added in order. */
__device__ __forceinline__ void chan_total(const double *part, int64_t c, int slices, double t[CHAN_SUMS]) {
  for (int k = 0; k < CHAN_SUMS; k++) t[k] = 0;
  for (int sl = 0; sl < slices; sl++)
    for (int k = 0; k < CHAN_SUMS; k++) t[k] += part[(c * slices + sl) * CHAN_SUMS + k];
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
static int channel_sum_into(int64_t batch, int64_t ch, int64_t sp, const float *v, float *out,
                            amd_status *st) {
  chan_slicing s = chan_slices(batch, ch, sp);
  scratch part;
  if (part.get((size_t)ch * s.slices * CHAN_SUMS * sizeof(double), st) ||
      chan_partial(s, NULL, v, part.d(), st))
    return -1;
  k_chan_add_sum<<<amd_cu_blocks(ch, 128), 128, 0, amd_cu.stream>>>(s, part.d(), 2, out);
  AMD_CUDA_CHECK_LAUNCH("k_chan_add_sum", st);
  return 0;
}

/* col[g][r][j], r = c*kh*kw + ki*kw + kj, j = image*osz + oy*ow + ox */
template <typename I> __global__ void k_im2col(conv2d p, const float *x, float *col) {
  const I total = (I)(p.g * p.kdim * p.L), L = (I)p.L, kdim = (I)p.kdim, osz = (I)p.osz, ow = (I)p.ow;
  const I kh = (I)p.kh, kw = (I)p.kw;
  AMD_CU_LOOP_I(I, i, total) {
    I j = i % L, r = (i / L) % kdim, gi = i / (L * kdim);
    I img = j / osz, pos = j % osz, oy = pos / ow, ox = pos % ow;
    I ch = r / (kh * kw), kk = r % (kh * kw), ki = kk / kw, kj = kk % kw;
    I iy = oy * (I)p.sh - (I)p.ph + ki * (I)p.dh, ix = ox * (I)p.sw - (I)p.pw + kj * (I)p.dw;
    float v = 0.0f;
    if (iy >= 0 && iy < (I)p.h && ix >= 0 && ix < (I)p.w)
      v = x[(((int64_t)img * p.c + gi * p.cg + ch) * p.h + iy) * p.w + ix];
    col[i] = v;
  }
}

/* The same, one row of col per blockIdx.y: the channel and kernel tap are
 * worked out once per block. Each thread fills IM2COL_PER elements of the row,
 * blockDim apart (so a warp's stores stay contiguous), issuing all its loads
 * before its stores: one element per thread left each thread one load in
 * flight and the GPU busy launching ten times as many tiny blocks (measured
 * at a tenth of the memory bandwidth on an H100). */
enum { IM2COL_PER = 8, IM2COL_THREADS = 256 };
template <typename I>
__global__ void __launch_bounds__(IM2COL_THREADS) k_im2col_rows(conv2d p, const float *x, float *col) {
  const I L = (I)p.L, osz = (I)p.osz, ow = (I)p.ow, h = (I)p.h, w = (I)p.w, r_all = (I)blockIdx.y;
  const I gi = r_all / (I)p.kdim, r = r_all % (I)p.kdim;
  const I ch = r / (I)(p.kh * p.kw), kk = r % (I)(p.kh * p.kw), ki = kk / (I)p.kw, kj = kk % (I)p.kw;
  const I dy = ki * (I)p.dh - (I)p.ph, dx = kj * (I)p.dw - (I)p.pw, sh = (I)p.sh, sw = (I)p.sw;
  const int64_t img_stride = p.c * p.h * p.w;
  const float *xc = x + (gi * p.cg + ch) * p.h * p.w;
  float *row = col + (int64_t)r_all * p.L;
  const I span = (I)IM2COL_PER * (I)blockDim.x;
  for (I j0 = (I)blockIdx.x * span + (I)threadIdx.x; j0 < L; j0 += (I)gridDim.x * span) {
    float v[IM2COL_PER];
#pragma unroll
    for (int k = 0; k < IM2COL_PER; k++) {
      I j = j0 + (I)k * (I)blockDim.x;
      v[k] = 0.0f;
      if (j < L) {
        I img = j / osz, pos = j - img * osz, oy = pos / ow, ox = pos - oy * ow;
        I iy = oy * sh + dy, ix = ox * sw + dx;
        if (iy >= 0 && iy < h && ix >= 0 && ix < w)
          v[k] = __ldg(xc + (int64_t)img * img_stride + (int64_t)iy * w + ix);
      }
    }
#pragma unroll
    for (int k = 0; k < IM2COL_PER; k++) {
      I j = j0 + (I)k * (I)blockDim.x;
      if (j < L) row[j] = v[k];
    }
  }
}

/* The same, four columns at a time (ow % 4 == 0, so the four share an
 * output row): one index computation and one 16-byte store per four. */
template <typename I>
__global__ void __launch_bounds__(IM2COL_THREADS) k_im2col_rows4(conv2d p, const float *x, float *col) {
  const I L4 = (I)(p.L / 4), osz = (I)p.osz, ow = (I)p.ow, h = (I)p.h, w = (I)p.w, r_all = (I)blockIdx.y;
  const I gi = r_all / (I)p.kdim, r = r_all % (I)p.kdim;
  const I ch = r / (I)(p.kh * p.kw), kk = r % (I)(p.kh * p.kw), ki = kk / (I)p.kw, kj = kk % (I)p.kw;
  const I dy = ki * (I)p.dh - (I)p.ph, dx = kj * (I)p.dw - (I)p.pw, sh = (I)p.sh, sw = (I)p.sw;
  const int64_t img_stride = p.c * p.h * p.w;
  const float *xc = x + (gi * p.cg + ch) * p.h * p.w;
  float4 *row = reinterpret_cast<float4 *>(col + (int64_t)r_all * p.L);
  const I span = (I)IM2COL_PER * (I)blockDim.x;
  for (I q0 = (I)blockIdx.x * span + (I)threadIdx.x; q0 < L4; q0 += (I)gridDim.x * span) {
    float4 v[IM2COL_PER];
#pragma unroll
    for (int k = 0; k < IM2COL_PER; k++) {
      const I q = q0 + (I)k * (I)blockDim.x;
      float e[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      if (q < L4) {
        const I j = q * 4, img = j / osz, pos = j - img * osz, oy = pos / ow, ox = pos - oy * ow;
        const I iy = oy * sh + dy, ix = ox * sw + dx;
        if (iy >= 0 && iy < h) {
          const float *src = xc + (int64_t)img * img_stride + (int64_t)iy * w;
#pragma unroll
          for (int t = 0; t < 4; t++) {
            const I xi = ix + (I)t * sw;
            if (xi >= 0 && xi < w) e[t] = __ldg(src + xi);
          }
        }
      }
      v[k] = make_float4(e[0], e[1], e[2], e[3]);
    }
#pragma unroll
    for (int k = 0; k < IM2COL_PER; k++) {
      const I q = q0 + (I)k * (I)blockDim.x;
      if (q < L4) row[q] = v[k];
    }
  }
}

/* Unfolds x (nb images) into col: by rows when there are few enough for the grid's y dimension. */
static int launch_im2col(const conv2d &p, int64_t n_total, const float *x, float *col, amd_status *st) {
  int64_t rows = p.g * p.kdim, tot = rows * p.L;
  bool small = fits32(tot) && fits32(n_total * p.c * p.h * p.w);
  if (rows <= 65535 && p.ow % 4 == 0 && aligned16(col)) {
    int64_t bx = (p.L / 4 + IM2COL_PER * IM2COL_THREADS - 1) / (IM2COL_PER * IM2COL_THREADS);
    dim3 grid((unsigned)(bx > 1024 ? 1024 : bx), (unsigned)rows);
    if (small)
      k_im2col_rows4<int><<<grid, IM2COL_THREADS, 0, amd_cu.stream>>>(p, x, col);
    else
      k_im2col_rows4<int64_t><<<grid, IM2COL_THREADS, 0, amd_cu.stream>>>(p, x, col);
  } else if (rows <= 65535) {
    int64_t bx = (p.L + IM2COL_PER * IM2COL_THREADS - 1) / (IM2COL_PER * IM2COL_THREADS);
    if (bx > 1024) bx = 1024;
    dim3 grid((unsigned)bx, (unsigned)rows);
    if (small)
      k_im2col_rows<int><<<grid, IM2COL_THREADS, 0, amd_cu.stream>>>(p, x, col);
    else
      k_im2col_rows<int64_t><<<grid, IM2COL_THREADS, 0, amd_cu.stream>>>(p, x, col);
  } else if (small) {
    k_im2col<int><<<amd_cu_blocks(tot), 256, 0, amd_cu.stream>>>(p, x, col);
  } else {
    k_im2col<int64_t><<<amd_cu_blocks(tot), 256, 0, amd_cu.stream>>>(p, x, col);
  }
  AMD_CUDA_CHECK_LAUNCH("k_im2col", st);
  return 0;
}

/* dx[img][c][iy][ix] += sum of dcol over the (tap, output) pairs that read it.
 * KH, KW > 0 and S1 (unit strides) are compile-time shapes: the common 3x3
 * and 1x1 stride-1 convolutions get unrolled taps with no divisions, so all
 * their loads are in flight at once; KH = KW = 0 is the general form. The
 * taps are added in the same order either way. */
template <typename I, int KH, int KW, bool S1>
__global__ void k_col2im(conv2d p, const float *dcol, float *dx, bool acc_dx) {
  const I total = (I)(p.nb * p.c * p.h * p.w), w = (I)p.w, h = (I)p.h, c = (I)p.c, cg = (I)p.cg;
  const I kh = KH ? (I)KH : (I)p.kh, kw = KW ? (I)KW : (I)p.kw, sh = S1 ? 1 : (I)p.sh, sw = S1 ? 1 : (I)p.sw;
  const I oh = (I)p.oh, ow = (I)p.ow;
  AMD_CU_LOOP_I(I, i, total) {
    I ix = i % w, iy = (i / w) % h, cc = (i / (w * h)) % c, img = i / (w * h * c);
    I gi = cc / cg, ch = cc % cg;
    const float *base = dcol + (gi * p.kdim + (int64_t)ch * kh * kw) * p.L + (int64_t)img * p.osz;
    float acc = 0.0f;
#pragma unroll
    for (I ki = 0; ki < kh; ki++) {
      I ty = iy + (I)p.ph - ki * (I)p.dh;
      if (ty < 0 || (!S1 && ty % sh)) continue;
      I oy = S1 ? ty : ty / sh;
      if (oy >= oh) continue;
#pragma unroll
      for (I kj = 0; kj < kw; kj++) {
        I tx = ix + (I)p.pw - kj * (I)p.dw;
        if (tx < 0 || (!S1 && tx % sw)) continue;
        I ox = S1 ? tx : tx / sw;
        if (ox >= ow) continue;
        acc += __ldg(base + (int64_t)(ki * kw + kj) * p.L + oy * ow + ox);
      }
    }
    dx[i] = (acc_dx ? dx[i] : 0.0f) + acc;
  }
}

template <typename I>
static void launch_col2im_i(const conv2d &p, const float *dcol, float *dx, int64_t nx, bool acc) {
  /* about four elements a thread: fewer block launches, and each has its taps in flight */
  unsigned blocks = amd_cu_blocks((nx + 3) / 4);
  bool s1 = p.sh == 1 && p.sw == 1;
  if (p.kh == 3 && p.kw == 3 && s1)
    k_col2im<I, 3, 3, true><<<blocks, 256, 0, amd_cu.stream>>>(p, dcol, dx, acc);
  else if (p.kh == 1 && p.kw == 1 && s1)
    k_col2im<I, 1, 1, true><<<blocks, 256, 0, amd_cu.stream>>>(p, dcol, dx, acc);
  else if (p.kh == 3 && p.kw == 3)
    k_col2im<I, 3, 3, false><<<blocks, 256, 0, amd_cu.stream>>>(p, dcol, dx, acc);
  else
    k_col2im<I, 0, 0, false><<<blocks, 256, 0, amd_cu.stream>>>(p, dcol, dx, acc);
}

/* dx (nb images) += col2im(dcol), or (!acc) = */
static int launch_col2im(const conv2d &p, const float *dcol, float *dx, bool acc, amd_status *st) {
  int64_t nx = p.nb * p.c * p.h * p.w;
  if (fits32(nx) && fits32(p.g * p.kdim * p.L))
    launch_col2im_i<int>(p, dcol, dx, nx, acc);
  else
    launch_col2im_i<int64_t>(p, dcol, dx, nx, acc);
  AMD_CUDA_CHECK_LAUNCH("k_col2im", st);
  return 0;
}

/* y[img][m][pos] = yt[m][img*osz + pos] (+ bias[m]); V floats at a time
 * (V = 4: 16-byte loads and stores, when osz and both pointers allow) */
template <typename I, int V>
__global__ void k_conv_out(int64_t nb, int64_t m_, int64_t osz_, const float *yt, const float *bias,
                           float *y) {
  const I total = (I)(nb * m_ * osz_ / V), m = (I)m_, osz = (I)(osz_ / V), nbo = (I)nb * osz;
  AMD_CU_LOOP_I(I, i, total) {
    I pos = i % osz, mm = (i / osz) % m, img = i / (osz * m);
    vecf<V> v = ((const vecf<V> *)yt)[mm * nbo + img * osz + pos];
    if (bias) v = vec_add(v, bias[mm]);
    ((vecf<V> *)y)[i] = v;
  }
}

/* dyt[m][img*osz + pos] = dy[img][m][pos], V floats at a time */
template <typename I, int V>
__global__ void k_conv_dyt(int64_t nb, int64_t m_, int64_t osz_, const float *dy, float *dyt) {
  const I total = (I)(nb * m_ * osz_ / V), m = (I)m_, osz = (I)(osz_ / V), nbo = (I)nb * osz;
  AMD_CU_LOOP_I(I, i, total) {
    I pos = i % osz, mm = (i / osz) % m, img = i / (osz * m);
    ((vecf<V> *)dyt)[mm * nbo + img * osz + pos] = ((const vecf<V> *)dy)[i];
  }
}

/* The [img][m][pos] <-> [m][img*osz + pos] reorderings of a chunk of nb images. */
static int conv_out(int64_t nb, int64_t m, int64_t osz, const float *yt, const float *bias, float *y,
                    amd_status *st) {
  int64_t n = nb * m * osz;
  bool v4 = osz % 4 == 0 && aligned16(yt) && aligned16(y);
  unsigned blocks = amd_cu_blocks(v4 ? n / 4 : n);
  if (v4 && fits32(n))
    k_conv_out<int, 4><<<blocks, 256, 0, amd_cu.stream>>>(nb, m, osz, yt, bias, y);
  else if (fits32(n))
    k_conv_out<int, 1><<<blocks, 256, 0, amd_cu.stream>>>(nb, m, osz, yt, bias, y);
  else
    k_conv_out<int64_t, 1><<<blocks, 256, 0, amd_cu.stream>>>(nb, m, osz, yt, bias, y);
  AMD_CUDA_CHECK_LAUNCH("k_conv_out", st);
  return 0;
}

static int conv_dyt(int64_t nb, int64_t m, int64_t osz, const float *dy, float *dyt, amd_status *st) {
  int64_t n = nb * m * osz;
  bool v4 = osz % 4 == 0 && aligned16(dy) && aligned16(dyt);
  unsigned blocks = amd_cu_blocks(v4 ? n / 4 : n);
  if (v4 && fits32(n))
    k_conv_dyt<int, 4><<<blocks, 256, 0, amd_cu.stream>>>(nb, m, osz, dy, dyt);
  else if (fits32(n))
    k_conv_dyt<int, 1><<<blocks, 256, 0, amd_cu.stream>>>(nb, m, osz, dy, dyt);
  else
    k_conv_dyt<int64_t, 1><<<blocks, 256, 0, amd_cu.stream>>>(nb, m, osz, dy, dyt);
  AMD_CUDA_CHECK_LAUNCH("k_conv_dyt", st);
  return 0;
}

/* Images per chunk so that the im2col buffer stays under 512 MB. */
static int64_t conv_chunk(const amd_conv_geom *g) {
  double per = (double)g->group * (double)g->cg * (double)g->kvol * (double)g->osize * 4.0;
  int64_t nb = per > 0 ? (int64_t)((double)(1 << 29) / per) : g->n;
  if (nb < 1) nb = 1;
  return nb < g->n ? nb : g->n;
}

/* The im2col matrix and the [M][L] output (or output gradient) of a chunk. */
static int conv_workspaces(const amd_conv_geom *g, int64_t chunk, float **col, float **out, amd_status *st) {
  size_t ncol = (size_t)(g->group * g->cg * g->kvol * chunk * g->osize),
         nout = (size_t)(g->m * chunk * g->osize);
  return amd_cu_workspace(AMD_CU_WS_COL, (ncol ? ncol : 1) * 4, (void **)col, st) ||
         amd_cu_workspace(AMD_CU_WS_OUT, (nout ? nout : 1) * 4, (void **)out, st);
}

static int conv_forward(FWD_ARGS) {
  (void)ctx;
  const amd_conv_attrs *a = (const amd_conv_attrs *)n->attrs;
  const amd_tensor *x = in[0], *w = in[1], *b = n->n_in > 2 ? in[2] : NULL;
  amd_conv_geom g;
  if (amd_conv_geometry(a, x, w, &g, st)) return -1;
  if (g.n == 0 || g.m == 0 || g.osize == 0) return 0;
  const int64_t chunk = conv_chunk(&g), kdim = g.cg * g.kvol;
  float *colp, *ytp;
  if (conv_workspaces(&g, chunk, &colp, &ytp, st)) return -1;
  for (int64_t n0 = 0; n0 < g.n; n0 += chunk) {
    int64_t nb = g.n - n0 < chunk ? g.n - n0 : chunk;
    conv2d p = make_conv2d(&g, nb);
    const float *xc = F(x) + n0 * g.c * g.isize;
    double t0 = amd_cu_prof_t0();
    if (launch_im2col(p, g.n, xc, colp, st)) return -1;
    amd_cu_prof_stage(t0, AMD_PROF_FWD_IM2COL, 0);
    t0 = amd_cu_prof_t0();
    for (int64_t gi = 0; gi < g.group; gi++)
      if (amd_cuda_gemm(amd_cu.gemm, n->mult, 0, 0, g.mg, p.L, kdim, 1.0f, F(w) + gi * g.mg * kdim, kdim, 0,
                        colp + gi * kdim * p.L, p.L, 0, 0.0f, ytp + gi * g.mg * p.L, p.L, 0, 1, st))
        return -1;
    amd_cu_prof_stage(t0, AMD_PROF_FWD_GEMM, (double)g.m * (double)p.L * (double)kdim);
    if (conv_out(nb, g.m, g.osize, ytp, b ? F(b) : NULL, F(&out[0]) + n0 * g.m * g.osize, st)) return -1;
  }
  return 0;
}

static int conv_backward(BWD_ARGS) {
  (void)out;
  const amd_conv_attrs *a = (const amd_conv_attrs *)n->attrs;
  const amd_tensor *x = in[0], *w = in[1], *dy = dout[0];
  amd_tensor *dx = din[0], *dw = din[1], *db = n->n_in > 2 && in[2] ? din[2] : NULL;
  if (!dy) return 0;
  amd_conv_geom g;
  if (amd_conv_geometry(a, x, w, &g, st)) return -1;
  if (db && g.m > 0 && g.n * g.osize > 0 && channel_sum_into(g.n, g.m, g.osize, F(dy), F(db), st)) return -1;
  if (dx && !acc_of(ctx, 0) && (g.n == 0 || g.osize == 0 || g.mg == 0 || g.cg * g.kvol == 0) &&
      amd_tensor_nbytes(dx)) /* no product reaches dx: its gradient is 0 */
    AMD_CUDA_CHECK(cudaMemsetAsync(dx->data, 0, amd_tensor_nbytes(dx), amd_cu.stream), st);
  if ((!dx && !dw) || g.n == 0 || g.osize == 0 || g.mg == 0 || g.cg * g.kvol == 0) return 0;
  const int64_t chunk = conv_chunk(&g), kdim = g.cg * g.kvol;
  float *colp, *dytp;
  if (conv_workspaces(&g, chunk, &colp, &dytp, st)) return -1;
  for (int64_t n0 = 0; n0 < g.n; n0 += chunk) {
    int64_t nb = g.n - n0 < chunk ? g.n - n0 : chunk;
    conv2d p = make_conv2d(&g, nb);
    if (conv_dyt(nb, g.m, g.osize, F(dy) + n0 * g.m * g.osize, dytp, st)) return -1;
    if (dw) {
      double t0 = amd_cu_prof_t0();
      if (launch_im2col(p, g.n, F(x) + n0 * g.c * g.isize, colp, st)) return -1;
      amd_cu_prof_stage(t0, AMD_PROF_BWD_WEIGHT_IM2COL, 0);
      t0 = amd_cu_prof_t0();
      for (int64_t gi = 0; gi < g.group; gi++) /* dW_g [mg, kdim] += dYt_g [mg, L] col_g^T [L, kdim] */
        if (amd_cuda_gemm(amd_cu.gemm, n->bwd_mult, 0, 1, g.mg, kdim, p.L, 1.0f, dytp + gi * g.mg * p.L, p.L,
                          0, colp + gi * kdim * p.L, p.L, 0, 1.0f, F(dw) + gi * g.mg * kdim, kdim, 0, 1, st))
          return -1;
      amd_cu_prof_stage(t0, AMD_PROF_BWD_WEIGHT_GEMM, (double)g.m * (double)kdim * (double)p.L);
    }
    if (dx) {
      double t0 = amd_cu_prof_t0();
      for (int64_t gi = 0; gi < g.group; gi++) /* dcol_g [kdim, L] = W_g^T [kdim, mg] dYt_g [mg, L] */
        if (amd_cuda_gemm(amd_cu.gemm, n->bwd_mult, 1, 0, kdim, p.L, g.mg, 1.0f, F(w) + gi * g.mg * kdim,
                          kdim, 0, dytp + gi * g.mg * p.L, p.L, 0, 0.0f, colp + gi * kdim * p.L, p.L, 0, 1,
                          st))
          return -1;
      amd_cu_prof_stage(t0, AMD_PROF_BWD_DATA_GEMM, (double)g.m * (double)kdim * (double)p.L);
      t0 = amd_cu_prof_t0();
      if (launch_col2im(p, colp, F(dx) + n0 * g.c * g.isize, acc_of(ctx, 0), st)) return -1;
      amd_cu_prof_stage(t0, AMD_PROF_BWD_DATA_COL2IM, 0);
    }
  }
  return 0;
}

/* ================================================================ Gemm */

/* y[i][j] = c[i*rs + j*cs] */
__global__ void k_bcast2(int64_t M, int64_t N, const float *c, int64_t rs, int64_t cs, float *y) {
  AMD_CU_LOOP(i, M * N) y[i] = c[(i / N) * rs + (i % N) * cs];
}

/* dC += beta * dY summed over the axes C was broadcast along (one thread per element of C) */
__global__ void k_gemm_dc(int64_t M, int64_t N, int64_t rs, int64_t cs, float beta, const float *dy,
                          float *dc) {
  int64_t nc_rows = rs ? M : 1, nc_cols = cs ? N : 1;
  AMD_CU_LOOP(e, nc_rows * nc_cols) {
    int64_t ci = e / nc_cols, cj = e % nc_cols;
    if (rs && cs) {
      dc[ci * rs + cj] += beta * dy[ci * N + cj];
      continue;
    }
    double sum = 0;
    if (!rs && !cs)
      for (int64_t i = 0; i < M * N; i++) sum += dy[i];
    else if (!rs)
      for (int64_t i = 0; i < M; i++) sum += dy[i * N + cj];
    else
      for (int64_t j = 0; j < N; j++) sum += dy[ci * N + j];
    dc[ci * rs + cj * cs] += beta * (float)sum;
  }
}

static int gemm_forward(FWD_ARGS) {
  (void)ctx;
  const amd_gemm_attrs *a = (const amd_gemm_attrs *)n->attrs;
  const amd_tensor *A = in[0], *B = in[1], *C = n->n_in > 2 ? in[2] : NULL;
  int64_t M = out[0].dims[0], N = out[0].dims[1], K = a->trans_a ? A->dims[0] : A->dims[1];
  float beta = 0;
  if (C && a->beta != 0 && M * N > 0) {
    int64_t rs = C->rank == 2 && C->dims[0] != 1 ? C->dims[1] : 0;
    int64_t cs = C->rank >= 1 && C->dims[C->rank - 1] != 1 ? 1 : 0;
    k_bcast2<<<amd_cu_blocks(M * N), 256, 0, amd_cu.stream>>>(M, N, F(C), rs, cs, F(&out[0]));
    AMD_CUDA_CHECK_LAUNCH("k_bcast2", st);
    beta = a->beta;
  }
  double t0 = amd_cu_prof_t0();
  if (amd_cuda_gemm(amd_cu.gemm, n->mult, a->trans_a, a->trans_b, M, N, K, a->alpha, F(A), A->dims[1], 0,
                    F(B), B->dims[1], 0, beta, F(&out[0]), N, 0, 1, st))
    return -1;
  amd_cu_prof_stage(t0, AMD_PROF_FWD_GEMM, (double)M * (double)N * (double)K);
  return 0;
}

static int gemm_backward(BWD_ARGS) {
  (void)ctx;
  const amd_gemm_attrs *a = (const amd_gemm_attrs *)n->attrs;
  const amd_tensor *A = in[0], *B = in[1], *C = n->n_in > 2 ? in[2] : NULL, *dY = dout[0];
  amd_tensor *dA = din[0], *dB = din[1], *dC = C ? din[2] : NULL;
  if (!dY) return 0;
  const int64_t M = out[0].dims[0], N = out[0].dims[1], K = a->trans_a ? A->dims[0] : A->dims[1];
  const int64_t lda = A->dims[1], ldb = B->dims[1];
  const amd_mult *bm = n->bwd_mult;
  amd_cuda_gemm_ctx *gc = amd_cu.gemm;
  const double macs = (double)M * (double)N * (double)K;
  double t0 = amd_cu_prof_t0();
  if (dA) {
    int rc = !a->trans_a ? amd_cuda_gemm(gc, bm, 0, !a->trans_b, M, K, N, a->alpha, F(dY), N, 0, F(B), ldb, 0,
                                         1.0f, F(dA), K, 0, 1, st)
                         : amd_cuda_gemm(gc, bm, a->trans_b, 1, K, M, N, a->alpha, F(B), ldb, 0, F(dY), N, 0,
                                         1.0f, F(dA), M, 0, 1, st);
    if (rc) return -1;
    amd_cu_prof_stage(t0, AMD_PROF_BWD_DATA_GEMM, macs);
    t0 = amd_cu_prof_t0();
  }
  if (dB) {
    int rc = !a->trans_b ? amd_cuda_gemm(gc, bm, !a->trans_a, 0, K, N, M, a->alpha, F(A), lda, 0, F(dY), N, 0,
                                         1.0f, F(dB), N, 0, 1, st)
                         : amd_cuda_gemm(gc, bm, 1, a->trans_a, N, K, M, a->alpha, F(dY), N, 0, F(A), lda, 0,
                                         1.0f, F(dB), K, 0, 1, st);
    if (rc) return -1;
    amd_cu_prof_stage(t0, AMD_PROF_BWD_WEIGHT_GEMM, macs);
  }
  if (dC && a->beta != 0 && M * N > 0) {
    int64_t rs = C->rank == 2 && C->dims[0] != 1 ? C->dims[1] : 0;
    int64_t cs = C->rank >= 1 && C->dims[C->rank - 1] != 1 ? 1 : 0;
    int64_t cnt = (rs ? M : 1) * (cs ? N : 1);
    k_gemm_dc<<<amd_cu_blocks(cnt), 256, 0, amd_cu.stream>>>(M, N, rs, cs, a->beta, F(dY), F(dC));
    AMD_CUDA_CHECK_LAUNCH("k_gemm_dc", st);
  }
  return 0;
}

/* ================================================================ MatMul */

/* Calls fn(t, oa, ob) for every batch entry t with the matrix offsets of A and B (the CPU's odometer). */
template <typename Fn> static int mm_each(const amd_mm_shape *s, Fn fn) {
  int64_t sa[AMD_MAX_RANK], sb[AMD_MAX_RANK], idx[AMD_MAX_RANK] = {0};
  amd_broadcast_strides(&s->batch_a, &s->batch, sa);
  amd_broadcast_strides(&s->batch_b, &s->batch, sb);
  const int r = s->batch.rank;
  int64_t oa = 0, ob = 0, nb = amd_tensor_numel(&s->batch);
  for (int64_t t = 0; t < nb; t++) {
    if (fn(t, oa, ob)) return -1;
    for (int d = r - 1; d >= 0; d--) {
      idx[d]++;
      oa += sa[d];
      ob += sb[d];
      if (idx[d] < s->batch.dims[d]) break;
      oa -= sa[d] * idx[d];
      ob -= sb[d] * idx[d];
      idx[d] = 0;
    }
  }
  return 0;
}

static int matmul_forward(FWD_ARGS) {
  (void)ctx;
  amd_mm_shape s;
  if (amd_mm_shapes(in[0], in[1], &s, st)) return -1;
  const float *a = F(in[0]), *b = F(in[1]);
  float *y = F(&out[0]);
  const int64_t M = s.M, N = s.N, K = s.K, nb = amd_tensor_numel(&s.batch);
  double t0 = amd_cu_prof_t0();
  int rc;
  if (amd_tensor_numel(&s.batch_b) == 1 && amd_tensor_numel(&s.batch_a) == nb)
    rc =
        amd_cuda_gemm(amd_cu.gemm, n->mult, 0, 0, nb * M, N, K, 1.0f, a, K, 0, b, N, 0, 0.0f, y, N, 0, 1, st);
  else
    rc = mm_each(&s, [&](int64_t t, int64_t oa, int64_t ob) {
      return amd_cuda_gemm(amd_cu.gemm, n->mult, 0, 0, M, N, K, 1.0f, a + oa * M * K, K, 0, b + ob * K * N, N,
                           0, 0.0f, y + t * M * N, N, 0, 1, st);
    });
  if (rc) return -1;
  amd_cu_prof_stage(t0, AMD_PROF_FWD_GEMM, (double)nb * (double)M * (double)N * (double)K);
  return 0;
}

static int matmul_backward(BWD_ARGS) {
  (void)ctx, (void)out;
  const amd_tensor *dY = dout[0];
  float *da = F(din[0]), *db = F(din[1]);
  if (!dY || (!da && !db)) return 0;
  amd_mm_shape s;
  if (amd_mm_shapes(in[0], in[1], &s, st)) return -1;
  const float *a = F(in[0]), *b = F(in[1]), *dy = F(dY);
  const int64_t M = s.M, N = s.N, K = s.K, nb = amd_tensor_numel(&s.batch);
  const amd_mult *bm = n->bwd_mult;
  const double macs = (double)M * (double)N * (double)K;
  if (amd_tensor_numel(&s.batch_b) == 1 && amd_tensor_numel(&s.batch_a) == nb) {
    double t0 = amd_cu_prof_t0();
    if (da &&
        amd_cuda_gemm(amd_cu.gemm, bm, 0, 1, nb * M, K, N, 1.0f, dy, N, 0, b, N, 0, 1.0f, da, K, 0, 1, st))
      return -1;
    if (da) amd_cu_prof_stage(t0, AMD_PROF_BWD_DATA_GEMM, (double)nb * macs);
    t0 = amd_cu_prof_t0();
    if (db &&
        amd_cuda_gemm(amd_cu.gemm, bm, 1, 0, K, N, nb * M, 1.0f, a, K, 0, dy, N, 0, 1.0f, db, N, 0, 1, st))
      return -1;
    if (db) amd_cu_prof_stage(t0, AMD_PROF_BWD_WEIGHT_GEMM, (double)nb * macs);
    return 0;
  }
  return mm_each(&s, [&](int64_t t, int64_t oa, int64_t ob) {
    const float *dyt = dy + t * M * N;
    double t0 = amd_cu_prof_t0();
    if (da && amd_cuda_gemm(amd_cu.gemm, bm, 0, 1, M, K, N, 1.0f, dyt, N, 0, b + ob * K * N, N, 0, 1.0f,
                            da + oa * M * K, K, 0, 1, st))
      return -1;
    if (da) amd_cu_prof_stage(t0, AMD_PROF_BWD_DATA_GEMM, macs);
    t0 = amd_cu_prof_t0();
    if (db && amd_cuda_gemm(amd_cu.gemm, bm, 1, 0, K, N, M, 1.0f, a + oa * M * K, K, 0, dyt, N, 0, 1.0f,
                            db + ob * K * N, N, 0, 1, st))
      return -1;
    if (db) amd_cu_prof_stage(t0, AMD_PROF_BWD_WEIGHT_GEMM, macs);
    return 0;
  });
}

/* ================================================================ BatchNormalization */

/* Per channel (one thread each): the statistics used (batch: mean and biased
 * variance from the shifted sums, in double; running: the inputs),
 * k = scale / sqrt(v + eps) and, for training, the new running statistics.
 * coef[c*4 + {0..3}] = m, k, v, 0. */
__global__ void k_bn_stats(chan_slicing s, const double *part, const float *x, const float *scale,
                           const float *mean_in, const float *var_in, int batch_stats, double eps, double mom,
                           double unbias, float *rm_out, float *rv_out, float *sm_out, float *sv_out,
                           double *coef) {
  AMD_CU_LOOP(c, s.ch) {
    double m, v;
    if (batch_stats && s.cnt > 0) {
      double t[CHAN_SUMS];
      chan_total(part, c, s.slices, t);
      double n = (double)s.cnt, dm = t[0] / n;
      m = chan_shift(s, x, c) + dm;
      v = t[1] / n - dm * dm;
      if (v < 0) v = 0;
    } else if (batch_stats) {
      m = v = 0;
    } else {
      m = mean_in[c];
      v = var_in[c];
    }
    coef[c * 4 + 0] = m;
    coef[c * 4 + 1] = (double)scale[c] / sqrt(v + eps);
    coef[c * 4 + 2] = v;
    coef[c * 4 + 3] = 0;
    double rm = batch_stats ? (double)mean_in[c] * mom + m * (1.0 - mom) : (double)mean_in[c];
    double rv = batch_stats ? (double)var_in[c] * mom + v * unbias * (1.0 - mom) : (double)var_in[c];
    if (rm_out) rm_out[c] = (float)rm;
    if (rv_out) rv_out[c] = (float)rv;
    if (sm_out) sm_out[c] = (float)m; /* opset < 14: saved mean / variance (the statistics used) */
    if (sv_out) sv_out[c] = (float)v;
  }
}

/* y = (x - m) k + bias, V floats of one channel at a time (sp % V == 0) */
template <typename I, int V>
__global__ void k_bn_apply(int64_t total, int64_t ch, int64_t sp, const float *x, const float *bias,
                           const double *coef, float *y) {
  AMD_CU_LOOP_I(I, i, total / V) {
    I c = (i / (I)(sp / V)) % (I)ch;
    const double m = coef[c * 4], k = coef[c * 4 + 1], b = bias[c];
    vecf<V> xv = ((const vecf<V> *)x)[i], yv;
    const float *xe = (const float *)&xv;
    float *ye = (float *)&yv;
#pragma unroll
    for (int e = 0; e < V; e++) ye[e] = (float)(((double)xe[e] - m) * k + b);
    ((vecf<V> *)y)[i] = yv;
  }
}

/* --sync-bn (ctx->sync_stats): adds this rank's per-channel sums (part, with
 * the shift s.shift that every rank shares) and element count to every other
 * rank's, through the host, into gpart as one slice; *gs describes them. */
static int bn_sync_sums(const amd_ctx *ctx, const chan_slicing &s, const double *part, double *gpart,
                        chan_slicing *gs, amd_status *st) {
  size_t nl = (size_t)(s.ch * s.slices * CHAN_SUMS), ng = (size_t)(s.ch * CHAN_SUMS);
  double *h = (double *)malloc((nl + ng + 1) * sizeof(double));
  if (!h) return amd_fail(st, "out of memory");
  double *tot = h + nl;
  int rc = -1;
  if (s.cnt == 0) /* no sample here (the sums were not run) */
    memset(h, 0, nl * sizeof(double));
  else if (cudaMemcpyAsync(h, part, nl * sizeof(double), cudaMemcpyDeviceToHost, amd_cu.stream) !=
               cudaSuccess ||
           cudaStreamSynchronize(amd_cu.stream) != cudaSuccess) {
    amd_fail(st, "CUDA error %s reading the BatchNormalization sums", cudaGetErrorName(cudaGetLastError()));
    goto done;
  }
  for (int64_t c = 0; c < s.ch; c++)
    for (int k = 0; k < CHAN_SUMS; k++) {
      double v = 0;
      for (int sl = 0; sl < s.slices; sl++) v += h[(c * s.slices + sl) * CHAN_SUMS + k];
      tot[c * CHAN_SUMS + k] = v;
    }
  tot[ng] = (double)s.cnt;
  if (ctx->sync_stats(ctx->sync_user, tot, (int64_t)ng + 1, st)) {
    amd_fail_prefix(st, "BatchNormalization statistics over the ranks");
    goto done;
  }
  if (cudaMemcpyAsync(gpart, tot, ng * sizeof(double), cudaMemcpyHostToDevice, amd_cu.stream) !=
          cudaSuccess ||
      cudaStreamSynchronize(amd_cu.stream) != cudaSuccess) { /* tot is freed below */
    amd_fail(st, "CUDA error %s writing the BatchNormalization sums", cudaGetErrorName(cudaGetLastError()));
    goto done;
  }
  *gs = s;
  gs->slices = 1;
  gs->cnt = (int64_t)tot[ng];
  rc = 0;
done:
  free(h);
  return rc;
}

static int bn_forward(FWD_ARGS) {
  const amd_bn_attrs *a = (const amd_bn_attrs *)n->attrs;
  const amd_tensor *x = in[0];
  int64_t batch = x->dims[0], ch = x->dims[1], sp = 1;
  for (int i = 2; i < x->rank; i++) sp *= x->dims[i];
  if (ch == 0) return 0;
  int bstats = amd_bn_use_batch_stats(n, ctx);
  int64_t count = batch * sp;
  double unbias = ctx && ctx->training && count > 1 ? (double)count / (double)(count - 1) : 1.0;
  float *rm = n->n_out > 1 && n->out[1] >= 0 && out[1].data ? F(&out[1]) : NULL;
  float *rv = n->n_out > 2 && n->out[2] >= 0 && out[2].data ? F(&out[2]) : NULL;
  float *sm = n->n_out > 3 && n->out[3] >= 0 && out[3].data ? F(&out[3]) : NULL;
  float *sv = n->n_out > 4 && n->out[4] >= 0 && out[4].data ? F(&out[4]) : NULL;
  chan_slicing s = chan_slices(batch, ch, sp), gs;
  const bool sync = bstats && ctx && ctx->training && ctx->sync_stats;
  if (sync) s.shift = F(in[3]); /* the running mean: the same on every rank */
  scratch coef, part, gpart;
  if (coef.get((size_t)ch * 4 * sizeof(double), st) ||
      part.get((size_t)ch * s.slices * CHAN_SUMS * sizeof(double), st) ||
      gpart.get((size_t)ch * CHAN_SUMS * sizeof(double), st))
    return -1;
  if (bstats && count > 0 && chan_partial(s, F(x), NULL, part.d(), st)) return -1;
  if (sync) { /* the statistics of the global batch */
    if (bn_sync_sums(ctx, s, part.d(), gpart.d(), &gs, st)) return -1;
    s = gs;
    count = s.cnt;
    unbias = count > 1 ? (double)count / (double)(count - 1) : 1.0;
  }
  k_bn_stats<<<amd_cu_blocks(ch, 128), 128, 0, amd_cu.stream>>>(
      s, sync ? gpart.d() : part.d(), F(x), F(in[1]), F(in[3]), F(in[4]), bstats, a->epsilon, a->momentum,
      unbias, rm, rv, sm, sv, coef.d());
  AMD_CUDA_CHECK_LAUNCH("k_bn_stats", st);
  int64_t total = amd_tensor_numel(x);
  if (total) {
    const float *xp = F(x), *bp = F(in[2]);
    float *yp = F(&out[0]);
    if (sp % 4 == 0 && aligned16(xp) && aligned16(yp) && fits32(total))
      k_bn_apply<int, 4>
          <<<amd_cu_blocks(total / 4), 256, 0, amd_cu.stream>>>(total, ch, sp, xp, bp, coef.d(), yp);
    else if (fits32(total))
      k_bn_apply<int, 1>
          <<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(total, ch, sp, xp, bp, coef.d(), yp);
    else
      k_bn_apply<int64_t, 1>
          <<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(total, ch, sp, xp, bp, coef.d(), yp);
    AMD_CUDA_CHECK_LAUNCH("k_bn_apply", st);
  }
  return 0;
}

/* Per channel (one thread each), from one pass of sums over x and dy: the
 * statistics used, sg = sum dy, sgx = sum dy (x - m) (from the shifted sums:
 * sum dy (x - K) - (m - K) sg); dscale += sgx / sqrt(v + eps), dbias += sg;
 * coef = m, k, c0, c1 for dx. */
__global__ void k_bn_bwd_coef(chan_slicing s, const double *part, chan_slicing gs, const double *gpart,
                              const float *x, const float *scale, const float *mean_in, const float *var_in,
                              int batch_stats, double eps, double *coef, float *dscale, float *dbias) {
  AMD_CU_LOOP(c, s.ch) {
    /* t: this rank's sums (dscale, dbias); g: every rank's (the statistics, dx) with --sync-bn, else t */
    double t[CHAN_SUMS] = {0, 0, 0, 0}, g[CHAN_SUMS] = {0, 0, 0, 0}, K = 0, n = (double)gs.cnt, m, v;
    if (s.cnt > 0) {
      chan_total(part, c, s.slices, t);
      K = chan_shift(s, x, c);
    }
    if (gs.cnt > 0) chan_total(gpart, c, gs.slices, g);
    if (batch_stats) {
      double dm = gs.cnt > 0 ? g[0] / n : 0.0;
      m = K + dm;
      v = gs.cnt > 0 ? g[1] / n - dm * dm : 0.0;
      if (v < 0) v = 0;
    } else {
      m = mean_in[c];
      v = var_in[c];
    }
    double inv = 1.0 / sqrt(v + eps), sg = t[2], sgx = t[3] - (m - K) * sg;
    if (dscale) dscale[c] = (float)((double)dscale[c] + sgx * inv);
    if (dbias) dbias[c] = (float)((double)dbias[c] + sg);
    double c0 = 0, c1 = 0;
    if (batch_stats && gs.cnt > 0) {
      double gsg = g[2], gsgx = g[3] - (m - K) * gsg;
      c0 = gsg / n;
      c1 = gsgx * inv * inv / n;
    }
    coef[c * 4 + 0] = m;
    coef[c * 4 + 1] = (double)scale[c] * inv;
    coef[c * 4 + 2] = c0;
    coef[c * 4 + 3] = c1;
  }
}

/* dx += k (dy - c0 - (x - m) c1), V floats of one channel at a time */
template <typename I, int V>
__global__ void k_bn_dx(int64_t total, int64_t ch, int64_t sp, const float *x, const float *dy,
                        const double *coef, float *dx, bool acc) {
  AMD_CU_LOOP_I(I, i, total / V) {
    I c = (i / (I)(sp / V)) % (I)ch;
    const double *k = coef + c * 4;
    vecf<V> xv = ((const vecf<V> *)x)[i], gv = ((const vecf<V> *)dy)[i], dv = {};
    if (acc) dv = ((const vecf<V> *)dx)[i];
    const float *xe = (const float *)&xv, *ge = (const float *)&gv;
    float *de = (float *)&dv;
#pragma unroll
    for (int e = 0; e < V; e++)
      de[e] += (float)(k[1] * ((double)ge[e] - k[2] - ((double)xe[e] - k[0]) * k[3]));
    ((vecf<V> *)dx)[i] = dv;
  }
}

static int bn_backward(BWD_ARGS) {
  (void)out;
  const amd_bn_attrs *a = (const amd_bn_attrs *)n->attrs;
  const amd_tensor *x = in[0], *dy = dout[0];
  amd_tensor *dx = din[0], *dscale = din[1], *dbias = din[2];
  if (!dy || (!dx && !dscale && !dbias)) return 0;
  int64_t batch = x->dims[0], ch = x->dims[1], sp = 1;
  for (int i = 2; i < x->rank; i++) sp *= x->dims[i];
  if (ch == 0) return 0;
  int bstats = amd_bn_use_batch_stats(n, ctx);
  chan_slicing s = chan_slices(batch, ch, sp), gs;
  const bool sync = bstats && ctx && ctx->training && ctx->sync_stats;
  if (sync) s.shift = F(in[3]); /* as the forward pass */
  scratch coef, part, gpart;
  if (coef.get((size_t)ch * 4 * sizeof(double), st) ||
      part.get((size_t)ch * s.slices * CHAN_SUMS * sizeof(double), st) ||
      gpart.get((size_t)ch * CHAN_SUMS * sizeof(double), st))
    return -1;
  if (s.cnt > 0 && chan_partial(s, F(x), F(dy), part.d(), st)) return -1;
  if (sync && bn_sync_sums(ctx, s, part.d(), gpart.d(), &gs, st)) return -1;
  k_bn_bwd_coef<<<amd_cu_blocks(ch, 128), 128, 0, amd_cu.stream>>>(
      s, part.d(), sync ? gs : s, sync ? gpart.d() : part.d(), F(x), F(in[1]), F(in[3]), F(in[4]), bstats,
      a->epsilon, coef.d(), F(dscale), F(dbias));
  AMD_CUDA_CHECK_LAUNCH("k_bn_bwd_coef", st);
  int64_t total = amd_tensor_numel(x);
  if (dx && total) {
    const float *xp = F(x), *gp = F(dy);
    float *dp = F(dx);
    const bool acc = acc_of(ctx, 0);
    if (sp % 4 == 0 && aligned16(xp) && aligned16(gp) && aligned16(dp) && fits32(total))
      k_bn_dx<int, 4>
          <<<amd_cu_blocks(total / 4), 256, 0, amd_cu.stream>>>(total, ch, sp, xp, gp, coef.d(), dp, acc);
    else if (fits32(total))
      k_bn_dx<int, 1>
          <<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(total, ch, sp, xp, gp, coef.d(), dp, acc);
    else
      k_bn_dx<int64_t, 1>
          <<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(total, ch, sp, xp, gp, coef.d(), dp, acc);
    AMD_CUDA_CHECK_LAUNCH("k_bn_dx", st);
  }
  return 0;
}

/* ================================================================ activations */

enum { ACT_RELU, ACT_LEAKY, ACT_SIGMOID, ACT_TANH, ACT_CLIP };

__device__ __forceinline__ float sigmoid_f(float v) {
  if (v >= 0) return 1.0f / (1.0f + expf(-v));
  float e = expf(v);
  return e / (1.0f + e);
}

__device__ __forceinline__ float act_f(int kind, float v, float p0, float p1) {
  switch (kind) {
  case ACT_RELU:
    return v < 0 ? 0.0f : v;
  case ACT_LEAKY:
    return v < 0 ? v * p0 : v;
  case ACT_SIGMOID:
    return sigmoid_f(v);
  case ACT_TANH:
    return tanhf(v);
  default: {
    float lo = v < p0 ? p0 : v;
    return lo > p1 ? p1 : lo;
  }
  }
}

/* the gradient through the activation: x v, y u, upstream gradient g */
__device__ __forceinline__ float act_g(int kind, float v, float u, float g, float p0, float p1) {
  switch (kind) {
  case ACT_RELU:
    return v > 0 ? g : 0.0f;
  case ACT_LEAKY:
    return v < 0 ? g * p0 : g;
  case ACT_SIGMOID:
    return g * u * (1.0f - u);
  case ACT_TANH:
    return g * (1.0f - u * u);
  default:
    return v > p0 && v < p1 ? g : 0.0f;
  }
}

/* V elements at a time (V = 4: 16-byte accesses; nel % V == 0) */
template <int V>
__global__ void k_act_fwd(int kind, int64_t nel, const float *x, float *y, float p0, float p1) {
  AMD_CU_LOOP(i, nel / V) {
    vecf<V> xv = ((const vecf<V> *)x)[i], yv;
    const float *xe = (const float *)&xv;
    float *ye = (float *)&yv;
#pragma unroll
    for (int e = 0; e < V; e++) ye[e] = act_f(kind, xe[e], p0, p1);
    ((vecf<V> *)y)[i] = yv;
  }
}

template <int V>
__global__ void k_act_bwd(int kind, int64_t nel, const float *x, const float *y, const float *g, float *dx,
                          float p0, float p1, bool acc) {
  AMD_CU_LOOP(i, nel / V) {
    vecf<V> xv = ((const vecf<V> *)x)[i], yv = ((const vecf<V> *)y)[i], gv = ((const vecf<V> *)g)[i], dv = {};
    if (acc) dv = ((const vecf<V> *)dx)[i];
    const float *xe = (const float *)&xv, *ye = (const float *)&yv, *ge = (const float *)&gv;
    float *de = (float *)&dv;
#pragma unroll
    for (int e = 0; e < V; e++) de[e] += act_g(kind, xe[e], ye[e], ge[e], p0, p1);
    ((vecf<V> *)dx)[i] = dv;
  }
}

static int act_kind(const amd_node *n) {
  switch (n->op->idx) {
  case AMD_OP_IDX_Relu:
    return ACT_RELU;
  case AMD_OP_IDX_LeakyRelu:
    return ACT_LEAKY;
  case AMD_OP_IDX_Sigmoid:
    return ACT_SIGMOID;
  case AMD_OP_IDX_Tanh:
    return ACT_TANH;
  default:
    return ACT_CLIP;
  }
}

/* The parameters: LeakyRelu alpha; Clip bounds (from the host-staged inputs at opset >= 11). */
static void act_params(const amd_node *n, const amd_tensor *const *in, int kind, float *p0, float *p1) {
  *p0 = 0, *p1 = 0;
  if (kind == ACT_LEAKY) *p0 = ((const amd_act_attrs *)n->attrs)->alpha;
  if (kind != ACT_CLIP) return;
  double lo, hi;
  if (n->since >= 11) {
    const amd_tensor *tmin = n->n_in > 1 ? in[1] : NULL, *tmax = n->n_in > 2 ? in[2] : NULL;
    lo = tmin ? amd_tensor_get_f64(tmin, 0) : -INFINITY;
    hi = tmax ? amd_tensor_get_f64(tmax, 0) : INFINITY;
  } else {
    const amd_act_attrs *a = (const amd_act_attrs *)n->attrs;
    lo = a->min, hi = a->max;
  }
  *p0 = (float)lo, *p1 = (float)hi;
}

static int act_forward(FWD_ARGS) {
  (void)ctx;
  int kind = act_kind(n);
  float p0, p1;
  act_params(n, in, kind, &p0, &p1);
  int64_t nel = amd_tensor_numel(in[0]);
  if (!nel) return 0;
  if (nel % 4 == 0 && aligned16(F(in[0])) && aligned16(F(&out[0])))
    k_act_fwd<4><<<amd_cu_blocks(nel / 4), 256, 0, amd_cu.stream>>>(kind, nel, F(in[0]), F(&out[0]), p0, p1);
  else
    k_act_fwd<1><<<amd_cu_blocks(nel), 256, 0, amd_cu.stream>>>(kind, nel, F(in[0]), F(&out[0]), p0, p1);
  AMD_CUDA_CHECK_LAUNCH("k_act_fwd", st);
  return 0;
}

static int act_backward(BWD_ARGS) {
  if (!dout[0] || !din[0]) return 0;
  const bool acc = acc_of(ctx, 0);
  int kind = act_kind(n);
  float p0, p1;
  act_params(n, in, kind, &p0, &p1);
  int64_t nel = amd_tensor_numel(in[0]);
  if (!nel) return 0;
  /* Relu's gradient from its output (y > 0 where x > 0): training frees Relu's input (bwd_unread_in) */
  const float *y = F(&out[0]), *x = kind == ACT_RELU ? y : F(in[0]), *g = F(dout[0]);
  float *dx = F(din[0]);
  if (nel % 4 == 0 && aligned16(x) && aligned16(y) && aligned16(g) && aligned16(dx))
    k_act_bwd<4><<<amd_cu_blocks(nel / 4), 256, 0, amd_cu.stream>>>(kind, nel, x, y, g, dx, p0, p1, acc);
  else
    k_act_bwd<1><<<amd_cu_blocks(nel), 256, 0, amd_cu.stream>>>(kind, nel, x, y, g, dx, p0, p1, acc);
  AMD_CUDA_CHECK_LAUNCH("k_act_bwd", st);
  return 0;
}

/* ================================================================ pools (2-D) */

struct pool2d {
  int64_t planes, h, w, oh, ow, kh, kw, sh, sw, dh, dw, pbh, pbw, peh, pew;
  int include_pad;
};

static pool2d make_pool2d(const amd_pool_geom *g, int include_pad) {
  pool2d p;
  p.planes = g->planes, p.h = g->in[0], p.w = g->in[1], p.oh = g->out[0], p.ow = g->out[1];
  p.kh = g->k[0], p.kw = g->k[1], p.sh = g->s[0], p.sw = g->s[1], p.dh = g->d[0], p.dw = g->d[1];
  p.pbh = g->pb[0], p.pbw = g->pb[1], p.peh = g->pe[0], p.pew = g->pe[1], p.include_pad = include_pad;
  return p;
}

/* pool.c's win_range and win_padded_count for one dimension */
__device__ __forceinline__ void win(int64_t o, int64_t s, int64_t pb, int64_t d, int64_t in, int64_t k,
                                    int64_t *start, int64_t *lo, int64_t *hi) {
  int64_t s0 = o * s - pb;
  int64_t l = s0 < 0 ? (-s0 + d - 1) / d : 0;
  int64_t h = in - s0 <= 0 ? 0 : (in - s0 + d - 1) / d;
  if (h > k) h = k;
  *start = s0, *lo = l, *hi = h < l ? l : h;
}
__device__ __forceinline__ int64_t win_padded(int64_t in, int64_t pe, int64_t start, int64_t d, int64_t k) {
  int64_t lim = in + pe - start;
  int64_t c = lim <= 0 ? 0 : (lim + d - 1) / d;
  return c > k ? k : c;
}

/* The window of output (oy, ox): first in-bounds tap seeds the max, strictly greater replaces (pool.c). */
__device__ int64_t window_argmax(const pool2d &p, const float *xp, int64_t oy, int64_t ox) {
  int64_t sy, ly, hy, sx, lx, hx;
  win(oy, p.sh, p.pbh, p.dh, p.h, p.kh, &sy, &ly, &hy);
  win(ox, p.sw, p.pbw, p.dw, p.w, p.kw, &sx, &lx, &hx);
  if (ly >= hy || lx >= hx) return -1;
  int64_t bi = (sy + ly * p.dh) * p.w + sx + lx * p.dw;
  float best = xp[bi];
  for (int64_t a = ly; a < hy; a++)
    for (int64_t b = lx; b < hx; b++) {
      int64_t o = (sy + a * p.dh) * p.w + sx + b * p.dw;
      if (xp[o] > best) best = xp[o], bi = o;
    }
  return bi;
}

__global__ void k_pool_fwd(pool2d p, int is_max, const float *x, float *y) {
  const int64_t total = p.planes * p.oh * p.ow;
  AMD_CU_LOOP(i, total) {
    int64_t ox = i % p.ow, oy = (i / p.ow) % p.oh, pl = i / (p.ow * p.oh);
    const float *xp = x + pl * p.h * p.w;
    int64_t sy, ly, hy, sx, lx, hx;
    win(oy, p.sh, p.pbh, p.dh, p.h, p.kh, &sy, &ly, &hy);
    win(ox, p.sw, p.pbw, p.dw, p.w, p.kw, &sx, &lx, &hx);
    if (is_max) {
      float best = -INFINITY;
      int any = 0;
      for (int64_t a = ly; a < hy; a++)
        for (int64_t b = lx; b < hx; b++) {
          float v = xp[(sy + a * p.dh) * p.w + sx + b * p.dw];
          if (!any || v > best) best = v, any = 1;
        }
      y[i] = best;
    } else {
      double sum = 0;
      for (int64_t a = ly; a < hy; a++)
        for (int64_t b = lx; b < hx; b++) sum += xp[(sy + a * p.dh) * p.w + sx + b * p.dw];
      int64_t cnt = p.include_pad
                        ? win_padded(p.h, p.peh, sy, p.dh, p.kh) * win_padded(p.w, p.pew, sx, p.dw, p.kw)
                        : (hy - ly) * (hx - lx);
      y[i] = cnt > 0 ? (float)(sum / (double)cnt) : 0.0f;
    }
  }
}

/* One thread per input element: the windows that contain it, in the CPU's output order. */
__global__ void k_pool_bwd(pool2d p, int is_max, const float *x, const float *dy, float *dx) {
  const int64_t total = p.planes * p.h * p.w;
  AMD_CU_LOOP(i, total) {
    int64_t ix = i % p.w, iy = (i / p.w) % p.h, pl = i / (p.w * p.h);
    const float *xp = x + pl * p.h * p.w, *gp = dy + pl * p.oh * p.ow;
    const int64_t me = iy * p.w + ix;
    float acc = dx[i];
    for (int64_t a = p.kh - 1; a >= 0; a--) {
      int64_t ty = iy + p.pbh - a * p.dh;
      if (ty < 0 || ty % p.sh) continue;
      int64_t oy = ty / p.sh;
      if (oy >= p.oh) continue;
      for (int64_t b = p.kw - 1; b >= 0; b--) {
        int64_t tx = ix + p.pbw - b * p.dw;
        if (tx < 0 || tx % p.sw) continue;
        int64_t ox = tx / p.sw;
        if (ox >= p.ow) continue;
        if (is_max) {
          if (window_argmax(p, xp, oy, ox) == me) acc += gp[oy * p.ow + ox];
        } else {
          int64_t sy, ly, hy, sx, lx, hx;
          win(oy, p.sh, p.pbh, p.dh, p.h, p.kh, &sy, &ly, &hy);
          win(ox, p.sw, p.pbw, p.dw, p.w, p.kw, &sx, &lx, &hx);
          if (ly >= hy || lx >= hx) continue;
          int64_t cnt = p.include_pad
                            ? win_padded(p.h, p.peh, sy, p.dh, p.kh) * win_padded(p.w, p.pew, sx, p.dw, p.kw)
                            : (hy - ly) * (hx - lx);
          if (cnt <= 0) continue;
          acc += (float)(gp[oy * p.ow + ox] / (double)cnt);
        }
      }
    }
    dx[i] = acc;
  }
}

/* Max-pool windows that cannot overlap (no dilation, kernel <= stride): one
 * thread per output adds its gradient to its window's argmax (window_argmax's
 * rule), so each input element receives at most one term and the sums are
 * k_pool_bwd's, without that kernel's search for the windows of an element.
 * 32-bit indices: the caller checks that the input has fewer than 2^31. */
__global__ void k_maxpool_bwd_disjoint(pool2d p, const float *x, const float *dy, float *dx) {
  const int oh = (int)p.oh, ow = (int)p.ow, h = (int)p.h, w = (int)p.w;
  const int total = (int)p.planes * oh * ow;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const int ox = i % ow, t = i / ow, oy = t % oh, pl = t / oh;
    const int y0 = oy * (int)p.sh - (int)p.pbh, x0 = ox * (int)p.sw - (int)p.pbw;
    const int ya = y0 < 0 ? 0 : y0, xa = x0 < 0 ? 0 : x0;
    const int yb = min(y0 + (int)p.kh, h), xb = min(x0 + (int)p.kw, w);
    if (ya >= yb || xa >= xb) continue;
    const float *xp = x + pl * h * w;
    int bi = ya * w + xa;
    float best = xp[bi];
    for (int a = ya; a < yb; a++)
      for (int b = xa; b < xb; b++)
        if (xp[a * w + b] > best) best = xp[a * w + b], bi = a * w + b;
    dx[pl * h * w + bi] += dy[i];
  }
}

static int pool_forward(FWD_ARGS) {
  (void)ctx;
  const amd_pool_attrs *a = (const amd_pool_attrs *)n->attrs;
  amd_pool_geom g;
  if (amd_pool_geometry(a, in[0], &g, st)) return -1;
  pool2d p = make_pool2d(&g, a->count_include_pad);
  int64_t total = g.planes * g.out_plane;
  if (!total) return 0;
  k_pool_fwd<<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(p, a->kind == AMD_POOL_MAX, F(in[0]),
                                                              F(&out[0]));
  AMD_CUDA_CHECK_LAUNCH("k_pool_fwd", st);
  return 0;
}

static int pool_backward(BWD_ARGS) {
  (void)ctx, (void)out;
  if (!dout[0] || !din[0]) return 0;
  const amd_pool_attrs *a = (const amd_pool_attrs *)n->attrs;
  amd_pool_geom g;
  if (amd_pool_geometry(a, in[0], &g, st)) return -1;
  pool2d p = make_pool2d(&g, a->count_include_pad);
  int64_t total = g.planes * g.in_plane;
  if (!total) return 0;
  if (a->kind == AMD_POOL_MAX && p.dh == 1 && p.dw == 1 && p.kh <= p.sh && p.kw <= p.sw &&
      total < INT32_MAX) {
    k_maxpool_bwd_disjoint<<<amd_cu_blocks(g.planes * g.out_plane), 256, 0, amd_cu.stream>>>(
        p, F(in[0]), F(dout[0]), F(din[0]));
    AMD_CUDA_CHECK_LAUNCH("k_maxpool_bwd_disjoint", st);
    return 0;
  }
  k_pool_bwd<<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(p, a->kind == AMD_POOL_MAX, F(in[0]),
                                                              F(dout[0]), F(din[0]));
  AMD_CUDA_CHECK_LAUNCH("k_pool_bwd", st);
  return 0;
}

/* ---- global pools: one thread per plane, the CPU's loop ---- */

__global__ void k_global_fwd(int64_t planes, int64_t inner, int is_max, const float *x, float *y) {
  AMD_CU_LOOP(pl, planes) {
    const float *xp = x + pl * inner;
    if (is_max) {
      float m = -INFINITY;
      for (int64_t i = 0; i < inner; i++)
        if (xp[i] > m || isnan(xp[i])) m = xp[i];
      y[pl] = m;
    } else {
      double acc = 0;
      for (int64_t i = 0; i < inner; i++) acc += xp[i];
      y[pl] = (float)(inner > 0 ? acc / (double)inner : 0.0);
    }
  }
}

__global__ void k_gap_bwd(int64_t planes, int64_t inner, const float *dy, float *dx) {
  AMD_CU_LOOP(i, planes * inner) dx[i] += (float)(dy[i / inner] / (double)inner);
}

__global__ void k_gmp_bwd(int64_t planes, int64_t inner, const float *x, const float *dy, float *dx) {
  AMD_CU_LOOP(pl, planes) {
    const float *xp = x + pl * inner;
    float m = -INFINITY;
    int64_t bi = -1;
    for (int64_t i = 0; i < inner; i++)
      if (xp[i] > m || isnan(xp[i])) m = xp[i], bi = i;
    if (bi >= 0) dx[pl * inner + bi] += dy[pl];
  }
}

static void plane_sizes(const amd_tensor *x, int64_t *planes, int64_t *inner) {
  *planes = x->dims[0] * x->dims[1];
  *inner = 1;
  for (int i = 2; i < x->rank; i++) *inner *= x->dims[i];
}

static int global_forward(FWD_ARGS) {
  (void)ctx;
  int64_t planes, inner;
  plane_sizes(in[0], &planes, &inner);
  if (!planes) return 0;
  k_global_fwd<<<amd_cu_blocks(planes, 128), 128, 0, amd_cu.stream>>>(
      planes, inner, n->op->idx == AMD_OP_IDX_GlobalMaxPool, F(in[0]), F(&out[0]));
  AMD_CUDA_CHECK_LAUNCH("k_global_fwd", st);
  return 0;
}

static int global_backward(BWD_ARGS) {
  (void)ctx, (void)out;
  if (!dout[0] || !din[0]) return 0;
  int64_t planes, inner;
  plane_sizes(in[0], &planes, &inner);
  if (!planes || !inner) return 0;
  if (n->op->idx == AMD_OP_IDX_GlobalMaxPool)
    k_gmp_bwd<<<amd_cu_blocks(planes, 128), 128, 0, amd_cu.stream>>>(planes, inner, F(in[0]), F(dout[0]),
                                                                     F(din[0]));
  else
    k_gap_bwd<<<amd_cu_blocks(planes * inner), 256, 0, amd_cu.stream>>>(planes, inner, F(dout[0]), F(din[0]));
  AMD_CUDA_CHECK_LAUNCH("global pool backward", st);
  return 0;
}

/* ================================================================ Add, Sub, Mul, Div */

enum { EW_ADD, EW_SUB, EW_MUL, EW_DIV };

struct ew_shape {
  int rank;
  int64_t dims[AMD_MAX_RANK], sa[AMD_MAX_RANK], sb[AMD_MAX_RANK], so[AMD_MAX_RANK]; /* so: output strides */
};

__device__ __forceinline__ float ew_apply(int op, float x, float y) {
  switch (op) {
  case EW_ADD:
    return x + y;
  case EW_SUB:
    return x - y;
  case EW_MUL:
    return x * y;
  default:
    return x / y;
  }
}

/* The gradient contribution for output element with operands x (a), y (b) and gradient g. */
__device__ __forceinline__ float ew_grad(int op, int which, float x, float y, float g) {
  switch (op * 2 + which) {
  case EW_ADD * 2:
  case EW_ADD * 2 + 1:
  case EW_SUB * 2:
    return g;
  case EW_SUB * 2 + 1:
    return -g;
  case EW_MUL * 2:
    return g * y;
  case EW_MUL * 2 + 1:
    return g * x;
  case EW_DIV * 2:
    return g / y;
  default:
    return -(g * x / (y * y));
  }
}

/* Operands of the output's own size (no broadcasting: element i of each is
 * element i of the output), V elements at a time: no index arithmetic. */
template <int V>
__global__ void k_ew_fwd_same(int op, int64_t total, const float *a, const float *b, float *o) {
  AMD_CU_LOOP(i, total / V) {
    vecf<V> av = ((const vecf<V> *)a)[i], bv = ((const vecf<V> *)b)[i], ov;
    const float *ae = (const float *)&av, *be = (const float *)&bv;
    float *oe = (float *)&ov;
#pragma unroll
    for (int e = 0; e < V; e++) oe[e] = ew_apply(op, ae[e], be[e]);
    ((vecf<V> *)o)[i] = ov;
  }
}

template <int V>
__global__ void k_ew_bwd_same(int op, int which, int64_t total, const float *a, const float *b,
                              const float *g, float *d, bool acc) {
  AMD_CU_LOOP(i, total / V) {
    vecf<V> av = {}, bv = {}, gv = ((const vecf<V> *)g)[i], dv = {};
    if (acc) dv = ((const vecf<V> *)d)[i];
    if (op >= EW_MUL) av = ((const vecf<V> *)a)[i], bv = ((const vecf<V> *)b)[i]; /* Add, Sub: unread */
    const float *ae = (const float *)&av, *be = (const float *)&bv, *ge = (const float *)&gv;
    float *de = (float *)&dv;
#pragma unroll
    for (int e = 0; e < V; e++) de[e] += ew_grad(op, which, ae[e], be[e], ge[e]);
    ((vecf<V> *)d)[i] = dv;
  }
}

/* The offsets in a and b of output element i. */
__device__ __forceinline__ void ew_offsets(const ew_shape &s, int64_t i, int64_t *oa, int64_t *ob) {
  int64_t r = i;
  *oa = 0, *ob = 0;
  for (int d = s.rank - 1; d >= 0; d--) {
    int64_t id = r % s.dims[d];
    r /= s.dims[d];
    *oa += id * s.sa[d];
    *ob += id * s.sb[d];
  }
}

__global__ void k_ew_fwd(int op, ew_shape s, int64_t total, const float *a, const float *b, float *o) {
  AMD_CU_LOOP(i, total) {
    int64_t oa, ob;
    ew_offsets(s, i, &oa, &ob);
    o[i] = ew_apply(op, a[oa], b[ob]);
  }
}

/* Full-size operand: one thread per output element (a bijection onto the operand). */
__global__ void k_ew_bwd_full(int op, int which, ew_shape s, int64_t total, const float *a, const float *b,
                              const float *g, float *d, bool acc) {
  AMD_CU_LOOP(i, total) {
    int64_t oa, ob;
    ew_offsets(s, i, &oa, &ob);
    const float x = op >= EW_MUL ? a[oa] : 0.0f, y = op >= EW_MUL ? b[ob] : 0.0f; /* Add, Sub: unread */
    float &o = d[which ? ob : oa];
    o = (acc ? o : 0.0f) + ew_grad(op, which, x, y, g[i]); /* x + (-t) == x - t: the CPU's -= */
  }
}

/* Broadcast operand: one thread per operand element, summing (in double, in
 * output order) over the output elements that read it, as the CPU's scratch. */
__global__ void k_ew_bwd_reduce(int op, int which, ew_shape s, int64_t nop, const float *a, const float *b,
                                const float *g, float *d, bool acc_d) {
  AMD_CU_LOOP(j, nop) {
    const int64_t *sd = which ? s.sb : s.sa;
    int64_t idx[AMD_MAX_RANK], r = j;
    for (int dd = s.rank - 1; dd >= 0; dd--) { /* j over the operand's own (kept) dims */
      if (sd[dd] != 0) {
        idx[dd] = r % s.dims[dd];
        r /= s.dims[dd];
      } else {
        idx[dd] = 0;
      }
    }
    double acc = 0;
    for (;;) {
      int64_t oo = 0, oa = 0, ob = 0;
      for (int dd = 0; dd < s.rank; dd++)
        oo += idx[dd] * s.so[dd], oa += idx[dd] * s.sa[dd], ob += idx[dd] * s.sb[dd];
      float x = op >= EW_MUL ? a[oa] : 0.0f, y = op >= EW_MUL ? b[ob] : 0.0f,
            gv = g[oo]; /* Add, Sub: unread */
      acc += (double)ew_grad(op, which, x, y, gv);
      int dd = s.rank - 1; /* advance the reduced dims, last fastest */
      for (; dd >= 0; dd--) {
        if (sd[dd] != 0 || s.dims[dd] == 1) continue;
        if (++idx[dd] < s.dims[dd]) break;
        idx[dd] = 0;
      }
      if (dd < 0) break;
    }
    d[j] = (acc_d ? d[j] : 0.0f) + (float)acc;
  }
}

static int ew_op(const amd_node *n) {
  switch (n->op->idx) {
  case AMD_OP_IDX_Add:
    return EW_ADD;
  case AMD_OP_IDX_Sub:
    return EW_SUB;
  case AMD_OP_IDX_Mul:
    return EW_MUL;
  default:
    return EW_DIV;
  }
}

static void ew_make(const amd_tensor *a, const amd_tensor *bv, const amd_tensor *o, ew_shape *s) {
  s->rank = o->rank;
  amd_broadcast_strides(a, o, s->sa);
  amd_broadcast_strides(bv, o, s->sb);
  int64_t str = 1;
  for (int d = o->rank - 1; d >= 0; d--) {
    s->dims[d] = o->dims[d];
    s->so[d] = str;
    str *= o->dims[d];
  }
}

static int ew_forward(FWD_ARGS) {
  (void)ctx;
  amd_tensor bv;
  if (amd_ew_operand_b(n, in[0], in[1], &bv, st)) return -1;
  ew_shape s;
  ew_make(in[0], &bv, &out[0], &s);
  int64_t total = amd_tensor_numel(&out[0]);
  if (!total) return 0;
  const float *a = F(in[0]), *b = F(&bv);
  float *o = F(&out[0]);
  if (amd_tensor_numel(in[0]) == total && amd_tensor_numel(&bv) == total) {
    if (total % 4 == 0 && aligned16(a) && aligned16(b) && aligned16(o))
      k_ew_fwd_same<4><<<amd_cu_blocks(total / 4), 256, 0, amd_cu.stream>>>(ew_op(n), total, a, b, o);
    else
      k_ew_fwd_same<1><<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(ew_op(n), total, a, b, o);
  } else {
    k_ew_fwd<<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(ew_op(n), s, total, a, b, o);
  }
  AMD_CUDA_CHECK_LAUNCH("k_ew_fwd", st);
  return 0;
}

static int ew_backward(BWD_ARGS) {
  if (!dout[0]) return 0;
  amd_tensor bv;
  if (amd_ew_operand_b(n, in[0], in[1], &bv, st)) return -1;
  ew_shape s;
  ew_make(in[0], &bv, &out[0], &s);
  int64_t total = amd_tensor_numel(&out[0]);
  if (!total) { /* an empty output: a broadcast operand's gradient is 0 */
    for (int which = 0; which < 2; which++)
      if (din[which] && !acc_of(ctx, which) && amd_tensor_nbytes(din[which]))
        AMD_CUDA_CHECK(cudaMemsetAsync(din[which]->data, 0, amd_tensor_nbytes(din[which]), amd_cu.stream),
                       st);
    return 0;
  }
  for (int which = 0; which < 2; which++) {
    if (!din[which]) continue;
    int64_t nop = amd_tensor_numel(which ? &bv : in[0]);
    const float *a = F(in[0]), *b = F(&bv), *g = F(dout[0]);
    float *d = F(din[which]);
    const bool acc = acc_of(ctx, which);
    bool same = amd_tensor_numel(in[0]) == total && amd_tensor_numel(&bv) == total;
    if (same && total % 4 == 0 && aligned16(a) && aligned16(b) && aligned16(g) && aligned16(d))
      k_ew_bwd_same<4>
          <<<amd_cu_blocks(total / 4), 256, 0, amd_cu.stream>>>(ew_op(n), which, total, a, b, g, d, acc);
    else if (same)
      k_ew_bwd_same<1>
          <<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(ew_op(n), which, total, a, b, g, d, acc);
    else if (nop == total)
      k_ew_bwd_full<<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(ew_op(n), which, s, total, a, b, g, d,
                                                                     acc);
    else
      k_ew_bwd_reduce<<<amd_cu_blocks(nop, 64), 64, 0, amd_cu.stream>>>(ew_op(n), which, s, nop, a, b, g, d,
                                                                        acc);
    AMD_CUDA_CHECK_LAUNCH("elementwise backward", st);
  }
  return 0;
}

/* ================================================================ Softmax, LogSoftmax */

__global__ void k_sm_fwd(int64_t outer, int64_t len, int64_t inner, int is_log, const float *x, float *y) {
  AMD_CU_LOOP(col, outer * inner) {
    int64_t r = col / inner, j = col % inner;
    const float *xr = x + r * len * inner + j;
    float *yr = y + r * len * inner + j;
    float m = xr[0];
    for (int64_t i = 1; i < len; i++)
      if (xr[i * inner] > m) m = xr[i * inner];
    double s = 0;
    for (int64_t i = 0; i < len; i++) s += expf(xr[i * inner] - m);
    if (is_log) {
      float ls = (float)log(s);
      for (int64_t i = 0; i < len; i++) yr[i * inner] = (xr[i * inner] - m) - ls;
    } else {
      float inv = (float)(1.0 / s);
      for (int64_t i = 0; i < len; i++) yr[i * inner] = expf(xr[i * inner] - m) * inv;
    }
  }
}

__global__ void k_sm_bwd(int64_t outer, int64_t len, int64_t inner, int is_log, const float *y,
                         const float *g, float *dx) {
  AMD_CU_LOOP(col, outer * inner) {
    int64_t r = col / inner, j = col % inner, base = r * len * inner + j;
    double acc = 0;
    for (int64_t i = 0; i < len; i++) {
      int64_t k = base + i * inner;
      acc += is_log ? (double)g[k] : (double)g[k] * y[k];
    }
    for (int64_t i = 0; i < len; i++) {
      int64_t k = base + i * inner;
      dx[k] += is_log ? (float)(g[k] - exp((double)y[k]) * acc) : (float)(y[k] * (g[k] - acc));
    }
  }
}

static int sm_forward(FWD_ARGS) {
  (void)ctx;
  int64_t outer, len, inner;
  if (amd_sm_view(n, in[0], &outer, &len, &inner, st)) return -1;
  if (!amd_tensor_numel(in[0]) || !len) return 0;
  k_sm_fwd<<<amd_cu_blocks(outer * inner, 128), 128, 0, amd_cu.stream>>>(
      outer, len, inner, n->op->idx == AMD_OP_IDX_LogSoftmax, F(in[0]), F(&out[0]));
  AMD_CUDA_CHECK_LAUNCH("k_sm_fwd", st);
  return 0;
}

static int sm_backward(BWD_ARGS) {
  (void)ctx;
  if (!dout[0] || !din[0]) return 0;
  int64_t outer, len, inner;
  if (amd_sm_view(n, in[0], &outer, &len, &inner, st)) return -1;
  if (!amd_tensor_numel(in[0]) || !len) return 0;
  k_sm_bwd<<<amd_cu_blocks(outer * inner, 128), 128, 0, amd_cu.stream>>>(
      outer, len, inner, n->op->idx == AMD_OP_IDX_LogSoftmax, F(&out[0]), F(dout[0]), F(din[0]));
  AMD_CUDA_CHECK_LAUNCH("k_sm_bwd", st);
  return 0;
}

/* ================================================================ copies: Flatten, Reshape, Identity,
 * Squeeze, Unsqueeze */

static int copy_forward(FWD_ARGS) {
  (void)n, (void)ctx;
  size_t bytes = amd_tensor_nbytes(&out[0]);
  if (bytes)
    AMD_CUDA_CHECK(cudaMemcpyAsync(out[0].data, in[0]->data, bytes, cudaMemcpyDeviceToDevice, amd_cu.stream),
                   st);
  return 0;
}

static int copy_backward(BWD_ARGS) {
  (void)n, (void)in, (void)out;
  if (!dout[0] || !din[0]) return 0;
  return add_into(F(din[0]), F(dout[0]), amd_tensor_numel(din[0]), st, acc_of(ctx, 0));
}

/* ================================================================ Concat */

static int64_t prod(const int64_t *d, int from, int to) {
  int64_t p = 1;
  for (int i = from; i < to; i++) p *= d[i];
  return p;
}

static int concat_forward(FWD_ARGS) {
  (void)ctx;
  const amd_axis_attrs *a = (const amd_axis_attrs *)n->attrs;
  int axis = amd_axis(a->axis, out[0].rank, st);
  if (axis < 0) return -1;
  int64_t outer = prod(out[0].dims, 0, axis), inner = prod(out[0].dims, axis + 1, out[0].rank);
  size_t row = (size_t)(out[0].dims[axis] * inner) * 4, off = 0;
  for (int k = 0; k < n->n_in; k++) {
    size_t block = (size_t)(in[k]->dims[axis] * inner) * 4;
    if (block && outer)
      AMD_CUDA_CHECK(cudaMemcpy2DAsync((char *)out[0].data + off, row, in[k]->data, block, block,
                                       (size_t)outer, cudaMemcpyDeviceToDevice, amd_cu.stream),
                     st);
    off += block;
  }
  return 0;
}

__global__ void k_concat_bwd(int64_t outer, int64_t block, int64_t row, int64_t off, const float *g,
                             float *d) {
  AMD_CU_LOOP(i, outer * block) d[i] += g[(i / block) * row + off + i % block];
}

static int concat_backward(BWD_ARGS) {
  (void)ctx;
  if (!dout[0]) return 0;
  const amd_axis_attrs *a = (const amd_axis_attrs *)n->attrs;
  int axis = amd_axis(a->axis, out[0].rank, st);
  if (axis < 0) return -1;
  int64_t outer = prod(out[0].dims, 0, axis), inner = prod(out[0].dims, axis + 1, out[0].rank);
  int64_t row = out[0].dims[axis] * inner, off = 0;
  for (int k = 0; k < n->n_in; k++) {
    int64_t block = in[k]->dims[axis] * inner;
    if (din[k] && block && outer) {
      k_concat_bwd<<<amd_cu_blocks(outer * block), 256, 0, amd_cu.stream>>>(outer, block, row, off,
                                                                            F(dout[0]), F(din[k]));
      AMD_CUDA_CHECK_LAUNCH("k_concat_bwd", st);
    }
    off += block;
  }
  return 0;
}

/* ================================================================ Dropout */

/* splitmix64 is counter based: draw i of a stream at state s0 is mix(s0 + (i + 1) * gamma). */
__device__ __forceinline__ uint64_t splitmix_at(uint64_t s0, int64_t i) {
  uint64_t z = s0 + (uint64_t)(i + 1) * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

__global__ void k_dropout(int64_t cnt, uint64_t s0, double ratio, double scale, const float *x, float *y,
                          int accumulate) {
  AMD_CU_LOOP(i, cnt) {
    double u = (double)(splitmix_at(s0, i) >> 11) * 0x1.0p-53;
    int keep = u >= ratio;
    if (accumulate) {
      if (keep) y[i] += (float)(x[i] * scale);
    } else {
      y[i] = keep ? (float)((double)x[i] * scale) : 0.0f;
    }
  }
}

static int dropout_forward(FWD_ARGS) {
  double ratio;
  int training;
  amd_dropout_mode(n, ctx, in, &ratio, &training);
  int64_t cnt = amd_tensor_numel(in[0]);
  if (!training || ratio == 0) {
    if (cnt)
      AMD_CUDA_CHECK(
          cudaMemcpyAsync(out[0].data, in[0]->data, (size_t)cnt * 4, cudaMemcpyDeviceToDevice, amd_cu.stream),
          st);
    return 0;
  }
  if (!(ratio >= 0 && ratio <= 1)) return amd_fail(st, "ratio %g out of [0, 1]", ratio);
  double scale = ratio < 1 ? 1.0 / (1.0 - ratio) : 0.0;
  if (cnt) {
    k_dropout<<<amd_cu_blocks(cnt), 256, 0, amd_cu.stream>>>(cnt, ctx->rng, ratio, scale, F(in[0]),
                                                             F(&out[0]), 0);
    AMD_CUDA_CHECK_LAUNCH("k_dropout", st);
  }
  ctx->rng += (uint64_t)cnt * 0x9e3779b97f4a7c15ULL; /* as cnt sequential draws */
  return 0;
}

static int dropout_backward(BWD_ARGS) {
  (void)out;
  if (!dout[0] || !din[0]) return 0;
  double ratio;
  int training;
  amd_dropout_mode(n, ctx, in, &ratio, &training);
  int64_t cnt = amd_tensor_numel(in[0]);
  if (!cnt) return 0;
  if (!training || ratio == 0) return add_into(F(din[0]), F(dout[0]), cnt, st);
  if (!(ratio >= 0 && ratio <= 1)) return amd_fail(st, "ratio %g out of [0, 1]", ratio);
  double scale = ratio < 1 ? 1.0 / (1.0 - ratio) : 0.0;
  k_dropout<<<amd_cu_blocks(cnt), 256, 0, amd_cu.stream>>>(cnt, ctx->rng, ratio, scale, F(dout[0]), F(din[0]),
                                                           1);
  AMD_CUDA_CHECK_LAUNCH("k_dropout", st);
  return 0;
}

/* ================================================================ ReduceMean (trailing axes) */

/* The [outer, inner] view when the reduced axes are exactly the trailing
 * ones (dims of size 1 ignored); 0 when not. */
static int mean_view(const amd_node *n, const amd_tensor *const *in, int64_t *outer, int64_t *inner) {
  amd_status st;
  int mask[AMD_MAX_RANK];
  const amd_tensor *x = in[0];
  if (amd_red_mask(n, in, mask, &st) != 0) return 0;
  int k = x->rank;
  while (k > 0 && (mask[k - 1] || x->dims[k - 1] == 1)) k--;
  for (int d = 0; d < k; d++)
    if (mask[d] && x->dims[d] != 1) return 0;
  *outer = prod(x->dims, 0, k);
  *inner = prod(x->dims, k, x->rank);
  return *inner > 0;
}

__global__ void k_mean_fwd(int64_t outer, int64_t inner, const float *x, float *y) {
  AMD_CU_LOOP(o, outer) {
    double acc = 0;
    for (int64_t i = 0; i < inner; i++) acc += x[o * inner + i];
    y[o] = (float)(acc / (double)inner);
  }
}

__global__ void k_mean_bwd(int64_t total, int64_t inner, double scale, const float *g, float *dx) {
  AMD_CU_LOOP(i, total) dx[i] += (float)(g[i / inner] * scale);
}

static int mean_forward(FWD_ARGS) {
  (void)ctx;
  int64_t outer, inner;
  if (!mean_view(n, in, &outer, &inner)) return amd_fail(st, "ReduceMean: not over trailing axes");
  if (!outer) return 0;
  k_mean_fwd<<<amd_cu_blocks(outer, 128), 128, 0, amd_cu.stream>>>(outer, inner, F(in[0]), F(&out[0]));
  AMD_CUDA_CHECK_LAUNCH("k_mean_fwd", st);
  return 0;
}

static int mean_backward(BWD_ARGS) {
  (void)ctx, (void)out;
  if (!dout[0] || !din[0]) return 0;
  int64_t outer, inner;
  if (!mean_view(n, in, &outer, &inner)) return amd_fail(st, "ReduceMean: not over trailing axes");
  int64_t total = outer * inner;
  if (!total) return 0;
  k_mean_bwd<<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(total, inner, (double)outer / (double)total,
                                                              F(dout[0]), F(din[0]));
  AMD_CUDA_CHECK_LAUNCH("k_mean_bwd", st);
  return 0;
}

/* ================================================================ the table */

/* Which nodes of an op the kernels handle, beyond float data inputs (in may be NULL). */
static int conv_supported(const amd_node *n, const amd_tensor *const *in) {
  if (in && in[0] && in[0]->rank != 4) return 0;
  const amd_conv_attrs *a = (const amd_conv_attrs *)n->attrs;
  return !a || a->n_kernel < 0 || a->n_kernel == 2;
}

static int pool_supported(const amd_node *n, const amd_tensor *const *in) {
  (void)in;
  const amd_pool_attrs *a = (const amd_pool_attrs *)n->attrs;
  if (a && a->nk != 2) return 0;
  return !(n->n_out > 1 && n->out[1] >= 0); /* no Indices output */
}

static int bn_supported(const amd_node *n, const amd_tensor *const *in) {
  const amd_bn_attrs *a = (const amd_bn_attrs *)n->attrs;
  if (a && !a->spatial) return 0;
  if (n->n_in < 5) return 0;
  if (in && in[0] && in[0]->rank < 2) return 0;
  return 1;
}

static int dropout_supported(const amd_node *n, const amd_tensor *const *in) {
  (void)in;
  return !(n->n_out > 1 && n->out[1] >= 0); /* no mask output */
}

static int mean_supported(const amd_node *n, const amd_tensor *const *in) {
  int64_t o, i;
  return !in || (in[0] && mean_view(n, in, &o, &i));
}

/* The native ops by op index (amd_op_idx); an entry without forward is a
 * host fallback. Fields: forward, backward, host_inputs, bwd_overwrite (the
 * inputs whose gradient the backward can write over, see acc_of), supports. */
struct cu_op_table {
  amd_cu_op at[AMD_OP_COUNT];
};

static constexpr cu_op_table cu_op_table_make() {
  cu_op_table t{};
  t.at[AMD_OP_IDX_Conv] = {conv_forward, conv_backward, 0, 0x1u, conv_supported};
  t.at[AMD_OP_IDX_Gemm] = {gemm_forward, gemm_backward, 0, 0, NULL};
  t.at[AMD_OP_IDX_MatMul] = {matmul_forward, matmul_backward, 0, 0, NULL};
  t.at[AMD_OP_IDX_BatchNormalization] = {bn_forward, bn_backward, 0, 0x1u, bn_supported};
  t.at[AMD_OP_IDX_Relu] = {act_forward, act_backward, 0, 0x1u, NULL};
  t.at[AMD_OP_IDX_LeakyRelu] = {act_forward, act_backward, 0, 0x1u, NULL};
  t.at[AMD_OP_IDX_Sigmoid] = {act_forward, act_backward, 0, 0x1u, NULL};
  t.at[AMD_OP_IDX_Tanh] = {act_forward, act_backward, 0, 0x1u, NULL};
  t.at[AMD_OP_IDX_Clip] = {act_forward, act_backward, 0x6u, 0x1u, NULL};
  t.at[AMD_OP_IDX_MaxPool] = {pool_forward, pool_backward, 0, 0, pool_supported};
  t.at[AMD_OP_IDX_AveragePool] = {pool_forward, pool_backward, 0, 0, pool_supported};
  t.at[AMD_OP_IDX_GlobalAveragePool] = {global_forward, global_backward, 0, 0, NULL};
  t.at[AMD_OP_IDX_GlobalMaxPool] = {global_forward, global_backward, 0, 0, NULL};
  t.at[AMD_OP_IDX_Add] = {ew_forward, ew_backward, 0, 0x3u, NULL};
  t.at[AMD_OP_IDX_Sub] = {ew_forward, ew_backward, 0, 0x3u, NULL};
  t.at[AMD_OP_IDX_Mul] = {ew_forward, ew_backward, 0, 0x3u, NULL};
  t.at[AMD_OP_IDX_Div] = {ew_forward, ew_backward, 0, 0x3u, NULL};
  t.at[AMD_OP_IDX_Flatten] = {copy_forward, copy_backward, 0, 0x1u, NULL};
  t.at[AMD_OP_IDX_Reshape] = {copy_forward, copy_backward, 0x2u, 0x1u, NULL};
  t.at[AMD_OP_IDX_Identity] = {copy_forward, copy_backward, 0, 0x1u, NULL};
  t.at[AMD_OP_IDX_Squeeze] = {copy_forward, copy_backward, 0x2u, 0x1u, NULL};
  t.at[AMD_OP_IDX_Unsqueeze] = {copy_forward, copy_backward, 0x2u, 0x1u, NULL};
  t.at[AMD_OP_IDX_Concat] = {concat_forward, concat_backward, 0, 0, NULL};
  t.at[AMD_OP_IDX_Softmax] = {sm_forward, sm_backward, 0, 0, NULL};
  t.at[AMD_OP_IDX_LogSoftmax] = {sm_forward, sm_backward, 0, 0, NULL};
  t.at[AMD_OP_IDX_Dropout] = {dropout_forward, dropout_backward, 0x6u, 0, dropout_supported};
  t.at[AMD_OP_IDX_ReduceMean] = {mean_forward, mean_backward, 0x2u, 0, mean_supported};
  return t;
}

static constexpr cu_op_table cu_ops = cu_op_table_make();

const amd_cu_op *amd_cu_find_op(const amd_node *n) {
  const int i = n->op->idx;
  if (i < 0 || i >= AMD_OP_COUNT || !cu_ops.at[i].forward) return NULL;
  return &cu_ops.at[i];
}

static int is_f32(const amd_tensor *t) { return !t || t->dtype == AMD_FLOAT; }

int amd_cu_node_ok(const amd_node *n, const amd_tensor *const *in) {
  const amd_cu_op *e = amd_cu_find_op(n);
  if (!e) return 0;
  /* every data input float (the host-staged ones are read on the host) */
  if (in)
    for (int k = 0; k < n->n_in; k++)
      if (!((e->host_inputs >> k) & 1) && !is_f32(in[k])) return 0;
  return !e->supports || e->supports(n, in);
}

/* CUDA kernels of Conv (src/ops/conv.c).
 *
 * Conv (2-D, any group / stride / pad / dilation): for a chunk of nb images,
 * im2col writes col[g][c*kh*kw][nb*OH*OW] (one row per channel and kernel
 * tap, one column per output position of every image), then per group
 *   forward  Yt_g[mg, L] = W_g[mg, kdim] col_g[kdim, L]           (node->mult)
 *   backward dW_g += dYt_g col_g^T,  dcol_g = W_g^T dYt_g          (node->bwd_mult)
 * all through amd_cuda_gemm; Yt / dYt are [M][L] transposes of Y / dY, and
 * col2im gathers dcol back onto each input element (deterministic: no
 * atomics). Pointwise convolutions of large images skip im2col and col2im
 * (conv_pointwise). In acc32, a forward whose bias and fused Relu are all it
 * adds writes y from its GEMMs directly (conv_direct). */
#include "../conv2d.h"
#include "ops_internal.h"

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

/* The same for small images: a block copies one channel's planes of ni
 * images into shared memory (x read once, where the row kernels read each
 * element kh*kw times through L2), then writes that channel's kh*kw rows
 * over those images' columns. A thread takes output positions (image, oy,
 * ox), works out their coordinates once, and writes them for every tap; a
 * warp's stores are consecutive columns of one row. */
enum { IM2COL_PLANE_FLOATS = 4096, IM2COL_PLANE_MAX = 8192 };
template <bool V4>
__global__ void __launch_bounds__(IM2COL_THREADS) k_im2col_planes(conv2d p, int ni, const float *x, float *col) {
  extern __shared__ float planes[]; /* [ni][h*w] */
  const int hw = (int)(p.h * p.w), h = (int)p.h, w = (int)p.w, osz = (int)p.osz, ow = (int)p.ow;
  const int64_t chan = blockIdx.y, gi = chan / p.cg, ch = chan % p.cg, img0 = (int64_t)blockIdx.x * ni;
  const int nimg = (int)(p.nb - img0 < ni ? p.nb - img0 : ni);
  const float *xc = x + (img0 * p.c + chan) * hw;
  if (V4) { /* hw % 4 == 0 and x 16-byte aligned: every plane starts aligned */
    const int hw4 = hw / 4;
    for (int i = threadIdx.x; i < nimg * hw4; i += blockDim.x) {
      const int il = i / hw4, e = i - il * hw4;
      reinterpret_cast<float4 *>(planes)[i] = __ldg(reinterpret_cast<const float4 *>(xc + il * p.c * hw) + e);
    }
  } else {
    for (int i = threadIdx.x; i < nimg * hw; i += blockDim.x) {
      const int il = i / hw, e = i - il * hw;
      planes[i] = __ldg(xc + il * p.c * hw + e);
    }
  }
  __syncthreads();
  const int taps = (int)(p.kh * p.kw), kw = (int)p.kw, sh = (int)p.sh, sw = (int)p.sw, dh = (int)p.dh,
            dw = (int)p.dw;
  float *rows = col + (gi * p.kdim + ch * taps) * p.L + img0 * osz; /* tap 0's row, this block's columns */
  for (int t = threadIdx.x; t < nimg * osz; t += blockDim.x) {
    const int il = t / osz, pos = t - il * osz, oy = pos / ow, ox = pos - oy * ow;
    const int y0 = oy * sh - (int)p.ph, x0 = ox * sw - (int)p.pw;
    const float *src = planes + il * hw;
    float *dst = rows + t;
    for (int ki = 0, iy = y0; ki < (int)p.kh; ki++, iy += dh)
      for (int kj = 0, ix = x0; kj < kw; kj++, ix += dw, dst += p.L)
        *dst = (unsigned)iy < (unsigned)h && (unsigned)ix < (unsigned)w ? src[iy * w + ix] : 0.0f;
  }
}

/* The same for a 1x1 kernel at stride 1 without padding (the pointwise
 * convolutions of small images, conv_pointwise): a row of col is its
 * channel's planes of the nb images one after another, so a warp copies a
 * plane at a time (16 bytes a lane where the planes allow) and nothing is
 * divided; the row kernels worked out each element's image and position. */
template <bool V4>
__global__ void __launch_bounds__(IM2COL_THREADS) k_im2col_1x1(conv2d p, const float *x, float *col) {
  const int64_t chan = blockIdx.y, hw = p.osz, warps = blockDim.x / 32;
  const int lane = threadIdx.x & 31;
  float *row = col + chan * p.L;
  for (int64_t img = (int64_t)blockIdx.x * warps + threadIdx.x / 32; img < p.nb; img += (int64_t)gridDim.x * warps) {
    const float *src = x + (img * p.c + chan) * hw;
    float *dst = row + img * hw;
    if (V4) {
      for (int64_t e = lane; e < hw / 4; e += 32)
        reinterpret_cast<float4 *>(dst)[e] = __ldg(reinterpret_cast<const float4 *>(src) + e);
    } else {
      for (int64_t e = lane; e < hw; e += 32) dst[e] = __ldg(src + e);
    }
  }
}

static bool im2col_is_copy(const conv2d &p) {
  return p.kh == 1 && p.kw == 1 && p.sh == 1 && p.sw == 1 && p.ph == 0 && p.pw == 0 && p.oh == p.h &&
         p.ow == p.w && p.c <= 65535 && p.nb > 0;
}

/* Images a block of k_im2col_planes takes: enough for a column a thread
 * (256 output positions), more where the grid would still hold about 8
 * blocks on each of 132 SMs, at most as many planes as fit in
 * IM2COL_PLANE_FLOATS (one when a plane is larger, up to IM2COL_PLANE_MAX). */
static int64_t im2col_plane_images(const conv2d &p) {
  const int64_t hw = p.h * p.w, fit = hw >= IM2COL_PLANE_FLOATS ? 1 : IM2COL_PLANE_FLOATS / hw;
  int64_t ni = (IM2COL_THREADS + p.osz - 1) / p.osz, spread = p.nb * p.c / 1056;
  if (ni < spread) ni = spread;
  if (ni > fit) ni = fit;
  return ni < p.nb ? ni : p.nb;
}

/* Whether k_im2col_planes takes x: small images, kernels of 4 taps or more
 * (a 1x1 kernel reads each element once anyway), and a grid of at least 4
 * blocks an SM whose threads all have a position (LeNet-5's few channels
 * stay on the row kernels). */
static bool im2col_by_planes(const conv2d &p) {
  if (p.kh * p.kw < 4 || p.h * p.w > IM2COL_PLANE_MAX || p.c > 65535 || p.nb <= 0 || p.osz <= 0) return false;
  const int64_t ni = im2col_plane_images(p);
  return (p.nb + ni - 1) / ni * p.c >= 528 && ni * p.osz >= IM2COL_THREADS;
}

/* Unfolds x (nb images) into col: plane by plane for a 1x1 kernel at
 * stride 1 without padding, from planes in shared memory where
 * im2col_by_planes says, else by rows when there are few enough for the
 * grid's y dimension. */
static int launch_im2col(const conv2d &p, int64_t n_total, const float *x, float *col, cudaStream_t s,
                         amd_status *st) {
  int64_t rows = p.g * p.kdim, tot = rows * p.L;
  bool small = fits32(tot) && fits32(n_total * p.c * p.h * p.w);
  if (im2col_is_copy(p)) {
    const int64_t warps = IM2COL_THREADS / 32, bx = (p.nb + warps - 1) / warps;
    dim3 grid((unsigned)(bx > 65535 ? 65535 : bx), (unsigned)p.c);
    if (p.osz % 4 == 0 && aligned16(x) && aligned16(col))
      k_im2col_1x1<true><<<grid, IM2COL_THREADS, 0, s>>>(p, x, col);
    else
      k_im2col_1x1<false><<<grid, IM2COL_THREADS, 0, s>>>(p, x, col);
  } else if (im2col_by_planes(p)) {
    const int ni = (int)im2col_plane_images(p);
    const size_t smem = (size_t)ni * (size_t)(p.h * p.w) * sizeof(float);
    dim3 grid((unsigned)((p.nb + ni - 1) / ni), (unsigned)p.c);
    if ((p.h * p.w) % 4 == 0 && aligned16(x))
      k_im2col_planes<true><<<grid, IM2COL_THREADS, smem, s>>>(p, ni, x, col);
    else
      k_im2col_planes<false><<<grid, IM2COL_THREADS, smem, s>>>(p, ni, x, col);
  } else if (rows <= 65535 && p.ow % 4 == 0 && aligned16(col)) {
    int64_t bx = (p.L / 4 + IM2COL_PER * IM2COL_THREADS - 1) / (IM2COL_PER * IM2COL_THREADS);
    dim3 grid((unsigned)(bx > 1024 ? 1024 : bx), (unsigned)rows);
    if (small)
      k_im2col_rows4<int><<<grid, IM2COL_THREADS, 0, s>>>(p, x, col);
    else
      k_im2col_rows4<int64_t><<<grid, IM2COL_THREADS, 0, s>>>(p, x, col);
  } else if (rows <= 65535) {
    int64_t bx = (p.L + IM2COL_PER * IM2COL_THREADS - 1) / (IM2COL_PER * IM2COL_THREADS);
    if (bx > 1024) bx = 1024;
    dim3 grid((unsigned)bx, (unsigned)rows);
    if (small)
      k_im2col_rows<int><<<grid, IM2COL_THREADS, 0, s>>>(p, x, col);
    else
      k_im2col_rows<int64_t><<<grid, IM2COL_THREADS, 0, s>>>(p, x, col);
  } else if (small) {
    k_im2col<int><<<amd_cu_blocks(tot), 256, 0, s>>>(p, x, col);
  } else {
    k_im2col<int64_t><<<amd_cu_blocks(tot), 256, 0, s>>>(p, x, col);
  }
  AMD_CUDA_CHECK_LAUNCH("k_im2col", st);
  return 0;
}

/* dx[img][c][iy][ix] += sum of dcol over the (tap, output) pairs that read it.
 * KH, KW > 0 and S > 0 (both strides S) are compile-time shapes: the common
 * 3x3, 5x5 and 1x1 convolutions at stride 1, and 3x3 and 1x1 at stride 2
 * (ResNet's downsampling), get unrolled taps and no division by a stride
 * (a mask and a shift at stride 2), so all their loads are in flight at once;
 * KH = KW = 0 is the general form, whose taps are a loop with a division
 * each, and S = 0 takes the strides from p. The taps are added in the same
 * order in every form. */
template <typename I, int KH, int KW, int S>
__global__ void k_col2im(conv2d p, const float *dcol, float *dx, bool acc_dx) {
  typedef typename std::make_unsigned<I>::type U; /* a tap's offset is checked >= 0 before it is divided */
  const I total = (I)(p.nb * p.c * p.h * p.w), w = (I)p.w, h = (I)p.h, c = (I)p.c, cg = (I)p.cg;
  const I kh = KH ? (I)KH : (I)p.kh, kw = KW ? (I)KW : (I)p.kw;
  const U sh = S ? (U)S : (U)p.sh, sw = S ? (U)S : (U)p.sw;
  const I oh = (I)p.oh, ow = (I)p.ow;
  AMD_CU_LOOP_I(I, i, total) {
    I ix = i % w, iy = (i / w) % h, cc = (i / (w * h)) % c, img = i / (w * h * c);
    I gi = cc / cg, ch = cc % cg;
    const float *base = dcol + (gi * p.kdim + (int64_t)ch * kh * kw) * p.L + (int64_t)img * p.osz;
    float acc = 0.0f;
#pragma unroll
    for (I ki = 0; ki < kh; ki++) {
      I ty = iy + (I)p.ph - ki * (I)p.dh;
      if (ty < 0 || (S != 1 && (U)ty % sh)) continue;
      I oy = S == 1 ? ty : (I)((U)ty / sh);
      if (oy >= oh) continue;
#pragma unroll
      for (I kj = 0; kj < kw; kj++) {
        I tx = ix + (I)p.pw - kj * (I)p.dw;
        if (tx < 0 || (S != 1 && (U)tx % sw)) continue;
        I ox = S == 1 ? tx : (I)((U)tx / sw);
        if (ox >= ow) continue;
        acc += __ldg(base + (int64_t)(ki * kw + kj) * p.L + oy * ow + ox);
      }
    }
    dx[i] = (acc_dx ? dx[i] : 0.0f) + acc;
  }
}

template <typename I>
static void launch_col2im_i(const conv2d &p, const float *dcol, float *dx, int64_t nx, bool acc, cudaStream_t s) {
  /* unrolled taps: about four elements a thread (fewer block launches, and
   * each has its taps in flight); the general form's taps load one after
   * another, so it takes one element a thread to have more loads in flight.
   * (LeNet-5's 5x5 data gradient: 62 us in the general form at four a thread,
   * 16 us unrolled; ResNet-18's stride-2 3x3 and 1x1 data gradients at batch
   * 128 took 79-188 and 31-100 us with the strides divided at run time, at
   * 0.07-0.7 TB/s. Nsight Compute on an H200) */
  const unsigned blocks = amd_cu_blocks((nx + 3) / 4);
  const int stride = p.sh == p.sw && (p.sh == 1 || p.sh == 2) ? (int)p.sh : 0;
  if (p.kh == 3 && p.kw == 3 && stride == 1)
    k_col2im<I, 3, 3, 1><<<blocks, 256, 0, s>>>(p, dcol, dx, acc);
  else if (p.kh == 1 && p.kw == 1 && stride == 1)
    k_col2im<I, 1, 1, 1><<<blocks, 256, 0, s>>>(p, dcol, dx, acc);
  else if (p.kh == 5 && p.kw == 5 && stride == 1)
    k_col2im<I, 5, 5, 1><<<blocks, 256, 0, s>>>(p, dcol, dx, acc);
  else if (p.kh == 3 && p.kw == 3 && stride == 2)
    k_col2im<I, 3, 3, 2><<<blocks, 256, 0, s>>>(p, dcol, dx, acc);
  else if (p.kh == 1 && p.kw == 1 && stride == 2)
    k_col2im<I, 1, 1, 2><<<blocks, 256, 0, s>>>(p, dcol, dx, acc);
  else if (p.kh == 3 && p.kw == 3)
    k_col2im<I, 3, 3, 0><<<blocks, 256, 0, s>>>(p, dcol, dx, acc);
  else
    k_col2im<I, 0, 0, 0><<<amd_cu_blocks(nx), 256, 0, s>>>(p, dcol, dx, acc);
}

/* dx (nb images) += col2im(dcol), or (!acc) = */
static int launch_col2im(const conv2d &p, const float *dcol, float *dx, bool acc, cudaStream_t s, amd_status *st) {
  int64_t nx = p.nb * p.c * p.h * p.w;
  if (fits32(nx) && fits32(p.g * p.kdim * p.L))
    launch_col2im_i<int>(p, dcol, dx, nx, acc, s);
  else
    launch_col2im_i<int64_t>(p, dcol, dx, nx, acc, s);
  AMD_CUDA_CHECK_LAUNCH("k_col2im", st);
  return 0;
}

/* What a Conv adds to its GEMM's result as it writes its output: the bias,
 * then the Add and the Relu fused into it (ctx->add_in, ctx->relu_out;
 * src/exec/exec.c): v = ((gemm + bias[m]) + resid) then v < 0 ? 0 : v. The
 * Add's operand order does not matter here: the GPU's sums are commutative
 * bit for bit (its NaNs are all the one canonical NaN). */
struct conv_epilogue {
  const float *bias;  /* [m] or NULL */
  const float *resid; /* y's layout, or NULL */
  bool relu;
};

template <int V>
__device__ __forceinline__ vecf<V> epilogue_apply(const conv_epilogue &e, vecf<V> v, int64_t m, int64_t i) {
  if (e.bias) v = vec_add(v, e.bias[m]);
  if (e.resid) v = vec_add(v, ((const vecf<V> *)e.resid)[i]);
  if (e.relu) v = vec_relu(v);
  return v;
}

/* y[img][m][pos] = epilogue(yt[m][img*osz + pos]); V floats at a time (V = 4:
 * 16-byte loads and stores, when osz and the pointers allow) */
template <typename I, int V>
__global__ void k_conv_out(int64_t nb, int64_t m_, int64_t osz_, const float *yt, conv_epilogue e, float *y) {
  const I total = (I)(nb * m_ * osz_ / V), m = (I)m_, osz = (I)(osz_ / V), nbo = (I)nb * osz;
  AMD_CU_LOOP_I(I, i, total) {
    I pos = i % osz, mm = (i / osz) % m, img = i / (osz * m);
    ((vecf<V> *)y)[i] = epilogue_apply<V>(e, ((const vecf<V> *)yt)[mm * nbo + img * osz + pos], mm, i);
  }
}

/* The same one float at a time (osz not a multiple of 4: ResNet-50's 7 x 7
 * images), an image per blockIdx.y: a thread takes CONV_OUT_PER elements of
 * the image, blockDim apart, loads them all before it stores them, and
 * divides once per element where k_conv_out<I, 1> divided three times and
 * had one load in flight (the 2048 channels of ResNet-50's last layer at
 * batch 256: 130 us, 2.2 TB/s; its 512 channels 39 us, 0.7 TB/s; Nsight
 * Compute on an H200). Needs nb <= 65535 and m * osz < 2^31. */
enum { CONV_OUT_PER = 4 };
__global__ void k_conv_out_img(int64_t nb, int m, int osz, const float *yt, conv_epilogue e, float *y) {
  const int64_t img = blockIdx.y, per_img = (int64_t)m * osz, nbo = nb * osz;
  const int span = CONV_OUT_PER * (int)blockDim.x, n = m * osz;
  const float *src = yt + img * osz;
  float *dst = y + img * per_img;
  for (int j0 = (int)blockIdx.x * span + (int)threadIdx.x; j0 < n; j0 += (int)gridDim.x * span) {
    float v[CONV_OUT_PER];
    int mm[CONV_OUT_PER];
#pragma unroll
    for (int k = 0; k < CONV_OUT_PER; k++) {
      const int j = j0 + k * (int)blockDim.x;
      mm[k] = j / osz;
      if (j < n) v[k] = __ldg(src + mm[k] * nbo + (j - mm[k] * osz));
    }
#pragma unroll
    for (int k = 0; k < CONV_OUT_PER; k++) {
      const int j = j0 + k * (int)blockDim.x;
      if (j < n) dst[j] = epilogue_apply<1>(e, v[k], mm[k], img * per_img + j);
    }
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
static int conv_out(int64_t nb, int64_t m, int64_t osz, const float *yt, const conv_epilogue &e, float *y,
                    cudaStream_t s, amd_status *st) {
  int64_t n = nb * m * osz;
  bool v4 = osz % 4 == 0 && aligned16(yt) && aligned16(y) && (!e.resid || aligned16(e.resid));
  unsigned blocks = amd_cu_blocks(v4 ? n / 4 : n);
  if (v4 && fits32(n)) {
    k_conv_out<int, 4><<<blocks, 256, 0, s>>>(nb, m, osz, yt, e, y);
  } else if (nb <= 65535 && fits32(m * osz + 256 * CONV_OUT_PER)) {
    const int64_t bx = (m * osz + 256 * CONV_OUT_PER - 1) / (256 * CONV_OUT_PER);
    k_conv_out_img<<<dim3((unsigned)(bx > 1024 ? 1024 : bx), (unsigned)nb), 256, 0, s>>>(nb, (int)m, (int)osz, yt, e,
                                                                                         y);
  } else if (fits32(n)) {
    k_conv_out<int, 1><<<blocks, 256, 0, s>>>(nb, m, osz, yt, e, y);
  } else {
    k_conv_out<int64_t, 1><<<blocks, 256, 0, s>>>(nb, m, osz, yt, e, y);
  }
  AMD_CUDA_CHECK_LAUNCH("k_conv_out", st);
  return 0;
}

static int conv_dyt(int64_t nb, int64_t m, int64_t osz, const float *dy, float *dyt, cudaStream_t s,
                    amd_status *st) {
  int64_t n = nb * m * osz;
  bool v4 = osz % 4 == 0 && aligned16(dy) && aligned16(dyt);
  unsigned blocks = amd_cu_blocks(v4 ? n / 4 : n);
  if (v4 && fits32(n))
    k_conv_dyt<int, 4><<<blocks, 256, 0, s>>>(nb, m, osz, dy, dyt);
  else if (fits32(n))
    k_conv_dyt<int, 1><<<blocks, 256, 0, s>>>(nb, m, osz, dy, dyt);
  else
    k_conv_dyt<int64_t, 1><<<blocks, 256, 0, s>>>(nb, m, osz, dy, dyt);
  AMD_CUDA_CHECK_LAUNCH("k_conv_dyt", st);
  return 0;
}

/* y[img][m][pos] = epilogue(y[img][m][pos]), in place; V floats at a time */
template <typename I, int V>
__global__ void k_conv_epilogue(int64_t nb, int64_t m_, int64_t osz_, conv_epilogue e, float *y) {
  const I total = (I)(nb * m_ * osz_ / V), m = (I)m_, osz = (I)(osz_ / V);
  AMD_CU_LOOP_I(I, i, total) {
    vecf<V> *p = (vecf<V> *)y + i;
    *p = epilogue_apply<V>(e, *p, (i / osz) % m, i);
  }
}

/* The pointwise path's pass over its output (none when the epilogue is empty). */
static int conv_epilogue_pass(int64_t nb, int64_t m, int64_t osz, const conv_epilogue &e, float *y,
                              cudaStream_t s, amd_status *st) {
  const int64_t n = nb * m * osz;
  if (!e.bias && !e.resid && !e.relu) return 0;
  const bool v4 = osz % 4 == 0 && aligned16(y) && (!e.resid || aligned16(e.resid));
  const unsigned blocks = amd_cu_blocks(v4 ? n / 4 : n);
  if (v4 && fits32(n))
    k_conv_epilogue<int, 4><<<blocks, 256, 0, s>>>(nb, m, osz, e, y);
  else if (fits32(n))
    k_conv_epilogue<int, 1><<<blocks, 256, 0, s>>>(nb, m, osz, e, y);
  else
    k_conv_epilogue<int64_t, 1><<<blocks, 256, 0, s>>>(nb, m, osz, e, y);
  AMD_CUDA_CHECK_LAUNCH("k_conv_epilogue", st);
  return 0;
}

/* A pointwise convolution (1 x 1 kernel, unit strides, no padding, one
 * group) with large images is, per image, the GEMM Y_img[M, osz] = W[M, C]
 * X_img[C, osz] on X's and Y's own layouts: one GEMM batched over the images
 * (the weight broadcast), no im2col of the input, no reordering of the output,
 * and dX_img = W^T dY_img likewise without col2im. Small images (fewer than
 * 512 positions) keep the one GEMM over all images' positions, whose long N
 * suits the GEMM kernels better than many short ones. */
static bool conv_pointwise(const amd_conv_geom &g) {
  if (g.kvol != 1 || g.group != 1 || g.osize != g.isize || g.osize < 512) return false;
  for (int d = 0; d < g.nsp; d++)
    if (g.stride[d] != 1 || g.pad0[d] != 0) return false;
  return true;
}

/* Whether the forward's GEMMs write y themselves, one per image, adding the
 * bias and applying the fused Relu as they write (amd_cuda_gemm_add_relu,
 * acc32 only): the pointwise path's pass over y and the im2col path's
 * reordering of its output go away. Not with a residual (its GEMM would
 * need the bias and the residual as two addends), nor where nothing is added
 * (no pass to save); the im2col path only for one group, images of 512
 * positions or more (as conv_pointwise), 64 output channels or more (a
 * GEMM tile's rows: LeNet-5's 6 stay on one GEMM over all images) and
 * kernels of at most 256 rows: larger ones spend so long in their GEMM that
 * the reordering is a small part, and per-image GEMMs of ResNet-50's 3x3
 * convolutions at 28 x 28 were slower than one GEMM and the reordering (an
 * H200, 2026-11-30). Where cuBLASLt has no algorithm for a shape, the usual
 * path runs. */
static bool conv_direct(const amd_mult *mult, const amd_conv_geom &g, const conv_epilogue &e) {
  if ((mult && mult->mode != AMD_MODE_ACC32) || e.resid || (!e.bias && !e.relu)) return false;
  return conv_pointwise(g) || (g.group == 1 && g.osize >= 512 && g.m >= 64 && g.cg * g.kvol <= 256);
}

/* bm[m][pos] = bias[m]: the bias spread over an image's positions, the
 * matrix that conv_direct's GEMMs add to every image. */
__global__ void k_bias_plane(int64_t m, int64_t osz, const float *bias, float *bm) {
  AMD_CU_LOOP(i, m * osz) bm[i] = bias[i / osz];
}

/* The bytes of a chunk's two scratch buffers (amd_cuda_conv_workspace). */
static size_t conv_workspace_cap = AMD_CONV_WORKSPACE_DEFAULT;
extern "C" void amd_cuda_conv_workspace(size_t bytes) { conv_workspace_cap = bytes ? bytes : 1; }

/* Images per chunk: as many as keep the chunk's im2col matrix and its [M][L]
 * output (or output gradient) together within conv_workspace_cap, at least
 * one, and then spread evenly over the chunks that takes (ResNet-50's layer1
 * at batch 128 and 128 MiB: 3 chunks of 43 images, not 51 + 51 + 26), so the
 * last GEMM is not a short one. */
static int64_t conv_chunk(const amd_conv_geom *g) {
  const double per = ((double)g->group * (double)g->cg * (double)g->kvol + (double)g->m) * (double)g->osize * 4.0;
  int64_t most = per > 0 ? (int64_t)((double)conv_workspace_cap / per) : g->n;
  if (most < 1) most = 1;
  if (most >= g->n) return g->n > 0 ? g->n : 1;
  const int64_t chunks = (g->n + most - 1) / most;
  return (g->n + chunks - 1) / chunks;
}

/* The floats of a chunk's im2col matrix and of its [M][L] output (or output gradient). */
static size_t conv_col_floats(const amd_conv_geom *g, int64_t chunk) {
  size_t n = (size_t)(g->group * g->cg * g->kvol * chunk * g->osize);
  return n ? n : 1;
}
static size_t conv_out_floats(const amd_conv_geom *g, int64_t chunk) {
  size_t n = (size_t)(g->m * chunk * g->osize);
  return n ? n : 1;
}

/* Where one convolution runs: its GEMM context, the stream of that context
 * and of every kernel here, and the chunk's two workspaces (col, out). */
struct conv_run {
  amd_cuda_gemm_ctx *gemm;
  cudaStream_t s;
  float *col, *out;
  float *bm; /* conv_direct's bias plane [M][osz] (NULL: none: a direct forward then has no bias) */
};

/* Y = epilogue(conv(X, W)) through mult: the pointwise path (no workspace),
 * or im2col, the GEMM per group and the reordering, chunk by chunk. */
static int conv_fwd(const conv_run &r, const amd_mult *mult, const amd_conv_geom &g, const float *x, const float *w,
                    const conv_epilogue &e, float *y, amd_status *st) {
  if (g.n == 0 || g.m == 0 || g.osize == 0) return 0;
  const int64_t kdim = g.cg * g.kvol;
  /* conv_direct: rc 1 where cuBLASLt has no algorithm for a shape (that GEMM then takes the usual path) */
  const bool direct = conv_direct(mult, g, e) && (r.bm || !e.bias);
  if (direct && e.bias) {
    k_bias_plane<<<amd_cu_blocks(g.m * g.osize), 256, 0, r.s>>>(g.m, g.osize, e.bias, r.bm);
    AMD_CUDA_CHECK_LAUNCH("k_bias_plane", st);
  }
  const float *bm = e.bias ? r.bm : NULL;
  if (conv_pointwise(g)) {
    double t0 = amd_cu_prof_t0();
    const int rc = direct ? amd_cuda_gemm_add_relu(r.gemm, mult, 0, 0, g.m, g.osize, g.c, 1.0f, w, g.c, 0, x,
                                                   g.osize, g.c * g.osize, bm, g.osize, 0, e.relu, y, g.osize,
                                                   g.m * g.osize, g.n, st)
                          : 1;
    if (rc < 0 || (rc == 1 && amd_cuda_gemm(r.gemm, mult, 0, 0, g.m, g.osize, g.c, 1.0f, w, g.c, 0, x, g.osize,
                                            g.c * g.osize, 0.0f, y, g.osize, g.m * g.osize, g.n, st)))
      return -1;
    amd_cu_prof_stage(t0, AMD_PROF_FWD_GEMM, (double)g.m * (double)(g.n * g.osize) * (double)g.c);
    return rc == 1 ? conv_epilogue_pass(g.n, g.m, g.osize, e, y, r.s, st) : 0;
  }
  const int64_t chunk = conv_chunk(&g);
  for (int64_t n0 = 0; n0 < g.n; n0 += chunk) {
    int64_t nb = g.n - n0 < chunk ? g.n - n0 : chunk;
    conv2d p = make_conv2d(&g, nb);
    double t0 = amd_cu_prof_t0();
    if (launch_im2col(p, g.n, x + n0 * g.c * g.isize, r.col, r.s, st)) return -1;
    amd_cu_prof_stage(t0, AMD_PROF_FWD_IM2COL, 0);
    t0 = amd_cu_prof_t0();
    if (direct) { /* Y_img [M, osz] = W col_img, col_img the image's osz columns of col */
      const int rc = amd_cuda_gemm_add_relu(r.gemm, mult, 0, 0, g.m, g.osize, kdim, 1.0f, w, kdim, 0, r.col, p.L,
                                            g.osize, bm, g.osize, 0, e.relu, y + n0 * g.m * g.osize, g.osize,
                                            g.m * g.osize, nb, st);
      if (rc < 0) return -1;
      if (rc == 0) {
        amd_cu_prof_stage(t0, AMD_PROF_FWD_GEMM, (double)g.m * (double)p.L * (double)kdim);
        continue;
      }
    }
    for (int64_t gi = 0; gi < g.group; gi++)
      if (amd_cuda_gemm(r.gemm, mult, 0, 0, g.mg, p.L, kdim, 1.0f, w + gi * g.mg * kdim, kdim, 0,
                        r.col + gi * kdim * p.L, p.L, 0, 0.0f, r.out + gi * g.mg * p.L, p.L, 0, 1, st))
        return -1;
    amd_cu_prof_stage(t0, AMD_PROF_FWD_GEMM, (double)g.m * (double)p.L * (double)kdim);
    conv_epilogue ec = e; /* this chunk's images */
    if (ec.resid) ec.resid += n0 * g.m * g.osize;
    if (conv_out(nb, g.m, g.osize, r.out, ec, y + n0 * g.m * g.osize, r.s, st)) return -1;
  }
  return 0;
}

/* dW += dY col^T and dX (acc_dx ? += : =) col2im(W^T dY) through mult, chunk
 * by chunk (dx or dw NULL: not wanted). Needs g.n, g.osize, g.mg and the
 * kernel's volume all non-zero. */
static int conv_bwd(const conv_run &r, const amd_mult *mult, const amd_conv_geom &g, const float *x, const float *w,
                    const float *dy, float *dx, bool acc_dx, float *dw, amd_status *st) {
  if (dx && conv_pointwise(g)) { /* dX_img [C, osz] (+)= W^T [C, M] dY_img [M, osz], every image at once */
    double t0 = amd_cu_prof_t0();
    if (amd_cuda_gemm(r.gemm, mult, 1, 0, g.c, g.osize, g.m, 1.0f, w, g.c, 0, dy, g.osize, g.m * g.osize,
                      acc_dx ? 1.0f : 0.0f, dx, g.osize, g.c * g.osize, g.n, st))
      return -1;
    amd_cu_prof_stage(t0, AMD_PROF_BWD_DATA_GEMM, (double)g.m * (double)g.c * (double)(g.n * g.osize));
    dx = NULL;
  }
  if (!dx && !dw) return 0;
  const int64_t chunk = conv_chunk(&g), kdim = g.cg * g.kvol;
  for (int64_t n0 = 0; n0 < g.n; n0 += chunk) {
    int64_t nb = g.n - n0 < chunk ? g.n - n0 : chunk;
    conv2d p = make_conv2d(&g, nb);
    if (conv_dyt(nb, g.m, g.osize, dy + n0 * g.m * g.osize, r.out, r.s, st)) return -1;
    if (dw) {
      double t0 = amd_cu_prof_t0();
      if (launch_im2col(p, g.n, x + n0 * g.c * g.isize, r.col, r.s, st)) return -1;
      amd_cu_prof_stage(t0, AMD_PROF_BWD_WEIGHT_IM2COL, 0);
      t0 = amd_cu_prof_t0();
      for (int64_t gi = 0; gi < g.group; gi++) /* dW_g [mg, kdim] += dYt_g [mg, L] col_g^T [L, kdim] */
        if (amd_cuda_gemm(r.gemm, mult, 0, 1, g.mg, kdim, p.L, 1.0f, r.out + gi * g.mg * p.L, p.L, 0,
                          r.col + gi * kdim * p.L, p.L, 0, 1.0f, dw + gi * g.mg * kdim, kdim, 0, 1, st))
          return -1;
      amd_cu_prof_stage(t0, AMD_PROF_BWD_WEIGHT_GEMM, (double)g.m * (double)kdim * (double)p.L);
    }
    if (dx) {
      double t0 = amd_cu_prof_t0();
      for (int64_t gi = 0; gi < g.group; gi++) /* dcol_g [kdim, L] = W_g^T [kdim, mg] dYt_g [mg, L] */
        if (amd_cuda_gemm(r.gemm, mult, 1, 0, kdim, p.L, g.mg, 1.0f, w + gi * g.mg * kdim, kdim, 0,
                          r.out + gi * g.mg * p.L, p.L, 0, 0.0f, r.col + gi * kdim * p.L, p.L, 0, 1, st))
          return -1;
      amd_cu_prof_stage(t0, AMD_PROF_BWD_DATA_GEMM, (double)g.m * (double)kdim * (double)p.L);
      t0 = amd_cu_prof_t0();
      if (launch_col2im(p, r.col, dx + n0 * g.c * g.isize, acc_dx, r.s, st)) return -1;
      amd_cu_prof_stage(t0, AMD_PROF_BWD_DATA_COL2IM, 0);
    }
  }
  return 0;
}

/* The node's run: the backend's GEMM context and stream, its scratch
 * buffers (none for a pointwise forward), and the bias plane where the
 * forward goes direct with a bias; given back by node_done. */
static int node_run(const amd_conv_geom &g, bool need_workspace, bool bias_plane, conv_run *r, amd_status *st) {
  r->gemm = amd_cu.gemm, r->s = amd_cu.stream, r->col = r->out = r->bm = NULL;
  if (bias_plane && amd_cu_scratch(AMD_CU_WS_BIAS, (size_t)(g.m * g.osize) * 4, (void **)&r->bm, st)) return -1;
  if (!need_workspace) return 0;
  const int64_t chunk = conv_chunk(&g);
  return amd_cu_scratch(AMD_CU_WS_COL, conv_col_floats(&g, chunk) * 4, (void **)&r->col, st) ||
         amd_cu_scratch(AMD_CU_WS_OUT, conv_out_floats(&g, chunk) * 4, (void **)&r->out, st);
}

/* The node's kernels are queued: its scratch goes back (rc passes through). */
static int node_done(conv_run *r, int rc) {
  amd_cu_scratch_done(r->col);
  amd_cu_scratch_done(r->out);
  amd_cu_scratch_done(r->bm);
  r->col = r->out = r->bm = NULL;
  return rc;
}

int conv_forward(FWD_ARGS) {
  const amd_conv_attrs *a = (const amd_conv_attrs *)n->attrs;
  const amd_tensor *x = in[0], *w = in[1], *b = n->n_in > 2 ? in[2] : NULL;
  /* the bias, and the Add and Relu fused into this Conv (src/exec/exec.c) */
  const conv_epilogue e = {b ? F(b) : NULL, ctx && ctx->add_in ? F(ctx->add_in) : NULL, ctx && ctx->relu_out};
  amd_conv_geom g;
  conv_run r;
  if (amd_conv_geometry(a, x, w, &g, st)) return -1;
  if (g.n == 0 || g.m == 0 || g.osize == 0) return 0;
  if (node_run(g, !conv_pointwise(g), e.bias && conv_direct(n->mult, g, e), &r, st)) return node_done(&r, -1);
  return node_done(&r, conv_fwd(r, n->mult, g, F(x), F(w), e, F(&out[0]), st));
}

int conv_backward(BWD_ARGS) {
  (void)out;
  const amd_conv_attrs *a = (const amd_conv_attrs *)n->attrs;
  const amd_tensor *x = in[0], *w = in[1], *dy = dout[0];
  amd_tensor *dx = din[0], *dw = din[1], *db = n->n_in > 2 && in[2] ? din[2] : NULL;
  if (!dy) return 0;
  amd_conv_geom g;
  conv_run r;
  if (amd_conv_geometry(a, x, w, &g, st)) return -1;
  if (db && g.m > 0 && g.n * g.osize > 0 && channel_sum_into(g.n, g.m, g.osize, F(dy), F(db), st)) return -1;
  if (dx && !acc_of(ctx, 0) && (g.n == 0 || g.osize == 0 || g.mg == 0 || g.cg * g.kvol == 0) &&
      amd_tensor_nbytes(dx)) /* no product reaches dx: its gradient is 0 */
    AMD_CUDA_CHECK(cudaMemsetAsync(dx->data, 0, amd_tensor_nbytes(dx), amd_cu.stream), st);
  if ((!dx && !dw) || g.n == 0 || g.osize == 0 || g.mg == 0 || g.cg * g.kvol == 0) return 0;
  if (node_run(g, dw || !conv_pointwise(g), false, &r, st)) return node_done(&r, -1);
  return node_done(&r, conv_bwd(r, n->bwd_mult, g, F(x), F(w), F(dy), F(dx), acc_of(ctx, 0), F(dw), st));
}

/* ------------------------------------- the public API's entry (conv2d.h) */

size_t amd_cuda_conv2d_workspace(const amd_conv_geom *g, int backward) {
  if (g->n == 0 || g->m == 0 || g->osize == 0 || (!backward && conv_pointwise(*g))) return 0;
  const int64_t chunk = conv_chunk(g);
  return 256 * ((conv_col_floats(g, chunk) * 4 + 255) / 256) + conv_out_floats(g, chunk) * 4;
}

/* The caller's workspace as the two buffers: col, then out at a 256-byte boundary. */
static int caller_run(amd_cuda_gemm_ctx *gemm, cudaStream_t s, const amd_conv_geom *g, int backward, void *ws,
                      size_t ws_bytes, conv_run *r, amd_status *st) {
  r->gemm = gemm, r->s = s, r->col = r->out = r->bm = NULL; /* no bias plane: a bias takes the usual path */
  const size_t need = amd_cuda_conv2d_workspace(g, backward);
  if (need == 0) return 0;
  if (!ws || ws_bytes < need)
    return amd_fail(st, "the workspace has %zu bytes, this convolution needs %zu", ws ? ws_bytes : (size_t)0, need);
  if (!aligned16(ws)) return amd_fail(st, "the workspace is not 16-byte aligned");
  const int64_t chunk = conv_chunk(g);
  r->col = (float *)ws;
  r->out = (float *)((char *)ws + 256 * ((conv_col_floats(g, chunk) * 4 + 255) / 256));
  return 0;
}

int amd_cuda_conv2d_forward(amd_cuda_gemm_ctx *gemm, cudaStream_t s, const amd_mult *mult, const amd_conv_geom *g,
                            const float *x, const float *w, const float *bias, float *y, void *ws, size_t ws_bytes,
                            amd_status *st) {
  conv_run r;
  if (caller_run(gemm, s, g, 0, ws, ws_bytes, &r, st)) return -1;
  const conv_epilogue e = {bias, NULL, false};
  return conv_fwd(r, mult, *g, x, w, e, y, st);
}

int amd_cuda_conv2d_backward(amd_cuda_gemm_ctx *gemm, cudaStream_t s, const amd_mult *mult, const amd_conv_geom *g,
                             const float *x, const float *w, const float *dy, float *dx, float *dw, void *ws,
                             size_t ws_bytes, amd_status *st) {
  const bool empty = g->n == 0 || g->osize == 0 || g->mg == 0 || g->cg * g->kvol == 0;
  if (!dx && !dw) return 0;
  conv_run r; /* the workspace checked before anything is written */
  if (caller_run(gemm, s, g, 1, ws, ws_bytes, &r, st)) return -1;
  /* both gradients are written, not added to: dW accumulates the chunks from 0 */
  if (dw) AMD_CUDA_CHECK(cudaMemsetAsync(dw, 0, (size_t)(g->m * g->cg * g->kvol) * 4, s), st);
  if (dx && empty) AMD_CUDA_CHECK(cudaMemsetAsync(dx, 0, (size_t)(g->n * g->c * g->isize) * 4, s), st);
  if (empty) return 0;
  return conv_bwd(r, mult, *g, x, w, dy, dx, false, dw, st);
}

int conv_supported(const amd_node *n, const amd_tensor *const *in) {
  if (in && in[0] && in[0]->rank != 4) return 0;
  const amd_conv_attrs *a = (const amd_conv_attrs *)n->attrs;
  return !a || a->n_kernel < 0 || a->n_kernel == 2;
}

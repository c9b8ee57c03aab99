/* CUDA kernels of MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool
 * (src/ops/pool.c). Gradients of pools gather per input element (as Conv's
 * col2im does), in the CPU's output order, so they are bit-identical to the
 * CPU's. */
#include "ops_internal.h"

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

/* MaxPool's forward without dilation, one output a thread, in 32-bit
 * indices: the window clipped to the plane, its first tap seeding the max
 * and a strictly greater one replacing it, as k_pool_fwd does (the same
 * bits: which of +0 and -0 stays, a NaN seed kept, a later NaN never taken).
 * K and S > 0 are the kernel's size and stride in both dimensions at compile
 * time (ResNet's 3x3 at stride 2, the 2x2 at stride 2 of LeNet and VGG), so
 * the taps unroll; 0 takes them from p. ResNet-50's max pool at batch 256
 * (Nsight Compute on an H200): k_pool_fwd, 64-bit divisions per window, 1.16
 * ms; this kernel 0.47 ms; the same with a plane per blockIdx.y and one
 * division an output, 0.51 ms. */
template <int K, int S> __global__ void k_maxpool_fwd(pool2d p, const float *x, float *y) {
  const int oh = (int)p.oh, ow = (int)p.ow, h = (int)p.h, w = (int)p.w;
  const int kh = K ? K : (int)p.kh, kw = K ? K : (int)p.kw, sh = S ? S : (int)p.sh, sw = S ? S : (int)p.sw;
  const int total = (int)p.planes * oh * ow;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const int ox = i % ow, t = i / ow, oy = t % oh, pl = t / oh;
    const int y0 = oy * sh - (int)p.pbh, x0 = ox * sw - (int)p.pbw;
    const float *xp = x + pl * h * w;
    float best = -INFINITY;
    bool any = false;
#pragma unroll
    for (int a = 0; a < kh; a++) {
      const int iy = y0 + a;
      if (iy < 0 || iy >= h) continue;
#pragma unroll
      for (int b = 0; b < kw; b++) {
        const int ix = x0 + b;
        if (ix < 0 || ix >= w) continue;
        const float v = __ldg(xp + iy * w + ix);
        if (!any || v > best) best = v, any = true;
      }
    }
    y[i] = best;
  }
}

int pool_forward(FWD_ARGS) {
  (void)ctx;
  const amd_pool_attrs *a = (const amd_pool_attrs *)n->attrs;
  amd_pool_geom g;
  if (amd_pool_geometry(a, in[0], &g, st)) return -1;
  pool2d p = make_pool2d(&g, a->count_include_pad);
  int64_t total = g.planes * g.out_plane;
  if (!total) return 0;
  if (a->kind == AMD_POOL_MAX && p.dh == 1 && p.dw == 1 && total < INT32_MAX && g.planes * g.in_plane < INT32_MAX) {
    const unsigned blocks = amd_cu_blocks(total);
    const float *x = F(in[0]);
    float *y = F(&out[0]);
    if (p.kh == 3 && p.kw == 3 && p.sh == 2 && p.sw == 2)
      k_maxpool_fwd<3, 2><<<blocks, 256, 0, amd_cu.stream>>>(p, x, y);
    else if (p.kh == 2 && p.kw == 2 && p.sh == 2 && p.sw == 2)
      k_maxpool_fwd<2, 2><<<blocks, 256, 0, amd_cu.stream>>>(p, x, y);
    else
      k_maxpool_fwd<0, 0><<<blocks, 256, 0, amd_cu.stream>>>(p, x, y);
    AMD_CUDA_CHECK_LAUNCH("k_maxpool_fwd", st);
    return 0;
  }
  k_pool_fwd<<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(p, a->kind == AMD_POOL_MAX, F(in[0]),
                                                              F(&out[0]));
  AMD_CUDA_CHECK_LAUNCH("k_pool_fwd", st);
  return 0;
}

int pool_backward(BWD_ARGS) {
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

int global_forward(FWD_ARGS) {
  (void)ctx;
  int64_t planes, inner;
  plane_sizes(in[0], &planes, &inner);
  if (!planes) return 0;
  k_global_fwd<<<amd_cu_blocks(planes, 128), 128, 0, amd_cu.stream>>>(
      planes, inner, n->op->idx == AMD_OP_IDX_GlobalMaxPool, F(in[0]), F(&out[0]));
  AMD_CUDA_CHECK_LAUNCH("k_global_fwd", st);
  return 0;
}

int global_backward(BWD_ARGS) {
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

int pool_supported(const amd_node *n, const amd_tensor *const *in) {
  (void)in;
  const amd_pool_attrs *a = (const amd_pool_attrs *)n->attrs;
  if (a && a->nk != 2) return 0;
  return !(n->n_out > 1 && n->out[1] >= 0); /* no Indices output */
}

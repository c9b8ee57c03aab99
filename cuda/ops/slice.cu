/* CUDA kernels of Slice and Split (src/ops/slice.c) and of Expand and Tile
 * (src/ops/expand.c; ScatterND, also there, runs on the host fallback).
 *
 * Every forward gathers a strided view of the input (attrs.h's amd_view,
 * from the same geometry functions as the CPU), one thread per output
 * element. Backward, without atomics and deterministic:
 * - Slice, Split: each dY element is added into the one dX element it was
 *   read from; a view's offsets are distinct, so no two threads write the
 *   same element (dX elements outside the view are left alone).
 * - Expand, Tile: one thread per dX element sums its dY elements (the
 *   broadcast positions) in double in dY's order, as the CPU does, and adds
 *   the sum (or, where the trainer allows it, writes 0 + sum). */
#include "ops_internal.h"

/* ================================================================ views */

/* The offset of element i (row-major over v's dims) in the viewed tensor. */
template <typename I> __device__ __forceinline__ I view_off(const amd_view &v, I i) {
  I off = (I)v.base;
  for (int a = v.rank - 1; a >= 0; a--) {
    I d = (I)v.dims[a];
    off += (i % d) * (I)v.str[a];
    i /= d;
  }
  return off;
}

/* dst[i] = src[view_off(i)] (gather) or dst[view_off(i)] += src[i] (scatter-add), V elements a thread:
 * V = 4 for a view whose last axis is contiguous, a multiple of 4 long, and starts at multiples of 4 (base
 * and every stride): one offset and one 16-byte access for the four. */
template <typename I, int V> __global__ void k_view_gather(amd_view v, I cnt, const float *x, float *y) {
  AMD_CU_LOOP_I(I, q, cnt / V) { ((vecf<V> *)y)[q] = *(const vecf<V> *)(x + view_off(v, q * V)); }
}

template <typename I, int V>
__global__ void k_view_scatter_add(amd_view v, I cnt, const float *dy, float *dx) {
  AMD_CU_LOOP_I(I, q, cnt / V) {
    vecf<V> *d = (vecf<V> *)(dx + view_off(v, q * V));
    *d = vec_add(*d, ((const vecf<V> *)dy)[q]);
  }
}

/* One of the four instances: gather or scatter-add, int indices where the view and the viewed tensor fit. */
template <int V>
static int view_copy_launch(const amd_view &v, int64_t cnt, bool small, bool scatter, const float *src,
                            float *dst, amd_status *st) {
  const unsigned blocks = amd_cu_blocks(cnt / V);
  if (scatter && small)
    k_view_scatter_add<int, V><<<blocks, 256, 0, amd_cu.stream>>>(v, (int)cnt, src, dst);
  else if (scatter)
    k_view_scatter_add<int64_t, V><<<blocks, 256, 0, amd_cu.stream>>>(v, cnt, src, dst);
  else if (small)
    k_view_gather<int, V><<<blocks, 256, 0, amd_cu.stream>>>(v, (int)cnt, src, dst);
  else
    k_view_gather<int64_t, V><<<blocks, 256, 0, amd_cu.stream>>>(v, cnt, src, dst);
  AMD_CUDA_CHECK_LAUNCH(scatter ? "k_view_scatter_add" : "k_view_gather", st);
  return 0;
}

static int64_t view_count(const amd_view &v) { return prod(v.dims, 0, v.rank); }

/* A view whose last axis is strided but whose axis k is contiguous in the
 * viewed tensor (Transpose's K^T, NCHW <-> NHWC) in 32 x 32 tiles through
 * shared memory: the viewed tensor is read (or, SCATTER, added into) along
 * axis k and the dense side along the last axis, both coalesced; the other
 * axes are the grid's z (looped). Gather: dst[i] = src[view_off(i)];
 * SCATTER: dst[view_off(i)] += src[i], as the one-element kernels. */
template <bool SCATTER>
__global__ void __launch_bounds__(256)
    k_view_tile(amd_view v, int k, int64_t nbatch, const float *src, float *dst) {
  __shared__ float tile[32][33];
  const int last = v.rank - 1;
  int64_t dstr[AMD_VIEW_RANK]; /* strides of the dense side, row-major over v.dims */
  dstr[last] = 1;
  for (int a = last - 1; a >= 0; a--) dstr[a] = dstr[a + 1] * v.dims[a + 1];
  const int64_t nk = v.dims[k], nl = v.dims[last], k0 = (int64_t)blockIdx.y * 32,
                l0 = (int64_t)blockIdx.x * 32;
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (int64_t b = blockIdx.z; b < nbatch; b += gridDim.z) {
    int64_t vo = v.base, dn = 0, r = b; /* the other axes' offsets in the view and the dense side */
    for (int a = last - 1; a >= 0; a--) {
      if (a == k) continue;
      const int64_t i = r % v.dims[a];
      r /= v.dims[a];
      vo += i * v.str[a];
      dn += i * dstr[a];
    }
    if (b != blockIdx.z) __syncthreads(); /* the tile's last readers are done */
    for (int j = ty; j < 32; j += 8) {
      if (!SCATTER) { /* read the view along k */
        const int64_t kk = k0 + tx, l = l0 + j;
        if (kk < nk && l < nl) tile[j][tx] = src[vo + kk + l * v.str[last]];
      } else { /* read the dense side along the last axis */
        const int64_t kk = k0 + j, l = l0 + tx;
        if (kk < nk && l < nl) tile[tx][j] = src[dn + kk * dstr[k] + l];
      }
    }
    __syncthreads();
    for (int j = ty; j < 32; j += 8) {
      if (!SCATTER) { /* write the dense side along the last axis */
        const int64_t kk = k0 + j, l = l0 + tx;
        if (kk < nk && l < nl) dst[dn + kk * dstr[k] + l] = tile[tx][j];
      } else { /* add into the view along k */
        const int64_t kk = k0 + tx, l = l0 + j;
        if (kk < nk && l < nl) {
          float &d = dst[vo + kk + l * v.str[last]];
          d += tile[j][tx];
        }
      }
    }
  }
}

int view_launch(const amd_view &v0, int64_t xcount, const float *src, float *dst, bool scatter,
                       amd_status *st) {
  amd_view v = v0;
  v.rank = amd_dims_simplify(v.rank, v.dims, v.str);
  int64_t cnt = view_count(v);
  if (cnt == 0) return 0;
  const int last = v.rank - 1;
  int k = -1; /* the tiled form (k_view_tile): an axis read contiguously, the last one strided */
  for (int a = 0; a < last; a++)
    if (v.str[a] == 1 && v.str[last] != 1 && v.dims[a] >= 16 && v.dims[last] >= 16) k = a;
  if (k >= 0 && (v.dims[k] + 31) / 32 <= 65535 && (v.dims[last] + 31) / 32 <= 2147483647) {
    const int64_t nbatch = cnt / (v.dims[k] * v.dims[last]);
    const dim3 grid((unsigned)((v.dims[last] + 31) / 32), (unsigned)((v.dims[k] + 31) / 32),
                    (unsigned)(nbatch < 65535 ? nbatch : 65535));
    if (scatter)
      k_view_tile<true><<<grid, dim3(32, 8), 0, amd_cu.stream>>>(v, k, nbatch, src, dst);
    else
      k_view_tile<false><<<grid, dim3(32, 8), 0, amd_cu.stream>>>(v, k, nbatch, src, dst);
    AMD_CUDA_CHECK_LAUNCH(scatter ? "k_view_tile (scatter)" : "k_view_tile", st);
    return 0;
  }
  const bool small = fits32(cnt) && fits32(xcount);
  bool by4 = v.str[last] == 1 && v.dims[last] % 4 == 0 && v.base % 4 == 0 && aligned16(src) && aligned16(dst);
  for (int a = 0; a < last; a++) by4 = by4 && v.str[a] % 4 == 0;
  return by4 ? view_copy_launch<4>(v, cnt, small, scatter, src, dst, st)
             : view_copy_launch<1>(v, cnt, small, scatter, src, dst, st);
}

/* ================================================================ Slice */

int slice_forward(FWD_ARGS) {
  (void)ctx;
  amd_view v;
  if (amd_slice_view(n, in, &v, st)) return -1;
  return view_launch(v, amd_tensor_numel(in[0]), F(in[0]), F(&out[0]), false, st);
}

int slice_backward(BWD_ARGS) {
  (void)ctx, (void)out;
  if (!dout[0] || !din[0]) return 0;
  amd_view v;
  if (amd_slice_view(n, in, &v, st)) return -1;
  return view_launch(v, amd_tensor_numel(in[0]), F(dout[0]), F(din[0]), true, st);
}

/* ================================================================ Split */

int split_forward(FWD_ARGS) {
  (void)ctx;
  for (int k = 0; k < n->n_out; k++) {
    if (n->out[k] < 0) continue;
    amd_view v;
    if (amd_split_view(n, in, k, &v, st) ||
        view_launch(v, amd_tensor_numel(in[0]), F(in[0]), F(&out[k]), false, st))
      return -1;
  }
  return 0;
}

int split_backward(BWD_ARGS) {
  (void)ctx, (void)out;
  if (!din[0]) return 0;
  for (int k = 0; k < n->n_out; k++) {
    if (!dout[k]) continue;
    amd_view v;
    if (amd_split_view(n, in, k, &v, st) ||
        view_launch(v, amd_tensor_numel(in[0]), F(dout[k]), F(din[0]), true, st))
      return -1;
  }
  return 0;
}

/* ================================================================ Expand, Tile */

static void bcast_geom(const amd_node *n, const amd_tensor *x, const amd_tensor *y, amd_bcast_geom *g) {
  if (n->op->idx == AMD_OP_IDX_Tile)
    amd_tile_geometry(x, y, g);
  else
    amd_expand_geometry(x, y, g);
  g->fwd.rank = amd_dims_simplify(g->fwd.rank, g->fwd.dims, g->fwd.str);
  g->xrank = amd_dims_simplify(g->xrank, g->xdims, g->xstr);
  g->rrank = amd_dims_simplify(g->rrank, g->rdims, g->rstr);
  g->rcount = prod(g->rdims, 0, g->rrank);
}

/* dx[j] (+)= the sum in double, in dY's order, of dy over element j's
 * broadcast positions. */
template <typename I>
__global__ void k_bcast_bwd(amd_bcast_geom g, I xcount, const float *dy, float *dx, bool acc) {
  AMD_CU_LOOP_I(I, j, xcount) {
    I rem = j, off = 0;
    for (int a = g.xrank - 1; a >= 0; a--) {
      I d = (I)g.xdims[a];
      off += (rem % d) * (I)g.xstr[a];
      rem /= d;
    }
    I ri[AMD_VIEW_RANK];
    for (int a = 0; a < g.rrank; a++) ri[a] = 0;
    double s = 0;
    for (int64_t r = 0; r < g.rcount; r++) {
      s += (double)dy[off];
      for (int a = g.rrank - 1; a >= 0; a--) {
        off += (I)g.rstr[a];
        if (++ri[a] < (I)g.rdims[a]) break;
        off -= (I)g.rstr[a] * (I)g.rdims[a];
        ri[a] = 0;
      }
    }
    dx[j] = acc ? dx[j] + (float)s : 0.0f + (float)s;
  }
}

int bcast_forward(FWD_ARGS) {
  (void)ctx;
  if (amd_tensor_numel(&out[0]) == 0) return 0;
  amd_bcast_geom g;
  bcast_geom(n, in[0], &out[0], &g);
  return view_launch(g.fwd, amd_tensor_numel(in[0]), F(in[0]), F(&out[0]), false, st);
}

int bcast_backward(BWD_ARGS) {
  if (!dout[0] || !din[0]) return 0;
  int64_t xcount = amd_tensor_numel(in[0]), ycount = amd_tensor_numel(&out[0]);
  if (xcount == 0) return 0;
  if (ycount == 0) { /* nothing flows back; a buffer written over still needs its zeros */
    if (!acc_of(ctx, 0))
      AMD_CUDA_CHECK(cudaMemsetAsync(din[0]->data, 0, (size_t)xcount * sizeof(float), amd_cu.stream), st);
    return 0;
  }
  amd_bcast_geom g;
  bcast_geom(n, in[0], &out[0], &g);
  const bool acc = acc_of(ctx, 0);
  if (fits32(xcount) && fits32(ycount))
    k_bcast_bwd<int><<<amd_cu_blocks(xcount), 256, 0, amd_cu.stream>>>(g, (int)xcount, F(dout[0]), F(din[0]),
                                                                       acc);
  else
    k_bcast_bwd<int64_t><<<amd_cu_blocks(xcount), 256, 0, amd_cu.stream>>>(g, xcount, F(dout[0]), F(din[0]),
                                                                           acc);
  AMD_CUDA_CHECK_LAUNCH("k_bcast_bwd", st);
  return 0;
}

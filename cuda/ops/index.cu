/* CUDA kernels of GatherND, Trilu, DepthToSpace and SpaceToDepth
 * (src/ops/index.c; the other index ops and the losses of loss.c run on the
 * host fallback). The geometry is index.h's, the CPU's own.
 *
 * GatherND: the indices are int64 on the host (dispatch.cu lists them in
 *   host_inputs); the host turns them into the slices' element offsets
 *   (amd_gathernd_geometry, which also checks the range) and uploads those
 *   into a scratch block through amd_cu_from_host (so, as with Where, a step
 *   that runs GatherND is not captured into a CUDA graph). Forward: one
 *   thread per output element. Backward, deterministic and without atomics:
 *   the host sorts the tuples by their offset (ties in tuple order) and
 *   uploads, per distinct slice, its offset and its run of tuples; one
 *   thread per element of a distinct slice adds the dY elements of its run
 *   into dX one after the other, in tuple order: the CPU's additions, in its
 *   order, so the same bits.
 * Trilu: one thread per element through amd_trilu_keep (k on the host).
 * DepthToSpace, SpaceToDepth: one thread per output element through
 *   amd_space_src; backward the inverse (a permutation: each dX element is
 *   written by one thread).
 * Trilu, DepthToSpace and SpaceToDepth write every dX element, so their
 * backward may write over an unzeroed buffer (acc_of). */
#include <algorithm>
#include <vector>

#include "ops_internal.h" /* first: it includes the C headers with C linkage */
#include "../../src/ops/index.h"
#include "../train_cuda.h" /* amd_cu_from_host */

/* ================================================================ GatherND */

__global__ void k_gathernd_fwd(int64_t total, int64_t slice, const int64_t *off, const float *x, float *y) {
  AMD_CU_LOOP(i, total) y[i] = x[off[i / slice] + i % slice];
}

/* slot u (of nu): dX slice at dst[u] gets the dY slices of tuples
 * order[start[u] .. start[u+1]) added in that order. */
__global__ void k_gathernd_bwd(int64_t nu, int64_t slice, const int64_t *dst, const int64_t *start,
                               const int64_t *order, const float *dy, float *dx) {
  AMD_CU_LOOP(i, nu * slice) {
    const int64_t u = i / slice, e = i % slice;
    float acc = dx[dst[u] + e];
    for (int64_t j = start[u]; j < start[u + 1]; j++) acc += dy[order[j] * slice + e];
    dx[dst[u] + e] = acc;
  }
}

/* The tuples' offsets on the host (a vector of cnt). */
static int gathernd_host_offsets(const amd_node *n, const amd_tensor *const *in, std::vector<int64_t> &off,
                                 int64_t *slice, amd_status *st) {
  const amd_gathernd_attrs *a = (const amd_gathernd_attrs *)n->attrs;
  int64_t cnt;
  if (amd_gathernd_geometry(in[0], in[1], a->batch_dims, NULL, &cnt, slice, NULL, NULL, st)) return -1;
  off.resize((size_t)cnt);
  if (cnt == 0) return 0;
  return amd_gathernd_geometry(in[0], in[1], a->batch_dims, off.data(), &cnt, slice, NULL, NULL, st);
}

int gathernd_forward(FWD_ARGS) {
  (void)ctx;
  std::vector<int64_t> off;
  int64_t slice;
  if (gathernd_host_offsets(n, in, off, &slice, st)) return -1;
  const int64_t total = (int64_t)off.size() * slice;
  if (total == 0) return 0;
  scratch s;
  if (s.get(off.size() * sizeof(int64_t), st) ||
      amd_cu_from_host(s.p, off.data(), off.size() * sizeof(int64_t), st))
    return -1;
  k_gathernd_fwd<<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(total, slice, (const int64_t *)s.p, F(in[0]),
                                                                    F(&out[0]));
  AMD_CUDA_CHECK_LAUNCH("k_gathernd_fwd", st);
  return 0;
}

int gathernd_backward(BWD_ARGS) {
  (void)ctx, (void)out;
  if (!dout[0] || !din[0]) return 0;
  std::vector<int64_t> off;
  int64_t slice;
  if (gathernd_host_offsets(n, in, off, &slice, st)) return -1;
  const int64_t cnt = (int64_t)off.size();
  if (cnt == 0 || slice == 0) return 0;
  /* order: the tuples by offset, ties in tuple order; then the runs */
  std::vector<int64_t> order((size_t)cnt), dst, start;
  for (int64_t t = 0; t < cnt; t++) order[(size_t)t] = t;
  std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) { return off[(size_t)p] < off[(size_t)q]; });
  for (int64_t j = 0; j < cnt; j++)
    if (j == 0 || off[(size_t)order[(size_t)j]] != off[(size_t)order[(size_t)j - 1]]) {
      dst.push_back(off[(size_t)order[(size_t)j]]);
      start.push_back(j);
    }
  const int64_t nu = (int64_t)dst.size();
  start.push_back(cnt);
  /* one upload: dst (nu), start (nu + 1), order (cnt) */
  std::vector<int64_t> plan;
  plan.reserve((size_t)(2 * nu + 1 + cnt));
  plan.insert(plan.end(), dst.begin(), dst.end());
  plan.insert(plan.end(), start.begin(), start.end());
  plan.insert(plan.end(), order.begin(), order.end());
  scratch s;
  const size_t bytes = plan.size() * sizeof(int64_t);
  if (s.get(bytes, st) || amd_cu_from_host(s.p, plan.data(), bytes, st)) return -1;
  const int64_t *p = (const int64_t *)s.p;
  k_gathernd_bwd<<<amd_cu_blocks(nu * slice), 256, 0, amd_cu.stream>>>(nu, slice, p, p + nu, p + 2 * nu + 1,
                                                                        F(dout[0]), F(din[0]));
  AMD_CUDA_CHECK_LAUNCH("k_gathernd_bwd", st);
  return 0;
}

/* ================================================================ Trilu */

/* y = x (or, bwd, y += x; !acc: y = 0 + x) where kept, else 0 (bwd: nothing added) */
__global__ void k_trilu(int64_t total, int64_t rows, int64_t cols, int upper, int64_t k, const float *x, float *y,
                        int bwd, bool acc) {
  AMD_CU_LOOP(e, total) {
    const bool keep = amd_trilu_keep(upper, k, (e / cols) % rows, e % cols);
    if (!bwd)
      y[e] = keep ? x[e] : 0.0f;
    else if (acc)
      y[e] += keep ? x[e] : 0.0f;
    else
      y[e] = 0.0f + (keep ? x[e] : 0.0f);
  }
}

static int trilu_launch(const amd_node *n, const amd_tensor *const *in, const float *src, float *dst, int bwd,
                        bool acc, amd_status *st) {
  const amd_trilu_attrs *a = (const amd_trilu_attrs *)n->attrs;
  const amd_tensor *x = in[0];
  int64_t k;
  if (amd_trilu_k(n, in, &k, st)) return -1;
  if (x->rank < 2) return amd_fail(st, "input must have rank >= 2 (got %d)", x->rank);
  const int64_t total = amd_tensor_numel(x);
  if (total == 0) return 0;
  k_trilu<<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(total, x->dims[x->rank - 2], x->dims[x->rank - 1],
                                                           a->upper, k, src, dst, bwd, acc);
  AMD_CUDA_CHECK_LAUNCH("k_trilu", st);
  return 0;
}

int trilu_forward(FWD_ARGS) {
  (void)ctx;
  return trilu_launch(n, in, F(in[0]), F(&out[0]), 0, true, st);
}

int trilu_backward(BWD_ARGS) {
  (void)out;
  if (!dout[0] || !din[0]) return 0;
  return trilu_launch(n, in, F(dout[0]), F(din[0]), 1, acc_of(ctx, 0), st);
}

/* ================================================================ DepthToSpace, SpaceToDepth */

__global__ void k_space(amd_space_geom g, int64_t total, const float *x, float *y, int bwd, bool acc) {
  AMD_CU_LOOP(o, total) {
    const int64_t s = amd_space_src(&g, o);
    if (!bwd)
      y[o] = x[s];
    else if (acc) /* here x is dY and y dX */
      y[s] += x[o];
    else
      y[s] = 0.0f + x[o];
  }
}

static int space_launch(const amd_node *n, const amd_tensor *const *in, const float *src, float *dst, int bwd,
                        bool acc, amd_status *st) {
  amd_space_geom g;
  if (amd_space_geometry(n, in[0], &g, st)) return -1;
  const int64_t total = g.n * g.oc * g.oh * g.ow;
  if (total == 0) return 0;
  k_space<<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(g, total, src, dst, bwd, acc);
  AMD_CUDA_CHECK_LAUNCH("k_space", st);
  return 0;
}

int space_forward(FWD_ARGS) {
  (void)ctx;
  return space_launch(n, in, F(in[0]), F(&out[0]), 0, true, st);
}

int space_backward(BWD_ARGS) {
  (void)out;
  if (!dout[0] || !din[0]) return 0;
  return space_launch(n, in, F(dout[0]), F(din[0]), 1, acc_of(ctx, 0), st);
}

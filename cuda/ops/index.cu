/* CUDA kernels of GatherND, GatherElements, ScatterElements, Scatter,
 * Trilu, DepthToSpace and SpaceToDepth (src/ops/index.c) and ScatterND
 * (src/ops/expand.c); the other index ops run on the host fallback. The
 * geometry is index.h's, the CPU's own.
 *
 * GatherND, GatherElements: the indices are int32 / int64 on the host
 *   (dispatch.cu lists them in host_inputs); the host turns them into the
 *   element offsets of the slices they name (amd_gathernd_geometry,
 *   amd_elements_geometry: GatherElements is a gather of one-element
 *   slices; both check the range) and uploads those into a scratch block
 *   through amd_cu_from_host (so, as with Where, a step that runs them is
 *   not captured into a CUDA graph). Forward: one thread per output element.
 *   Backward, deterministic and without atomics: the host sorts the tuples by
 *   their offset (ties in tuple order) and uploads, per distinct slice, its
 *   offset and its run of tuples (a run plan); one thread per element of a
 *   distinct slice adds the dY elements of its run into dX one after the
 *   other, in tuple order: the CPU's additions, in its order, so the same
 *   bits.
 * ScatterElements, Scatter, ScatterND (float data and updates; indices on
 *   the host): Y = a copy of data, then one thread per element of a distinct
 *   destination slice of the run plan applies its run of updates in the
 *   order of the indices (none: the last one; add, mul, max, min folded as
 *   the CPU folds them), so the same bits. Backward (none and add; the
 *   others fail as on the CPU): dData += dY where no update landed (none) or
 *   everywhere (add); dUpdates += dY at the update's element, for none only
 *   where the update was the last to write it (its run's last).
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

/* ================================================================ GatherND, GatherElements */

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

/* The tuples' (or index elements') offsets on the host (a vector of cnt
 * slices of *slice elements): GatherND's tuples, or GatherElements' and
 * ScatterElements' one-element slices. */
static int gather_host_offsets(const amd_node *n, const amd_tensor *const *in, std::vector<int64_t> &off,
                               int64_t *slice, amd_status *st) {
  if (n->op->idx != AMD_OP_IDX_GatherND) {
    const amd_elements_attrs *a = (const amd_elements_attrs *)n->attrs;
    *slice = 1;
    off.resize((size_t)amd_tensor_numel(in[1]));
    return amd_elements_geometry(in[0], in[1], a->axis, off.empty() ? NULL : off.data(), st);
  }
  const amd_gathernd_attrs *a = (const amd_gathernd_attrs *)n->attrs;
  int64_t cnt;
  if (amd_gathernd_geometry(in[0], in[1], a->batch_dims, NULL, &cnt, slice, NULL, NULL, st)) return -1;
  off.resize((size_t)cnt);
  if (cnt == 0) return 0;
  return amd_gathernd_geometry(in[0], in[1], a->batch_dims, off.data(), &cnt, slice, NULL, NULL, st);
}

/* The run plan of cnt slices at offsets off, uploaded as one block p of int64:
 * dst = p (nu distinct offsets, ascending), start = p + nu (nu + 1: the runs'
 * bounds in order), order = p + 2 nu + 1 (cnt: the slices sorted by offset,
 * ties in their own order). */
struct run_plan {
  scratch s;
  int64_t nu = 0;
  const int64_t *dst() const { return (const int64_t *)s.p; }
  const int64_t *start() const { return dst() + nu; }
  const int64_t *order() const { return dst() + 2 * nu + 1; }
};

static int run_plan_make(const std::vector<int64_t> &off, run_plan &rp, amd_status *st) {
  const int64_t cnt = (int64_t)off.size();
  std::vector<int64_t> order((size_t)cnt), dst, start;
  for (int64_t t = 0; t < cnt; t++) order[(size_t)t] = t;
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t p, int64_t q) { return off[(size_t)p] < off[(size_t)q]; });
  for (int64_t j = 0; j < cnt; j++)
    if (j == 0 || off[(size_t)order[(size_t)j]] != off[(size_t)order[(size_t)j - 1]]) {
      dst.push_back(off[(size_t)order[(size_t)j]]);
      start.push_back(j);
    }
  rp.nu = (int64_t)dst.size();
  start.push_back(cnt);
  std::vector<int64_t> plan;
  plan.reserve((size_t)(2 * rp.nu + 1 + cnt));
  plan.insert(plan.end(), dst.begin(), dst.end());
  plan.insert(plan.end(), start.begin(), start.end());
  plan.insert(plan.end(), order.begin(), order.end());
  const size_t bytes = plan.size() * sizeof(int64_t);
  return rp.s.get(bytes, st) || amd_cu_from_host(rp.s.p, plan.data(), bytes, st) ? -1 : 0;
}

int gathernd_forward(FWD_ARGS) {
  (void)ctx;
  std::vector<int64_t> off;
  int64_t slice;
  if (gather_host_offsets(n, in, off, &slice, st)) return -1;
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
  if (gather_host_offsets(n, in, off, &slice, st)) return -1;
  if (off.empty() || slice == 0) return 0;
  run_plan rp;
  if (run_plan_make(off, rp, st)) return -1;
  k_gathernd_bwd<<<amd_cu_blocks(rp.nu * slice), 256, 0, amd_cu.stream>>>(rp.nu, slice, rp.dst(), rp.start(),
                                                                          rp.order(), F(dout[0]), F(din[0]));
  AMD_CUDA_CHECK_LAUNCH("k_gathernd_bwd", st);
  return 0;
}

/* ================================================================ ScatterElements, Scatter, ScatterND */

/* Destination slice u (of nu) at y + dst[u]: its run of updates
 * order[start[u] .. start[u+1]) applied in order (none: the last one). */
__global__ void k_scatter_fwd(int64_t nu, int64_t slice, int red, const int64_t *dst, const int64_t *start,
                              const int64_t *order, const float *upd, float *y) {
  AMD_CU_LOOP(i, nu * slice) {
    const int64_t u = i / slice, e = i % slice;
    if (red == AMD_SCATTER_NONE) {
      y[dst[u] + e] = upd[order[start[u + 1] - 1] * slice + e];
      continue;
    }
    float v = y[dst[u] + e];
    for (int64_t j = start[u]; j < start[u + 1]; j++)
      v = AMD_SCATTER_COMBINE(red, v, upd[order[j] * slice + e]);
    y[dst[u] + e] = v;
  }
}

/* covered[dst[u] + e] = 1 for every element of the nu destination slices */
__global__ void k_scatter_mark(int64_t nu, int64_t slice, const int64_t *dst, unsigned char *covered) {
  AMD_CU_LOOP(i, nu * slice) covered[dst[i / slice] + i % slice] = 1;
}

/* dData += dY, where no update landed when covered is given */
__global__ void k_scatter_bwd_data(int64_t total, const unsigned char *covered, const float *dy, float *dx) {
  AMD_CU_LOOP(i, total) if (!covered || !covered[i]) dx[i] += dy[i];
}

/* dUpdates slice u += the dY slice at src[u] (-1: nothing, the update was overwritten) */
__global__ void k_scatter_bwd_upd(int64_t cnt, int64_t slice, const int64_t *src, const float *dy,
                                  float *du) {
  AMD_CU_LOOP(i, cnt * slice) {
    const int64_t s = src[i / slice];
    if (s >= 0) du[i] += dy[s + i % slice];
  }
}

/* The updates' destination offsets (cnt slices of *slice elements) and the reduction. */
static int scatter_host_offsets(const amd_node *n, const amd_tensor *const *in, std::vector<int64_t> &off,
                                int64_t *slice, int *red, amd_status *st) {
  if (n->op->idx != AMD_OP_IDX_ScatterND) {
    *red = ((const amd_elements_attrs *)n->attrs)->reduction;
    return gather_host_offsets(n, in, off, slice, st);
  }
  *red = ((const amd_scatternd_attrs *)n->attrs)->reduction;
  int64_t cnt, slots;
  if (amd_scatternd_geometry(in, &cnt, slice, &slots, NULL, st)) return -1;
  off.resize((size_t)cnt);
  if (cnt && amd_scatternd_geometry(in, &cnt, slice, &slots, off.data(), st)) return -1;
  for (int64_t &o : off) o *= *slice; /* slot -> element offset */
  return 0;
}

static const char *const scatter_red_names[] = {"none", "add", "mul", "max", "min"};

int scatter_forward(FWD_ARGS) {
  (void)ctx;
  std::vector<int64_t> off;
  int64_t slice;
  int red;
  if (scatter_host_offsets(n, in, off, &slice, &red, st)) return -1;
  const size_t bytes = amd_tensor_nbytes(in[0]);
  if (bytes)
    AMD_CUDA_CHECK(cudaMemcpyAsync(out[0].data, in[0]->data, bytes, cudaMemcpyDeviceToDevice, amd_cu.stream),
                   st);
  if (off.empty() || slice == 0) return 0;
  run_plan rp;
  if (run_plan_make(off, rp, st)) return -1;
  k_scatter_fwd<<<amd_cu_blocks(rp.nu * slice), 256, 0, amd_cu.stream>>>(
      rp.nu, slice, red, rp.dst(), rp.start(), rp.order(), F(in[2]), F(&out[0]));
  AMD_CUDA_CHECK_LAUNCH("k_scatter_fwd", st);
  return 0;
}

int scatter_backward(BWD_ARGS) {
  (void)ctx, (void)out;
  if (!dout[0] || (!din[0] && !din[2])) return 0;
  std::vector<int64_t> off;
  int64_t slice;
  int red;
  if (scatter_host_offsets(n, in, off, &slice, &red, st)) return -1;
  if (red != AMD_SCATTER_NONE && red != AMD_SCATTER_ADD)
    return amd_fail(st, "%s with reduction '%s' has no backward (only 'none' and 'add')", n->op->name,
                    scatter_red_names[red]);
  const int64_t total = amd_tensor_numel(in[0]), cnt = (int64_t)off.size();
  run_plan rp;
  if (cnt && slice && run_plan_make(off, rp, st)) return -1;
  if (din[0] && total) {
    scratch covered;
    if (red == AMD_SCATTER_NONE && rp.nu) {
      if (covered.get((size_t)total, st)) return -1;
      AMD_CUDA_CHECK(cudaMemsetAsync(covered.p, 0, (size_t)total, amd_cu.stream), st);
      k_scatter_mark<<<amd_cu_blocks(rp.nu * slice), 256, 0, amd_cu.stream>>>(rp.nu, slice, rp.dst(),
                                                                              (unsigned char *)covered.p);
      AMD_CUDA_CHECK_LAUNCH("k_scatter_mark", st);
    }
    k_scatter_bwd_data<<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(
        total, (const unsigned char *)covered.p, F(dout[0]), F(din[0]));
    AMD_CUDA_CHECK_LAUNCH("k_scatter_bwd_data", st);
  }
  if (din[2] && cnt && slice) {
    /* src[u]: the dY offset update u reads; none: only the last of its run (the one forward kept) */
    std::vector<int64_t> src(off);
    if (red == AMD_SCATTER_NONE) {
      std::vector<int64_t> order((size_t)cnt);
      for (int64_t t = 0; t < cnt; t++) order[(size_t)t] = t;
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t p, int64_t q) { return off[(size_t)p] < off[(size_t)q]; });
      for (int64_t j = 0; j < cnt; j++) {
        const bool is_last =
            j + 1 == cnt || off[(size_t)order[(size_t)j + 1]] != off[(size_t)order[(size_t)j]];
        if (!is_last) src[(size_t)order[(size_t)j]] = -1;
      }
    }
    scratch s;
    const size_t bytes = src.size() * sizeof(int64_t);
    if (s.get(bytes, st) || amd_cu_from_host(s.p, src.data(), bytes, st)) return -1;
    k_scatter_bwd_upd<<<amd_cu_blocks(cnt * slice), 256, 0, amd_cu.stream>>>(cnt, slice, (const int64_t *)s.p,
                                                                             F(dout[0]), F(din[2]));
    AMD_CUDA_CHECK_LAUNCH("k_scatter_bwd_upd", st);
  }
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

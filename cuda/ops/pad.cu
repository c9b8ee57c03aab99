/* CUDA kernels of Pad (src/ops/pad.c), float data; the geometry and the
 * output-to-input map are pad.h's, the CPU's own.
 *
 * Forward: one thread per output element, copying the input element that
 *   amd_pad_map names along each axis, or the fill value.
 * Backward without atomics: one thread per input element adds up the dY
 *   elements that copy it. Along each axis those are the direct position and,
 *   in reflect / edge / wrap mode, the pad positions that map to it; the
 *   thread lists them in increasing order per axis and walks their product
 *   with the last axis fastest, i.e. in the output's row-major order, the
 *   order in which the CPU adds them: the same bits. The pad positions are
 *   scanned per element, so the kernel is offered only for pads of at most
 *   PAD_CU_MAX_COPY per side in those modes (dispatch.cu's pad_supported);
 *   larger ones run on the host. The pads, the value and the axes (inputs
 *   1-3) are read on the host. */
#include "../../src/ops/pad.h"
#include "ops_internal.h" /* first: it includes the C headers with C linkage */

#define PAD_CU_MAX_COPY 16

__global__ void k_pad_fwd(int64_t total, amd_pad_geom g, float fill, const float *x, float *y) {
  AMD_CU_LOOP(o, total) {
    int64_t r = o, src = 0, stride = 1;
    bool hit = true;
    for (int a = g.rank - 1; a >= 0; a--) {
      const int64_t k = r % g.ydims[a];
      r /= g.ydims[a];
      const int64_t m = amd_pad_map(g.mode, k, g.lo[a], g.len[a], g.pb[a]);
      if (m < 0) hit = false;
      src += m * stride;
      stride *= g.xdims[a];
    }
    y[o] = hit ? x[src] : fill;
  }
}

__global__ void k_pad_bwd(int64_t total, amd_pad_geom g, const float *dy, float *dx, bool acc) {
  AMD_CU_LOOP(e, total) {
    /* per axis: the output positions that copy this element's index, increasing */
    int64_t cand[AMD_MAX_RANK][2 * PAD_CU_MAX_COPY + 1];
    int cnt[AMD_MAX_RANK];
    int64_t r = e;
    bool kept = true;
    for (int a = g.rank - 1; a >= 0; a--) {
      const int64_t j = r % g.xdims[a];
      r /= g.xdims[a];
      int c = 0;
      if (j < g.lo[a] || j >= g.lo[a] + g.len[a]) {
        kept = false;
      } else if (g.mode == AMD_PAD_CONSTANT) {
        cand[a][c++] = g.pb[a] + j - g.lo[a];
      } else {
        const int64_t end0 = g.pb[a] + g.len[a];
        for (int64_t k = 0; k < g.pb[a]; k++)
          if (amd_pad_map(g.mode, k, g.lo[a], g.len[a], g.pb[a]) == j) cand[a][c++] = k;
        cand[a][c++] = g.pb[a] + j - g.lo[a];
        for (int64_t k = end0; k < g.ydims[a]; k++)
          if (amd_pad_map(g.mode, k, g.lo[a], g.len[a], g.pb[a]) == j) cand[a][c++] = k;
      }
      cnt[a] = c;
    }
    float v = acc ? dx[e] : 0.0f;
    if (kept) {
      int pos[AMD_MAX_RANK] = {0};
      for (;;) {
        int64_t o = 0;
        for (int a = 0; a < g.rank; a++) o = o * g.ydims[a] + cand[a][pos[a]];
        v += dy[o];
        int a = g.rank - 1;
        for (; a >= 0; a--) {
          if (++pos[a] < cnt[a]) break;
          pos[a] = 0;
        }
        if (a < 0) break;
      }
    }
    dx[e] = v;
  }
}

int pad_supported(const amd_node *n, const amd_tensor *const *in) {
  if (!in) return 1; /* decided per call, from the pads */
  amd_pad_geom g;
  amd_status st;
  if (!in[0] || in[0]->dtype != AMD_FLOAT || amd_pad_geometry(n, in, &g, &st)) return 0;
  if (g.rank == 0) return 0;
  if (g.mode != AMD_PAD_CONSTANT)
    for (int a = 0; a < g.rank; a++)
      if (g.pb[a] > PAD_CU_MAX_COPY || g.ydims[a] - g.pb[a] - g.len[a] > PAD_CU_MAX_COPY) return 0;
  return 1;
}

int pad_forward(FWD_ARGS) {
  (void)ctx;
  amd_pad_geom g;
  if (amd_pad_geometry(n, in, &g, st)) return -1;
  const int64_t total = amd_tensor_numel(&out[0]);
  if (total == 0) return 0;
  k_pad_fwd<<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(total, g, (float)amd_pad_fill(n, in), F(in[0]),
                                                             F(&out[0]));
  AMD_CUDA_CHECK_LAUNCH("k_pad_fwd", st);
  return 0;
}

/* Every dX element is written (a cropped one gets 0 + nothing), so the
 * backward may write over an unzeroed buffer (acc_of). */
int pad_backward(BWD_ARGS) {
  (void)out;
  if (!dout[0] || !din[0]) return 0;
  amd_pad_geom g;
  if (amd_pad_geometry(n, in, &g, st)) return -1;
  const int64_t total = amd_tensor_numel(in[0]);
  if (total == 0) return 0;
  k_pad_bwd<<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(total, g, F(dout[0]), F(din[0]), acc_of(ctx, 0));
  AMD_CUDA_CHECK_LAUNCH("k_pad_bwd", st);
  return 0;
}

/* CUDA kernels of Where (src/ops/logic.c) for float X and Y.
 *
 * The condition is a bool tensor and so lives on the host (dispatch.cu lists
 * it in host_inputs): forward and backward each copy its bytes into a device
 * scratch block (amd_cu_from_host, through the pinned staging ring; a step
 * that runs Where therefore is not captured into a CUDA graph, and runs
 * uncaptured). Forward: one thread per output element, the three operands'
 * offsets from their broadcast strides. Backward: dX gets dY where the
 * condition holds, dY where it does not; a full-size operand one thread per
 * output element, a broadcast one one thread per operand element summing (in
 * double, in output order) over the output elements that read it, as the CPU
 * does. The comparisons and logic ops have bool outputs and stay on the host. */
#include "../train_cuda.h"
#include "ops_internal.h"

struct where_shape {
  int rank;
  int64_t dims[AMD_MAX_RANK], so[AMD_MAX_RANK]; /* so: output strides */
  int64_t s[3][AMD_MAX_RANK];                   /* condition, X, Y (0 on broadcast axes) */
};

static void where_make(const amd_tensor *const *in, const amd_tensor *o, where_shape *w) {
  w->rank = o->rank;
  for (int k = 0; k < 3; k++) amd_broadcast_strides(in[k], o, w->s[k]);
  int64_t str = 1;
  for (int d = o->rank - 1; d >= 0; d--) {
    w->dims[d] = o->dims[d];
    w->so[d] = str;
    str *= o->dims[d];
  }
}

/* offsets in the condition, X and Y of output element i */
__device__ __forceinline__ void where_offsets(const where_shape &w, int64_t i, int64_t off[3]) {
  off[0] = off[1] = off[2] = 0;
  for (int d = w.rank - 1; d >= 0; d--) {
    const int64_t id = i % w.dims[d];
    i /= w.dims[d];
    for (int k = 0; k < 3; k++) off[k] += id * w.s[k][d];
  }
}

__global__ void k_where_fwd(where_shape w, int64_t total, const unsigned char *c, const float *x,
                            const float *y, float *o) {
  AMD_CU_LOOP(i, total) {
    int64_t off[3];
    where_offsets(w, i, off);
    o[i] = c[off[0]] ? x[off[1]] : y[off[2]];
  }
}

/* which = 1 (X: where the condition holds) or 2 (Y: where it does not); a
 * full-size operand: element i of the output maps to one element of it. */
__global__ void k_where_bwd_full(where_shape w, int which, int64_t total, const unsigned char *c,
                                 const float *g, float *d, bool acc) {
  AMD_CU_LOOP(i, total) {
    int64_t off[3];
    where_offsets(w, i, off);
    const bool take = (c[off[0]] != 0) == (which == 1);
    float &r = d[off[which]];
    r = (acc ? r : 0.0f) + (take ? g[i] : 0.0f);
  }
}

/* a broadcast operand: one thread per operand element j */
__global__ void k_where_bwd_reduce(where_shape w, int which, int64_t nop, const unsigned char *c,
                                   const float *g, float *d, bool acc_d) {
  AMD_CU_LOOP(j, nop) {
    const int64_t *sd = w.s[which];
    int64_t idx[AMD_MAX_RANK], r = j;
    for (int dd = w.rank - 1; dd >= 0; dd--) { /* j over the operand's own (kept) dims */
      if (sd[dd] != 0) {
        idx[dd] = r % w.dims[dd];
        r /= w.dims[dd];
      } else {
        idx[dd] = 0;
      }
    }
    double acc = 0;
    for (;;) {
      int64_t oo = 0, oc = 0;
      for (int dd = 0; dd < w.rank; dd++) oo += idx[dd] * w.so[dd], oc += idx[dd] * w.s[0][dd];
      if ((c[oc] != 0) == (which == 1)) acc += (double)g[oo];
      int dd = w.rank - 1; /* advance the reduced dims, last fastest */
      for (; dd >= 0; dd--) {
        if (sd[dd] != 0 || w.dims[dd] == 1) continue;
        if (++idx[dd] < w.dims[dd]) break;
        idx[dd] = 0;
      }
      if (dd < 0) break;
    }
    d[j] = (acc_d ? d[j] : 0.0f) + (float)acc;
  }
}

/* The condition's bytes on the device (the caller's scratch). */
static int where_cond(const amd_tensor *c, scratch *s, amd_status *st) {
  if (c->device != AMD_DEVICE_CPU) return amd_fail(st, "Where's condition is not on the host");
  size_t bytes = amd_tensor_nbytes(c);
  if (s->get(bytes, st)) return -1;
  return amd_cu_from_host(s->p, c->data, bytes, st);
}

int where_forward(FWD_ARGS) {
  (void)n, (void)ctx;
  const int64_t total = amd_tensor_numel(&out[0]);
  if (!total) return 0;
  where_shape w;
  where_make(in, &out[0], &w);
  scratch c;
  if (where_cond(in[0], &c, st)) return -1;
  k_where_fwd<<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(w, total, (const unsigned char *)c.p, F(in[1]),
                                                               F(in[2]), F(&out[0]));
  AMD_CUDA_CHECK_LAUNCH("k_where_fwd", st);
  return 0;
}

int where_backward(BWD_ARGS) {
  (void)n;
  if (!dout[0] || (!din[1] && !din[2])) return 0;
  const int64_t total = amd_tensor_numel(&out[0]);
  if (!total) { /* an empty output: a broadcast operand's gradient is 0 */
    for (int k = 1; k <= 2; k++)
      if (din[k] && !acc_of(ctx, k) && amd_tensor_nbytes(din[k]))
        AMD_CUDA_CHECK(cudaMemsetAsync(din[k]->data, 0, amd_tensor_nbytes(din[k]), amd_cu.stream), st);
    return 0;
  }
  where_shape w;
  where_make(in, &out[0], &w);
  scratch c;
  if (where_cond(in[0], &c, st)) return -1;
  const unsigned char *cd = (const unsigned char *)c.p;
  for (int k = 1; k <= 2; k++) {
    if (!din[k]) continue;
    const int64_t nop = amd_tensor_numel(in[k]);
    const bool acc = acc_of(ctx, k);
    if (nop == total)
      k_where_bwd_full<<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(w, k, total, cd, F(dout[0]),
                                                                        F(din[k]), acc);
    else
      k_where_bwd_reduce<<<amd_cu_blocks(nop, 64), 64, 0, amd_cu.stream>>>(w, k, nop, cd, F(dout[0]),
                                                                           F(din[k]), acc);
    AMD_CUDA_CHECK_LAUNCH("Where backward", st);
  }
  return 0;
}

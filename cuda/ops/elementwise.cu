/* CUDA kernels of Add, Sub, Mul, Div, Pow, the two-input Min and Max
 * (src/ops/elementwise.c), the two-input Sum and Mean (src/ops/arith.c:
 * Sum is Add; Mean (x + y) / 2, its gradient dY / 2 to both, reading neither
 * operand) and PRelu (src/ops/activation.c: y = x < 0 ? slope x : x, the
 * slope broadcast to X; dX = x < 0 ? slope dY : dY, dSlope the sum of
 * x < 0 ? x dY : 0 over the positions that share a slope element): one set
 * of broadcast kernels, the op a switch in ew_apply / ew_grad. Pow, Min
 * and Max use the CPU's formulas: x^2 as x * x, PyTorch's zeros in Pow's
 * gradients, Min / Max choosing the second input
 * only where it is strictly smaller / greater or NaN (ties: the first). A Pow
 * with a non-float exponent and a Min / Max of one or of three or more inputs
 * take the host fallback, and so do a Sum or Mean of one or of three or more. */
#include <algorithm>

#include "ops_internal.h"

/* ================================================================ Add, Sub, Mul, Div, Pow, Min, Max */

/* the ops from EW_MUL on read their operands in the backward */
enum { EW_ADD, EW_SUB, EW_MEAN, EW_MUL, EW_DIV, EW_POW, EW_MIN, EW_MAX, EW_PRELU };

__device__ __forceinline__ float ew_pow(float x, float e) { return e == 2.0f ? x * x : powf(x, e); }
/* Min / Max: 1 where the second operand y is the one chosen */
__device__ __forceinline__ bool ew_second(int op, float x, float y) {
  return y != y || (op == EW_MAX ? y > x : y < x);
}

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
  case EW_MEAN:
    return (x + y) / 2.0f;
  case EW_MUL:
    return x * y;
  case EW_DIV:
    return x / y;
  case EW_POW:
    return ew_pow(x, y);
  case EW_PRELU: /* y is the slope */
    return x < 0 ? y * x : x;
  default:
    return ew_second(op, x, y) ? y : x;
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
  case EW_MEAN * 2:
  case EW_MEAN * 2 + 1:
    return g * 0.5f;
  case EW_MUL * 2:
    return g * y;
  case EW_MUL * 2 + 1:
    return g * x;
  case EW_DIV * 2:
    return g / y;
  case EW_DIV * 2 + 1:
    return -(g * x / (y * y));
  case EW_POW * 2: /* 0 where the exponent is 0 */
    return y == 0.0f ? 0.0f : g * y * ew_pow(x, y - 1.0f);
  case EW_POW * 2 + 1: /* 0 where x == 0 and the exponent >= 0 */
    return (x == 0.0f && y >= 0.0f) ? 0.0f : g * ew_pow(x, y) * logf(x);
  case EW_PRELU * 2: /* the x >= 0 branch at the kink, as the CPU */
    return x < 0 ? y * g : g;
  case EW_PRELU * 2 + 1:
    return x < 0 ? x * g : 0.0f;
  default: /* Min, Max */
    return ew_second(op, x, y) == (which == 1) ? g : 0.0f;
  }
}

/* Operands of the output's own size (no broadcasting: element i of each is
 * element i of the output), V elements at a time: no index arithmetic.
 * relu: a Relu fused in (ctx->relu_out, Add only). */
template <int V>
__global__ void k_ew_fwd_same(int op, int64_t total, const float *a, const float *b, bool relu, float *o) {
  AMD_CU_LOOP(i, total / V) {
    vecf<V> av = ((const vecf<V> *)a)[i], bv = ((const vecf<V> *)b)[i], ov;
    const float *ae = (const float *)&av, *be = (const float *)&bv;
    float *oe = (float *)&ov;
#pragma unroll
    for (int e = 0; e < V; e++) oe[e] = ew_apply(op, ae[e], be[e]);
    if (relu) ov = vec_relu(ov);
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

__global__ void k_ew_fwd(int op, ew_shape s, int64_t total, const float *a, const float *b, bool relu,
                         float *o) {
  AMD_CU_LOOP(i, total) {
    int64_t oa, ob;
    ew_offsets(s, i, &oa, &ob);
    const float v = ew_apply(op, a[oa], b[ob]);
    o[i] = relu ? vec_relu(v) : v;
  }
}

/* The broadcasts that a 2-D view of the output, [R, C], serves without index
 * arithmetic: each operand is the whole output (element r * C + c), the
 * output's trailing block (a bias [C] or a position embedding [T, C] over
 * [B, T, C]: element c), its leading block (a per-channel scale [B, C, 1, 1]
 * over [B, C, H, W]: element r) or a scalar. ew_view finds R and C. */
enum { EW2_FULL, EW2_TRAIL, EW2_LEAD, EW2_SCALAR };
struct ew_view2 {
  int64_t R, C;
  int ka, kb; /* the EW2_ kind of each operand */
};
/* V consecutive columns of an operand at row r, column c (a multiple of V):
 * loaded from a whole or trailing operand, repeated from a leading or scalar one */
template <int V>
__device__ __forceinline__ vecf<V> ew2_load(int kind, const float *p, int64_t r, int64_t c, int64_t C) {
  if (kind == EW2_FULL) return *(const vecf<V> *)(p + r * C + c);
  if (kind == EW2_TRAIL) return *(const vecf<V> *)(p + c);
  vecf<V> w;
  float *we = (float *)&w;
  const float x = p[kind == EW2_LEAD ? r : 0];
#pragma unroll
  for (int e = 0; e < V; e++) we[e] = x;
  return w;
}

/* grid and blocks: x over the columns (V at a time), y over the rows (looped) */
template <int V>
__global__ void k_ew_fwd2(int op, ew_view2 v, const float *a, const float *b, bool relu, float *o) {
  for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < v.R;
       r += (int64_t)gridDim.y * blockDim.y)
    for (int64_t c = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * V; c < v.C;
         c += (int64_t)gridDim.x * blockDim.x * V) {
      const vecf<V> av = ew2_load<V>(v.ka, a, r, c, v.C), bv = ew2_load<V>(v.kb, b, r, c, v.C);
      const float *ae = (const float *)&av, *be = (const float *)&bv;
      vecf<V> ov;
      float *oe = (float *)&ov;
#pragma unroll
      for (int e = 0; e < V; e++) oe[e] = ew_apply(op, ae[e], be[e]);
      if (relu) ov = vec_relu(ov);
      *(vecf<V> *)(o + r * v.C + c) = ov;
    }
}

/* k_ew_bwd_full on the 2-D view (operand `which` is the whole output) */
template <int V>
__global__ void k_ew_bwd_full2(int op, int which, ew_view2 v, const float *a, const float *b, const float *g,
                               float *d, bool acc) {
  for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < v.R;
       r += (int64_t)gridDim.y * blockDim.y)
    for (int64_t c = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * V; c < v.C;
         c += (int64_t)gridDim.x * blockDim.x * V) {
      const int64_t i = r * v.C + c;
      vecf<V> av = {}, bv = {}, dv = {};
      if (op >= EW_MUL) av = ew2_load<V>(v.ka, a, r, c, v.C), bv = ew2_load<V>(v.kb, b, r, c, v.C);
      if (acc) dv = *(const vecf<V> *)(d + i);
      const vecf<V> gv = *(const vecf<V> *)(g + i);
      const float *ae = (const float *)&av, *be = (const float *)&bv, *ge = (const float *)&gv;
      float *de = (float *)&dv;
#pragma unroll
      for (int e = 0; e < V; e++) de[e] += ew_grad(op, which, ae[e], be[e], ge[e]);
      *(vecf<V> *)(d + i) = dv;
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

/* Two layouts of a broadcast operand that the reduction above serves badly
 * (a few long serial sums): the operand is the output's trailing block (a
 * bias [C] or position embedding over [rows, C]: column sums) or its leading
 * block (a per-channel scale [B, C, 1, 1] over [B, C, H, W]: row sums). */
enum { EW_RED_GENERIC, EW_RED_COLS, EW_RED_ROWS };

/* The layout of operand `which` and the sizes of its reduction: cols: rows
 * *outer of *inner (= the operand's size) elements; rows: *outer operand
 * elements, each the sum of *inner consecutive output elements. */
static int ew_red_layout(const ew_shape &s, int which, int64_t *outer, int64_t *inner) {
  const int64_t *sd = which ? s.sb : s.sa;
  bool kept[AMD_MAX_RANK];
  int64_t size[AMD_MAX_RANK];
  int n = 0;
  for (int d = 0; d < s.rank; d++) /* the axes of size > 1: kept by the operand or reduced */
    if (s.dims[d] > 1) kept[n] = sd[d] != 0, size[n++] = s.dims[d];
  if (n == 0) return EW_RED_GENERIC;
  int k = 0; /* the first run: axes [0, k) */
  while (k < n && kept[k] == kept[0]) k++;
  for (int j = k; j < n; j++)
    if (kept[j] == kept[0]) return EW_RED_GENERIC; /* more than two runs */
  int64_t head = 1, tail = 1;
  for (int j = 0; j < n; j++) (j < k ? head : tail) *= size[j];
  if (k == n) { /* one run: a scalar operand (all reduced) is one row */
    if (kept[0]) return EW_RED_GENERIC;
    *outer = 1, *inner = head;
    return EW_RED_ROWS;
  }
  *outer = head, *inner = tail;
  return kept[0] ? EW_RED_ROWS : EW_RED_COLS;
}

/* Columns: part[slice][c] = the sum over the slice's rows of the gradient at
 * output element r * C + c (threads along c read consecutive elements). */
__global__ void k_ew_bwd_cols(int op, int which, ew_shape s, int64_t R, int64_t C, int64_t rows_per_slice,
                              const float *a, const float *b, const float *g, double *part) {
  const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, slice = blockIdx.y;
  if (c >= C) return;
  const int64_t r1 = min(R, (slice + 1) * rows_per_slice);
  double acc = 0;
  for (int64_t r = slice * rows_per_slice; r < r1; r++) {
    const int64_t i = r * C + c;
    float x = 0.0f, y = 0.0f; /* Add, Sub: unread */
    if (op >= EW_MUL) {
      int64_t oa, ob;
      ew_offsets(s, i, &oa, &ob);
      x = a[oa], y = b[ob];
    }
    acc += (double)ew_grad(op, which, x, y, g[i]);
  }
  part[slice * C + c] = acc;
}

/* Rows: the sum of output elements [j * K, (j + 1) * K) for each operand
 * element j, in S slices of L consecutive elements (S = 1 for many rows; a
 * scalar or a few channels over a large tensor get many slices, so that
 * enough warps share the work). One warp per (j, slice), lane-strided in
 * double, then a shuffle tree; with S = 1 the warp writes d[j] itself,
 * otherwise part[j * S + slice], which k_ew_rows_sum adds in slice order:
 * a fixed order, so runs repeat exactly. */
__global__ void k_ew_bwd_rows(int op, int which, ew_shape s, int64_t nop, int64_t K, int64_t S, int64_t L,
                              const float *a, const float *b, const float *g, float *d, double *part,
                              bool acc_d) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
  for (int64_t w = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; w < nop * S; w += warps) {
    const int64_t j = w / S, k0 = (w % S) * L, k1 = min(K, k0 + L);
    double acc = 0;
    for (int64_t k = k0 + lane; k < k1; k += 32) {
      const int64_t i = j * K + k;
      float x = 0.0f, y = 0.0f;
      if (op >= EW_MUL) {
        int64_t oa, ob;
        ew_offsets(s, i, &oa, &ob);
        x = a[oa], y = b[ob];
      }
      acc += (double)ew_grad(op, which, x, y, g[i]);
    }
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
    if (lane == 0) {
      if (S == 1)
        d[j] = (acc_d ? d[j] : 0.0f) + (float)acc;
      else
        part[w] = acc;
    }
  }
}

__global__ void k_ew_rows_sum(int64_t nop, int64_t S, const double *part, float *d, bool acc_d) {
  AMD_CU_LOOP(j, nop) {
    double t = 0;
    for (int64_t k = 0; k < S; k++) t += part[j * S + k];
    d[j] = (acc_d ? d[j] : 0.0f) + (float)t;
  }
}

static int ew_op(const amd_node *n) {
  switch (n->op->idx) {
  case AMD_OP_IDX_Add:
  case AMD_OP_IDX_Sum:
    return EW_ADD;
  case AMD_OP_IDX_Mean:
    return EW_MEAN;
  case AMD_OP_IDX_Sub:
    return EW_SUB;
  case AMD_OP_IDX_Mul:
    return EW_MUL;
  case AMD_OP_IDX_Div:
    return EW_DIV;
  case AMD_OP_IDX_Pow:
    return EW_POW;
  case AMD_OP_IDX_Min:
    return EW_MIN;
  case AMD_OP_IDX_PRelu:
    return EW_PRELU;
  default:
    return EW_MAX;
  }
}

int minmax_supported(const amd_node *n, const amd_tensor *const *in) {
  (void)in;
  return n->n_in == 2;
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

/* The 2-D view of s (see ew_view2), or false where an operand is none of
 * the four kinds or the two need different views. */
static bool ew_view(const ew_shape &s, ew_view2 *v) {
  int axes[AMD_MAX_RANK], n = 0;
  for (int d = 0; d < s.rank; d++)
    if (s.dims[d] > 1) axes[n++] = d; /* axes of size 1 take no part */
  int split = -1;                     /* the view's columns: axes[split..n) */
  int kind[2];
  for (int w = 0; w < 2; w++) {
    const int64_t *sd = w ? s.sb : s.sa;
    int first = n, last = -1, count = 0; /* the operand's kept axes among axes[] */
    for (int j = 0; j < n; j++)
      if (sd[axes[j]] != 0) first = first < j ? first : j, last = j, count++;
    int at;
    if (count == n)
      kind[w] = EW2_FULL, at = -1;
    else if (count == 0)
      kind[w] = EW2_SCALAR, at = -1;
    else if (last - first + 1 != count)
      return false; /* kept axes not in one run */
    else if (last == n - 1)
      kind[w] = EW2_TRAIL, at = first;
    else if (first == 0)
      kind[w] = EW2_LEAD, at = last + 1;
    else
      return false; /* a run in the middle */
    if (at >= 0) {
      if (split >= 0 && split != at) return false;
      split = at;
    }
  }
  if (split < 0) split = 0; /* full and scalar operands only: one row */
  v->R = 1, v->C = 1;
  for (int j = 0; j < n; j++) (j < split ? v->R : v->C) *= s.dims[axes[j]];
  v->ka = kind[0], v->kb = kind[1];
  return true;
}

/* Launches k_ew_fwd2 (g NULL) or k_ew_bwd_full2: float4 columns where C and
 * every pointer allow; blocks of about 256 threads, 256 or a multiple of 32
 * along the columns where there are that many, else all of them and several
 * rows (a warp then reads consecutive rows: the same contiguous memory); about
 * 2048 blocks in all (16 per SM of an H100), the rows looped over. */
static int ew2_launch(int op, int which, const ew_view2 &v, const float *a, const float *b, const float *g,
                      float *d, bool flag, amd_status *st) {
  const bool v4 = v.C % 4 == 0 && aligned16(a) && aligned16(b) && aligned16(d) && (!g || aligned16(g));
  const int64_t cols = v4 ? v.C / 4 : v.C;
  const int64_t tx = cols >= 256 ? 256 : cols >= 32 ? (cols + 31) / 32 * 32 : cols, ty = 256 / tx;
  const int64_t gx = std::min<int64_t>((cols + tx - 1) / tx, 65535), rows = (v.R + ty - 1) / ty;
  const int64_t gy = std::min<int64_t>(std::min<int64_t>(rows, std::max<int64_t>(1, 2048 / gx)), 65535);
  const dim3 grid((unsigned)gx, (unsigned)gy), t((unsigned)tx, (unsigned)ty);
  if (!g && v4)
    k_ew_fwd2<4><<<grid, t, 0, amd_cu.stream>>>(op, v, a, b, flag, d);
  else if (!g)
    k_ew_fwd2<1><<<grid, t, 0, amd_cu.stream>>>(op, v, a, b, flag, d);
  else if (v4)
    k_ew_bwd_full2<4><<<grid, t, 0, amd_cu.stream>>>(op, which, v, a, b, g, d, flag);
  else
    k_ew_bwd_full2<1><<<grid, t, 0, amd_cu.stream>>>(op, which, v, a, b, g, d, flag);
  AMD_CUDA_CHECK_LAUNCH(g ? "k_ew_bwd_full2" : "k_ew_fwd2", st);
  return 0;
}

int ew_forward(FWD_ARGS) {
  const bool relu = ctx && ctx->relu_out; /* a fused Relu (src/exec/exec.c; Add only) */
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
      k_ew_fwd_same<4><<<amd_cu_blocks(total / 4), 256, 0, amd_cu.stream>>>(ew_op(n), total, a, b, relu, o);
    else
      k_ew_fwd_same<1><<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(ew_op(n), total, a, b, relu, o);
  } else if (ew_view2 v; ew_view(s, &v)) {
    return ew2_launch(ew_op(n), 0, v, a, b, NULL, o, relu, st);
  } else {
    k_ew_fwd<<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(ew_op(n), s, total, a, b, relu, o);
  }
  AMD_CUDA_CHECK_LAUNCH("k_ew_fwd", st);
  return 0;
}

int ew_backward(BWD_ARGS) {
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
    else if (ew_view2 v; nop == total && ew_view(s, &v)) {
      if (ew2_launch(ew_op(n), which, v, a, b, g, d, acc, st)) return -1;
    } else if (nop == total)
      k_ew_bwd_full<<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(ew_op(n), which, s, total, a, b, g, d,
                                                                     acc);
    else {
      int64_t outer = 1, inner = 1;
      const int layout = ew_red_layout(s, which, &outer, &inner);
      if (layout == EW_RED_COLS) { /* outer rows of inner (= nop) columns */
        const int64_t rows_per_slice = 64, slices = (outer + rows_per_slice - 1) / rows_per_slice;
        scratch part;
        if (part.get((size_t)(slices * inner) * sizeof(double), st)) return -1;
        const dim3 grid((unsigned)((inner + 127) / 128), (unsigned)slices);
        k_ew_bwd_cols<<<grid, 128, 0, amd_cu.stream>>>(ew_op(n), which, s, outer, inner, rows_per_slice, a, b,
                                                       g, part.d());
        AMD_CUDA_CHECK_LAUNCH("k_ew_bwd_cols", st);
        if (col_partials_total(part.d(), slices, inner, 1.0f, acc, d, st)) return -1;
      } else if (layout == EW_RED_ROWS) { /* outer (= nop) sums of inner consecutive elements */
        /* about 2048 warps in all, slices of at least 1024 elements */
        int64_t S = outer >= 2048 ? 1 : std::min((2048 + outer - 1) / outer, (inner + 1023) / 1024);
        if (S < 1) S = 1;
        const int64_t L = (inner + S - 1) / S;
        scratch part;
        if (S > 1 && part.get((size_t)(outer * S) * sizeof(double), st)) return -1;
        k_ew_bwd_rows<<<amd_cu_blocks(outer * S * 32), 256, 0, amd_cu.stream>>>(
            ew_op(n), which, s, outer, inner, S, L, a, b, g, d, part.d(), acc);
        if (S > 1) {
          AMD_CUDA_CHECK_LAUNCH("k_ew_bwd_rows", st);
          k_ew_rows_sum<<<amd_cu_blocks(outer), 256, 0, amd_cu.stream>>>(outer, S, part.d(), d, acc);
        }
      } else {
        k_ew_bwd_reduce<<<amd_cu_blocks(nop, 64), 64, 0, amd_cu.stream>>>(ew_op(n), which, s, nop, a, b, g, d,
                                                                          acc);
      }
    }
    AMD_CUDA_CHECK_LAUNCH("elementwise backward", st);
  }
  return 0;
}

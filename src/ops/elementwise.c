/* Binary elementwise arithmetic: Add, Sub, Mul, Div; and Pow, Min, Max (their
 * own sections below, walking the broadcast with bcast_iter.h).
 *
 * Since opset 7 the operands broadcast numpy-style (multidirectional). Opsets
 * 1 and 6 used the legacy `broadcast` / `axis` attributes: with broadcast=1, B
 * is aligned with A's dims starting at `axis` (trailing dims when absent) and
 * the output has A's shape; with broadcast=0 the shapes must be equal.
 *
 * The forward pass collapses the broadcast shape into the fewest dims (adjacent
 * dims merge when both operands are contiguous or broadcast across them), then
 * walks the outer dims with an odometer and runs an inner loop over the last
 * dim, where each operand's stride is 0 (broadcast) or 1. Equal shapes and
 * scalar operands therefore become one flat loop, and per-channel bias such as
 * [N,C,H,W] + [1,C,1,1] becomes runs of "vector op scalar" of length H*W.
 *
 * Types: float, double, float16, bfloat16 (computed in float), and every
 * integer type. Integer add/sub/mul wrap (two's complement); integer division
 * truncates toward zero, and division by zero gives 0 instead of trapping.
 *
 * Backward (float, double) ACCUMULATES (+=) into the input gradients, summing
 * over each operand's broadcast axes; see ew_backward. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/omp.h"
#include "attrs.h"
#include "bcast_iter.h"
#include "shape_util.h"



enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV };

static int ew_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  amd_ew_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->legacy = n->since < 7;
  if (a->legacy) {
    a->broadcast = (int)amd_attr_int(p, "broadcast", 0);
    a->has_axis = amd_attr_find(p, "axis") != NULL;
    a->axis = amd_attr_int(p, "axis", 0);
  }
  return 0;
}

static int ew_dtype_ok(amd_dtype t) {
  switch (t) {
  case AMD_FLOAT: case AMD_DOUBLE: case AMD_FLOAT16: case AMD_BFLOAT16:
  case AMD_INT8: case AMD_INT16: case AMD_INT32: case AMD_INT64:
  case AMD_UINT8: case AMD_UINT16: case AMD_UINT32: case AMD_UINT64:
    return 1;
  default:
    return 0;
  }
}

/* The B operand as seen by numpy broadcasting: for the legacy forms, B's dims
 * placed inside a rank-of-A shape of ones. */
int amd_ew_operand_b(const amd_node *n, const amd_tensor *a, const amd_tensor *b, amd_tensor *bv,
                        amd_status *st) {
  const amd_ew_attrs *at = n->attrs;
  *bv = *b;
  if (!at || !at->legacy) return 0;
  char sa[128], sb[128];
  if (!at->broadcast) {
    if (!amd_same_shape(a, b))
      return amd_fail(st, "shapes %s and %s differ and broadcast=0", amd_shape_str(a, sa, sizeof sa),
                      amd_shape_str(b, sb, sizeof sb));
    return 0;
  }
  int64_t axis = at->has_axis ? at->axis : a->rank - b->rank;
  if (axis < 0) axis += a->rank;
  if (axis < 0 || axis + b->rank > a->rank)
    return amd_fail(st, "legacy broadcast of %s into %s at axis %lld does not fit",
                    amd_shape_str(b, sb, sizeof sb), amd_shape_str(a, sa, sizeof sa), (long long)at->axis);
  bv->rank = a->rank;
  for (int i = 0; i < a->rank; i++) bv->dims[i] = 1;
  for (int i = 0; i < b->rank; i++) {
    int64_t d = b->dims[i];
    if (d != 1 && d != a->dims[axis + i])
      return amd_fail(st, "legacy broadcast of %s into %s at axis %lld does not fit",
                      amd_shape_str(b, sb, sizeof sb), amd_shape_str(a, sa, sizeof sa), (long long)axis);
    bv->dims[axis + i] = d;
  }
  return 0;
}

static int ew_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (n->n_in < 2 || !in[0] || !in[1]) return amd_fail(st, "needs two inputs");
  const amd_tensor *a = in[0], *b = in[1];
  if (a->dtype != b->dtype)
    return amd_fail(st, "input dtypes differ (%s and %s)", amd_dtype_name(a->dtype),
                    amd_dtype_name(b->dtype));
  if (!ew_dtype_ok(a->dtype)) return amd_fail(st, "unsupported dtype %s", amd_dtype_name(a->dtype));
  amd_tensor bv;
  if (amd_ew_operand_b(n, a, b, &bv, st)) return -1;
  amd_tensor o = {0};
  if (amd_broadcast_shape(a, &bv, &o, st)) return -1;
  amd_tensor_set_shape(&out[0], a->dtype, o.rank, o.dims);
  return 0;
}

/* ---- inner kernels: n elements, operand strides 0 or 1 ---- */

typedef void (*ew_inner_fn)(const void *a, const void *b, void *o, int64_t n, int64_t sa, int64_t sb);

#define EW_LOOPS(T, EXPR)                                                        \
  const T *restrict A = a;                                                       \
  const T *restrict B = b;                                                       \
  T *restrict O = o;                                                             \
  if (sa && sb) {                                                                \
    for (int64_t i = 0; i < n; i++) { T x = A[i], y = B[i]; O[i] = (EXPR); }     \
  } else if (sa) {                                                               \
    const T y = B[0];                                                            \
    for (int64_t i = 0; i < n; i++) { T x = A[i]; O[i] = (EXPR); }               \
  } else if (sb) {                                                               \
    const T x = A[0];                                                            \
    for (int64_t i = 0; i < n; i++) { T y = B[i]; O[i] = (EXPR); }               \
  } else {                                                                       \
    T x = A[0], y = B[0];                                                        \
    T r = (EXPR);                                                                \
    for (int64_t i = 0; i < n; i++) O[i] = r;                                    \
  }

/* Native floating point. */
#define EW_FLOAT_KERNELS(SUF, T)                                                                   \
  static void ew_add_##SUF(const void *a, const void *b, void *o, int64_t n, int64_t sa, int64_t sb) { \
    EW_LOOPS(T, x + y)                                                                             \
  }                                                                                                \
  static void ew_sub_##SUF(const void *a, const void *b, void *o, int64_t n, int64_t sa, int64_t sb) { \
    EW_LOOPS(T, x - y)                                                                             \
  }                                                                                                \
  static void ew_mul_##SUF(const void *a, const void *b, void *o, int64_t n, int64_t sa, int64_t sb) { \
    EW_LOOPS(T, x * y)                                                                             \
  }                                                                                                \
  static void ew_div_##SUF(const void *a, const void *b, void *o, int64_t n, int64_t sa, int64_t sb) { \
    EW_LOOPS(T, x / y)                                                                             \
  }

EW_FLOAT_KERNELS(f32, float)
EW_FLOAT_KERNELS(f64, double)

/* Integers: add/sub/mul in uint64 arithmetic (wraps, no signed overflow UB),
 * then truncated to T. Division guards against /0 and MIN/-1. */
#define EW_INT_KERNELS(SUF, T, IS_SIGNED)                                                          \
  static void ew_add_##SUF(const void *a, const void *b, void *o, int64_t n, int64_t sa, int64_t sb) { \
    EW_LOOPS(T, (T)((uint64_t)x + (uint64_t)y))                                                    \
  }                                                                                                \
  static void ew_sub_##SUF(const void *a, const void *b, void *o, int64_t n, int64_t sa, int64_t sb) { \
    EW_LOOPS(T, (T)((uint64_t)x - (uint64_t)y))                                                    \
  }                                                                                                \
  static void ew_mul_##SUF(const void *a, const void *b, void *o, int64_t n, int64_t sa, int64_t sb) { \
    EW_LOOPS(T, (T)((uint64_t)x * (uint64_t)y))                                                    \
  }                                                                                                \
  static void ew_div_##SUF(const void *a, const void *b, void *o, int64_t n, int64_t sa, int64_t sb) { \
    EW_LOOPS(T, y == 0 ? (T)0 : (IS_SIGNED && y == (T)-1) ? (T)(0 - (uint64_t)x) : (T)(x / y))     \
  }

EW_INT_KERNELS(i8, int8_t, 1)
EW_INT_KERNELS(i16, int16_t, 1)
EW_INT_KERNELS(i32, int32_t, 1)
EW_INT_KERNELS(i64, int64_t, 1)
EW_INT_KERNELS(u8, uint8_t, 0)
EW_INT_KERNELS(u16, uint16_t, 0)
EW_INT_KERNELS(u32, uint32_t, 0)
EW_INT_KERNELS(u64, uint64_t, 0)

/* 16-bit floats: computed in float, rounded once to the storage type. */
static float ew_apply_f(int op, float x, float y) {
  switch (op) {
  case OP_ADD: return x + y;
  case OP_SUB: return x - y;
  case OP_MUL: return x * y;
  default: return x / y;
  }
}

#define EW_HALF_KERNELS(SUF, TO_F, FROM_F)                                                          \
  static void ew_half_##SUF(int op, const void *a, const void *b, void *o, int64_t n, int64_t sa,   \
                            int64_t sb) {                                                           \
    const uint16_t *A = a, *B = b;                                                                  \
    uint16_t *O = o;                                                                                \
    for (int64_t i = 0; i < n; i++) O[i] = FROM_F(ew_apply_f(op, TO_F(A[i * sa]), TO_F(B[i * sb]))); \
  }                                                                                                 \
  static void ew_add_##SUF(const void *a, const void *b, void *o, int64_t n, int64_t sa, int64_t sb) { \
    ew_half_##SUF(OP_ADD, a, b, o, n, sa, sb);                                                      \
  }                                                                                                 \
  static void ew_sub_##SUF(const void *a, const void *b, void *o, int64_t n, int64_t sa, int64_t sb) { \
    ew_half_##SUF(OP_SUB, a, b, o, n, sa, sb);                                                      \
  }                                                                                                 \
  static void ew_mul_##SUF(const void *a, const void *b, void *o, int64_t n, int64_t sa, int64_t sb) { \
    ew_half_##SUF(OP_MUL, a, b, o, n, sa, sb);                                                      \
  }                                                                                                 \
  static void ew_div_##SUF(const void *a, const void *b, void *o, int64_t n, int64_t sa, int64_t sb) { \
    ew_half_##SUF(OP_DIV, a, b, o, n, sa, sb);                                                      \
  }

EW_HALF_KERNELS(f16, amd_half_to_float, amd_float_to_half)
EW_HALF_KERNELS(bf16, amd_bf16_to_float, amd_float_to_bf16)

#define EW_ROW(SUF) {ew_add_##SUF, ew_sub_##SUF, ew_mul_##SUF, ew_div_##SUF}

static ew_inner_fn ew_kernel(amd_dtype t, int op) {
  static const ew_inner_fn f32[4] = EW_ROW(f32), f64[4] = EW_ROW(f64), f16[4] = EW_ROW(f16),
                           bf16[4] = EW_ROW(bf16), i8[4] = EW_ROW(i8), i16[4] = EW_ROW(i16),
                           i32[4] = EW_ROW(i32), i64[4] = EW_ROW(i64), u8[4] = EW_ROW(u8),
                           u16[4] = EW_ROW(u16), u32[4] = EW_ROW(u32), u64[4] = EW_ROW(u64);
  switch (t) {
  case AMD_FLOAT: return f32[op];
  case AMD_DOUBLE: return f64[op];
  case AMD_FLOAT16: return f16[op];
  case AMD_BFLOAT16: return bf16[op];
  case AMD_INT8: return i8[op];
  case AMD_INT16: return i16[op];
  case AMD_INT32: return i32[op];
  case AMD_INT64: return i64[op];
  case AMD_UINT8: return u8[op];
  case AMD_UINT16: return u16[op];
  case AMD_UINT32: return u32[op];
  case AMD_UINT64: return u64[op];
  default: return NULL;
  }
}

/* ---- broadcast driver ---- */

/* The broadcast of A and B to the output, collapsed into the fewest dims:
 * adjacent dims merge where both operands are contiguous or broadcast across
 * them, dims of size 1 drop out. The walk is rows of dim[nd - 1] elements
 * (operand strides 0 or 1 there), the outer dims an odometer. */
typedef struct ew_walk {
  int nd;
  int64_t dim[AMD_MAX_RANK], sa[AMD_MAX_RANK], sb[AMD_MAX_RANK];
  int64_t rows; /* output elements / dim[nd - 1] */
} ew_walk;

static void ew_walk_init(ew_walk *w, const amd_tensor *a, const amd_tensor *b, const amd_tensor *o) {
  int64_t sa_full[AMD_MAX_RANK], sb_full[AMD_MAX_RANK];
  amd_broadcast_strides(a, o, sa_full);
  amd_broadcast_strides(b, o, sb_full);
  int nd = 0;
  for (int i = 0; i < o->rank; i++) {
    if (o->dims[i] == 1) continue;
    if (nd > 0 && w->sa[nd - 1] == sa_full[i] * o->dims[i] && w->sb[nd - 1] == sb_full[i] * o->dims[i]) {
      w->dim[nd - 1] *= o->dims[i];
      w->sa[nd - 1] = sa_full[i];
      w->sb[nd - 1] = sb_full[i];
      continue;
    }
    w->dim[nd] = o->dims[i];
    w->sa[nd] = sa_full[i];
    w->sb[nd] = sb_full[i];
    nd++;
  }
  if (nd == 0) { /* every dim is 1: one row of one element */
    w->dim[0] = 1, w->sa[0] = w->sb[0] = 1, nd = 1;
  }
  w->nd = nd;
  w->rows = amd_tensor_numel(o) / w->dim[nd - 1];
}

/* The odometer's position (idx) and the operands' element offsets at the
 * start of row r. */
static void ew_row_start(const ew_walk *w, int64_t r, int64_t *idx, int64_t *offa, int64_t *offb) {
  *offa = amd_odometer_at(w->nd - 1, w->dim, w->sa, r, idx);
  *offb = 0;
  for (int d = 0; d < w->nd - 1; d++) *offb += idx[d] * w->sb[d];
}

/* The odometer: row offsets of the next row. */
static void ew_next_row(const ew_walk *w, int64_t *idx, int64_t *offa, int64_t *offb) {
  for (int d = w->nd - 2; d >= 0; d--) {
    *offa += w->sa[d];
    *offb += w->sb[d];
    if (++idx[d] < w->dim[d]) return;
    *offa -= w->sa[d] * w->dim[d];
    *offb -= w->sb[d] * w->dim[d];
    idx[d] = 0;
  }
}

/* Work items of a threaded walk: a flat walk (one row) in pieces of
 * EW_PIECE elements, otherwise the rows in EW_BLOCKS blocks, each block
 * walking its rows with the odometer. Every output element is computed
 * alone, so the bits do not depend on the split. */
enum { EW_PIECE = 16384, EW_BLOCKS = 64 };

/* relu: Relu fused in (ctx->relu_out; float only), applied to each piece or
 * row as soon as it is written */
static int ew_forward(int op, const amd_node *n, const amd_tensor *const *in, amd_tensor *out, int relu,
                      amd_status *st) {
  const amd_tensor *a = in[0];
  amd_tensor bv;
  if (amd_ew_operand_b(n, a, in[1], &bv, st)) return -1;
  amd_tensor *o = &out[0];
  ew_inner_fn fn = ew_kernel(o->dtype, op);
  if (!fn) return amd_fail(st, "unsupported dtype %s", amd_dtype_name(o->dtype));
  const int64_t total = amd_tensor_numel(o);
  if (total == 0) return 0;
  const size_t es = amd_dtype_size(o->dtype);
  const char *pa = a->data, *pb = bv.data;
  char *po = o->data;
  ew_walk w;
  ew_walk_init(&w, a, &bv, o);
  const int64_t inner = w.dim[w.nd - 1], isa = w.sa[w.nd - 1], isb = w.sb[w.nd - 1];
  AMD_ASSERT((isa == 0 || isa == 1) && (isb == 0 || isb == 1));
  relu = relu && o->dtype == AMD_FLOAT;
  if (w.rows == 1) {
    const int64_t pieces = (inner + EW_PIECE - 1) / EW_PIECE;
    AMD_PARALLEL_FOR(total)
    for (int64_t q = 0; q < pieces; q++) {
      const int64_t i0 = q * EW_PIECE, len = inner - i0 < EW_PIECE ? inner - i0 : EW_PIECE;
      fn(pa + i0 * isa * (int64_t)es, pb + i0 * isb * (int64_t)es, po + i0 * (int64_t)es, len, isa, isb);
      if (relu) amd_relu_inplace((float *)po + i0, len);
    }
    return 0;
  }
  const int64_t blocks = w.rows < EW_BLOCKS ? w.rows : EW_BLOCKS;
  AMD_PARALLEL_FOR(total)
  for (int64_t blk = 0; blk < blocks; blk++) {
    const int64_t r0 = w.rows * blk / blocks, r1 = w.rows * (blk + 1) / blocks;
    int64_t idx[AMD_MAX_RANK], offa, offb;
    ew_row_start(&w, r0, idx, &offa, &offb);
    for (int64_t r = r0; r < r1; r++) {
      fn(pa + offa * (int64_t)es, pb + offb * (int64_t)es, po + r * inner * (int64_t)es, inner, isa, isb);
      if (relu) amd_relu_inplace((float *)po + r * inner, inner);
      ew_next_row(&w, idx, &offa, &offb);
    }
  }
  return 0;
}

static int add_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                       amd_status *st) {
  return ew_forward(OP_ADD, n, in, out, ctx && ctx->relu_out, st);
}
static int sub_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                       amd_status *st) {
  (void)ctx;
  return ew_forward(OP_SUB, n, in, out, 0, st);
}
static int mul_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                       amd_status *st) {
  (void)ctx;
  return ew_forward(OP_MUL, n, in, out, 0, st);
}
static int div_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                       amd_status *st) {
  (void)ctx;
  return ew_forward(OP_DIV, n, in, out, 0, st);
}

/* ---- backward ----
 *
 * For output element i with operand offsets ia, ib (broadcast strides, 0 on
 * broadcast axes): dA[ia] += g_i * dO/dA, dB[ib] += g_i * dO/dB, so the sum
 * over broadcast axes falls out of the stride-0 walk. An operand that is
 * broadcast (fewer elements than the output) accumulates in a double scratch
 * buffer, added to din once at the end; a full-size operand accumulates in
 * place. float and double only. */

/* One row: n output elements; a, b, g, d point at the row's first element,
 * with strides sa, sb (operands) and sd (the gradient being accumulated). */
#define EW_BWD_ROW(T, ACC)                                                                          \
  switch (op * 2 + which) {                                                                         \
  case OP_ADD * 2: case OP_ADD * 2 + 1: case OP_SUB * 2:                                            \
    for (int64_t i = 0; i < n; i++) d[i * sd] += (ACC)g[i];                                         \
    break;                                                                                          \
  case OP_SUB * 2 + 1:                                                                              \
    for (int64_t i = 0; i < n; i++) d[i * sd] -= (ACC)g[i];                                         \
    break;                                                                                          \
  case OP_MUL * 2:                                                                                  \
    for (int64_t i = 0; i < n; i++) d[i * sd] += (ACC)(g[i] * b[i * sb]);                           \
    break;                                                                                          \
  case OP_MUL * 2 + 1:                                                                              \
    for (int64_t i = 0; i < n; i++) d[i * sd] += (ACC)(g[i] * a[i * sa]);                           \
    break;                                                                                          \
  case OP_DIV * 2:                                                                                  \
    for (int64_t i = 0; i < n; i++) d[i * sd] += (ACC)(g[i] / b[i * sb]);                           \
    break;                                                                                          \
  default: /* d(a/b)/db = -a/b^2 */                                                                 \
    for (int64_t i = 0; i < n; i++) {                                                               \
      T y = b[i * sb];                                                                              \
      d[i * sd] -= (ACC)(g[i] * a[i * sa] / (y * y));                                               \
    }                                                                                               \
    break;                                                                                          \
  }

#define EW_BWD_KERNEL(SUF, T, ACC)                                                                  \
  static void ew_bwd_##SUF(int op, int which, const T *a, const T *b, const T *g, ACC *d, int64_t n, \
                           int64_t sa, int64_t sb, int64_t sd) {                                    \
    EW_BWD_ROW(T, ACC)                                                                              \
  }

EW_BWD_KERNEL(f32, float, float)
EW_BWD_KERNEL(f32d, float, double)
EW_BWD_KERNEL(f64, double, double)

/* Element off of an operand, or NULL when training freed its data: Add and
 * Sub do not read their operands (bwd_unread_in), only their shapes. */
static const void *operand_at(const amd_tensor *t, int64_t off, size_t elem) {
  return t->data ? (const char *)t->data + off * (int64_t)elem : NULL;
}

/* One run of len output elements for operand `which`: a, b, g and d point at
 * the run's first elements (a or b NULL when training freed its data: Add
 * and Sub do not read them); d is double when t is or when d_double. */
static void ew_bwd_run(int op, int which, amd_dtype t, int d_double, const void *a, const void *b,
                       const void *g, void *d, int64_t len, int64_t isa, int64_t isb) {
  const int64_t isd = which ? isb : isa;
  if (t == AMD_DOUBLE)
    ew_bwd_f64(op, which, a, b, g, d, len, isa, isb, isd);
  else if (d_double)
    ew_bwd_f32d(op, which, a, b, g, d, len, isa, isb, isd);
  else
    ew_bwd_f32(op, which, a, b, g, d, len, isa, isb, isd);
}

/* Rows [r0, r1) of the walk for operand `which`, accumulating into d (dt's
 * data, or the double scratch of a broadcast float operand). */
static void ew_bwd_rows(int op, int which, const ew_walk *w, int64_t r0, int64_t r1, const amd_tensor *a,
                        const amd_tensor *b, const amd_tensor *g, amd_dtype t, void *d, int d_double) {
  const size_t es = amd_dtype_size(t), ed = t == AMD_DOUBLE || d_double ? 8 : 4;
  const int64_t inner = w->dim[w->nd - 1];
  int64_t idx[AMD_MAX_RANK], offa, offb;
  ew_row_start(w, r0, idx, &offa, &offb);
  for (int64_t r = r0; r < r1; r++) {
    const int64_t offd = which ? offb : offa;
    ew_bwd_run(op, which, t, d_double, operand_at(a, offa, es), operand_at(b, offb, es),
               (const char *)g->data + r * inner * (int64_t)es, (char *)d + offd * (int64_t)ed, inner,
               w->sa[w->nd - 1], w->sb[w->nd - 1]);
    ew_next_row(w, idx, &offa, &offb);
  }
}

static int ew_backward(int op, const amd_node *n, const amd_tensor *const *in, const amd_tensor *out,
                       const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  if (!dout[0]) return 0;
  const amd_tensor *a = in[0], *o = &out[0];
  amd_tensor bv;
  if (amd_ew_operand_b(n, a, in[1], &bv, st)) return -1;
  amd_dtype t = o->dtype;
  if (t != AMD_FLOAT && t != AMD_DOUBLE)
    return amd_fail(st, "backward supports float and double only (got %s)", amd_dtype_name(t));
  const int64_t total = amd_tensor_numel(o);
  if (total == 0) return 0;
  ew_walk w;
  ew_walk_init(&w, a, &bv, o); /* the forward's walk */

  for (int which = 0; which < 2; which++) {
    amd_tensor *dt = din[which];
    if (!dt) continue;
    const amd_tensor *operand = which ? &bv : a;
    const int64_t nop = amd_tensor_numel(operand);
    AMD_ASSERT(dt->dtype == t && amd_tensor_numel(dt) == nop);
    if (nop == total) {
      /* one gradient element per output element: rows in parallel blocks
       * (a flat walk in pieces), each element's sum the same as serially */
      if (w.rows == 1) {
        const int64_t pieces = (total + EW_PIECE - 1) / EW_PIECE, isa = w.sa[0], isb = w.sb[0];
        const size_t es = amd_dtype_size(t);
        AMD_PARALLEL_FOR(total)
        for (int64_t q = 0; q < pieces; q++) {
          const int64_t i0 = q * EW_PIECE, len = total - i0 < EW_PIECE ? total - i0 : EW_PIECE;
          ew_bwd_run(op, which, t, 0, operand_at(a, i0 * isa, es), operand_at(&bv, i0 * isb, es),
                     (const char *)dout[0]->data + i0 * (int64_t)es, (char *)dt->data + i0 * (int64_t)es, len,
                     isa, isb);
        }
      } else {
        const int64_t blocks = w.rows < EW_BLOCKS ? w.rows : EW_BLOCKS;
        AMD_PARALLEL_FOR(total)
        for (int64_t blk = 0; blk < blocks; blk++)
          ew_bwd_rows(op, which, &w, w.rows * blk / blocks, w.rows * (blk + 1) / blocks, a, &bv, dout[0], t,
                      dt->data, 0);
      }
      continue;
    }
    /* a broadcast operand: its elements gather sums over the broadcast axes,
     * in the walk's order (float: in a double scratch, added once at the
     * end). Where it is broadcast along the rows only (a per-sample scale
     * [N, C, 1, 1]: no outer dim of stride 0), no two rows share an element:
     * row blocks in parallel, each element's sum in the same order. */
    const int64_t *sd = which ? w.sb : w.sa;
    int rows_disjoint = 1;
    for (int d = 0; d < w.nd - 1; d++) rows_disjoint &= sd[d] != 0;
    const int64_t blocks = rows_disjoint ? (w.rows < EW_BLOCKS ? w.rows : EW_BLOCKS) : 1;
    double *scratch = t == AMD_FLOAT ? calloc((size_t)nop, sizeof *scratch) : NULL;
    if (t == AMD_FLOAT && !scratch) return amd_fail(st, "out of memory");
    void *acc = t == AMD_FLOAT ? (void *)scratch : dt->data;
    AMD_PARALLEL_FOR(blocks > 1 ? total : 0)
    for (int64_t blk = 0; blk < blocks; blk++)
      ew_bwd_rows(op, which, &w, w.rows * blk / blocks, w.rows * (blk + 1) / blocks, a, &bv, dout[0], t, acc,
                  1);
    if (scratch) {
      float *dd = dt->data;
      AMD_PARALLEL_FOR(nop)
      for (int64_t i = 0; i < nop; i++) dd[i] += (float)scratch[i];
      free(scratch);
    }
  }
  return 0;
}

#define EW_BWD_FN(FN, OP)                                                                          \
  static int FN(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out, \
                const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {           \
    (void)ctx;                                                                                     \
    return ew_backward(OP, n, in, out, dout, din, st);                                             \
  }

EW_BWD_FN(add_backward, OP_ADD)
EW_BWD_FN(sub_backward, OP_SUB)
EW_BWD_FN(mul_backward, OP_MUL)
EW_BWD_FN(div_backward, OP_DIV)

/* backward reads only the output's shape, and Add's and Sub's only their operands' shapes */
#define EW_DESC(NAME, FWD, BWD, UNREAD_IN, FUSES_RELU)                                                       \
  const amd_op amd_op_##NAME = {.name = #NAME,                                                               \
                                .idx = AMD_OP_IDX_##NAME,                                                    \
                                .since = {1, 6, 7, 13, 14},                                                  \
                                .parse = ew_parse,                                                           \
                                .infer = ew_infer,                                                           \
                                .forward = FWD,                                                              \
                                .backward = BWD,                                                             \
                                .bwd_unread_in = UNREAD_IN,                                                  \
                                .bwd_unread_out = 1,                                                         \
                                .fuses_relu = FUSES_RELU}

EW_DESC(Add, add_forward, add_backward, 3, 1);
EW_DESC(Sub, sub_forward, sub_backward, 3, 0);
EW_DESC(Mul, mul_forward, mul_backward, 0, 0);
EW_DESC(Div, div_forward, div_backward, 0, 0);

/* ================================================================ Pow
 *
 * Y = X ^ E elementwise, E broadcast (numpy rules from opset 7; opset 1 has the
 * legacy broadcast / axis attributes of Add-1). Y has X's dtype. X: float,
 * double, float16, bfloat16 (computed in float), int32, int64 (opset 12 on, but
 * accepted at every version). E: any float or integer dtype (E's own dtype
 * must equal X's before opset 12; mixed dtypes are accepted at every version).
 * Float results use powf / pow, with x^2 taken as x * x (the same value,
 * exactly rounded; the LayerNorm exports square with Pow(x, 2)). Integer X:
 * an integer E gives the exact power (wrapping on overflow; E < 0 gives 0
 * except for X = 1 (1) and X = -1 (+-1)); a float E is computed in double and
 * truncated toward zero (NaN and values out of int64 range give 0).
 *
 * Backward (float and double X; E float or double when its gradient is
 * wanted), PyTorch's convention (pow_backward_self / pow_backward_exponent):
 *   dX += dY * e * x^(e-1), but 0 where e == 0 (also at x == 0);
 *   dE += dY * y * ln(x),   but 0 where x == 0 and e >= 0.
 * Elsewhere the formulas give what IEEE arithmetic gives: x == 0 with
 * 0 < e < 1 gives dX = +-inf; x == 0 with e < 0 gives dX = inf or NaN and
 * dE = -inf * sign; x < 0 gives dE = NaN (ln of a negative number), and dX
 * is finite for integral e, NaN otherwise. Both sums run over the broadcast
 * axes (in double). The output is recomputed, not read (bwd_unread_out). */
static inline float pow_f(float x, float e) { return e == 2.0f ? x * x : powf(x, e); }
static inline double pow_d(double x, double e) { return e == 2.0 ? x * x : pow(x, e); }

static int pow_int_dtype(amd_dtype t) {
  switch (t) {
  case AMD_INT8: case AMD_INT16: case AMD_INT32: case AMD_INT64:
  case AMD_UINT8: case AMD_UINT16: case AMD_UINT32: case AMD_UINT64:
    return 1;
  default:
    return 0;
  }
}

static int pow_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (n->n_in < 2 || !in[0] || !in[1]) return amd_fail(st, "needs two inputs (X and Y)");
  const amd_tensor *a = in[0], *b = in[1];
  amd_dtype ta = a->dtype, tb = b->dtype;
  if (!(is_float_dtype(ta) || ta == AMD_INT32 || ta == AMD_INT64))
    return amd_fail(st, "X has dtype %s (supported: float, double, float16, bfloat16, int32, int64)",
                    amd_dtype_name(ta));
  if (!(is_float_dtype(tb) || pow_int_dtype(tb)))
    return amd_fail(st, "the exponent has dtype %s (supported: float and integer dtypes)", amd_dtype_name(tb));
  amd_tensor bv;
  if (amd_ew_operand_b(n, a, b, &bv, st)) return -1;
  amd_tensor o = {0};
  if (amd_broadcast_shape(a, &bv, &o, st)) return -1;
  amd_tensor_set_shape(&out[0], ta, o.rank, o.dims);
  return 0;
}

/* x^e on integers (see the header) */
static int64_t pow_i64(int64_t x, int64_t e) {
  if (e < 0) return x == 1 ? 1 : x == -1 ? ((e & 1) ? -1 : 1) : 0;
  uint64_t r = 1, base = (uint64_t)x;
  while (e) {
    if (e & 1) r *= base;
    base *= base;
    e >>= 1;
  }
  return (int64_t)r;
}

static int64_t pow_trunc_i64(double v) {
  if (!(v > -9.2e18 && v < 9.2e18)) return 0; /* NaN, inf, out of range */
  return (int64_t)v;
}

static int pow_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                       amd_status *st) {
  (void)ctx;
  const amd_tensor *a = in[0];
  amd_tensor bv;
  if (amd_ew_operand_b(n, a, in[1], &bv, st)) return -1;
  amd_tensor *o = &out[0];
  int64_t total = amd_tensor_numel(o);
  if (total == 0) return 0;
  const amd_tensor *ops[2] = {a, &bv};
  bc_iter it;
  bc_init(&it, o, ops, 2);
  if (o->dtype == AMD_FLOAT && bv.dtype == AMD_FLOAT) {
    const float *X = a->data, *E = bv.data;
    float *Y = o->data;
    for (int64_t i = 0; i < total; i++, bc_next(&it)) Y[i] = pow_f(X[it.off[0]], E[it.off[1]]);
  } else if (o->dtype == AMD_FLOAT || o->dtype == AMD_FLOAT16 || o->dtype == AMD_BFLOAT16) {
    for (int64_t i = 0; i < total; i++, bc_next(&it))
      amd_tensor_set_f64(o, i, pow_f((float)amd_tensor_get_f64(a, it.off[0]), (float)amd_tensor_get_f64(&bv, it.off[1])));
  } else if (o->dtype == AMD_DOUBLE) {
    double *Y = o->data;
    for (int64_t i = 0; i < total; i++, bc_next(&it))
      Y[i] = pow_d(amd_tensor_get_f64(a, it.off[0]), amd_tensor_get_f64(&bv, it.off[1]));
  } else if (pow_int_dtype(bv.dtype)) {
    for (int64_t i = 0; i < total; i++, bc_next(&it))
      amd_tensor_set_i64(o, i, pow_i64(amd_tensor_get_i64(a, it.off[0]), amd_tensor_get_i64(&bv, it.off[1])));
  } else {
    for (int64_t i = 0; i < total; i++, bc_next(&it))
      amd_tensor_set_i64(o, i, pow_trunc_i64(pow((double)amd_tensor_get_i64(a, it.off[0]),
                                                 amd_tensor_get_f64(&bv, it.off[1]))));
  }
  return 0;
}

/* The two partial derivatives of x^e times g, in T's precision (PyTorch's zeros, see the header). */
#define POW_GRADS(T, POWFN, LOGFN)                                                                  \
  static void pow_grads_##T(T x, T e, T g, double *dx, double *de) {                                \
    *dx = e == (T)0 ? 0.0 : (double)(g * e * POWFN(x, e - (T)1));                                  \
    *de = (x == (T)0 && e >= (T)0) ? 0.0 : (double)(g * POWFN(x, e) * LOGFN(x));                    \
  }
POW_GRADS(float, pow_f, logf)
POW_GRADS(double, pow_d, log)

/* Adds the double sums s (n elements) into the float or double gradient d. */
static void grad_add_sums(amd_tensor *d, const double *s, int64_t n) {
  if (d->dtype == AMD_FLOAT) {
    float *p = d->data;
    for (int64_t i = 0; i < n; i++) p[i] += (float)s[i];
  } else {
    double *p = d->data;
    for (int64_t i = 0; i < n; i++) p[i] += s[i];
  }
}

static int pow_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                        const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  (void)ctx;
  if (!dout[0] || (!din[0] && !din[1])) return 0;
  const amd_tensor *a = in[0], *o = &out[0];
  amd_tensor bv;
  if (amd_ew_operand_b(n, a, in[1], &bv, st)) return -1;
  if (grad_dtype_ok(o->dtype, st)) return -1;
  if (din[1] && bv.dtype != AMD_FLOAT && bv.dtype != AMD_DOUBLE)
    return amd_fail(st, "the exponent's gradient needs a float or double exponent (got %s)",
                    amd_dtype_name(bv.dtype));
  int64_t total = amd_tensor_numel(o), na = amd_tensor_numel(a), nb = amd_tensor_numel(&bv);
  double *sa = din[0] ? calloc((size_t)(na ? na : 1), sizeof *sa) : NULL;
  double *sb = din[1] ? calloc((size_t)(nb ? nb : 1), sizeof *sb) : NULL;
  if ((din[0] && !sa) || (din[1] && !sb)) {
    free(sa), free(sb);
    return amd_fail(st, "out of memory");
  }
  const amd_tensor *ops[2] = {a, &bv};
  bc_iter it;
  bc_init(&it, o, ops, 2);
  for (int64_t i = 0; i < total; i++, bc_next(&it)) {
    double dx, de;
    if (o->dtype == AMD_FLOAT)
      pow_grads_float(((const float *)a->data)[it.off[0]], (float)amd_tensor_get_f64(&bv, it.off[1]),
                      ((const float *)dout[0]->data)[i], &dx, &de);
    else
      pow_grads_double(((const double *)a->data)[it.off[0]], amd_tensor_get_f64(&bv, it.off[1]),
                       ((const double *)dout[0]->data)[i], &dx, &de);
    if (sa) sa[it.off[0]] += dx;
    if (sb) sb[it.off[1]] += de;
  }
  if (sa) grad_add_sums(din[0], sa, na);
  if (sb) grad_add_sums(din[1], sb, nb);
  free(sa);
  free(sb);
  return 0;
}

const amd_op amd_op_Pow = {.name = "Pow",
                           .idx = AMD_OP_IDX_Pow,
                           .since = {1, 7, 12, 13, 15},
                           .parse = ew_parse,
                           .infer = pow_infer,
                           .forward = pow_forward,
                           .backward = pow_backward,
                           .bwd_unread_out = 1};

/* ================================================================ Min, Max
 *
 * Y = the elementwise minimum / maximum of one or more inputs of one dtype
 * (float, double, float16, bfloat16, every integer type). Opset 6 requires
 * equal shapes; from opset 8 the inputs broadcast numpy-style (every input
 * against the running output shape). One input is a copy. The inputs are
 * folded left to right: y = x0, then y = xk where xk is strictly greater
 * (Max) / smaller (Min) than y or is NaN, so ties keep the earlier input and
 * a NaN anywhere gives NaN.
 *
 * Backward (float, double): dY goes to the input the fold chose for that
 * element (ties: the first of the tied inputs), summed over that input's
 * broadcast axes (in double). The output is not read (bwd_unread_out). */

static int mm_dtype_ok(amd_dtype t) { return is_float_dtype(t) || pow_int_dtype(t); }

static int mm_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (n->n_in < 1) return amd_fail(st, "needs at least one input");
  amd_tensor o = {0};
  for (int k = 0; k < n->n_in; k++) {
    if (!in[k]) return amd_fail(st, "input %d is missing", k);
    if (in[k]->dtype != in[0]->dtype)
      return amd_fail(st, "input dtypes differ (%s and %s)", amd_dtype_name(in[0]->dtype),
                      amd_dtype_name(in[k]->dtype));
    if (k == 0) {
      if (!mm_dtype_ok(in[0]->dtype)) return amd_fail(st, "unsupported dtype %s", amd_dtype_name(in[0]->dtype));
      amd_tensor_set_shape(&o, in[0]->dtype, in[0]->rank, in[0]->dims);
      continue;
    }
    if (n->since < 8) {
      if (!amd_same_shape(in[0], in[k])) {
        char s0[128], sk[128];
        return amd_fail(st, "shapes %s and %s differ (opset %d does not broadcast)",
                        amd_shape_str(in[0], s0, sizeof s0), amd_shape_str(in[k], sk, sizeof sk), n->since);
      }
      continue;
    }
    amd_tensor prev = o;
    if (amd_broadcast_shape(&prev, in[k], &o, st)) return -1;
  }
  amd_tensor_set_shape(&out[0], in[0]->dtype, o.rank, o.dims);
  return 0;
}

/* 1 when candidate c replaces the current value y (see the header) */
#define MM_PICK_T(T, V)                                                                             \
  {                                                                                                 \
    const T v = V(c), w = V(y);                                                                     \
    return v != v || (is_max ? v > w : v < w);                                                      \
  }
#define MM_RAW(T) *(const T *)
#define MM_H(p) amd_half_to_float(*(const uint16_t *)(p))
#define MM_BF(p) amd_bf16_to_float(*(const uint16_t *)(p))
static int mm_pick(amd_dtype t, const void *c, const void *y, int is_max) {
  switch (t) {
  case AMD_FLOAT: MM_PICK_T(float, MM_RAW(float))
  case AMD_DOUBLE: MM_PICK_T(double, MM_RAW(double))
  case AMD_FLOAT16: MM_PICK_T(float, MM_H)
  case AMD_BFLOAT16: MM_PICK_T(float, MM_BF)
  case AMD_INT8: MM_PICK_T(int8_t, MM_RAW(int8_t))
  case AMD_INT16: MM_PICK_T(int16_t, MM_RAW(int16_t))
  case AMD_INT32: MM_PICK_T(int32_t, MM_RAW(int32_t))
  case AMD_INT64: MM_PICK_T(int64_t, MM_RAW(int64_t))
  case AMD_UINT8: MM_PICK_T(uint8_t, MM_RAW(uint8_t))
  case AMD_UINT16: MM_PICK_T(uint16_t, MM_RAW(uint16_t))
  case AMD_UINT32: MM_PICK_T(uint32_t, MM_RAW(uint32_t))
  case AMD_UINT64: MM_PICK_T(uint64_t, MM_RAW(uint64_t))
  default: return 0;
  }
}

static int mm_forward(int is_max, const amd_node *n, const amd_tensor *const *in, amd_tensor *out,
                      amd_status *st) {
  amd_tensor *o = &out[0];
  int64_t total = amd_tensor_numel(o);
  size_t es;
  if (elem_size(o, "the output", &es, st)) return -1;
  char *y = o->data;
  for (int k = 0; k < n->n_in && total > 0; k++) {
    const char *x = in[k]->data;
    const amd_tensor *ops[1] = {in[k]};
    bc_iter it;
    bc_init(&it, o, ops, 1);
    for (int64_t i = 0; i < total; i++, bc_next(&it)) {
      const char *c = x + it.off[0] * (int64_t)es;
      char *p = y + i * (int64_t)es;
      if (k == 0 || mm_pick(o->dtype, c, p, is_max)) copy_elem(p, c, es);
    }
  }
  return 0;
}

static int mm_backward(int is_max, const amd_node *n, const amd_tensor *const *in, const amd_tensor *out,
                       const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  if (!dout[0]) return 0;
  const amd_tensor *o = &out[0];
  if (grad_dtype_ok(o->dtype, st)) return -1;
  int64_t total = amd_tensor_numel(o);
  int want = 0;
  for (int k = 0; k < n->n_in; k++) want |= din[k] != NULL;
  if (!want || total == 0) return 0;
  /* the fold again, in double (exact for float and double), keeping the chosen input */
  double *best = malloc((size_t)total * sizeof *best);
  int *arg = malloc((size_t)total * sizeof *arg);
  if (!best || !arg) {
    free(best), free(arg);
    return amd_fail(st, "out of memory");
  }
  for (int k = 0; k < n->n_in; k++) {
    const amd_tensor *ops[1] = {in[k]};
    bc_iter it;
    bc_init(&it, o, ops, 1);
    for (int64_t i = 0; i < total; i++, bc_next(&it)) {
      double v = amd_tensor_get_f64(in[k], it.off[0]);
      if (k == 0 || v != v || (is_max ? v > best[i] : v < best[i])) best[i] = v, arg[i] = k;
    }
  }
  free(best);
  int rc = 0;
  for (int k = 0; k < n->n_in && rc == 0; k++) {
    if (!din[k]) continue;
    int64_t nk = amd_tensor_numel(in[k]);
    double *s = calloc((size_t)(nk ? nk : 1), sizeof *s);
    if (!s) {
      rc = amd_fail(st, "out of memory");
      break;
    }
    const amd_tensor *ops[1] = {in[k]};
    bc_iter it;
    bc_init(&it, o, ops, 1);
    for (int64_t i = 0; i < total; i++, bc_next(&it))
      if (arg[i] == k) s[it.off[0]] += amd_tensor_get_f64(dout[0], i);
    grad_add_sums(din[k], s, nk);
    free(s);
  }
  free(arg);
  return rc;
}

static int max_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                       amd_status *st) {
  (void)ctx;
  return mm_forward(1, n, in, out, st);
}
static int min_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                       amd_status *st) {
  (void)ctx;
  return mm_forward(0, n, in, out, st);
}
static int max_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                        const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  (void)ctx;
  return mm_backward(1, n, in, out, dout, din, st);
}
static int min_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                        const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  (void)ctx;
  return mm_backward(0, n, in, out, dout, din, st);
}

const amd_op amd_op_Min = {.name = "Min",
                           .idx = AMD_OP_IDX_Min,
                           .since = {6, 8, 12, 13},
                           .infer = mm_infer,
                           .forward = min_forward,
                           .backward = min_backward,
                           .bwd_unread_out = 1};
const amd_op amd_op_Max = {.name = "Max",
                           .idx = AMD_OP_IDX_Max,
                           .since = {6, 8, 12, 13},
                           .infer = mm_infer,
                           .forward = max_forward,
                           .backward = max_backward,
                           .bwd_unread_out = 1};

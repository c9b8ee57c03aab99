/* Selection, comparisons, logic and generated tensors: Where, Equal, Less,
 * Greater, LessOrEqual, GreaterOrEqual, Not, And, Or, Xor, ConstantOfShape,
 * Range. The masks and shape arithmetic of the TorchScript exports of
 * transformers (nn.MultiheadAttention, torchvision's ViT and Swin) are built
 * from these.
 *
 * Binary and ternary ops broadcast numpy-style (multidirectional) and walk
 * the broadcast element by element (bcast_iter.h). Only Where has a gradient;
 * the others have no backward (their outputs are bool or integer, or a
 * generated tensor with no float input to differentiate). Bool tensors hold
 * one byte, 0 or 1, and are read as "nonzero is true". */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bcast_iter.h"
#include "shape_util.h"

/* The broadcast shape of n operands into o (rank and dims only). */
static int bcast_all(const amd_tensor *const *ops, int n, amd_tensor *o, amd_status *st) {
  memset(o, 0, sizeof *o);
  amd_tensor_set_shape(o, ops[0]->dtype, ops[0]->rank, ops[0]->dims);
  for (int k = 1; k < n; k++) {
    amd_tensor prev = *o;
    if (amd_broadcast_shape(&prev, ops[k], o, st)) return -1;
  }
  return 0;
}

/* ================================================================ Where
 *
 * Y = cond ? X : Y elementwise, the three inputs broadcast together (opset 9;
 * opset 16 only adds bfloat16). cond must be bool; X and Y share any dtype
 * with a size (float, double, the integers, bool, float16, bfloat16); the
 * output has that dtype.
 *
 * Backward (float, double): dX += dY where cond, dY += dY where !cond, each
 * summed over its broadcast axes (in double). cond gets no gradient
 * (nondiff_inputs); the backward reads cond's data and only the shapes of X,
 * Y and the output (bwd_unread_in, bwd_unread_out). */

static int where_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (n->n_in < 3 || !in[0] || !in[1] || !in[2]) return amd_fail(st, "needs three inputs (condition, X, Y)");
  if (in[0]->dtype != AMD_BOOL)
    return amd_fail(st, "the condition has dtype %s (must be bool)", amd_dtype_name(in[0]->dtype));
  if (in[1]->dtype != in[2]->dtype)
    return amd_fail(st, "X and Y dtypes differ (%s and %s)", amd_dtype_name(in[1]->dtype),
                    amd_dtype_name(in[2]->dtype));
  size_t es;
  if (elem_size(in[1], "X", &es, st)) return -1;
  amd_tensor o;
  if (bcast_all(in, 3, &o, st)) return -1;
  amd_tensor_set_shape(&out[0], in[1]->dtype, o.rank, o.dims);
  return 0;
}

static int where_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                         amd_status *st) {
  (void)n, (void)ctx, (void)st;
  amd_tensor *o = &out[0];
  int64_t total = amd_tensor_numel(o);
  if (total == 0) return 0;
  const int64_t es = (int64_t)amd_dtype_size(o->dtype);
  const uint8_t *c = in[0]->data;
  const char *x = in[1]->data, *y = in[2]->data;
  char *p = o->data;
  bc_iter it;
  bc_init(&it, o, in, 3);
  for (int64_t i = 0; i < total; i++, bc_next(&it))
    copy_elem(p + i * es, c[it.off[0]] ? x + it.off[1] * es : y + it.off[2] * es, (size_t)es);
  return 0;
}

static int where_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                          const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  (void)n, (void)ctx;
  if (!dout[0] || (!din[1] && !din[2])) return 0;
  const amd_tensor *o = &out[0];
  if (grad_dtype_ok(o->dtype, st)) return -1;
  int64_t total = amd_tensor_numel(o), nx = amd_tensor_numel(in[1]), ny = amd_tensor_numel(in[2]);
  double *sx = din[1] ? calloc((size_t)(nx ? nx : 1), sizeof *sx) : NULL;
  double *sy = din[2] ? calloc((size_t)(ny ? ny : 1), sizeof *sy) : NULL;
  if ((din[1] && !sx) || (din[2] && !sy)) {
    free(sx), free(sy);
    return amd_fail(st, "out of memory");
  }
  const uint8_t *c = in[0]->data;
  bc_iter it;
  bc_init(&it, o, in, 3);
  for (int64_t i = 0; i < total; i++, bc_next(&it)) {
    double g = o->dtype == AMD_FLOAT ? (double)((const float *)dout[0]->data)[i]
                                     : ((const double *)dout[0]->data)[i];
    if (c[it.off[0]]) {
      if (sx) sx[it.off[1]] += g;
    } else if (sy) {
      sy[it.off[2]] += g;
    }
  }
  for (int k = 1; k <= 2; k++) {
    double *s = k == 1 ? sx : sy;
    if (!s) continue;
    int64_t nk = k == 1 ? nx : ny;
    if (din[k]->dtype == AMD_FLOAT) {
      float *d = din[k]->data;
      for (int64_t i = 0; i < nk; i++) d[i] += (float)s[i];
    } else {
      double *d = din[k]->data;
      for (int64_t i = 0; i < nk; i++) d[i] += s[i];
    }
  }
  free(sx);
  free(sy);
  return 0;
}

const amd_op amd_op_Where = {.name = "Where",
                             .idx = AMD_OP_IDX_Where,
                             .since = {9, 16},
                             .infer = where_infer,
                             .forward = where_forward,
                             .backward = where_backward,
                             .nondiff_inputs = 1,
                             .bwd_unread_in = 6,
                             .bwd_unread_out = 1};

/* ================================================================ comparisons
 *
 * Equal (7, 11, 13), Less and Greater (7, 9, 13), LessOrEqual and
 * GreaterOrEqual (12, 16): A op B elementwise into a bool tensor, A and B of
 * one dtype (any float or integer dtype, or bool), broadcast numpy-style.
 * The later versions only widen the dtypes, so every version runs the same
 * code. Integers compare exactly in their own type (int64 and uint64
 * included), floats in double (float16 and bfloat16 converted); a NaN
 * compares unequal, neither less nor greater, to everything. */

enum { CMP_EQ, CMP_LT, CMP_GT, CMP_LE, CMP_GE };

static int cmp_dtype_ok(amd_dtype t) {
  return is_float_dtype(t) || t == AMD_BOOL || t == AMD_INT8 || t == AMD_INT16 || t == AMD_INT32 ||
         t == AMD_INT64 || t == AMD_UINT8 || t == AMD_UINT16 || t == AMD_UINT32 || t == AMD_UINT64;
}

/* -1, 0, 1 for less, equal, greater; 2 when unordered (NaN) */
#define CMP3(v, w) ((v) < (w) ? -1 : (v) > (w) ? 1 : (v) == (w) ? 0 : 2)
#define CMP_CASE(DT, T)                                                                             \
  case DT: {                                                                                        \
    const T v = ((const T *)a)[ia], w = ((const T *)b)[ib];                                         \
    return CMP3(v, w);                                                                              \
  }
static int cmp_at(amd_dtype t, const void *a, int64_t ia, const void *b, int64_t ib) {
  switch (t) {
  CMP_CASE(AMD_FLOAT, float)
  CMP_CASE(AMD_DOUBLE, double)
  CMP_CASE(AMD_INT8, int8_t)
  CMP_CASE(AMD_INT16, int16_t)
  CMP_CASE(AMD_INT32, int32_t)
  CMP_CASE(AMD_INT64, int64_t)
  CMP_CASE(AMD_UINT8, uint8_t)
  CMP_CASE(AMD_UINT16, uint16_t)
  CMP_CASE(AMD_UINT32, uint32_t)
  CMP_CASE(AMD_UINT64, uint64_t)
  case AMD_BOOL: {
    const int v = ((const uint8_t *)a)[ia] != 0, w = ((const uint8_t *)b)[ib] != 0;
    return CMP3(v, w);
  }
  case AMD_FLOAT16: {
    const float v = amd_half_to_float(((const uint16_t *)a)[ia]), w = amd_half_to_float(((const uint16_t *)b)[ib]);
    return CMP3(v, w);
  }
  default: { /* bfloat16 (infer admits nothing else) */
    const float v = amd_bf16_to_float(((const uint16_t *)a)[ia]), w = amd_bf16_to_float(((const uint16_t *)b)[ib]);
    return CMP3(v, w);
  }
  }
}

/* Binary ops with a bool output: the comparisons (any dtype cmp_dtype_ok
 * admits) and And / Or / Xor (bool_only). */
static int bool_binary_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, int bool_only,
                             amd_status *st) {
  if (n->n_in < 2 || !in[0] || !in[1]) return amd_fail(st, "needs two inputs");
  const amd_tensor *a = in[0], *b = in[1];
  if (a->dtype != b->dtype)
    return amd_fail(st, "input dtypes differ (%s and %s)", amd_dtype_name(a->dtype), amd_dtype_name(b->dtype));
  if (bool_only ? a->dtype != AMD_BOOL : !cmp_dtype_ok(a->dtype))
    return amd_fail(st, "unsupported dtype %s%s", amd_dtype_name(a->dtype), bool_only ? " (must be bool)" : "");
  amd_tensor o;
  if (bcast_all(in, 2, &o, st)) return -1;
  amd_tensor_set_shape(&out[0], AMD_BOOL, o.rank, o.dims);
  return 0;
}

static int cmp_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  return bool_binary_infer(n, in, out, 0, st);
}

static int cmp_forward(int op, const amd_tensor *const *in, amd_tensor *out) {
  amd_tensor *o = &out[0];
  int64_t total = amd_tensor_numel(o);
  uint8_t *r = o->data;
  const amd_tensor *a = in[0], *b = in[1];
  bc_iter it;
  bc_init(&it, o, in, 2);
  for (int64_t i = 0; i < total; i++, bc_next(&it)) {
    int c = cmp_at(a->dtype, a->data, it.off[0], b->data, it.off[1]);
    int v;
    switch (op) {
    case CMP_EQ: v = c == 0; break;
    case CMP_LT: v = c == -1; break;
    case CMP_GT: v = c == 1; break;
    case CMP_LE: v = c == -1 || c == 0; break;
    default: v = c == 1 || c == 0; break;
    }
    r[i] = (uint8_t)v;
  }
  return 0;
}

#define CMP_OP(NAME, OP, ...)                                                                       \
  static int NAME##_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out, \
                            amd_status *st) {                                                       \
    (void)n, (void)ctx, (void)st;                                                                   \
    return cmp_forward(OP, in, out);                                                                \
  }                                                                                                 \
  const amd_op amd_op_##NAME = {.name = #NAME,                                                      \
                                .idx = AMD_OP_IDX_##NAME,                                           \
                                .since = {__VA_ARGS__},                                             \
                                .infer = cmp_infer,                                                 \
                                .forward = NAME##_forward};

CMP_OP(Equal, CMP_EQ, 7, 11, 13)
CMP_OP(Less, CMP_LT, 7, 9, 13)
CMP_OP(Greater, CMP_GT, 7, 9, 13)
CMP_OP(LessOrEqual, CMP_LE, 12, 16)
CMP_OP(GreaterOrEqual, CMP_GE, 12, 16)

/* ================================================================ Not, And, Or, Xor
 *
 * Not (1): elementwise negation of a bool tensor. And, Or, Xor (7): of two
 * bool tensors, broadcast numpy-style (the legacy broadcast attributes of
 * version 1 are not supported: version 1 is not bound). */

enum { LOG_AND, LOG_OR, LOG_XOR };

static int not_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (n->n_in < 1 || !in[0]) return amd_fail(st, "input X is required");
  if (in[0]->dtype != AMD_BOOL) return amd_fail(st, "X has dtype %s (must be bool)", amd_dtype_name(in[0]->dtype));
  amd_tensor_set_shape(&out[0], AMD_BOOL, in[0]->rank, in[0]->dims);
  return 0;
}

static int not_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                       amd_status *st) {
  (void)n, (void)ctx, (void)st;
  const uint8_t *x = in[0]->data;
  uint8_t *y = out[0].data;
  int64_t total = amd_tensor_numel(&out[0]);
  for (int64_t i = 0; i < total; i++) y[i] = x[i] == 0;
  return 0;
}

const amd_op amd_op_Not = {.name = "Not", .idx = AMD_OP_IDX_Not, .since = {1}, .infer = not_infer, .forward = not_forward};

static int logic_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  return bool_binary_infer(n, in, out, 1, st);
}

static int logic_forward(int op, const amd_tensor *const *in, amd_tensor *out) {
  amd_tensor *o = &out[0];
  int64_t total = amd_tensor_numel(o);
  uint8_t *r = o->data;
  const uint8_t *a = in[0]->data, *b = in[1]->data;
  bc_iter it;
  bc_init(&it, o, in, 2);
  for (int64_t i = 0; i < total; i++, bc_next(&it)) {
    int x = a[it.off[0]] != 0, y = b[it.off[1]] != 0;
    r[i] = (uint8_t)(op == LOG_AND ? x && y : op == LOG_OR ? x || y : x != y);
  }
  return 0;
}

#define LOGIC_OP(NAME, OP)                                                                          \
  static int NAME##_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out, \
                            amd_status *st) {                                                       \
    (void)n, (void)ctx, (void)st;                                                                   \
    return logic_forward(OP, in, out);                                                              \
  }                                                                                                 \
  const amd_op amd_op_##NAME = {.name = #NAME,                                                      \
                                .idx = AMD_OP_IDX_##NAME,                                           \
                                .since = {7},                                                       \
                                .infer = logic_infer,                                               \
                                .forward = NAME##_forward};

LOGIC_OP(And, LOG_AND)
LOGIC_OP(Or, LOG_OR)
LOGIC_OP(Xor, LOG_XOR)

/* ================================================================ ConstantOfShape
 *
 * A tensor of the shape given by the 1-D int64 input, every element the
 * attribute `value` (a one-element tensor; default float 0). The output has
 * value's dtype: float, double, float16, bfloat16, the integers or bool.
 * Versions 9, 20, 21, 23, 24, 25: the later ones only add dtypes (bfloat16
 * and float8 in 20, 4-bit integers in 21, float4 in 23, float8e8m0 in 24,
 * 2-bit integers in 25) and keep the semantics, so all bind the same code;
 * a value of a dtype this project does not have fails to load. An empty
 * shape gives a scalar; a zero dim an empty tensor; a negative dim is an
 * error. */

typedef struct cos_attrs {
  amd_dtype dtype;
  unsigned char value[16]; /* one element */
} cos_attrs;

static int cos_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  cos_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->dtype = AMD_FLOAT; /* value bytes zeroed: float 0 */
  amd_tensor t = {0};
  int r = amd_attr_tensor(p, "value", &t, st);
  if (r < 0) return -1;
  if (r == 1) return 0;
  size_t es = amd_dtype_size(t.dtype);
  int rc = 0;
  if (es == 0 || es > sizeof a->value)
    rc = amd_fail(st, "value has unsupported dtype %s", amd_dtype_name(t.dtype));
  else if (amd_tensor_numel(&t) != 1)
    rc = amd_fail(st, "value must hold one element (has %lld)", (long long)amd_tensor_numel(&t));
  else
    a->dtype = t.dtype, memcpy(a->value, t.data, es);
  amd_tensor_free(&t);
  return rc;
}

static int cos_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (need_in(n, in, 0, "input", st)) return -1;
  if (in[0]->dtype != AMD_INT64)
    return amd_fail(st, "the shape input has dtype %s (must be int64)", amd_dtype_name(in[0]->dtype));
  int64_t dims[AMD_MAX_RANK];
  int rank = read_ints(in[0], dims, AMD_MAX_RANK, "the shape input", st);
  if (rank < 0) return -1;
  for (int i = 0; i < rank; i++)
    if (dims[i] < 0) return amd_fail(st, "the shape has a negative dim (%lld)", (long long)dims[i]);
  const cos_attrs *a = n->attrs;
  amd_tensor_set_shape(&out[0], a->dtype, rank, dims);
  return 0;
}

static int cos_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                       amd_status *st) {
  (void)ctx, (void)in, (void)st;
  const cos_attrs *a = n->attrs;
  size_t es = amd_dtype_size(a->dtype);
  char *p = out[0].data;
  int64_t total = amd_tensor_numel(&out[0]);
  for (int64_t i = 0; i < total; i++) copy_elem(p + i * (int64_t)es, (const char *)a->value, es);
  return 0;
}

const amd_op amd_op_ConstantOfShape = {.name = "ConstantOfShape",
                                       .idx = AMD_OP_IDX_ConstantOfShape,
                                       .since = {9, 20, 21, 23, 24, 25},
                                       .parse = cos_parse,
                                       .infer = cos_infer,
                                       .forward = cos_forward};

/* ================================================================ Range
 *
 * Version 11: output[i] = start + i * delta for i < max(ceil((limit - start)
 * / delta), 0), from three scalar (one-element) inputs of one dtype: float,
 * double, int16, int32, int64. Integers are counted exactly (int64) and
 * their values computed in int64 (wrapping into the narrower types); floats
 * count and compute in double, rounded to the output dtype once. delta = 0,
 * a non-finite count and a result larger than the tensor size limit are
 * errors. */

static int range_count(const amd_tensor *const *in, int64_t *count, amd_status *st) {
  for (int k = 0; k < 3; k++) {
    static const char *names[3] = {"start", "limit", "delta"};
    if (!in[k]) return amd_fail(st, "input %s is missing", names[k]);
    if (amd_tensor_numel(in[k]) != 1)
      return amd_fail(st, "%s must be a scalar (has %lld elements)", names[k], (long long)amd_tensor_numel(in[k]));
    if (in[k]->dtype != in[0]->dtype)
      return amd_fail(st, "input dtypes differ (%s and %s)", amd_dtype_name(in[0]->dtype),
                      amd_dtype_name(in[k]->dtype));
  }
  amd_dtype t = in[0]->dtype;
  int64_t limit_n = AMD_MAX_TENSOR_BYTES / 8;
  if (t == AMD_INT16 || t == AMD_INT32 || t == AMD_INT64) {
    int64_t s = amd_tensor_get_i64(in[0], 0), l = amd_tensor_get_i64(in[1], 0), d = amd_tensor_get_i64(in[2], 0);
    if (d == 0) return amd_fail(st, "delta is 0");
    int64_t diff;
    if (__builtin_sub_overflow(l, s, &diff) || (diff == INT64_MIN && d == -1))
      return amd_fail(st, "the range is too large");
    int64_t c = 0;
    if (d > 0 && diff > 0) c = diff / d + (diff % d != 0);
    if (d < 0 && diff < 0) c = diff / d + (diff % d != 0); /* both negative: the quotient is positive */
    if (c > limit_n) return amd_fail(st, "the range has %lld elements (too many)", (long long)c);
    *count = c;
    return 0;
  }
  if (t != AMD_FLOAT && t != AMD_DOUBLE)
    return amd_fail(st, "unsupported dtype %s (float, double, int16, int32, int64)", amd_dtype_name(t));
  double s = amd_tensor_get_f64(in[0], 0), l = amd_tensor_get_f64(in[1], 0), d = amd_tensor_get_f64(in[2], 0);
  if (d == 0) return amd_fail(st, "delta is 0");
  double c = ceil((l - s) / d);
  if (isnan(c)) return amd_fail(st, "the element count is not a number (start %g, limit %g, delta %g)", s, l, d);
  if (c > (double)limit_n) return amd_fail(st, "the range has %g elements (too many)", c);
  *count = c > 0 ? (int64_t)c : 0;
  return 0;
}

static int range_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (n->n_in < 3) return amd_fail(st, "needs three inputs (start, limit, delta)");
  int64_t c;
  if (range_count(in, &c, st)) return -1;
  amd_tensor_set_shape(&out[0], in[0]->dtype, 1, &c);
  return 0;
}

static int range_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                         amd_status *st) {
  (void)n, (void)ctx, (void)st;
  amd_tensor *o = &out[0];
  int64_t c = amd_tensor_numel(o);
  if (o->dtype == AMD_FLOAT || o->dtype == AMD_DOUBLE) {
    double s = amd_tensor_get_f64(in[0], 0), d = amd_tensor_get_f64(in[2], 0);
    for (int64_t i = 0; i < c; i++) amd_tensor_set_f64(o, i, s + (double)i * d);
  } else {
    uint64_t s = (uint64_t)amd_tensor_get_i64(in[0], 0), d = (uint64_t)amd_tensor_get_i64(in[2], 0);
    for (int64_t i = 0; i < c; i++) amd_tensor_set_i64(o, i, (int64_t)(s + (uint64_t)i * d));
  }
  return 0;
}

const amd_op amd_op_Range = {.name = "Range",
                             .idx = AMD_OP_IDX_Range,
                             .since = {11},
                             .infer = range_infer,
                             .forward = range_forward};

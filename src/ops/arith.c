/* More elementwise arithmetic with numpy broadcasting (bcast_iter.h): Mod and
 * BitShift (two inputs; BitShift forward only), Sum and Mean (one or more
 * inputs).
 *
 * Mod (10, 28; 13 only adds bfloat16), A mod B of one dtype, fmod 0 (default)
 * or 1:
 *   fmod 1: A - trunc(A / B) B, the sign of A: C's fmod for float, double,
 *           float16 and bfloat16 (the 16-bit ones in float), C's % for
 *           integers;
 *   fmod 0: A - floor(A / B) B, the sign of B (Python's %): integers at every
 *           version; floating point only from version 28 (before it the
 *           spec allows only integers, so a float Mod-10 with fmod 0 fails),
 *           with the special cases of Mod-28 (a zero result takes B's sign;
 *           B = +-inf and a finite A of the other sign gives B).
 *   An integer B = 0 gives 0 (C leaves it undefined); so does MIN % -1.
 * Backward (float, double; PyTorch's fmod / remainder): dA += dY, dB -= dY q
 * with q = trunc(A / B) (fmod 1) or floor(A / B) (fmod 0), over the
 * broadcast axes; the output is not read.
 *
 * BitShift (11: uint8..uint64; 28 adds int8..int64), direction "LEFT" or
 * "RIGHT" (required): X << Y or X >> Y. The bits shifted out are dropped; a
 * shift Y < 0 or >= the width of T gives 0, or -1 for a right shift of a
 * negative X (the sign fill, version 28); a signed right shift is arithmetic.
 *
 * Sum and Mean (1 and 6, whose consumed_inputs is ignored: equal shapes; 8:
 * numpy broadcasting of all inputs; 13 only adds bfloat16): Y = X0 + X1 + ...
 * folded left to right in the dtype (float, double; float16 and bfloat16
 * rounded after each step), Mean then divides by the count.
 * Backward (float, double): dXk += dY (Mean: dY / n) summed over Xk's
 * broadcast axes (in double). Neither the inputs' data nor the output's is
 * read (bwd_unread_in / bwd_unread_out). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attrs.h"
#include "bcast_iter.h"
#include "shape_util.h"

static int is_sint(amd_dtype t) {
  return t == AMD_INT8 || t == AMD_INT16 || t == AMD_INT32 || t == AMD_INT64;
}
static int is_uint(amd_dtype t) {
  return t == AMD_UINT8 || t == AMD_UINT16 || t == AMD_UINT32 || t == AMD_UINT64;
}

/* Two inputs of one dtype, broadcast into the output (dtype of A). */
static int binary_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (n->n_in != 2 || !in[0] || !in[1]) return amd_fail(st, "%s takes two inputs", n->op->name);
  if (in[0]->dtype != in[1]->dtype)
    return amd_fail(st, "input dtypes differ (%s and %s)", amd_dtype_name(in[0]->dtype),
                    amd_dtype_name(in[1]->dtype));
  amd_tensor o = {0};
  if (amd_broadcast_shape(in[0], in[1], &o, st)) return -1;
  amd_tensor_set_shape(&out[0], in[0]->dtype, o.rank, o.dims);
  return 0;
}

/* ================================================================ Mod */

typedef struct mod_attrs {
  int fmod;
} mod_attrs;

static int mod_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  mod_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  int64_t f = amd_attr_int(p, "fmod", 0);
  if (f != 0 && f != 1) return amd_fail(st, "Mod: fmod must be 0 or 1 (got %lld)", (long long)f);
  a->fmod = (int)f;
  return 0;
}

static int mod_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (binary_infer(n, in, out, st)) return -1;
  amd_dtype t = in[0]->dtype;
  int flt = t == AMD_FLOAT || t == AMD_DOUBLE || t == AMD_FLOAT16 || t == AMD_BFLOAT16;
  if (!flt && !is_sint(t) && !is_uint(t)) return amd_fail(st, "Mod: unsupported dtype %s", amd_dtype_name(t));
  if (flt && !((const mod_attrs *)n->attrs)->fmod && n->since < 28)
    return amd_fail(st, "Mod-%d: fmod must be 1 for %s inputs (fmod 0 is for integers before version 28)",
                    n->since, amd_dtype_name(t));
  return 0;
}

/* Python's % for floating point (Mod-28's special cases, see the header). */
static double floor_mod(double a, double b) {
  double r = fmod(a, b);
  if (r == 0) return copysign(0.0, b);
  if ((r < 0) != (b < 0)) r += b;
  return r;
}
static float floor_modf(float a, float b) {
  float r = fmodf(a, b);
  if (r == 0) return copysignf(0.0f, b);
  if ((r < 0) != (b < 0)) r += b;
  return r;
}

static int64_t mod_i64(int64_t a, int64_t b, int fm) {
  if (b == 0 || b == -1) return 0;
  int64_t r = a % b;
  if (!fm && r != 0 && (r < 0) != (b < 0)) r += b;
  return r;
}

static int mod_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                       amd_status *st) {
  (void)ctx, (void)st;
  const int fm = ((const mod_attrs *)n->attrs)->fmod;
  amd_tensor *o = &out[0];
  const int64_t total = amd_tensor_numel(o);
  bc_iter it;
  bc_init(&it, o, in, 2);
  const amd_dtype t = o->dtype;
  for (int64_t i = 0; i < total; i++, bc_next(&it)) {
    if (t == AMD_DOUBLE) {
      double a = ((const double *)in[0]->data)[it.off[0]], b = ((const double *)in[1]->data)[it.off[1]];
      ((double *)o->data)[i] = fm ? fmod(a, b) : floor_mod(a, b);
    } else if (t == AMD_FLOAT || t == AMD_FLOAT16 || t == AMD_BFLOAT16) {
      float a = (float)amd_tensor_get_f64(in[0], it.off[0]), b = (float)amd_tensor_get_f64(in[1], it.off[1]);
      amd_tensor_set_f64(o, i, fm ? fmodf(a, b) : floor_modf(a, b));
    } else if (t == AMD_UINT64) { /* beyond int64 */
      uint64_t a = (uint64_t)amd_tensor_get_i64(in[0], it.off[0]),
               b = (uint64_t)amd_tensor_get_i64(in[1], it.off[1]);
      amd_tensor_set_i64(o, i, (int64_t)(b ? a % b : 0));
    } else {
      amd_tensor_set_i64(
          o, i, mod_i64(amd_tensor_get_i64(in[0], it.off[0]), amd_tensor_get_i64(in[1], it.off[1]), fm));
    }
  }
  return 0;
}

/* dA += dY, dB -= dY q with q = trunc(A / B) (fmod 1) or floor(A / B)
 * (fmod 0), each summed over its broadcast axes in double. */
static int mod_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                        const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  (void)ctx;
  if (!dout[0] || (!din[0] && !din[1])) return 0;
  const amd_tensor *o = &out[0];
  if (grad_dtype_ok(o->dtype, st)) return -1;
  const int fm = ((const mod_attrs *)n->attrs)->fmod;
  const int64_t total = amd_tensor_numel(o), na = amd_tensor_numel(in[0]), nb = amd_tensor_numel(in[1]);
  double *sa = calloc((size_t)(na ? na : 1), sizeof *sa), *sb = calloc((size_t)(nb ? nb : 1), sizeof *sb);
  if (!sa || !sb) {
    free(sa), free(sb);
    return amd_fail(st, "out of memory");
  }
  bc_iter it;
  bc_init(&it, o, in, 2);
  for (int64_t i = 0; i < total; i++, bc_next(&it)) {
    double g = amd_tensor_get_f64(dout[0], i), q;
    if (o->dtype == AMD_FLOAT) {
      float a = ((const float *)in[0]->data)[it.off[0]], b = ((const float *)in[1]->data)[it.off[1]];
      q = fm ? truncf(a / b) : floorf(a / b);
    } else {
      double a = ((const double *)in[0]->data)[it.off[0]], b = ((const double *)in[1]->data)[it.off[1]];
      q = fm ? trunc(a / b) : floor(a / b);
    }
    sa[it.off[0]] += g;
    sb[it.off[1]] -= g * q;
  }
  for (int k = 0; k < 2; k++) {
    const double *s = k ? sb : sa;
    if (din[k])
      for (int64_t j = 0; j < (k ? nb : na); j++)
        amd_tensor_set_f64(din[k], j, amd_tensor_get_f64(din[k], j) + s[j]);
  }
  free(sa), free(sb);
  return 0;
}

const amd_op amd_op_Mod = {.name = "Mod",
                           .idx = AMD_OP_IDX_Mod,
                           .since = {10, 28},
                           .parse = mod_parse,
                           .infer = mod_infer,
                           .forward = mod_forward,
                           .backward = mod_backward,
                           .bwd_unread_out = 1};

/* ================================================================ BitShift */

typedef struct shift_attrs {
  int left;
} shift_attrs;

static int shift_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  shift_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  char buf[16];
  const char *d = amd_attr_string(p, "direction", "", buf, sizeof buf);
  if (strcmp(d, "LEFT") == 0)
    a->left = 1;
  else if (strcmp(d, "RIGHT") == 0)
    a->left = 0;
  else
    return amd_fail(st, "BitShift: direction must be LEFT or RIGHT (got '%s')", d);
  return 0;
}

static int shift_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (binary_infer(n, in, out, st)) return -1;
  amd_dtype t = in[0]->dtype;
  if (!is_uint(t) && !(n->since >= 28 && is_sint(t)))
    return amd_fail(st, "BitShift-%d: unsupported dtype %s (%s)", n->since, amd_dtype_name(t),
                    n->since >= 28 ? "integers only" : "uint8..uint64 only");
  return 0;
}

static int shift_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                         amd_status *st) {
  (void)ctx, (void)st;
  const int left = ((const shift_attrs *)n->attrs)->left;
  amd_tensor *o = &out[0];
  const int64_t total = amd_tensor_numel(o), bits = (int64_t)amd_dtype_size(o->dtype) * 8;
  const int sgn = is_sint(o->dtype);
  bc_iter it;
  bc_init(&it, o, in, 2);
  for (int64_t i = 0; i < total; i++, bc_next(&it)) {
    int64_t x = amd_tensor_get_i64(in[0], it.off[0]), y = amd_tensor_get_i64(in[1], it.off[1]), r;
    if (!sgn && o->dtype == AMD_UINT64 && y < 0) y = bits; /* a huge uint64 amount */
    if (y < 0 || y >= bits)
      r = !left && sgn && x < 0 ? -1 : 0;
    else if (left)
      r = (int64_t)((uint64_t)x << y); /* the store truncates to T */
    else if (sgn)
      r = x >> y; /* arithmetic on the sign-extended value */
    else
      r = (int64_t)((uint64_t)x >> y); /* x zero-extended from T */
    amd_tensor_set_i64(o, i, r);
  }
  return 0;
}

const amd_op amd_op_BitShift = {.name = "BitShift",
                                .idx = AMD_OP_IDX_BitShift,
                                .since = {11, 28},
                                .parse = shift_parse,
                                .infer = shift_infer,
                                .forward = shift_forward};

/* ================================================================ Sum, Mean */

static int sm_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (n->n_in < 1) return amd_fail(st, "%s needs at least one input", n->op->name);
  if (n->n_out != 1) return amd_fail(st, "expected 1 output, got %d", n->n_out);
  amd_tensor o = {0};
  for (int k = 0; k < n->n_in; k++) {
    if (!in[k]) return amd_fail(st, "input %d is missing", k);
    if (in[k]->dtype != in[0]->dtype)
      return amd_fail(st, "input dtypes differ (%s and %s)", amd_dtype_name(in[0]->dtype),
                      amd_dtype_name(in[k]->dtype));
    if (k == 0) {
      if (!is_float_dtype(in[0]->dtype))
        return amd_fail(st, "unsupported dtype %s (float, double, float16, bfloat16)",
                        amd_dtype_name(in[0]->dtype));
      amd_tensor_set_shape(&o, in[0]->dtype, in[0]->rank, in[0]->dims);
    } else if (n->since < 8) {
      if (!amd_same_shape(in[0], in[k])) {
        char s0[128], sk[128];
        return amd_fail(st, "shapes %s and %s differ (%s-%d does not broadcast)",
                        amd_shape_str(in[0], s0, sizeof s0), amd_shape_str(in[k], sk, sizeof sk), n->op->name,
                        n->since);
      }
    } else {
      amd_tensor prev = o;
      if (amd_broadcast_shape(&prev, in[k], &o, st)) return -1;
    }
  }
  amd_tensor_set_shape(&out[0], in[0]->dtype, o.rank, o.dims);
  return 0;
}

static int sm_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                      amd_status *st) {
  (void)ctx, (void)st;
  amd_tensor *o = &out[0];
  const int64_t total = amd_tensor_numel(o);
  const int mean = n->op->idx == AMD_OP_IDX_Mean;
  for (int k = 0; k < n->n_in && total > 0; k++) {
    const amd_tensor *ops[1] = {in[k]};
    bc_iter it;
    bc_init(&it, o, ops, 1);
    if (o->dtype == AMD_FLOAT) {
      const float *x = in[k]->data;
      float *y = o->data;
      for (int64_t i = 0; i < total; i++, bc_next(&it)) y[i] = k ? y[i] + x[it.off[0]] : x[it.off[0]];
    } else if (o->dtype == AMD_DOUBLE) {
      const double *x = in[k]->data;
      double *y = o->data;
      for (int64_t i = 0; i < total; i++, bc_next(&it)) y[i] = k ? y[i] + x[it.off[0]] : x[it.off[0]];
    } else { /* float16, bfloat16: each step rounded to the dtype */
      for (int64_t i = 0; i < total; i++, bc_next(&it))
        amd_tensor_set_f64(o, i,
                           (float)((k ? (float)amd_tensor_get_f64(o, i) : 0.0f) +
                                   (float)amd_tensor_get_f64(in[k], it.off[0])));
    }
  }
  if (mean && n->n_in > 1) {
    if (o->dtype == AMD_FLOAT) {
      float *y = o->data, c = (float)n->n_in;
      for (int64_t i = 0; i < total; i++) y[i] /= c;
    } else {
      for (int64_t i = 0; i < total; i++)
        amd_tensor_set_f64(o, i,
                           o->dtype == AMD_DOUBLE ? amd_tensor_get_f64(o, i) / n->n_in
                                                  : (float)amd_tensor_get_f64(o, i) / (float)n->n_in);
    }
  }
  return 0;
}

static int sm_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                       const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  (void)ctx;
  if (!dout[0]) return 0;
  const amd_tensor *o = &out[0], *dy = dout[0];
  if (grad_dtype_ok(o->dtype, st)) return -1;
  const int64_t total = amd_tensor_numel(o);
  const double scale = n->op->idx == AMD_OP_IDX_Mean ? 1.0 / n->n_in : 1.0;
  for (int k = 0; k < n->n_in; k++) {
    amd_tensor *d = din[k];
    if (!d) continue;
    const int64_t nk = amd_tensor_numel(in[k]);
    if (nk == total) { /* no broadcast: element i of X_k is element i of Y */
      for (int64_t i = 0; i < total; i++)
        amd_tensor_set_f64(d, i,
                           amd_tensor_get_f64(d, i) +
                               (o->dtype == AMD_FLOAT ? (double)(((const float *)dy->data)[i] * (float)scale)
                                                      : ((const double *)dy->data)[i] * scale));
      continue;
    }
    double *s = calloc((size_t)(nk ? nk : 1), sizeof *s);
    if (!s) return amd_fail(st, "out of memory");
    const amd_tensor *ops[1] = {in[k]};
    bc_iter it;
    bc_init(&it, o, ops, 1);
    for (int64_t i = 0; i < total; i++, bc_next(&it)) s[it.off[0]] += amd_tensor_get_f64(dy, i);
    for (int64_t j = 0; j < nk; j++) amd_tensor_set_f64(d, j, amd_tensor_get_f64(d, j) + s[j] * scale);
    free(s);
  }
  return 0;
}

#define SM_OP(NAME)                                                                                          \
  const amd_op amd_op_##NAME = {.name = #NAME,                                                               \
                                .idx = AMD_OP_IDX_##NAME,                                                    \
                                .since = {1, 6, 8},                                                          \
                                .infer = sm_infer,                                                           \
                                .forward = sm_forward,                                                       \
                                .backward = sm_backward,                                                     \
                                .bwd_unread_in = ~0u,                                                        \
                                .bwd_unread_out = 1}
SM_OP(Sum);
SM_OP(Mean);

/* Constant and Cast: a tensor from the node's attributes, and a dtype
 * conversion (the conventions of shape.c; no backward). Constant stores its
 * tensor's data in the node's attribute block, right after the struct.
 * CastLike, Size and EyeLike (their own sections below) read only the dtype
 * or shape of some inputs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "shape_util.h"

/* ---------------------------------------------------------------- Constant */

/* The tensor; its data lies in the same block, right after the struct. */
typedef struct constant_attrs {
  amd_tensor t;
} constant_attrs;

/* Allocates the attrs block for a tensor of this shape and copies data in. */
static int constant_store(amd_node *n, amd_dtype dtype, int rank, const int64_t *dims, const void *data,
                          amd_status *st) {
  amd_tensor tmp = {0};
  amd_tensor_set_shape(&tmp, dtype, rank, dims);
  size_t bytes = amd_tensor_nbytes(&tmp);
  constant_attrs *a = amd_attrs_new(n, sizeof *a + bytes, st);
  if (!a) return -1;
  a->t = tmp;
  a->t.data = a + 1;
  a->t.device = AMD_DEVICE_CPU;
  if (bytes) memcpy(a->t.data, data, bytes);
  return 0;
}

const amd_tensor *amd_constant_tensor(const amd_node *n) {
  return n->op->idx == AMD_OP_IDX_Constant ? &((const constant_attrs *)n->attrs)->t : NULL;
}

static int constant_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  const amd_attr *at;
  amd_tensor t = {0};
  int r = amd_attr_tensor(p, "value", &t, st);
  if (r < 0) return -1;
  if (r == 0) {
    if (amd_dtype_size(t.dtype) == 0) {
      amd_dtype dt = t.dtype;
      amd_tensor_free(&t);
      return amd_fail(st, "Constant of dtype %s is not supported", amd_dtype_name(dt));
    }
    r = constant_store(n, t.dtype, t.rank, t.dims, t.data, st);
    amd_tensor_free(&t);
    return r;
  }
  if ((at = amd_attr_find(p, "value_float")) != NULL)
    return constant_store(n, AMD_FLOAT, 0, NULL, &at->f, st);
  if ((at = amd_attr_find(p, "value_floats")) != NULL) {
    int64_t len = (int64_t)at->n_floats;
    return constant_store(n, AMD_FLOAT, 1, &len, at->floats, st);
  }
  if ((at = amd_attr_find(p, "value_int")) != NULL) return constant_store(n, AMD_INT64, 0, NULL, &at->i, st);
  if ((at = amd_attr_find(p, "value_ints")) != NULL) {
    int64_t len = (int64_t)at->n_ints;
    return constant_store(n, AMD_INT64, 1, &len, at->ints, st);
  }
  if (amd_attr_find(p, "sparse_value")) return amd_fail(st, "Constant with sparse_value is not supported");
  if (amd_attr_find(p, "value_string") || amd_attr_find(p, "value_strings"))
    return amd_fail(st, "Constant with string values is not supported");
  return amd_fail(st, "Constant has no value attribute");
}

static int constant_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  (void)in, (void)st;
  copy_shape(&out[0], &((const constant_attrs *)n->attrs)->t);
  return 0;
}

static int constant_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                            amd_status *st) {
  (void)ctx, (void)in, (void)st;
  const amd_tensor *t = &((const constant_attrs *)n->attrs)->t;
  size_t bytes = amd_tensor_nbytes(t);
  if (bytes) memcpy(out[0].data, t->data, bytes);
  return 0;
}

const amd_op amd_op_Constant = {.name = "Constant",
                                .idx = AMD_OP_IDX_Constant,
                                .since = {1, 9, 11, 12, 13},
                                .parse = constant_parse,
                                .infer = constant_infer,
                                .forward = constant_forward};

/* ---------------------------------------------------------------- Cast */

typedef struct cast_attrs {
  amd_dtype to;
} cast_attrs;

static int cast_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  cast_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  const amd_attr *at = amd_attr_find(p, "to");
  if (!at) return amd_fail(st, "Cast needs a 'to' attribute");
  if (at->has_i) {
    a->to = (amd_dtype)at->i;
  } else if (at->has_s) { /* Cast-1: the type's name */
    char buf[32];
    amd_attr_string(p, "to", "", buf, sizeof buf);
    a->to = AMD_UNDEFINED;
    for (int t = 1; t <= AMD_BFLOAT16; t++) {
      const char *nm = amd_dtype_name((amd_dtype)t);
      size_t k = 0;
      while (nm[k] && buf[k] && (buf[k] | 0x20) == nm[k]) k++;
      if (!nm[k] && !buf[k]) a->to = (amd_dtype)t;
    }
    if (a->to == AMD_UNDEFINED) return amd_fail(st, "Cast to unknown type '%s'", buf);
  } else {
    return amd_fail(st, "Cast 'to' attribute has no value");
  }
  if (a->to == AMD_STRING) return amd_fail(st, "Cast to string is not supported");
  if (amd_dtype_size(a->to) == 0) return amd_fail(st, "Cast to %s is not supported", amd_dtype_name(a->to));
  return 0;
}

static int cast_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (need_in(n, in, 0, "input", st)) return -1;
  const cast_attrs *a = n->attrs;
  if (in[0]->dtype == AMD_STRING) return amd_fail(st, "Cast from string is not supported");
  size_t es;
  if (elem_size(in[0], "input", &es, st)) return -1;
  amd_tensor_set_shape(&out[0], a->to, in[0]->rank, in[0]->dims);
  return 0;
}

/* Converts x into y (same shape, y's dtype): Cast's and CastLike's conversion. */
static void cast_convert(const amd_tensor *x, amd_tensor *y) {
  int64_t cnt = amd_tensor_numel(x);
  if (x->dtype == y->dtype) {
    if (cnt) memcpy(y->data, x->data, amd_tensor_nbytes(x));
  } else if (x->dtype == AMD_FLOAT && y->dtype == AMD_FLOAT16) {
    const float *s = x->data;
    uint16_t *d = y->data;
    for (int64_t i = 0; i < cnt; i++) d[i] = amd_float_to_half(s[i]);
  } else if (x->dtype == AMD_FLOAT16 && y->dtype == AMD_FLOAT) {
    const uint16_t *s = x->data;
    float *d = y->data;
    for (int64_t i = 0; i < cnt; i++) d[i] = amd_half_to_float(s[i]);
  } else if (y->dtype == AMD_BFLOAT16) {
    /* Through float, then truncated to the upper 16 bits (NaN kept quiet):
     * the ONNX reference's conversion for Cast before opset 19 (its test
     * data expect it); amd_float_to_bf16 rounds to nearest even instead. */
    uint16_t *d = y->data;
    for (int64_t i = 0; i < cnt; i++) {
      float f = (float)amd_tensor_get_f64(x, i);
      uint32_t u;
      memcpy(&u, &f, 4);
      d[i] = (uint16_t)(u >> 16);
      if ((u & 0x7fffffffu) > 0x7f800000u) d[i] |= 0x40;
    }
  } else if (!is_float_dtype(x->dtype) && !is_float_dtype(y->dtype)) {
    /* integer / bool to integer / bool: through int64, exact for int64 */
    for (int64_t i = 0; i < cnt; i++) amd_tensor_set_i64(y, i, amd_tensor_get_i64(x, i));
  } else {
    for (int64_t i = 0; i < cnt; i++) amd_tensor_set_f64(y, i, amd_tensor_get_f64(x, i));
  }
}

static int cast_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                        amd_status *st) {
  (void)n, (void)ctx, (void)st;
  cast_convert(in[0], &out[0]);
  return 0;
}

const amd_op amd_op_Cast = {.name = "Cast",
                            .idx = AMD_OP_IDX_Cast,
                            .since = {1, 6, 9, 13},
                            .parse = cast_parse,
                            .infer = cast_infer,
                            .forward = cast_forward};

/* ---------------------------------------------------------------- CastLike
 *
 * CastLike (15): Cast of input 0 to the dtype of input 1 (whose data is not
 * read), with Cast's conversion. Versions 19 to 25 add float8, int4, float4
 * and int2 types and the saturate / round_mode attributes that apply only to
 * them (refused here as by Cast): the equivalents of src/onnx/opset.c. No
 * backward (as Cast). */

static int castlike_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (need_in(n, in, 0, "input", st) || need_in(n, in, 1, "target_type", st)) return -1;
  if (in[0]->dtype == AMD_STRING || in[1]->dtype == AMD_STRING)
    return amd_fail(st, "CastLike from or to string is not supported");
  size_t es;
  if (elem_size(in[0], "input", &es, st) || elem_size(in[1], "target_type", &es, st)) return -1;
  amd_tensor_set_shape(&out[0], in[1]->dtype, in[0]->rank, in[0]->dims);
  return 0;
}

static int castlike_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                            amd_status *st) {
  (void)n, (void)ctx, (void)st;
  cast_convert(in[0], &out[0]);
  return 0;
}

const amd_op amd_op_CastLike = {.name = "CastLike",
                                .idx = AMD_OP_IDX_CastLike,
                                .since = {15},
                                .infer = castlike_infer,
                                .forward = castlike_forward,
                                .nondiff_inputs = 2u,
                                .fwd_unread_in = 2u};

/* ---------------------------------------------------------------- Size
 *
 * Size (1): the number of elements of the input, as an int64 scalar (the
 * input's data is not read). Versions 13 to 25 only add input types: the
 * equivalents of src/onnx/opset.c. No gradient (an integer output). */

static int size_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (need_in(n, in, 0, "data", st)) return -1;
  amd_tensor_set_shape(&out[0], AMD_INT64, 0, NULL);
  return 0;
}

static int size_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                        amd_status *st) {
  (void)n, (void)ctx, (void)st;
  *(int64_t *)out[0].data = amd_tensor_numel(in[0]);
  return 0;
}

const amd_op amd_op_Size = {.name = "Size",
                            .idx = AMD_OP_IDX_Size,
                            .since = {1},
                            .infer = size_infer,
                            .forward = size_forward,
                            .nondiff_inputs = 1u,
                            .fwd_unread_in = 1u};

/* ---------------------------------------------------------------- EyeLike
 *
 * EyeLike (9; 22 only adds bfloat16): a 2-D tensor of the input's shape with
 * ones on diagonal k (attribute, default 0: the main one; k > 0 above it,
 * k < 0 below) and zeros elsewhere; the dtype is the attribute dtype or,
 * without it, the input's (bool, every integer and float type). The input's
 * data is not read; the output is a constant (no gradient). */

typedef struct eyelike_attrs {
  int has_dtype;
  amd_dtype dtype;
  int64_t k;
} eyelike_attrs;

static int eyelike_dtype_ok(amd_dtype t) {
  return t == AMD_BOOL || t == AMD_FLOAT || t == AMD_DOUBLE || t == AMD_FLOAT16 || t == AMD_BFLOAT16 ||
         t == AMD_INT8 || t == AMD_INT16 || t == AMD_INT32 || t == AMD_INT64 || t == AMD_UINT8 ||
         t == AMD_UINT16 || t == AMD_UINT32 || t == AMD_UINT64;
}

static int eyelike_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  eyelike_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->k = amd_attr_int(p, "k", 0);
  const amd_attr *d = amd_attr_find(p, "dtype");
  if (d) {
    if (!d->has_i || d->i < 0 || d->i > 64 || !eyelike_dtype_ok((amd_dtype)d->i))
      return amd_fail(st, "EyeLike: unsupported dtype %lld", d->has_i ? (long long)d->i : -1LL);
    a->has_dtype = 1;
    a->dtype = (amd_dtype)d->i;
  }
  return 0;
}

static int eyelike_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (need_in(n, in, 0, "input", st)) return -1;
  const eyelike_attrs *a = n->attrs;
  if (in[0]->rank != 2) return amd_fail(st, "EyeLike: the input must be 2-D (got rank %d)", in[0]->rank);
  amd_dtype t = a->has_dtype ? a->dtype : in[0]->dtype;
  if (!eyelike_dtype_ok(t)) return amd_fail(st, "EyeLike: unsupported dtype %s", amd_dtype_name(t));
  amd_tensor_set_shape(&out[0], t, 2, in[0]->dims);
  return 0;
}

static int eyelike_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                           amd_status *st) {
  (void)ctx, (void)in, (void)st;
  const int64_t k = ((const eyelike_attrs *)n->attrs)->k, rows = out[0].dims[0], cols = out[0].dims[1];
  if (k <= -rows || k >= cols) return 0; /* no diagonal inside */
  /* the output is zeroed: set the ones, (r, r + k) */
  for (int64_t r = k < 0 ? -k : 0; r < rows && r + k < cols; r++)
    amd_tensor_set_f64(&out[0], r * cols + r + k, 1);
  return 0;
}

const amd_op amd_op_EyeLike = {.name = "EyeLike",
                               .idx = AMD_OP_IDX_EyeLike,
                               .since = {9},
                               .parse = eyelike_parse,
                               .infer = eyelike_infer,
                               .forward = eyelike_forward,
                               .nondiff_inputs = 1u,
                               .fwd_unread_in = 1u};

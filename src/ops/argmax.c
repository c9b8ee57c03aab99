/* ArgMax and ArgMin (ONNX since-versions 1, 11, 12, 13).
 *
 * The index (int64) of the largest / smallest element along the single dim
 * `axis` (default 0; negative axes count from the back, which version 1
 * does not state and every version here accepts). keepdims (default 1) keeps
 * that dim as size 1, else it is dropped. select_last_index (12 and later;
 * default 0) picks the last of equal extrema instead of the first. A NaN
 * counts as the extremum (the first NaN, or the last with select_last_index),
 * as numpy's argmax / argmin do. An empty reduced dim fails (no index exists).
 * 13 adds bfloat16 only.
 *
 * Types: float, double, float16, bfloat16 and the integer types; the output
 * is int64 and gets no gradient, so these ops have no backward. */
#include <math.h>
#include <stdint.h>

#include "attrs.h"

typedef struct arg_attrs {
  int64_t axis;
  int keepdims;
  int select_last;
} arg_attrs;

static int arg_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  arg_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->axis = amd_attr_int(p, "axis", 0);
  a->keepdims = amd_attr_int(p, "keepdims", 1) != 0;
  int64_t sl = n->since >= 12 ? amd_attr_int(p, "select_last_index", 0) : 0;
  if (sl != 0 && sl != 1) return amd_fail(st, "select_last_index must be 0 or 1, got %lld", (long long)sl);
  a->select_last = (int)sl;
  return 0;
}

static int arg_dtype_ok(amd_dtype t) {
  switch (t) {
  case AMD_FLOAT:
  case AMD_DOUBLE:
  case AMD_FLOAT16:
  case AMD_BFLOAT16:
  case AMD_INT8:
  case AMD_INT16:
  case AMD_INT32:
  case AMD_INT64:
  case AMD_UINT8:
  case AMD_UINT16:
  case AMD_UINT32:
  case AMD_UINT64:
    return 1;
  default:
    return 0;
  }
}

static int arg_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (n->n_in < 1 || !in[0]) return amd_fail(st, "missing input");
  const arg_attrs *a = n->attrs;
  const amd_tensor *x = in[0];
  if (!arg_dtype_ok(x->dtype)) return amd_fail(st, "unsupported dtype %s", amd_dtype_name(x->dtype));
  if (x->rank < 1) return amd_fail(st, "input must have rank >= 1");
  int ax = amd_axis(a->axis, x->rank, st);
  if (ax < 0) return -1;
  if (x->dims[ax] == 0) return amd_fail(st, "axis %d has size 0: no index to return", ax);
  int64_t dims[AMD_MAX_RANK];
  int rank = 0;
  for (int d = 0; d < x->rank; d++) {
    if (d != ax)
      dims[rank++] = x->dims[d];
    else if (a->keepdims)
      dims[rank++] = 1;
  }
  amd_tensor_set_shape(&out[0], AMD_INT64, rank, dims);
  return 0;
}

/* Over the [outer, len, inner] view. Floating types compare as double (exact
 * for every float type); integers as int64 or uint64. `better(v, best)` is
 * strict for the first extremum, non-strict for the last. */
#define ARG_KERNEL(SUF, T, LOAD, ISNAN)                                                                      \
  static void arg_##SUF(const T *x, int64_t *y, int64_t outer, int64_t len, int64_t inner, int is_min,       \
                        int last) {                                                                          \
    for (int64_t o = 0; o < outer; o++)                                                                      \
      for (int64_t j = 0; j < inner; j++) {                                                                  \
        const T *col = x + o * len * inner + j;                                                              \
        __typeof__(LOAD(col[0])) best = LOAD(col[0]);                                                        \
        int64_t bi = 0;                                                                                      \
        for (int64_t i = 1; i < len; i++) {                                                                  \
          __typeof__(best) v = LOAD(col[i * inner]);                                                         \
          int take;                                                                                          \
          if (ISNAN(best))                                                                                   \
            take = last && ISNAN(v);                                                                         \
          else if (ISNAN(v))                                                                                 \
            take = 1;                                                                                        \
          else if (is_min)                                                                                   \
            take = last ? v <= best : v < best;                                                              \
          else                                                                                               \
            take = last ? v >= best : v > best;                                                              \
          if (take) best = v, bi = i;                                                                        \
        }                                                                                                    \
        y[o * inner + j] = bi;                                                                               \
      }                                                                                                      \
  }

#define LOAD_D(v) ((double)(v))
#define LOAD_H(v) ((double)amd_half_to_float(v))
#define LOAD_B(v) ((double)amd_bf16_to_float(v))
#define LOAD_I(v) ((int64_t)(v))
#define LOAD_U(v) ((uint64_t)(v))
#define NO_NAN(v) 0

ARG_KERNEL(f32, float, LOAD_D, isnan)
ARG_KERNEL(f64, double, LOAD_D, isnan)
ARG_KERNEL(f16, uint16_t, LOAD_H, isnan)
ARG_KERNEL(bf16, uint16_t, LOAD_B, isnan)
ARG_KERNEL(i8, int8_t, LOAD_I, NO_NAN)
ARG_KERNEL(i16, int16_t, LOAD_I, NO_NAN)
ARG_KERNEL(i32, int32_t, LOAD_I, NO_NAN)
ARG_KERNEL(i64, int64_t, LOAD_I, NO_NAN)
ARG_KERNEL(u8, uint8_t, LOAD_I, NO_NAN)
ARG_KERNEL(u16, uint16_t, LOAD_I, NO_NAN)
ARG_KERNEL(u32, uint32_t, LOAD_I, NO_NAN)
ARG_KERNEL(u64, uint64_t, LOAD_U, NO_NAN)

static int arg_forward_kind(int is_min, const amd_node *n, const amd_tensor *const *in, amd_tensor *out,
                            amd_status *st) {
  const arg_attrs *a = n->attrs;
  const amd_tensor *x = in[0];
  int ax = amd_axis(a->axis, x->rank, st);
  if (ax < 0) return -1;
  int64_t outer = 1, inner = 1, len = x->dims[ax];
  for (int d = 0; d < ax; d++) outer *= x->dims[d];
  for (int d = ax + 1; d < x->rank; d++) inner *= x->dims[d];
  if (outer * inner == 0) return 0;
  int64_t *y = out[0].data;
  int last = a->select_last;
  switch (x->dtype) {
  case AMD_FLOAT:
    arg_f32(x->data, y, outer, len, inner, is_min, last);
    break;
  case AMD_DOUBLE:
    arg_f64(x->data, y, outer, len, inner, is_min, last);
    break;
  case AMD_FLOAT16:
    arg_f16(x->data, y, outer, len, inner, is_min, last);
    break;
  case AMD_BFLOAT16:
    arg_bf16(x->data, y, outer, len, inner, is_min, last);
    break;
  case AMD_INT8:
    arg_i8(x->data, y, outer, len, inner, is_min, last);
    break;
  case AMD_INT16:
    arg_i16(x->data, y, outer, len, inner, is_min, last);
    break;
  case AMD_INT32:
    arg_i32(x->data, y, outer, len, inner, is_min, last);
    break;
  case AMD_INT64:
    arg_i64(x->data, y, outer, len, inner, is_min, last);
    break;
  case AMD_UINT8:
    arg_u8(x->data, y, outer, len, inner, is_min, last);
    break;
  case AMD_UINT16:
    arg_u16(x->data, y, outer, len, inner, is_min, last);
    break;
  case AMD_UINT32:
    arg_u32(x->data, y, outer, len, inner, is_min, last);
    break;
  case AMD_UINT64:
    arg_u64(x->data, y, outer, len, inner, is_min, last);
    break;
  default:
    return amd_fail(st, "unsupported dtype %s", amd_dtype_name(x->dtype));
  }
  return 0;
}

static int argmax_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                          amd_status *st) {
  (void)ctx;
  return arg_forward_kind(0, n, in, out, st);
}
static int argmin_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                          amd_status *st) {
  (void)ctx;
  return arg_forward_kind(1, n, in, out, st);
}

const amd_op amd_op_ArgMax = {.name = "ArgMax",
                              .idx = AMD_OP_IDX_ArgMax,
                              .since = {1, 11, 12, 13},
                              .parse = arg_parse,
                              .infer = arg_infer,
                              .forward = argmax_forward};
const amd_op amd_op_ArgMin = {.name = "ArgMin",
                              .idx = AMD_OP_IDX_ArgMin,
                              .since = {1, 11, 12, 13},
                              .parse = arg_parse,
                              .infer = arg_infer,
                              .forward = argmin_forward};

/* The index ops (the conventions of shape.c; the geometry the CUDA kernels of
 * cuda/ops/index.cu share is in index.h). Index inputs are int32 or int64 on
 * the host; a negative index adds the axis size, and one still out of range
 * fails (never read or written out of bounds). Data moves by its byte size
 * (any dtype) unless said otherwise; backward takes float and double.
 *
 * GatherND (11, 12, 13): indices [..., k] name slices of data; from 12 the
 *   first batch_dims axes of data and indices are batch axes, each index tuple
 *   reading within its own batch. Output: indices.shape[:-1] +
 *   data.shape[batch_dims + k:]. Backward: scatter-add into dData (repeated
 *   tuples add up, in the order of the tuples).
 * GatherElements (11, 13): out[p] = data[p with p[axis] = indices[p]];
 *   indices have data's rank, each other axis at most data's size. Backward:
 *   scatter-add.
 * ScatterElements (11, 13, 16, 18) and Scatter (9, 11, deprecated: as
 *   ScatterElements without reduction): a copy of data where, for each
 *   position p of indices, element (p with p[axis] = indices[p]) is replaced
 *   by updates[p] or (16: add, mul; 18: max, min) combined with it, in the
 *   order of p. Reductions take float, double, int32, int64. Backward as
 *   ScatterND's (expand.c): none: dData = dY where no update landed,
 *   dUpdates[p] = dY at its element when p was the last to write it; add:
 *   dData = dY, dUpdates[p] = dY at its element. Mul, max, min: no backward.
 * OneHot (9, 11): indices (any numeric type, truncated), depth (scalar),
 *   values [off, on]; the output, of values' dtype, has a new axis `axis` of
 *   size depth (default -1: last) that is on at the index. Indices in
 *   [-depth, depth) (negative ones add depth), others give all off. No
 *   backward (its float input, values, is not trained through).
 * Trilu (14): keeps the upper (upper = 1, the default) or lower triangle of
 *   the last two axes from diagonal k (input 1, int64 scalar; default 0),
 *   zeroes the rest. Backward: dY through the same mask.
 * DepthToSpace (1, 11, 13; mode DCR, the default, or CRD from 11) and
 *   SpaceToDepth (1, 13, 28; mode from 28): [N, C, H, W] rearranged in
 *   blocks of blocksize;
 *   see index.h's amd_space_src. Backward: the inverse permutation.
 * NonZero (9, 13): int64 [rank, count] coordinates of the non-zero elements
 *   in row-major order (a scalar: [0, 0 or 1]). No backward.
 * TopK (1, 10, 11): the k largest (11: or smallest, largest = 0) elements
 *   along axis (default -1), with their int64 indices; k from the attribute
 *   (1) or input 1 (10, 11: one int64 value, 0 <= k <= the axis size). Ties
 *   keep the lower index first; NaN ranks above every number. The output is
 *   always sorted (sorted = 0 allows any order). Values: float, double and
 *   integer types. Backward: dValues added at the chosen indices. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"
#include "shape_util.h"

/* Index element i of t as int64 against an axis of size dim: the normalised
 * value in [0, dim), or -1 when out of range. */
static int64_t norm_index(const amd_tensor *t, int64_t i, int64_t dim) {
  int64_t v = amd_tensor_get_i64(t, i);
  if (v < 0) v += dim;
  return v >= 0 && v < dim ? v : -1;
}

static int index_dtype(const amd_tensor *t, const char *what, amd_status *st) {
  if (t->dtype != AMD_INT64 && t->dtype != AMD_INT32)
    return amd_fail(st, "%s must be int32 or int64 (got %s)", what, amd_dtype_name(t->dtype));
  return 0;
}

static int64_t prod_of(const int64_t *d, int from, int to) {
  int64_t p = 1;
  for (int i = from; i < to; i++) p *= d[i];
  return p;
}

/* ================================================================ GatherND */

int amd_gathernd_geometry(const amd_tensor *x, const amd_tensor *idx, int64_t batch_dims, int64_t *off,
                          int64_t *cnt, int64_t *slice, int64_t *out_dims, int *out_rank, amd_status *st) {
  if (index_dtype(idx, "indices", st)) return -1;
  int b = (int)batch_dims;
  if (batch_dims < 0 || b >= x->rank || b >= idx->rank)
    return amd_fail(st, "batch_dims %lld must be in [0, min(data rank %d, indices rank %d))", (long long)batch_dims,
                    x->rank, idx->rank);
  for (int i = 0; i < b; i++)
    if (x->dims[i] != idx->dims[i])
      return amd_fail(st, "batch axis %d: data has %lld, indices %lld", i, (long long)x->dims[i],
                      (long long)idx->dims[i]);
  int64_t k = idx->dims[idx->rank - 1];
  if (k < 1 || k > x->rank - b)
    return amd_fail(st, "indices' last dimension %lld is not in [1, %d] (data's rank - batch_dims)", (long long)k,
                    x->rank - b);
  int orank = idx->rank - 1 + x->rank - b - (int)k;
  if (orank > AMD_MAX_RANK) return amd_fail(st, "output rank %d exceeds %d", orank, AMD_MAX_RANK);
  if (out_dims) {
    int r = 0;
    for (int i = 0; i < idx->rank - 1; i++) out_dims[r++] = idx->dims[i];
    for (int i = b + (int)k; i < x->rank; i++) out_dims[r++] = x->dims[i];
    *out_rank = r;
  }
  int64_t nb = prod_of(x->dims, 0, b), per = prod_of(idx->dims, b, idx->rank - 1);
  *cnt = nb * per;
  *slice = prod_of(x->dims, b + (int)k, x->rank);
  if (!off) return 0;
  int64_t bstride = prod_of(x->dims, b, x->rank);
  for (int64_t t = 0; t < *cnt; t++) {
    int64_t o = 0;
    for (int i = 0; i < k; i++) {
      int64_t d = x->dims[b + i], v = norm_index(idx, t * k + i, d);
      if (v < 0)
        return amd_fail(st, "index %lld out of range for data axis %d of size %lld (tuple %lld)",
                        (long long)amd_tensor_get_i64(idx, t * k + i), b + i, (long long)d, (long long)t);
      o = o * d + v;
    }
    off[t] = (t / per) * bstride + o * *slice;
  }
  return 0;
}

static int gathernd_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  amd_gathernd_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->batch_dims = n->since >= 12 ? amd_attr_int(p, "batch_dims", 0) : 0;
  return 0;
}

static int gathernd_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  const amd_gathernd_attrs *a = n->attrs;
  if (need_in(n, in, 0, "data", st) || need_in(n, in, 1, "indices", st)) return -1;
  size_t es;
  if (elem_size(in[0], "data", &es, st)) return -1;
  int64_t cnt, slice, dims[AMD_MAX_RANK];
  int rank;
  if (amd_gathernd_geometry(in[0], in[1], a->batch_dims, NULL, &cnt, &slice, dims, &rank, st)) return -1;
  amd_tensor_set_shape(&out[0], in[0]->dtype, rank, dims);
  return 0;
}

/* The offsets of the tuples (malloc'd; *off NULL and 0 returned when there are none). */
static int gathernd_offsets(const amd_node *n, const amd_tensor *const *in, int64_t **off, int64_t *cnt,
                            int64_t *slice, amd_status *st) {
  const amd_gathernd_attrs *a = n->attrs;
  *off = NULL;
  if (amd_gathernd_geometry(in[0], in[1], a->batch_dims, NULL, cnt, slice, NULL, NULL, st)) return -1;
  if (*cnt == 0) return 0;
  *off = malloc((size_t)*cnt * sizeof **off);
  if (!*off) return amd_fail(st, "out of memory");
  if (amd_gathernd_geometry(in[0], in[1], a->batch_dims, *off, cnt, slice, NULL, NULL, st)) {
    free(*off);
    *off = NULL;
    return -1;
  }
  return 0;
}

static int gathernd_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                            amd_status *st) {
  (void)ctx;
  int64_t *off, cnt, slice;
  if (gathernd_offsets(n, in, &off, &cnt, &slice, st)) return -1;
  size_t es = amd_dtype_size(in[0]->dtype), row = (size_t)slice * es;
  for (int64_t t = 0; t < cnt && row; t++)
    memcpy((char *)out[0].data + (size_t)t * row, (const char *)in[0]->data + (size_t)off[t] * es, row);
  free(off);
  return 0;
}

static int gathernd_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                             const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  (void)ctx, (void)out;
  if (!dout[0] || !din[0]) return 0;
  if (grad_dtype_ok(in[0]->dtype, st)) return -1;
  int64_t *off, cnt, slice;
  if (gathernd_offsets(n, in, &off, &cnt, &slice, st)) return -1;
  size_t es = amd_dtype_size(in[0]->dtype);
  for (int64_t t = 0; t < cnt; t++)
    grad_add(in[0]->dtype, (char *)din[0]->data + (size_t)off[t] * es,
             (const char *)dout[0]->data + (size_t)(t * slice) * es, slice);
  free(off);
  return 0;
}

const amd_op amd_op_GatherND = {.name = "GatherND",
                                .idx = AMD_OP_IDX_GatherND,
                                .since = {11, 12, 13},
                                .parse = gathernd_parse,
                                .infer = gathernd_infer,
                                .forward = gathernd_forward,
                                .backward = gathernd_backward,
                                .nondiff_inputs = 1u << 1,
                                .bwd_unread_in = 1u,
                                .bwd_unread_out = 1u};

/* ================================================================ GatherElements, ScatterElements */

enum { RED_NONE = AMD_SCATTER_NONE, RED_ADD = AMD_SCATTER_ADD, RED_MUL = AMD_SCATTER_MUL,
       RED_MAX = AMD_SCATTER_MAX, RED_MIN = AMD_SCATTER_MIN };
static const char *const red_names[] = {"none", "add", "mul", "max", "min"};

typedef amd_elements_attrs elements_attrs;

static int elements_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  elements_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->axis = amd_attr_int(p, "axis", 0);
  a->reduction = RED_NONE;
  if (n->op->idx != AMD_OP_IDX_ScatterElements || n->since < 16) return 0;
  char buf[16];
  const char *r = amd_attr_string(p, "reduction", "none", buf, sizeof buf);
  int last = n->since >= 18 ? RED_MIN : RED_MUL;
  for (int k = 0; k <= last; k++)
    if (strcmp(r, red_names[k]) == 0) {
      a->reduction = k;
      return 0;
    }
  return amd_fail(st, "unknown ScatterElements reduction '%s' in version %d", r, n->since);
}

/* Checks indices against data x along axis (and, when off is given, fills
 * off[i]: the element of x that index element i names; index.h). */
int amd_elements_geometry(const amd_tensor *x, const amd_tensor *idx, int64_t axis_attr, int64_t *off,
                          amd_status *st) {
  if (index_dtype(idx, "indices", st)) return -1;
  if (x->rank < 1) return amd_fail(st, "data must have rank >= 1");
  if (idx->rank != x->rank) return amd_fail(st, "indices have rank %d, data %d", idx->rank, x->rank);
  int axis = amd_axis(axis_attr, x->rank, st);
  if (axis < 0) return -1;
  for (int i = 0; i < x->rank; i++)
    if (i != axis && idx->dims[i] > x->dims[i]) {
      char si[128], sx[128];
      return amd_fail(st, "indices %s exceed data %s along axis %d", amd_shape_str(idx, si, sizeof si),
                      amd_shape_str(x, sx, sizeof sx), i);
    }
  if (!off) return 0;
  int64_t xstr[AMD_MAX_RANK], c[AMD_MAX_RANK] = {0}, cnt = amd_tensor_numel(idx), dim = x->dims[axis];
  contiguous_strides(x->rank, x->dims, xstr);
  for (int64_t i = 0; i < cnt; i++) {
    int64_t v = norm_index(idx, i, dim);
    if (v < 0)
      return amd_fail(st, "index %lld out of range for axis %d of size %lld", (long long)amd_tensor_get_i64(idx, i),
                      axis, (long long)dim);
    int64_t o = 0;
    for (int a = 0; a < x->rank; a++) o += (a == axis ? v : c[a]) * xstr[a];
    off[i] = o;
    for (int a = x->rank - 1; a >= 0; a--) {
      if (++c[a] < idx->dims[a]) break;
      c[a] = 0;
    }
  }
  return 0;
}

/* off for all of idx's elements (malloc'd, at least one entry). */
static int64_t *elements_offsets(const amd_node *n, const amd_tensor *x, const amd_tensor *idx, amd_status *st) {
  const elements_attrs *a = n->attrs;
  int64_t cnt = amd_tensor_numel(idx);
  int64_t *off = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *off);
  if (!off) {
    amd_fail(st, "out of memory");
    return NULL;
  }
  if (amd_elements_geometry(x, idx, a->axis, off, st)) {
    free(off);
    return NULL;
  }
  return off;
}

static int gather_el_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  const elements_attrs *a = n->attrs;
  if (need_in(n, in, 0, "data", st) || need_in(n, in, 1, "indices", st)) return -1;
  size_t es;
  if (elem_size(in[0], "data", &es, st) || amd_elements_geometry(in[0], in[1], a->axis, NULL, st)) return -1;
  amd_tensor_set_shape(&out[0], in[0]->dtype, in[1]->rank, in[1]->dims);
  return 0;
}

static int gather_el_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                             amd_status *st) {
  (void)ctx;
  int64_t *off = elements_offsets(n, in[0], in[1], st), cnt = amd_tensor_numel(in[1]);
  if (!off) return -1;
  size_t es = amd_dtype_size(in[0]->dtype);
  for (int64_t i = 0; i < cnt; i++)
    copy_elem((char *)out[0].data + (size_t)i * es, (const char *)in[0]->data + (size_t)off[i] * es, es);
  free(off);
  return 0;
}

static int gather_el_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                              const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  (void)ctx, (void)out;
  if (!dout[0] || !din[0]) return 0;
  if (grad_dtype_ok(in[0]->dtype, st)) return -1;
  int64_t *off = elements_offsets(n, in[0], in[1], st), cnt = amd_tensor_numel(in[1]);
  if (!off) return -1;
  if (in[0]->dtype == AMD_FLOAT) {
    float *d = din[0]->data;
    const float *g = dout[0]->data;
    for (int64_t i = 0; i < cnt; i++) d[off[i]] += g[i];
  } else {
    double *d = din[0]->data;
    const double *g = dout[0]->data;
    for (int64_t i = 0; i < cnt; i++) d[off[i]] += g[i];
  }
  free(off);
  return 0;
}

const amd_op amd_op_GatherElements = {.name = "GatherElements",
                                      .idx = AMD_OP_IDX_GatherElements,
                                      .since = {11, 13},
                                      .parse = elements_parse,
                                      .infer = gather_el_infer,
                                      .forward = gather_el_forward,
                                      .backward = gather_el_backward,
                                      .nondiff_inputs = 1u << 1,
                                      .bwd_unread_in = 1u,
                                      .bwd_unread_out = 1u};

static int scatter_el_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  const elements_attrs *a = n->attrs;
  if (need_in(n, in, 0, "data", st) || need_in(n, in, 1, "indices", st) || need_in(n, in, 2, "updates", st))
    return -1;
  const amd_tensor *x = in[0];
  size_t es;
  if (elem_size(x, "data", &es, st) || amd_elements_geometry(x, in[1], a->axis, NULL, st)) return -1;
  if (in[2]->dtype != x->dtype)
    return amd_fail(st, "updates have dtype %s, data %s", amd_dtype_name(in[2]->dtype), amd_dtype_name(x->dtype));
  if (!amd_same_shape(in[1], in[2])) {
    char si[128], su[128];
    return amd_fail(st, "updates %s and indices %s differ in shape", amd_shape_str(in[2], su, sizeof su),
                    amd_shape_str(in[1], si, sizeof si));
  }
  if (a->reduction != RED_NONE && x->dtype != AMD_FLOAT && x->dtype != AMD_DOUBLE && x->dtype != AMD_INT32 &&
      x->dtype != AMD_INT64)
    return amd_fail(st, "reduction '%s' supports float, double, int32 and int64 data (got %s)",
                    red_names[a->reduction], amd_dtype_name(x->dtype));
  copy_shape(&out[0], x);
  return 0;
}

#define RED_COMBINE(SUF, T)                                                                                  \
  static void red_##SUF(int red, T *y, T v) {                                                                \
    switch (red) {                                                                                           \
    case RED_ADD: *y += v; break;                                                                            \
    case RED_MUL: *y *= v; break;                                                                            \
    case RED_MAX: *y = *y >= v ? *y : v; break;                                                              \
    default: *y = *y <= v ? *y : v; break;                                                                   \
    }                                                                                                        \
  }
RED_COMBINE(f32, float)
RED_COMBINE(f64, double)
RED_COMBINE(i32, int32_t)
RED_COMBINE(i64, int64_t)

static int scatter_el_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                              amd_status *st) {
  (void)ctx;
  const elements_attrs *a = n->attrs;
  const amd_tensor *x = in[0];
  int64_t *off = elements_offsets(n, x, in[1], st), cnt = amd_tensor_numel(in[1]);
  if (!off) return -1;
  size_t es = amd_dtype_size(x->dtype), bytes = amd_tensor_nbytes(x);
  if (bytes) memcpy(out[0].data, x->data, bytes);
  char *y = out[0].data;
  const char *u = in[2]->data;
  for (int64_t i = 0; i < cnt; i++) {
    char *d = y + (size_t)off[i] * es;
    const char *s = u + (size_t)i * es;
    if (a->reduction == RED_NONE)
      copy_elem(d, s, es);
    else if (x->dtype == AMD_FLOAT)
      red_f32(a->reduction, (float *)d, *(const float *)s);
    else if (x->dtype == AMD_DOUBLE)
      red_f64(a->reduction, (double *)d, *(const double *)s);
    else if (x->dtype == AMD_INT32)
      red_i32(a->reduction, (int32_t *)d, *(const int32_t *)s);
    else
      red_i64(a->reduction, (int64_t *)d, *(const int64_t *)s);
  }
  free(off);
  return 0;
}

static int scatter_el_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                               const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  (void)ctx, (void)out;
  const elements_attrs *a = n->attrs;
  if (!dout[0] || (!din[0] && !din[2])) return 0;
  if (a->reduction != RED_NONE && a->reduction != RED_ADD)
    return amd_fail(st, "ScatterElements with reduction '%s' has no backward (only 'none' and 'add')",
                    red_names[a->reduction]);
  amd_dtype t = in[0]->dtype;
  if (grad_dtype_ok(t, st)) return -1;
  int64_t *off = elements_offsets(n, in[0], in[1], st), cnt = amd_tensor_numel(in[1]);
  int64_t xcnt = amd_tensor_numel(in[0]);
  if (!off) return -1;
  /* owner[e]: the last update written to element e (-1: none); add: unused */
  int64_t *owner = NULL;
  if (a->reduction == RED_NONE) {
    owner = malloc((size_t)(xcnt > 0 ? xcnt : 1) * sizeof *owner);
    if (!owner) {
      free(off);
      return amd_fail(st, "out of memory");
    }
    for (int64_t e = 0; e < xcnt; e++) owner[e] = -1;
    for (int64_t i = 0; i < cnt; i++) owner[off[i]] = i;
  }
  size_t es = amd_dtype_size(t);
  const char *dy = dout[0]->data;
  if (din[0]) {
    if (!owner)
      grad_add(t, din[0]->data, dy, xcnt);
    else
      for (int64_t e = 0; e < xcnt; e++)
        if (owner[e] < 0) grad_add(t, (char *)din[0]->data + (size_t)e * es, dy + (size_t)e * es, 1);
  }
  for (int64_t i = 0; din[2] && i < cnt; i++)
    if (!owner || owner[off[i]] == i)
      grad_add(t, (char *)din[2]->data + (size_t)i * es, dy + (size_t)off[i] * es, 1);
  free(owner);
  free(off);
  return 0;
}

const amd_op amd_op_ScatterElements = {.name = "ScatterElements",
                                       .idx = AMD_OP_IDX_ScatterElements,
                                       .since = {11, 13, 16, 18},
                                       .parse = elements_parse,
                                       .infer = scatter_el_infer,
                                       .forward = scatter_el_forward,
                                       .backward = scatter_el_backward,
                                       .nondiff_inputs = 1u << 1,
                                       .bwd_unread_in = 1u | 4u,
                                       .bwd_unread_out = 1u};

const amd_op amd_op_Scatter = {.name = "Scatter",
                               .idx = AMD_OP_IDX_Scatter,
                               .since = {9, 11},
                               .parse = elements_parse,
                               .infer = scatter_el_infer,
                               .forward = scatter_el_forward,
                               .backward = scatter_el_backward,
                               .nondiff_inputs = 1u << 1,
                               .bwd_unread_in = 1u | 4u,
                               .bwd_unread_out = 1u};

/* ================================================================ OneHot */

static int onehot_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  amd_axis_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->axis = amd_attr_int(p, "axis", -1);
  return 0;
}

static int onehot_depth(const amd_tensor *d, int64_t *depth, amd_status *st) {
  if (amd_tensor_numel(d) != 1) return amd_fail(st, "depth must hold one value (got %lld)", (long long)amd_tensor_numel(d));
  if (!amd_dtype_size(d->dtype) || d->dtype == AMD_STRING) return amd_fail(st, "depth has unsupported dtype");
  double v = amd_tensor_get_f64(d, 0);
  if (!(v >= 1 && v <= (double)AMD_MAX_TENSOR_BYTES)) return amd_fail(st, "depth %g must be a positive count", v);
  *depth = (int64_t)v;
  return 0;
}

static int onehot_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  const amd_axis_attrs *a = n->attrs;
  if (need_in(n, in, 0, "indices", st) || need_in(n, in, 1, "depth", st) || need_in(n, in, 2, "values", st))
    return -1;
  const amd_tensor *idx = in[0], *v = in[2];
  size_t es;
  if (elem_size(idx, "indices", &es, st) || elem_size(v, "values", &es, st)) return -1;
  if (amd_tensor_numel(v) != 2) return amd_fail(st, "values must hold [off, on] (got %lld values)",
                                                (long long)amd_tensor_numel(v));
  int64_t depth;
  if (onehot_depth(in[1], &depth, st)) return -1;
  int rank = idx->rank + 1;
  if (rank > AMD_MAX_RANK) return amd_fail(st, "output rank %d exceeds %d", rank, AMD_MAX_RANK);
  int axis = amd_axis(a->axis, rank, st);
  if (axis < 0) return -1;
  int64_t dims[AMD_MAX_RANK];
  for (int i = 0, j = 0; i < rank; i++) dims[i] = i == axis ? depth : idx->dims[j++];
  if (amd_tensor_numel(idx) > AMD_MAX_TENSOR_BYTES / depth) return amd_fail(st, "one-hot output too large");
  amd_tensor_set_shape(&out[0], v->dtype, rank, dims);
  return 0;
}

static int onehot_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                          amd_status *st) {
  (void)ctx;
  const amd_axis_attrs *a = n->attrs;
  const amd_tensor *idx = in[0], *v = in[2];
  int64_t depth;
  if (onehot_depth(in[1], &depth, st)) return -1;
  int axis = amd_axis(a->axis, out[0].rank, st);
  if (axis < 0) return -1;
  int64_t outer = prod_of(out[0].dims, 0, axis), inner = prod_of(out[0].dims, axis + 1, out[0].rank);
  size_t es = amd_dtype_size(v->dtype);
  const char *off = v->data, *on = (const char *)v->data + es;
  char *y = out[0].data;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t d = 0; d < depth; d++)
      for (int64_t j = 0; j < inner; j++) {
        double f = amd_tensor_get_f64(idx, o * inner + j);
        int64_t k = fabs(f) < (double)depth + 1 ? (int64_t)f : depth; /* truncated; far out: none */
        int hit = k >= -depth && k < depth && (k < 0 ? k + depth : k) == d;
        copy_elem(y + (size_t)((o * depth + d) * inner + j) * es, hit ? on : off, es);
      }
  return 0;
}

const amd_op amd_op_OneHot = {.name = "OneHot",
                              .idx = AMD_OP_IDX_OneHot,
                              .since = {9, 11},
                              .parse = onehot_parse,
                              .infer = onehot_infer,
                              .forward = onehot_forward,
                              .nondiff_inputs = 7u};

/* ================================================================ Trilu */

static int trilu_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  amd_trilu_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  int64_t u = amd_attr_int(p, "upper", 1);
  if (u != 0 && u != 1) return amd_fail(st, "upper must be 0 or 1 (got %lld)", (long long)u);
  a->upper = (int)u;
  return 0;
}

int amd_trilu_k(const amd_node *n, const amd_tensor *const *in, int64_t *k, amd_status *st) {
  *k = 0;
  if (n->n_in < 2 || !in[1]) return 0;
  if (index_dtype(in[1], "k", st)) return -1;
  if (amd_tensor_numel(in[1]) != 1) return amd_fail(st, "k must hold one value (got %lld)",
                                                    (long long)amd_tensor_numel(in[1]));
  *k = amd_tensor_get_i64(in[1], 0);
  return 0;
}

static int trilu_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (need_in(n, in, 0, "input", st)) return -1;
  size_t es;
  int64_t k;
  if (elem_size(in[0], "input", &es, st) || amd_trilu_k(n, in, &k, st)) return -1;
  if (in[0]->rank < 2) return amd_fail(st, "input must have rank >= 2 (got %d)", in[0]->rank);
  copy_shape(&out[0], in[0]);
  return 0;
}

/* Element e of a [.., rows, cols] tensor is kept. */
static int trilu_kept(const amd_trilu_attrs *a, int64_t k, int64_t rows, int64_t cols, int64_t e) {
  return amd_trilu_keep(a->upper, k, (e / cols) % rows, e % cols);
}

static int trilu_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                         amd_status *st) {
  (void)ctx;
  const amd_trilu_attrs *a = n->attrs;
  const amd_tensor *x = in[0];
  int64_t k, cnt = amd_tensor_numel(x), rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
  if (amd_trilu_k(n, in, &k, st)) return -1;
  size_t es = amd_dtype_size(x->dtype);
  for (int64_t e = 0; e < cnt; e++) /* out is zeroed */
    if (trilu_kept(a, k, rows, cols, e))
      copy_elem((char *)out[0].data + (size_t)e * es, (const char *)x->data + (size_t)e * es, es);
  return 0;
}

static int trilu_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                          const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  (void)ctx, (void)out;
  if (!dout[0] || !din[0]) return 0;
  const amd_trilu_attrs *a = n->attrs;
  const amd_tensor *x = in[0];
  if (grad_dtype_ok(x->dtype, st)) return -1;
  int64_t k, cnt = amd_tensor_numel(x), rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
  if (amd_trilu_k(n, in, &k, st)) return -1;
  size_t es = amd_dtype_size(x->dtype);
  for (int64_t e = 0; e < cnt; e++)
    if (trilu_kept(a, k, rows, cols, e))
      grad_add(x->dtype, (char *)din[0]->data + (size_t)e * es, (const char *)dout[0]->data + (size_t)e * es, 1);
  return 0;
}

const amd_op amd_op_Trilu = {.name = "Trilu",
                             .idx = AMD_OP_IDX_Trilu,
                             .since = {14},
                             .parse = trilu_parse,
                             .infer = trilu_infer,
                             .forward = trilu_forward,
                             .backward = trilu_backward,
                             .nondiff_inputs = 1u << 1,
                             .bwd_unread_in = 1u,
                             .bwd_unread_out = 1u};

/* ================================================================ DepthToSpace, SpaceToDepth */

static int space_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  amd_d2s_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->blocksize = amd_attr_int(p, "blocksize", 0);
  if (a->blocksize < 1 || a->blocksize > 1 << 20)
    return amd_fail(st, "blocksize must be a positive integer (got %lld)", (long long)a->blocksize);
  a->crd = 0;
  if ((n->op->idx == AMD_OP_IDX_DepthToSpace && n->since >= 11) || n->since >= 28) {
    char buf[8];
    const char *m = amd_attr_string(p, "mode", "DCR", buf, sizeof buf);
    if (strcmp(m, "CRD") == 0)
      a->crd = 1;
    else if (strcmp(m, "DCR") != 0)
      return amd_fail(st, "mode must be DCR or CRD (got '%s')", m);
  }
  return 0;
}

int amd_space_geometry(const amd_node *n, const amd_tensor *x, amd_space_geom *g, amd_status *st) {
  const amd_d2s_attrs *a = n->attrs;
  if (x->rank != 4) return amd_fail(st, "input must be 4-D [N, C, H, W] (got rank %d)", x->rank);
  int64_t b = a->blocksize, bb = b * b;
  memset(g, 0, sizeof *g);
  g->n = x->dims[0], g->ic = x->dims[1], g->ih = x->dims[2], g->iw = x->dims[3], g->b = b, g->crd = a->crd;
  g->s2d = n->op->idx == AMD_OP_IDX_SpaceToDepth;
  if (g->s2d) {
    if (g->ih % b || g->iw % b)
      return amd_fail(st, "height %lld and width %lld must be multiples of blocksize %lld", (long long)g->ih,
                      (long long)g->iw, (long long)b);
    g->oc = g->ic * bb, g->oh = g->ih / b, g->ow = g->iw / b;
  } else {
    if (g->ic % bb)
      return amd_fail(st, "channels %lld must be a multiple of blocksize^2 = %lld", (long long)g->ic,
                      (long long)bb);
    g->oc = g->ic / bb, g->oh = g->ih * b, g->ow = g->iw * b;
  }
  return 0;
}

static int space_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (need_in(n, in, 0, "input", st)) return -1;
  size_t es;
  amd_space_geom g;
  if (elem_size(in[0], "input", &es, st) || amd_space_geometry(n, in[0], &g, st)) return -1;
  int64_t dims[4] = {g.n, g.oc, g.oh, g.ow};
  amd_tensor_set_shape(&out[0], in[0]->dtype, 4, dims);
  return 0;
}

static int space_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                         amd_status *st) {
  (void)ctx;
  amd_space_geom g;
  if (amd_space_geometry(n, in[0], &g, st)) return -1;
  size_t es = amd_dtype_size(in[0]->dtype);
  int64_t cnt = amd_tensor_numel(&out[0]);
  for (int64_t o = 0; o < cnt; o++)
    copy_elem((char *)out[0].data + (size_t)o * es, (const char *)in[0]->data + (size_t)amd_space_src(&g, o) * es,
              es);
  return 0;
}

static int space_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                          const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  (void)ctx;
  if (!dout[0] || !din[0]) return 0;
  if (grad_dtype_ok(in[0]->dtype, st)) return -1;
  amd_space_geom g;
  if (amd_space_geometry(n, in[0], &g, st)) return -1;
  size_t es = amd_dtype_size(in[0]->dtype);
  int64_t cnt = amd_tensor_numel(&out[0]);
  for (int64_t o = 0; o < cnt; o++) /* a permutation: each dX element once */
    grad_add(in[0]->dtype, (char *)din[0]->data + (size_t)amd_space_src(&g, o) * es,
             (const char *)dout[0]->data + (size_t)o * es, 1);
  return 0;
}

const amd_op amd_op_DepthToSpace = {.name = "DepthToSpace",
                                    .idx = AMD_OP_IDX_DepthToSpace,
                                    .since = {1, 11, 13},
                                    .parse = space_parse,
                                    .infer = space_infer,
                                    .forward = space_forward,
                                    .backward = space_backward,
                                    .bwd_unread_in = 1u,
                                    .bwd_unread_out = 1u};

const amd_op amd_op_SpaceToDepth = {.name = "SpaceToDepth",
                                    .idx = AMD_OP_IDX_SpaceToDepth,
                                    .since = {1, 13, 28},
                                    .parse = space_parse,
                                    .infer = space_infer,
                                    .forward = space_forward,
                                    .backward = space_backward,
                                    .bwd_unread_in = 1u,
                                    .bwd_unread_out = 1u};

/* ================================================================ NonZero */

/* Element i of x is not zero (bytes of any dtype; -0.0 counts as zero). */
static int nonzero_at(const amd_tensor *x, int64_t i) {
  if (is_float_dtype(x->dtype)) return amd_tensor_get_f64(x, i) != 0;
  size_t es = amd_dtype_size(x->dtype);
  const unsigned char *p = (const unsigned char *)x->data + (size_t)i * es;
  for (size_t b = 0; b < es; b++)
    if (p[b]) return 1;
  return 0;
}

static int nonzero_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (need_in(n, in, 0, "X", st)) return -1;
  size_t es;
  if (elem_size(in[0], "X", &es, st)) return -1;
  int64_t cnt = amd_tensor_numel(in[0]), nz = 0;
  for (int64_t i = 0; i < cnt; i++) nz += nonzero_at(in[0], i);
  int64_t dims[2] = {in[0]->rank, nz};
  amd_tensor_set_shape(&out[0], AMD_INT64, 2, dims);
  return 0;
}

static int nonzero_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                           amd_status *st) {
  (void)n, (void)ctx, (void)st;
  const amd_tensor *x = in[0];
  int64_t cnt = amd_tensor_numel(x), nz = out[0].dims[1], j = 0, c[AMD_MAX_RANK] = {0};
  int64_t *y = out[0].data;
  for (int64_t i = 0; i < cnt && j < nz; i++) {
    if (nonzero_at(x, i)) {
      for (int a = 0; a < x->rank; a++) y[a * nz + j] = c[a];
      j++;
    }
    for (int a = x->rank - 1; a >= 0; a--) {
      if (++c[a] < x->dims[a]) break;
      c[a] = 0;
    }
  }
  return 0;
}

const amd_op amd_op_NonZero = {.name = "NonZero",
                               .idx = AMD_OP_IDX_NonZero,
                               .since = {9, 13},
                               .infer = nonzero_infer,
                               .forward = nonzero_forward,
                               .nondiff_inputs = 1u};

/* ================================================================ TopK */

typedef struct topk_attrs {
  int64_t axis, k; /* k: version 1's attribute */
  int largest;
} topk_attrs;

static int topk_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  topk_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->axis = amd_attr_int(p, "axis", -1);
  a->k = -1;
  a->largest = 1;
  if (n->since < 10) {
    a->k = amd_attr_int(p, "k", -1);
    if (a->k < 0) return amd_fail(st, "attribute k is missing or negative");
  }
  if (n->since >= 11) {
    int64_t l = amd_attr_int(p, "largest", 1), s = amd_attr_int(p, "sorted", 1);
    if ((l != 0 && l != 1) || (s != 0 && s != 1)) return amd_fail(st, "largest and sorted must be 0 or 1");
    a->largest = (int)l;
  }
  return 0;
}

/* k, the axis, and the [outer, len, inner] view of x. */
static int topk_geom(const amd_node *n, const amd_tensor *const *in, int64_t *k, int *axis, int64_t *outer,
                     int64_t *len, int64_t *inner, amd_status *st) {
  const topk_attrs *a = n->attrs;
  const amd_tensor *x = in[0];
  if (x->rank < 1) return amd_fail(st, "input must have rank >= 1");
  *axis = amd_axis(a->axis, x->rank, st);
  if (*axis < 0) return -1;
  *k = a->k;
  if (n->since >= 10) {
    if (need_in(n, in, 1, "K", st) || index_dtype(in[1], "K", st)) return -1;
    if (amd_tensor_numel(in[1]) != 1) return amd_fail(st, "K must hold one value");
    *k = amd_tensor_get_i64(in[1], 0);
  }
  *len = x->dims[*axis];
  if (*k < 0 || *k > *len)
    return amd_fail(st, "k = %lld is not in [0, %lld] (the axis size)", (long long)*k, (long long)*len);
  *outer = prod_of(x->dims, 0, *axis);
  *inner = prod_of(x->dims, *axis + 1, x->rank);
  return 0;
}

static int topk_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (need_in(n, in, 0, "X", st)) return -1;
  const amd_tensor *x = in[0];
  if (!amd_dtype_size(x->dtype) || x->dtype == AMD_BOOL)
    return amd_fail(st, "unsupported dtype %s", amd_dtype_name(x->dtype));
  int64_t k, o, l, i;
  int axis;
  if (topk_geom(n, in, &k, &axis, &o, &l, &i, st)) return -1;
  int64_t dims[AMD_MAX_RANK];
  memcpy(dims, x->dims, sizeof dims);
  dims[axis] = k;
  amd_tensor_set_shape(&out[0], x->dtype, x->rank, dims);
  if (n->n_out > 1) amd_tensor_set_shape(&out[1], AMD_INT64, x->rank, dims);
  return 0;
}

typedef struct topk_item {
  double v;
  int64_t i;
  int largest;
} topk_item;

/* Best first: larger (or smaller) values, NaN before all, then lower index. */
static int topk_cmp(const void *pa, const void *pb) {
  const topk_item *a = pa, *b = pb;
  int an = isnan(a->v), bn = isnan(b->v);
  if (an != bn) return an ? -1 : 1;
  if (!an && a->v != b->v) return (a->v > b->v) == a->largest ? -1 : 1;
  return a->i < b->i ? -1 : 1;
}

/* idx[(o, j, in)] = the axis position of the j-th chosen element (int64). */
static int topk_select(const amd_node *n, const amd_tensor *const *in, int64_t *idx, int64_t k, int64_t outer,
                       int64_t len, int64_t inner, amd_status *st) {
  const topk_attrs *a = n->attrs;
  topk_item *it = malloc((size_t)(len > 0 ? len : 1) * sizeof *it);
  if (!it) return amd_fail(st, "out of memory");
  for (int64_t o = 0; o < outer; o++)
    for (int64_t c = 0; c < inner; c++) {
      for (int64_t j = 0; j < len; j++)
        it[j] = (topk_item){amd_tensor_get_f64(in[0], (o * len + j) * inner + c), j, a->largest};
      qsort(it, (size_t)len, sizeof *it, topk_cmp);
      for (int64_t j = 0; j < k; j++) idx[(o * k + j) * inner + c] = it[j].i;
    }
  free(it);
  return 0;
}

static int topk_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                        amd_status *st) {
  (void)ctx;
  int64_t k, outer, len, inner;
  int axis;
  if (topk_geom(n, in, &k, &axis, &outer, &len, &inner, st)) return -1;
  int64_t cnt = outer * k * inner;
  int has_idx = n->n_out > 1 && n->out[1] >= 0 && out[1].data; /* the indices output is wanted */
  int64_t *idx = has_idx ? out[1].data : malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *idx);
  if (!idx) return amd_fail(st, "out of memory");
  int rc = topk_select(n, in, idx, k, outer, len, inner, st);
  size_t es = amd_dtype_size(in[0]->dtype);
  for (int64_t e = 0; rc == 0 && e < cnt; e++) {
    int64_t o = e / (k * inner), c = e % inner;
    copy_elem((char *)out[0].data + (size_t)e * es, (const char *)in[0]->data + (size_t)((o * len + idx[e]) * inner + c) * es, es);
  }
  if (!has_idx) free(idx);
  return rc;
}

static int topk_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                         const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  (void)ctx, (void)out;
  if (!dout[0] || !din[0]) return 0;
  if (grad_dtype_ok(in[0]->dtype, st)) return -1;
  int64_t k, outer, len, inner;
  int axis;
  if (topk_geom(n, in, &k, &axis, &outer, &len, &inner, st)) return -1;
  int64_t cnt = outer * k * inner;
  int64_t *idx = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *idx);
  if (!idx) return amd_fail(st, "out of memory");
  int rc = topk_select(n, in, idx, k, outer, len, inner, st);
  size_t es = amd_dtype_size(in[0]->dtype);
  for (int64_t e = 0; rc == 0 && e < cnt; e++) {
    int64_t o = e / (k * inner), c = e % inner;
    grad_add(in[0]->dtype, (char *)din[0]->data + (size_t)((o * len + idx[e]) * inner + c) * es,
             (const char *)dout[0]->data + (size_t)e * es, 1);
  }
  free(idx);
  return rc;
}

const amd_op amd_op_TopK = {.name = "TopK",
                            .idx = AMD_OP_IDX_TopK,
                            .since = {1, 10, 11},
                            .parse = topk_parse,
                            .infer = topk_infer,
                            .forward = topk_forward,
                            .backward = topk_backward,
                            .nondiff_inputs = 1u << 1,
                            .bwd_unread_out = 3u};

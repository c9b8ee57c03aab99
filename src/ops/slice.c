/* Slice and Split: outputs that are strided views of their first input (the
 * conventions of shape.c; the views are attrs.h's amd_view, which the CUDA
 * kernels of cuda/ops/slice.cu gather from the same functions).
 *
 * Slice (versions 1, 10, 11, 13): numpy-style slicing along some axes.
 *   Version 1 reads starts / ends / axes from attributes; 10 and later from
 *   inputs 1..4 (starts, ends, optional axes and steps; int32 or int64, on the
 *   host). Axes omitted: 0 .. len(starts)-1; steps omitted: 1. Negative axes
 *   add the rank, negative starts / ends add the axis size; then starts are
 *   clamped into [0, dim] for a positive step and [0, dim-1] for a negative
 *   one, ends into [0, dim] and [-1, dim-1] (so INT64_MAX or INT64_MIN, as
 *   exporters write for "to the end", work). The output has max(0,
 *   ceil((end - start) / step)) elements along the axis. A step of 0, a
 *   repeated or out-of-range axis and lists of different lengths fail.
 *   Backward: dY is added into the elements of dX it was read from (each dX
 *   element at most once); the rest of dX gets nothing.
 *
 * Split (versions 1, 2, 11, 13, 18): cuts the input along `axis` into the
 *   node's outputs. Sizes from `split` (an attribute up to 11, an input from
 *   13 on, either one in version 1), else equal parts: the axis must divide
 *   evenly before 18; from 18 on (num_outputs, or the number of outputs) each
 *   part is ceil(dim / n) and the last one smaller. Backward: each output's
 *   gradient is added into its part of dX (an output without a gradient adds
 *   nothing).
 *
 * Both move elements by their byte size, so int64 / bool shape tensors work
 * too (on the host); backward takes float or double. */
#include <stdlib.h>
#include <string.h>

#include "shape_util.h"

/* ---------------------------------------------------------------- views */

int amd_dims_simplify(int rank, int64_t *dims, int64_t *str) {
  for (int i = 0; i < rank; i++)
    if (dims[i] == 0) return rank;
  int r = 0;
  for (int i = 0; i < rank; i++) { /* drop the axes of size 1 */
    if (dims[i] == 1) continue;
    dims[r] = dims[i];
    str[r] = str[i];
    r++;
  }
  int m = 0; /* merge an axis into the kept one before it where they are one run */
  for (int i = 0; i < r; i++) {
    if (m > 0 && str[m - 1] == str[i] * dims[i]) {
      dims[m - 1] *= dims[i];
      str[m - 1] = str[i];
      continue;
    }
    dims[m] = dims[i];
    str[m] = str[i];
    m++;
  }
  return m;
}

/* ---------------------------------------------------------------- Slice */

typedef struct slice_attrs {
  int n_starts, n_ends, n_axes; /* version 1's attributes; n_axes -1 when absent */
  int64_t starts[AMD_MAX_RANK], ends[AMD_MAX_RANK], axes[AMD_MAX_RANK];
} slice_attrs;

static int slice_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  slice_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->n_starts = a->n_ends = a->n_axes = -1;
  if (n->since >= 10) return 0;
  a->n_starts = attr_ints(p, "starts", a->starts, AMD_MAX_RANK, st);
  a->n_ends = attr_ints(p, "ends", a->ends, AMD_MAX_RANK, st);
  a->n_axes = attr_ints(p, "axes", a->axes, AMD_MAX_RANK, st);
  if (a->n_starts == -3 || a->n_ends == -3 || a->n_axes == -3) return -1;
  if (a->n_starts < 0 || a->n_ends < 0) return amd_fail(st, "Slice-1 needs starts and ends attributes");
  return 0;
}

/* The lists of this node: from the attributes (version 1) or inputs 1..4.
 * n_axes / n_steps are -1 when omitted. Returns the length of starts or -1. */
static int slice_lists(const amd_node *n, const amd_tensor *const *in, int64_t *starts, int64_t *ends,
                       int64_t *axes, int64_t *steps, int *n_axes, int *n_steps, amd_status *st) {
  const slice_attrs *a = n->attrs;
  int n_starts, n_ends;
  *n_steps = -1;
  if (n->since < 10) {
    n_starts = a->n_starts, n_ends = a->n_ends, *n_axes = a->n_axes;
    memcpy(starts, a->starts, sizeof a->starts);
    memcpy(ends, a->ends, sizeof a->ends);
    memcpy(axes, a->axes, sizeof a->axes);
  } else {
    if (need_in(n, in, 1, "starts", st) || need_in(n, in, 2, "ends", st)) return -1;
    n_starts = read_ints(in[1], starts, AMD_MAX_RANK, "starts", st);
    if (n_starts < 0) return -1;
    n_ends = read_ints(in[2], ends, AMD_MAX_RANK, "ends", st);
    if (n_ends < 0) return -1;
    *n_axes = -1;
    if (n->n_in > 3 && in[3] && (*n_axes = read_ints(in[3], axes, AMD_MAX_RANK, "axes", st)) < 0) return -1;
    if (n->n_in > 4 && in[4] && (*n_steps = read_ints(in[4], steps, AMD_MAX_RANK, "steps", st)) < 0)
      return -1;
  }
  if (n_ends != n_starts) return amd_fail(st, "starts has %d values and ends %d", n_starts, n_ends);
  if (*n_axes >= 0 && *n_axes != n_starts)
    return amd_fail(st, "axes has %d values and starts %d", *n_axes, n_starts);
  if (*n_steps >= 0 && *n_steps != n_starts)
    return amd_fail(st, "steps has %d values and starts %d", *n_steps, n_starts);
  return n_starts;
}

/* One axis of size dim: start, step (clamped so that step * stride cannot
 * overflow) and the number of elements taken. */
static void slice_axis(int64_t dim, int64_t start, int64_t end, int64_t *step, int64_t *first, int64_t *len) {
  int64_t s = start < 0 ? start + dim : start, e = end < 0 ? end + dim : end, k = *step;
  if (dim == 0) {
    *first = 0, *step = 1, *len = 0;
    return;
  }
  if (k > dim + 1) k = dim + 1; /* any larger step takes at most one element, as this one does */
  if (k < -(dim + 1)) k = -(dim + 1);
  if (k > 0) {
    s = s < 0 ? 0 : s > dim ? dim : s;
    e = e < 0 ? 0 : e > dim ? dim : e;
    *len = e > s ? (e - s - 1) / k + 1 : 0;
  } else {
    s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s;
    e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
    *len = s > e ? (s - e - 1) / -k + 1 : 0;
  }
  if (*len <= 1) k = 1;
  if (*len == 0) s = 0;
  *first = s;
  *step = k;
}

int amd_slice_view(const amd_node *n, const amd_tensor *const *in, amd_view *v, amd_status *st) {
  if (need_in(n, in, 0, "data", st)) return -1;
  const amd_tensor *x = in[0];
  int64_t starts[AMD_MAX_RANK], ends[AMD_MAX_RANK], axes[AMD_MAX_RANK], steps[AMD_MAX_RANK];
  int n_axes, n_steps;
  int cnt = slice_lists(n, in, starts, ends, axes, steps, &n_axes, &n_steps, st);
  if (cnt < 0) return -1;
  if (n_axes < 0) {
    if (cnt > x->rank)
      return amd_fail(st, "%d starts without axes for an input of rank %d", cnt, x->rank);
    for (int i = 0; i < cnt; i++) axes[i] = i;
  }
  int64_t xstr[AMD_MAX_RANK], first[AMD_MAX_RANK], step[AMD_MAX_RANK];
  contiguous_strides(x->rank, x->dims, xstr);
  v->rank = x->rank;
  for (int i = 0; i < x->rank; i++) first[i] = 0, step[i] = 1, v->dims[i] = x->dims[i];
  int seen[AMD_MAX_RANK] = {0};
  for (int i = 0; i < cnt; i++) {
    int ax = amd_axis(axes[i], x->rank, st);
    if (ax < 0) return -1;
    if (seen[ax]) return amd_fail(st, "axis %lld is repeated", (long long)axes[i]);
    seen[ax] = 1;
    step[ax] = n_steps >= 0 ? steps[i] : 1;
    if (step[ax] == 0) return amd_fail(st, "steps[%d] is 0", i);
    slice_axis(x->dims[ax], starts[i], ends[i], &step[ax], &first[ax], &v->dims[ax]);
  }
  v->base = 0;
  for (int i = 0; i < x->rank; i++) {
    v->base += first[i] * xstr[i];
    v->str[i] = step[i] * xstr[i];
  }
  return 0;
}

static int slice_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  amd_view v;
  size_t es;
  if (amd_slice_view(n, in, &v, st) || elem_size(in[0], "data", &es, st)) return -1;
  amd_tensor_set_shape(&out[0], in[0]->dtype, v.rank, v.dims);
  return 0;
}

static int slice_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                         amd_status *st) {
  (void)ctx;
  amd_view v;
  if (amd_slice_view(n, in, &v, st)) return -1;
  v.rank = amd_dims_simplify(v.rank, v.dims, v.str);
  if (amd_tensor_numel(&out[0]) > 0) view_gather(out[0].data, in[0]->data, amd_dtype_size(in[0]->dtype), &v);
  return 0;
}

static int slice_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                          const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  (void)ctx;
  if (!dout[0] || !din[0]) return 0;
  if (grad_dtype_ok(in[0]->dtype, st)) return -1;
  amd_view v;
  if (amd_slice_view(n, in, &v, st)) return -1;
  v.rank = amd_dims_simplify(v.rank, v.dims, v.str);
  if (amd_tensor_numel(&out[0]) > 0) view_scatter_add(in[0]->dtype, din[0]->data, dout[0]->data, &v);
  return 0;
}

const amd_op amd_op_Slice = {.name = "Slice",
                             .idx = AMD_OP_IDX_Slice,
                             .since = {1, 10, 11, 13},
                             .parse = slice_parse,
                             .infer = slice_infer,
                             .forward = slice_forward,
                             .backward = slice_backward,
                             .nondiff_inputs = 0x1eu,
                             .bwd_unread_in = 1u,
                             .bwd_unread_out = 1u};

/* ---------------------------------------------------------------- Split */

#define SPLIT_MAX 16 /* a node has at most 16 outputs (the executor's limit) */

typedef struct split_attrs {
  int64_t axis;
  int n_split; /* the split attribute's length (versions 1..11), -1 when absent */
  int64_t split[SPLIT_MAX];
  int64_t num_outputs; /* version 18; 0 when absent */
} split_attrs;

static int split_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  split_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->axis = amd_attr_int(p, "axis", 0);
  a->n_split = -1;
  if (n->since < 13) {
    a->n_split = attr_ints(p, "split", a->split, SPLIT_MAX, st);
    if (a->n_split == -3) return -1;
  }
  if (n->since >= 18 && amd_attr_find(p, "num_outputs")) {
    a->num_outputs = amd_attr_int(p, "num_outputs", 0);
    if (a->num_outputs < 1) return amd_fail(st, "num_outputs must be positive (got %lld)", (long long)a->num_outputs);
  }
  if (n->n_out < 1 || n->n_out > SPLIT_MAX) return amd_fail(st, "Split has %d outputs (1 to %d supported)", n->n_out, SPLIT_MAX);
  if (a->num_outputs && a->num_outputs != n->n_out)
    return amd_fail(st, "num_outputs is %lld but the node has %d outputs", (long long)a->num_outputs, n->n_out);
  return 0;
}

/* The axis and the size of each output along it (checked against x). */
static int split_sizes(const amd_node *n, const amd_tensor *const *in, int *axis, int64_t *sizes,
                       amd_status *st) {
  const split_attrs *a = n->attrs;
  if (need_in(n, in, 0, "input", st)) return -1;
  const amd_tensor *x = in[0];
  if (x->rank == 0) return amd_fail(st, "cannot split a scalar");
  if ((*axis = amd_axis(a->axis, x->rank, st)) < 0) return -1;
  int64_t dim = x->dims[*axis];
  int cnt = a->n_split;
  if (cnt >= 0) {
    memcpy(sizes, a->split, (size_t)cnt * sizeof *sizes);
  } else if ((n->since == 1 || n->since >= 13) && n->n_in > 1 && in[1]) {
    if ((cnt = read_ints(in[1], sizes, SPLIT_MAX, "split", st)) < 0) return -1;
  }
  if (cnt >= 0) {
    if (a->num_outputs) return amd_fail(st, "Split has both a split input and num_outputs");
    if (cnt != n->n_out) return amd_fail(st, "split has %d values for %d outputs", cnt, n->n_out);
    int64_t sum = 0;
    for (int k = 0; k < cnt; k++) {
      if (sizes[k] < 0 || sizes[k] > dim)
        return amd_fail(st, "split[%d] = %lld out of [0, %lld]", k, (long long)sizes[k], (long long)dim);
      sum += sizes[k];
    }
    if (sum != dim)
      return amd_fail(st, "split sums to %lld, axis %d has size %lld", (long long)sum, *axis, (long long)dim);
    return 0;
  }
  int64_t parts = n->n_out, chunk = (dim + parts - 1) / parts;
  if (dim % parts != 0) {
    if (n->since < 18)
      return amd_fail(st, "axis %d of size %lld does not split into %lld equal parts", *axis, (long long)dim,
                      (long long)parts);
    if (dim - chunk * (parts - 1) < 0)
      return amd_fail(st, "axis %d of size %lld cannot make %lld parts of %lld and a smaller last one", *axis,
                      (long long)dim, (long long)parts, (long long)chunk);
  }
  for (int k = 0; k < parts; k++) sizes[k] = k < parts - 1 ? chunk : dim - chunk * (parts - 1);
  return 0;
}

int amd_split_view(const amd_node *n, const amd_tensor *const *in, int k, amd_view *v, amd_status *st) {
  int64_t sizes[SPLIT_MAX];
  int axis = 0;
  if (split_sizes(n, in, &axis, sizes, st)) return -1;
  AMD_ASSERT(k >= 0 && k < n->n_out);
  const amd_tensor *x = in[0];
  v->rank = x->rank;
  memcpy(v->dims, x->dims, (size_t)x->rank * sizeof *v->dims);
  contiguous_strides(x->rank, x->dims, v->str);
  int64_t at = 0;
  for (int j = 0; j < k; j++) at += sizes[j];
  v->dims[axis] = sizes[k];
  v->base = at * v->str[axis];
  return 0;
}

static int split_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  size_t es;
  if (need_in(n, in, 0, "input", st) || elem_size(in[0], "input", &es, st)) return -1;
  for (int k = 0; k < n->n_out; k++) {
    amd_view v;
    if (amd_split_view(n, in, k, &v, st)) return -1;
    amd_tensor_set_shape(&out[k], in[0]->dtype, v.rank, v.dims);
  }
  return 0;
}

static int split_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                         amd_status *st) {
  (void)ctx;
  for (int k = 0; k < n->n_out; k++) {
    if (n->out[k] < 0 || amd_tensor_numel(&out[k]) == 0) continue;
    amd_view v;
    if (amd_split_view(n, in, k, &v, st)) return -1;
    v.rank = amd_dims_simplify(v.rank, v.dims, v.str);
    view_gather(out[k].data, in[0]->data, amd_dtype_size(in[0]->dtype), &v);
  }
  return 0;
}

static int split_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                          const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  (void)ctx;
  if (!din[0]) return 0;
  if (grad_dtype_ok(in[0]->dtype, st)) return -1;
  for (int k = 0; k < n->n_out; k++) {
    if (!dout[k] || amd_tensor_numel(&out[k]) == 0) continue;
    amd_view v;
    if (amd_split_view(n, in, k, &v, st)) return -1;
    v.rank = amd_dims_simplify(v.rank, v.dims, v.str);
    view_scatter_add(in[0]->dtype, din[0]->data, dout[k]->data, &v);
  }
  return 0;
}

const amd_op amd_op_Split = {.name = "Split",
                             .idx = AMD_OP_IDX_Split,
                             .since = {1, 2, 11, 13, 18},
                             .parse = split_parse,
                             .infer = split_infer,
                             .forward = split_forward,
                             .backward = split_backward,
                             .nondiff_inputs = 1u << 1,
                             .bwd_unread_in = 1u,
                             .bwd_unread_out = 0xffffu};

/* Shape and data-movement ops: Flatten, Reshape, Transpose, Squeeze, Unsqueeze,
 * Concat, Shape, Gather, Identity, Dropout (Constant and Cast are in
 * constant.c, Pad in pad.c; the helpers they share in shape_util.h).
 *
 * Conventions:
 * - These ops are dtype-generic: they move elements by their byte size
 *   (amd_dtype_size) and never look at the values, except Cast (converts),
 *   Dropout in training (scales floating-point values) and Pad (fill value).
 *   Dtypes without a size (string, complex) are rejected with a clear error.
 * - Shape-like inputs (Reshape's shape, Squeeze/Unsqueeze axes, Pad's pads,
 *   Dropout's ratio / training_mode) are host tensors read during infer.
 * - Attributes are parsed once into a per-op struct (node->attrs, one block).
 *   Constant stores its tensor's data in the same block, right after the struct.
 * - Backward (float and double gradients only) ACCUMULATES (+=) into din[k]
 *   where din[k] != NULL. Reshape-like ops add the gradient through; Transpose
 *   scatters it back; Concat splits it; Gather scatter-adds; Pad crops it and,
 *   in reflect / edge / wrap mode, adds the copies back to their sources;
 *   Dropout regenerates the forward mask from ctx->rng (which the engine
 *   restores to its pre-forward value). Shape, Constant and Cast have none. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/omp.h"
#include "random.h"
#include "shape_util.h"

/* ---------------------------------------------------------------- helpers */





/* Product of dims[lo..hi). */
static int64_t dims_prod(const int64_t *dims, int lo, int hi) {
  int64_t p = 1;
  for (int i = lo; i < hi; i++) p *= dims[i];
  return p;
}

/* Gathers a strided view of src into contiguous dst: dst has shape dims
 * (rank entries), and element (i0..ik) of dst is src[sum i_j * sstr[j]]
 * (strides in elements). Rows of the last dim, in blocks on every core. */
static void strided_copy(void *dst, const void *src, size_t es, int rank, const int64_t *dims,
                         const int64_t *sstr) {
  if (rank == 0) {
    copy_elem(dst, src, es);
    return;
  }
  const int64_t total = dims_prod(dims, 0, rank), inner = dims[rank - 1], istr = sstr[rank - 1];
  if (total == 0) return;
  const int64_t rows = total / inner, blocks = rows < 64 ? rows : 64;
  AMD_PARALLEL_FOR(total)
  for (int64_t blk = 0; blk < blocks; blk++) {
    const int64_t r0 = rows * blk / blocks, r1 = rows * (blk + 1) / blocks;
    int64_t idx[AMD_MAX_RANK];
    int64_t off = amd_odometer_at(rank - 1, dims, sstr, r0, idx); /* source offset of row r0 */
    char *d = (char *)dst + (size_t)(r0 * inner) * es;
    const char *s = src;
    for (int64_t r = r0; r < r1; r++) {
      if (istr == 1) {
        memcpy(d, s + (size_t)off * es, (size_t)inner * es);
        d += (size_t)inner * es;
      } else {
        for (int64_t i = 0; i < inner; i++, d += es) copy_elem(d, s + (size_t)(off + i * istr) * es, es);
      }
      for (int ax = rank - 2; ax >= 0; ax--) {
        off += sstr[ax];
        if (++idx[ax] < dims[ax]) break;
        off -= sstr[ax] * dims[ax];
        idx[ax] = 0;
      }
    }
  }
}

/* Forward of every op whose output is its first input's bytes (reshapes). */
static int forward_copy(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                        amd_status *st) {
  (void)n, (void)ctx, (void)st;
  size_t bytes = amd_tensor_nbytes(&out[0]);
  AMD_ASSERT(bytes == amd_tensor_nbytes(in[0]));
  if (bytes) par_memcpy(out[0].data, in[0]->data, bytes);
  return 0;
}

/* ---- backward helpers ---- */



/* Backward of every op whose output is its first input's bytes (reshapes). */
static int backward_copy(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                         const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  (void)n, (void)ctx, (void)out;
  if (!dout[0] || !din[0]) return 0;
  if (grad_dtype_ok(in[0]->dtype, st)) return -1;
  AMD_ASSERT(amd_tensor_numel(dout[0]) == amd_tensor_numel(din[0]));
  grad_add(in[0]->dtype, din[0]->data, dout[0]->data, amd_tensor_numel(din[0]));
  return 0;
}

/* A single int64 axis attribute (Flatten, Concat, Gather). */


/* ---------------------------------------------------------------- Flatten */

static int flatten_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  amd_axis_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->axis = amd_attr_int(p, "axis", 1);
  return 0;
}

static int flatten_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (need_in(n, in, 0, "input", st)) return -1;
  const amd_axis_attrs *a = n->attrs;
  const amd_tensor *x = in[0];
  size_t es;
  if (elem_size(x, "input", &es, st)) return -1;
  int64_t axis = a->axis < 0 ? a->axis + x->rank : a->axis;
  if (axis < 0 || axis > x->rank)
    return amd_fail(st, "axis %lld out of range for rank %d", (long long)a->axis, x->rank);
  int64_t dims[2] = {dims_prod(x->dims, 0, (int)axis), dims_prod(x->dims, (int)axis, x->rank)};
  amd_tensor_set_shape(&out[0], x->dtype, 2, dims);
  return 0;
}

const amd_op amd_op_Flatten = {.name = "Flatten",
                               .idx = AMD_OP_IDX_Flatten,
                               .since = {1, 9, 11, 13},
                               .parse = flatten_parse,
                               .infer = flatten_infer,
                               .forward = forward_copy,
                               .backward = backward_copy};

/* ---------------------------------------------------------------- Reshape */

typedef struct reshape_attrs {
  int allowzero;
  int n_shape; /* opset < 5: the shape attribute's length */
  int64_t shape[AMD_MAX_RANK];
} reshape_attrs;

static int reshape_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  reshape_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->allowzero = (int)amd_attr_int(p, "allowzero", 0);
  a->n_shape = -1;
  if (n->since < 5) {
    a->n_shape = attr_ints(p, "shape", a->shape, AMD_MAX_RANK, st);
    if (a->n_shape == -3) return -1;
    if (a->n_shape < 0) return amd_fail(st, "Reshape-1 needs a shape attribute");
  }
  return 0;
}

static int reshape_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (need_in(n, in, 0, "data", st)) return -1;
  const reshape_attrs *a = n->attrs;
  const amd_tensor *x = in[0];
  size_t es;
  if (elem_size(x, "data", &es, st)) return -1;
  int64_t shape[AMD_MAX_RANK];
  int rank;
  if (n->since < 5) {
    rank = a->n_shape;
    memcpy(shape, a->shape, sizeof shape);
  } else {
    if (need_in(n, in, 1, "shape", st)) return -1;
    rank = read_ints(in[1], shape, AMD_MAX_RANK, "shape", st);
    if (rank < 0) return -1;
  }
  int infer_at = -1, has_zero = 0;
  int64_t known = 1;
  for (int i = 0; i < rank; i++) {
    if (shape[i] == -1) {
      if (infer_at >= 0) return amd_fail(st, "shape has more than one -1");
      infer_at = i;
      continue;
    }
    if (shape[i] < -1) return amd_fail(st, "shape has invalid dimension %lld", (long long)shape[i]);
    if (shape[i] == 0) {
      has_zero = 1;
      if (!a->allowzero) {
        if (i >= x->rank)
          return amd_fail(st, "shape dimension %d is 0 (copy) but the input has rank %d", i, x->rank);
        shape[i] = x->dims[i];
      }
    }
    if (shape[i] > 0 && known > AMD_MAX_TENSOR_BYTES / shape[i]) return amd_fail(st, "shape too large");
    known *= shape[i];
  }
  int64_t total = amd_tensor_numel(x);
  if (infer_at >= 0) {
    if (a->allowzero && has_zero) return amd_fail(st, "shape has both -1 and 0 with allowzero=1");
    if (known == 0) {
      if (total != 0) return amd_fail(st, "cannot infer -1 in shape with a zero dimension");
      shape[infer_at] = 0;
    } else {
      if (total % known != 0) {
        char sb[128];
        return amd_fail(st, "cannot reshape input %s (%lld elements) with -1: %lld is not a multiple of %lld",
                        amd_shape_str(x, sb, sizeof sb), (long long)total, (long long)total,
                        (long long)known);
      }
      shape[infer_at] = total / known;
    }
    known = total;
  }
  if (known != total) {
    char sb[128], so[128];
    amd_tensor tmp = {.rank = rank};
    for (int i = 0; i < rank; i++) tmp.dims[i] = shape[i];
    return amd_fail(st, "cannot reshape input %s (%lld elements) to %s (%lld elements)",
                    amd_shape_str(x, sb, sizeof sb), (long long)total, amd_shape_str(&tmp, so, sizeof so),
                    (long long)known);
  }
  amd_tensor_set_shape(&out[0], x->dtype, rank, shape);
  return 0;
}

const amd_op amd_op_Reshape = {.name = "Reshape",
                               .idx = AMD_OP_IDX_Reshape,
                               .since = {1, 5, 13, 14},
                               .parse = reshape_parse,
                               .infer = reshape_infer,
                               .forward = forward_copy,
                               .backward = backward_copy,
                               .nondiff_inputs = 1u << 1};

/* ---------------------------------------------------------------- Transpose */

typedef struct transpose_attrs {
  int n_perm; /* -1: reverse the axes */
  int64_t perm[AMD_MAX_RANK];
} transpose_attrs;

static int transpose_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  transpose_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->n_perm = attr_ints(p, "perm", a->perm, AMD_MAX_RANK, st);
  return a->n_perm == -3 ? -1 : 0;
}

/* The permutation for input rank (checked). */
static int transpose_perm(const transpose_attrs *a, int rank, int *perm, amd_status *st) {
  if (a->n_perm < 0) {
    for (int i = 0; i < rank; i++) perm[i] = rank - 1 - i;
    return 0;
  }
  if (a->n_perm != rank) return amd_fail(st, "perm has %d entries for an input of rank %d", a->n_perm, rank);
  int seen[AMD_MAX_RANK] = {0};
  for (int i = 0; i < rank; i++) {
    int64_t v = a->perm[i] < 0 ? a->perm[i] + rank : a->perm[i];
    if (v < 0 || v >= rank || seen[v])
      return amd_fail(st, "perm is not a permutation of 0..%d", rank - 1);
    seen[v] = 1;
    perm[i] = (int)v;
  }
  return 0;
}

int amd_transpose_view(const amd_node *n, const amd_tensor *x, amd_view *v, amd_status *st) {
  int perm[AMD_MAX_RANK];
  if (transpose_perm(n->attrs, x->rank, perm, st)) return -1;
  int64_t xstr[AMD_MAX_RANK], s = 1;
  for (int i = x->rank - 1; i >= 0; i--) {
    xstr[i] = s;
    s *= x->dims[i];
  }
  v->rank = x->rank;
  v->base = 0;
  for (int i = 0; i < x->rank; i++) {
    v->dims[i] = x->dims[perm[i]];
    v->str[i] = xstr[perm[i]];
  }
  return 0;
}

static int transpose_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (need_in(n, in, 0, "data", st)) return -1;
  const amd_tensor *x = in[0];
  size_t es;
  if (elem_size(x, "data", &es, st)) return -1;
  int perm[AMD_MAX_RANK];
  if (transpose_perm(n->attrs, x->rank, perm, st)) return -1;
  out[0].dtype = x->dtype;
  out[0].rank = x->rank;
  for (int i = 0; i < x->rank; i++) out[0].dims[i] = x->dims[perm[i]];
  return 0;
}

static int transpose_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                             amd_status *st) {
  (void)ctx;
  const amd_tensor *x = in[0];
  int perm[AMD_MAX_RANK];
  if (transpose_perm(n->attrs, x->rank, perm, st)) return -1;
  int64_t xstr[AMD_MAX_RANK], sstr[AMD_MAX_RANK];
  int64_t s = 1;
  for (int i = x->rank - 1; i >= 0; i--) {
    xstr[i] = s;
    s *= x->dims[i];
  }
  for (int i = 0; i < x->rank; i++) sstr[i] = xstr[perm[i]];
  strided_copy(out[0].data, x->data, amd_dtype_size(x->dtype), out[0].rank, out[0].dims, sstr);
  return 0;
}

/* dx[sum idx_j * dstr_j] += dy[idx] over dy's shape (a bijection: rows in
 * blocks on every core). */
#define TRANSPOSE_BWD(SUF, T)                                                                                \
  static void transpose_bwd_##SUF(T *dx, const T *dy, int rank, const int64_t *dims, const int64_t *dstr) {  \
    const int64_t total = dims_prod(dims, 0, rank), inner = dims[rank - 1], istr = dstr[rank - 1];           \
    if (total == 0) return;                                                                                  \
    const int64_t rows = total / inner, blocks = rows < 64 ? rows : 64;                                      \
    AMD_PARALLEL_FOR(total)                                                                                  \
    for (int64_t blk = 0; blk < blocks; blk++) {                                                             \
      const int64_t r0 = rows * blk / blocks, r1 = rows * (blk + 1) / blocks;                                \
      int64_t idx[AMD_MAX_RANK];                                                                             \
      int64_t off = amd_odometer_at(rank - 1, dims, dstr, r0, idx);                                          \
      const T *g = dy + r0 * inner;                                                                          \
      for (int64_t r = r0; r < r1; r++) {                                                                    \
        for (int64_t i = 0; i < inner; i++) dx[off + i * istr] += *g++;                                      \
        for (int ax = rank - 2; ax >= 0; ax--) {                                                             \
          off += dstr[ax];                                                                                   \
          if (++idx[ax] < dims[ax]) break;                                                                   \
          off -= dstr[ax] * dims[ax];                                                                        \
          idx[ax] = 0;                                                                                       \
        }                                                                                                    \
      }                                                                                                      \
    }                                                                                                        \
  }

TRANSPOSE_BWD(f32, float)
TRANSPOSE_BWD(f64, double)

static int transpose_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in,
                              const amd_tensor *out, const amd_tensor *const *dout, amd_tensor *const *din,
                              amd_status *st) {
  (void)ctx;
  if (!dout[0] || !din[0]) return 0;
  const amd_tensor *x = in[0];
  if (grad_dtype_ok(x->dtype, st)) return -1;
  if (amd_tensor_numel(x) == 0) return 0;
  if (x->rank == 0) {
    grad_add(x->dtype, din[0]->data, dout[0]->data, 1);
    return 0;
  }
  int perm[AMD_MAX_RANK];
  if (transpose_perm(n->attrs, x->rank, perm, st)) return -1;
  int64_t xstr[AMD_MAX_RANK], dstr[AMD_MAX_RANK], s = 1;
  for (int i = x->rank - 1; i >= 0; i--) {
    xstr[i] = s;
    s *= x->dims[i];
  }
  for (int i = 0; i < x->rank; i++) dstr[i] = xstr[perm[i]];
  if (x->dtype == AMD_FLOAT)
    transpose_bwd_f32(din[0]->data, dout[0]->data, out[0].rank, out[0].dims, dstr);
  else
    transpose_bwd_f64(din[0]->data, dout[0]->data, out[0].rank, out[0].dims, dstr);
  return 0;
}

const amd_op amd_op_Transpose = {.name = "Transpose",
                                 .idx = AMD_OP_IDX_Transpose,
                                 .since = {1, 13},
                                 .parse = transpose_parse,
                                 .infer = transpose_infer,
                                 .forward = transpose_forward,
                                 .backward = transpose_backward};

/* ---------------------------------------------------------------- Squeeze / Unsqueeze */

typedef struct axes_attrs {
  int n_axes; /* -1: absent (opset >= 13 reads the axes input) */
  int64_t axes[AMD_MAX_RANK];
} axes_attrs;

static int axes_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  axes_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->n_axes = -1;
  if (n->since < 13) {
    a->n_axes = attr_ints(p, "axes", a->axes, AMD_MAX_RANK, st);
    if (a->n_axes == -3) return -1;
  }
  return 0;
}

/* The axes from the attribute (opset < 13) or the optional input 1; -1 when
 * neither is given, -2 on error. */
static int get_axes(const amd_node *n, const amd_tensor *const *in, int64_t *axes, amd_status *st) {
  const axes_attrs *a = n->attrs;
  if (n->since < 13) {
    if (a->n_axes >= 0) memcpy(axes, a->axes, sizeof a->axes);
    return a->n_axes;
  }
  if (n->n_in < 2 || !in[1]) return -1;
  int cnt = read_ints(in[1], axes, AMD_MAX_RANK, "axes", st);
  return cnt < 0 ? -2 : cnt;
}

static int squeeze_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (need_in(n, in, 0, "data", st)) return -1;
  const amd_tensor *x = in[0];
  size_t es;
  if (elem_size(x, "data", &es, st)) return -1;
  int64_t axes[AMD_MAX_RANK];
  int cnt = get_axes(n, in, axes, st);
  if (cnt == -2) return -1;
  int drop[AMD_MAX_RANK] = {0};
  if (cnt < 0) {
    for (int i = 0; i < x->rank; i++) drop[i] = x->dims[i] == 1;
  } else {
    for (int k = 0; k < cnt; k++) {
      int ax = amd_axis(axes[k], x->rank, st);
      if (ax < 0) return -1;
      if (x->rank == 0) return amd_fail(st, "cannot squeeze a scalar");
      if (x->dims[ax] != 1)
        return amd_fail(st, "cannot squeeze axis %lld of size %lld", (long long)axes[k],
                        (long long)x->dims[ax]);
      drop[ax] = 1;
    }
  }
  out[0].dtype = x->dtype;
  out[0].rank = 0;
  for (int i = 0; i < x->rank; i++)
    if (!drop[i]) out[0].dims[out[0].rank++] = x->dims[i];
  return 0;
}

const amd_op amd_op_Squeeze = {.name = "Squeeze",
                               .idx = AMD_OP_IDX_Squeeze,
                               .since = {1, 11, 13},
                               .parse = axes_parse,
                               .infer = squeeze_infer,
                               .forward = forward_copy,
                               .backward = backward_copy,
                               .nondiff_inputs = 1u << 1};

static int unsqueeze_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (need_in(n, in, 0, "data", st)) return -1;
  const amd_tensor *x = in[0];
  size_t es;
  if (elem_size(x, "data", &es, st)) return -1;
  int64_t axes[AMD_MAX_RANK];
  int cnt = get_axes(n, in, axes, st);
  if (cnt == -2) return -1;
  if (cnt < 0) return amd_fail(st, "Unsqueeze needs axes");
  int rank = x->rank + cnt;
  if (rank > AMD_MAX_RANK) return amd_fail(st, "output rank %d exceeds %d", rank, AMD_MAX_RANK);
  int ins[AMD_MAX_RANK] = {0};
  for (int k = 0; k < cnt; k++) {
    int ax = amd_axis(axes[k], rank, st);
    if (ax < 0) return -1;
    if (ins[ax]) return amd_fail(st, "axis %lld repeated", (long long)axes[k]);
    ins[ax] = 1;
  }
  out[0].dtype = x->dtype;
  out[0].rank = rank;
  for (int i = 0, j = 0; i < rank; i++) out[0].dims[i] = ins[i] ? 1 : x->dims[j++];
  return 0;
}

const amd_op amd_op_Unsqueeze = {.name = "Unsqueeze",
                                 .idx = AMD_OP_IDX_Unsqueeze,
                                 .since = {1, 11, 13},
                                 .parse = axes_parse,
                                 .infer = unsqueeze_infer,
                                 .forward = forward_copy,
                                 .backward = backward_copy,
                                 .nondiff_inputs = 1u << 1};

/* ---------------------------------------------------------------- Concat */

static int concat_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  amd_axis_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  if (n->since >= 4 && !amd_attr_find(p, "axis")) return amd_fail(st, "Concat needs an axis attribute");
  a->axis = amd_attr_int(p, "axis", 1);
  return 0;
}

static int concat_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  const amd_axis_attrs *a = n->attrs;
  if (n->n_in < 1) return amd_fail(st, "Concat needs at least one input");
  for (int k = 0; k < n->n_in; k++)
    if (need_in(n, in, k, "data", st)) return -1;
  const amd_tensor *x = in[0];
  size_t es;
  if (elem_size(x, "input 0", &es, st)) return -1;
  if (x->rank == 0) return amd_fail(st, "cannot concatenate scalars");
  int axis = amd_axis(a->axis, x->rank, st);
  if (axis < 0) return -1;
  copy_shape(&out[0], x);
  for (int k = 1; k < n->n_in; k++) {
    const amd_tensor *y = in[k];
    if (y->dtype != x->dtype)
      return amd_fail(st, "input %d has dtype %s, input 0 has %s", k, amd_dtype_name(y->dtype),
                      amd_dtype_name(x->dtype));
    int ok = y->rank == x->rank;
    for (int i = 0; ok && i < x->rank; i++) ok = i == axis || y->dims[i] == x->dims[i];
    if (!ok) {
      char sx[128], sy[128];
      return amd_fail(st, "input %d of shape %s does not match input 0 of shape %s on axes other than %d", k,
                      amd_shape_str(y, sy, sizeof sy), amd_shape_str(x, sx, sizeof sx), axis);
    }
    out[0].dims[axis] += y->dims[axis];
  }
  return 0;
}

static int concat_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                          amd_status *st) {
  (void)ctx;
  const amd_axis_attrs *a = n->attrs;
  int axis = amd_axis(a->axis, out[0].rank, st);
  if (axis < 0) return -1;
  size_t es = amd_dtype_size(out[0].dtype);
  int64_t outer = dims_prod(out[0].dims, 0, axis);
  size_t inner = (size_t)dims_prod(out[0].dims, axis + 1, out[0].rank) * es;
  char *d = out[0].data;
  for (int64_t o = 0; o < outer; o++) {
    for (int k = 0; k < n->n_in; k++) {
      size_t block = (size_t)in[k]->dims[axis] * inner;
      if (block) memcpy(d, (const char *)in[k]->data + (size_t)o * block, block);
      d += block;
    }
  }
  return 0;
}

static int concat_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                           const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  (void)ctx;
  if (!dout[0]) return 0;
  const amd_axis_attrs *a = n->attrs;
  amd_dtype t = out[0].dtype;
  if (grad_dtype_ok(t, st)) return -1;
  int axis = amd_axis(a->axis, out[0].rank, st);
  if (axis < 0) return -1;
  size_t es = amd_dtype_size(t);
  int64_t outer = dims_prod(out[0].dims, 0, axis), inner = dims_prod(out[0].dims, axis + 1, out[0].rank);
  const char *g = dout[0]->data;
  for (int64_t o = 0; o < outer; o++) {
    for (int k = 0; k < n->n_in; k++) {
      int64_t block = in[k]->dims[axis] * inner;
      if (din[k] && block) grad_add(t, (char *)din[k]->data + (size_t)(o * block) * es, g, block);
      g += (size_t)block * es;
    }
  }
  return 0;
}

const amd_op amd_op_Concat = {.name = "Concat",
                              .idx = AMD_OP_IDX_Concat,
                              .since = {1, 4, 11, 13},
                              .parse = concat_parse,
                              .infer = concat_infer,
                              .forward = concat_forward,
                              .backward = concat_backward};

/* ---------------------------------------------------------------- Shape */

typedef struct shape_attrs {
  int64_t start, end;
  int has_end;
} shape_attrs;

static int shape_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  shape_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  if (n->since >= 15) {
    a->start = amd_attr_int(p, "start", 0);
    a->has_end = amd_attr_find(p, "end") != NULL;
    a->end = amd_attr_int(p, "end", 0);
  }
  return 0;
}

/* The [start, end) range of dims that Shape returns. */
static void shape_range(const shape_attrs *a, int rank, int *start, int *end) {
  int64_t s = a->start, e = a->has_end ? a->end : rank;
  if (s < 0) s += rank;
  if (e < 0) e += rank;
  s = s < 0 ? 0 : s > rank ? rank : s;
  e = e < 0 ? 0 : e > rank ? rank : e;
  *start = (int)s;
  *end = (int)(e < s ? s : e);
}

static int shape_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (need_in(n, in, 0, "data", st)) return -1;
  int s, e;
  shape_range(n->attrs, in[0]->rank, &s, &e);
  int64_t len = e - s;
  amd_tensor_set_shape(&out[0], AMD_INT64, 1, &len);
  return 0;
}

static int shape_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                         amd_status *st) {
  (void)ctx, (void)st;
  int s, e;
  shape_range(n->attrs, in[0]->rank, &s, &e);
  int64_t *d = out[0].data;
  for (int i = s; i < e; i++) d[i - s] = in[0]->dims[i];
  return 0;
}

const amd_op amd_op_Shape = {.name = "Shape",
                             .idx = AMD_OP_IDX_Shape,
                             .since = {1, 13, 15},
                             .parse = shape_parse,
                             .infer = shape_infer,
                             .forward = shape_forward,
                             .nondiff_inputs = 1u, /* reads the shape only: no gradient flows back */
                             .fwd_unread_in = 1u};

/* ---------------------------------------------------------------- Gather */

static int gather_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  amd_axis_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->axis = amd_attr_int(p, "axis", 0);
  return 0;
}

static int gather_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (need_in(n, in, 0, "data", st)) return -1;
  const amd_axis_attrs *a = n->attrs;
  const amd_tensor *x = in[0], *idx = in[1];
  if (need_in(n, in, 1, "indices", st)) return -1;
  size_t es;
  if (elem_size(x, "data", &es, st)) return -1;
  if (idx->dtype != AMD_INT64 && idx->dtype != AMD_INT32)
    return amd_fail(st, "indices must be int32 or int64 (got %s)", amd_dtype_name(idx->dtype));
  if (x->rank == 0) return amd_fail(st, "data must have rank >= 1");
  int axis = amd_axis(a->axis, x->rank, st);
  if (axis < 0) return -1;
  int rank = x->rank + idx->rank - 1;
  if (rank > AMD_MAX_RANK) return amd_fail(st, "output rank %d exceeds %d", rank, AMD_MAX_RANK);
  out[0].dtype = x->dtype;
  out[0].rank = 0;
  for (int i = 0; i < axis; i++) out[0].dims[out[0].rank++] = x->dims[i];
  for (int i = 0; i < idx->rank; i++) out[0].dims[out[0].rank++] = idx->dims[i];
  for (int i = axis + 1; i < x->rank; i++) out[0].dims[out[0].rank++] = x->dims[i];
  return 0;
}

static int gather_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                          amd_status *st) {
  (void)ctx;
  const amd_axis_attrs *a = n->attrs;
  const amd_tensor *x = in[0], *idx = in[1];
  int axis = amd_axis(a->axis, x->rank, st);
  if (axis < 0) return -1;
  size_t es = amd_dtype_size(x->dtype);
  int64_t outer = dims_prod(x->dims, 0, axis), dim = x->dims[axis];
  size_t inner = (size_t)dims_prod(x->dims, axis + 1, x->rank) * es;
  int64_t cnt = amd_tensor_numel(idx);
  for (int64_t j = 0; j < cnt; j++) {
    int64_t v = amd_tensor_get_i64(idx, j);
    if (v < -dim || v >= dim)
      return amd_fail(st, "index %lld out of range for axis %d of size %lld", (long long)v, axis,
                      (long long)dim);
  }
  char *d = out[0].data;
  const char *s = x->data;
  for (int64_t o = 0; o < outer; o++) {
    const char *base = s + (size_t)(o * dim) * inner;
    for (int64_t j = 0; j < cnt; j++, d += inner) {
      int64_t v = amd_tensor_get_i64(idx, j);
      if (v < 0) v += dim;
      memcpy(d, base + (size_t)v * inner, inner);
    }
  }
  return 0;
}

/* Scatter-add: dx[o, idx[j], :] += dy[o, j, :] (repeated indices add up). */
static int gather_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                           const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  (void)ctx, (void)out;
  if (!dout[0] || !din[0]) return 0;
  const amd_axis_attrs *a = n->attrs;
  const amd_tensor *x = in[0], *idx = in[1];
  if (grad_dtype_ok(x->dtype, st)) return -1;
  int axis = amd_axis(a->axis, x->rank, st);
  if (axis < 0) return -1;
  size_t es = amd_dtype_size(x->dtype);
  int64_t outer = dims_prod(x->dims, 0, axis), dim = x->dims[axis];
  int64_t inner = dims_prod(x->dims, axis + 1, x->rank);
  int64_t cnt = amd_tensor_numel(idx);
  const char *g = dout[0]->data;
  char *d = din[0]->data;
  for (int64_t o = 0; o < outer; o++) {
    char *base = d + (size_t)(o * dim * inner) * es;
    for (int64_t j = 0; j < cnt; j++, g += (size_t)inner * es) {
      int64_t v = amd_tensor_get_i64(idx, j);
      if (v < 0) v += dim;
      if (v < 0 || v >= dim)
        return amd_fail(st, "index %lld out of range for axis %d of size %lld",
                        (long long)amd_tensor_get_i64(idx, j), axis, (long long)dim);
      grad_add(x->dtype, base + (size_t)(v * inner) * es, g, inner);
    }
  }
  return 0;
}

const amd_op amd_op_Gather = {.name = "Gather",
                              .idx = AMD_OP_IDX_Gather,
                              .since = {1, 11, 13},
                              .parse = gather_parse,
                              .infer = gather_infer,
                              .forward = gather_forward,
                              .backward = gather_backward,
                              .nondiff_inputs = 1u << 1};

/* ---------------------------------------------------------------- Identity */

static int identity_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (need_in(n, in, 0, "input", st)) return -1;
  size_t es;
  if (elem_size(in[0], "input", &es, st)) return -1;
  copy_shape(&out[0], in[0]);
  return 0;
}

const amd_op amd_op_Identity = {.name = "Identity",
                                .idx = AMD_OP_IDX_Identity,
                                .since = {1, 13, 14, 16},
                                .infer = identity_infer,
                                .forward = forward_copy,
                                .backward = backward_copy};

/* ---------------------------------------------------------------- Dropout */



static int dropout_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  amd_dropout_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->ratio = amd_attr_float(p, "ratio", 0.5f);
  return 0;
}

static int dropout_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (need_in(n, in, 0, "data", st)) return -1;
  const amd_tensor *x = in[0];
  size_t es;
  if (elem_size(x, "data", &es, st)) return -1;
  copy_shape(&out[0], x);
  if (n->n_out > 1) amd_tensor_set_shape(&out[1], n->since >= 10 ? AMD_BOOL : x->dtype, x->rank, x->dims);
  if (n->since >= 12) {
    if (n->n_in > 1 && in[1] && amd_tensor_numel(in[1]) != 1) return amd_fail(st, "ratio must be a scalar");
    if (n->n_in > 2 && in[2] && amd_tensor_numel(in[2]) != 1)
      return amd_fail(st, "training_mode must be a scalar");
  }
  return 0;
}

/* The masks: splitmix64 on ctx->rng, one draw per element (random.h: the
 * stream the random ops share, and the GPU's counter form of it). */

/* The ratio and whether this pass drops (shared by forward and backward). */
void amd_dropout_mode(const amd_node *n, const amd_ctx *ctx, const amd_tensor *const *in, double *ratio,
                         int *training) {
  const amd_dropout_attrs *a = n->attrs;
  *ratio = a->ratio;
  *training = ctx && ctx->training;
  if (n->since >= 12) {
    *ratio = a->ratio_const ? a->ratio : n->n_in > 1 && in[1] ? amd_tensor_get_f64(in[1], 0) : 0.5;
    if (n->n_in > 2 && in[2] && amd_tensor_get_i64(in[2], 0)) *training = 1;
  }
  if (ctx && ctx->inference) *training = 0; /* `eval` and the test pass of `train` */
}

static int dropout_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                           amd_status *st) {
  const amd_tensor *x = in[0];
  double ratio;
  int training;
  amd_dropout_mode(n, ctx, in, &ratio, &training);
  int has_mask = n->n_out > 1 && n->out[1] >= 0 && out[1].data;
  int64_t cnt = amd_tensor_numel(x);
  if (!training || ratio == 0) {
    if (cnt) par_memcpy(out[0].data, x->data, amd_tensor_nbytes(x));
    if (has_mask)
      for (int64_t i = 0; i < cnt; i++) amd_tensor_set_i64(&out[1], i, 1);
    return 0;
  }
  if (!(ratio >= 0 && ratio <= 1)) return amd_fail(st, "ratio %g out of [0, 1]", ratio);
  if (!is_float_dtype(x->dtype))
    return amd_fail(st, "training-mode Dropout needs a floating-point input (got %s)",
                    amd_dtype_name(x->dtype));
  AMD_ASSERT(ctx);
  double scale = ratio < 1 ? 1.0 / (1.0 - ratio) : 0.0;
  const uint64_t s0 = ctx->rng;
  AMD_PARALLEL_FOR(cnt)
  for (int64_t i = 0; i < cnt; i++) {
    int keep = amd_rng_u01(amd_splitmix_at(s0, i)) >= ratio; /* the i-th draw of the stream */
    amd_tensor_set_f64(&out[0], i, keep ? amd_tensor_get_f64(x, i) * scale : 0.0);
    if (has_mask) amd_tensor_set_i64(&out[1], i, keep);
  }
  ctx->rng = amd_splitmix_skip(s0, cnt);
  return 0;
}

/* dx += g * keep * scale, with keep drawn exactly as forward drew it (from a
 * copy of ctx->rng, which holds the state it had before forward). */
static int dropout_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in,
                            const amd_tensor *out, const amd_tensor *const *dout, amd_tensor *const *din,
                            amd_status *st) {
  (void)out;
  if (!dout[0] || !din[0]) return 0;
  const amd_tensor *x = in[0];
  if (grad_dtype_ok(x->dtype, st)) return -1;
  double ratio;
  int training;
  amd_dropout_mode(n, ctx, in, &ratio, &training);
  int64_t cnt = amd_tensor_numel(x);
  if (!training || ratio == 0) {
    grad_add(x->dtype, din[0]->data, dout[0]->data, cnt);
    return 0;
  }
  if (!(ratio >= 0 && ratio <= 1)) return amd_fail(st, "ratio %g out of [0, 1]", ratio);
  AMD_ASSERT(ctx);
  const uint64_t s0 = ctx->rng;
  double scale = ratio < 1 ? 1.0 / (1.0 - ratio) : 0.0;
  AMD_PARALLEL_FOR(cnt)
  for (int64_t i = 0; i < cnt; i++) {
    if (amd_rng_u01(amd_splitmix_at(s0, i)) < ratio) continue;
    if (x->dtype == AMD_FLOAT)
      ((float *)din[0]->data)[i] += (float)(((const float *)dout[0]->data)[i] * scale);
    else
      ((double *)din[0]->data)[i] += ((const double *)dout[0]->data)[i] * scale;
  }
  return 0;
}

const amd_op amd_op_Dropout = {.name = "Dropout",
                               .idx = AMD_OP_IDX_Dropout,
                               .since = {1, 6, 7, 10, 12, 13},
                               .parse = dropout_parse,
                               .infer = dropout_infer,
                               .forward = dropout_forward,
                               .backward = dropout_backward,
                               .nondiff_inputs = (1u << 1) | (1u << 2)};

/* Pad: constant, reflect, edge and wrap modes (the conventions of shape.c).
 * The pads (and the value, the axes) are inputs from opset 11 on and
 * attributes before; backward crops the gradient and, in reflect / edge /
 * wrap mode, adds the copies back to their sources. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pad.h"
#include "shape_util.h"

/* ---------------------------------------------------------------- Pad */

typedef struct pad_attrs {
  int mode;
  int n_pads; /* opset < 11: the pads attribute's length */
  int64_t pads[2 * AMD_MAX_RANK];
  double value; /* opset < 11 */
} pad_attrs;

static int pad_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  pad_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  char buf[32];
  const char *mode = amd_attr_string(p, "mode", "constant", buf, sizeof buf);
  if (strcmp(mode, "constant") == 0)
    a->mode = AMD_PAD_CONSTANT;
  else if (strcmp(mode, "reflect") == 0)
    a->mode = AMD_PAD_REFLECT;
  else if (strcmp(mode, "edge") == 0)
    a->mode = AMD_PAD_EDGE;
  else if (strcmp(mode, "wrap") == 0)
    a->mode = AMD_PAD_WRAP;
  else
    return amd_fail(st, "unknown Pad mode '%s'", mode);
  a->n_pads = -1;
  if (n->since < 11) {
    a->n_pads = attr_ints(p, n->since < 2 ? "paddings" : "pads", a->pads, 2 * AMD_MAX_RANK, st);
    if (a->n_pads == -3) return -1;
    if (a->n_pads < 0) return amd_fail(st, "Pad needs a pads attribute");
    a->value = amd_attr_float(p, "value", 0.0f);
  }
  return 0;
}

/* Per-axis begin / end pads for x (from the attribute or inputs 1 and 3). */
static int pad_amounts(const amd_node *n, const amd_tensor *const *in, int64_t *begin, int64_t *end,
                       amd_status *st) {
  const pad_attrs *a = n->attrs;
  const amd_tensor *x = in[0];
  int64_t pads[2 * AMD_MAX_RANK];
  int cnt;
  if (n->since < 11) {
    cnt = a->n_pads;
    memcpy(pads, a->pads, sizeof pads);
  } else {
    if (need_in(n, in, 1, "pads", st)) return -1;
    cnt = read_ints(in[1], pads, 2 * AMD_MAX_RANK, "pads", st);
    if (cnt < 0) return -1;
  }
  int axes[AMD_MAX_RANK], n_axes = x->rank;
  for (int i = 0; i < x->rank; i++) axes[i] = i;
  if (n->since >= 18 && n->n_in > 3 && in[3]) {
    int64_t ax[AMD_MAX_RANK];
    n_axes = read_ints(in[3], ax, AMD_MAX_RANK, "axes", st);
    if (n_axes < 0) return -1;
    int seen[AMD_MAX_RANK] = {0};
    for (int k = 0; k < n_axes; k++) {
      axes[k] = amd_axis(ax[k], x->rank, st);
      if (axes[k] < 0) return -1;
      if (seen[axes[k]]) return amd_fail(st, "axis %lld repeated", (long long)ax[k]);
      seen[axes[k]] = 1;
    }
  }
  if (cnt != 2 * n_axes)
    return amd_fail(st, "pads has %d values, expected %d for %d axes", cnt, 2 * n_axes, n_axes);
  for (int i = 0; i < x->rank; i++) begin[i] = end[i] = 0;
  for (int k = 0; k < n_axes; k++) {
    begin[axes[k]] = pads[k];
    end[axes[k]] = pads[k + n_axes];
  }
  return 0;
}

static int pad_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (need_in(n, in, 0, "data", st)) return -1;
  const pad_attrs *a = n->attrs;
  const amd_tensor *x = in[0];
  size_t es;
  if (elem_size(x, "data", &es, st)) return -1;
  int64_t begin[AMD_MAX_RANK], end[AMD_MAX_RANK];
  if (pad_amounts(n, in, begin, end, st)) return -1;
  if (n->since >= 11 && n->n_in > 2 && in[2]) {
    if (amd_tensor_numel(in[2]) > 1) return amd_fail(st, "constant_value must be a scalar");
    if (in[2]->dtype != x->dtype && amd_dtype_size(in[2]->dtype) == 0)
      return amd_fail(st, "constant_value has unsupported dtype %s", amd_dtype_name(in[2]->dtype));
  }
  out[0].dtype = x->dtype;
  out[0].rank = x->rank;
  for (int i = 0; i < x->rank; i++) {
    int64_t d = x->dims[i] + begin[i] + end[i];
    if (d < 0)
      return amd_fail(st, "pads %lld, %lld crop more than axis %d's size %lld", (long long)begin[i],
                      (long long)end[i], i, (long long)x->dims[i]);
    /* the part of the input kept after cropping must not be empty when padding by copying it */
    int64_t kept = x->dims[i] - (begin[i] < 0 ? -begin[i] : 0) - (end[i] < 0 ? -end[i] : 0);
    if (a->mode != AMD_PAD_CONSTANT && kept <= 0 && d > 0)
      return amd_fail(st, "cannot pad an empty axis %d in this mode", i);
    out[0].dims[i] = d;
  }
  return 0;
}

double amd_pad_fill(const amd_node *n, const amd_tensor *const *in) {
  const pad_attrs *a = n->attrs;
  if (n->since < 11) return a->value;
  return n->n_in > 2 && in[2] && amd_tensor_numel(in[2]) == 1 ? amd_tensor_get_f64(in[2], 0) : 0.0;
}

int amd_pad_geometry(const amd_node *n, const amd_tensor *const *in, amd_pad_geom *g, amd_status *st) {
  const pad_attrs *a = n->attrs;
  amd_tensor y = {0};
  if (pad_infer(n, in, &y, st)) return -1;
  int64_t begin[AMD_MAX_RANK], end[AMD_MAX_RANK];
  if (pad_amounts(n, in, begin, end, st)) return -1;
  const amd_tensor *x = in[0];
  memset(g, 0, sizeof *g);
  g->rank = x->rank;
  g->mode = a->mode;
  for (int i = 0; i < x->rank; i++) {
    g->xdims[i] = x->dims[i];
    g->ydims[i] = y.dims[i];
    g->lo[i] = begin[i] < 0 ? -begin[i] : 0;
    g->len[i] = x->dims[i] - g->lo[i] - (end[i] < 0 ? -end[i] : 0);
    g->pb[i] = begin[i] > 0 ? begin[i] : 0;
  }
  return 0;
}

/* Per-axis index maps from output to input (-1: fill) in one malloc'd block
 * (returned; the caller frees it; NULL with st set on failure): map[i][k] is
 * the input index along axis i for output index k. Also x's strides. */
static int64_t *pad_maps(int mode, const amd_tensor *x, const amd_tensor *y, const int64_t *begin,
                         const int64_t *end, int64_t **map, int64_t *xstr, amd_status *st) {
  int rank = x->rank;
  int64_t map_len = 0;
  for (int i = 0; i < rank; i++) map_len += y->dims[i];
  int64_t *maps = malloc((size_t)(map_len > 0 ? map_len : 1) * sizeof *maps);
  if (!maps) {
    amd_fail(st, "out of memory");
    return NULL;
  }
  int64_t off = 0, s = 1;
  for (int i = rank - 1; i >= 0; i--) {
    xstr[i] = s;
    s *= x->dims[i];
  }
  for (int i = 0; i < rank; i++) {
    map[i] = maps + off;
    off += y->dims[i];
    int64_t lo = begin[i] < 0 ? -begin[i] : 0, hi = x->dims[i] - (end[i] < 0 ? -end[i] : 0);
    int64_t pb = begin[i] > 0 ? begin[i] : 0;
    for (int64_t k = 0; k < y->dims[i]; k++) map[i][k] = amd_pad_map(mode, k, lo, hi - lo, pb);
  }
  return maps;
}

static int pad_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                       amd_status *st) {
  (void)ctx;
  const pad_attrs *a = n->attrs;
  const amd_tensor *x = in[0];
  amd_tensor *y = &out[0];
  size_t es = amd_dtype_size(x->dtype);
  int64_t begin[AMD_MAX_RANK], end[AMD_MAX_RANK];
  if (pad_amounts(n, in, begin, end, st)) return -1;

  /* the fill value, as one element of x's dtype */
  unsigned char fill[16] = {0};
  amd_tensor fv = {.dtype = x->dtype, .rank = 0, .data = fill};
  if (n->since < 11) {
    amd_tensor_set_f64(&fv, 0, a->value);
  } else if (n->n_in > 2 && in[2] && amd_tensor_numel(in[2]) == 1) {
    if (in[2]->dtype == x->dtype)
      memcpy(fill, in[2]->data, es);
    else if (is_float_dtype(in[2]->dtype))
      amd_tensor_set_f64(&fv, 0, amd_tensor_get_f64(in[2], 0));
    else
      amd_tensor_set_i64(&fv, 0, amd_tensor_get_i64(in[2], 0));
  }

  int64_t total = amd_tensor_numel(y);
  if (total == 0) return 0;
  int rank = x->rank;
  if (rank == 0) {
    memcpy(y->data, x->data, es);
    return 0;
  }
  int64_t *map[AMD_MAX_RANK], xstr[AMD_MAX_RANK];
  int64_t *maps = pad_maps(a->mode, x, y, begin, end, map, xstr, st);
  if (!maps) return -1;

  int64_t idx[AMD_MAX_RANK] = {0};
  int64_t inner = y->dims[rank - 1];
  const int64_t *imap = map[rank - 1];
  char *d = y->data;
  const char *src = x->data;
  for (;;) {
    int64_t row = 0;
    int fill_row = 0;
    for (int i = 0; i < rank - 1; i++) {
      int64_t m = map[i][idx[i]];
      if (m < 0)
        fill_row = 1;
      else
        row += m * xstr[i];
    }
    for (int64_t k = 0; k < inner; k++, d += es) {
      int64_t m = fill_row ? -1 : imap[k];
      copy_elem(d, m < 0 ? (const char *)fill : src + (size_t)(row + m) * es, es);
    }
    int ax = rank - 2;
    for (; ax >= 0; ax--) {
      if (++idx[ax] < y->dims[ax]) break;
      idx[ax] = 0;
    }
    if (ax < 0) break;
  }
  free(maps);
  return 0;
}

/* dx[map(k)] += dy[k] for every output element k that copies an input
 * element: cropping for constant mode, and the mirrored / edge / wrapped
 * copies added back to their sources in the other modes. */
#define PAD_BWD(SUF, T)                                                                                      \
  static void pad_bwd_##SUF(T *dx, const T *dy, int rank, const int64_t *ydims, int64_t *const *map,         \
                            const int64_t *xstr) {                                                           \
    int64_t idx[AMD_MAX_RANK] = {0};                                                                         \
    int64_t inner = ydims[rank - 1];                                                                         \
    const int64_t *imap = map[rank - 1];                                                                     \
    for (;;) {                                                                                               \
      int64_t row = 0;                                                                                       \
      int fill_row = 0;                                                                                      \
      for (int i = 0; i < rank - 1; i++) {                                                                   \
        int64_t m = map[i][idx[i]];                                                                          \
        if (m < 0)                                                                                           \
          fill_row = 1;                                                                                      \
        else                                                                                                 \
          row += m * xstr[i];                                                                                \
      }                                                                                                      \
      if (!fill_row)                                                                                         \
        for (int64_t k = 0; k < inner; k++)                                                                  \
          if (imap[k] >= 0) dx[row + imap[k]] += dy[k];                                                      \
      dy += inner;                                                                                           \
      int ax = rank - 2;                                                                                     \
      for (; ax >= 0; ax--) {                                                                                \
        if (++idx[ax] < ydims[ax]) break;                                                                    \
        idx[ax] = 0;                                                                                         \
      }                                                                                                      \
      if (ax < 0) break;                                                                                     \
    }                                                                                                        \
  }

PAD_BWD(f32, float)
PAD_BWD(f64, double)

static int pad_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                        const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  (void)ctx;
  if (!dout[0] || !din[0]) return 0;
  const pad_attrs *a = n->attrs;
  const amd_tensor *x = in[0], *y = &out[0];
  if (grad_dtype_ok(x->dtype, st)) return -1;
  int64_t begin[AMD_MAX_RANK], end[AMD_MAX_RANK];
  if (pad_amounts(n, in, begin, end, st)) return -1;
  if (amd_tensor_numel(y) == 0 || amd_tensor_numel(x) == 0) return 0;
  if (x->rank == 0) {
    grad_add(x->dtype, din[0]->data, dout[0]->data, 1);
    return 0;
  }
  int64_t *map[AMD_MAX_RANK], xstr[AMD_MAX_RANK];
  int64_t *maps = pad_maps(a->mode, x, y, begin, end, map, xstr, st);
  if (!maps) return -1;
  if (x->dtype == AMD_FLOAT)
    pad_bwd_f32(din[0]->data, dout[0]->data, x->rank, y->dims, map, xstr);
  else
    pad_bwd_f64(din[0]->data, dout[0]->data, x->rank, y->dims, map, xstr);
  free(maps);
  return 0;
}

const amd_op amd_op_Pad = {.name = "Pad",
                           .idx = AMD_OP_IDX_Pad,
                           .since = {1, 2, 11, 13, 18, 19},
                           .parse = pad_parse,
                           .infer = pad_infer,
                           .forward = pad_forward,
                           .backward = pad_backward,
                           .nondiff_inputs = (1u << 1) | (1u << 2) | (1u << 3)};

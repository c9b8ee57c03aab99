/* Expand, Tile and ScatterND (the conventions of shape.c).
 *
 * Expand (versions 8, 13): broadcasts the input to numpy's broadcast of its
 *   shape and the `shape` input (int64, on the host), both ways: a 1 in
 *   either becomes the other's size; other mismatches fail. Backward: dX is
 *   the sum of dY over the broadcast positions.
 * Tile (versions 6, 13): repeats the input repeats[i] times along axis i
 *   (repeats: int64, one non-negative value per axis, on the host). Backward:
 *   the sum of dY over the tiles. Version 1's tiles / axis inputs are not
 *   implemented.
 *   Both gather the attrs.h view amd_bcast_geom.fwd; backward sums, per dX
 *   element, its dY elements in dY's order in double and adds the sum into
 *   dX (the CUDA kernels do the same sums).
 * ScatterND (versions 11, 13, 16, 18): a copy of data with the slices that
 *   indices[..., :] (int64, on the host; negative values add the axis size,
 *   others out of range fail) name replaced by, or from 16 on combined
 *   ("add", "mul"; from 18 "max", "min") with, the slices of updates, in
 *   the order of indices. Reduction "none" moves bytes (any dtype); the
 *   others take float, double, int32 and int64. Backward (float, double):
 *   reduction none: dData = dY where no update landed, dUpdates = dY at the
 *   update's slice (where indices repeat, only the last one, which forward
 *   kept); add: dData = dY, dUpdates = dY at each slice. Mul, max and min
 *   have no backward (it fails saying so). The CUDA kernels are index.cu's
 *   (float data; index.h's amd_scatternd_geometry).
 *
 * Expand, Tile and ScatterND's "none" move elements by their byte size, so
 * int64 / bool shape tensors work too (on the host). */
#include <stdlib.h>
#include <string.h>

#include "index.h"
#include "shape_util.h"

/* ---------------------------------------------------------------- Expand / Tile geometry */

void amd_expand_geometry(const amd_tensor *x, const amd_tensor *y, amd_bcast_geom *g) {
  int64_t xstr[AMD_MAX_RANK], ystr[AMD_MAX_RANK];
  contiguous_strides(x->rank, x->dims, xstr);
  contiguous_strides(y->rank, y->dims, ystr);
  int lead = y->rank - x->rank;
  AMD_ASSERT(lead >= 0);
  g->fwd.rank = y->rank;
  g->fwd.base = 0;
  g->xrank = x->rank;
  g->rrank = 0;
  for (int a = 0; a < y->rank; a++) {
    int xa = a - lead;
    int bcast = xa < 0 || x->dims[xa] != y->dims[a];
    g->fwd.dims[a] = y->dims[a];
    g->fwd.str[a] = bcast ? 0 : xstr[xa];
    if (xa >= 0) {
      g->xdims[xa] = x->dims[xa];
      g->xstr[xa] = bcast ? 0 : ystr[a];
    }
    if (bcast) {
      g->rdims[g->rrank] = y->dims[a];
      g->rstr[g->rrank++] = ystr[a];
    }
  }
}

void amd_tile_geometry(const amd_tensor *x, const amd_tensor *y, amd_bcast_geom *g) {
  int64_t xstr[AMD_MAX_RANK], ystr[AMD_MAX_RANK];
  AMD_ASSERT(x->rank == y->rank);
  contiguous_strides(x->rank, x->dims, xstr);
  contiguous_strides(y->rank, y->dims, ystr);
  g->fwd.rank = 2 * x->rank;
  g->fwd.base = 0;
  g->xrank = g->rrank = x->rank;
  for (int a = 0; a < x->rank; a++) {
    int64_t rep = x->dims[a] ? y->dims[a] / x->dims[a] : 0;
    /* y's axis a as [rep, x->dims[a]]: the tile, then the position in it */
    g->fwd.dims[2 * a] = rep;
    g->fwd.str[2 * a] = 0;
    g->fwd.dims[2 * a + 1] = x->dims[a];
    g->fwd.str[2 * a + 1] = xstr[a];
    g->xdims[a] = x->dims[a];
    g->xstr[a] = ystr[a];
    g->rdims[a] = rep;
    g->rstr[a] = ystr[a] * x->dims[a];
  }
}

/* Both: the axes simplified, rcount set. */
static void bcast_finish(amd_bcast_geom *g) {
  g->fwd.rank = amd_dims_simplify(g->fwd.rank, g->fwd.dims, g->fwd.str);
  g->xrank = amd_dims_simplify(g->xrank, g->xdims, g->xstr);
  g->rrank = amd_dims_simplify(g->rrank, g->rdims, g->rstr);
  g->rcount = 1;
  for (int i = 0; i < g->rrank; i++) g->rcount *= g->rdims[i];
}

static void bcast_geometry(const amd_node *n, const amd_tensor *x, const amd_tensor *y, amd_bcast_geom *g) {
  if (n->op->idx == AMD_OP_IDX_Tile)
    amd_tile_geometry(x, y, g);
  else
    amd_expand_geometry(x, y, g);
  bcast_finish(g);
}

static int bcast_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                         amd_status *st) {
  (void)ctx, (void)st;
  amd_bcast_geom g;
  if (amd_tensor_numel(&out[0]) == 0) return 0;
  bcast_geometry(n, in[0], &out[0], &g);
  view_gather(out[0].data, in[0]->data, amd_dtype_size(in[0]->dtype), &g.fwd);
  return 0;
}

/* dx[j] += the sum (in double, in dY's order) of dy over the broadcast
 * positions of element j. */
#define BCAST_BWD(SUF, T)                                                                                    \
  static void bcast_bwd_##SUF(T *dx, const T *dy, const amd_bcast_geom *g, int64_t xcount) {               \
    amd_view xv = {.rank = g->xrank};                                                                        \
    memcpy(xv.dims, g->xdims, sizeof g->xdims);                                                              \
    memcpy(xv.str, g->xstr, sizeof g->xstr);                                                                 \
    AMD_ASSERT(view_numel(&xv) == xcount);                                                                   \
    VIEW_FOR_EACH(&xv, base, j, {                                                                            \
      double s = 0;                                                                                          \
      int64_t ri[AMD_VIEW_RANK] = {0};                                                                       \
      int64_t off = base;                                                                                    \
      for (int64_t r = 0; r < g->rcount; r++) {                                                              \
        s += (double)dy[off];                                                                                \
        for (int ax = g->rrank - 1; ax >= 0; ax--) {                                                         \
          off += g->rstr[ax];                                                                                \
          if (++ri[ax] < g->rdims[ax]) break;                                                                \
          off -= g->rstr[ax] * g->rdims[ax];                                                                 \
          ri[ax] = 0;                                                                                        \
        }                                                                                                    \
      }                                                                                                      \
      dx[j] += (T)s;                                                                                         \
    });                                                                                                      \
  }
BCAST_BWD(f32, float)
BCAST_BWD(f64, double)

static int bcast_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                          const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  (void)ctx;
  if (!dout[0] || !din[0]) return 0;
  const amd_tensor *x = in[0];
  if (grad_dtype_ok(x->dtype, st)) return -1;
  int64_t xcount = amd_tensor_numel(x);
  if (xcount == 0 || amd_tensor_numel(&out[0]) == 0) return 0;
  amd_bcast_geom g;
  bcast_geometry(n, x, &out[0], &g);
  if (x->dtype == AMD_FLOAT)
    bcast_bwd_f32(din[0]->data, dout[0]->data, &g, xcount);
  else
    bcast_bwd_f64(din[0]->data, dout[0]->data, &g, xcount);
  return 0;
}

/* ---------------------------------------------------------------- Expand */

static int expand_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (need_in(n, in, 0, "input", st) || need_in(n, in, 1, "shape", st)) return -1;
  const amd_tensor *x = in[0];
  size_t es;
  if (elem_size(x, "input", &es, st)) return -1;
  int64_t shape[AMD_MAX_RANK];
  int sr = read_ints(in[1], shape, AMD_MAX_RANK, "shape", st);
  if (sr < 0) return -1;
  int rank = sr > x->rank ? sr : x->rank;
  int64_t dims[AMD_MAX_RANK], total = 1;
  for (int a = 0; a < rank; a++) {
    int xa = a - (rank - x->rank), sa = a - (rank - sr);
    int64_t dx = xa >= 0 ? x->dims[xa] : 1, ds = sa >= 0 ? shape[sa] : 1;
    if (ds < 0) return amd_fail(st, "shape[%d] is negative (%lld)", sa, (long long)ds);
    if (dx != ds && dx != 1 && ds != 1) {
      char sb[128];
      return amd_fail(st, "cannot expand input %s to shape dimension %d = %lld", amd_shape_str(x, sb, sizeof sb),
                      sa, (long long)ds);
    }
    dims[a] = dx == 1 ? ds : dx;
    if (dims[a] > 0 && total > AMD_MAX_TENSOR_BYTES / dims[a]) return amd_fail(st, "expanded shape too large");
    total *= dims[a];
  }
  amd_tensor_set_shape(&out[0], x->dtype, rank, dims);
  return 0;
}

const amd_op amd_op_Expand = {.name = "Expand",
                              .idx = AMD_OP_IDX_Expand,
                              .since = {8, 13},
                              .infer = expand_infer,
                              .forward = bcast_forward,
                              .backward = bcast_backward,
                              .nondiff_inputs = 1u << 1,
                              .bwd_unread_in = 1u,
                              .bwd_unread_out = 1u};

/* ---------------------------------------------------------------- Tile */

static int tile_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (need_in(n, in, 0, "input", st) || need_in(n, in, 1, "repeats", st)) return -1;
  const amd_tensor *x = in[0];
  size_t es;
  if (elem_size(x, "input", &es, st)) return -1;
  int64_t reps[AMD_MAX_RANK];
  int cnt = read_ints(in[1], reps, AMD_MAX_RANK, "repeats", st);
  if (cnt < 0) return -1;
  if (cnt != x->rank) return amd_fail(st, "repeats has %d values for an input of rank %d", cnt, x->rank);
  int64_t dims[AMD_MAX_RANK], total = 1;
  for (int a = 0; a < x->rank; a++) {
    if (reps[a] < 0) return amd_fail(st, "repeats[%d] is negative (%lld)", a, (long long)reps[a]);
    if (x->dims[a] > 0 && reps[a] > AMD_MAX_TENSOR_BYTES / x->dims[a]) return amd_fail(st, "tiled shape too large");
    dims[a] = x->dims[a] * reps[a];
    if (dims[a] > 0 && total > AMD_MAX_TENSOR_BYTES / dims[a]) return amd_fail(st, "tiled shape too large");
    total *= dims[a];
  }
  amd_tensor_set_shape(&out[0], x->dtype, x->rank, dims);
  return 0;
}

const amd_op amd_op_Tile = {.name = "Tile",
                            .idx = AMD_OP_IDX_Tile,
                            .since = {6, 13},
                            .infer = tile_infer,
                            .forward = bcast_forward,
                            .backward = bcast_backward,
                            .nondiff_inputs = 1u << 1,
                            .bwd_unread_in = 1u,
                            .bwd_unread_out = 1u};

/* ---------------------------------------------------------------- ScatterND */

enum { SND_NONE = AMD_SCATTER_NONE, SND_ADD = AMD_SCATTER_ADD, SND_MUL = AMD_SCATTER_MUL,
       SND_MAX = AMD_SCATTER_MAX, SND_MIN = AMD_SCATTER_MIN };
static const char *const snd_names[] = {"none", "add", "mul", "max", "min"};

typedef amd_scatternd_attrs scatternd_attrs;

static int scatternd_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  scatternd_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->reduction = SND_NONE;
  if (n->since < 16) return 0;
  char buf[16];
  const char *r = amd_attr_string(p, "reduction", "none", buf, sizeof buf);
  int last = n->since >= 18 ? SND_MIN : SND_MUL;
  for (int k = 0; k <= last; k++)
    if (strcmp(r, snd_names[k]) == 0) {
      a->reduction = k;
      return 0;
    }
  return amd_fail(st, "unknown ScatterND reduction '%s' in version %d", r, n->since);
}

/* The geometry: cnt updates of slice elements each, into data of slots
 * slots (its first k axes); slot[i] is update i's slot. Checks the shapes
 * (and, when slot is given, the index values). */
typedef struct snd_geom {
  int64_t cnt, slice, slots;
} snd_geom;

static int scatternd_geom(const amd_tensor *const *in, snd_geom *g, int64_t *slot, amd_status *st) {
  const amd_tensor *x = in[0], *idx = in[1], *upd = in[2];
  if (idx->dtype != AMD_INT64 && idx->dtype != AMD_INT32)
    return amd_fail(st, "indices must be int64 (got %s)", amd_dtype_name(idx->dtype));
  if (idx->rank < 1) return amd_fail(st, "indices must have rank >= 1");
  int64_t k = idx->dims[idx->rank - 1];
  if (k < 1 || k > x->rank)
    return amd_fail(st, "indices' last dimension %lld is not in [1, %d] (data's rank)", (long long)k, x->rank);
  int ok = upd->rank == idx->rank - 1 + x->rank - (int)k;
  for (int i = 0; ok && i < idx->rank - 1; i++) ok = upd->dims[i] == idx->dims[i];
  for (int i = (int)k; ok && i < x->rank; i++) ok = upd->dims[idx->rank - 1 + i - k] == x->dims[i];
  if (!ok) {
    char su[128], si[128], sx[128];
    return amd_fail(st, "updates %s do not fit indices %s into data %s (want indices.shape[:-1] + data.shape[%lld:])",
                    amd_shape_str(upd, su, sizeof su), amd_shape_str(idx, si, sizeof si),
                    amd_shape_str(x, sx, sizeof sx), (long long)k);
  }
  g->cnt = amd_tensor_numel(idx) / k;
  g->slice = 1;
  for (int i = (int)k; i < x->rank; i++) g->slice *= x->dims[i];
  g->slots = 1;
  for (int i = 0; i < k; i++) g->slots *= x->dims[i];
  if (!slot) return 0;
  for (int64_t u = 0; u < g->cnt; u++) {
    int64_t s = 0;
    for (int i = 0; i < k; i++) {
      int64_t v = amd_tensor_get_i64(idx, u * k + i), d = x->dims[i];
      if (v < -d || v >= d)
        return amd_fail(st, "index %lld out of range for axis %d of size %lld (update %lld)", (long long)v, i,
                        (long long)d, (long long)u);
      s = s * d + (v < 0 ? v + d : v);
    }
    slot[u] = s;
  }
  return 0;
}

int amd_scatternd_geometry(const amd_tensor *const *in, int64_t *cnt, int64_t *slice, int64_t *slots, int64_t *slot,
                           amd_status *st) {
  snd_geom g;
  if (scatternd_geom(in, &g, slot, st)) return -1;
  *cnt = g.cnt, *slice = g.slice, *slots = g.slots;
  return 0;
}

static int scatternd_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  const scatternd_attrs *a = n->attrs;
  if (need_in(n, in, 0, "data", st) || need_in(n, in, 1, "indices", st) || need_in(n, in, 2, "updates", st))
    return -1;
  const amd_tensor *x = in[0];
  size_t es;
  if (elem_size(x, "data", &es, st)) return -1;
  if (in[2]->dtype != x->dtype)
    return amd_fail(st, "updates have dtype %s, data %s", amd_dtype_name(in[2]->dtype), amd_dtype_name(x->dtype));
  if (a->reduction != SND_NONE && x->dtype != AMD_FLOAT && x->dtype != AMD_DOUBLE && x->dtype != AMD_INT32 &&
      x->dtype != AMD_INT64)
    return amd_fail(st, "reduction '%s' supports float, double, int32 and int64 data (got %s)",
                    snd_names[a->reduction], amd_dtype_name(x->dtype));
  snd_geom g;
  if (scatternd_geom(in, &g, NULL, st)) return -1;
  copy_shape(&out[0], x);
  return 0;
}

/* y[o + e] = combine(y[o + e], u[e]) for the slice's e. */
#define SND_COMBINE(SUF, T)                                                                                  \
  static void snd_combine_##SUF(int red, T *y, const T *u, int64_t len) {                                    \
    for (int64_t e = 0; e < len; e++) {                                                                      \
      T v = u[e];                                                                                            \
      switch (red) {                                                                                         \
      case SND_ADD:                                                                                          \
        y[e] += v;                                                                                           \
        break;                                                                                               \
      case SND_MUL:                                                                                          \
        y[e] *= v;                                                                                           \
        break;                                                                                               \
      case SND_MAX:                                                                                          \
        y[e] = y[e] >= v ? y[e] : v;                                                                         \
        break;                                                                                               \
      default:                                                                                               \
        y[e] = y[e] <= v ? y[e] : v;                                                                         \
        break;                                                                                               \
      }                                                                                                      \
    }                                                                                                        \
  }
SND_COMBINE(f32, float)
SND_COMBINE(f64, double)
SND_COMBINE(i32, int32_t)
SND_COMBINE(i64, int64_t)

static int scatternd_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                             amd_status *st) {
  (void)ctx;
  const scatternd_attrs *a = n->attrs;
  const amd_tensor *x = in[0];
  size_t es = amd_dtype_size(x->dtype);
  snd_geom g;
  if (scatternd_geom(in, &g, NULL, st)) return -1;
  int64_t *slot = malloc((size_t)(g.cnt > 0 ? g.cnt : 1) * sizeof *slot);
  if (!slot) return amd_fail(st, "out of memory");
  if (scatternd_geom(in, &g, slot, st)) {
    free(slot);
    return -1;
  }
  size_t bytes = amd_tensor_nbytes(x), row = (size_t)g.slice * es;
  if (bytes) memcpy(out[0].data, x->data, bytes);
  char *y = out[0].data;
  const char *u = in[2]->data;
  for (int64_t i = 0; i < g.cnt && row; i++) {
    char *dst = y + (size_t)slot[i] * row;
    const char *src = u + (size_t)i * row;
    if (a->reduction == SND_NONE)
      memcpy(dst, src, row);
    else if (x->dtype == AMD_FLOAT)
      snd_combine_f32(a->reduction, (float *)dst, (const float *)src, g.slice);
    else if (x->dtype == AMD_DOUBLE)
      snd_combine_f64(a->reduction, (double *)dst, (const double *)src, g.slice);
    else if (x->dtype == AMD_INT32)
      snd_combine_i32(a->reduction, (int32_t *)dst, (const int32_t *)src, g.slice);
    else
      snd_combine_i64(a->reduction, (int64_t *)dst, (const int64_t *)src, g.slice);
  }
  free(slot);
  return 0;
}

static int scatternd_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in,
                              const amd_tensor *out, const amd_tensor *const *dout, amd_tensor *const *din,
                              amd_status *st) {
  (void)ctx, (void)out;
  const scatternd_attrs *a = n->attrs;
  if (!dout[0] || (!din[0] && !din[2])) return 0;
  if (a->reduction != SND_NONE && a->reduction != SND_ADD)
    return amd_fail(st, "ScatterND with reduction '%s' has no backward (only 'none' and 'add')",
                    snd_names[a->reduction]);
  amd_dtype t = in[0]->dtype;
  if (grad_dtype_ok(t, st)) return -1;
  snd_geom g;
  if (scatternd_geom(in, &g, NULL, st)) return -1;
  /* owner[s]: the update that slot s ends with (-1: none) */
  int64_t *slot = malloc((size_t)(g.cnt > 0 ? g.cnt : 1) * sizeof *slot);
  int64_t *owner = malloc((size_t)(g.slots > 0 ? g.slots : 1) * sizeof *owner);
  if (!slot || !owner) {
    free(slot);
    free(owner);
    return amd_fail(st, "out of memory");
  }
  int rc = scatternd_geom(in, &g, slot, st);
  size_t es = amd_dtype_size(t), row = (size_t)g.slice * es;
  const char *dy = dout[0]->data;
  if (rc == 0 && a->reduction == SND_ADD) {
    if (din[0]) grad_add(t, din[0]->data, dy, amd_tensor_numel(in[0]));
    for (int64_t i = 0; din[2] && i < g.cnt; i++)
      grad_add(t, (char *)din[2]->data + (size_t)i * row, dy + (size_t)slot[i] * row, g.slice);
  } else if (rc == 0) {
    for (int64_t s = 0; s < g.slots; s++) owner[s] = -1;
    for (int64_t i = 0; i < g.cnt; i++) owner[slot[i]] = i;
    for (int64_t s = 0; s < g.slots; s++) {
      if (owner[s] < 0 && din[0])
        grad_add(t, (char *)din[0]->data + (size_t)s * row, dy + (size_t)s * row, g.slice);
      else if (owner[s] >= 0 && din[2])
        grad_add(t, (char *)din[2]->data + (size_t)owner[s] * row, dy + (size_t)s * row, g.slice);
    }
  }
  free(slot);
  free(owner);
  return rc;
}

const amd_op amd_op_ScatterND = {.name = "ScatterND",
                                 .idx = AMD_OP_IDX_ScatterND,
                                 .since = {11, 13, 16, 18},
                                 .parse = scatternd_parse,
                                 .infer = scatternd_infer,
                                 .forward = scatternd_forward,
                                 .backward = scatternd_backward,
                                 .nondiff_inputs = 1u << 1,
                                 .bwd_unread_in = 1u | 4u,
                                 .bwd_unread_out = 1u};

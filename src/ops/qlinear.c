/* Integer convolution and matrix product on 8-bit codes: QLinearConv (10),
 * QLinearMatMul (10; 21 binds to 10, see src/onnx/opset.c), ConvInteger (10),
 * MatMulInteger (10). Codes int8 or uint8 (each operand its own), scales
 * float32, bias and integer outputs int32; other types fail with a message.
 *
 * All four compute the exact int32 sum sum_k (a_k - za) * (b_k - zb) with ONE
 * function, amd_q8_gemm (src/gemm/qgemm.h, which documents the zero-point
 * expansion and the hook for table-driven 8-bit multipliers):
 *   - the convolutions unfold x into an im2col matrix of codes (a window
 *     reading padding gets x's zero-point code, so that x - zx is 0 there, as
 *     the reference's padding of x - zx with zeros), then per (batch, group)
 *     C = W_g (rows: output channels, zero point w_zp per row) x col (zero
 *     point x_zp for every column);
 *   - the matrix products run numpy.matmul's batch broadcasting (as MatMul)
 *     with one amd_q8_gemm per batch entry.
 *
 * Zero points and scales: x / a: per tensor (one element); for the matrix
 * products also per row of a, shape [..., M, 1] with leading 1s (a 1-D vector
 * is refused as ambiguous: the spec text calls it per row, numpy broadcasting
 * in the reference applies it per column of a). w: per tensor or per output
 * channel ([M]); b: per tensor or per column ([N] or [..., 1, N] with leading
 * 1s). y: per tensor. Each zero point must have its operand's type and, for
 * the QLinear ops, its scale's shape. Per-batch-entry parameters are refused.
 *
 * Requantization (QLinearConv, QLinearMatMul), per output element with row i
 * and column/channel j:
 *   acc = sum_k (a - za)(b - zb)  [+ bias[j] for QLinearConv]     int32, wrapping
 *   m   = (a_scale[i] * b_scale[j]) / y_scale                      float32, as written
 *   y   = saturate(round_half_even((double)acc * (double)m) + y_zp)
 * i.e. the reference implementation's arithmetic (numpy multiplies the int32
 * array by the float32 multiplier in float64). onnxruntime computes
 * (float)acc * m in float32 instead (docs/quantized.md): results differ by
 * one step where the float32 product rounds across a .5 boundary.
 *
 * Backward: none (see quant.c). Int tensors live on the host: with the CUDA
 * backend these ops run on its host fallback. */
#include <stdlib.h>
#include <string.h>

#include "../core/omp.h"
#include "../gemm/qgemm.h"
#include "../mult/mult.h"
#include "attrs.h"
#include "quant.h"

extern const amd_op amd_op_Conv;

/* Conv's attributes, parsed by Conv's own parser (the same attribute set). */
static int qconv_parse(amd_node *n, const amd_attr_list *p, amd_status *st) { return amd_op_Conv.parse(n, p, st); }

static int need8(const amd_tensor *t, const char *what, amd_status *st) {
  if (!amd_q_is8(t->dtype))
    return amd_fail(st, "%s has dtype %s: only int8 and uint8 are implemented", what, amd_dtype_name(t->dtype));
  return 0;
}

/* A zero point (may be NULL) of operand t: same dtype. */
static int zp_type(const amd_tensor *z, const amd_tensor *t, const char *zname, const char *tname,
                   amd_status *st) {
  if (z && z->dtype != t->dtype)
    return amd_fail(st, "%s has dtype %s but %s has dtype %s: they must have the same type", zname,
                    amd_dtype_name(z->dtype), tname, amd_dtype_name(t->dtype));
  return 0;
}

static int scale_float(const amd_tensor *s, const char *what, amd_status *st) {
  if (s && s->dtype != AMD_FLOAT)
    return amd_fail(st, "%s has dtype %s: only float scales are implemented", what, amd_dtype_name(s->dtype));
  return 0;
}

/* Scale and zero point of one operand: same shape when both are given (or
 * one element each). */
static int same_shape(const amd_tensor *s, const amd_tensor *z, const char *sname, const char *zname,
                      amd_status *st) {
  char s1[128], s2[128];
  if (s && z && !amd_same_shape(s, z) && !(amd_tensor_numel(s) == 1 && amd_tensor_numel(z) == 1))
    return amd_fail(st, "%s has shape %s but %s has shape %s: they must have the same shape", sname,
                    amd_shape_str(s, s1, sizeof s1), zname, amd_shape_str(z, s2, sizeof s2));
  return 0;
}

/* Per-tensor parameter (NULL allowed). */
static int per_tensor(const amd_tensor *t, const char *what, amd_status *st) {
  char s1[128];
  if (t && amd_tensor_numel(t) != 1)
    return amd_fail(st, "%s has shape %s: expected a scalar (per-tensor)", what, amd_shape_str(t, s1, sizeof s1));
  return 0;
}

/* Fills n values of parameter t (NULL: 0; one element: broadcast). */
static void fill_zp(const amd_tensor *t, int64_t n, int32_t *dst) {
  int64_t c = t ? amd_tensor_numel(t) : 0;
  for (int64_t i = 0; i < n; i++) dst[i] = t ? amd_q_value(t, c == 1 ? 0 : i) : 0;
}
static void fill_scale(const amd_tensor *t, int64_t n, float *dst) {
  int64_t c = amd_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) dst[i] = ((const float *)t->data)[c == 1 ? 0 : i];
}

/* The 8-bit table of the node's q8 mode (src/mult/q8.h), or NULL (exact
 * products) when it has none. The table's operands are (data, weight); the
 * codes of both must have the mode's signedness. transposed: the GEMM's first
 * operand is the weight (the convolutions). */
static int node_table(const amd_node *n, const amd_tensor *data, const amd_tensor *weight, int transposed,
                      const int32_t **table, amd_status *st) {
  *table = NULL;
  const amd_mult *m = n->mult;
  if (!m || !m->q8) return 0;
  const int sgn = m->q8 == 's';
  if ((data->dtype == AMD_INT8) != sgn || (weight->dtype == AMD_INT8) != sgn)
    return amd_fail(st,
                    "mode %s multiplies %s codes but the data codes are %s and the weight codes %s (q8u is for "
                    "uint8 x uint8, q8s for int8 x int8; mixed operands have no 8-bit table mode: give this "
                    "node another mode with --mode-map)",
                    m->name, sgn ? "int8" : "uint8", amd_dtype_name(data->dtype), amd_dtype_name(weight->dtype));
  *table = transposed ? m->q8_table_t : m->q8_table;
  return 0;
}

/* ---------------------------------------------------------------- convolutions */

/* The inputs of a QLinearConv or ConvInteger node, checked. */
typedef struct qconv_in {
  const amd_tensor *x, *xs, *xz, *w, *ws, *wz, *ys, *yz, *b;
  amd_conv_geom g;
} qconv_in;

/* qlinear: 0 ConvInteger, 1 QLinearConv, 2 the q8 modes' QDQ convolution
 * (x, x_scale, x_zero_point, w, w_scale, w_zero_point, B float). */
static int qconv_inputs(const amd_node *n, const amd_tensor *const *in, int qlinear, qconv_in *q,
                        amd_status *st) {
  char s1[128];
  memset(q, 0, sizeof *q);
  const amd_tensor *fbias = NULL;
  if (qlinear == 2) {
    if (n->n_in < 5 || !in[0] || !in[1] || !in[3] || !in[4])
      return amd_fail(st, "the QDQ convolution needs x, x_scale, w and w_scale (the DequantizeLinear inputs)");
    q->x = in[0], q->xs = in[1], q->xz = amd_q_opt_in(n, in, 2), q->w = in[3], q->ws = in[4], q->wz = amd_q_opt_in(n, in, 5);
    fbias = amd_q_opt_in(n, in, 6);
  } else if (qlinear) {
    if (n->n_in < 8 || !in[0] || !in[1] || !in[3] || !in[4] || !in[6])
      return amd_fail(st, "QLinearConv needs inputs x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, "
                          "y_zero_point");
    q->x = in[0], q->xs = in[1], q->xz = in[2], q->w = in[3], q->ws = in[4], q->wz = in[5];
    q->ys = in[6], q->yz = in[7], q->b = amd_q_opt_in(n, in, 8);
  } else {
    if (n->n_in < 2 || !in[0] || !in[1]) return amd_fail(st, "ConvInteger needs inputs x and w");
    q->x = in[0], q->w = in[1], q->xz = amd_q_opt_in(n, in, 2), q->wz = amd_q_opt_in(n, in, 3);
  }
  if (need8(q->x, "input x", st) || need8(q->w, "weight w", st) ||
      zp_type(q->xz, q->x, "x_zero_point", "x", st) || zp_type(q->wz, q->w, "w_zero_point", "w", st) ||
      (q->yz && need8(q->yz, "y_zero_point", st)) || scale_float(q->xs, "x_scale", st) ||
      scale_float(q->ws, "w_scale", st) || scale_float(q->ys, "y_scale", st) ||
      same_shape(q->xs, q->xz, "x_scale", "x_zero_point", st) ||
      same_shape(q->ws, q->wz, "w_scale", "w_zero_point", st) ||
      same_shape(q->ys, q->yz, "y_scale", "y_zero_point", st) || per_tensor(q->xs, "x_scale", st) ||
      per_tensor(q->xz, "x_zero_point", st) || per_tensor(q->ys, "y_scale", st) ||
      per_tensor(q->yz, "y_zero_point", st))
    return -1;
  if (amd_conv_geometry(n->attrs, q->x, q->w, &q->g, st)) return -1;
  const amd_tensor *wp[2] = {q->ws, q->wz};
  const char *wn[2] = {"w_scale", "w_zero_point"};
  for (int k = 0; k < 2; k++)
    if (wp[k] && amd_tensor_numel(wp[k]) != 1 && (wp[k]->rank != 1 || wp[k]->dims[0] != q->g.m))
      return amd_fail(st, "%s has shape %s: expected a scalar or one value per output channel ([%lld])", wn[k],
                      amd_shape_str(wp[k], s1, sizeof s1), (long long)q->g.m);
  if (q->b && (q->b->dtype != AMD_INT32 || q->b->rank != 1 || q->b->dims[0] != q->g.m))
    return amd_fail(st, "bias B has dtype %s and shape %s: expected int32 [%lld]", amd_dtype_name(q->b->dtype),
                    amd_shape_str(q->b, s1, sizeof s1), (long long)q->g.m);
  if (fbias && (fbias->dtype != AMD_FLOAT || fbias->rank != 1 || fbias->dims[0] != q->g.m))
    return amd_fail(st, "bias B has dtype %s and shape %s: expected float [%lld]", amd_dtype_name(fbias->dtype),
                    amd_shape_str(fbias, s1, sizeof s1), (long long)q->g.m);
  if (qlinear == 2) q->b = fbias;
  return 0;
}

static int qconv_infer_common(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, int qlinear,
                              amd_status *st) {
  qconv_in q;
  if (qconv_inputs(n, in, qlinear, &q, st)) return -1;
  int64_t dims[AMD_MAX_RANK];
  dims[0] = q.g.n;
  dims[1] = q.g.m;
  for (int d = 0; d < q.g.nsp; d++) dims[2 + d] = q.g.out[d];
  amd_dtype yt = qlinear == 2 ? AMD_FLOAT : !qlinear ? AMD_INT32 : q.yz ? q.yz->dtype : q.x->dtype;
  amd_tensor_set_shape(&out[0], yt, q.x->rank, dims);
  return 0;
}
static int qlinearconv_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  return qconv_infer_common(n, in, out, 1, st);
}
static int convinteger_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  return qconv_infer_common(n, in, out, 0, st);
}

/* Unfolds one group's channels of 8-bit codes x (cg x isize) into col
 * ((cg * kvol) x osize), like Conv's im2col; positions in the padding get the
 * code `pad` (x's zero point). */
static void im2col_q8(const amd_conv_geom *g, const uint8_t *x, uint8_t pad, uint8_t *col) {
  const int nsp = g->nsp;
  const int64_t rows = g->cg * g->kvol;
  for (int64_t row = 0; row < rows; row++) {
    int64_t c = row / g->kvol, kidx = row % g->kvol, kpos[AMD_SP], opos[AMD_SP];
    for (int d = nsp - 1; d >= 0; d--) {
      kpos[d] = kidx % g->k[d];
      kidx /= g->k[d];
      opos[d] = 0;
    }
    const uint8_t *xc = x + c * g->isize;
    uint8_t *dst = col + row * g->osize;
    for (int64_t o = 0; o < g->osize; o++) {
      int64_t off = 0;
      int valid = 1;
      for (int d = 0; d < nsp; d++) {
        int64_t i = opos[d] * g->stride[d] - g->pad0[d] + kpos[d] * g->dil[d];
        valid &= i >= 0 && i < g->in[d];
        off = off * g->in[d] + i;
      }
      dst[o] = valid ? xc[off] : pad;
      for (int d = nsp - 1; d >= 0; d--) { /* advance the output odometer */
        if (++opos[d] < g->out[d]) break;
        opos[d] = 0;
      }
    }
  }
}

/* acc (N x M x osize) = the integer convolution of the codes, zero points
 * subtracted (wrapping int32). */
static int qconv_acc(const qconv_in *q, const int32_t *table, int32_t *acc, amd_status *st) {
  const amd_conv_geom *g = &q->g;
  const int64_t kdim = g->cg * g->kvol;
  if (g->osize == 0 || g->m == 0 || g->n == 0) return 0;
  if ((double)kdim * (double)g->osize > (double)AMD_MAX_TENSOR_BYTES)
    return amd_fail(st, "im2col buffer too large (%lld x %lld)", (long long)kdim, (long long)g->osize);
  int32_t *zx = malloc(sizeof(int32_t) * (size_t)g->osize);
  int32_t *zw = malloc(sizeof(int32_t) * (size_t)g->m);
  if (!zx || !zw) {
    free(zx);
    free(zw);
    return amd_fail(st, "out of memory for the im2col buffer");
  }
  fill_zp(q->xz, g->osize, zx);
  fill_zp(q->wz, g->m, zw);
  const uint8_t padcode = (uint8_t)zx[0];
  const int xs = q->x->dtype == AMD_INT8, ws = q->w->dtype == AMD_INT8;
  const uint8_t *xd = q->x->data, *wd = q->w->data;
  /* One job per (batch entry, group), in parallel, each with its own im2col
   * buffer (the GEMM's own row loop then runs serially inside: a small
   * convolution has few rows, many batch entries). The integer sums do not
   * depend on the split. */
  const int64_t jobs = g->n * g->group;
  int failed = 0;
  AMD_PRAGMA(omp parallel if (jobs > 1 && g->mg * kdim * g->osize * jobs > 65536))
  {
    uint8_t *col = malloc((size_t)(kdim > 0 ? kdim : 1) * (size_t)g->osize);
    if (!col) {
      AMD_PRAGMA(omp atomic write)
      failed = 1;
    }
    AMD_PRAGMA(omp for schedule(static))
    for (int64_t t = 0; t < jobs; t++) {
      if (!col) continue;
      const int64_t b = t / g->group, gi = t % g->group;
      im2col_q8(g, xd + (b * g->c + gi * g->cg) * g->isize, padcode, col);
      if (amd_q8_gemm(g->mg, g->osize, kdim, wd + gi * g->mg * kdim, ws, zw + gi * g->mg, col, xs, zx, table,
                      acc + (b * g->m + gi * g->mg) * g->osize)) {
        AMD_PRAGMA(omp atomic write)
        failed = 1;
      }
    }
    free(col);
  }
  free(zx);
  free(zw);
  return failed ? amd_fail(st, "out of memory in the integer convolution") : 0;
}

static int convinteger_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                               amd_status *st) {
  (void)ctx;
  qconv_in q;
  const int32_t *table;
  if (qconv_inputs(n, in, 0, &q, st) || node_table(n, q.x, q.w, 1, &table, st)) return -1;
  return qconv_acc(&q, table, out[0].data, st);
}

static int qlinearconv_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                               amd_status *st) {
  (void)ctx;
  qconv_in q;
  const int32_t *table;
  if (qconv_inputs(n, in, 1, &q, st) || node_table(n, q.x, q.w, 1, &table, st)) return -1;
  const int64_t M = q.g.m, os = q.g.osize, total = q.g.n * M * os;
  int32_t *acc = malloc(sizeof(int32_t) * (size_t)(total > 0 ? total : 1));
  float *mult = malloc(sizeof(float) * (size_t)(M > 0 ? M : 1));
  if (!acc || !mult) {
    free(acc);
    free(mult);
    return amd_fail(st, "out of memory for the accumulators");
  }
  int rc = qconv_acc(&q, table, acc, st);
  const float xsv = ((const float *)q.xs->data)[0], ysv = ((const float *)q.ys->data)[0];
  fill_scale(q.ws, M, mult);
  for (int64_t c = 0; c < M; c++) mult[c] = xsv * mult[c] / ysv; /* float32, left to right */
  const int32_t yz = q.yz ? amd_q_value(q.yz, 0) : 0;
  int32_t lo, hi;
  amd_q_range(out[0].dtype, &lo, &hi);
  const int32_t *bias = q.b ? q.b->data : NULL;
  for (int64_t e = 0; rc == 0 && e < total; e++) {
    const int64_t c = (e / os) % M;
    const int32_t a = bias ? (int32_t)((uint32_t)acc[e] + (uint32_t)bias[c]) : acc[e];
    amd_q_store(&out[0], e, amd_q_round_sat((double)a * (double)mult[c], yz, lo, hi));
  }
  free(acc);
  free(mult);
  return rc;
}

/* ---------------------------------------------------------------- matrix products */

/* Which parameter layout t has for operand op (rank r, M rows or N columns):
 * 0 per tensor, 1 per row of a / per column of b; -1 (st set) otherwise. */
static int mm_param(const amd_tensor *t, int is_a, const amd_mm_shape *s, const char *what, amd_status *st) {
  char s1[128];
  if (!t || amd_tensor_numel(t) == 1) return 0;
  int r = t->rank, ok = r >= (is_a ? 2 : 1);
  for (int d = 0; ok && d < r - 2; d++) ok = t->dims[d] == 1;
  if (ok && is_a) ok = t->dims[r - 1] == 1 && t->dims[r - 2] == s->M;
  if (ok && !is_a) ok = t->dims[r - 1] == s->N && (r == 1 || t->dims[r - 2] == 1);
  if (!ok)
    return amd_fail(st, "%s has shape %s: expected a scalar or %s", what, amd_shape_str(t, s1, sizeof s1),
                    is_a ? "one value per row of a ([M, 1], M the rows of a)"
                         : "one value per column of b ([N] or [1, N], N the columns of b)");
  return 1;
}

typedef struct qmm_in {
  const amd_tensor *a, *as, *az, *b, *bs, *bz, *ys, *yz;
  amd_mm_shape s;
} qmm_in;

/* qlinear: 0 MatMulInteger, 1 QLinearMatMul, 2 the q8 modes' QDQ MatMul
 * (a, a_scale, a_zero_point, b, b_scale, b_zero_point; a's scale per tensor). */
static int qmm_inputs(const amd_node *n, const amd_tensor *const *in, int qlinear, qmm_in *q, amd_status *st) {
  memset(q, 0, sizeof *q);
  if (qlinear == 2) {
    if (n->n_in < 5 || !in[0] || !in[1] || !in[3] || !in[4])
      return amd_fail(st, "the QDQ matrix product needs a, a_scale, b and b_scale (the DequantizeLinear inputs)");
    q->a = in[0], q->as = in[1], q->az = amd_q_opt_in(n, in, 2), q->b = in[3], q->bs = in[4], q->bz = amd_q_opt_in(n, in, 5);
    if (per_tensor(q->as, "the data's scale", st) || per_tensor(q->az, "the data's zero point", st)) return -1;
  } else if (qlinear) {
    if (n->n_in < 8 || !in[0] || !in[1] || !in[3] || !in[4] || !in[6])
      return amd_fail(st, "QLinearMatMul needs inputs a, a_scale, a_zero_point, b, b_scale, b_zero_point, "
                          "y_scale, y_zero_point");
    q->a = in[0], q->as = in[1], q->az = in[2], q->b = in[3], q->bs = in[4], q->bz = in[5];
    q->ys = in[6], q->yz = in[7];
  } else {
    if (n->n_in < 2 || !in[0] || !in[1]) return amd_fail(st, "MatMulInteger needs inputs A and B");
    q->a = in[0], q->b = in[1], q->az = amd_q_opt_in(n, in, 2), q->bz = amd_q_opt_in(n, in, 3);
  }
  if (need8(q->a, "input a", st) || need8(q->b, "input b", st) ||
      zp_type(q->az, q->a, "a_zero_point", "a", st) || zp_type(q->bz, q->b, "b_zero_point", "b", st) ||
      (q->yz && need8(q->yz, "y_zero_point", st)) || scale_float(q->as, "a_scale", st) ||
      scale_float(q->bs, "b_scale", st) || scale_float(q->ys, "y_scale", st) ||
      same_shape(q->as, q->az, "a_scale", "a_zero_point", st) ||
      same_shape(q->bs, q->bz, "b_scale", "b_zero_point", st) ||
      same_shape(q->ys, q->yz, "y_scale", "y_zero_point", st) || per_tensor(q->ys, "y_scale", st) ||
      per_tensor(q->yz, "y_zero_point", st) || amd_mm_shapes(q->a, q->b, &q->s, st))
    return -1;
  if (mm_param(q->as, 1, &q->s, "a_scale", st) < 0 || mm_param(q->az, 1, &q->s, "a_zero_point", st) < 0 ||
      mm_param(q->bs, 0, &q->s, "b_scale", st) < 0 || mm_param(q->bz, 0, &q->s, "b_zero_point", st) < 0)
    return -1;
  return 0;
}

static int qmm_infer_common(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, int qlinear,
                            amd_status *st) {
  qmm_in q;
  if (qmm_inputs(n, in, qlinear, &q, st)) return -1;
  int64_t dims[AMD_MAX_RANK + 2];
  int r = q.s.batch.rank;
  memcpy(dims, q.s.batch.dims, sizeof(int64_t) * (size_t)r);
  if (q.a->rank >= 2) dims[r++] = q.s.M;
  if (q.b->rank >= 2) dims[r++] = q.s.N;
  if (r > AMD_MAX_RANK) return amd_fail(st, "result of rank %d (at most %d supported)", r, AMD_MAX_RANK);
  amd_dtype yt = qlinear == 2 ? AMD_FLOAT : !qlinear ? AMD_INT32 : q.yz ? q.yz->dtype : q.a->dtype;
  amd_tensor_set_shape(&out[0], yt, r, dims);
  return 0;
}
static int qlinearmatmul_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  return qmm_infer_common(n, in, out, 1, st);
}
static int matmulinteger_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  return qmm_infer_common(n, in, out, 0, st);
}

/* acc (batch x M x N) = the integer matrix products with numpy broadcasting. */
static int qmm_acc(const qmm_in *q, const int32_t *table, int32_t *acc, amd_status *st) {
  const amd_mm_shape *s = &q->s;
  const int64_t M = s->M, N = s->N, K = s->K, mk = M * K, kn = K * N, mn = M * N;
  const int64_t nb = amd_tensor_numel(&s->batch);
  int32_t *za = malloc(sizeof(int32_t) * (size_t)(M + 1)), *zb = malloc(sizeof(int32_t) * (size_t)(N + 1));
  if (!za || !zb) {
    free(za);
    free(zb);
    return amd_fail(st, "out of memory");
  }
  fill_zp(q->az, M, za);
  fill_zp(q->bz, N, zb);
  const uint8_t *a = q->a->data, *b = q->b->data;
  const int as = q->a->dtype == AMD_INT8, bs = q->b->dtype == AMD_INT8;
  int64_t sa[AMD_MAX_RANK], sb[AMD_MAX_RANK], idx[AMD_MAX_RANK] = {0};
  amd_broadcast_strides(&s->batch_a, &s->batch, sa);
  amd_broadcast_strides(&s->batch_b, &s->batch, sb);
  int64_t oa = 0, ob = 0; /* batch offsets (in matrices) into a and b */
  int rc = 0;
  for (int64_t t = 0; t < nb && rc == 0; t++) {
    if (amd_q8_gemm(M, N, K, a + oa * mk, as, za, b + ob * kn, bs, zb, table, acc + t * mn))
      rc = amd_fail(st, "out of memory in the integer GEMM");
    amd_mm_batch_next(s, sa, sb, idx, &oa, &ob);
  }
  free(za);
  free(zb);
  return rc;
}

static int matmulinteger_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                                 amd_status *st) {
  (void)ctx;
  qmm_in q;
  const int32_t *table;
  if (qmm_inputs(n, in, 0, &q, st) || node_table(n, q.a, q.b, 0, &table, st)) return -1;
  return qmm_acc(&q, table, out[0].data, st);
}

static int qlinearmatmul_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                                 amd_status *st) {
  (void)ctx;
  qmm_in q;
  const int32_t *table;
  if (qmm_inputs(n, in, 1, &q, st) || node_table(n, q.a, q.b, 0, &table, st)) return -1;
  const int64_t M = q.s.M, N = q.s.N, total = amd_tensor_numel(&out[0]);
  int32_t *acc = malloc(sizeof(int32_t) * (size_t)(total > 0 ? total : 1));
  float *sa = malloc(sizeof(float) * (size_t)(M + 1)), *sb = malloc(sizeof(float) * (size_t)(N + 1));
  int rc = !acc || !sa || !sb ? amd_fail(st, "out of memory for the accumulators") : qmm_acc(&q, table, acc, st);
  if (rc == 0) {
    fill_scale(q.as, M, sa);
    fill_scale(q.bs, N, sb);
    const float ysv = ((const float *)q.ys->data)[0];
    const int32_t yz = q.yz ? amd_q_value(q.yz, 0) : 0;
    int32_t lo, hi;
    amd_q_range(out[0].dtype, &lo, &hi);
    for (int64_t e = 0; e < total; e++) {
      const int64_t j = e % N, i = (e / N) % M;
      const float m = sa[i] * sb[j] / ysv; /* float32, left to right */
      amd_q_store(&out[0], e, amd_q_round_sat((double)acc[e] * (double)m, yz, lo, hi));
    }
  }
  free(acc);
  free(sa);
  free(sb);
  return rc;
}


/* ---------------------------------------------------------------- QDQ nodes of the q8 modes */

/* In a q8 mode (q8u:FILE, q8s:FILE), amd_mode_apply (src/exec/mode_apply.c)
 * turns a Conv, Gemm or MatMul whose data and weight inputs are both outputs
 * of DequantizeLinear nodes into one of these internal ops (not ONNX ops: no
 * op_list.h entry, idx -1, so every backend runs them on the host). Their
 * inputs are the two DequantizeLinear nodes' inputs (codes, scale, zero
 * point) and the node's float bias / C:
 *   Conv[q8]    x, x_scale, x_zp, w, w_scale, w_zp, B        (Conv's attributes)
 *   Gemm[q8]    a, a_scale, a_zp, b, b_scale, b_zp, C        (Gemm's; transA = 0)
 *   MatMul[q8]  a, a_scale, a_zp, b, b_scale, b_zp
 * Data scale and zero point per tensor; weight per tensor or per output
 * channel (Conv: w's axis 0; Gemm: b's column, axis 0 of b with transB = 1,
 * axis 1 without; MatMul: b's last axis). Arithmetic, per output element with
 * output channel / column c:
 *   acc = sum_k T[a_k][w_k] - zero-point corrections      int32 (amd_q8_gemm)
 *   s   = a_scale * w_scale[c]                             float32
 *   y   = s * (float)acc + B[c]                            Conv (B[c] = 0 without B)
 *   y   = alpha * (s * (float)acc) + beta * C[i][c]        Gemm (C broadcast)
 *   y   = s * (float)acc                                   MatMul
 * T the mode's table (row: data code, column: weight code; the exact table
 * gives the exact integer sum). No backward: these nodes only run inference. */

static int qdqconv_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  return qconv_infer_common(n, in, out, 2, st);
}

static int qdqconv_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                           amd_status *st) {
  (void)ctx;
  qconv_in q;
  const int32_t *table;
  if (qconv_inputs(n, in, 2, &q, st) || node_table(n, q.x, q.w, 1, &table, st)) return -1;
  const int64_t M = q.g.m, os = q.g.osize, total = q.g.n * M * os;
  int32_t *acc = malloc(sizeof(int32_t) * (size_t)(total > 0 ? total : 1));
  float *sc = malloc(sizeof(float) * (size_t)(M > 0 ? M : 1));
  int rc = !acc || !sc ? amd_fail(st, "out of memory for the accumulators") : qconv_acc(&q, table, acc, st);
  if (rc == 0) {
    const float xsv = ((const float *)q.xs->data)[0];
    fill_scale(q.ws, M, sc);
    for (int64_t c = 0; c < M; c++) sc[c] = xsv * sc[c];
    const float *bias = q.b ? q.b->data : NULL;
    float *y = out[0].data;
    for (int64_t e = 0; e < total; e++) {
      const int64_t c = (e / os) % M;
      y[e] = sc[c] * (float)acc[e] + (bias ? bias[c] : 0.0f);
    }
  }
  free(acc);
  free(sc);
  return rc;
}

static int qdqmatmul_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  return qmm_infer_common(n, in, out, 2, st);
}

/* y = s * (float)acc, s = a_scale * b_scale[column]; shared by MatMul[q8]
 * and Gemm[q8] (which then applies alpha, beta and C). */
static int qdq_mm_scaled(const amd_node *n, const qmm_in *q, float *y, int64_t total, amd_status *st) {
  const int32_t *table;
  if (node_table(n, q->a, q->b, 0, &table, st)) return -1;
  const int64_t N = q->s.N;
  int32_t *acc = malloc(sizeof(int32_t) * (size_t)(total > 0 ? total : 1));
  float *sc = malloc(sizeof(float) * (size_t)(N + 1));
  int rc = !acc || !sc ? amd_fail(st, "out of memory for the accumulators") : qmm_acc(q, table, acc, st);
  if (rc == 0) {
    const float asv = ((const float *)q->as->data)[0];
    fill_scale(q->bs, N, sc);
    for (int64_t j = 0; j < N; j++) sc[j] = asv * sc[j];
    for (int64_t e = 0; e < total; e++) y[e] = sc[e % N] * (float)acc[e];
  }
  free(acc);
  free(sc);
  return rc;
}

static int qdqmatmul_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                             amd_status *st) {
  (void)ctx;
  qmm_in q;
  if (qmm_inputs(n, in, 2, &q, st)) return -1;
  return qdq_mm_scaled(n, &q, out[0].data, amd_tensor_numel(&out[0]), st);
}

/* Gemm[q8]: b's codes as a [K, N] tensor (a transposed copy into *tmp with
 * transB), then the MatMul[q8] checks. */
static int qdqgemm_inputs(const amd_node *n, const amd_tensor *const *in, int copy, amd_tensor *bview, qmm_in *q,
                          amd_status *st) {
  char s1[128];
  const amd_gemm_attrs *a = n->attrs;
  if (a->trans_a) return amd_fail(st, "transA = 1 is not implemented in the q8 modes");
  if (n->n_in < 5 || !in[0] || !in[3]) return amd_fail(st, "the QDQ Gemm needs a and b codes");
  if (in[0]->rank != 2 || in[3]->rank != 2)
    return amd_fail(st, "a and b must be 2-D (a %s)", amd_shape_str(in[0], s1, sizeof s1));
  const amd_tensor *b = in[3];
  *bview = *b;
  bview->data = NULL;
  if (a->trans_b) {
    bview->dims[0] = b->dims[1];
    bview->dims[1] = b->dims[0];
  }
  if (copy) {
    const int64_t K = bview->dims[0], N = bview->dims[1];
    uint8_t *t = malloc((size_t)(K * N > 0 ? K * N : 1));
    if (!t) return amd_fail(st, "out of memory");
    const uint8_t *src = b->data;
    for (int64_t k = 0; k < K; k++)
      for (int64_t j = 0; j < N; j++) t[k * N + j] = a->trans_b ? src[j * K + k] : src[k * N + j];
    bview->data = t;
  }
  const amd_tensor *v[7];
  for (int k = 0; k < 7; k++) v[k] = amd_q_opt_in(n, in, k);
  v[3] = bview;
  amd_node m = *n;
  m.n_in = n->n_in < 6 ? n->n_in : 6;
  if (qmm_inputs(&m, v, 2, q, st)) {
    if (copy) free(bview->data);
    return -1;
  }
  return 0;
}

static int qdqgemm_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  amd_tensor bview;
  qmm_in q;
  if (qdqgemm_inputs(n, in, 0, &bview, &q, st)) return -1;
  int64_t dims[2] = {q.s.M, q.s.N};
  const amd_tensor *C = amd_q_opt_in(n, in, 6);
  if (C) {
    amd_tensor y, bc;
    amd_tensor_set_shape(&y, AMD_FLOAT, 2, dims);
    if (C->dtype != AMD_FLOAT) return amd_fail(st, "C has dtype %s: expected float", amd_dtype_name(C->dtype));
    if (amd_broadcast_shape(C, &y, &bc, st)) return -1;
    if (!amd_same_shape(&bc, &y)) return amd_fail(st, "C does not broadcast to the output [M, N]");
  }
  amd_tensor_set_shape(&out[0], AMD_FLOAT, 2, dims);
  return 0;
}

static int qdqgemm_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                           amd_status *st) {
  (void)ctx;
  amd_tensor bview;
  qmm_in q;
  if (qdqgemm_inputs(n, in, 1, &bview, &q, st)) return -1;
  const amd_gemm_attrs *a = n->attrs;
  float *y = out[0].data;
  const int64_t total = amd_tensor_numel(&out[0]);
  int rc = qdq_mm_scaled(n, &q, y, total, st);
  free(bview.data);
  if (rc) return rc;
  const amd_tensor *C = amd_q_opt_in(n, in, 6);
  int64_t cs[AMD_MAX_RANK];
  if (C) amd_broadcast_strides(C, &out[0], cs);
  const int64_t N = out[0].dims[1];
  for (int64_t e = 0; e < total; e++) {
    float v = a->alpha * y[e];
    if (C && a->beta != 0) v += a->beta * ((const float *)C->data)[(e / N) * cs[0] + (e % N) * cs[1]];
    y[e] = v;
  }
  return 0;
}


/* ---------------------------------------------------------------- descriptors */

const amd_op amd_op_QLinearConv = {
    .name = "QLinearConv",
    .idx = AMD_OP_IDX_QLinearConv,
    .since = {10},
    .parse = qconv_parse,
    .infer = qlinearconv_infer,
    .forward = qlinearconv_forward,
};

const amd_op amd_op_ConvInteger = {
    .name = "ConvInteger",
    .idx = AMD_OP_IDX_ConvInteger,
    .since = {10},
    .parse = qconv_parse,
    .infer = convinteger_infer,
    .forward = convinteger_forward,
};

const amd_op amd_op_QLinearMatMul = {
    .name = "QLinearMatMul",
    .idx = AMD_OP_IDX_QLinearMatMul,
    .since = {10},
    .infer = qlinearmatmul_infer,
    .forward = qlinearmatmul_forward,
};

const amd_op amd_op_MatMulInteger = {
    .name = "MatMulInteger",
    .idx = AMD_OP_IDX_MatMulInteger,
    .since = {10},
    .infer = matmulinteger_infer,
    .forward = matmulinteger_forward,
};

/* The internal ops of the q8 modes (see "QDQ nodes of the q8 modes"). */
const amd_op amd_op_QdqConv8 = {
    .name = "Conv[q8]",
    .idx = -1,
    .parse = qconv_parse,
    .infer = qdqconv_infer,
    .forward = qdqconv_forward,
};

const amd_op amd_op_QdqGemm8 = {
    .name = "Gemm[q8]",
    .idx = -1,
    .infer = qdqgemm_infer,
    .forward = qdqgemm_forward,
};

const amd_op amd_op_QdqMatMul8 = {
    .name = "MatMul[q8]",
    .idx = -1,
    .infer = qdqmatmul_infer,
    .forward = qdqmatmul_forward,
};

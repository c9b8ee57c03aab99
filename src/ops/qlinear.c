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

#include "../gemm/qgemm.h"
#include "../mult/mult.h"
#include "attrs.h"
#include "q8_grad.h"
#include "q8f.h"
#include "quant.h"

#ifdef _OPENMP
#define AMD_PRAGMA(x) _Pragma(#x)
#else
#define AMD_PRAGMA(x)
#endif

extern const amd_op amd_op_Conv;

static const amd_tensor *opt_in(const amd_node *n, const amd_tensor *const *in, int k) {
  return n->n_in > k ? in[k] : NULL;
}

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
    q->x = in[0], q->xs = in[1], q->xz = opt_in(n, in, 2), q->w = in[3], q->ws = in[4], q->wz = opt_in(n, in, 5);
    fbias = opt_in(n, in, 6);
  } else if (qlinear) {
    if (n->n_in < 8 || !in[0] || !in[1] || !in[3] || !in[4] || !in[6])
      return amd_fail(st, "QLinearConv needs inputs x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, "
                          "y_zero_point");
    q->x = in[0], q->xs = in[1], q->xz = in[2], q->w = in[3], q->ws = in[4], q->wz = in[5];
    q->ys = in[6], q->yz = in[7], q->b = opt_in(n, in, 8);
  } else {
    if (n->n_in < 2 || !in[0] || !in[1]) return amd_fail(st, "ConvInteger needs inputs x and w");
    q->x = in[0], q->w = in[1], q->xz = opt_in(n, in, 2), q->wz = opt_in(n, in, 3);
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
    q->a = in[0], q->as = in[1], q->az = opt_in(n, in, 2), q->b = in[3], q->bs = in[4], q->bz = opt_in(n, in, 5);
    if (per_tensor(q->as, "the data's scale", st) || per_tensor(q->az, "the data's zero point", st)) return -1;
  } else if (qlinear) {
    if (n->n_in < 8 || !in[0] || !in[1] || !in[3] || !in[4] || !in[6])
      return amd_fail(st, "QLinearMatMul needs inputs a, a_scale, a_zero_point, b, b_scale, b_zero_point, "
                          "y_scale, y_zero_point");
    q->a = in[0], q->as = in[1], q->az = in[2], q->b = in[3], q->bs = in[4], q->bz = in[5];
    q->ys = in[6], q->yz = in[7];
  } else {
    if (n->n_in < 2 || !in[0] || !in[1]) return amd_fail(st, "MatMulInteger needs inputs A and B");
    q->a = in[0], q->b = in[1], q->az = opt_in(n, in, 2), q->bz = opt_in(n, in, 3);
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
    for (int d = s->batch.rank - 1; d >= 0; d--) { /* advance the batch odometer */
      idx[d]++;
      oa += sa[d];
      ob += sb[d];
      if (idx[d] < s->batch.dims[d]) break;
      oa -= sa[d] * idx[d];
      ob -= sb[d] * idx[d];
      idx[d] = 0;
    }
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
  for (int k = 0; k < 7; k++) v[k] = opt_in(n, in, k);
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
  const amd_tensor *C = opt_in(n, in, 6);
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
  const amd_tensor *C = opt_in(n, in, 6);
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


/* ---------------------------------------------------------------- float nodes quantized on the fly */

/* In a q8 mode, a float Conv, Gemm or MatMul that is not in QDQ form becomes
 * Conv[q8f] / Gemm[q8f] / MatMul[q8f] (amd_q8_float_node, called by
 * amd_mode_apply): same inputs and attributes; each forward quantizes its
 * float inputs to the mode's codes (uint8 for q8u, int8 for q8s, range
 * [qmin, qmax]) and then computes exactly as Conv[q8] / Gemm[q8] / MatMul[q8]:
 *   data (input 0), per tensor, asymmetric: [lo, hi] = the min and max of
 *     the inputs of the first AMD_Q8_CALIB_CALLS forward calls (batches),
 *     widened to include 0, then frozen (later values saturate); with
 *     --q8-calib percentile:P the min of the calls' lower and the max of
 *     their upper percentile edges instead (amd_q8f_percentile_range);
 *     scale = (hi - lo) / (qmax - qmin) (float32; 1 when hi = lo),
 *     zp = saturate(round_half_even(qmin - lo / scale)),
 *     code = saturate(round_half_even(x / scale) + zp);
 *   weight (input 1), per output channel (Conv: axis 0; Gemm: B's column,
 *     row of B with transB = 1; MatMul: B's last axis), from its current
 *     values at every call: q8u asymmetric as above over the channel's
 *     [min(0, min), max(0, max)]; q8s symmetric, scale = max |w| / 127,
 *     zp = 0 (scale 1 for an all-zero channel). */
#define AMD_Q8_CALIB_CALLS 4

typedef struct q8f_attrs {
  union {
    amd_conv_attrs conv; /* first: Conv's and Gemm's code reads n->attrs as its own struct */
    amd_gemm_attrs gemm;
  } op;
  int calls;     /* forward calls seen (calibration while < AMD_Q8_CALIB_CALLS) */
  double lo, hi; /* the data range so far (includes 0) */
  int grad;      /* the backward: AMD_Q8_GRAD_STE or AMD_Q8_GRAD_TABLE (amd_q8_float_set_grad) */
  double calib_q; /* the calibration: 0 min / max, else the percentile's P / 100 (amd_q8_float_set_calib) */
} q8f_attrs;

extern const amd_op amd_op_Gemm, amd_op_MatMul;

/* scale and zero point of a range [lo, hi] (lo <= 0 <= hi) */
static void q8f_params(double lo, double hi, int32_t qmin, int32_t qmax, float *scale, int32_t *zp) {
  float s = (float)((hi - lo) / (double)(qmax - qmin));
  if (!(s > 0) || !isfinite(s)) s = 1.0f;
  *scale = s;
  *zp = amd_q_round_sat((double)qmin - lo / (double)s, 0, qmin, qmax);
}

/* A scalar / 1-D tensor of n elements of dtype dt (allocated). */
static int q8f_tensor(amd_tensor *t, amd_dtype dt, int rank, int64_t n, amd_status *st) {
  int64_t d[1] = {n};
  memset(t, 0, sizeof *t);
  amd_tensor_set_shape(t, dt, rank, d);
  return amd_tensor_alloc(t, st);
}

/* The codes and parameters of one node's float inputs (see above), as the
 * inputs x, x_scale, x_zp, w, w_scale, w_zp of the QDQ ops. nch channels of
 * the weight; element e of w is in channel (e / inner) % nch. */
typedef struct q8f_in {
  amd_tensor xc, xs, xz, wc, ws, wz;
} q8f_in;

static void q8f_free(q8f_in *q) {
  amd_tensor_free(&q->xc), amd_tensor_free(&q->xs), amd_tensor_free(&q->xz);
  amd_tensor_free(&q->wc), amd_tensor_free(&q->ws), amd_tensor_free(&q->wz);
}

static int q8f_quantize(const amd_node *n, const amd_tensor *x, const amd_tensor *w, int64_t nch, int64_t inner,
                        q8f_in *q, amd_status *st) {
  memset(q, 0, sizeof *q);
  const amd_mult *m = n->mult;
  if (x->dtype != AMD_FLOAT || w->dtype != AMD_FLOAT)
    return amd_fail(st, "data and weight must be float to be quantized on the fly (have %s and %s)",
                    amd_dtype_name(x->dtype), amd_dtype_name(w->dtype));
  const int sgn = m->q8 == 's';
  const amd_dtype dt = sgn ? AMD_INT8 : AMD_UINT8;
  const int32_t qmin = sgn ? -128 : 0, qmax = sgn ? 127 : 255;
  q8f_attrs *a = n->attrs;
  const int64_t nx = amd_tensor_numel(x), nw = amd_tensor_numel(w);
  const float *xd = x->data, *wd = w->data;
  if (a->calls < AMD_Q8_CALIB_CALLS) {
    if (a->calib_q > 0) {
      double clo, chi;
      if (amd_q8f_percentile_range(xd, nx, a->calib_q, &clo, &chi)) {
        if (clo < a->lo) a->lo = clo;
        if (chi > a->hi) a->hi = chi;
      }
    } else {
      for (int64_t i = 0; i < nx; i++) {
        if (xd[i] < a->lo) a->lo = xd[i];
        if (xd[i] > a->hi) a->hi = xd[i];
      }
    }
    a->calls++;
  }
  float xsv;
  int32_t xzv;
  q8f_params(a->lo, a->hi, qmin, qmax, &xsv, &xzv);
  amd_tensor_set_shape(&q->xc, dt, x->rank, x->dims);
  amd_tensor_set_shape(&q->wc, dt, w->rank, w->dims);
  if (amd_tensor_alloc(&q->xc, st) || amd_tensor_alloc(&q->wc, st) || q8f_tensor(&q->xs, AMD_FLOAT, 0, 1, st) ||
      q8f_tensor(&q->xz, dt, 0, 1, st) || q8f_tensor(&q->ws, AMD_FLOAT, 1, nch, st) ||
      q8f_tensor(&q->wz, dt, 1, nch, st)) {
    q8f_free(q);
    return -1;
  }
  ((float *)q->xs.data)[0] = xsv;
  amd_q_store(&q->xz, 0, xzv);
  for (int64_t i = 0; i < nx; i++) amd_q_store(&q->xc, i, amd_q_round_sat((double)xd[i] / xsv, xzv, qmin, qmax));
  /* weight range per channel */
  double *lo = calloc((size_t)(2 * nch + 1), sizeof *lo), *hi = lo + nch;
  if (!lo) {
    q8f_free(q);
    return amd_fail(st, "out of memory");
  }
  for (int64_t e = 0; e < nw; e++) {
    const int64_t c = (e / inner) % nch;
    if (wd[e] < lo[c]) lo[c] = wd[e];
    if (wd[e] > hi[c]) hi[c] = wd[e];
  }
  float *wsd = q->ws.data;
  for (int64_t c = 0; c < nch; c++) {
    int32_t zp = 0;
    if (sgn) {
      double mx = -lo[c] > hi[c] ? -lo[c] : hi[c];
      wsd[c] = (float)(mx / 127.0);
      if (!(wsd[c] > 0) || !isfinite(wsd[c])) wsd[c] = 1.0f;
    } else {
      q8f_params(lo[c], hi[c], qmin, qmax, &wsd[c], &zp);
    }
    amd_q_store(&q->wz, c, zp);
  }
  for (int64_t e = 0; e < nw; e++) {
    const int64_t c = (e / inner) % nch;
    amd_q_store(&q->wc, e, amd_q_round_sat((double)wd[e] / wsd[c], amd_q_value(&q->wz, c), qmin, qmax));
  }
  free(lo);
  return 0;
}

/* The state accessors of q8f.h (for the CUDA kernels of these ops). */
int amd_q8f_calib_calls(void) { return AMD_Q8_CALIB_CALLS; }

double amd_q8f_calib_q(const amd_node *n) { return ((const q8f_attrs *)n->attrs)->calib_q; }

/* The bin edge e(j) of amd_q8f_percentile_range. */
static double q8f_edge(double mn, double mx, double range, int j) {
  return j == AMD_Q8F_BINS ? mx : mn + range * (double)j / (double)AMD_Q8F_BINS;
}

int64_t amd_q8f_percentile_range(const float *x, int64_t n, double q, double *lo, double *hi) {
  float mn = INFINITY, mx = -INFINITY;
  int64_t count = 0;
  for (int64_t i = 0; i < n; i++) {
    if (isnan(x[i])) continue;
    if (x[i] < mn) mn = x[i];
    if (x[i] > mx) mx = x[i];
    count++;
  }
  if (count == 0) return 0;
  if (!isfinite(mn) || !isfinite(mx) || mn == mx) {
    *lo = mn, *hi = mx;
    return count;
  }
  /* the bins over [mn, mx]: the same double operations as the CUDA kernel */
  int64_t bins[AMD_Q8F_BINS] = {0};
  const double dmn = mn, range = (double)mx - dmn, inv = (double)AMD_Q8F_BINS / range;
  for (int64_t i = 0; i < n; i++) {
    if (isnan(x[i])) continue;
    int b = (int)(((double)x[i] - dmn) * inv);
    bins[b < AMD_Q8F_BINS ? b : AMD_Q8F_BINS - 1]++;
  }
  int64_t k = (int64_t)ceil(q * (double)count);
  if (k < 1) k = 1;
  if (k > count) k = count;
  int64_t c = 0;
  int b = 0;
  while (b < AMD_Q8F_BINS - 1 && (c += bins[b]) < k) b++;
  *hi = q8f_edge(dmn, mx, range, b + 1);
  c = 0;
  b = AMD_Q8F_BINS - 1;
  while (b > 0 && (c += bins[b]) < k) b--;
  *lo = q8f_edge(dmn, mx, range, b);
  return count;
}

void amd_q8f_get_state(const amd_node *n, amd_q8f_state *s) {
  const q8f_attrs *a = n->attrs;
  s->calls = a->calls, s->lo = a->lo, s->hi = a->hi;
}

void amd_q8f_set_state(const amd_node *n, const amd_q8f_state *s) {
  q8f_attrs *a = n->attrs;
  a->calls = s->calls, a->lo = s->lo, a->hi = s->hi;
}

static int q8fconv_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  return amd_op_Conv.infer(n, in, out, st);
}

static int q8fconv_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                           amd_status *st) {
  if (n->n_in < 2 || !in[0] || !in[1] || in[1]->rank < 1) return amd_fail(st, "Conv needs X and W");
  q8f_in q;
  const int64_t M = in[1]->dims[0];
  if (q8f_quantize(n, in[0], in[1], M, M ? amd_tensor_numel(in[1]) / M : 1, &q, st)) return -1;
  const amd_tensor *v[7] = {&q.xc, &q.xs, &q.xz, &q.wc, &q.ws, &q.wz, opt_in(n, in, 2)};
  amd_node m = *n;
  m.n_in = 7;
  int rc = qdqconv_forward(&m, ctx, v, out, st);
  q8f_free(&q);
  return rc;
}

static int q8fgemm_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  return amd_op_Gemm.infer(n, in, out, st);
}

static int q8fgemm_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                           amd_status *st) {
  const amd_gemm_attrs *a = n->attrs;
  if (n->n_in < 2 || !in[0] || !in[1] || in[1]->rank != 2) return amd_fail(st, "Gemm needs 2-D A and B");
  if (a->trans_a) return amd_fail(st, "transA = 1 is not implemented in the q8 modes");
  /* B's output columns: [K, N] (channel = column, inner 1) or [N, K] with transB (channel = row) */
  const int64_t N = a->trans_b ? in[1]->dims[0] : in[1]->dims[1];
  q8f_in q;
  if (q8f_quantize(n, in[0], in[1], N, a->trans_b ? in[1]->dims[1] : 1, &q, st)) return -1;
  const amd_tensor *v[7] = {&q.xc, &q.xs, &q.xz, &q.wc, &q.ws, &q.wz, opt_in(n, in, 2)};
  amd_node m = *n;
  m.n_in = 7;
  int rc = qdqgemm_forward(&m, ctx, v, out, st);
  q8f_free(&q);
  return rc;
}

static int q8fmatmul_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  return amd_op_MatMul.infer(n, in, out, st);
}

static int q8fmatmul_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                             amd_status *st) {
  if (n->n_in < 2 || !in[0] || !in[1] || in[1]->rank < 1) return amd_fail(st, "MatMul needs A and B");
  const int64_t N = in[1]->rank >= 2 ? in[1]->dims[in[1]->rank - 1] : 1;
  q8f_in q;
  if (q8f_quantize(n, in[0], in[1], N, 1, &q, st)) return -1;
  const amd_tensor *v[6] = {&q.xc, &q.xs, &q.xz, &q.wc, &q.ws, &q.wz};
  amd_node m = *n;
  m.n_in = 6;
  int rc = qdqmatmul_forward(&m, ctx, v, out, st);
  q8f_free(&q);
  return rc;
}

/* Backward: the straight-through estimator, clipped (what fake-quantization
 * in QAT does): the rounding to codes and the table count as the identity,
 * so the float op's own backward runs on the float inputs, both GEMMs in
 * exact fp32 (amd_q8_float_node leaves bwd_mult NULL), except that the data
 * gradient is 0 where the data lay outside the calibrated range [lo, hi]
 * (its code saturated). The weights' range is their own at every call, so
 * nothing of theirs saturates. The float op reads n->attrs as its own
 * struct, the first member of q8f_attrs. With --q8-grad table
 * (amd_q8_float_set_grad) the table's own slopes are added to both
 * gradients before the clipping (q8f_table_grad, below). */
static int q8f_table_grad(const amd_op *fop, const amd_node *n, const amd_tensor *const *in,
                          const amd_tensor *const *dout, float *dx, amd_tensor *const *din, amd_status *st);

static int q8f_backward(const amd_op *fop, const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in,
                        const amd_tensor *const *out, const amd_tensor *const *dout, amd_tensor *const *din,
                        amd_status *st) {
  amd_tensor *dx = din[0];
  if (!dx || !in[0] || dx->dtype != AMD_FLOAT) {
    int rc = fop->backward(n, ctx, in, *out, dout, din, st);
    return rc ? rc : q8f_table_grad(fop, n, in, dout, NULL, din, st);
  }
  amd_tensor full = {0};
  amd_tensor_set_shape(&full, AMD_FLOAT, dx->rank, dx->dims);
  if (amd_tensor_alloc(&full, st)) return -1;
  memset(full.data, 0, amd_tensor_nbytes(&full));
  amd_tensor *d2[8] = {0};
  for (int k = 0; k < n->n_in && k < 8; k++) d2[k] = din[k];
  d2[0] = &full;
  amd_ctx c2 = ctx ? *ctx : (amd_ctx){0};
  c2.bwd_overwrite &= ~1u; /* full is zeroed: added to */
  int rc = fop->backward(n, &c2, in, *out, dout, d2, st);
  if (rc == 0) rc = q8f_table_grad(fop, n, in, dout, full.data, din, st);
  if (rc == 0) {
    const q8f_attrs *a = n->attrs;
    const float *x = in[0]->data, *g = full.data;
    float *d = dx->data;
    const int over = ctx && (ctx->bwd_overwrite & 1u);
    for (int64_t i = 0, cnt = amd_tensor_numel(dx); i < cnt; i++) {
      const float v = x[i] >= a->lo && x[i] <= a->hi ? g[i] : 0.0f;
      d[i] = (over ? 0.0f : d[i]) + v;
    }
  }
  amd_tensor_free(&full);
  return rc;
}

/* ---- the table-derived backward (--q8-grad table; src/ops/q8_grad.h)
 *
 * The forward's product term, as a function of the float operands: with the
 * continuous codes a = zx + x / sx and b = zw + w / sw (the rounding taken as
 * the identity, as the STE does) and E[a][b] = T[a][b] - a * b the table's
 * error against the exact products,
 *   sx * sw * (T[a][b] - zw * a - zx * b + zx * zw)
 *     = sx * sw * ((a - zx) * (b - zw) + E[a][b]) = x * w + sx * sw * E[a][b]:
 * the zero-point terms cancel against the exact part. Its derivatives are
 *   d/dx = w + sw * dE/da,   d/dw = x + sx * dE/db.
 * The first terms are the STE's gradient (the float op's backward above);
 * this adds the second ones, dE/da and dE/db the table's difference
 * quotients at the forward's codes (amd_q8_grad_tables), times sw of the
 * output channel and sx (and Gemm's alpha). The exact table has E = 0 and
 * slopes 0: the result is then the STE's. A convolution's padding reads
 * the code zx (the real 0): its exact part is 0 but E[zx][b] is not, so
 * padded positions add to the weight's gradient (as they add to the
 * forward), not to the data's. The data gradient is then clipped like the
 * STE's (q8f_backward). */

/* The positions one group's window reads, per row (c, kernel offset) of the
 * unfolded matrix: the channel's offset into x and the kernel offset per
 * spatial dimension (times the dilation). rows = cg * kvol; koff has
 * rows * nsp entries. */
static void window_rows(const amd_conv_geom *g, int64_t *coff, int64_t *koff) {
  for (int64_t row = 0; row < g->cg * g->kvol; row++) {
    int64_t kidx = row % g->kvol;
    coff[row] = row / g->kvol * g->isize;
    for (int d = g->nsp - 1; d >= 0; d--) {
      koff[row * g->nsp + d] = kidx % g->k[d] * g->dil[d];
      kidx /= g->k[d];
    }
  }
}

/* The input offset read by output position opos and row (-1: padding). */
static int64_t window_at(const amd_conv_geom *g, const int64_t *base, const int64_t *coff, const int64_t *koff,
                         int64_t row) {
  int64_t off = 0;
  for (int d = 0; d < g->nsp; d++) {
    const int64_t i = base[d] + koff[row * g->nsp + d];
    if (i < 0 || i >= g->in[d]) return -1;
    off = off * g->in[d] + i;
  }
  return coff[row] + off;
}

/* Output position o's first input coordinate per dimension. */
static void window_base(const amd_conv_geom *g, int64_t o, int64_t *base) {
  for (int d = g->nsp - 1; d >= 0; d--) {
    base[d] = o % g->out[d] * g->stride[d] - g->pad0[d];
    o /= g->out[d];
  }
}

/* colT (osize x rows) = the codes of im2col_q8, transposed: row o holds the
 * window of output position o (padding: the code pad). */
static void im2col_t_q8(const amd_conv_geom *g, const int64_t *coff, const int64_t *koff, const uint8_t *x,
                        uint8_t pad, uint8_t *colT) {
  const int64_t rows = g->cg * g->kvol;
  for (int64_t o = 0; o < g->osize; o++) {
    int64_t base[AMD_SP];
    window_base(g, o, base);
    uint8_t *dst = colT + o * rows;
    for (int64_t row = 0; row < rows; row++) {
      const int64_t at = window_at(g, base, coff, koff, row);
      dst[row] = at < 0 ? pad : x[at];
    }
  }
}

/* dx (x's layout) += dcolT (osize x rows), folded back as im2col_t_q8
 * unfolded it; padding dropped. */
static void col2im_t_add(const amd_conv_geom *g, const int64_t *coff, const int64_t *koff, const float *dcolT,
                         float *dx) {
  const int64_t rows = g->cg * g->kvol;
  for (int64_t o = 0; o < g->osize; o++) {
    int64_t base[AMD_SP];
    window_base(g, o, base);
    const float *src = dcolT + o * rows;
    for (int64_t row = 0; row < rows; row++) {
      const int64_t at = window_at(g, base, coff, koff, row);
      if (at >= 0) dx[at] += src[row];
    }
  }
}

/* Conv[q8f]: per group, the data-first product colT (rows: output
 * positions of several batch entries, kdim columns) x W_g^T (kdim x mg) with
 * G = dY^T; the batch entries go in chunks of about AMD_Q8G_CHUNK im2col
 * elements (q8_grad.h): each chunk's dW sum (over its rows in order) is
 * scaled and added to a zeroed dW^T on its own, which is then added to dW. */
static int q8f_conv_table_grad(const amd_node *n, const q8f_in *q, const float *dy, float *dx, float *dw,
                               amd_status *st) {
  const amd_mult *m = n->mult;
  const q8f_attrs *a = n->attrs;
  amd_conv_geom g;
  if (amd_conv_geometry(&a->op.conv, &q->xc, &q->wc, &g, st)) return -1;
  const int64_t kdim = g.cg * g.kvol, os = g.osize, mg = g.mg;
  if (os == 0 || g.m == 0 || g.n == 0 || kdim == 0) return 0;
  int64_t nbc = AMD_Q8G_CHUNK / (os * kdim);
  nbc = nbc < 1 ? 1 : nbc > g.n ? g.n : nbc;
  const int64_t rows = nbc * os;
  uint8_t *colT = malloc((size_t)(rows * kdim)), *wT = malloc((size_t)(kdim * g.m));
  int64_t *coff = malloc(sizeof(int64_t) * (size_t)(kdim * (g.nsp + 1))), *koff = coff + kdim;
  float *gT = malloc(sizeof(float) * (size_t)(rows * mg)), *cb = malloc(sizeof(float) * (size_t)g.m);
  float *dcolT = dx ? malloc(sizeof(float) * (size_t)(rows * kdim)) : NULL;
  float *dwT = dw ? calloc((size_t)(kdim * g.m), sizeof(float)) : NULL;
  int rc = 0;
  if (!coff || !colT || !wT || !gT || !cb || (dx && !dcolT) || (dw && !dwT))
    rc = amd_fail(st, "out of memory for the table-derived gradient");
  const uint8_t *xc = q->xc.data, *wc = q->wc.data;
  const float xs = ((const float *)q->xs.data)[0], *ws = q->ws.data;
  const uint8_t padcode = ((const uint8_t *)q->xz.data)[0];
  if (rc == 0) window_rows(&g, coff, koff);
  for (int64_t c = 0; rc == 0 && c < g.m; c++) cb[c] = ws[c];
  for (int64_t gi = 0; rc == 0 && gi < g.group; gi++) /* wT_g[k][j] = w[gi * mg + j][k] */
    for (int64_t j = 0; j < mg; j++)
      for (int64_t k = 0; k < kdim; k++) wT[gi * kdim * mg + k * mg + j] = wc[(gi * mg + j) * kdim + k];
  for (int64_t gi = 0; rc == 0 && gi < g.group; gi++)
    for (int64_t b0 = 0; rc == 0 && b0 < g.n; b0 += nbc) {
      const int64_t nb = g.n - b0 < nbc ? g.n - b0 : nbc;
      AMD_PRAGMA(omp parallel for schedule(static) if (nb > 1 && nb * os * kdim > 65536))
      for (int64_t b = b0; b < b0 + nb; b++) {
        float *gt = gT + (b - b0) * os * mg;
        im2col_t_q8(&g, coff, koff, xc + (b * g.c + gi * g.cg) * g.isize, padcode, colT + (b - b0) * os * kdim);
        for (int64_t j = 0; j < mg; j++)
          for (int64_t o = 0; o < os; o++) gt[o * mg + j] = dy[(b * g.m + gi * mg + j) * os + o];
      }
      if (dcolT) memset(dcolT, 0, sizeof(float) * (size_t)(nb * os * kdim));
      if (amd_q8_grad_gemm(nb * os, mg, kdim, colT, wT + gi * kdim * mg, gT, cb + gi * mg, xs, m->q8_ea, m->q8_eb,
                           dcolT, dwT ? dwT + gi * kdim * mg : NULL)) {
        rc = amd_fail(st, "out of memory for the table-derived gradient");
        break;
      }
      AMD_PRAGMA(omp parallel for schedule(static) if (dx && nb > 1 && nb * os * kdim > 65536))
      for (int64_t b = b0; b < b0 + nb; b++)
        if (dx) col2im_t_add(&g, coff, koff, dcolT + (b - b0) * os * kdim, dx + (b * g.c + gi * g.cg) * g.isize);
    }
  for (int64_t gi = 0; rc == 0 && dw && gi < g.group; gi++)
    for (int64_t j = 0; j < mg; j++)
      for (int64_t k = 0; k < kdim; k++) dw[(gi * mg + j) * kdim + k] += dwT[gi * kdim * mg + k * mg + j];
  free(coff), free(colT), free(wT), free(gT), free(cb), free(dcolT), free(dwT);
  return rc;
}

/* Gemm[q8f]: A [M, K] (transA = 0), B as [K, N] (a transposed copy with
 * transB), the column scales times alpha. */
static int q8f_gemm_table_grad(const amd_node *n, const q8f_in *q, const float *dy, float *dx, float *dw,
                               amd_status *st) {
  const amd_mult *m = n->mult;
  const amd_gemm_attrs *ga = n->attrs;
  const int64_t M = q->xc.dims[0], K = q->xc.dims[1], N = ga->trans_b ? q->wc.dims[0] : q->wc.dims[1];
  const uint8_t *wc = q->wc.data;
  uint8_t *bT = ga->trans_b ? malloc((size_t)(K * N > 0 ? K * N : 1)) : NULL;
  float *cb = malloc(sizeof(float) * (size_t)(N > 0 ? N : 1));
  float *db = dw && ga->trans_b ? calloc((size_t)(K * N > 0 ? K * N : 1), sizeof(float)) : NULL;
  int rc = 0;
  if (!cb || (ga->trans_b && !bT) || (dw && ga->trans_b && !db))
    rc = amd_fail(st, "out of memory for the table-derived gradient");
  if (rc == 0) {
    const float *ws = q->ws.data, xs = ((const float *)q->xs.data)[0];
    for (int64_t j = 0; j < N; j++) cb[j] = ga->alpha * ws[j];
    if (bT)
      for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < N; j++) bT[k * N + j] = wc[j * K + k];
    if (amd_q8_grad_gemm(M, N, K, q->xc.data, bT ? bT : wc, dy, cb, ga->alpha * xs, m->q8_ea, m->q8_eb, dx,
                         ga->trans_b ? db : dw))
      rc = amd_fail(st, "out of memory for the table-derived gradient");
    if (rc == 0 && db)
      for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < N; j++) dw[j * K + k] += db[k * N + j];
  }
  free(bT), free(cb), free(db);
  return rc;
}

/* MatMul[q8f]: one product per batch entry with numpy broadcasting; the
 * gradients of broadcast operands sum over the entries that read them. */
static int q8f_matmul_table_grad(const amd_node *n, const q8f_in *q, const float *dy, float *dx, float *dw,
                                 amd_status *st) {
  const amd_mult *m = n->mult;
  amd_mm_shape s;
  if (amd_mm_shapes(&q->xc, &q->wc, &s, st)) return -1;
  const int64_t M = s.M, N = s.N, K = s.K, nb = amd_tensor_numel(&s.batch);
  float *cb = malloc(sizeof(float) * (size_t)(N > 0 ? N : 1));
  if (!cb) return amd_fail(st, "out of memory for the table-derived gradient");
  const float *ws = q->ws.data, xs = ((const float *)q->xs.data)[0];
  for (int64_t j = 0; j < N; j++) cb[j] = ws[j];
  const uint8_t *xc = q->xc.data, *wc = q->wc.data;
  int64_t sa[AMD_MAX_RANK], sb[AMD_MAX_RANK], idx[AMD_MAX_RANK] = {0};
  amd_broadcast_strides(&s.batch_a, &s.batch, sa);
  amd_broadcast_strides(&s.batch_b, &s.batch, sb);
  int64_t oa = 0, ob = 0;
  int rc = 0;
  for (int64_t t = 0; t < nb && rc == 0; t++) {
    if (amd_q8_grad_gemm(M, N, K, xc + oa * M * K, wc + ob * K * N, dy + t * M * N, cb, xs, m->q8_ea, m->q8_eb,
                         dx ? dx + oa * M * K : NULL, dw ? dw + ob * K * N : NULL))
      rc = amd_fail(st, "out of memory for the table-derived gradient");
    for (int d = s.batch.rank - 1; d >= 0; d--) { /* advance the batch odometer */
      idx[d]++;
      oa += sa[d];
      ob += sb[d];
      if (idx[d] < s.batch.dims[d]) break;
      oa -= sa[d] * idx[d];
      ob -= sb[d] * idx[d];
      idx[d] = 0;
    }
  }
  free(cb);
  return rc;
}

/* Adds the table's terms to dx (x's full gradient before the clipping, or
 * NULL) and to din[1] (the weight's, when wanted); nothing in the STE mode. */
static int q8f_table_grad(const amd_op *fop, const amd_node *n, const amd_tensor *const *in,
                          const amd_tensor *const *dout, float *dx, amd_tensor *const *din, amd_status *st) {
  const q8f_attrs *a = n->attrs;
  if (a->grad != AMD_Q8_GRAD_TABLE || !dout[0]) return 0;
  float *dw = n->n_in > 1 && din[1] && din[1]->dtype == AMD_FLOAT ? din[1]->data : NULL;
  if (!dx && !dw) return 0;
  const amd_mult *m = n->mult;
  if (!m || !m->q8 || !m->q8_ea || !m->q8_eb)
    return amd_fail(st, "the table-derived backward (--q8-grad table) needs the node's 8-bit table");
  if (dout[0]->dtype != AMD_FLOAT) return amd_fail(st, "the output gradient must be float");
  /* the forward's codes again: the range as this step's forward left it,
   * without counting another calibration call */
  q8f_attrs frozen = *a;
  frozen.calls = AMD_Q8_CALIB_CALLS;
  amd_node fn = *n;
  fn.attrs = &frozen;
  const amd_tensor *x = in[0], *w = n->n_in > 1 ? in[1] : NULL;
  if (!x || !w || w->rank < 1) return amd_fail(st, "the table-derived backward needs the data and the weight");
  const int64_t wr = w->rank;
  int64_t nch, inner;
  if (fop == &amd_op_Conv) {
    nch = w->dims[0], inner = nch ? amd_tensor_numel(w) / nch : 1;
  } else if (fop == &amd_op_Gemm) {
    const int tb = a->op.gemm.trans_b;
    nch = tb ? w->dims[0] : w->dims[1], inner = tb ? w->dims[1] : 1;
  } else {
    nch = wr >= 2 ? w->dims[wr - 1] : 1, inner = 1;
  }
  q8f_in q;
  if (q8f_quantize(&fn, x, w, nch, inner, &q, st)) return -1;
  const float *dy = dout[0]->data;
  int rc = fop == &amd_op_Conv   ? q8f_conv_table_grad(n, &q, dy, dx, dw, st)
           : fop == &amd_op_Gemm ? q8f_gemm_table_grad(n, &q, dy, dx, dw, st)
                                 : q8f_matmul_table_grad(n, &q, dy, dx, dw, st);
  q8f_free(&q);
  return rc;
}

static int q8fconv_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                            const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  return q8f_backward(&amd_op_Conv, n, ctx, in, &out, dout, din, st);
}

static int q8fgemm_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                            const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  return q8f_backward(&amd_op_Gemm, n, ctx, in, &out, dout, din, st);
}

static int q8fmatmul_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                              const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  return q8f_backward(&amd_op_MatMul, n, ctx, in, &out, dout, din, st);
}

const amd_op amd_op_Q8fConv = {.name = "Conv[q8f]",
                               .idx = -1,
                               .infer = q8fconv_infer,
                               .forward = q8fconv_forward,
                               .backward = q8fconv_backward};
const amd_op amd_op_Q8fGemm = {.name = "Gemm[q8f]",
                               .idx = -1,
                               .infer = q8fgemm_infer,
                               .forward = q8fgemm_forward,
                               .backward = q8fgemm_backward};
const amd_op amd_op_Q8fMatMul = {.name = "MatMul[q8f]",
                                 .idx = -1,
                                 .infer = q8fmatmul_infer,
                                 .forward = q8fmatmul_forward,
                                 .backward = q8fmatmul_backward};

int amd_q8_float_node(amd_node *n, amd_status *st) {
  const int op = n->op->idx;
  q8f_attrs *a = calloc(1, sizeof *a);
  if (!a) return amd_fail(st, "out of memory");
  if (op == AMD_OP_IDX_Conv) memcpy(&a->op.conv, n->attrs, sizeof a->op.conv);
  if (op == AMD_OP_IDX_Gemm) {
    memcpy(&a->op.gemm, n->attrs, sizeof a->op.gemm);
    if (a->op.gemm.trans_a) {
      free(a);
      return amd_fail(st, "node '%s' (Gemm) has transA = 1, which the q8 modes do not implement", n->name);
    }
  }
  free(n->attrs);
  n->attrs = a;
  n->op = op == AMD_OP_IDX_Conv ? &amd_op_Q8fConv : op == AMD_OP_IDX_Gemm ? &amd_op_Q8fGemm : &amd_op_Q8fMatMul;
  n->bwd_mult = NULL;
  return 0;
}

int amd_q8_float_is(const amd_node *n) {
  return n->op == &amd_op_Q8fConv || n->op == &amd_op_Q8fGemm || n->op == &amd_op_Q8fMatMul;
}

int amd_q8_float_set_grad(amd_node *n, int grad) {
  if (!amd_q8_float_is(n)) return 0;
  ((q8f_attrs *)n->attrs)->grad = grad;
  return 1;
}

int amd_q8_float_set_calib(amd_node *n, double pct) {
  if (!amd_q8_float_is(n)) return 0;
  ((q8f_attrs *)n->attrs)->calib_q = pct > 0 ? pct / 100.0 : 0.0;
  return 1;
}

int amd_q8_float_grad(const amd_node *n) {
  if (!amd_q8_float_is(n)) return AMD_Q8_GRAD_STE;
  return ((const q8f_attrs *)n->attrs)->grad;
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

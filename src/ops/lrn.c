/* LRN, local response normalisation across channels (ONNX since-versions 1, 13),
 * on the CPU.
 *
 * Layout: X is (N, C, D1, ..., Dk), rank >= 2, contiguous NCHW; Y has X's shape.
 * With lo = floor((size - 1) / 2), hi = ceil((size - 1) / 2) (an even size
 * reaches one channel further up than down), the window of channel c is
 *   W(c) = [max(0, c - lo), min(C - 1, c + hi)],
 *   s_c  = bias + alpha / size * sum_{j in W(c)} x_j^2,
 *   y_c  = x_c * s_c^-beta.
 * (PyTorch's LocalResponseNorm is the same formula with the window
 * [c - size/2, c + (size-1)/2]: equal for odd sizes, mirrored for even ones.)
 *
 * Types: float, double, float16, bfloat16; everything is computed in double
 * and rounded once on store.
 *
 * Implementation: for each sample the spatial positions are cut into tiles of
 * LRN_TILE; a tile's channel rows (contiguous in memory) are loaded into
 * double buffers and the window sums slide over the channels, one add and one
 * subtract per element whatever the size. Squares are non-negative, so the
 * running sum is clamped at 0 against round-off from the subtractions.
 *
 * Backward: ACCUMULATES (+=) into din[0] (zeroed by the autograd engine once
 * per step). With k = 2 * alpha * beta / size,
 *   dx_i += dy_i * s_i^-beta - k * x_i * sum_{j : i in W(j)} dy_j * x_j * s_j^(-beta-1),
 * and i in W(j) <=> j in [i - hi, i + lo] (the transposed window), a second
 * sliding sum over the channels. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attrs.h"

/* Spatial positions per tile: 3 buffers of C * LRN_TILE doubles in backward. */
#define LRN_TILE 128

static int lrn_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  if (!amd_attr_find(p, "size")) return amd_fail(st, "attribute size is required");
  amd_lrn_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->alpha = amd_attr_float(p, "alpha", 1e-4f);
  a->beta = amd_attr_float(p, "beta", 0.75f);
  a->bias = amd_attr_float(p, "bias", 1.0f);
  a->size = amd_attr_int(p, "size", 0);
  if (a->size < 1) return amd_fail(st, "size must be >= 1, got %lld", (long long)a->size);
  return 0;
}

static int lrn_dtype_ok(amd_dtype t) {
  return t == AMD_FLOAT || t == AMD_DOUBLE || t == AMD_FLOAT16 || t == AMD_BFLOAT16;
}

static int lrn_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (n->n_in < 1 || !in[0]) return amd_fail(st, "LRN needs input X");
  const amd_tensor *x = in[0];
  if (!lrn_dtype_ok(x->dtype))
    return amd_fail(st, "X has dtype %s (float, double, float16, bfloat16 supported)",
                    amd_dtype_name(x->dtype));
  if (x->rank < 2) return amd_fail(st, "X must have rank >= 2 (N, C, ...), got rank %d", x->rank);
  amd_tensor_set_shape(&out[0], x->dtype, x->rank, x->dims);
  return 0;
}

/* Row i/o: w elements at element offset off of t, to or from doubles. */
static void lrn_load(const amd_tensor *t, int64_t off, int64_t w, double *dst) {
  switch (t->dtype) {
  case AMD_FLOAT: {
    const float *s = (const float *)t->data + off;
    for (int64_t i = 0; i < w; i++) dst[i] = s[i];
  } break;
  case AMD_DOUBLE:
    memcpy(dst, (const double *)t->data + off, (size_t)w * sizeof *dst);
    break;
  case AMD_FLOAT16: {
    const uint16_t *s = (const uint16_t *)t->data + off;
    for (int64_t i = 0; i < w; i++) dst[i] = amd_half_to_float(s[i]);
  } break;
  default: { /* AMD_BFLOAT16 (lrn_infer admits nothing else) */
    const uint16_t *s = (const uint16_t *)t->data + off;
    for (int64_t i = 0; i < w; i++) dst[i] = amd_bf16_to_float(s[i]);
  } break;
  }
}

static void lrn_store(amd_tensor *t, int64_t off, int64_t w, const double *src) {
  switch (t->dtype) {
  case AMD_FLOAT: {
    float *d = (float *)t->data + off;
    for (int64_t i = 0; i < w; i++) d[i] = (float)src[i];
  } break;
  case AMD_DOUBLE:
    memcpy((double *)t->data + off, src, (size_t)w * sizeof *src);
    break;
  case AMD_FLOAT16: {
    uint16_t *d = (uint16_t *)t->data + off;
    for (int64_t i = 0; i < w; i++) d[i] = amd_float_to_half((float)src[i]);
  } break;
  default: {
    uint16_t *d = (uint16_t *)t->data + off;
    for (int64_t i = 0; i < w; i++) d[i] = amd_float_to_bf16((float)src[i]);
  } break;
  }
}

/* s^-beta, with pow() avoided for the common betas (AlexNet's 0.75, 0.5, 1);
 * the fast forms are within a few ulp of pow(). */
static inline double lrn_pow_neg(double s, double beta) {
  if (beta == 0.75) return 1.0 / sqrt(s * sqrt(s));
  if (beta == 0.5) return 1.0 / sqrt(s);
  if (beta == 1.0) return 1.0 / s;
  return pow(s, -beta);
}

/* The window half-widths: W(c) = [c - lo, c + hi]. */
static void lrn_window(const amd_lrn_attrs *a, int64_t *lo, int64_t *hi) {
  *lo = (a->size - 1) / 2;
  *hi = a->size / 2; /* ceil((size - 1) / 2) */
}

/* acc[p] = sum over channels j in [0, min(last, C - 1)] of v[j][p], or of
 * v[j][p]^2 when sq (v: C rows of w). */
static void lrn_sum_init(double *acc, const double *v, int sq, int64_t last, int64_t ch, int64_t w) {
  for (int64_t p = 0; p < w; p++) acc[p] = 0;
  for (int64_t j = 0; j <= last && j < ch; j++) {
    const double *r = v + j * w;
    if (sq)
      for (int64_t p = 0; p < w; p++) acc[p] += r[p] * r[p];
    else
      for (int64_t p = 0; p < w; p++) acc[p] += r[p];
  }
}

/* Slides acc by one channel: adds row `add` and removes row `rm` (squared when
 * sq), each only when it lies in [0, C). A sum of squares is clamped at 0:
 * removing the very value that was added leaves at most round-off. */
static void lrn_sum_slide(double *acc, const double *v, int sq, int64_t add, int64_t rm, int64_t ch,
                          int64_t w) {
  if (add < ch) {
    const double *r = v + add * w;
    if (sq)
      for (int64_t p = 0; p < w; p++) acc[p] += r[p] * r[p];
    else
      for (int64_t p = 0; p < w; p++) acc[p] += r[p];
  }
  if (rm >= 0) {
    const double *r = v + rm * w;
    if (sq)
      for (int64_t p = 0; p < w; p++) {
        double s = acc[p] - r[p] * r[p];
        acc[p] = s > 0 ? s : 0;
      }
    else
      for (int64_t p = 0; p < w; p++) acc[p] -= r[p];
  }
}

static int lrn_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                       amd_status *st) {
  (void)ctx;
  const amd_lrn_attrs *a = n->attrs;
  const amd_tensor *x = in[0];
  int64_t batch = x->dims[0], ch = x->dims[1], inner = 1, lo, hi;
  for (int i = 2; i < x->rank; i++) inner *= x->dims[i];
  if (batch == 0 || ch == 0 || inner == 0) return 0;
  lrn_window(a, &lo, &hi);
  int64_t tile = inner < LRN_TILE ? inner : LRN_TILE;
  /* xb: the tile's C channel rows; acc: the window sums; yrow: one output row. */
  double *buf = malloc(sizeof(double) * (size_t)(ch + 2) * (size_t)tile);
  if (!buf) return amd_fail(st, "out of memory");
  double *xb = buf, *acc = xb + ch * tile, *yrow = acc + tile;
  double scale = a->alpha / (double)a->size;
  for (int64_t b = 0; b < batch; b++) {
    for (int64_t p0 = 0; p0 < inner; p0 += tile) {
      int64_t w = inner - p0 < tile ? inner - p0 : tile;
      for (int64_t c = 0; c < ch; c++) lrn_load(x, (b * ch + c) * inner + p0, w, xb + c * w);
      lrn_sum_init(acc, xb, 1, hi, ch, w); /* W(0) = [0, hi] */
      for (int64_t c = 0; c < ch; c++) {
        const double *xr = xb + c * w;
        for (int64_t p = 0; p < w; p++) yrow[p] = xr[p] * lrn_pow_neg(a->bias + scale * acc[p], a->beta);
        lrn_store(&out[0], (b * ch + c) * inner + p0, w, yrow);
        lrn_sum_slide(acc, xb, 1, c + hi + 1, c - lo, ch, w); /* W(c) -> W(c + 1) */
      }
    }
  }
  free(buf);
  return 0;
}

static int lrn_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                        const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  (void)ctx, (void)out;
  const amd_lrn_attrs *a = n->attrs;
  const amd_tensor *x = in[0], *dy = dout[0];
  amd_tensor *dx = din[0];
  if (!dy || !dx) return 0;
  if (dy->dtype != x->dtype || dx->dtype != x->dtype || !amd_same_shape(dy, x) || !amd_same_shape(dx, x))
    return amd_fail(st, "LRN backward: dY and dX must have X's dtype (%s) and shape",
                    amd_dtype_name(x->dtype));
  int64_t batch = x->dims[0], ch = x->dims[1], inner = 1, lo, hi;
  for (int i = 2; i < x->rank; i++) inner *= x->dims[i];
  if (batch == 0 || ch == 0 || inner == 0) return 0;
  lrn_window(a, &lo, &hi);
  int64_t tile = inner < LRN_TILE ? inner : LRN_TILE;
  /* Per tile, C rows each of: xb = x; gb = dy, overwritten row by row with
   * d = dy * s^-beta; tb = t = dy * x * s^(-beta-1). Plus acc and one dx row. */
  double *buf = malloc(sizeof(double) * (size_t)(3 * ch + 2) * (size_t)tile);
  if (!buf) return amd_fail(st, "out of memory");
  double *xb = buf, *gb = xb + ch * tile, *tb = gb + ch * tile, *acc = tb + ch * tile, *row = acc + tile;
  double scale = a->alpha / (double)a->size;
  double k = 2.0 * a->alpha * a->beta / (double)a->size;
  for (int64_t b = 0; b < batch; b++) {
    for (int64_t p0 = 0; p0 < inner; p0 += tile) {
      int64_t w = inner - p0 < tile ? inner - p0 : tile;
      for (int64_t c = 0; c < ch; c++) {
        lrn_load(x, (b * ch + c) * inner + p0, w, xb + c * w);
        lrn_load(dy, (b * ch + c) * inner + p0, w, gb + c * w);
      }
      /* Pass 1: s_c from the forward window W(c) = [c - lo, c + hi]. */
      lrn_sum_init(acc, xb, 1, hi, ch, w);
      for (int64_t c = 0; c < ch; c++) {
        const double *xr = xb + c * w;
        double *gr = gb + c * w, *tr = tb + c * w;
        for (int64_t p = 0; p < w; p++) {
          double s = a->bias + scale * acc[p], sb = lrn_pow_neg(s, a->beta);
          tr[p] = gr[p] * xr[p] * sb / s;
          gr[p] *= sb;
        }
        lrn_sum_slide(acc, xb, 1, c + hi + 1, c - lo, ch, w);
      }
      /* Pass 2: sum of t_j over the transposed window j in [i - hi, i + lo]. */
      lrn_sum_init(acc, tb, 0, lo, ch, w);
      for (int64_t i = 0; i < ch; i++) {
        const double *xr = xb + i * w, *gr = gb + i * w;
        int64_t off = (b * ch + i) * inner + p0;
        lrn_load(dx, off, w, row);
        for (int64_t p = 0; p < w; p++) row[p] += gr[p] - k * xr[p] * acc[p];
        lrn_store(dx, off, w, row);
        lrn_sum_slide(acc, tb, 0, i + lo + 1, i - hi, ch, w);
      }
    }
  }
  free(buf);
  return 0;
}

const amd_op amd_op_LRN = {
    .name = "LRN",
    .idx = AMD_OP_IDX_LRN,
    .since = {1, 13},
    .parse = lrn_parse,
    .infer = lrn_infer,
    .forward = lrn_forward,
    .backward = lrn_backward,
};

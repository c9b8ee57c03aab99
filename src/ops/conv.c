/* Conv (opsets 1 and 11): N-dimensional convolution, NCHW (N x C x D1 x ... x Dn).
 *
 * X [N, C, D...], W [M, C/group, k...], optional B [M] -> Y [N, M, O...].
 * Attributes: group (grouped and depthwise), strides, dilations, pads
 * ([begin..., end...]), auto_pad (NOTSET, SAME_UPPER, SAME_LOWER, VALID; pads
 * are ignored unless NOTSET), kernel_shape (optional; must agree with W).
 *
 * Forward: for each (batch, group), im2col unfolds the group's input channels
 * into a [C/group * prod(k), prod(O)] matrix (zero where the window reads
 * padding), then Y_g = W_g * col runs on amd_gemm with the node's multiplier.
 * A 1x1 kernel with unit strides and no padding skips im2col and multiplies X
 * directly. The bias is added after the GEMM (it is not a product).
 *
 * Backward (ACCUMULATES += into din, as op.h requires), per (batch, group),
 * with one scratch buffer the size of that group's im2col matrix:
 *   dW_g += dY_g * col^T          (amd_gemm, beta = 1, straight into dW)
 *   dcol  = W_g^T * dY_g          (amd_gemm into the scratch), then col2im adds
 *                                 each column back onto the input positions its
 *                                 window read (overlapping windows sum; padding
 *                                 positions are dropped)
 *   dB   += sum of dY over batch and spatial positions (not a product).
 * Both GEMMs run on node->bwd_mult. With the 1x1 fast path, col is X itself and
 * dX_g += W_g^T * dY_g goes straight into dX (beta = 1). dX is skipped when its
 * din is NULL (first layer), and so is dW (and its im2col).
 *
 * Threads: each GEMM splits over them, and im2col and col2im too; for a batch
 * of small images the forward pass and dX take the images to the threads
 * instead (images_in_parallel), one buffer each. dW sums the images in their
 * order, so it takes them one after the other. Either way the bits are those
 * of one thread. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/omp.h"
#include "../gemm/gemm.h"
#include "../report/profile.h"
#include "attrs.h"

#define SP AMD_SP




static int ints_attr(const amd_attr_list *p, const char *name, int64_t *out, int max, int *n,
                     amd_status *st) {
  *n = amd_attr_ints(p, name, out, max);
  if (*n == -2) return amd_fail(st, "attribute %s has more than %d values", name, max);
  return 0;
}

static int conv_parse(amd_node *node, const amd_attr_list *p, amd_status *st) {
  amd_conv_attrs *a = amd_attrs_new(node, sizeof *a, st);
  if (!a) return -1;
  if (amd_attr_auto_pad(p, &a->auto_pad, st)) return -1;
  a->group = amd_attr_int(p, "group", 1);
  if (a->group < 1) return amd_fail(st, "group %lld must be at least 1", (long long)a->group);
  if (ints_attr(p, "kernel_shape", a->kernel_shape, SP, &a->n_kernel, st) ||
      ints_attr(p, "strides", a->strides, SP, &a->n_strides, st) ||
      ints_attr(p, "dilations", a->dilations, SP, &a->n_dilations, st) ||
      ints_attr(p, "pads", a->pads, 2 * SP, &a->n_pads, st))
    return -1;
  for (int i = 0; i < a->n_kernel; i++)
    if (a->kernel_shape[i] < 1) return amd_fail(st, "kernel_shape values must be at least 1");
  for (int i = 0; i < a->n_strides; i++)
    if (a->strides[i] < 1) return amd_fail(st, "strides must be at least 1");
  for (int i = 0; i < a->n_dilations; i++)
    if (a->dilations[i] < 1) return amd_fail(st, "dilations must be at least 1");
  for (int i = 0; i < a->n_pads; i++)
    if (a->pads[i] < 0) return amd_fail(st, "pads must not be negative");
  return 0;
}

int amd_conv_geometry(const amd_conv_attrs *a, const amd_tensor *x, const amd_tensor *w, amd_conv_geom *g,
                         amd_status *st) {
  char s1[128], s2[128];
  if (x->rank < 3)
    return amd_fail(st, "input X has shape %s: expected rank >= 3 (N, C, spatial...)",
                    amd_shape_str(x, s1, sizeof s1));
  if (w->rank != x->rank)
    return amd_fail(st, "weight W has shape %s, input X %s: ranks differ", amd_shape_str(w, s1, sizeof s1),
                    amd_shape_str(x, s2, sizeof s2));
  memset(g, 0, sizeof *g);
  g->nsp = x->rank - 2;
  g->n = x->dims[0];
  g->c = x->dims[1];
  g->m = w->dims[0];
  g->group = a->group;
  if (g->c % g->group != 0 || w->dims[1] * g->group != g->c)
    return amd_fail(st, "input has %lld channels but W %s with group %lld expects %lld", (long long)g->c,
                    amd_shape_str(w, s1, sizeof s1), (long long)g->group, (long long)(w->dims[1] * g->group));
  if (g->m % g->group != 0)
    return amd_fail(st, "%lld output channels (W dim 0) not divisible by group %lld", (long long)g->m,
                    (long long)g->group);
  g->cg = g->c / g->group;
  g->mg = g->m / g->group;
  int nsp = g->nsp;
  if (a->n_kernel >= 0 && a->n_kernel != nsp)
    return amd_fail(st, "kernel_shape has %d values for %d spatial dimensions", a->n_kernel, nsp);
  if (a->n_strides >= 0 && a->n_strides != nsp)
    return amd_fail(st, "strides has %d values for %d spatial dimensions", a->n_strides, nsp);
  if (a->n_dilations >= 0 && a->n_dilations != nsp)
    return amd_fail(st, "dilations has %d values for %d spatial dimensions", a->n_dilations, nsp);
  if (a->auto_pad == AMD_PAD_NOTSET && a->n_pads >= 0 && a->n_pads != 2 * nsp)
    return amd_fail(st, "pads has %d values for %d spatial dimensions (expected %d)", a->n_pads, nsp,
                    2 * nsp);
  g->isize = g->osize = g->kvol = 1;
  for (int d = 0; d < nsp; d++) {
    g->in[d] = x->dims[2 + d];
    g->k[d] = w->dims[2 + d];
    if (a->n_kernel > 0 && a->kernel_shape[d] != g->k[d])
      return amd_fail(st, "kernel_shape does not match W %s", amd_shape_str(w, s1, sizeof s1));
    g->stride[d] = a->n_strides > 0 ? a->strides[d] : 1;
    g->dil[d] = a->n_dilations > 0 ? a->dilations[d] : 1;
    int64_t ek = (g->k[d] - 1) * g->dil[d] + 1; /* effective (dilated) kernel extent */
    int64_t in = g->in[d], s = g->stride[d], out;
    switch (a->auto_pad) {
    case AMD_PAD_SAME_UPPER:
    case AMD_PAD_SAME_LOWER: {
      out = (in + s - 1) / s;
      int64_t total = (out - 1) * s + ek - in;
      if (total < 0) total = 0;
      g->pad0[d] = a->auto_pad == AMD_PAD_SAME_UPPER ? total / 2 : total - total / 2;
      break;
    }
    case AMD_PAD_VALID:
      if (in < ek) goto too_small;
      out = (in - ek) / s + 1;
      g->pad0[d] = 0;
      break;
    default: {
      int64_t p0 = a->n_pads > 0 ? a->pads[d] : 0, p1 = a->n_pads > 0 ? a->pads[nsp + d] : 0;
      if (in + p0 + p1 < ek) goto too_small;
      out = (in + p0 + p1 - ek) / s + 1;
      g->pad0[d] = p0;
      break;
    }
    }
    g->out[d] = out;
    g->isize *= in;
    g->osize *= out;
    g->kvol *= g->k[d];
    continue;
  too_small:
    return amd_fail(st,
                    "kernel extent %lld (dilated) is larger than the padded input (%lld) in spatial "
                    "dimension %d",
                    (long long)ek, (long long)in, d);
  }
  return 0;
}

static int conv_infer(const amd_node *node, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  const amd_conv_attrs *a = node->attrs;
  if (node->n_in < 2 || !in[0] || !in[1]) return amd_fail(st, "Conv needs inputs X and W");
  const amd_tensor *x = in[0], *w = in[1], *b = node->n_in > 2 ? in[2] : NULL;
  if (amd_require_float(x, "input X", st) || amd_require_float(w, "weight W", st)) return -1;
  amd_conv_geom g;
  if (amd_conv_geometry(a, x, w, &g, st)) return -1;
  if (b) {
    char s[128];
    if (amd_require_float(b, "bias B", st)) return -1;
    if (b->rank != 1 || b->dims[0] != g.m)
      return amd_fail(st, "bias B has shape %s, expected [%lld]", amd_shape_str(b, s, sizeof s),
                      (long long)g.m);
  }
  int64_t dims[AMD_MAX_RANK];
  dims[0] = g.n;
  dims[1] = g.m;
  for (int d = 0; d < g.nsp; d++) dims[2 + d] = g.out[d];
  amd_tensor_set_shape(&out[0], AMD_FLOAT, x->rank, dims);
  return 0;
}

/* Unfolds one group's channels x (cg x isize) into col ((cg * kvol) x osize):
 * row (c, kernel position), column (output position), both row-major. The
 * last spatial dimension is the inner loop; the others advance an odometer. */
static void im2col(const amd_conv_geom *g, const float *x, float *col) {
  const int L = g->nsp - 1;
  const int64_t rows = g->cg * g->kvol, olast = g->out[L], outer = g->osize / (olast ? olast : 1);
  const int64_t s = g->stride[L], inl = g->in[L];
  if (g->osize == 0) return;
  AMD_PRAGMA(omp parallel for schedule(static) if (rows * g->osize > 32768))
  for (int64_t row = 0; row < rows; row++) {
    int64_t c = row / g->kvol, kidx = row % g->kvol, kpos[SP], opos[SP];
    for (int d = L; d >= 0; d--) {
      kpos[d] = kidx % g->k[d];
      kidx /= g->k[d];
      opos[d] = 0;
    }
    const float *xc = x + c * g->isize;
    float *dst = col + row * g->osize;
    /* Output positions of the last dimension whose input index is inside:
     * iw = ow * s + shift, 0 <= iw < inl. */
    const int64_t shift = kpos[L] * g->dil[L] - g->pad0[L];
    int64_t lo = shift >= 0 ? 0 : (-shift + s - 1) / s;
    int64_t hi = inl - shift <= 0 ? 0 : (inl - shift + s - 1) / s; /* first ow with iw >= inl */
    if (hi > olast) hi = olast;
    if (lo > hi) lo = hi;
    for (int64_t o = 0; o < outer; o++, dst += olast) {
      int valid = 1;
      int64_t off = 0;
      for (int d = 0; d < L; d++) {
        int64_t i = opos[d] * g->stride[d] - g->pad0[d] + kpos[d] * g->dil[d];
        if (i < 0 || i >= g->in[d]) valid = 0;
        off = off * g->in[d] + i;
      }
      if (!valid || lo == hi) {
        memset(dst, 0, sizeof(float) * (size_t)olast);
      } else {
        const float *src = xc + off * inl;
        for (int64_t ow = 0; ow < lo; ow++) dst[ow] = 0;
        if (s == 1)
          memcpy(dst + lo, src + lo + shift, sizeof(float) * (size_t)(hi - lo));
        else
          for (int64_t ow = lo; ow < hi; ow++) dst[ow] = src[ow * s + shift];
        for (int64_t ow = hi; ow < olast; ow++) dst[ow] = 0;
      }
      for (int d = L - 1; d >= 0; d--) { /* advance the outer odometer */
        if (++opos[d] < g->out[d]) break;
        opos[d] = 0;
      }
    }
  }
}

/* The floats of one im2col buffer: none for a 1x1 kernel with unit strides
 * and no padding (col is X itself); a buffer over the tensor limit fails. */
static int col_size(const amd_conv_geom *g, size_t *floats, amd_status *st) {
  const int64_t kdim = g->cg * g->kvol;
  int direct = g->kvol == 1;
  for (int d = 0; d < g->nsp; d++)
    if (g->stride[d] != 1 || g->pad0[d] != 0 || g->out[d] != g->in[d]) direct = 0;
  if (!direct && (double)kdim * (double)g->osize * 4 > (double)AMD_MAX_TENSOR_BYTES)
    return amd_fail(st, "im2col buffer too large (%lld x %lld)", (long long)kdim, (long long)g->osize);
  *floats = direct ? 0 : (size_t)kdim * (size_t)g->osize;
  return 0;
}

/* A thread's own buffer of `floats` floats (NULL for none); a failed
 * allocation sets *oom, which the threads share. */
static float *thread_buffer(size_t floats, int *oom) {
  float *b = floats ? malloc(sizeof(float) * floats) : NULL;
  if (floats && !b) {
    AMD_PRAGMA(omp atomic write)
    *oom = 1;
  }
  return b;
}

/* Whether the images of a batch go to the threads, one image's im2col and
 * GEMMs (single-threaded inside) each, instead of one image after the other
 * with every GEMM split over the threads: when there are enough images to go
 * round and each image's GEMM is small (a CIFAR-sized layer, where a split
 * GEMM spends much of its time starting and joining its threads). The bits
 * are the same (each image's outputs are its own). */
static int images_in_parallel(const amd_conv_geom *g) {
  const int threads = amd_max_threads();
  const double macs = (double)g->mg * (double)g->osize * (double)(g->cg * g->kvol) * (double)g->group;
  return threads > 1 && g->n >= 2 * threads && macs < 64.0 * 1024 * 1024;
}

/* --profile of a per-image loop with two stages (im2col and GEMM; GEMM and
 * col2im). One image after the other, each stage is timed where it runs.
 * With the images on the threads, each thread adds up its own host-clock
 * time per stage (the profile's clock belongs to the driving thread), and
 * the loop's wall time is split between the two stages in that proportion. */
typedef struct img_prof {
  int par;
  double start, spent[2]; /* par: the loop's start; each stage's time summed over the threads */
} img_prof;

static img_prof ip_begin(int par) {
  img_prof p = {.par = par};
  p.start = amd_prof_on ? amd_prof_clock() : 0.0;
  return p;
}

static double host_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double ip_now(const img_prof *p) {
  return !amd_prof_on ? 0.0 : p->par ? host_seconds() : amd_prof_clock();
}

/* Stage k (0 or 1) of one image ran from t0 until now; macs: its products. */
static void ip_stage(img_prof *p, int k, double t0, amd_prof_stage s, double macs) {
  if (!amd_prof_on) return;
  if (!p->par) {
    amd_prof_stage_add(s, amd_prof_clock() - t0, macs);
    return;
  }
  const double dt = host_seconds() - t0;
  AMD_PRAGMA(omp atomic)
  p->spent[k] += dt;
}

/* After the loop (par): the wall time split; the products of the whole loop. */
static void ip_finish(const img_prof *p, amd_prof_stage s0, double macs0, amd_prof_stage s1, double macs1) {
  if (!amd_prof_on || !p->par) return;
  const double wall = amd_prof_clock() - p->start, sum = p->spent[0] + p->spent[1];
  const double f = sum > 0 ? p->spent[0] / sum : 0.5;
  amd_prof_stage_add(s0, wall * f, macs0);
  amd_prof_stage_add(s1, wall * (1 - f), macs1);
}

static int conv_forward(const amd_node *node, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                        amd_status *st) {
  const amd_conv_attrs *a = node->attrs;
  const amd_tensor *x = in[0], *w = in[1], *b = node->n_in > 2 ? in[2] : NULL;
  amd_conv_geom g;
  if (amd_conv_geometry(a, x, w, &g, st)) return -1;
  const float *xd = x->data, *wd = w->data;
  float *yd = out[0].data;
  const int64_t kdim = g.cg * g.kvol;
  const amd_tensor *add_in = ctx ? ctx->add_in : NULL; /* the Add and Relu fused in (exec.c) */
  const int relu = ctx && ctx->relu_out;

  size_t col_floats;
  if (col_size(&g, &col_floats, st)) return -1;
  const int par = images_in_parallel(&g);
  int oom = 0;
  img_prof prof = ip_begin(par);
  AMD_PRAGMA(omp parallel if (par)) {
    float *col = thread_buffer(col_floats, &oom);
    AMD_PRAGMA(omp for schedule(dynamic, 1))
    for (int64_t n = 0; n < g.n; n++)
      for (int64_t gi = 0; gi < g.group && !(col_floats && !col); gi++) {
        const float *xg = xd + (n * g.c + gi * g.cg) * g.isize;
        const float *wg = wd + gi * g.mg * kdim;
        float *yg = yd + (n * g.m + gi * g.mg) * g.osize;
        const float *bmat = xg;
        double t0 = ip_now(&prof);
        if (col) {
          im2col(&g, xg, col);
          bmat = col;
          ip_stage(&prof, 0, t0, AMD_PROF_FWD_IM2COL, 0);
          t0 = ip_now(&prof);
        }
        amd_gemm(node->mult, 0, 0, g.mg, g.osize, kdim, 1.0f, wg, kdim, bmat, g.osize, 0.0f, yg, g.osize);
        ip_stage(&prof, 1, t0, AMD_PROF_FWD_GEMM, g.mg * g.osize * kdim);
        if (b) {
          const float *bd = (const float *)b->data + gi * g.mg;
          for (int64_t m = 0; m < g.mg; m++) {
            float bv = bd[m], *yr = yg + m * g.osize;
            for (int64_t i = 0; i < g.osize; i++) yr[i] += bv;
          }
        }
        if (add_in) { /* a fused Add (exec.c), in the Add's operand order */
          const float *rg = (const float *)add_in->data + (n * g.m + gi * g.mg) * g.osize;
          for (int64_t i = 0; i < g.mg * g.osize; i++)
            yg[i] = ctx->add_in_first ? rg[i] + yg[i] : yg[i] + rg[i];
        }
        if (relu) amd_relu_inplace(yg, g.mg * g.osize); /* a fused Relu (exec.c) */
      }
    free(col);
  }
  ip_finish(&prof, AMD_PROF_FWD_IM2COL, 0, AMD_PROF_FWD_GEMM,
            (double)(g.n * g.group * g.mg * g.osize * kdim));
  if (oom) return amd_fail(st, "out of memory for the im2col buffer");
  return 0;
}

/* The adjoint of im2col: adds col ((cg * kvol) x osize) onto dx (cg x isize)
 * at the input positions each entry was read from. Threads split channels, so
 * no two write the same element; rows of one channel are added in row order. */
static void col2im_add(const amd_conv_geom *g, const float *col, float *dx) {
  const int L = g->nsp - 1;
  const int64_t olast = g->out[L], outer = g->osize / (olast ? olast : 1);
  const int64_t s = g->stride[L], inl = g->in[L];
  if (g->osize == 0) return;
  AMD_PRAGMA(omp parallel for schedule(static) if (g->cg > 1 && g->cg * g->kvol * g->osize > 32768))
  for (int64_t c = 0; c < g->cg; c++) {
    float *xc = dx + c * g->isize;
    for (int64_t kq = 0; kq < g->kvol; kq++) {
      int64_t kidx = kq, kpos[SP], opos[SP];
      for (int d = L; d >= 0; d--) {
        kpos[d] = kidx % g->k[d];
        kidx /= g->k[d];
        opos[d] = 0;
      }
      const float *src = col + (c * g->kvol + kq) * g->osize;
      const int64_t shift = kpos[L] * g->dil[L] - g->pad0[L];
      int64_t lo = shift >= 0 ? 0 : (-shift + s - 1) / s;
      int64_t hi = inl - shift <= 0 ? 0 : (inl - shift + s - 1) / s;
      if (hi > olast) hi = olast;
      if (lo > hi) lo = hi;
      for (int64_t o = 0; o < outer; o++, src += olast) {
        int valid = 1;
        int64_t off = 0;
        for (int d = 0; d < L; d++) {
          int64_t i = opos[d] * g->stride[d] - g->pad0[d] + kpos[d] * g->dil[d];
          if (i < 0 || i >= g->in[d]) valid = 0;
          off = off * g->in[d] + i;
        }
        if (valid && lo < hi) {
          float *dst = xc + off * inl + shift;
          if (s == 1)
            for (int64_t ow = lo; ow < hi; ow++) dst[ow] += src[ow];
          else
            for (int64_t ow = lo; ow < hi; ow++) dst[ow * s] += src[ow];
        }
        for (int d = L - 1; d >= 0; d--) {
          if (++opos[d] < g->out[d]) break;
          opos[d] = 0;
        }
      }
    }
  }
}

static int conv_backward(const amd_node *node, amd_ctx *ctx, const amd_tensor *const *in,
                         const amd_tensor *out, const amd_tensor *const *dout, amd_tensor *const *din,
                         amd_status *st) {
  (void)ctx;
  (void)out;
  const amd_conv_attrs *a = node->attrs;
  const amd_tensor *x = in[0], *w = in[1], *dy = dout[0];
  amd_tensor *dx = din[0], *dw = din[1], *db = node->n_in > 2 && in[2] ? din[2] : NULL;
  if (!dy) return 0;
  amd_conv_geom g;
  if (amd_conv_geometry(a, x, w, &g, st)) return -1;
  if (amd_require_float(dy, "gradient dY", st)) return -1;
  const float *xd = x->data, *wd = w->data, *dyd = dy->data;
  const int64_t kdim = g.cg * g.kvol;

  if (db) {
    float *dbd = db->data;
    AMD_PARALLEL_FOR(g.n * g.m * g.osize)
    for (int64_t m = 0; m < g.m; m++) {
      double sum = 0;
      for (int64_t n = 0; n < g.n; n++) {
        const float *r = dyd + (n * g.m + m) * g.osize;
        float part = 0;
        for (int64_t i = 0; i < g.osize; i++) part += r[i];
        sum += part;
      }
      dbd[m] += (float)sum;
    }
  }
  if (!dx && !dw) return 0;
  if (kdim == 0 || g.osize == 0 || g.mg == 0) return 0;

  size_t col_floats;
  if (col_size(&g, &col_floats, st)) return -1;
  float *dxd = dx ? dx->data : NULL, *dwd = dw ? dw->data : NULL;
  /* dW_g [mg, kdim] += dY_g [mg, osize] * col^T [osize, kdim]: one image after
   * the other (the sum over the images in their order) */
  float *col = col_floats && dw ? malloc(sizeof(float) * col_floats) : NULL;
  if (col_floats && dw && !col) return amd_fail(st, "out of memory for the im2col buffer");
  for (int64_t n = 0; dw && n < g.n; n++)
    for (int64_t gi = 0; gi < g.group; gi++) {
      const float *xg = xd + (n * g.c + gi * g.cg) * g.isize;
      const float *dyg = dyd + (n * g.m + gi * g.mg) * g.osize;
      const float *cm = xg;
      double t0 = AMD_PROF_T0;
      if (col) {
        im2col(&g, xg, col);
        cm = col;
        AMD_PROF_STAGE(t0, AMD_PROF_BWD_WEIGHT_IM2COL, 0);
        t0 = AMD_PROF_T0;
      }
      amd_gemm(node->bwd_mult, 0, 1, g.mg, kdim, g.osize, 1.0f, dyg, g.osize, cm, g.osize, 1.0f,
               dwd + gi * g.mg * kdim, kdim);
      AMD_PROF_STAGE(t0, AMD_PROF_BWD_WEIGHT_GEMM, g.mg * kdim * g.osize);
    }
  free(col);
  if (!dx) return 0;
  /* dcol [kdim, osize] = W_g^T [kdim, mg] * dY_g [mg, osize], col2im'd onto
   * dX: each image its own, so the images may go to the threads */
  const int par = images_in_parallel(&g);
  int oom = 0;
  img_prof prof = ip_begin(par);
  AMD_PRAGMA(omp parallel if (par)) {
    float *dcol = thread_buffer(col_floats, &oom);
    AMD_PRAGMA(omp for schedule(dynamic, 1))
    for (int64_t n = 0; n < g.n; n++)
      for (int64_t gi = 0; gi < g.group && !(col_floats && !dcol); gi++) {
        const float *wg = wd + gi * g.mg * kdim;
        const float *dyg = dyd + (n * g.m + gi * g.mg) * g.osize;
        float *dxg = dxd + (n * g.c + gi * g.cg) * g.isize;
        double t0 = ip_now(&prof);
        if (dcol) {
          amd_gemm(node->bwd_mult, 1, 0, kdim, g.osize, g.mg, 1.0f, wg, kdim, dyg, g.osize, 0.0f, dcol,
                   g.osize);
          ip_stage(&prof, 0, t0, AMD_PROF_BWD_DATA_GEMM, kdim * g.osize * g.mg);
          t0 = ip_now(&prof);
          col2im_add(&g, dcol, dxg);
          ip_stage(&prof, 1, t0, AMD_PROF_BWD_DATA_COL2IM, 0);
        } else {
          amd_gemm(node->bwd_mult, 1, 0, kdim, g.osize, g.mg, 1.0f, wg, kdim, dyg, g.osize, 1.0f, dxg,
                   g.isize);
          ip_stage(&prof, 0, t0, AMD_PROF_BWD_DATA_GEMM, kdim * g.osize * g.mg);
        }
      }
    free(dcol);
  }
  ip_finish(&prof, AMD_PROF_BWD_DATA_GEMM, (double)(g.n * g.group * kdim * g.osize * g.mg),
            AMD_PROF_BWD_DATA_COL2IM, 0);
  if (oom) return amd_fail(st, "out of memory for the im2col buffer");
  return 0;
}

const amd_op amd_op_Conv = {
    .name = "Conv",
    .idx = AMD_OP_IDX_Conv,
    .since = {1, 11},
    .parse = conv_parse,
    .infer = conv_infer,
    .forward = conv_forward,
    .backward = conv_backward,
    .is_gemm = 1,
    .bwd_unread_out = 1,
    .fuses_relu = 1,
    .fuses_add = 1,
};

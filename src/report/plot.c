/* Training curves and confusion matrices as PNG pictures: see plot.h.
 *
 * Conventions: pixel coordinates with the origin at the top left (cairo's);
 * a panel maps data (x, y) into its plot rectangle with y growing upwards.
 * Accuracies arrive as fractions and are drawn in %. Sizes of text, lines and
 * margins scale with the picture, so a 640x300 and a 2400x1000 plot look alike. */
#include "plot.h"
#include "plot_tsv.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef AMD_HAVE_CAIRO

int amd_plot_available(void) { return 0; }

int amd_plot_metrics(const char *tsv_text, const char *png_path, int width, int height, amd_status *st) {
  (void)tsv_text, (void)png_path, (void)width, (void)height;
  return amd_fail(st, "built without cairo: --plot is unavailable (install libcairo2-dev and rebuild)");
}

int amd_plot_confusion(const int64_t *counts, int64_t n_classes, const char *const *class_names,
                       const char *png_path, amd_status *st) {
  (void)counts, (void)n_classes, (void)class_names, (void)png_path;
  return amd_fail(st, "built without cairo: --confusion is unavailable (install libcairo2-dev and rebuild)");
}

int amd_plot_bars(const char *const *labels, const double *values, int n, const char *title, const char *subtitle,
                  const char *xlabel, const char *png_path, amd_status *st) {
  (void)labels, (void)values, (void)n, (void)title, (void)subtitle, (void)xlabel, (void)png_path;
  return amd_fail(st, "built without cairo: --plot is unavailable (install libcairo2-dev and rebuild)");
}

int amd_plot_runs(const char *const *tsv_texts, const char *const *labels, int n, const char *column,
                  const char *title, const char *png_path, int width, int height, amd_status *st) {
  (void)tsv_texts, (void)labels, (void)n, (void)column, (void)title, (void)png_path, (void)width, (void)height;
  return amd_fail(st, "built without cairo: plots are unavailable (install libcairo2-dev and rebuild)");
}

void amd_plot_release(void) {}

#else

#include <cairo.h>
#include <fontconfig/fontconfig.h>

int amd_plot_available(void) { return 1; }

void amd_plot_release(void) {
  cairo_debug_reset_static_data();
  FcFini();
}

/* ---------------------------------------------------------------- common */

#define FONT "DejaVu Sans"

typedef struct {
  double r, g, b;
} rgb;

static const rgb INK = {0.13, 0.13, 0.15};   /* text and axes */
static const rgb MUTED = {0.38, 0.38, 0.42}; /* tick labels, subtitles */
static const rgb GRID = {0.89, 0.89, 0.91};

static void set_rgb(cairo_t *cr, rgb c) { cairo_set_source_rgb(cr, c.r, c.g, c.b); }

static void font(cairo_t *cr, double size, int bold) {
  cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL,
                         bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size);
}

static double text_w(cairo_t *cr, const char *s) {
  cairo_text_extents_t e;
  cairo_text_extents(cr, s, &e);
  return e.x_advance;
}

/* Draws s with its anchor at (x, y): ha 0 left, 0.5 centre, 1 right; va 0 top,
 * 0.5 middle, 1 baseline-ish bottom (uses the font's ascent, so that a row of
 * labels lines up whatever their letters). rot: radians, counter-clockwise. */
static void text_at(cairo_t *cr, const char *s, double x, double y, double ha, double va, double rot) {
  cairo_font_extents_t fe;
  cairo_font_extents(cr, &fe);
  double w = text_w(cr, s), h = fe.ascent * 0.78; /* cap height, close enough for DejaVu */
  cairo_save(cr);
  cairo_translate(cr, x, y);
  if (rot != 0) cairo_rotate(cr, -rot);
  cairo_move_to(cr, -ha * w, -va * h + h);
  cairo_show_text(cr, s);
  cairo_restore(cr);
}

typedef struct {
  FILE *f;
  int err;
} png_sink;

static cairo_status_t sink_write(void *closure, const unsigned char *data, unsigned int length) {
  png_sink *s = closure;
  if (fwrite(data, 1, length, s->f) != length) {
    s->err = errno ? errno : EIO;
    return CAIRO_STATUS_WRITE_ERROR;
  }
  return CAIRO_STATUS_SUCCESS;
}

/* Writes the surface to path through path.tmp and a rename. */
static int write_png_atomic(cairo_surface_t *surf, const char *path, amd_status *st) {
  char tmp[4096];
  if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
    return amd_fail(st, "%s: path too long", path);
  png_sink s = {fopen(tmp, "wb"), 0};
  if (!s.f) return amd_fail(st, "cannot create %s: %s", tmp, strerror(errno));
  cairo_status_t cs = cairo_surface_write_to_png_stream(surf, sink_write, &s);
  int close_err = fclose(s.f) != 0 ? errno : 0;
  if (cs != CAIRO_STATUS_SUCCESS || close_err) {
    remove(tmp);
    if (s.err || close_err)
      return amd_fail(st, "cannot write %s: %s", tmp, strerror(s.err ? s.err : close_err));
    return amd_fail(st, "cannot write %s: %s", tmp, cairo_status_to_string(cs));
  }
  if (rename(tmp, path) != 0) {
    int e = errno;
    remove(tmp);
    return amd_fail(st, "cannot rename %s to %s: %s", tmp, path, strerror(e));
  }
  return 0;
}

/* Creates an opaque white ARGB surface and its context. */
static cairo_t *new_canvas(int w, int h, cairo_surface_t **surf, amd_status *st) {
  *surf = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, w, h);
  if (cairo_surface_status(*surf) != CAIRO_STATUS_SUCCESS) {
    amd_fail(st, "cannot create a %dx%d picture: %s", w, h,
             cairo_status_to_string(cairo_surface_status(*surf)));
    cairo_surface_destroy(*surf);
    *surf = NULL;
    return NULL;
  }
  cairo_t *cr = cairo_create(*surf);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  return cr;
}

/* Finishes drawing: checks the context, writes the file, frees both. */
static int finish_canvas(cairo_t *cr, cairo_surface_t *surf, const char *path, amd_status *st) {
  int rc = 0;
  if (cairo_status(cr) != CAIRO_STATUS_SUCCESS)
    rc = amd_fail(st, "drawing %s failed: %s", path, cairo_status_to_string(cairo_status(cr)));
  cairo_destroy(cr);
  cairo_surface_flush(surf);
  if (rc == 0) rc = write_png_atomic(surf, path, st);
  cairo_surface_destroy(surf);
  return rc;
}

/* --------------------------------------------------------- metrics TSV: plot_tsv.c */

/* ----------------------------------------------------------------- axes */

/* The "nice" number (1, 2 or 5 times a power of ten) nearest to x. */
static double nice_num(double x) {
  double e = floor(log10(x)), f = x / pow(10, e);
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * pow(10, e);
}

typedef struct {
  double lo, hi;   /* the axis range */
  double t0, step; /* ticks at t0 + k*step, k = 0..n_ticks-1 */
  int n_ticks, decimals;
} axis;

/* An axis over [lo, hi] with about `target` ticks, its ends rounded out to ticks.
 * min_step > 0 forces steps that are multiples of it (epochs are integers). */
static axis make_axis(double lo, double hi, int target, double min_step, int round_ends) {
  axis a;
  if (!(hi > lo)) {
    double pad = fabs(lo) > 0 ? fabs(lo) * 0.1 : 0.5;
    if (min_step > 0 && pad < min_step) pad = min_step;
    lo -= pad, hi += pad;
  }
  double step = nice_num((hi - lo) / (target > 1 ? target - 1 : 1));
  if (min_step > 0 && step < min_step) step = min_step;
  if (min_step > 0) step = ceil(step / min_step - 1e-9) * min_step;
  if (round_ends) {
    lo = floor(lo / step + 1e-9) * step;
    hi = ceil(hi / step - 1e-9) * step;
  }
  a.lo = lo, a.hi = hi, a.step = step;
  a.t0 = ceil(lo / step - 1e-9) * step;
  a.n_ticks = (int)floor((hi - a.t0) / step + 1e-9) + 1;
  /* as many decimals as the step needs: 0.2 -> 1, 0.05 -> 2, 5 -> 0 */
  a.decimals = 0;
  while (a.decimals < 9 && fabs(step * pow(10, a.decimals) - round(step * pow(10, a.decimals))) >
                               1e-6 * step * pow(10, a.decimals))
    a.decimals++;
  return a;
}

static void tick_label(const axis *a, double v, char *buf, size_t n) {
  if (fabs(v) < a->step * 1e-9) v = 0; /* no "-0.0" */
  snprintf(buf, n, "%.*f", a->decimals, v);
}

/* --------------------------------------------------------------- panels */

/* A column of a metrics table drawn as one curve against the epoch. */
typedef struct {
  int col;
  const char *name;
  rgb color;
  int dashed;
} series;
typedef struct {
  const metrics *m;
  int col;
  const char *name;
  rgb color;
  int dashed;
} curve;

/* Colour-blind-safe (Okabe-Ito) hues: blue, vermillion, bluish green. */
static const series LOSS_SERIES[3] = {{C_TRAIN_LOSS, "train", {0.00, 0.45, 0.70}, 0},
                                      {C_TEST_LOSS, "test", {0.84, 0.37, 0.00}, 0},
                                      {C_VAL_LOSS, "validation", {0.00, 0.62, 0.45}, 1}};
static const series ACC_SERIES[3] = {{C_TRAIN_ACC, "train", {0.00, 0.45, 0.70}, 0},
                                     {C_TEST_ACC, "test top-1", {0.84, 0.37, 0.00}, 0},
                                     {C_VAL_ACC, "validation top-1", {0.00, 0.62, 0.45}, 1}};

typedef struct {
  double x, y, w, h; /* the plot rectangle */
  axis ax, ay;
} frame;

static double px(const frame *f, double x) { return f->x + (x - f->ax.lo) / (f->ax.hi - f->ax.lo) * f->w; }
static double py(const frame *f, double y) {
  return f->y + f->h - (y - f->ay.lo) / (f->ay.hi - f->ay.lo) * f->h;
}

/* The panel's subtitle: the best accuracy (or lowest loss) of the test or
 * validation column, with its epoch; empty when the metrics have neither. */
static void panel_subtitle(const metrics *m, int is_acc, char *sub, size_t n) {
  sub[0] = 0;
  int best_col = is_acc ? (m->v[C_TEST_ACC]  ? C_TEST_ACC
                           : m->v[C_VAL_ACC] ? C_VAL_ACC
                                             : -1)
                        : (m->v[C_TEST_LOSS]  ? C_TEST_LOSS
                           : m->v[C_VAL_LOSS] ? C_VAL_LOSS
                                              : -1);
  if (best_col < 0) return;
  int64_t bi = -1;
  const double *v = m->v[best_col];
  for (int64_t i = 0; i < m->n; i++)
    if (!isnan(v[i]) && (bi < 0 || (is_acc ? v[i] > v[bi] : v[i] < v[bi]))) bi = i;
  const char *what = best_col == C_VAL_ACC || best_col == C_VAL_LOSS ? "validation" : "test";
  if (bi >= 0 && is_acc)
    snprintf(sub, n, "best %s top-1 %.2f%% at epoch %g", what, v[bi], m->v[C_EPOCH][bi]);
  else if (bi >= 0)
    snprintf(sub, n, "lowest %s loss %.4f at epoch %g", what, v[bi], m->v[C_EPOCH][bi]);
}

/* Background, grid lines, tick marks and labels, the frame and the axis
 * titles of f, in the panel (x, y, ., h). */
static void draw_axes(cairo_t *cr, const frame *f, const char *ylabel, double x, double y, double h,
                      double fs, double u) {
  const axis *ax = &f->ax, *ay = &f->ay;
  char buf[64];
  cairo_set_source_rgb(cr, 0.985, 0.985, 0.99);
  cairo_rectangle(cr, f->x, f->y, f->w, f->h);
  cairo_fill(cr);
  cairo_set_line_width(cr, fmax(1, 0.8 * u));
  set_rgb(cr, GRID);
  for (int k = 0; k < ay->n_ticks; k++) {
    double yy = round(py(f, ay->t0 + k * ay->step)) + 0.5;
    cairo_move_to(cr, f->x, yy), cairo_line_to(cr, f->x + f->w, yy);
  }
  for (int k = 0; k < ax->n_ticks; k++) {
    double xx = round(px(f, ax->t0 + k * ax->step)) + 0.5;
    cairo_move_to(cr, xx, f->y), cairo_line_to(cr, xx, f->y + f->h);
  }
  cairo_stroke(cr);
  set_rgb(cr, MUTED);
  font(cr, fs, 0);
  for (int k = 0; k < ay->n_ticks; k++) {
    double v = ay->t0 + k * ay->step, yy = round(py(f, v)) + 0.5;
    tick_label(ay, v, buf, sizeof buf);
    text_at(cr, buf, f->x - 8 * u, yy, 1, 0.5, 0);
    cairo_move_to(cr, f->x - 4 * u, yy), cairo_line_to(cr, f->x, yy);
  }
  for (int k = 0; k < ax->n_ticks; k++) {
    double v = ax->t0 + k * ax->step, xx = round(px(f, v)) + 0.5;
    tick_label(ax, v, buf, sizeof buf);
    text_at(cr, buf, xx, f->y + f->h + 7 * u, 0.5, 0, 0);
    cairo_move_to(cr, xx, f->y + f->h), cairo_line_to(cr, xx, f->y + f->h + 4 * u);
  }
  cairo_stroke(cr);
  /* the frame: left and bottom spines darker */
  cairo_set_line_width(cr, fmax(1, 1.0 * u));
  cairo_set_source_rgb(cr, 0.75, 0.75, 0.78);
  cairo_rectangle(cr, round(f->x) + 0.5, round(f->y) + 0.5, round(f->w), round(f->h));
  cairo_stroke(cr);
  set_rgb(cr, INK);
  font(cr, fs, 0);
  text_at(cr, "epoch", f->x + f->w / 2, y + h - 8 * u, 0.5, 1, 0);
  text_at(cr, ylabel, x + 10 * u, f->y + f->h / 2, 0.5, 0, M_PI / 2);
}

/* The curves, broken where a value is missing; markers when there are few epochs. */
static void draw_curves(cairo_t *cr, const frame *f, const curve *cv, int n_cv, int markers, double u) {
  cairo_save(cr);
  cairo_rectangle(cr, f->x - 6 * u, f->y - 6 * u, f->w + 12 * u, f->h + 12 * u);
  cairo_clip(cr);
  cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
  cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
  for (int s = 0; s < n_cv; s++) {
    const metrics *m = cv[s].m;
    const double *v = m->v[cv[s].col];
    if (!v) continue;
    set_rgb(cr, cv[s].color);
    cairo_set_line_width(cr, 2.2 * u);
    if (cv[s].dashed) {
      double d[2] = {6 * u, 4 * u};
      cairo_set_dash(cr, d, 2, 0);
    }
    int pen = 0;
    for (int64_t i = 0; i < m->n; i++) {
      if (isnan(v[i])) {
        pen = 0;
        continue;
      }
      double xx = px(f, m->v[C_EPOCH][i]), yy = py(f, v[i]);
      if (pen)
        cairo_line_to(cr, xx, yy);
      else
        cairo_move_to(cr, xx, yy);
      pen = 1;
    }
    cairo_stroke(cr);
    cairo_set_dash(cr, NULL, 0, 0);
    for (int64_t i = 0; markers && i < m->n; i++) {
      if (isnan(v[i])) continue;
      double xx = px(f, m->v[C_EPOCH][i]), yy = py(f, v[i]);
      cairo_new_sub_path(cr);
      cairo_arc(cr, xx, yy, 3.2 * u, 0, 2 * M_PI);
      set_rgb(cr, cv[s].color);
      cairo_fill_preserve(cr);
      cairo_set_source_rgb(cr, 1, 1, 1);
      cairo_set_line_width(cr, 1.0 * u);
      cairo_stroke(cr);
    }
  }
  cairo_restore(cr);
}

/* How many curve points (weighed as markers) and samples along the segments
 * fall into the box (bx, by, bw, bh): the legend goes where this is least. */
static long legend_hits(const frame *f, const curve *cv, int n_cv, double bx, double by, double bw, double bh,
                        double u) {
  long hits = 0;
  for (int s = 0; s < n_cv; s++) {
    const metrics *m = cv[s].m;
    const double *v = m->v[cv[s].col];
    for (int64_t i = 0; v && i < m->n; i++) {
      if (isnan(v[i])) continue;
      /* the point (weighed as a marker) and samples along the segment to the next one */
      int samples = i + 1 < m->n && !isnan(v[i + 1]) ? 16 : 1;
      for (int k = 0; k < samples; k++) {
        double a = (double)k / 16;
        double xx = m->v[C_EPOCH][i], yy = v[i];
        if (k) xx += a * (m->v[C_EPOCH][i + 1] - xx), yy += a * (v[i + 1] - yy);
        double qx = px(f, xx), qy = py(f, yy), r = 5 * u;
        if (qx >= bx - r && qx <= bx + bw + r && qy >= by - r && qy <= by + bh + r) hits += k ? 1 : 8;
      }
    }
  }
  return hits;
}

/* The legend, in the corner of the plot that covers the fewest points. */
static void draw_legend(cairo_t *cr, const frame *f, const curve *cv, int n_cv, int markers, double fs,
                        double u) {
  double sw = 22 * u, row = fs + 7 * u, pad = 8 * u, lw = 0;
  font(cr, fs, 0);
  for (int s = 0; s < n_cv; s++)
    if (cv[s].m->v[cv[s].col]) lw = fmax(lw, text_w(cr, cv[s].name));
  int rows = 0;
  for (int s = 0; s < n_cv; s++) rows += cv[s].m->v[cv[s].col] != NULL;
  double bw = pad + sw + 6 * u + lw + pad, bh = pad + rows * row - 7 * u + pad;
  double best_x = 0, best_y = 0;
  long best_hits = -1;
  for (int corner = 0; corner < 4; corner++) {
    /* top right, bottom right, top left, bottom left: the usual places first */
    double bx = corner < 2 ? f->x + f->w - 8 * u - bw : f->x + 8 * u;
    double by = corner % 2 == 0 ? f->y + 8 * u : f->y + f->h - 8 * u - bh;
    long hits = legend_hits(f, cv, n_cv, bx, by, bw, bh, u);
    if (best_hits < 0 || hits < best_hits) best_hits = hits, best_x = bx, best_y = by;
  }
  cairo_set_source_rgba(cr, 1, 1, 1, 0.9);
  cairo_rectangle(cr, round(best_x) + 0.5, round(best_y) + 0.5, round(bw), round(bh));
  cairo_fill_preserve(cr);
  cairo_set_source_rgb(cr, 0.8, 0.8, 0.83);
  cairo_set_line_width(cr, 1);
  cairo_stroke(cr);
  int r = 0;
  for (int s = 0; s < n_cv; s++) {
    if (!cv[s].m->v[cv[s].col]) continue;
    double cy = best_y + pad + r * row + fs * 0.4;
    set_rgb(cr, cv[s].color);
    cairo_set_line_width(cr, 2.2 * u);
    if (cv[s].dashed) {
      double d[2] = {6 * u, 4 * u};
      cairo_set_dash(cr, d, 2, 0);
    }
    cairo_move_to(cr, best_x + pad, cy), cairo_line_to(cr, best_x + pad + sw, cy);
    cairo_stroke(cr);
    cairo_set_dash(cr, NULL, 0, 0);
    if (markers) {
      cairo_arc(cr, best_x + pad + sw / 2, cy, 3.2 * u, 0, 2 * M_PI);
      cairo_fill(cr);
    }
    set_rgb(cr, INK);
    text_at(cr, cv[s].name, best_x + pad + sw + 6 * u, cy, 0, 0.5, 0);
    r++;
  }
}

/* Draws one panel of the curves cv into the rectangle (x, y, w, h) of the
 * picture, with a title and a subtitle (may be empty); u is the size unit (px). */
static void draw_panel(cairo_t *cr, const curve *cv, int n_cv, int is_acc, const char *title, const char *sub,
                       const char *ylabel, double x, double y, double w, double h, double u) {
  double fs = 11 * u, fs_title = 13.5 * u;
  /* the data range, and the epochs of all the curves */
  double lo = INFINITY, hi = -INFINITY, elo = INFINITY, ehi = -INFINITY;
  int n_series = 0;
  for (int s = 0; s < n_cv; s++) {
    const metrics *m = cv[s].m;
    for (int64_t i = 0; i < m->n; i++) elo = fmin(elo, m->v[C_EPOCH][i]), ehi = fmax(ehi, m->v[C_EPOCH][i]);
    const double *v = m->v[cv[s].col];
    if (!v) continue;
    int any = 0;
    for (int64_t i = 0; i < m->n; i++)
      if (!isnan(v[i])) lo = fmin(lo, v[i]), hi = fmax(hi, v[i]), any = 1;
    n_series += any;
  }

  /* the title, and a subtitle with the headline number */
  set_rgb(cr, INK);
  font(cr, fs_title, 1);
  text_at(cr, title, x + w / 2, y + 10 * u, 0.5, 0, 0);
  set_rgb(cr, MUTED);
  font(cr, fs * 0.95, 0);
  if (sub[0]) text_at(cr, sub, x + w / 2, y + 10 * u + fs_title + 6 * u, 0.5, 0, 0);

  /* axes: y ticks rounded out, the accuracy kept within 0..100 */
  int ny = h > 260 * u ? 7 : 5;
  if (n_series == 0) lo = 0, hi = is_acc ? 100 : 1;
  /* a margin, so that the extreme points do not sit on the frame */
  double margin = (hi - lo) * 0.03, data_lo = lo;
  lo -= margin, hi += margin;
  axis ay = make_axis(lo, hi, ny, 0, 1);
  if (is_acc && ay.hi > 100) ay = make_axis(lo, 100, ny, 0, 1);
  if (is_acc && ay.lo < 0) ay = make_axis(0, ay.hi, ny, 0, 1);
  if (!is_acc && data_lo >= 0 && ay.lo < 0) ay = make_axis(0, ay.hi, ny, 0, 1);
  int nx = w > 420 * u ? 10 : 6;
  axis ax = make_axis(elo, ehi, nx, 1, 0);
  /* pad x a little so that the end markers are not cut by the frame */
  double xpad = (ax.hi - ax.lo) * 0.03;
  ax.lo -= xpad, ax.hi += xpad;

  /* margins from the widest tick label */
  font(cr, fs, 0);
  double wmax = 0;
  char buf[64];
  for (int k = 0; k < ay.n_ticks; k++) {
    tick_label(&ay, ay.t0 + k * ay.step, buf, sizeof buf);
    wmax = fmax(wmax, text_w(cr, buf));
  }
  frame f;
  f.ax = ax, f.ay = ay;
  f.x = x + 12 * u + fs + 8 * u + wmax + 6 * u;
  f.y = y + 10 * u + fs_title + 6 * u + fs + 14 * u;
  f.w = x + w - 14 * u - f.x;
  f.h = y + h - (fs + 8 * u + fs + 10 * u) - f.y;
  if (f.w < 20 || f.h < 20) return;

  draw_axes(cr, &f, ylabel, x, y, h, fs, u);
  int64_t longest = 0;
  for (int s = 0; s < n_cv; s++) longest = cv[s].m->n > longest ? cv[s].m->n : longest;
  int markers = longest <= 40;
  draw_curves(cr, &f, cv, n_cv, markers, u);
  if (n_series == 0) {
    set_rgb(cr, MUTED);
    text_at(cr, "no values", f.x + f.w / 2, f.y + f.h / 2, 0.5, 0.5, 0);
    return;
  }
  draw_legend(cr, &f, cv, n_cv, markers, fs, u);
}

/* The curves of a metrics table's series (those whose column it has). */
static int curves_of(const metrics *m, const series *ser, curve *out) {
  int n = 0;
  for (int s = 0; s < 3; s++)
    if (m->v[ser[s].col]) out[n++] = (curve){m, ser[s].col, ser[s].name, ser[s].color, ser[s].dashed};
  return n;
}

/* The checks of a curves picture's output file and size (amd_plot_metrics, amd_plot_runs). */
static int check_picture(const char *png_path, int width, int height, amd_status *st) {
  if (!png_path || !*png_path) return amd_fail(st, "plot: no output file");
  if (width < 200 || height < 200 || width > 8192 || height > 8192)
    return amd_fail(st, "plot: %dx%d pixels is outside 200..8192 on a side", width, height);
  return 0;
}

/* The size unit of a pw x ph panel: text and lines scale with it. */
static double panel_unit(double pw, double ph) { return fmax(0.85, fmin(fmin(pw / 540.0, ph / 380.0), 4.0)); }

int amd_plot_metrics(const char *tsv_text, const char *png_path, int width, int height, amd_status *st) {
  if (check_picture(png_path, width, height, st)) return -1;
  metrics m;
  if (amd_plot_parse_metrics(tsv_text, &m, st)) return -1;
  cairo_surface_t *surf;
  cairo_t *cr = new_canvas(width, height, &surf, st);
  if (!cr) {
    amd_plot_metrics_free(&m);
    return -1;
  }
  /* side by side when wide, stacked otherwise; u scales text and lines with the panel */
  int side = width >= 1.4 * height;
  double pw = side ? width / 2.0 : width, ph = side ? height : height / 2.0;
  const double u = panel_unit(pw, ph);
  curve cv[3];
  char sub[160];
  int n_cv = curves_of(&m, LOSS_SERIES, cv);
  panel_subtitle(&m, 0, sub, sizeof sub);
  draw_panel(cr, cv, n_cv, 0, "Loss", sub, "loss (cross-entropy)", 0, 0, pw, ph, u);
  n_cv = curves_of(&m, ACC_SERIES, cv);
  panel_subtitle(&m, 1, sub, sizeof sub);
  draw_panel(cr, cv, n_cv, 1, "Accuracy", sub, "accuracy (%)", side ? pw : 0, side ? 0 : ph, pw, ph, u);
  amd_plot_metrics_free(&m);
  return finish_canvas(cr, surf, png_path, st);
}

/* ----------------------------------------------------------- runs */

/* Okabe-Ito hues without yellow (too pale on white); runs past the seventh
 * take the hues again, dashed. */
static const rgb RUN_COLORS[7] = {{0.00, 0.45, 0.70}, {0.84, 0.37, 0.00}, {0.00, 0.62, 0.45}, {0.80, 0.47, 0.65},
                                  {0.90, 0.62, 0.00}, {0.34, 0.71, 0.91}, {0.13, 0.13, 0.15}};

/* The last value of column col in m, or NAN. */
static double last_value(const metrics *m, int col) {
  for (int64_t i = m->n - 1; i >= 0; i--)
    if (!isnan(m->v[col][i])) return m->v[col][i];
  return NAN;
}

int amd_plot_runs(const char *const *tsv_texts, const char *const *labels, int n, const char *column,
                  const char *title, const char *png_path, int width, int height, amd_status *st) {
  enum { MAX_RUNS = 64 };
  if (check_picture(png_path, width, height, st)) return -1;
  if (n < 1 || n > MAX_RUNS) return amd_fail(st, "plot: %d runs (1..%d)", n, MAX_RUNS);
  const int col = amd_plot_column(column);
  if (col <= C_EPOCH)
    return amd_fail(st, "plot: unknown column '%s' (test_top1, test_loss, train_loss, train_acc, val_top1, val_loss)",
                    column ? column : "");
  const int is_acc = col >= C_TRAIN_ACC;
  metrics m[MAX_RUNS];
  double last[MAX_RUNS]; /* each run's last value of the column, or NAN */
  char names[MAX_RUNS][96];
  curve cv[MAX_RUNS];
  int parsed = 0, rc = 0;
  for (; parsed < n; parsed++) {
    if (amd_plot_parse_metrics(tsv_texts[parsed], &m[parsed], st)) {
      char why[sizeof st->msg];
      snprintf(why, sizeof why, "%s", st->msg);
      amd_fail(st, "plot: run '%s': %s", labels[parsed], why);
      rc = -1;
      break;
    }
    if (!m[parsed].v[col]) {
      amd_fail(st, "plot: run '%s' has no column %s", labels[parsed], column);
      parsed++;
      rc = -1;
      break;
    }
    last[parsed] = last_value(&m[parsed], col);
    if (isnan(last[parsed]))
      snprintf(names[parsed], sizeof names[parsed], "%s", labels[parsed]);
    else
      snprintf(names[parsed], sizeof names[parsed], is_acc ? "%s (%.2f%%)" : "%s (%.4f)", labels[parsed],
               last[parsed]);
    cv[parsed] = (curve){&m[parsed], col, names[parsed], RUN_COLORS[parsed % 7], parsed >= 7};
  }
  if (rc == 0) {
    /* the subtitle: the spread of the final values */
    char sub[160] = "";
    int hi = -1, lo = -1;
    for (int i = 0; i < n; i++) {
      if (isnan(last[i])) continue;
      if (hi < 0 || last[i] > last[hi]) hi = i;
      if (lo < 0 || last[i] < last[lo]) lo = i;
    }
    if (hi >= 0 && n > 1)
      snprintf(sub, sizeof sub, is_acc ? "last epoch: %.2f%% (%s) to %.2f%% (%s)" : "last epoch: %.4f (%s) to %.4f (%s)",
               last[lo], labels[lo], last[hi], labels[hi]);
    static const char *const YLABELS[N_COLS] = {"epoch", "train loss", "test loss", "validation loss",
                                                "train accuracy (%)", "test top-1 (%)", "validation top-1 (%)"};
    cairo_surface_t *surf;
    cairo_t *cr = new_canvas(width, height, &surf, st);
    if (!cr) {
      rc = -1;
    } else {
      draw_panel(cr, cv, n, is_acc, title ? title : YLABELS[col], sub, YLABELS[col], 0, 0, width, height,
                 panel_unit(width, height));
      rc = finish_canvas(cr, surf, png_path, st);
    }
  }
  for (int i = 0; i < parsed; i++) amd_plot_metrics_free(&m[i]);
  return rc;
}

/* ------------------------------------------------------ confusion matrix */

/* The "Blues" sequential colour map (ColorBrewer), t in 0..1. */
static rgb blues(double t) {
  static const rgb stops[9] = {{0.969, 0.984, 1.000}, {0.871, 0.922, 0.969}, {0.776, 0.859, 0.937},
                               {0.620, 0.792, 0.882}, {0.420, 0.682, 0.839}, {0.259, 0.573, 0.776},
                               {0.129, 0.443, 0.710}, {0.031, 0.318, 0.612}, {0.031, 0.188, 0.420}};
  t = t < 0 ? 0 : t > 1 ? 1 : t;
  double p = t * 8;
  int i = (int)p;
  if (i >= 8) return stops[8];
  double a = p - i;
  return (rgb){stops[i].r + a * (stops[i + 1].r - stops[i].r), stops[i].g + a * (stops[i + 1].g - stops[i].g),
               stops[i].b + a * (stops[i + 1].b - stops[i].b)};
}

static void class_label(const char *const *names, int64_t k, char *buf, size_t n) {
  if (names && names[k] && names[k][0])
    snprintf(buf, n, "%s", names[k]);
  else
    snprintf(buf, n, "%lld", (long long)k);
}

/* The count in a cell: in full, or shortened (12.3k, 4.5M) when space is short. */
static void count_text(int64_t c, int shortened, char *buf, size_t n) {
  if (!shortened || c < 1000)
    snprintf(buf, n, "%lld", (long long)c);
  else if (c < 1000000)
    snprintf(buf, n, "%.*fk", c < 10000 ? 1 : 0, (double)c / 1e3);
  else
    snprintf(buf, n, "%.*fM", c < 10000000 ? 1 : 0, (double)c / 1e6);
}

/* The confusion matrix's cells (shaded by the share of their row), separators,
 * the outlined diagonal and the counts where they fit, at (x0, y0). */
static void confusion_cells(cairo_t *cr, const int64_t *counts, int64_t n, double x0, double y0, double cell,
                            double mat) {
  char buf[256];
  /* cells */
  for (int64_t r = 0; r < n; r++) {
    int64_t row = 0;
    for (int64_t c = 0; c < n; c++) row += counts[r * n + c];
    for (int64_t c = 0; c < n; c++) {
      double t = row ? (double)counts[r * n + c] / (double)row : 0;
      rgb col = row ? blues(t) : (rgb){0.93, 0.93, 0.93};
      set_rgb(cr, col);
      cairo_rectangle(cr, x0 + c * cell, y0 + r * cell, cell, cell);
      cairo_fill(cr);
    }
  }
  /* thin white separators when the cells are large enough to need them */
  if (cell >= 12) {
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_set_line_width(cr, 1);
    for (int64_t k = 1; k < n; k++) {
      cairo_move_to(cr, round(x0 + k * cell) + 0.5, y0),
          cairo_line_to(cr, round(x0 + k * cell) + 0.5, y0 + mat);
      cairo_move_to(cr, x0, round(y0 + k * cell) + 0.5),
          cairo_line_to(cr, x0 + mat, round(y0 + k * cell) + 0.5);
    }
    cairo_stroke(cr);
  }
  /* the diagonal outlined, so that the correct answers stand out */
  if (cell >= 8) {
    cairo_set_source_rgba(cr, 0.13, 0.13, 0.15, 0.55);
    cairo_set_line_width(cr, 1.2);
    for (int64_t k = 0; k < n; k++)
      cairo_rectangle(cr, x0 + k * cell + 1.1, y0 + k * cell + 1.1, cell - 2.2, cell - 2.2);
    cairo_stroke(cr);
  }
  /* counts, where they fit */
  double fs_cnt = fmin(12, cell * 0.32);
  if (fs_cnt >= 6.5) {
    font(cr, fs_cnt, 0);
    for (int64_t r = 0; r < n; r++) {
      int64_t row = 0;
      for (int64_t c = 0; c < n; c++) row += counts[r * n + c];
      for (int64_t c = 0; c < n; c++) {
        int64_t v = counts[r * n + c];
        double t = row ? (double)v / (double)row : 0;
        count_text(v, 0, buf, sizeof buf);
        if (text_w(cr, buf) > cell * 0.88) count_text(v, 1, buf, sizeof buf);
        if (text_w(cr, buf) > cell * 0.88) continue;
        if (t > 0.5)
          cairo_set_source_rgb(cr, 1, 1, 1);
        else if (v == 0)
          cairo_set_source_rgb(cr, 0.70, 0.72, 0.76);
        else
          set_rgb(cr, INK);
        text_at(cr, buf, x0 + (c + 0.5) * cell, y0 + (r + 0.5) * cell, 0.5, 0.5, 0);
      }
    }
  }
}

/* Class labels (rows on the left, columns below, turned when cols_rotated),
 * the axis names and the frame of the matrix. */
static void confusion_labels(cairo_t *cr, const char *const *class_names, int64_t n, int64_t lab_every,
                             double lab_w, int cols_rotated, double x0, double y0, double cell, double mat,
                             double fs, double fs_lab, double H) {
  char buf[256];
  /* class labels: rows on the left, columns below (turned when they are wide) */
  set_rgb(cr, INK);
  font(cr, fs_lab, 0);
  for (int64_t k = 0; k < n; k += lab_every) {
    class_label(class_names, k, buf, sizeof buf);
    /* cut names that are too long for the margin */
    while (strlen(buf) > 1 && text_w(cr, buf) > lab_w + 0.5) {
      size_t l = strlen(buf);
      buf[l - 1] = 0;
      if (l >= 4) memcpy(buf + l - 4, "..", 3);
    }
    text_at(cr, buf, x0 - 8, y0 + (k + 0.5) * cell, 1, 0.5, 0);
    if (cols_rotated)
      text_at(cr, buf, x0 + (k + 0.5) * cell, y0 + mat + 8, 1, 0.5, M_PI / 2);
    else
      text_at(cr, buf, x0 + (k + 0.5) * cell, y0 + mat + 8, 0.5, 0, 0);
  }
  /* axis names */
  font(cr, fs, 1);
  text_at(cr, "prediction", x0 + mat / 2, H - 12, 0.5, 1, 0);
  text_at(cr, "label", 14, y0 + mat / 2, 0.5, 0, M_PI / 2);
  /* frame */
  cairo_set_source_rgb(cr, 0.62, 0.64, 0.68);
  cairo_set_line_width(cr, 1);
  cairo_rectangle(cr, round(x0) + 0.5, round(y0) + 0.5, round(mat) - 1, round(mat) - 1);
  cairo_stroke(cr);
}

/* The colour bar right of the matrix: the share of a label's samples. */
static void confusion_colour_bar(cairo_t *cr, double x0, double y0, double mat, double bar_w, double fs) {
  char buf[256];
  /* colour bar: the share of a label's samples */
  double bx = x0 + mat + 22, bh = fmin(mat, fmax(120, mat));
  double by = y0 + (mat - bh) / 2;
  cairo_pattern_t *grad = cairo_pattern_create_linear(0, by + bh, 0, by);
  for (int i = 0; i <= 16; i++) {
    rgb c = blues(i / 16.0);
    cairo_pattern_add_color_stop_rgb(grad, i / 16.0, c.r, c.g, c.b);
  }
  cairo_rectangle(cr, bx, by, bar_w, bh);
  cairo_set_source(cr, grad);
  cairo_fill(cr);
  cairo_pattern_destroy(grad);
  cairo_set_source_rgb(cr, 0.62, 0.64, 0.68);
  cairo_rectangle(cr, round(bx) + 0.5, round(by) + 0.5, bar_w - 1, round(bh) - 1);
  cairo_stroke(cr);
  font(cr, 11, 0);
  for (int k = 0; k <= 4; k++) {
    double yy = round(by + bh - k * bh / 4) + 0.5;
    if (k == 0) yy -= 1;
    snprintf(buf, sizeof buf, "%d%%", 25 * k);
    set_rgb(cr, MUTED);
    text_at(cr, buf, bx + bar_w + 7, yy, 0, 0.5, 0);
    cairo_move_to(cr, bx + bar_w, yy), cairo_line_to(cr, bx + bar_w + 4, yy);
    cairo_stroke(cr);
  }
  set_rgb(cr, INK);
  font(cr, fs, 0);
  text_at(cr, "share of the label's samples", bx + bar_w + 8 + 40 + 6, by + bh / 2, 0.5, 0, -M_PI / 2);
}

int amd_plot_confusion(const int64_t *counts, int64_t n_classes, const char *const *class_names,
                       const char *png_path, amd_status *st) {
  if (!png_path || !*png_path) return amd_fail(st, "confusion: no output file");
  if (!counts || n_classes < 1) return amd_fail(st, "confusion: no classes to draw");
  if (n_classes > 2000)
    return amd_fail(st, "confusion: %lld classes are too many to draw (at most 2000)", (long long)n_classes);
  const int64_t n = n_classes;
  int64_t total = 0, correct = 0;
  for (int64_t i = 0; i < n * n; i++) {
    if (counts[i] < 0)
      return amd_fail(st, "confusion: negative count at row %lld, column %lld", (long long)(i / n),
                      (long long)(i % n));
    total += counts[i];
  }
  for (int64_t k = 0; k < n; k++) correct += counts[k * n + k];

  /* sizes: cells from 64 px (few classes) down to 2 px (many) */
  double cell = floor(fmin(64.0, fmax(2.0, 640.0 / (double)n)));
  double fs = 13, fs_title = 16, fs_lab = fmin(fs, fmax(8, cell * 0.7));
  /* label every class when there is room, else every 2nd, 5th, 10th, ... */
  int64_t lab_every = 1;
  while (cell * (double)lab_every < fs_lab * 1.15) {
    int64_t p10 = 1;
    while (lab_every / p10 >= 10) p10 *= 10;
    lab_every = lab_every / p10 == 2 ? 5 * p10 : 2 * lab_every; /* 1 2 5 10 20 50 ... */
  }

  /* measure the labels on a scratch surface */
  cairo_surface_t *scratch = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
  cairo_t *mc = cairo_create(scratch);
  font(mc, fs_lab, 0);
  double lab_w = 0;
  char buf[256];
  for (int64_t k = 0; k < n; k += lab_every) {
    class_label(class_names, k, buf, sizeof buf);
    lab_w = fmax(lab_w, text_w(mc, buf));
  }
  lab_w = fmin(lab_w, 220);
  char title[160], sub[200];
  snprintf(title, sizeof title, "Confusion matrix");
  if (total > 0)
    snprintf(sub, sizeof sub, "accuracy %.2f%%  (%lld of %lld correct, %lld classes)",
             100.0 * (double)correct / (double)total, (long long)correct, (long long)total, (long long)n);
  else
    snprintf(sub, sizeof sub, "no samples (%lld classes)", (long long)n);
  font(mc, fs_title, 1);
  double title_w = text_w(mc, title);
  font(mc, fs, 0);
  title_w = fmax(title_w, text_w(mc, sub));
  cairo_destroy(mc);
  cairo_surface_destroy(scratch);

  int cols_rotated = lab_w > cell * 0.92;
  double mat = cell * (double)n;
  double left = 16 + fs + 10 + lab_w + 8;
  double top = 14 + fs_title + 8 + fs + 16;
  double bottom = 8 + (cols_rotated ? lab_w : fs_lab) + 10 + fs + 14;
  double bar_w = 16, right = 22 + bar_w + 8 + 40 + 8 + fs + 14;
  double W = left + mat + right;
  double H = top + mat + bottom;
  double shift = 0;
  if (W < title_w + 40) shift = (title_w + 40 - W) / 2, W = title_w + 40;
  int width = (int)ceil(W), height = (int)ceil(H);

  cairo_surface_t *surf;
  cairo_t *cr = new_canvas(width, height, &surf, st);
  if (!cr) return -1;
  double x0 = left + shift, y0 = top;

  /* title */
  set_rgb(cr, INK);
  font(cr, fs_title, 1);
  text_at(cr, title, W / 2, 14, 0.5, 0, 0);
  set_rgb(cr, MUTED);
  font(cr, fs, 0);
  text_at(cr, sub, W / 2, 14 + fs_title + 8, 0.5, 0, 0);

  confusion_cells(cr, counts, n, x0, y0, cell, mat);
  confusion_labels(cr, class_names, n, lab_every, lab_w, cols_rotated, x0, y0, cell, mat, fs, fs_lab, H);
  confusion_colour_bar(cr, x0, y0, mat, bar_w, fs);
  return finish_canvas(cr, surf, png_path, st);
}

/* ------------------------------------------------------------ bar chart */

int amd_plot_bars(const char *const *labels, const double *values, int n, const char *title, const char *subtitle,
                  const char *xlabel, const char *png_path, amd_status *st) {
  if (!png_path || !*png_path) return amd_fail(st, "bar chart: no output file");
  if (n < 1 || !labels || !values) return amd_fail(st, "bar chart: no bars to draw");
  if (n > 5000) return amd_fail(st, "bar chart: %d bars are too many to draw (at most 5000)", n);
  double lo = 0, hi = 0;
  for (int i = 0; i < n; i++)
    if (isfinite(values[i])) lo = fmin(lo, values[i]), hi = fmax(hi, values[i]);
  /* room for the value written past each bar's end */
  double span = hi - lo;
  if (lo < 0) lo -= 0.12 * span;
  if (hi > 0) hi += 0.12 * span;
  axis ax = make_axis(lo, hi, 6, 0, 1);

  const double fs = 12, fs_title = 16, bar_h = 18, gap = 6, row = bar_h + gap;
  /* measure the labels and the value texts */
  cairo_surface_t *scratch = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
  cairo_t *mc = cairo_create(scratch);
  font(mc, fs, 0);
  double lab_w = 0, val_w = 0;
  char buf[64];
  for (int i = 0; i < n; i++) {
    lab_w = fmax(lab_w, text_w(mc, labels[i] ? labels[i] : ""));
    snprintf(buf, sizeof buf, "%.2f", values[i]);
    val_w = fmax(val_w, text_w(mc, buf));
  }
  font(mc, fs_title, 1);
  double title_w = text_w(mc, title ? title : "");
  cairo_destroy(mc);
  cairo_surface_destroy(scratch);
  lab_w = fmin(lab_w, 360);

  double plot_w = 560;
  double left = 16 + lab_w + 10, right = 12 + val_w + 16;
  double top = 14 + fs_title + 8 + (subtitle ? fs + 8 : 0) + 10;
  double plot_h = row * n + gap;
  double bottom = 8 + fs + 8 + fs + 14;
  double W = fmax(left + plot_w + right, title_w + 40), H = top + plot_h + bottom;
  cairo_surface_t *surf;
  cairo_t *cr = new_canvas((int)ceil(W), (int)ceil(H), &surf, st);
  if (!cr) return -1;
  frame f = {left, top, plot_w, plot_h, ax, ax};
  double x0 = px(&f, 0);

  set_rgb(cr, INK);
  font(cr, fs_title, 1);
  text_at(cr, title ? title : "", W / 2, 14, 0.5, 0, 0);
  if (subtitle) {
    set_rgb(cr, MUTED);
    font(cr, fs, 0);
    text_at(cr, subtitle, W / 2, 14 + fs_title + 8, 0.5, 0, 0);
  }
  /* grid and tick labels */
  font(cr, fs, 0);
  cairo_set_line_width(cr, 1);
  for (int k = 0; k < ax.n_ticks; k++) {
    double v = ax.t0 + k * ax.step, x = px(&f, v);
    set_rgb(cr, GRID);
    cairo_move_to(cr, floor(x) + 0.5, top);
    cairo_line_to(cr, floor(x) + 0.5, top + plot_h);
    cairo_stroke(cr);
    tick_label(&ax, v, buf, sizeof buf);
    set_rgb(cr, MUTED);
    text_at(cr, buf, x, top + plot_h + 8, 0.5, 0, 0);
  }
  set_rgb(cr, INK);
  text_at(cr, xlabel ? xlabel : "", left + plot_w / 2, top + plot_h + 8 + fs + 8, 0.5, 0, 0);
  /* bars: blue for a drop (positive), vermillion for a gain */
  for (int i = 0; i < n; i++) {
    double y = top + gap + i * row;
    set_rgb(cr, INK);
    cairo_save(cr);
    cairo_rectangle(cr, 0, y - 2, left - 8, bar_h + 4);
    cairo_clip(cr);
    text_at(cr, labels[i] ? labels[i] : "", left - 10, y + bar_h / 2, 1, 0.5, 0);
    cairo_restore(cr);
    if (!isfinite(values[i])) {
      set_rgb(cr, MUTED);
      text_at(cr, "n/a", x0 + 4, y + bar_h / 2, 0, 0.5, 0);
      continue;
    }
    double x = px(&f, values[i]);
    rgb c = values[i] >= 0 ? (rgb){0.00, 0.45, 0.70} : (rgb){0.84, 0.37, 0.00};
    set_rgb(cr, c);
    cairo_rectangle(cr, fmin(x, x0), y, fabs(x - x0), bar_h);
    cairo_fill(cr);
    snprintf(buf, sizeof buf, "%.2f", values[i]);
    set_rgb(cr, INK);
    if (values[i] >= 0)
      text_at(cr, buf, fmax(x, x0) + 4, y + bar_h / 2, 0, 0.5, 0);
    else
      text_at(cr, buf, fmin(x, x0) - 4, y + bar_h / 2, 1, 0.5, 0);
  }
  /* the zero line and the frame */
  set_rgb(cr, INK);
  cairo_set_line_width(cr, 1.2);
  cairo_move_to(cr, floor(x0) + 0.5, top);
  cairo_line_to(cr, floor(x0) + 0.5, top + plot_h);
  cairo_stroke(cr);
  cairo_rectangle(cr, left, top, plot_w, plot_h);
  cairo_stroke(cr);
  return finish_canvas(cr, surf, png_path, st);
}

#endif /* AMD_HAVE_CAIRO */

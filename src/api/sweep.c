/* amdnn_session_sweep: per-layer sensitivity to the session's mode.
 *
 * Evaluates the test split (as evaluate does: inference mode, running BN
 * statistics) once with every product exact (acc32, the baseline), then once
 * per Conv / Gemm / MatMul node with that node alone multiplying in the mode
 * (the others acc32), then once with all of them in the mode. Each row gives
 * the node's multiply-accumulates per sample (from a shape-only pass), top-1,
 * top-5, the mean cross-entropy, and the drop of top-1 and the rise of the
 * loss from the baseline.
 *
 * A row points the GEMM nodes' multipliers at the session's mode or at acc32
 * (NULL); the session's own assignment comes back at the end. An 8-bit table
 * mode (q8u:FILE, q8s:FILE) turns the nodes it applies to into other ops, so
 * there each row loads the model again and makes a new evaluator on it (the
 * data stays loaded); the quantized nodes calibrate on the row's first
 * batches, as evaluate does.
 *
 * The option tsv is written a row at a time (flushed), after a first comment
 * line naming the run (model, data, mode, limit, tta). A file that exists
 * with the same first line is resumed: its complete rows are kept and not
 * evaluated again (a torn last line is cut off), so a killed sweep continues
 * where it stopped. A file from another run is an error. stop-after N stops
 * with AMDNN_ERR_STOPPED after N rows were evaluated by this call. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../exec/mode_apply.h"
#include "../onnx/load.h"
#include "../ops/op.h"
#include "../report/plot.h"
#include "../train/trainer.h"
#include "api.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One row: the baseline (node -1), a node alone (its index), all (n_nodes). */
typedef struct sweep_row {
  char name[256];
  const char *op;
  int node;               /* graph node index; -1 for the baseline and all */
  int64_t macs;           /* per sample; -1 unknown */
  double top1, top5, loss; /* fractions, mean loss */
  int64_t n;              /* samples scored */
  int done;               /* evaluated (now or kept from the TSV) */
  int kept;               /* kept from the TSV */
} sweep_row;

static void format_row(const sweep_row *r, const sweep_row *base, char *buf, size_t n) {
  char macs[32] = "-";
  if (r->macs >= 0) snprintf(macs, sizeof macs, "%lld", (long long)r->macs);
  snprintf(buf, n, "%s\t%s\t%s\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f\t%lld\n", r->name, r->op, macs, r->top1, r->top5,
           r->loss, base->top1 - r->top1, r->loss - base->loss, (long long)r->n);
}

/* Reads the numbers of a TSV row back into r (name and op already matched). */
static int parse_row(const char *line, sweep_row *r) {
  const char *p = line;
  for (int tab = 0; tab < 3; tab++) {
    p = strchr(p, '\t');
    if (!p) return -1;
    p++;
  }
  double d1, d2;
  long long n;
  if (sscanf(p, "%lf\t%lf\t%lf\t%lf\t%lf\t%lld", &r->top1, &r->top5, &r->loss, &d1, &d2, &n) != 6) return -1;
  r->n = n;
  return 0;
}

/* Matches a TSV line to its row and keeps its numbers; 0 when the line is no row of this sweep. */
static int keep_line(const char *line, sweep_row *rows, int n_rows, int *kept) {
  for (int i = 0; i < n_rows; i++) {
    size_t nl = strlen(rows[i].name);
    if (strncmp(line, rows[i].name, nl) || line[nl] != '\t' || rows[i].done) continue;
    if (parse_row(line, &rows[i])) return 0;
    rows[i].done = rows[i].kept = 1;
    (*kept)++;
    return 1;
  }
  return 0;
}

static int create_tsv(const char *path, const char *header, FILE **out, amd_status *st) {
  static const char columns[] = "node\top\tmacs\ttop1\ttop5\tloss\ttop1_drop\tloss_rise\tn\n";
  *out = fopen(path, "w");
  if (!*out) return amd_fail(st, "cannot create %s: %s", path, strerror(errno));
  fprintf(*out, "%s\n%s", header, columns);
  fflush(*out);
  return 0;
}

/* Resume: keeps the complete rows of path when its first line is header,
 * cuts off a torn last line, and leaves the file open for appending in *out.
 * A missing file is created with the header and the column line. */
static int open_tsv(const char *path, const char *header, sweep_row *rows, int n_rows, FILE **out, int *kept,
                    amd_status *st) {
  *kept = 0;
  FILE *f = fopen(path, "rb");
  if (!f) {
    if (errno != ENOENT) return amd_fail(st, "cannot read %s: %s", path, strerror(errno));
    return create_tsv(path, header, out, st);
  }
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  long good = 0; /* bytes of complete, accepted lines */
  int lineno = 0, rc = 0;
  while (rc == 0 && (len = getline(&line, &cap, f)) > 0) {
    lineno++;
    if (line[len - 1] != '\n') break; /* a torn last line: cut off */
    line[len - 1] = 0;
    if (lineno == 1 && strcmp(line, header) != 0)
      rc = amd_fail(st,
                    "%s was written by another sweep ('%s'; this one is '%s'): remove it to start over, or name "
                    "another tsv",
                    path, line, header);
    else if (lineno == 2 && strncmp(line, "node\t", 5) != 0)
      rc = amd_fail(st, "%s: line 2 is not the column line; remove the file to start over", path);
    else if (lineno > 2 && !keep_line(line, rows, n_rows, kept))
      rc = amd_fail(st, "%s line %d is not a row of this sweep: remove the file to start over", path, lineno);
    good += (long)len;
  }
  free(line);
  fclose(f);
  if (rc) return rc;
  if (lineno < 2) return create_tsv(path, header, out, st); /* empty or only the header: write it again */
  if (truncate(path, good) != 0) return amd_fail(st, "cannot cut %s to its complete rows: %s", path, strerror(errno));
  *out = fopen(path, "a");
  if (!*out) return amd_fail(st, "cannot append to %s: %s", path, strerror(errno));
  return 0;
}

/* The state of a sweep while its rows run. */
typedef struct sweep_run {
  amdnn_session *s;
  const amdnn_options *opts;
  const amdnn_callbacks *cb;
  amd_dataset ds;
  amd_trainer t;
  const amd_mult **saved; /* per node: the session's forward and backward multipliers */
  sweep_row *rows;
  int n_rows;
  int q8;        /* an 8-bit table mode: every row loads the model again */
  api_image_progress images;
  int64_t count; /* test samples scored per row */
} sweep_run;

/* The rows: the baseline, each Conv / Gemm / MatMul node (its multiply-accumulates per sample from a shape
 * pass), all. */
static int make_rows(sweep_run *w, int n_gemm, amd_status *st) {
  const amd_graph *g = w->s->g;
  api_node_shape *shapes = calloc((size_t)g->n_nodes + 1, sizeof *shapes);
  w->rows = calloc((size_t)n_gemm + 2, sizeof *w->rows);
  if (!shapes || !w->rows) {
    free(shapes);
    return amd_fail(st, "out of memory");
  }
  amd_status shape_st = {{0}};
  if (api_shape_pass(g, shapes, &shape_st))
    api_message(w->cb, AMDNN_MSG_WARNING, "MACs unknown past the shape pass's stop (%s)", shape_st.msg);
  int64_t per = 1; /* a fixed batch in the model divides the MACs */
  if (g->n_inputs > 0) {
    const amd_value *in = &g->values[g->inputs[0]];
    if (in->rank > 0 && in->dims[0] > 1) per = in->dims[0];
  }
  sweep_row *rows = w->rows;
  int n = 0;
  rows[n] = (sweep_row){.name = "(baseline)", .op = "acc32", .node = -1, .macs = -1};
  n++;
  int64_t total_macs = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    const amd_node *nd = &g->nodes[i];
    if (!nd->op->is_gemm) continue;
    sweep_row *r = &rows[n++];
    snprintf(r->name, sizeof r->name, "%s", nd->name);
    for (char *c = r->name; *c; c++)
      if (*c == '\t' || *c == '\n' || *c == '\r') *c = ' ';
    r->op = nd->op->name;
    r->node = i;
    r->macs = shapes[i].known ? shapes[i].macs / per : -1;
    if (total_macs >= 0) total_macs = r->macs >= 0 ? total_macs + r->macs : -1;
  }
  rows[n] = (sweep_row){.name = "(all)", .op = w->s->mode, .node = -1, .macs = total_macs};
  n++;
  free(shapes);
  w->n_rows = n;
  return 0;
}

/* The session's model as its file holds it, without the session's modes
 * (an 8-bit table mode rewrites the nodes it applies to: each row starts from
 * the float graph). The session's mode set stays: the rows point at it. */
static int load_raw(amdnn_session *s, amd_status *st) {
  amd_graph_free(s->g);
  s->g = NULL;
  return amd_graph_load(s->path, 0, &s->g, st);
}

/* Row k: its nodes in the mode (an 8-bit table mode: a fresh model and evaluator, outputs probe included,
 * since the last row's nodes were rewritten), then the test split. */
static int eval_row(sweep_run *w, int k, amd_status *st) {
  amdnn_session *s = w->s;
  sweep_row *r = &w->rows[k];
  if (w->q8 && k > 0) {
    amd_trainer_free(&w->t);
    if (load_raw(s, st)) return -1;
  }
  for (int i = 0; i < s->g->n_nodes; i++) {
    amd_node *nd = &s->g->nodes[i];
    if (!nd->op->is_gemm) continue;
    int on = k == w->n_rows - 1 || i == r->node;
    nd->mult = nd->bwd_mult = on ? s->modes.def : NULL;
  }
  if (w->q8 && k > 0) {
    if (amd_mode_apply_q8(s->g, st) || api_eval_trainer(s, w->opts, &w->t, st) ||
        api_check_outputs(&w->t, &w->ds, st))
      return -1;
  }
  amd_batch_stats bs = {0};
  int64_t count;
  int64_t *idx = api_limit_index(&w->ds.test, api_opt_i64(w->opts, "limit", 0), &count);
  int rc = amd_trainer_eval_split(&w->t, &w->ds, &w->ds.test, idx, count, api_opt_i64(w->opts, "batch", 256), &bs,
                                  NULL, 0, st);
  free(idx);
  if (rc) return -1;
  r->n = bs.n;
  r->top1 = bs.n ? (double)bs.top1 / (double)bs.n : 0;
  r->top5 = bs.n ? (double)bs.top5 / (double)bs.n : 0;
  r->loss = bs.n ? bs.loss_sum / (double)bs.n : 0;
  return 0;
}

/* The row as the API gives it. */
static int report_row(sweep_run *w, int k) {
  const sweep_row *r = &w->rows[k], *b = &w->rows[0];
  const amdnn_sweep_row row = {r->name, r->op, k, w->n_rows, r->macs, r->top1, r->top5, r->loss,
                               b->top1 - r->top1, r->loss - b->loss, r->n, r->kept};
  return w->cb && w->cb->sweep_row && w->cb->sweep_row(w->cb->user, &row) != 0;
}

/* The bar chart of the top-1 drops (every row but the baseline). */
static int plot_rows(const sweep_run *w, const char *png, amd_status *st) {
  const sweep_row *rows = w->rows, *b = &rows[0];
  int nb = w->n_rows - 1;
  const char **labels = calloc((size_t)nb, sizeof *labels);
  char(*names)[300] = calloc((size_t)nb, sizeof *names);
  double *drops = calloc((size_t)nb, sizeof *drops);
  int prc = labels && names && drops ? 0 : amd_fail(st, "out of memory");
  for (int k = 1; prc == 0 && k < w->n_rows; k++) {
    snprintf(names[k - 1], sizeof names[0], "%s (%s)", rows[k].name, k == w->n_rows - 1 ? w->s->mode : rows[k].op);
    labels[k - 1] = names[k - 1];
    drops[k - 1] = 100 * (b->top1 - rows[k].top1);
  }
  char title[160], sub[600];
  snprintf(title, sizeof title, "Top-1 drop with one node in %s (the rest acc32), then all", w->s->mode);
  snprintf(sub, sizeof sub, "%s: %lld test images, acc32 baseline top-1 %.2f%%", w->s->path, (long long)b->n,
           100 * b->top1);
  if (prc == 0)
    prc = amd_plot_bars(labels, drops, nb, title, sub, "top-1 drop from the acc32 baseline (percentage points)", png,
                        st);
  amd_plot_release();
  free(labels);
  free(names);
  free(drops);
  return prc;
}

/* Evaluates every row not kept from the TSV, the baseline first (the drops of the others are against it),
 * appending each to out; 1 when stop-after (or a callback) stopped it. */
static int run_rows(sweep_run *w, FILE *out, int kept, amd_status *st) {
  const int64_t stop_after = api_opt_i64(w->opts, "stop-after", 0);
  const double t0 = now_s();
  int evaluated = 0, to_do = w->n_rows - kept;
  for (int k = 0; k < w->n_rows; k++) {
    sweep_row *r = &w->rows[k];
    if (r->done) {
      if (report_row(w, k)) return 1;
      continue;
    }
    if (eval_row(w, k, st)) return -1;
    /* the TSV's rounding, so that kept and fresh rows compare alike */
    char buf[512];
    format_row(r, &w->rows[0], buf, sizeof buf);
    parse_row(buf, r);
    r->done = 1;
    evaluated++;
    if (out && (fputs(buf, out) < 0 || fflush(out) != 0))
      return amd_fail(st, "cannot write %s: %s", api_opt(w->opts, "tsv"), strerror(errno));
    const double el = now_s() - t0;
    const amdnn_progress p = {.stage = "sweep", .done = evaluated, .total = to_do, .samples = evaluated * w->count,
                              .elapsed_s = el, .images_per_s = el > 0 ? (double)(evaluated * w->count) / el : 0,
                              .eta_s = el / evaluated * (to_do - evaluated)};
    if (report_row(w, k) || api_progress(w->cb, &p)) return 1;
    if (stop_after && evaluated >= stop_after && evaluated < to_do) {
      api_message(w->cb, AMDNN_MSG_NOTE, "stopped after %d rows (stop-after); run the same sweep again to continue",
                  evaluated);
      return 1;
    }
  }
  return 0;
}

/* The header line of the TSV: what makes two sweeps the same run. */
static void tsv_header(const sweep_run *w, char *buf, size_t n) {
  const char *data = api_opt(w->opts, "data");
  char imgdesc[160] = "";
  amd_image_opts img;
  amd_status ignored;
  if (!strncmp(data, "images:", 7) && api_image_opts(w->opts, &img, &ignored) == 0)
    amd_image_opts_describe(&img, imgdesc, sizeof imgdesc);
  char shift[32] = ""; /* (only when set: the TSVs of earlier sweeps resume) */
  const long long tta_shift = (long long)api_opt_i64(w->opts, "tta-shift", 0);
  if (tta_shift) snprintf(shift, sizeof shift, " tta_shift=%lld", tta_shift);
  snprintf(buf, n, "# amdnn-onnx sweep model=%s data=%s mode=%s limit=%lld tta=%d%s%s%s%s", w->s->path, data,
           w->s->mode, (long long)api_opt_i64(w->opts, "limit", 0), api_opt_flag(w->opts, "tta"), shift,
           imgdesc[0] ? " " : "", imgdesc, w->s->gemm_exact ? " gemm=exact" : "");
}

/* The data, the rows, the TSV (resumed), the evaluation, the plot. 1: stopped. */
static int sweep(sweep_run *w, FILE **out, amd_status *st) {
  amdnn_session *s = w->s;
  if (w->q8 && load_raw(s, st)) return -1;
  amd_graph *g = s->g;
  int n_gemm = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    amd_node *nd = &g->nodes[i];
    if (!nd->op->is_gemm) continue;
    n_gemm++;
    if (!w->q8) w->saved[2 * i] = nd->mult, w->saved[2 * i + 1] = nd->bwd_mult;
    nd->mult = nd->bwd_mult = NULL; /* acc32 */
  }
  if (n_gemm == 0) return amd_fail(st, "%s has no Conv, Gemm or MatMul node: nothing to sweep", s->path);
  if (make_rows(w, n_gemm, st)) return -1;
  /* the test split, and with limit N images of it (images:), decoded once into memory for every pass */
  if (api_eval_setup(s, w->opts, &w->images, 1, NULL, &w->ds, &w->t, st)) return -1;
  free(api_limit_index(&w->ds.test, api_opt_i64(w->opts, "limit", 0), &w->count)); /* the count alone */
  if (w->count < 1) return amd_fail(st, "the test split of %s is empty", api_opt(w->opts, "data"));
  int kept = 0;
  const char *tsv = api_opt(w->opts, "tsv");
  if (tsv) {
    char header[2048];
    tsv_header(w, header, sizeof header);
    if (open_tsv(tsv, header, w->rows, w->n_rows, out, &kept, st)) return -1;
    if (kept)
      api_message(w->cb, AMDNN_MSG_NOTE, "resuming %s: %d of %d rows kept, %d to go", tsv, kept, w->n_rows,
                  w->n_rows - kept);
  }
  api_message(w->cb, AMDNN_MSG_INFO, "sweep of %s: %d Conv/Gemm/MatMul nodes, each alone in %s, then all; %lld test "
              "images of %s", s->path, n_gemm, s->mode, (long long)w->count, api_opt(w->opts, "data"));
  int rc = run_rows(w, *out, kept, st);
  if (rc) return rc;
  const char *png = api_opt(w->opts, "plot");
  if (png && plot_rows(w, png, st)) return -1;
  return 0;
}

amdnn_status *amdnn_session_sweep(amdnn_session *s, const amdnn_options *opts, const amdnn_callbacks *cb) {
  if (!s) return api_error(AMDNN_ERR_ARGUMENT, "amdnn_session_sweep: no session");
  amdnn_status *bad = api_opts_check(opts, AMDNN_FOR_SWEEP, "sweep");
  if (bad) return bad;
  if (!api_opt(opts, "data")) return api_error(AMDNN_ERR_ARGUMENT, "--data is required (mnist:DIR, cifar10:DIR, images:DIR, ...)");
  if (api_opt(opts, "plot") && !amd_plot_available())
    return api_error(AMDNN_ERR_ARGUMENT, "--plot: this build has no cairo (install libcairo2-dev and rebuild)");
  sweep_run w = {.s = s, .opts = opts, .cb = cb, .q8 = s->modes.def && s->modes.def->q8, .images = {cb, 0}};
  if (w.q8 && s->trained)
    return api_error(AMDNN_ERR_ARGUMENT, "sweep in an 8-bit table mode loads the model from its file for each row, "
                                         "but this session's weights were trained: save the model and open that");
  amd_status st = {{0}};
  FILE *out = NULL;
  w.saved = calloc(2 * (size_t)s->g->n_nodes + 2, sizeof *w.saved); /* (not used by an 8-bit mode) */
  int rc = w.saved ? sweep(&w, &out, &st) : amd_fail(&st, "out of memory");
  if (out) fclose(out);
  free(w.rows);
  amd_trainer_free(&w.t);
  amd_dataset_free(&w.ds);
  /* the session's own multipliers again */
  amd_status reload_st = {{0}};
  if (w.q8) {
    if (api_session_reload(s, &reload_st) && rc == 0) st = reload_st, rc = -1;
  } else if (w.saved) {
    for (int i = 0; i < s->g->n_nodes; i++)
      if (s->g->nodes[i].op->is_gemm) s->g->nodes[i].mult = w.saved[2 * i], s->g->nodes[i].bwd_mult = w.saved[2 * i + 1];
  }
  free(w.saved);
  if (rc < 0) return api_from(&st, AMDNN_ERR_FAILED);
  if (rc > 0) return api_error(AMDNN_ERR_STOPPED, "sweep stopped before its last row; run it again to continue");
  return NULL;
}

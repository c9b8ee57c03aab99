/* `amdnn-onnx sweep`: per-layer sensitivity to a multiplier mode.
 *
 * Evaluates the test split (as `eval` does: inference mode, running BN
 * statistics) once with every product exact (acc32, the baseline), then once
 * per Conv / Gemm / MatMul node with that node alone multiplying in MODE (the
 * others acc32), then once with all of them in MODE. Each row gives the
 * node's multiply-accumulates per sample (from a shape-only pass, as `info`),
 * top-1, top-5, the mean cross-entropy, and the drop of top-1 and the rise of
 * the loss from the baseline.
 *
 * The multipliers come from the --mode machinery (mult/mode_map.h): MODE is
 * parsed once into a mode set and each row points the GEMM nodes' forward
 * (and backward) multiplier at it or at acc32 (NULL). An 8-bit table mode
 * (q8u:FILE, q8s:FILE) turns the nodes it applies to into other ops (their
 * q8 internal ops: amd_mode_apply_q8), so there each row loads the model
 * again and starts a new evaluator on it (the data stays loaded); the
 * quantized nodes calibrate on the row's first batches, as `eval` does.
 *
 * --tsv FILE is written a row at a time (flushed), after a first comment line
 * naming the run (model, data, mode, limit, tta). A FILE that exists with the
 * same first line is resumed: its complete rows are kept and not evaluated
 * again (a torn last line is cut off), so a killed sweep continues where it
 * stopped. A FILE from another run is an error (remove it or name another).
 * --stop-after N (for tests, not in --help) stops with exit 3 after N rows
 * were evaluated by this process. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../data/dataset.h"
#include "../exec/backend.h"
#include "../exec/mode_apply.h"
#include "../mult/mode_map.h"
#include "../onnx/load.h"
#include "../ops/op.h"
#include "../report/plot.h"
#include "../train/trainer.h"
#include "cli_util.h"
#include "commands.h"

static const char usage[] =
    "usage: amdnn-onnx sweep MODEL.onnx --data SPEC --mode MODE [--batch N] [--limit N]\n"
    "                        [--tsv FILE.tsv] [--plot FILE.png] [--tta]\n"
    "                        [--device cpu|cuda[:N]] [--gemm fast|exact] [--debug-sync]\n"
    "\n"
    "Per-layer sensitivity: evaluates MODEL on the test split of SPEC (the forms of\n"
    "`amdnn-onnx train --help`) first with every product exact (acc32, the\n"
    "baseline), then with each Conv/Gemm/MatMul node alone computing its products\n"
    "in MODE (the rest acc32), then with all of them in MODE. A row per run: node,\n"
    "op type, the node's multiply-accumulates per sample, top-1, top-5, mean\n"
    "cross-entropy, and the drop of top-1 (percentage points) and the rise of the\n"
    "loss from the baseline. A progress line per row goes to stderr. MODE may be\n"
    "an 8-bit table mode (q8u:FILE, q8s:FILE): each row then loads the model again\n"
    "and quantizes its node (or all of them) on the fly, calibrated on the row's\n"
    "first batches, as eval --mode-map NODE=MODE does.\n"
    "\n"
    "  --limit N         only N test samples (a quick subset: the first N; of an\n"
    "                    image folder, N spread evenly over its classes)\n"
    "  --batch N         evaluation batch (default 256)\n"
    "  --tsv FILE.tsv    the rows, one flushed per node (accuracies as fractions).\n"
    "                    Its first line names the run (model, data, mode, limit,\n"
    "                    tta); a FILE of the same run is resumed: its rows are kept\n"
    "                    and skipped, so a killed sweep continues where it stopped.\n"
    "                    A FILE of another run is an error (remove it to start over).\n"
    "  --plot FILE.png   a horizontal bar chart of the top-1 drop per node\n"
    "  --tta             score each image and its mirror (as eval --tta)\n"
    "  --device DEV      cpu or cuda[:N] (default: cuda when a GPU is present);\n"
    "                    --backend is the same option\n"
    "  --debug-sync      synchronise after every GPU kernel\n"
    "  --gemm fast|exact the GPU's GEMM tier of am16 and mbm14 (see eval --help;\n"
    "                    exact is named in the TSV's first line)\n"
    "The image options of `eval` (images: folders; only the test split is decoded,\n"
    "and with --limit only those N images, unless --normalize is dataset):\n"
    "%s"
    "\n"
    "Exit codes: 0 done, 1 error, 2 bad arguments.\n";

#define PROG "amdnn-onnx sweep"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One row: the baseline (node -1), a node alone (its index), all (n_nodes). */
typedef struct sweep_row {
  char name[256];
  const char *op;
  int node;      /* graph node index; -1 for the baseline and all */
  int64_t macs;  /* per sample; -1 unknown */
  double top1, top5, loss; /* fractions, mean loss */
  int64_t n;     /* samples scored */
  int done;      /* evaluated (now or kept from the TSV) */
  int kept;      /* kept from the TSV */
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

/* Resume: keeps the complete rows of path when its first line is header,
 * cuts off a torn last line, and leaves the file open for appending in *out.
 * A missing file is created with the header and the column line. */
static int open_tsv(const char *path, const char *header, sweep_row *rows, int n_rows, FILE **out, int *kept,
                    amd_status *st) {
  static const char columns[] = "node\top\tmacs\ttop1\ttop5\tloss\ttop1_drop\tloss_rise\tn\n";
  *kept = 0;
  FILE *f = fopen(path, "rb");
  if (!f) {
    if (errno != ENOENT) return amd_fail(st, "cannot read %s: %s", path, strerror(errno));
    *out = fopen(path, "w");
    if (!*out) return amd_fail(st, "cannot create %s: %s", path, strerror(errno));
    fprintf(*out, "%s\n%s", header, columns);
    fflush(*out);
    return 0;
  }
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  long good = 0; /* bytes of complete, accepted lines */
  int lineno = 0, rc = 0;
  while ((len = getline(&line, &cap, f)) > 0) {
    lineno++;
    int complete = line[len - 1] == '\n';
    if (!complete) break; /* a torn last line: cut off */
    line[len - 1] = 0;
    if (lineno == 1) {
      if (strcmp(line, header) != 0) {
        rc = amd_fail(st,
                      "%s was written by another sweep ('%s'; this one is '%s'): remove it to start over, or "
                      "name another --tsv",
                      path, line, header);
        break;
      }
    } else if (lineno == 2) {
      if (strncmp(line, "node\t", 5) != 0) {
        rc = amd_fail(st, "%s: line 2 is not the column line; remove the file to start over", path);
        break;
      }
    } else {
      int matched = 0;
      for (int i = 0; i < n_rows && !matched; i++) {
        size_t nl = strlen(rows[i].name);
        if (strncmp(line, rows[i].name, nl) || line[nl] != '\t') continue;
        matched = 1;
        if (!rows[i].done && parse_row(line, &rows[i]) == 0) {
          rows[i].done = rows[i].kept = 1;
          (*kept)++;
        } else if (!rows[i].done) {
          matched = 0;
        }
      }
      if (!matched) {
        rc = amd_fail(st, "%s line %d is not a row of this sweep: remove the file to start over", path, lineno);
        break;
      }
    }
    good += (long)len;
  }
  free(line);
  fclose(f);
  if (rc) return rc;
  if (lineno < 2) { /* empty or only the header: write it again */
    *out = fopen(path, "w");
    if (!*out) return amd_fail(st, "cannot create %s: %s", path, strerror(errno));
    fprintf(*out, "%s\n%s", header, columns);
    fflush(*out);
    return 0;
  }
  if (truncate(path, good) != 0) return amd_fail(st, "cannot cut %s to its complete rows: %s", path, strerror(errno));
  *out = fopen(path, "a");
  if (!*out) return amd_fail(st, "cannot append to %s: %s", path, strerror(errno));
  return 0;
}

static void fmt_secs(double s, char *buf, size_t n) {
  if (s < 0 || !isfinite(s)) snprintf(buf, n, "?");
  else if (s < 120) snprintf(buf, n, "%.0fs", s);
  else if (s < 7200) snprintf(buf, n, "%.0fm%02.0fs", floor(s / 60), fmod(s, 60));
  else snprintf(buf, n, "%.0fh%02.0fm", floor(s / 3600), fmod(floor(s / 60), 60));
}

/* The command line. */
typedef struct sweep_args {
  const char *model, *data, *mode, *tsv, *png, *device, *gemm;
  int debug_sync, tta;
  int64_t batch, limit, stop_after;
  amd_image_opts img;
} sweep_args;

/* Parses argv into a; returns -1 to go on, else the exit code (0 after --help, 2 on a bad argument). */
static int parse_args(int argc, char **argv, sweep_args *a) {
  memset(a, 0, sizeof *a);
  a->batch = 256;
  amd_status img_st = {{0}};
  int img_k;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int bad = 0;
    if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
      printf(usage, amd_image_opts_help());
      return 0;
    } else if (!strcmp(o, "--data") && v)
      a->data = argv[++i];
    else if (!strcmp(o, "--mode") && v)
      a->mode = argv[++i];
    else if (!strcmp(o, "--tsv") && v)
      a->tsv = argv[++i];
    else if (!strcmp(o, "--plot") && v)
      a->png = argv[++i];
    else if ((!strcmp(o, "--device") || !strcmp(o, "--backend")) && v)
      a->device = argv[++i];
    else if (!strcmp(o, "--debug-sync"))
      a->debug_sync = 1;
    else if (!strcmp(o, "--gemm") && v) {
      a->gemm = argv[++i];
      if (amd_cli_gemm_tier(PROG, a->gemm)) return 2;
    } else if (!strcmp(o, "--tta"))
      a->tta = 1;
    else if (!strcmp(o, "--batch") && v)
      bad = amd_parse_i64(argv[++i], &a->batch) || a->batch < 1;
    else if (!strcmp(o, "--limit") && v)
      bad = amd_parse_i64(argv[++i], &a->limit) || a->limit < 1;
    else if (!strcmp(o, "--stop-after") && v)
      bad = amd_parse_i64(argv[++i], &a->stop_after) || a->stop_after < 1;
    else if ((img_k = amd_image_opt_parse(o, v, &a->img, &img_st)) != 0) {
      if (img_k < 0) {
        fprintf(stderr, PROG ": %s\n", img_st.msg);
        return 2;
      }
      i += img_k - 1;
    } else if (o[0] != '-' && !a->model)
      a->model = o;
    else {
      fprintf(stderr, PROG ": unknown or incomplete argument '%s' (see --help)\n", o);
      return 2;
    }
    if (bad) {
      fprintf(stderr, PROG ": bad value '%s' for %s\n", v, o);
      return 2;
    }
  }
  if (!a->model || !a->data || !a->mode) {
    fprintf(stderr, PROG ": MODEL, --data and --mode are required (see --help)\n");
    return 2;
  }
  if (a->png && !amd_plot_available()) {
    fprintf(stderr, PROG ": --plot: built without cairo (install libcairo2-dev and rebuild)\n");
    return 2;
  }
  return -1;
}

/* The rows of g's sweep: the baseline, each Conv / Gemm / MatMul node (its multiply-accumulates per sample
 * from a shape pass), all; *rows allocated (n_gemm + 2 of them). */
static int make_rows(amd_graph *g, int n_gemm, const amd_mode_set *modes, sweep_row **rows_out, int *n_rows,
                     amd_status *st) {
  amd_cli_node_shape *shapes = calloc((size_t)g->n_nodes, sizeof *shapes);
  sweep_row *rows = calloc((size_t)n_gemm + 2, sizeof *rows);
  if (!shapes || !rows) {
    free(shapes);
    free(rows);
    return amd_fail(st, "out of memory");
  }
  amd_status shape_st = {{0}};
  if (amd_cli_shape_pass(g, shapes, &shape_st))
    fprintf(stderr, PROG ": MACs unknown past the shape pass's stop (%s)\n", shape_st.msg);
  int64_t per = 1; /* a fixed batch in the model divides the MACs */
  if (g->n_inputs > 0) {
    const amd_value *in = &g->values[g->inputs[0]];
    if (in->rank > 0 && in->dims[0] > 1) per = in->dims[0];
  }
  int n = 0;
  snprintf(rows[n].name, sizeof rows[0].name, "(baseline)");
  rows[n].op = "acc32";
  rows[n].node = -1;
  rows[n++].macs = -1;
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
  snprintf(rows[n].name, sizeof rows[0].name, "(all)");
  rows[n].op = modes->def ? modes->def->name : "acc32";
  rows[n].node = -1;
  rows[n++].macs = total_macs;
  free(shapes);
  *rows_out = rows;
  *n_rows = n;
  return 0;
}

/* The state of a sweep while its rows run. */
typedef struct sweep_run {
  const sweep_args *a;
  amd_graph *g;
  amd_dataset ds;
  amd_trainer t;
  amd_mode_set modes;
  sweep_row *rows;
  int n_rows;
  int64_t count; /* test samples scored per row */
} sweep_run;

/* Row k (rows[k]): its nodes in the mode (an 8-bit table mode: a fresh model and evaluator, as eval's set-up
 * makes them, outputs probe included, since the last row's nodes were rewritten), then the test split. */
static int eval_row(sweep_run *w, int k, amd_status *st) {
  const sweep_args *a = w->a;
  sweep_row *r = &w->rows[k];
  const int q8 = w->modes.def && w->modes.def->q8;
  if (q8 && k > 0) {
    amd_trainer_free(&w->t);
    amd_graph_free(w->g);
    w->g = NULL;
    if (amd_graph_load(a->model, 0, &w->g, st)) return -1;
  }
  for (int i = 0; i < w->g->n_nodes; i++) {
    amd_node *nd = &w->g->nodes[i];
    if (!nd->op->is_gemm) continue;
    int on = k == w->n_rows - 1 || i == r->node;
    nd->mult = nd->bwd_mult = on ? w->modes.def : NULL;
  }
  if (q8 && k > 0) {
    const amd_backend *be;
    if (amd_mode_apply_q8(w->g, st) ||
        amd_cli_eval_trainer(w->g, a->device, a->debug_sync, a->tta, &w->t, &be, st) ||
        amd_cli_check_outputs(&w->t, &w->ds, st))
      return -1;
  }
  amd_batch_stats bs = {0};
  int64_t *limit_idx = amd_cli_limit_index(&w->ds, &w->ds.test, a->limit);
  int eval_rc =
      amd_trainer_eval_split(&w->t, &w->ds, &w->ds.test, limit_idx, w->count, a->batch, &bs, NULL, 0, st);
  free(limit_idx);
  if (eval_rc) return -1;
  r->n = bs.n;
  r->top1 = bs.n ? (double)bs.top1 / (double)bs.n : 0;
  r->top5 = bs.n ? (double)bs.top5 / (double)bs.n : 0;
  r->loss = bs.n ? bs.loss_sum / (double)bs.n : 0;
  return 0;
}

/* The table of the rows on stdout. */
static void print_rows(const sweep_row *rows, int n_rows) {
  const sweep_row *b = &rows[0];
  printf("  %-32s %-8s %12s %8s %8s %8s %9s %9s\n", "node", "op", "MACs", "top1%", "top5%", "loss",
         "top1 drop", "loss rise");
  for (int k = 0; k < n_rows; k++) {
    const sweep_row *r = &rows[k];
    char macs[32] = "-";
    if (r->macs >= 0) snprintf(macs, sizeof macs, "%lld", (long long)r->macs);
    printf("  %-32s %-8s %12s %8.2f %8.2f %8.4f %+9.2f %+9.4f%s\n", r->name, r->op, macs, 100 * r->top1,
           100 * r->top5, r->loss, 100 * (b->top1 - r->top1), r->loss - b->loss, r->kept ? "  (kept)" : "");
  }
}

/* The bar chart of the top-1 drops (every row but the baseline). */
static int plot_rows(const sweep_args *a, const sweep_row *rows, int n_rows, amd_status *st) {
  const sweep_row *b = &rows[0];
  int nb = n_rows - 1;
  const char **labels = calloc((size_t)nb, sizeof *labels);
  char(*names)[300] = calloc((size_t)nb, sizeof *names);
  double *drops = calloc((size_t)nb, sizeof *drops);
  int prc = labels && names && drops ? 0 : amd_fail(st, "out of memory");
  for (int k = 1; prc == 0 && k < n_rows; k++) {
    snprintf(names[k - 1], sizeof names[0], "%s (%s)", rows[k].name, k == n_rows - 1 ? a->mode : rows[k].op);
    labels[k - 1] = names[k - 1];
    drops[k - 1] = 100 * (b->top1 - rows[k].top1);
  }
  char title[160], sub[600];
  snprintf(title, sizeof title, "Top-1 drop with one node in %s (the rest acc32), then all", a->mode);
  snprintf(sub, sizeof sub, "%s: %lld test images, acc32 baseline top-1 %.2f%%", a->model, (long long)b->n,
           100 * b->top1);
  if (prc == 0)
    prc = amd_plot_bars(labels, drops, nb, title, sub,
                        "top-1 drop from the acc32 baseline (percentage points)", a->png, st);
  free(labels);
  free(names);
  free(drops);
  return prc;
}

/* Evaluates every row not kept from the TSV, the baseline first (the drops of the others are against it),
 * appending each to out; returns 3 when --stop-after stopped it. */
static int run_rows(sweep_run *w, FILE *out, int kept, amd_status *st) {
  const sweep_args *a = w->a;
  double t0 = now_s();
  int evaluated = 0, to_do = w->n_rows - kept;
  for (int k = 0; k < w->n_rows; k++) {
    sweep_row *r = &w->rows[k];
    if (r->done) continue;
    if (!w->rows[0].done && k != 0) return amd_fail(st, "internal: the baseline row is missing");
    if (eval_row(w, k, st)) return -1;
    /* the TSV's rounding, so that kept and fresh rows compare alike */
    char buf[512];
    format_row(r, &w->rows[0], buf, sizeof buf);
    parse_row(buf, r);
    r->done = 1;
    evaluated++;
    if (out && (fputs(buf, out) < 0 || fflush(out) != 0))
      return amd_fail(st, "cannot write %s: %s", a->tsv, strerror(errno));
    double el = now_s() - t0, eta = el / evaluated * (to_do - evaluated);
    char el_s[32], eta_s[32];
    fmt_secs(el, el_s, sizeof el_s);
    fmt_secs(eta, eta_s, sizeof eta_s);
    fprintf(stderr, "  [%d/%d] %-32s %-6s top1 %6.2f%%  drop %+6.2f  loss %.4f  elapsed %s  ETA %s\n", k + 1,
            w->n_rows, r->name, r->op, 100 * r->top1, 100 * (w->rows[0].top1 - r->top1), r->loss, el_s,
            eta_s);
    if (a->stop_after && evaluated >= a->stop_after && evaluated < to_do) {
      fprintf(stderr, PROG ": stopped after %d rows (--stop-after); run the same command again to continue\n",
              evaluated);
      return 3;
    }
  }
  return 0;
}

/* Loads the model and the data, opens (or resumes) the TSV, runs the rows, prints and plots them. */
static int sweep(sweep_args *a, sweep_run *w, FILE **out, amd_status *st) {
  int n_gemm = 0;
  if (amd_graph_load(a->model, 0, &w->g, st) || amd_mode_set_parse(&w->modes, a->mode, NULL, NULL, st))
    return -1;
  for (int i = 0; i < w->g->n_nodes; i++) {
    amd_node *nd = &w->g->nodes[i];
    if (!nd->op->is_gemm) continue;
    n_gemm++;
    nd->mult = nd->bwd_mult = NULL; /* acc32 */
  }
  if (n_gemm == 0) return amd_fail(st, "%s has no Conv, Gemm or MatMul node: nothing to sweep", a->model);
  if (make_rows(w->g, n_gemm, &w->modes, &w->rows, &w->n_rows, st)) return -1;
  /* the test split, and with --limit N images of it (images:), decoded once into memory for every pass */
  if (amd_cli_eval_setup(PROG, w->g, a->data, &a->img, 1, a->limit, a->batch, NULL, a->device, a->debug_sync,
                         a->tta, &w->ds, &w->t, st))
    return -1;
  w->count = a->limit && a->limit < w->ds.test.n ? a->limit : w->ds.test.n;
  if (w->count < 1) return amd_fail(st, "the test split of %s is empty", a->data);
  int kept = 0;
  if (a->tsv) {
    char header[2048];
    char imgdesc[160] = "";
    if (!strncmp(a->data, "images:", 7)) amd_image_opts_describe(&a->img, imgdesc, sizeof imgdesc);
    snprintf(header, sizeof header, "# amdnn-onnx sweep model=%s data=%s mode=%s limit=%lld tta=%d%s%s%s",
             a->model, a->data, a->mode, (long long)a->limit, a->tta, imgdesc[0] ? " " : "", imgdesc,
             a->gemm && !strcmp(a->gemm, "exact") ? " gemm=exact" : "");
    if (open_tsv(a->tsv, header, w->rows, w->n_rows, out, &kept, st)) return -1;
    if (kept)
      fprintf(stderr, PROG ": resuming %s: %d of %d rows kept, %d to go\n", a->tsv, kept, w->n_rows,
              w->n_rows - kept);
  }
  printf("sweep of %s: %d Conv/Gemm/MatMul nodes, each alone in %s, then all; %lld test images of %s\n",
         a->model, n_gemm, a->mode, (long long)w->count, a->data);
  fflush(stdout);
  int rc = run_rows(w, *out, kept, st);
  if (rc) return rc;
  print_rows(w->rows, w->n_rows);
  if (a->tsv) printf("rows: %s\n", a->tsv);
  if (a->png) {
    if (plot_rows(a, w->rows, w->n_rows, st)) return -1;
    printf("bar chart: %s\n", a->png);
  }
  return 0;
}

int amd_cmd_sweep(int argc, char **argv) {
  sweep_args a;
  int rc = parse_args(argc, argv, &a);
  if (rc >= 0) return rc;
  amd_status st = {{0}};
  sweep_run w;
  memset(&w, 0, sizeof w);
  w.a = &a;
  FILE *out = NULL;
  rc = sweep(&a, &w, &out, &st);
  if (rc < 0) fprintf(stderr, PROG ": %s\n", st.msg);
  if (out) fclose(out);
  free(w.rows);
  amd_trainer_free(&w.t);
  amd_graph_free(w.g);
  amd_dataset_free(&w.ds);
  amd_mode_set_free(&w.modes);
  if (a.png) amd_plot_release();
  return rc < 0 ? 1 : rc;
}

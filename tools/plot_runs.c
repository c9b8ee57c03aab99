/* plot-runs: one column of several `train --metrics` TSVs (or the torch
 * scripts' TSVs, which have the same columns) as one picture, a curve per
 * run against the epoch, each named in the legend with its last value: the
 * columns of an accuracy table side by side (docs/results.md).
 *
 *   build/tests/report/plot-runs -o OUT.png [--column test_top1] [--title TEXT] [--size WxH] RUN.tsv[=LABEL] ...
 *
 * LABEL defaults to the file's name without .tsv. Exit status 0 done, 1 a
 * failure (a file that does not read or parse, a run without the column),
 * 2 a bad argument. */
#include "onnx/tensor_proto.h" /* amd_read_file */
#include "report/plot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_RUNS = 64 };

static int usage(FILE *out, int rc) {
  fprintf(out, "usage: plot-runs -o OUT.png [--column COLUMN] [--title TEXT] [--size WxH] RUN.tsv[=LABEL] ...\n"
               "  one curve per run of COLUMN (default test_top1; also test_loss, train_loss, train_acc,\n"
               "  val_top1, val_loss) against the epoch, 1..%d runs, 1200x700 pixels by default\n",
          MAX_RUNS);
  return rc;
}

/* The whole file as a string (amd_read_file and a terminating NUL), or NULL with the reason in st. */
static char *read_text(const char *path, amd_status *st) {
  uint8_t *data;
  size_t len;
  if (amd_read_file(path, (size_t)64 << 20, &data, &len, st)) return NULL;
  char *text = realloc(data, len + 1);
  if (!text) {
    free(data);
    amd_fail(st, "out of memory reading '%s'", path);
    return NULL;
  }
  text[len] = 0;
  return text;
}

int main(int argc, char **argv) {
  const char *out = NULL, *column = "test_top1", *title = NULL;
  int width = 1200, height = 700, n = 0, rc = 0;
  char *paths[MAX_RUNS], *labels[MAX_RUNS], *texts[MAX_RUNS];
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    const int has_value = i + 1 < argc;
    if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) return usage(stdout, 0);
    if ((!strcmp(arg, "-o") || !strcmp(arg, "--column") || !strcmp(arg, "--title") || !strcmp(arg, "--size")) &&
        !has_value) {
      fprintf(stderr, "plot-runs: %s needs a value\n", arg);
      return 2;
    }
    if (!strcmp(arg, "-o")) {
      out = argv[++i];
    } else if (!strcmp(arg, "--column")) {
      column = argv[++i];
    } else if (!strcmp(arg, "--title")) {
      title = argv[++i];
    } else if (!strcmp(arg, "--size")) {
      char tail;
      if (sscanf(argv[++i], "%dx%d%c", &width, &height, &tail) != 2) {
        fprintf(stderr, "plot-runs: --size '%s' is not WxH (e.g. 1200x700)\n", argv[i]);
        return 2;
      }
    } else if (arg[0] == '-' && arg[1]) {
      fprintf(stderr, "plot-runs: unknown option '%s'\n", arg);
      return usage(stderr, 2);
    } else if (n == MAX_RUNS) {
      fprintf(stderr, "plot-runs: more than %d runs\n", MAX_RUNS);
      return 2;
    } else {
      /* RUN.tsv or RUN.tsv=LABEL; the label defaults to the file's name without .tsv */
      char *p = strdup(arg), *eq = strchr(p, '=');
      if (eq) *eq = 0;
      const char *base = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
      char *label = strdup(eq ? eq + 1 : base);
      size_t len = strlen(label);
      if (!eq && len > 4 && !strcmp(label + len - 4, ".tsv")) label[len - 4] = 0;
      paths[n] = p, labels[n] = label, texts[n] = NULL;
      n++;
    }
  }
  if (!out || n == 0) {
    fprintf(stderr, "plot-runs: %s\n", !out ? "-o OUT.png is required" : "no RUN.tsv given");
    rc = usage(stderr, 2);
  }
  amd_status st = {{0}};
  for (int i = 0; rc == 0 && i < n; i++)
    if (!(texts[i] = read_text(paths[i], &st))) {
      fprintf(stderr, "plot-runs: %s\n", st.msg);
      rc = 1;
    }
  if (rc == 0) {
    if (amd_plot_runs((const char *const *)texts, (const char *const *)labels, n, column, title, out, width, height,
                      &st)) {
      fprintf(stderr, "plot-runs: %s\n", st.msg);
      rc = 1;
    } else {
      printf("plot-runs: wrote %s (%d runs, %s)\n", out, n, column);
    }
    amd_plot_release();
  }
  for (int i = 0; i < n; i++) free(paths[i]), free(labels[i]), free(texts[i]);
  return rc;
}

/* plot_tsv.h: the metrics TSV read back for the training curves. */
#include "plot_tsv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const COL_NAMES[N_COLS] = {"epoch",     "train_loss", "test_loss", "val_loss",
                                              "train_acc", "test_top1",  "val_top1"};

int amd_plot_column(const char *name) {
  for (int c = 0; name && c < N_COLS; c++)
    if (!strcmp(name, COL_NAMES[c])) return c;
  return -1;
}

void amd_plot_metrics_free(metrics *m) {
  for (int c = 0; c < N_COLS; c++) free(m->v[c]);
}

/* Next line of text at *p (without its \n or \r\n); returns its length, or -1 at the end. */
static long next_line(const char **p, const char **line) {
  if (!**p) return -1;
  const char *s = *p, *e = strchr(s, '\n');
  size_t len = e ? (size_t)(e - s) : strlen(s);
  *p = e ? e + 1 : s + len;
  *line = s;
  if (len && s[len - 1] == '\r') len--;
  return (long)len;
}

static int is_blank(const char *s, long len) {
  for (long i = 0; i < len; i++)
    if (s[i] != ' ' && s[i] != '\t') return 0;
  return 1;
}

int amd_plot_parse_metrics(const char *text, metrics *m, amd_status *st) {
  memset(m, 0, sizeof *m);
  if (!text) return amd_fail(st, "metrics: no TSV text");
  const char *p = text, *line;
  long len;
  while ((len = next_line(&p, &line)) >= 0 && is_blank(line, len)) {
  }
  if (len < 0) return amd_fail(st, "metrics: the TSV is empty (no header, no epoch rows): nothing to plot");

  /* header: map each field to one of our columns (or to none) */
  int field_col[64];
  int n_fields = 0, have = 0;
  for (long i = 0; i <= len && n_fields < 64;) {
    long j = i;
    while (j < len && line[j] != '\t') j++;
    field_col[n_fields] = -1;
    for (int c = 0; c < N_COLS; c++)
      if ((long)strlen(COL_NAMES[c]) == j - i && strncmp(line + i, COL_NAMES[c], (size_t)(j - i)) == 0) {
        field_col[n_fields] = c;
        have |= 1 << c;
      }
    n_fields++;
    i = j + 1;
  }
  if (!(have & ~1))
    return amd_fail(
        st, "metrics: the header names none of train_loss, test_loss, val_loss, train_acc, test_top1, "
            "val_top1: is this a metrics TSV?");

  int64_t cap = 0;
  int line_no = 1;
  while ((len = next_line(&p, &line)) >= 0) {
    line_no++;
    if (is_blank(line, len)) continue;
    if (m->n == cap) {
      cap = cap ? 2 * cap : 64;
      for (int c = 0; c < N_COLS; c++) {
        double *v = realloc(m->v[c], (size_t)cap * sizeof *v);
        if (!v) {
          amd_plot_metrics_free(m);
          return amd_fail(st, "metrics: out of memory");
        }
        m->v[c] = v;
      }
    }
    for (int c = 0; c < N_COLS; c++) m->v[c][m->n] = NAN;
    int f = 0;
    for (long i = 0; i <= len && f < n_fields; f++) {
      long j = i;
      while (j < len && line[j] != '\t') j++;
      int c = field_col[f];
      if (c >= 0 && j > i && j - i < 64) {
        char buf[64], *end;
        memcpy(buf, line + i, (size_t)(j - i));
        buf[j - i] = 0;
        double x = strtod(buf, &end);
        if (end != buf && *end == 0 && isfinite(x)) m->v[c][m->n] = x;
      }
      i = j + 1;
    }
    if (!(have & 1)) m->v[C_EPOCH][m->n] = (double)(m->n + 1);
    if (isnan(m->v[C_EPOCH][m->n])) {
      amd_plot_metrics_free(m);
      return amd_fail(st, "metrics: line %d: the epoch is not a number", line_no);
    }
    m->n++;
  }
  if (m->n == 0) {
    amd_plot_metrics_free(m);
    return amd_fail(st, "metrics: the TSV has a header but no epoch rows: nothing to plot yet");
  }
  for (int c = 1; c < N_COLS; c++)
    if (!(have & (1 << c))) {
      free(m->v[c]);
      m->v[c] = NULL;
    }
  for (int c = C_TRAIN_ACC; c <= C_VAL_ACC; c++)
    for (int64_t i = 0; m->v[c] && i < m->n; i++) m->v[c][i] *= 100.0;
  return 0;
}

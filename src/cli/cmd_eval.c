/* `amdnn-onnx eval` (amdnn_session_evaluate) and `amdnn-onnx sweep`
 * (amdnn_session_sweep): the results as tables on stdout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The per-class accuracy and the confusion matrix (rows: label, columns: prediction). */
static void print_confusion(const amdnn_eval_result *r) {
  const int64_t c = r->n_classes;
  printf("per-class accuracy:\n");
  for (int64_t k = 0; k < c; k++) {
    int64_t row = 0;
    for (int64_t j = 0; j < c; j++) row += r->confusion[k * c + j];
    char label[32];
    snprintf(label, sizeof label, "%lld", (long long)k);
    printf("  %-12s %6.2f%% of %lld\n", r->class_names ? r->class_names[k] : label,
           row ? 100.0 * (double)r->confusion[k * c + k] / (double)row : 0.0, (long long)row);
  }
  printf("confusion matrix (rows: label, columns: prediction):\n      ");
  for (int64_t j = 0; j < c; j++) printf(" %6lld", (long long)j);
  printf("\n");
  for (int64_t k = 0; k < c; k++) {
    printf("  %3lld ", (long long)k);
    for (int64_t j = 0; j < c; j++) printf(" %6lld", (long long)r->confusion[k * c + j]);
    printf("\n");
  }
}

int cli_eval(const cli_command *cmd, cli_args *a) {
  (void)cmd;
  amdnn_session *s;
  int rc = cli_open(a, &s);
  if (rc) return rc;
  cli_reporter rep;
  const amdnn_callbacks cb = cli_callbacks(&rep, a);
  amdnn_eval_result *r = NULL;
  rc = cli_fail(a, amdnn_session_evaluate(s, a->call, &cb, &r));
  if (rc == 0) {
    const char *mode = amdnn_options_get(a->session, "mode"), *split = amdnn_options_get(a->call, "split");
    const char *confusion = amdnn_options_get(a->call, "confusion");
    const char *tta_shift = amdnn_options_get(a->call, "tta-shift");
    const int shifted = tta_shift && strcmp(tta_shift, "0") != 0;
    printf("model %s, mode %s, %s split of %s: %lld images%s\n", a->model, mode ? mode : "acc32",
           split ? split : "test", amdnn_options_get(a->call, "data"), (long long)r->n,
           !amdnn_options_get(a->call, "tta") ? ""
           : shifted                          ? " (and each mirrored and shifted: --tta, --tta-shift)"
                                              : " (and each mirrored: --tta)");
    const double n = r->n ? (double)r->n : 1;
    printf("top1 %.2f%%  top5 %.2f%%  loss %.4f  %.0f images/s\n", 100.0 * (double)r->top1 / n,
           100.0 * (double)r->top5 / n, r->loss, r->images_per_s);
    print_confusion(r);
    if (confusion) printf("confusion matrix picture: %s\n", confusion);
  }
  amdnn_eval_result_free(r);
  amdnn_session_close(s);
  return rc;
}

/* The sweep's rows, kept as the callbacks see them, for the table at the end. */
typedef struct sweep_table {
  cli_reporter rep; /* first: the reporter's callbacks get this struct */
  amdnn_sweep_row *rows;
  char (*names)[256];
  char (*ops)[64];
  int n;
} sweep_table;

static int keep_row(void *user, const amdnn_sweep_row *row) {
  sweep_table *t = user;
  if (!t->rows) {
    t->rows = calloc((size_t)row->count, sizeof *t->rows);
    t->names = calloc((size_t)row->count, sizeof *t->names);
    t->ops = calloc((size_t)row->count, sizeof *t->ops);
    if (!t->rows || !t->names || !t->ops) return 1;
  }
  snprintf(t->names[row->index], sizeof t->names[0], "%s", row->node);
  snprintf(t->ops[row->index], sizeof t->ops[0], "%s", row->op_type);
  t->rows[row->index] = *row;
  t->rows[row->index].node = t->names[row->index];
  t->rows[row->index].op_type = t->ops[row->index];
  t->n = row->count;
  t->rep.last_row = t->rows[row->index];
  snprintf(t->rep.last_name, sizeof t->rep.last_name, "%s", row->node);
  return 0;
}

static void print_rows(const sweep_table *t) {
  printf("  %-32s %-8s %12s %8s %8s %8s %9s %9s\n", "node", "op", "MACs", "top1%", "top5%", "loss", "top1 drop",
         "loss rise");
  for (int k = 0; k < t->n; k++) {
    const amdnn_sweep_row *r = &t->rows[k];
    char macs[32] = "-";
    if (r->macs >= 0) snprintf(macs, sizeof macs, "%lld", (long long)r->macs);
    printf("  %-32s %-8s %12s %8.2f %8.2f %8.4f %+9.2f %+9.4f%s\n", r->node, r->op_type, macs, 100 * r->top1,
           100 * r->top5, r->loss, 100 * r->top1_drop, r->loss_rise, r->resumed ? "  (kept)" : "");
  }
}

int cli_sweep(const cli_command *cmd, cli_args *a) {
  (void)cmd;
  amdnn_session *s;
  int rc = cli_open(a, &s);
  if (rc) return rc;
  sweep_table t = {0};
  amdnn_callbacks cb = cli_callbacks(&t.rep, a);
  cb.user = &t;
  cb.sweep_row = keep_row;
  rc = cli_fail(a, amdnn_session_sweep(s, a->call, &cb));
  if (rc == 0 && t.rows) {
    print_rows(&t);
    const char *tsv = amdnn_options_get(a->call, "tsv"), *png = amdnn_options_get(a->call, "plot");
    if (tsv) printf("rows: %s\n", tsv);
    if (png) printf("bar chart: %s\n", png);
  }
  free(t.rows);
  free(t.names);
  free(t.ops);
  amdnn_session_close(s);
  return rc;
}

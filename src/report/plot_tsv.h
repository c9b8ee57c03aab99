/* The metrics TSV that `train --metrics` writes, read back for the training
 * curves of plot.c (amd_plot_metrics): the columns it knows, by name. */
#ifndef AMD_REPORT_PLOT_TSV_H
#define AMD_REPORT_PLOT_TSV_H

#include <stdint.h>

#include "../core/status.h"

/* the columns known, in the order of plot_tsv.c's names */
enum { C_EPOCH, C_TRAIN_LOSS, C_TEST_LOSS, C_VAL_LOSS, C_TRAIN_ACC, C_TEST_ACC, C_VAL_ACC, N_COLS };

typedef struct {
  int64_t n;         /* rows */
  double *v[N_COLS]; /* v[c][row], NAN where missing; NULL when the column is absent */
} metrics;

/* Reads text (the TSV: a header naming columns, then one row per epoch) into m; fails with a message on
 * an empty file, a header without any known column, a row whose epoch is not a number, no rows. */
int amd_plot_parse_metrics(const char *text, metrics *m, amd_status *st);
void amd_plot_metrics_free(metrics *m);

/* The column (C_*) that a metrics TSV's header calls name, or -1. */
int amd_plot_column(const char *name);

#endif

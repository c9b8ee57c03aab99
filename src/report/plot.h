/* Pictures of a training run: the per-epoch curves of the metrics TSV
 * (train --plot) and of several runs' TSVs (tools/plot_runs.c), the confusion matrix (eval --confusion) and bar charts
 * (sweep --plot), as PNG files.
 *
 * Drawn with cairo (lines, text through fontconfig, PNG through libpng), an
 * optional dependency: plot.c is compiled with -DAMD_HAVE_CAIRO when meson
 * finds cairo and fontconfig (libcairo2-dev brings both); without it every drawing function fails with a
 * message saying so. Files are written atomically (FILE.tmp, then rename), so a reader never sees a
 * half-written picture. Errors follow core/status.h: 0 on success, -1 and a one-line message in st. */
#ifndef AMD_PLOT_H
#define AMD_PLOT_H

#include "../core/status.h"

#include <stdint.h>

/* 1 when built with cairo (the functions below can draw), 0 otherwise. */
int amd_plot_available(void);

/* Draws the metrics TSV text (the header line `epoch hours train_loss
 * train_acc test_loss test_top1 lr images_per_s [val_loss val_top1]`, then a
 * row per epoch; accuracies are fractions 0..1) as two panels: the losses and
 * the accuracies in %, against the epoch, with ticks, axis labels, titles and
 * a legend. Columns are found by name; missing or non-numeric cells are left
 * out of the curves. width x height in pixels (200..8192 each); the panels sit
 * side by side when the picture is wide, stacked otherwise. Needs at least one
 * epoch row. */
int amd_plot_metrics(const char *tsv_text, const char *png_path, int width, int height, amd_status *st);

/* Draws one column of several metrics TSVs (runs, e.g. the columns of an
 * accuracy table) as one curve per run against the epoch: column is a metrics
 * column other than epoch (test_top1, test_loss, train_loss, train_acc,
 * val_top1, val_loss); labels[i] names run i in the legend, with its last
 * value; title may be NULL (the column's name). Fails with the run's label on
 * a TSV that does not parse or lacks the column. 1..64 runs; width x height as
 * for amd_plot_metrics. */
int amd_plot_runs(const char *const *tsv_texts, const char *const *labels, int n, const char *column,
                  const char *title, const char *png_path, int width, int height, amd_status *st);

/* Draws the n_classes x n_classes confusion matrix counts[label * n_classes +
 * prediction] as a heat map coloured by the share of each label's samples
 * (row-normalised), with the counts in the cells where they fit, the class
 * names (or indices when class_names is NULL) on both axes, a colour bar and
 * the overall accuracy in the title. The picture's size follows n_classes. */
int amd_plot_confusion(const int64_t *counts, int64_t n_classes, const char *const *class_names,
                       const char *png_path, amd_status *st);

/* Draws a horizontal bar chart: one bar per row, labels[i] at the left and
 * values[i] as a bar from zero (negative values to the left of the zero line),
 * in the given order from the top, with the value written at the end of each
 * bar, a grid, the x axis labelled xlabel, and title / subtitle (subtitle may
 * be NULL) above. Non-finite values are drawn as "n/a" without a bar. The
 * picture's height follows n (1..5000). */
int amd_plot_bars(const char *const *labels, const double *values, int n, const char *title, const char *subtitle,
                  const char *xlabel, const char *png_path, amd_status *st);

/* Frees cairo's and fontconfig's process-wide caches (fonts), so that
 * LeakSanitizer reports nothing at exit. Call once, after the last drawing
 * (the CLI: before returning from a command that drew); harmless without cairo. */
void amd_plot_release(void);

#endif

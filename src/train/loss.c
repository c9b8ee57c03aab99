/* Softmax cross-entropy: see loss.h. Sums in double; the softmax subtracts the
 * row maximum first. */
#include "loss.h"

#include <math.h>

#include "../core/xent_row.h"

void amd_softmax_xent_rows(const float *logits, const int64_t *labels, int64_t n, int64_t c, float smoothing,
                           float scale, float *dlogits, void *rows) {
  amd_xent_rows r = amd_xent_rows_of(rows, n);
  for (int64_t i = 0; i < n; i++)
    r.loss[i] = amd_xent_row(logits + i * c, labels[i], n, c, smoothing, scale, dlogits ? dlogits + i * c : NULL,
                             &r.arg[i], &r.above[i]);
}

double amd_xent_tally(const void *rows, const int64_t *labels, int64_t n, int64_t *pred,
                      amd_batch_stats *bs) {
  const amd_xent_rows r = amd_xent_rows_of((void *)rows, n);
  double total = 0;
  for (int64_t i = 0; i < n; i++) {
    total += r.loss[i];
    if (bs) {
      bs->top1 += r.arg[i] == labels[i];
      bs->top5 += r.above[i] < 5;
    }
    if (pred) pred[i] = r.arg[i];
  }
  if (bs) {
    bs->loss_sum += total;
    bs->n += n;
  }
  return n ? total / (double)n : 0;
}

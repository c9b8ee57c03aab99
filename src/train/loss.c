/* Softmax cross-entropy: see loss.h. Sums in double; the softmax subtracts the
 * row maximum first. */
#include "loss.h"

#include <math.h>

void amd_softmax_xent_rows(const float *logits, const int64_t *labels, int64_t n, int64_t c, float smoothing,
                           float scale, float *dlogits, void *rows) {
  amd_xent_rows r = amd_xent_rows_of(rows, n);
  for (int64_t i = 0; i < n; i++) {
    const float *z = logits + i * c;
    int64_t y = labels[i];
    double mx = z[0];
    int64_t arg = 0;
    for (int64_t j = 1; j < c; j++)
      if (z[j] > mx || isnan(z[j])) mx = z[j], arg = j;
    double sum = 0, sum_logp = 0;
    for (int64_t j = 0; j < c; j++) sum += exp((double)z[j] - mx);
    double log_sum = log(sum);
    for (int64_t j = 0; j < c; j++) sum_logp += (double)z[j] - mx - log_sum;
    double logp_y = (double)z[y] - mx - log_sum;
    r.loss[i] = -(1.0 - smoothing) * logp_y - smoothing / (double)c * sum_logp;
    if (dlogits)
      for (int64_t j = 0; j < c; j++) {
        double p = exp((double)z[j] - mx - log_sum);
        double q = (j == y ? 1.0 - smoothing : 0.0) + smoothing / (double)c;
        float d = (float)((p - q) / (double)n);
        dlogits[i * c + j] = scale != 1.0f ? d * scale : d;
      }
    /* top-5: the label's rank is the number of logits strictly above it */
    int64_t above = 0;
    for (int64_t j = 0; j < c; j++) above += z[j] > z[y];
    r.arg[i] = arg;
    r.above[i] = above;
  }
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

/* One sample's softmax cross-entropy with label smoothing, the one
 * definition that the CPU reference (src/train/loss.c) and the CUDA kernel
 * (cuda/train_kernels.cu) both run, so that their losses and gradients are
 * the same arithmetic. In double: the row's maximum, log-sum-exp, the loss
 * -(1 - s) log p_y - s / c sum_j log p_j; the gradient (p_j - q_j) / n (times
 * scale) into dz when it is not NULL, q the smoothed one-hot label; the
 * argmax (a NaN wins) and the number of logits strictly above the label's
 * (top-5: fewer than 5). */
#ifndef AMD_XENT_ROW_H
#define AMD_XENT_ROW_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define AMD_XENT_HD __host__ __device__
#else
#define AMD_XENT_HD
#endif

static inline AMD_XENT_HD double amd_xent_row(const float *z, int64_t y, int64_t n, int64_t c, float smoothing,
                                              float scale, float *dz, int64_t *arg_out, int64_t *above_out) {
  double mx = z[0];
  int64_t arg = 0;
  for (int64_t j = 1; j < c; j++)
    if (z[j] > mx || isnan(z[j])) mx = z[j], arg = j;
  double sum = 0, sum_logp = 0;
  for (int64_t j = 0; j < c; j++) sum += exp((double)z[j] - mx);
  double log_sum = log(sum);
  for (int64_t j = 0; j < c; j++) sum_logp += (double)z[j] - mx - log_sum;
  double logp_y = (double)z[y] - mx - log_sum;
  const double loss = -(1.0 - smoothing) * logp_y - smoothing / (double)c * sum_logp;
  if (dz)
    for (int64_t j = 0; j < c; j++) {
      double p = exp((double)z[j] - mx - log_sum);
      double q = (j == y ? 1.0 - smoothing : 0.0) + smoothing / (double)c;
      float d = (float)((p - q) / (double)n);
      dz[j] = scale != 1.0f ? d * scale : d;
    }
  int64_t above = 0;
  for (int64_t j = 0; j < c; j++) above += z[j] > z[y];
  *arg_out = arg;
  *above_out = above;
  return loss;
}

#endif

/* Softmax cross-entropy on logits [N, C], with optional label smoothing
 * (PyTorch's F.cross_entropy(label_smoothing=eps) definition: the target is
 * (1 - eps) * one_hot + eps / C), averaged over the batch.
 *
 * The host definition, in two parts that every device shares: the
 * per-sample results (amd_softmax_xent_rows, the CPU training kernel; the
 * CUDA kernel computes the same per sample) and their sums
 * (amd_xent_tally). amd_train_softmax_xent (kernels.h) runs both through a
 * device's training kernels. */
#ifndef AMD_LOSS_H
#define AMD_LOSS_H

#include <stdint.h>

#include "../core/train_types.h" /* amd_batch_stats, the per-sample rows */

/* The per-sample results of logits [n, c] with labels into rows (a block of
 * amd_xent_bytes(n)); when dlogits is non-NULL writes d(mean loss)/d(logits)
 * there, multiplied by scale (in float) unless scale is 1. */
void amd_softmax_xent_rows(const float *logits, const int64_t *labels, int64_t n, int64_t c, float smoothing,
                           float scale, float *dlogits, void *rows);
/* Sums the n per-sample results in sample order: adds the batch's loss and
 * accuracy to bs (may be NULL); pred (may be NULL) receives the argmax per
 * sample. Returns the mean loss of the batch (NaN or Inf if the logits are;
 * 0 for no sample). */
double amd_xent_tally(const void *rows, const int64_t *labels, int64_t n, int64_t *pred, amd_batch_stats *bs);

#endif

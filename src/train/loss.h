/* Softmax cross-entropy on logits [N, C], with optional label smoothing
 * (PyTorch's F.cross_entropy(label_smoothing=eps) definition: the target is
 * (1 - eps) * one_hot + eps / C), averaged over the batch. */
#ifndef AMD_LOSS_H
#define AMD_LOSS_H

#include <stdint.h>

typedef struct amd_batch_stats {
  double loss_sum;   /* sum over samples of the per-sample loss */
  int64_t n;         /* samples */
  int64_t top1, top5;/* correct predictions */
} amd_batch_stats;

/* Adds the batch's loss and accuracy to bs; when dlogits is non-NULL writes
 * d(mean loss)/d(logits) there. pred (may be NULL) receives the argmax per
 * sample. Returns the mean loss of the batch (NaN or Inf if the logits are). */
double amd_softmax_xent(const float *logits, const int64_t *labels, int64_t n, int64_t c, float smoothing,
                        float *dlogits, int64_t *pred, amd_batch_stats *bs);

#endif

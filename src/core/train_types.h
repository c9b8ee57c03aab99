/* Plain types of the training kernels (src/exec/train_kernels.h), shared by
 * the host code of src/train/ and src/data/ and by the backends, which include
 * no train/ or data/ header: the batch statistics, the optimizer description,
 * one optimizer step's derived constants, the per-sample results of the
 * softmax cross-entropy, and the plan of a batch's samples.
 *
 * Functions on them live with their owners: optim.c (the optimizer),
 * loss.c (the cross-entropy), dataset.c (the batch plan). */
#ifndef AMD_TRAIN_TYPES_H
#define AMD_TRAIN_TYPES_H

#include <stddef.h>
#include <stdint.h>

/* ---- statistics of the batches of an epoch (loss.h) ---- */
typedef struct amd_batch_stats {
  double loss_sum;    /* sum over samples of the per-sample loss */
  int64_t n;          /* samples */
  int64_t top1, top5; /* correct predictions */
} amd_batch_stats;

/* ---- the optimizer (optim.h) ---- */
typedef enum amd_opt_kind { AMD_OPT_SGD, AMD_OPT_ADAM, AMD_OPT_ADAMW, AMD_OPT_RMSPROP, AMD_OPT_LION } amd_opt_kind;
enum { AMD_OPT_COUNT = AMD_OPT_LION + 1 }; /* kinds 0 .. AMD_OPT_COUNT - 1; any other is an error */

typedef struct amd_optim {
  amd_opt_kind kind;
  /* Hyper-parameters are doubles, as PyTorch's are (Python floats): the
   * per-step constants (1 - beta1, 1 - lr * wd, bias corrections) are formed
   * in double and rounded to float once, exactly where PyTorch rounds them. */
  double momentum;     /* SGD / RMSprop momentum (0: none) */
  int nesterov;        /* SGD (needs momentum > 0) */
  double beta1, beta2; /* Adam / AdamW (0.9, 0.999) */
  double eps;          /* Adam / AdamW 1e-8, RMSprop 1e-8 */
  double alpha;        /* RMSprop smoothing (0.99) */
  double weight_decay; /* coupled (added to the gradient) except AdamW (decoupled); 0 by default
                          except AdamW, whose PyTorch default is 0.01 */
} amd_optim;

/* The float constants of one step, rounded from double as PyTorch rounds its
 * Python-float scalars, for a fused GPU kernel that must match
 * amd_optim_step (which uses them with the per-element formulas documented
 * in optim.c). Unused fields are 0. amd_optim_get_coeffs (optim.h) fills it. */
typedef struct amd_optim_coeffs {
  float neg_lr;       /* -lr (SGD, RMSprop) */
  float weight_decay; /* coupled decay: g + wd * p */
  float momentum;     /* SGD / RMSprop */
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float neg_step_size; /* Adam: -lr / (1 - beta1^t) */
  float bc2_sqrt;      /* Adam: sqrt(1 - beta2^t) */
  float eps;
  float decay;                  /* AdamW: 1 - lr * wd (1 otherwise) */
  float alpha, one_minus_alpha; /* RMSprop */
} amd_optim_coeffs;

/* One optimizer step as a training kernel takes it: the optimizer, the
 * learning rate and the 1-based step, and what the host derives from them
 * (amd_optim_update_make, src/train/kernels.h), so that a kernel set needs
 * no code of optim.c. */
typedef struct amd_optim_update {
  const amd_optim *o;
  double lr;
  int64_t t;
  amd_optim_coeffs c; /* amd_optim_get_coeffs(o, lr, t) */
  int state_blocks;   /* amd_optim_state_blocks(o) */
  int fused_fma;      /* amd_optim_fused_fma: the host's fma() convention */
} amd_optim_update;

/* ---- per-sample results of the softmax cross-entropy (loss.h) ----
 * One host block of amd_xent_bytes(n): the argmax [n] (int64), the number of
 * logits strictly above the label's [n] (int64, top-5: < 5), the loss [n]
 * (double); the layout a device kernel writes and copies back in one piece.
 * amd_xent_tally (loss.h) sums them on the host. */
typedef struct amd_xent_rows {
  int64_t *arg, *above;
  double *loss;
} amd_xent_rows;
static inline size_t amd_xent_bytes(int64_t n) { return (size_t)n * (2 * sizeof(int64_t) + sizeof(double)); }
static inline amd_xent_rows amd_xent_rows_of(void *block, int64_t n) {
  amd_xent_rows r;
  r.arg = (int64_t *)block;
  r.above = r.arg + n;
  r.loss = (double *)(r.above + n);
  return r;
}

/* ---- the plan of a batch (dataset.h amd_dataset_batch_plan) ---- */
typedef struct amd_batch_sample {
  int64_t src; /* index in the split */
  int32_t dy, dx,
      mirror; /* output (i, j) reads source (i + dy, (mirror ? W-1-j : j) + dx); outside: padding */
  int32_t cut_y0, cut_x0, cut_y1, cut_x1; /* cutout rows [y0, y1) x columns [x0, x1), set to 0; empty: none */
  /* a ragged split (host only): the random resized crop's rectangle of the
   * stored image, resized to H x W; box_h 0: the centre crop */
  int32_t box_y, box_x, box_h, box_w;
} amd_batch_sample;

#endif

/* Autograd over the parsed graph, and one training / evaluation step.
 *
 * Set-up (amd_trainer_init): finds the logits (the graph's first output, or
 * the input of a final Softmax / LogSoftmax, so the loss is computed from
 * logits either way), sweeps back from them to find the float initializers
 * that reach the loss through differentiable inputs (the trainable
 * parameters, less --freeze matches (see amd_trainer_opts); BatchNormalization running statistics
 * are non-differentiable inputs), moves those parameters into one contiguous
 * block (g->param_block) with a gradient block of the same layout, and gives
 * every BatchNormalization node outputs for its running statistics so they
 * are written back after each training step (ONNX momentum convention).
 * amd_trainer_free takes those outputs away again and leaves the trained
 * values in the graph, so that a trainer made on it next (an evaluation, a
 * training with another --freeze) starts from them.
 *
 * A step: forward in training mode keeping the values that some node's
 * backward reads (and the graph's outputs and the logits; every other value
 * loses its data after its last reader, exec.h), softmax cross-entropy on
 * the logits, then backward in reverse node order. Gradients ACCUMULATE (+=)
 * into buffers zeroed once per step; only values that depend on a parameter
 * get a gradient (no data gradient for the first layer).
 *
 * Backends (amd_trainer_set_backend): every node runs through the backend
 * (src/exec/backend.h). On a device backend the parameter and gradient
 * blocks are each one device allocation (bparams, bgrads), the optimizer
 * state another, the BN statistics are updated in device copies, and the
 * loss, finite check, scaling and optimizer run there; the host blocks
 * (params, grads) and the graph's initializers are brought up to date only
 * by amd_trainer_sync_host (before writing a model, a checkpoint or the
 * gradients) and pushed with amd_trainer_sync_device (after a resume or a
 * change on the host). On the CPU backend both are no-ops.
 *
 * The code: trainer.c (life and blocks), trainer_params.c, trainer_bn.c,
 * trainer_grads.c, trainer_deferred.c, trainer_eval.c, trainer_lookahead.c;
 * what they share is in trainer_internal.h, which says what each holds. */
#ifndef AMD_TRAINER_H
#define AMD_TRAINER_H

#include "../exec/exec.h"
#include "../mult/mult.h"
#include "loss.h"

#define AMD_MAX_FREEZE 64

/* freeze: the --freeze entries. A float initializer is frozen (not a
 * parameter: no gradient, no optimizer update, its tensor never written)
 * when an entry is a prefix of its name, or (an entry with * or ?) a shell
 * pattern of its whole name, or the name or op type of a node that reads it.
 * An entry that freezes no trainable parameter is an error. */
typedef struct amd_trainer_opts {
  const char *freeze[AMD_MAX_FREEZE];
  int n_freeze;
  /* 1: the trainer only evaluates (eval): a model without trainable
   * parameters, or whose loss depends on a quantized op, is accepted. */
  int inference_only;
} amd_trainer_opts;

struct amd_backend;
struct amd_optim;

/* A BatchNormalization node that the set-up gave outputs for its running statistics: its n_out before and
 * the outputs it added (bit o: output o, 1 or 2). */
typedef struct amd_bn_added {
  int node, n_out;
  unsigned outs;
} amd_bn_added;

typedef struct amd_trainer {
  amd_graph *g;
  const struct amd_backend *be; /* the CPU unless amd_trainer_set_backend */
  float *bparams, *bgrads; /* the blocks in backend memory (== params, grads on the CPU) */
  float *bopt;             /* optimizer state in backend memory (device backends) */
  int64_t n_bopt;
  amd_run run;
  amd_ctx ctx;
  int logits_value;
  int n_params;
  int *param_value;       /* graph value of each parameter */
  int64_t *param_offset;  /* its offset in the blocks */
  int64_t n_floats;
  float *params;          /* == g->param_block */
  float *grads;
  int n_stats;
  int (*stats)[2];        /* BatchNormalization: [output with the new statistic, initializer to update] */
  /* what the set-up added to the graph for BatchNormalization (amd_trainer_free takes it away): the nodes
   * and the values appended, [bn_values_from, bn_values_to) */
  amd_bn_added *bn_added;
  int n_bn_added, bn_values_from, bn_values_to;
  unsigned char *needs_grad; /* per value */
  amd_tensor *dvals;      /* per value: gradient of the loss */
  unsigned char *dfresh;  /* per value: its dval is unwritten, unzeroed memory (see grad_of) */
  /* per value: the node whose backward is the last to read its data (the earliest in the graph that
   * reads it), after which the backward walk frees it; -1: none frees it (no backward reads it, or the
   * trainer reads it after the step: the logits, the BatchNormalization statistics) */
  int *bwd_last;
  /* the CUDA graph of a deferred step (amd_trainer_step_deferred) */
  void *graph;            /* NULL: none captured */
  int64_t graph_n, graph_classes; /* its batch and the model's outputs */
  const void *graph_x;    /* its input buffer */
  int graph_warm;         /* same-shaped steps since the last reset */
  int graph_fails;        /* captures that failed */
  int graph_off;          /* three failed: none is tried again */
  int64_t graph_replays;
  char graph_note[256];   /* why the last capture failed */
  /* Optional, called in the backward walk of amd_trainer_step_grads before
   * node i's backward, and with i = -1 after the walk: every node above i has
   * queued its backward, so the gradient of a parameter that no node <= i
   * reads is final (data-parallel training starts its sums there). */
  int (*backward_progress)(void *user, int i, amd_status *st);
  void *progress_user;
  char warning[512];      /* set-up notes for the user (e.g. BN folded) */
  int n_frozen;           /* initializers that --freeze kept out of the parameters */
  int64_t frozen_floats;  /* their values */
  char frozen_names[512]; /* their names, comma-separated (", ..." when cut) */
  int tta;                /* amd_trainer_eval_split: test-time augmentation (see there) */
  int tta_shift;          /* with tta: also the views shifted by this many pixels (see there) */
} amd_trainer;

/* Sets t up on g (o may be NULL: train every parameter). A graph serves
 * several trainers one after another (each freed before the next is made,
 * with the same options or others): each starts from the values the one
 * before left in the graph's initializers. */
int amd_trainer_init(amd_trainer *t, amd_graph *g, const amd_trainer_opts *o, amd_status *st);
/* Runs the trainer on backend be from now on: allocates the device blocks and
 * uploads the parameters and every float initializer (call after any host
 * change such as amd_trainer_reinit). */
int amd_trainer_set_backend(amd_trainer *t, const struct amd_backend *be, amd_status *st);
/* Device -> host: the parameters (params, the graph's initializers), the
 * gradients (grads), the BN statistics and, when opt_state is non-NULL, the
 * n_opt floats of optimizer state. */
int amd_trainer_sync_host(amd_trainer *t, float *opt_state, int64_t n_opt, amd_status *st);
/* Host -> device: the same (opt_state may be NULL: zero state). */
int amd_trainer_sync_device(amd_trainer *t, const float *opt_state, int64_t n_opt, amd_status *st);
/* One optimizer step over the blocks; opt_state is the host state of n_opt
 * floats (used directly on the CPU; device backends keep their own copy,
 * synchronised by the functions above). guarded: after deferred steps, no
 * change once the step guard is cleared (see amd_trainer_step_deferred). */
int amd_trainer_optim_step(amd_trainer *t, const struct amd_optim *o, double lr, int64_t step, float *opt_state,
                           int64_t n_opt, int guarded, amd_status *st);
/* Frees t. The graph keeps the host values of the parameters and BN
 * statistics (on a device backend those of the last amd_trainer_sync_host)
 * and gets back the nodes and values it had before amd_trainer_init. */
void amd_trainer_free(amd_trainer *t);

/* Forward + loss + backward on one batch x with labels; grads are overwritten
 * with the gradient of loss_scale * (mean loss) (1 unless loss scaling).
 * Returns -1 on error; the mean loss goes to *loss (NaN/Inf is not an error
 * here: the caller decides). */
int amd_trainer_step_grads(amd_trainer *t, const amd_tensor *x, const int64_t *labels, float smoothing,
                           float loss_scale, double *loss, amd_batch_stats *bs, amd_status *st);
/* Steps that do not wait for their loss (backends with step_begin, see
 * backend.h), so that the host queues the next step while the device runs
 * this one: amd_trainer_step_deferred is amd_trainer_step_grads (loss scale
 * 1), then amd_trainer_optim_step (guarded, with lr and step) and
 * amd_trainer_update_stats, with its results kept in slot (0 ..
 * AMD_STEP_SLOTS - 1) and the step guard cleared where a loss or gradient is
 * not finite; a guarded optimizer step then changes nothing, in that step
 * and every later one until amd_trainer_guard_reset. With graphs (and a
 * backend that has them) the second of a run of same-shaped steps is
 * captured into a CUDA graph and the later ones replay it: the caller resets
 * it (amd_trainer_graph_reset) before anything else uses the device, such as
 * an evaluation; a model whose steps cannot be captured (a host fallback, a
 * Dropout) runs uncaptured, graph_note says why. amd_trainer_step_collect
 * waits for the step of slot and gives its mean loss, sums and *finite. */
int amd_trainer_can_defer(const amd_trainer *t);
int amd_trainer_guard_reset(amd_trainer *t, amd_status *st);
int amd_trainer_step_deferred(amd_trainer *t, const amd_tensor *x, const int64_t *labels, float smoothing, int slot,
                              const struct amd_optim *o, double lr, int64_t step, float *opt_state, int64_t n_opt,
                              int graphs, amd_status *st);
void amd_trainer_graph_reset(amd_trainer *t);
int amd_trainer_step_collect(amd_trainer *t, int slot, double *loss, amd_batch_stats *bs, int *finite,
                             amd_status *st);
/* *ok = 1 if every gradient is finite. */
int amd_trainer_grads_finite(amd_trainer *t, int *ok, amd_status *st);
/* Multiplies every gradient by f. */
int amd_trainer_scale_grads(amd_trainer *t, float f, amd_status *st);
/* 1 if a GEMM node multiplies in fp16 (training then needs loss scaling). */
int amd_trainer_uses_fp16(const amd_trainer *t);
/* Copies the new BatchNormalization statistics of the last training forward
 * into their initializers (call after a step that was not skipped). */
int amd_trainer_update_stats(amd_trainer *t, amd_status *st);
/* Inference-mode forward (running statistics, no dropout) and the loss;
 * pred (may be NULL) receives the argmax per sample. */
int amd_trainer_eval(amd_trainer *t, const amd_tensor *x, const int64_t *labels, amd_batch_stats *bs,
                     int64_t *pred, amd_status *st);
/* BN statistic i (0 <= i < n_stats) in the memory of t's backend: the
 * tensor the training steps update (a device copy on a device backend). */
amd_tensor *amd_trainer_stat(amd_trainer *t, int i);
/* BN statistic i as the last training forward pass computed it (the BN
 * node's output that amd_trainer_update_stats copies into
 * amd_trainer_stat(t, i)); NULL when there is none of that size. */
const amd_tensor *amd_trainer_stat_computed(amd_trainer *t, int i);
/* Lookahead (--lookahead): a slow copy of the parameters and then of the BN
 * statistics (amd_trainer_lookahead_floats values, in the order of stats[])
 * kept in the optimizer state (opt_state / the device copy, n_opt floats) at
 * float offset `offset`, after the optimizer's own blocks. START: slow =
 * fast; PULL: slow = decay x slow + (1 - decay) x fast, then fast = slow
 * (float products and sum, in the step's stream); END: fast = slow. */
typedef enum amd_lookahead_op { AMD_LOOKAHEAD_START, AMD_LOOKAHEAD_PULL, AMD_LOOKAHEAD_END } amd_lookahead_op;
int64_t amd_trainer_lookahead_floats(const amd_trainer *t);
int amd_trainer_lookahead(amd_trainer *t, amd_lookahead_op op, float decay, float *opt_state, int64_t n_opt,
                          int64_t offset, amd_status *st);
/* Every float initializer that is not a parameter but training changes
 * (the BN statistics): count and the value index of each. */
int amd_trainer_buffers(const amd_trainer *t, int *values, int max);

#endif

struct amd_dataset;
struct amd_data_split;
/* Evaluates n samples of split (idx: their indices, NULL = the first n) in
 * batches of `batch`, adding to bs; confusion (may be NULL) is a C x C count
 * matrix [label][prediction] for C = n_classes. The batches are made where
 * the backend can (batches.h: on the GPU, from a copy of the split). With
 * t->tta each batch also runs mirrored left-right, and the loss and the
 * prediction come from the mean of the two logits; with t->tta_shift N > 0
 * also both shifted N pixels down-right and up-left (padding as crop:P), the
 * logits then 1/2 the unshifted pair's mean and 1/4 each shifted pair's
 * (airbench94's test-time translations). */
int amd_trainer_eval_split(amd_trainer *t, const struct amd_dataset *ds, const struct amd_data_split *split,
                           const int64_t *idx, int64_t n, int64_t batch, amd_batch_stats *bs, int64_t *confusion,
                           int64_t n_classes, amd_status *st);
/* The same over a split that arrives in pieces (a streamed image folder,
 * data/image_stream.h): next(user, &piece, st) gives the next up to `batch`
 * samples (uint8 pixels and labels, valid until its next call; piece.n 0 at
 * the end) or fails (-1, st set). Every piece is one batch, so pieces cut
 * every `batch` samples give the sums amd_trainer_eval_split gives. */
int amd_trainer_eval_pieces(amd_trainer *t, const struct amd_dataset *ds, int64_t batch,
                            int (*next)(void *user, struct amd_data_split *piece, amd_status *st), void *user,
                            amd_batch_stats *bs, int64_t *confusion, int64_t n_classes, amd_status *st);
/* The number of model outputs (classes), from a forward pass of one sample. */
int amd_trainer_n_outputs(amd_trainer *t, const struct amd_dataset *ds, int64_t *n_out, amd_status *st);

/* Re-initialises the parameters as PyTorch does by default, from seed:
 * Conv / Gemm / MatMul weights and their biases U(-1/sqrt(fan_in), 1/sqrt(fan_in))
 * (kaiming_uniform with a = sqrt(5)), BatchNormalization scale 1, bias 0,
 * running mean 0, running variance 1, LayerNormalization scale 1, bias 0.
 * Other parameters keep their values.
 * Returns how many initializers were reset. */
int amd_trainer_reinit(amd_trainer *t, uint64_t seed);

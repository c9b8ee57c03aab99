/* What the trainer's files share and trainer.h does not publish. Internal to
 * the trainer (trainer.c and trainer_*.c); everything else includes trainer.h.
 *
 * The files: trainer.c the trainer's life (init, free) and its blocks
 * (parameters, gradients, optimizer state) on the host and on a backend;
 * trainer_params.c which initializers are parameters (the logits, the loss
 * path, --freeze, the values that need a gradient); trainer_bn.c
 * BatchNormalization (its running-statistics outputs, their updates);
 * trainer_grads.c one step's gradients (forward, loss, backward walk);
 * trainer_deferred.c the steps that do not wait for their loss and their
 * CUDA graph; trainer_eval.c evaluation (a batch, a split, a stream of
 * pieces); trainer_lookahead.c the slow weights of --lookahead. */
#ifndef AMD_TRAINER_INTERNAL_H
#define AMD_TRAINER_INTERNAL_H

#include "kernels.h"
#include "trainer.h"

static inline int amd_tr_is_op(const amd_node *n, amd_op_idx idx) { return n->op->idx == (int)idx; }

/* ---- trainer.c */

/* The training kernels of the trainer's device (amd_trainer_set_backend checks there are). */
const amd_train_kernels *amd_tr_kernels(const amd_trainer *t);
/* The optimizer state of n_opt floats in the backend's memory: opt_state itself on the CPU, else the
 * device copy (allocated, and filled from opt_state when non-NULL, on first use). */
int amd_tr_opt_state(amd_trainer *t, float *opt_state, int64_t n_opt, float **state, amd_status *st);
/* Frees a gradient (or any backend tensor) d and clears its data. */
void amd_tr_free_dval(amd_trainer *t, amd_tensor *d);

/* ---- trainer_params.c: set-up, in the order amd_trainer_init calls them */

/* The value the loss reads: the first graph output, or the input of a final
 * Softmax / LogSoftmax on the class axis. */
int amd_tr_find_logits(const amd_graph *g);
/* on_path[v] = 1 for the values whose gradient reaches the loss (a backward sweep from the logits through
 * the nodes with a backward); *blocked names a node without backward that a parameter's gradient would
 * have to cross (a warning), a quantized op there is an error unless the trainer only evaluates. */
int amd_tr_loss_path(const amd_trainer *t, const amd_trainer_opts *o, unsigned char *on_path,
                     const char **blocked, amd_status *st);
/* The parameters: the float initializers on the loss path, less those --freeze names (each entry must
 * match one), laid out one after the other (param_value, param_offset, n_params, n_floats). */
int amd_tr_choose_params(amd_trainer *t, const amd_trainer_opts *o, const unsigned char *on_path,
                         amd_status *st);
/* needs_grad: the values on the loss path that depend on a parameter through nodes with a backward (a
 * gradient stops at a node without one). */
void amd_tr_mark_needs_grad(amd_trainer *t, const unsigned char *on_path);
/* Fills t->bwd_last (trainer_grads.c). */
int amd_tr_plan_backward_frees(amd_trainer *t, amd_status *st);

/* ---- trainer_bn.c */

/* Gives every BatchNormalization node outputs 1 and 2 (its updated running
 * mean and variance in every opset) and records where they go back
 * (t->stats) and what it added to the graph (t->bn_added). */
int amd_tr_prepare_batchnorm(amd_trainer *t, amd_status *st);
/* Takes back what amd_tr_prepare_batchnorm added: the nodes' outputs and
 * n_out as before, the values it appended removed. */
void amd_tr_restore_batchnorm(amd_trainer *t);
/* Eval-mode exports fold BatchNormalization into the convolutions (PyTorch
 * names their weights onnx::Conv_N): a model without BN whose convolutions
 * carry such weights gets a warning in t->warning. */
void amd_tr_warn_folded_batchnorm(amd_trainer *t);
/* The tensor that holds BN statistic initializer v for the run's backend. */
amd_tensor *amd_tr_stat_tensor(amd_trainer *t, int v);

/* ---- trainer_grads.c */

/* Logits [N, C, 1...] -> N and C. */
int amd_tr_logits_shape(const amd_tensor *z, int64_t *n, int64_t *c, amd_status *st);
/* An error unless every label is a class of a model with c outputs. */
int amd_tr_check_labels(const int64_t *labels, int64_t n, int64_t c, amd_status *st);
/* amd_trainer_step_grads, or (deferred) its work in amd_trainer_step_deferred:
 * the loss through the stream's xent_defer, not waited for (loss and bs unused). */
int amd_tr_step_grads(amd_trainer *t, const amd_tensor *x, const int64_t *labels, float smoothing,
                      float loss_scale, int deferred, double *loss, amd_batch_stats *bs, amd_status *st);

#endif

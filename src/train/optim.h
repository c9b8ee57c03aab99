/* Optimizers and learning-rate schedules over the flat parameter block.
 *
 * Parameters, gradients and optimizer state are each one contiguous float
 * block of n values (the llm.c pattern): a step is one loop over the block.
 * Semantics follow PyTorch's torch.optim (SGD with momentum / dampening 0 /
 * Nesterov and coupled weight decay, Adam, AdamW with decoupled decay,
 * RMSprop), so that a run can be checked against PyTorch step for step. */
#ifndef AMD_OPTIM_H
#define AMD_OPTIM_H

#include <stdint.h>

#include "../core/status.h"
#include "../core/train_types.h"

/* amd_opt_kind, amd_optim (the optimizer description): core/train_types.h */

/* Sets *o to the defaults of the named optimizer ("sgd", "adam", "adamw",
 * "rmsprop"); an unknown name is an error listing the choices. */
int amd_optim_init(const char *name, amd_optim *o, amd_status *st);
const char *amd_optim_name(const amd_optim *o);
/* How many state blocks of n floats the optimizer keeps (0, 1 or 2):
 * SGD 1 with momentum (buffer) else 0; Adam/AdamW 2 (exp_avg, then
 * exp_avg_sq); RMSprop 1 (square_avg), 2 with momentum (then the buffer). */
int amd_optim_state_blocks(const amd_optim *o);
/* Checks the hyper-parameters (ranges as PyTorch checks them; Nesterov needs
 * momentum > 0). amd_optim_step assumes a checked optimizer. */
int amd_optim_check(const amd_optim *o, amd_status *st);
/* 1 when o->kind is one of the optimizers above (a step of any other is an
 * error, never a silent fallback to another optimizer). */
int amd_optim_known(const amd_optim *o);
/* One step at learning rate lr; t is the 1-based step count (Adam's bias
 * correction). state holds amd_optim_state_blocks() * n floats, zero at t = 1
 * (block b at state + b * n). One branch-free pass over the n values; the
 * result equals PyTorch's single-tensor (foreach=False) step to rounding.
 * Returns 0, or -1 without touching p or state when o->kind is not known. */
int amd_optim_step(const amd_optim *o, double lr, int64_t t, float *p, const float *g, float *state,
                    int64_t n);

/* The float constants of one step (amd_optim_coeffs, core/train_types.h),
 * rounded from double as PyTorch rounds its Python-float scalars. */
void amd_optim_get_coeffs(const amd_optim *o, double lr, int64_t t, amd_optim_coeffs *c);
/* 1 when this build's amd_optim_step uses a fused multiply-add for the fma()
 * steps (optim.c: __FMA__), 0 when it rounds (double)a*b + c to float: a GPU
 * kernel that must match it bit for bit computes the same. */
extern const int amd_optim_fused_fma;

typedef enum amd_sched_kind {
  AMD_SCHED_CONSTANT,
  AMD_SCHED_STEP,     /* multiply by gamma at each milestone epoch */
  AMD_SCHED_COSINE,   /* cosine from base_lr to min_lr over the run */
  AMD_SCHED_ONECYCLE, /* PyTorch OneCycleLR (cos annealing), max_lr = base_lr */
  AMD_SCHED_TRIANGLE, /* linear up from start_factor x base_lr over pct_start of the steps, then down to
                         end_factor x base_lr */
} amd_sched_kind;

typedef struct amd_schedule {
  amd_sched_kind kind;
  double base_lr;        /* the lr argument (one-cycle: max_lr) */
  int64_t warmup_epochs; /* linear warm-up over these epochs (constant/step/cosine):
                            lr * (step + 1) / warmup_steps for step < warmup_steps */
  int n_milestones;
  int64_t milestones[16]; /* epochs, strictly increasing, >= 1; absolute (warm-up epochs count) */
  double gamma;           /* step: 0.1 by default */
  double min_lr;          /* cosine: 0 by default */
  double pct_start, div_factor, final_div_factor; /* one-cycle: 0.3, 25, 1e4 (triangle: pct_start 0.25) */
  double start_factor, end_factor;                 /* triangle: 0, 0 */
} amd_schedule;

/* Parses SPEC (see amd_schedule_help()) with base learning rate lr. A
 * malformed spec, or warm-up with onecycle (which has its own), is an error
 * whose message (one line) lists the accepted forms. */
int amd_schedule_parse(const char *spec, double lr, int64_t warmup_epochs, amd_schedule *s, amd_status *st);
/* The learning rate for 0-based step `step` of a run of total_steps steps
 * with steps_per_epoch steps per epoch, in double like PyTorch's schedulers
 * (pass it to amd_optim_step as is: PyTorch rounds lr to float only inside
 * the step, after forming -lr / (1 - beta1^t) and 1 - lr * wd). step: epoch = step / steps_per_epoch, lr =
 * base_lr * gamma^(milestones <= epoch) (MultiStepLR stepped per epoch);
 * cosine: over steps [warmup_steps, total_steps) (CosineAnnealingLR with
 * T_max = total_steps - warmup_steps, eta_min = min_lr); onecycle: OneCycleLR
 * stepped per batch (the learning rate only; momentum is not cycled);
 * triangle: up = floor(pct_start x total_steps), lr = base_lr x (start +
 * (1 - start) x step / up) before it, then base_lr x (1 + (end - 1) x
 * (step - up) / (total_steps - up)). */
double amd_schedule_lr(const amd_schedule *s, int64_t step, int64_t steps_per_epoch, int64_t total_steps);
/* --lookahead "K[:D]": every K optimizer steps (K >= 1) the weights are pulled back to their slow
 * copy with decay D x (progress)^3, D in [0, 1) (default 0.95^K: airbench94's 0.95 per step). */
int amd_lookahead_parse(const char *spec, int64_t *k, double *d, amd_status *st);
/* The accepted SPEC forms, for --help. */
const char *amd_schedule_help(void);

#endif

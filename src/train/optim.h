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

typedef enum amd_opt_kind { AMD_OPT_SGD, AMD_OPT_ADAM, AMD_OPT_ADAMW, AMD_OPT_RMSPROP } amd_opt_kind;

typedef struct amd_optim {
  amd_opt_kind kind;
  float momentum;     /* SGD / RMSprop momentum (0: none) */
  int nesterov;       /* SGD */
  float beta1, beta2; /* Adam / AdamW (0.9, 0.999) */
  float eps;          /* Adam / AdamW 1e-8, RMSprop 1e-8 */
  float alpha;        /* RMSprop smoothing (0.99) */
  float weight_decay; /* coupled (added to the gradient) except AdamW (decoupled) */
} amd_optim;

/* Sets *o to the defaults of the named optimizer ("sgd", "adam", "adamw",
 * "rmsprop"); an unknown name is an error listing the choices. */
int amd_optim_init(const char *name, amd_optim *o, amd_status *st);
const char *amd_optim_name(const amd_optim *o);
/* How many state blocks of n floats the optimizer keeps (0, 1 or 2). */
int amd_optim_state_blocks(const amd_optim *o);
/* One step at learning rate lr; t is the 1-based step count (Adam's bias
 * correction). state holds amd_optim_state_blocks() * n floats, zero at t = 1. */
void amd_optim_step(const amd_optim *o, float lr, int64_t t, float *p, const float *g, float *state, int64_t n);

typedef enum amd_sched_kind {
  AMD_SCHED_CONSTANT,
  AMD_SCHED_STEP,     /* multiply by gamma at each milestone epoch */
  AMD_SCHED_COSINE,   /* cosine from base_lr to min_lr over the run */
  AMD_SCHED_ONECYCLE, /* PyTorch OneCycleLR (cos annealing), max_lr = base_lr */
} amd_sched_kind;

typedef struct amd_schedule {
  amd_sched_kind kind;
  float base_lr;
  int64_t warmup_epochs; /* linear warm-up from ~0 over these epochs (constant/step/cosine) */
  int n_milestones;
  int64_t milestones[16]; /* epochs */
  float gamma;
  float min_lr;
  float pct_start, div_factor, final_div_factor; /* one-cycle */
} amd_schedule;

/* Parses SPEC (see amd_schedule_help()) with base learning rate lr. */
int amd_schedule_parse(const char *spec, float lr, int64_t warmup_epochs, amd_schedule *s, amd_status *st);
/* The learning rate for 0-based step `step` of a run of total_steps steps
 * with steps_per_epoch steps per epoch. */
float amd_schedule_lr(const amd_schedule *s, int64_t step, int64_t steps_per_epoch, int64_t total_steps);
/* The accepted SPEC forms, for --help. */
const char *amd_schedule_help(void);

#endif

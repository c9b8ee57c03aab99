/* The training kernels on the host (exec/train_kernels.h): the reference the
 * device sets are held to, and the set of the CPU backend. Batches are
 * assembled by the host code itself (batches.h), so there is no data_batch. */
#include "kernels.h"

#include <math.h>

#include "../core/tensor.h"
#include "loss.h"
#include "optim.h"

static int cpu_softmax_xent(const float *z, const int64_t *labels, int64_t n, int64_t c, float smoothing,
                            float scale, float *dz, void *rows, amd_status *st) {
  (void)st;
  amd_softmax_xent_rows(z, labels, n, c, smoothing, scale, dz, rows);
  return 0;
}

static int cpu_all_finite(const float *p, int64_t n, int *ok, amd_status *st) {
  (void)st;
  int r = 1;
  for (int64_t i = 0; i < n; i++) r &= isfinite(p[i]) != 0;
  *ok = r;
  return 0;
}

static int cpu_scale(float *p, int64_t n, float f, amd_status *st) {
  (void)st;
  for (int64_t i = 0; i < n; i++) p[i] *= f;
  return 0;
}

static int cpu_add(float *y, const float *x, int64_t n, amd_status *st) {
  (void)st;
  for (int64_t i = 0; i < n; i++) y[i] += x[i];
  return 0;
}

static int cpu_optim_step(const amd_optim_update *u, float *p, const float *g, float *state, int64_t n,
                          int guarded, amd_status *st) {
  (void)guarded; /* the CPU backend has no stream: never a guard */
  if (amd_optim_step(u->o, u->lr, u->t, p, g, state, n)) /* an unknown kind: nothing changed */
    return amd_fail(st, "optim_step: unknown optimizer kind %d (no step taken)", (int)u->o->kind);
  return 0;
}

const amd_train_kernels amd_train_kernels_cpu = {
    .name = "cpu",
    .device = AMD_DEVICE_CPU,
    .softmax_xent = cpu_softmax_xent,
    .all_finite = cpu_all_finite,
    .scale = cpu_scale,
    .add = cpu_add,
    .optim_step = cpu_optim_step,
    .data_batch = NULL, /* amd_dataset_batch writes host memory directly */
};

/* The CPU backend: host memory, the ops' own forward and backward functions,
 * the training primitives of src/train/ (loss.c, optim.c). Every node is
 * native here, so nothing is ever staged. */
#include "backend.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../train/loss.h"
#include "../train/optim.h"

static int cpu_native(const amd_node *n, const amd_tensor *const *in) {
  (void)in;
  return n->op->infer && n->op->forward;
}

static int cpu_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                       amd_status *st) {
  return n->op->forward(n, ctx, in, out, st);
}

static int cpu_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                        const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  if (!n->op->backward) return amd_fail(st, "op %s has no backward", n->op->name);
  return n->op->backward(n, ctx, in, out, dout, din, st);
}

static int cpu_mem_alloc(void **p, size_t bytes, amd_status *st) {
  *p = calloc(1, bytes ? bytes : 1);
  return *p ? 0 : amd_fail(st, "out of memory allocating %zu bytes", bytes);
}

static int cpu_memcpy(void *dst, const void *src, size_t bytes, amd_status *st) {
  (void)st;
  if (bytes) memcpy(dst, src, bytes);
  return 0;
}

static int cpu_mem_zero(void *p, size_t bytes, amd_status *st) {
  (void)st;
  if (bytes) memset(p, 0, bytes);
  return 0;
}

static int cpu_softmax_xent(const float *z, const int64_t *labels, int64_t n, int64_t c, float smoothing,
                            float scale, float *dz, int64_t *pred, amd_batch_stats *bs, double *mean,
                            amd_status *st) {
  (void)st;
  *mean = amd_softmax_xent(z, labels, n, c, smoothing, dz, pred, bs);
  if (dz && scale != 1.0f)
    for (int64_t i = 0; i < n * c; i++) dz[i] *= scale;
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

static int cpu_optim_step(const amd_optim *o, double lr, int64_t t, float *p, const float *g, float *state,
                          int64_t n, int guarded, amd_status *st) {
  (void)guarded; /* no step_end: never a guard */
  if (amd_optim_step(o, lr, t, p, g, state, n)) /* an unknown kind: nothing changed */
    return amd_fail(st, "optim_step: unknown optimizer kind %d (no step taken)", (int)o->kind);
  return 0;
}

const amd_backend amd_backend_cpu = {
    .name = "cpu",
    .device = AMD_DEVICE_CPU,
    .native = cpu_native,
    .host_inputs = NULL,
    .alloc = amd_tensor_alloc,
    .alloc_out = NULL, /* calloc is cheap next to the CPU ops */
    .bwd_overwrite = NULL,
    .free = amd_tensor_free,
    .forward = cpu_forward,
    .backward = cpu_backward,
    .mem_alloc = cpu_mem_alloc,
    .mem_free = free,
    .mem_to_host = cpu_memcpy,
    .mem_from_host = cpu_memcpy,
    .mem_copy = cpu_memcpy,
    .mem_zero = cpu_mem_zero,
    .softmax_xent = cpu_softmax_xent,
    .all_finite = cpu_all_finite,
    .scale = cpu_scale,
    .add = cpu_add,
    .optim_step = cpu_optim_step,
    .data_batch = NULL, /* amd_dataset_batch writes host memory directly */
    .step_begin = NULL, /* nothing to overlap: every step has its loss at once */
};

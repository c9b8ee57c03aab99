/* The CPU backend: host memory and the ops' own forward and backward
 * functions (its training kernels are the CPU reference set, kernels_cpu.c
 * of the training code). Every node is supported here, so nothing is ever
 * staged. */
#include "backend.h"

#include <stdlib.h>
#include <string.h>

#include "../core/alloc_trace.h"

static int cpu_supports(const amd_node *n, const amd_tensor *const *in) {
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
  *p = amd_zeroed_alloc(bytes);
  if (!*p) return amd_fail(st, "out of memory allocating %zu bytes", bytes);
  amd_alloc_trace_alloc(0, bytes, *p);
  return 0;
}

static void cpu_mem_free(void *p) {
  amd_alloc_trace_free(p);
  free(p);
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

static const amd_buffers cpu_buffers = {
    .alloc = amd_tensor_alloc,
    .alloc_out = NULL, /* outputs are zeroed too: not every CPU op writes all of its outputs */
    .free = amd_tensor_free,
    .mem_alloc = cpu_mem_alloc,
    .mem_free = cpu_mem_free,
    .mem_to_host = cpu_memcpy,
    .mem_from_host = cpu_memcpy,
    .mem_copy = cpu_memcpy,
    .mem_zero = cpu_mem_zero,
};

static const amd_compute cpu_compute = {
    .supports = cpu_supports,
    .host_inputs = NULL,
    .forward = cpu_forward,
    .backward = cpu_backward,
    .bwd_overwrite = NULL,
};

const amd_backend amd_backend_cpu = {
    .name = "cpu",
    .device = AMD_DEVICE_CPU,
    .buf = &cpu_buffers,
    .compute = &cpu_compute,
    .stream = NULL, /* nothing to overlap: every step has its loss at once */
};

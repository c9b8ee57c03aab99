/* The CPU backend: host memory, the ops' own forward functions. */
#include "backend.h"

static int cpu_supports(const amd_node *n) { return n->op->infer && n->op->forward; }

static int cpu_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                       amd_status *st) {
  return n->op->forward(n, ctx, in, out, st);
}

const amd_backend amd_backend_cpu = {
    .name = "cpu",
    .supports = cpu_supports,
    .alloc = amd_tensor_alloc,
    .free = amd_tensor_free,
    .forward = cpu_forward,
};

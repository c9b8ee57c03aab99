/* Backends: where tensors live and which code runs each node.
 *
 * The executor asks the backend to allocate each output and to run each node;
 * supports() lets the executor report a node that a backend cannot run before
 * it starts. The CPU backend (backend_cpu.c) runs the ops' own forward
 * functions on host memory; the CUDA backend (cuda/, issue 5) provides its own
 * kernels per op behind the same table, so op files never see #ifdefs. */
#ifndef AMD_BACKEND_H
#define AMD_BACKEND_H

#include "../ops/op.h"

typedef struct amd_backend {
  const char *name;
  int (*supports)(const amd_node *n);
  int (*alloc)(amd_tensor *t, amd_status *st); /* zeroed memory for t's shape */
  void (*free)(amd_tensor *t);
  int (*forward)(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                 amd_status *st);
} amd_backend;

extern const amd_backend amd_backend_cpu;

#endif

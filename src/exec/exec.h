/* The CPU forward executor: runs the graph node by node in topological order.
 *
 * For each node: check that its op supports the input dtypes (the op's infer
 * does), infer output shapes from the actual inputs (symbolic dims such as the
 * batch are bound here, on every call), allocate the outputs, run forward,
 * free each intermediate after its last reader. */
#ifndef AMD_EXEC_H
#define AMD_EXEC_H

#include "../core/graph.h"
#include "../ops/op.h"

/* The state of one pass over the graph: a runtime tensor per value. */
typedef struct amd_run {
  const amd_graph *g;
  amd_tensor *vals;       /* per value; initializers and caller inputs are borrowed */
  unsigned char *owned;   /* vals[i] was allocated by this run */
  int *readers;           /* remaining readers during a pass */
  uint64_t *node_rng;     /* ctx->rng before each node's forward (Dropout's backward) */
  int pinned;             /* a value kept even when keep = 0 (-1: none), e.g. the logits */
} amd_run;

int amd_run_init(amd_run *r, const amd_graph *g, amd_status *st);
/* Runs every node. keep = 1 keeps every intermediate (for backward); keep = 0
 * frees each after its last reader (graph outputs stay). The previous pass's
 * tensors are freed first. */
int amd_run_forward(amd_run *r, amd_ctx *ctx, const amd_tensor *inputs, int keep, amd_status *st);
/* Frees the tensors of the last pass (ctx may be NULL: CPU backend). */
void amd_run_clear(amd_run *r, const amd_ctx *ctx);
void amd_run_free(amd_run *r);

/* inputs[i] feeds g->inputs[i]; its dtype and rank must match the declared
 * ones, and each fixed (non-symbolic) declared dim must match. On success
 * outputs[k] (n = g->n_outputs) hold newly allocated host tensors that the
 * caller frees. */
int amd_exec_forward(const amd_graph *g, amd_ctx *ctx, const amd_tensor *inputs, amd_tensor *outputs,
                     amd_status *st);

#endif

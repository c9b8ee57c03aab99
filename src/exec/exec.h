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

/* inputs[i] feeds g->inputs[i]; its dtype and rank must match the declared
 * ones, and each fixed (non-symbolic) declared dim must match. On success
 * outputs[k] (n = g->n_outputs) hold newly allocated host tensors that the
 * caller frees. */
int amd_exec_forward(const amd_graph *g, amd_ctx *ctx, const amd_tensor *inputs, amd_tensor *outputs,
                     amd_status *st);

#endif

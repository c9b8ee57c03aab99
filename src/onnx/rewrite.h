/* Loader passes that shorten the graph without changing what it computes:
 * fewer nodes means fewer passes over the activations, which on the GPU is
 * most of a transformer's time outside its matrix products.
 *
 * - The GELU that PyTorch exports below opset 20 as five nodes,
 *   Div(x, sqrt 2) -> Erf -> Add 1 -> Mul x -> Mul 0.5, becomes one Gelu
 *   node; so does the hand-written x * 0.5 * (1 + erf(x / sqrt 2)) of
 *   older BERT code, whose Mul x 0.5 comes first. Its forward performs the
 *   same float operations in the same order (src/ops/activation.c), so its
 *   output has the chain's bits; its gradient is Gelu's own, computed in
 *   double, where the chain's backward would round at each of its nodes.
 * - A Dropout whose ratio is the constant 0 and an Identity copy their
 *   input: their readers read the input itself and the node goes.
 * A value that is a graph output is never removed, so a model that names
 * an intermediate as an output keeps the nodes that make it. The ModelProto
 * is not touched: a model written back keeps its original nodes. */
#ifndef AMD_REWRITE_H
#define AMD_REWRITE_H

#include "load.h"

/* Both passes, before the topological sort (node outputs' producers set). */
int amd_rewrite_graph(amd_graph *g, amd_status *st);

#endif

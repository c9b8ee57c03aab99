/* A loader pass: Einsum nodes whose equation is a batched matrix product
 * (attention's "bhid,bhjd->bhij") become MatMul nodes, with Transpose nodes
 * where the operands' or the result's axes are in another order, so that
 * their products go through the multiplier (--mode) and the GPU's batched
 * mode GEMM like any MatMul's. Which equations qualify: einsum_matmul.c. */
#ifndef AMD_EINSUM_MATMUL_H
#define AMD_EINSUM_MATMUL_H

#include "load.h"

/* Rewrites g's qualifying Einsum nodes in place (before the topological
 * sort); cap_values is the capacity of g->values (amd_load_add_value). */
int amd_einsum_to_matmul(amd_graph *g, int *cap_values, amd_status *st);

#endif

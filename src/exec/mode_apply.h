/* The multiplier rules of --mode, --mode-map and --backward-mode
 * (mult/mode_map.h) applied to a graph's GEMM nodes. */
#ifndef AMD_MODE_APPLY_H
#define AMD_MODE_APPLY_H

#include "../core/graph.h"
#include "../mult/mode_map.h"

/* Sets node->mult and node->bwd_mult of every Conv / Gemm / MatMul node of g
 * (amd_mode_set_parse, amd_mode_set_pick per GEMM node, then
 * amd_mode_set_check_used: a map key that matches no GEMM node's name or op
 * type is an error). */
int amd_mode_apply(amd_graph *g, const char *mode, const char *map, const char *backward, amd_mode_set *set,
                   amd_status *st);

/* The backward of the nodes quantized on the fly (Conv[q8f], Gemm[q8f],
 * MatMul[q8f]; `train --q8-grad`, docs/quantized.md): grad "ste" (or NULL)
 * the clipped straight-through estimator, "table" the table-derived
 * gradients. Call after amd_mode_apply. Another value is an error, and so is
 * "table" when no node is quantized on the fly (no float Conv / Gemm /
 * MatMul in a q8 mode). */
int amd_q8_grad_apply(amd_graph *g, const char *grad, amd_status *st);

#endif

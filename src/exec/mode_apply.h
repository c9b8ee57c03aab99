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

/* The q8 step of amd_mode_apply alone, for a caller that set node->mult
 * itself (`sweep`): every Conv / Gemm / MatMul whose mult is an 8-bit table
 * mode becomes its q8 internal op (QDQ form) or is quantized on the fly. */
int amd_mode_apply_q8(amd_graph *g, amd_status *st);

/* The backward of the nodes quantized on the fly (Conv[q8f], Gemm[q8f],
 * MatMul[q8f]; `train --q8-grad`, docs/quantized.md): grad "ste" (or NULL)
 * the clipped straight-through estimator, "table" the table-derived
 * gradients. Call after amd_mode_apply. Another value is an error, and so is
 * "table" when no node is quantized on the fly (no float Conv / Gemm /
 * MatMul in a q8 mode). */
int amd_q8_grad_apply(amd_graph *g, const char *grad, amd_status *st);

/* The data range's calibration of those nodes (`--q8-calib`,
 * docs/quantized.md): "minmax" (or NULL, the default) sets *pct = 0,
 * "percentile" *pct = 99.99, "percentile:P" *pct = P (50 < P <= 100);
 * another value is an error. */
int amd_q8_calib_parse(const char *calib, double *pct, amd_status *st);
/* Parses calib and sets it on every node quantized on the fly. Call after
 * amd_mode_apply; a percentile with no such node is an error. */
int amd_q8_calib_apply(amd_graph *g, const char *calib, amd_status *st);

#endif

/* Which multiplier each GEMM node uses: --mode for the whole model,
 * --mode-map NAME_OR_OPTYPE=MODE,... to override nodes (a node's name wins
 * over its op type), --backward-mode exact|MODE for both backward GEMMs
 * (default: each node's forward mode). */
#ifndef AMD_MODE_MAP_H
#define AMD_MODE_MAP_H

#include "../core/graph.h"
#include "mult.h"

typedef struct amd_mode_set {
  amd_mult *mults; /* every multiplier the map names, owned here */
  int n;
} amd_mode_set;

/* Sets node->mult and node->bwd_mult of every Conv / Gemm / MatMul node of g.
 * mode: the default ("acc32" if NULL); map and backward may be NULL. A
 * malformed map, an unknown mode, or a map key that matches no GEMM node's
 * name or op type is an error that lists the valid choices. */
int amd_mode_apply(amd_graph *g, const char *mode, const char *map, const char *backward, amd_mode_set *set,
                   amd_status *st);
void amd_mode_set_free(amd_mode_set *set);
/* The mode name of a node's forward / backward product ("acc32" for NULL). */
const char *amd_mode_of(const amd_mult *m);

#endif

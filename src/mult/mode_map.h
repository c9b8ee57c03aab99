/* Which multiplier each GEMM node uses: --mode for the whole model,
 * --mode-map NAME_OR_OPTYPE=MODE,... to override nodes (a node's name wins
 * over its op type), --backward-mode exact|MODE for both backward GEMMs
 * (default: each node's forward mode).
 *
 * The rules themselves (mode_map.c) know nothing of graphs or ops: they are
 * parsed once, then asked for the multipliers of a GEMM node by its name and
 * op type. amd_mode_apply (src/exec/mode_apply.h), which walks a graph's
 * GEMM nodes with them, needs the op descriptors and lives above mult/. */
#ifndef AMD_MODE_MAP_H
#define AMD_MODE_MAP_H

#include "../core/graph.h"
#include "mult.h"

/* One KEY=MODE entry of --mode-map. */
typedef struct amd_mode_rule {
  char key[256];         /* a node name or an op type */
  const amd_mult *mult;  /* into the set's mults; NULL = acc32 */
  int used;              /* some node matched it */
} amd_mode_rule;

typedef struct amd_mode_set {
  amd_mult *mults; /* every multiplier the map names, owned here */
  int n;
  const amd_mult *def; /* --mode (NULL = acc32) */
  const amd_mult *bwd; /* --backward-mode, when has_bwd (NULL = exact) */
  int has_bwd;
  amd_mode_rule *rules; /* --mode-map, in order, owned here */
  int n_rules;
} amd_mode_set;

/* Parses the rules: mode, the default ("acc32" if NULL); map and backward
 * may be NULL. A malformed map or an unknown mode is an error that lists the
 * valid choices. Free set with amd_mode_set_free, also after an error. */
int amd_mode_set_parse(amd_mode_set *set, const char *mode, const char *map, const char *backward,
                       amd_status *st);
/* The forward and backward multipliers of a GEMM node (Conv, Gemm, MatMul)
 * with this name and op type; marks the map entry it uses. */
void amd_mode_set_pick(amd_mode_set *set, const char *name, const char *op_type, const amd_mult **fwd,
                       const amd_mult **bwd);
/* An error naming the first map entry that no amd_mode_set_pick matched. */
int amd_mode_set_check_used(const amd_mode_set *set, amd_status *st);

void amd_mode_set_free(amd_mode_set *set);
/* The mode name of a node's forward / backward product ("acc32" for NULL). */
const char *amd_mode_of(const amd_mult *m);

#endif

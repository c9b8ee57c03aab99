/* amd_mode_apply (mode_apply.h): the multiplier rules applied to a graph's
 * GEMM nodes. It lives here, not in mult/, because telling GEMM nodes apart
 * and naming their op types takes the op descriptors (ops/op.h), which mult/
 * does not include. */
#include "mode_apply.h"
#include "../ops/op.h"

int amd_mode_apply(amd_graph *g, const char *mode, const char *map, const char *backward, amd_mode_set *set,
                   amd_status *st) {
  if (amd_mode_set_parse(set, mode, map, backward, st)) return -1;
  for (int i = 0; i < g->n_nodes; i++) {
    amd_node *nd = &g->nodes[i];
    if (!nd->op->is_gemm) continue;
    amd_mode_set_pick(set, nd->name, nd->op->name, &nd->mult, &nd->bwd_mult);
  }
  return amd_mode_set_check_used(set, st);
}

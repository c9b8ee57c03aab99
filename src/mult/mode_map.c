/* Per-node multiplier assignment: see mode_map.h. */
#include "mode_map.h"

#include <stdlib.h>
#include <string.h>

#include "../ops/op.h"

#define MAX_ENTRIES 64

const char *amd_mode_of(const amd_mult *m) { return m ? m->name : "acc32"; }

/* Finds or parses a multiplier by name in the set (acc32 is NULL: the fast exact path). */
static int get_mult(amd_mode_set *set, const char *name, const amd_mult **out, amd_status *st) {
  if (strcmp(name, "acc32") == 0 || strcmp(name, "exact") == 0) {
    *out = NULL;
    return 0;
  }
  for (int i = 0; i < set->n; i++)
    if (strcmp(set->mults[i].name, name) == 0) {
      *out = &set->mults[i];
      return 0;
    }
  if (set->n >= MAX_ENTRIES + 2) return amd_fail(st, "too many modes");
  if (amd_mult_parse(name, &set->mults[set->n], st)) return -1;
  *out = &set->mults[set->n++];
  return 0;
}

int amd_mode_apply(amd_graph *g, const char *mode, const char *map, const char *backward, amd_mode_set *set,
                   amd_status *st) {
  memset(set, 0, sizeof *set);
  set->mults = calloc(MAX_ENTRIES + 2, sizeof *set->mults);
  if (!set->mults) return amd_fail(st, "out of memory");
  const amd_mult *def, *bwd = NULL;
  if (get_mult(set, mode ? mode : "acc32", &def, st)) return -1;
  if (backward && get_mult(set, backward, &bwd, st)) return amd_fail_prefix(st, "--backward-mode");
  /* parse KEY=MODE,... */
  char keys[MAX_ENTRIES][256];
  const amd_mult *vals[MAX_ENTRIES];
  int used[MAX_ENTRIES] = {0}, n = 0;
  if (map && map[0]) {
    char *copy = strdup(map), *save = NULL;
    if (!copy) return amd_fail(st, "out of memory");
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
      char *eq = strrchr(tok, '=');
      if (!eq || eq == tok || !eq[1] || n == MAX_ENTRIES) {
        amd_fail(st, "--mode-map: '%s' is not NAME_OR_OPTYPE=MODE (e.g. Conv=am16,/fc/Gemm=acc32; modes: %s)", tok,
                 amd_mult_choices());
        free(copy);
        return -1;
      }
      *eq = 0;
      snprintf(keys[n], sizeof keys[n], "%s", tok);
      if (get_mult(set, eq + 1, &vals[n], st)) {
        amd_fail_prefix(st, "--mode-map entry '%s'", tok);
        free(copy);
        return -1;
      }
      n++;
    }
    free(copy);
  }
  for (int i = 0; i < g->n_nodes; i++) {
    amd_node *nd = &g->nodes[i];
    if (!nd->op->is_gemm) continue;
    const amd_mult *m = def;
    int by_name = -1, by_type = -1;
    for (int k = 0; k < n; k++) {
      if (strcmp(keys[k], nd->name) == 0) by_name = k;
      else if (strcmp(keys[k], nd->op->name) == 0) by_type = k;
    }
    int k = by_name >= 0 ? by_name : by_type;
    if (k >= 0) {
      m = vals[k];
      used[k] = 1;
    }
    nd->mult = m;
    nd->bwd_mult = backward ? bwd : m;
  }
  for (int k = 0; k < n; k++)
    if (!used[k])
      return amd_fail(st, "--mode-map: '%s' names no Conv, Gemm or MatMul node (use a node name from `amdnn-onnx "
                      "info` or the op type Conv, Gemm or MatMul)", keys[k]);
  return 0;
}

void amd_mode_set_free(amd_mode_set *set) {
  for (int i = 0; set->mults && i < set->n; i++) amd_mult_free(&set->mults[i]);
  free(set->mults);
  memset(set, 0, sizeof *set);
}

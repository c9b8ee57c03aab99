/* The rules of per-node multiplier assignment: see mode_map.h (the graph
 * walk, amd_mode_apply, is src/exec/mode_apply.c). */
#include "mode_map.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int amd_mode_set_parse(amd_mode_set *set, const char *mode, const char *map, const char *backward,
                       amd_status *st) {
  memset(set, 0, sizeof *set);
  set->mults = calloc(MAX_ENTRIES + 2, sizeof *set->mults);
  set->rules = calloc(MAX_ENTRIES, sizeof *set->rules);
  if (!set->mults || !set->rules) return amd_fail(st, "out of memory");
  if (get_mult(set, mode ? mode : "acc32", &set->def, st)) return -1;
  set->has_bwd = backward != NULL;
  if (backward && get_mult(set, backward, &set->bwd, st)) return amd_fail_prefix(st, "--backward-mode");
  /* parse KEY=MODE,... */
  if (map && map[0]) {
    char *copy = strdup(map), *save = NULL;
    if (!copy) return amd_fail(st, "out of memory");
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
      char *eq = strrchr(tok, '=');
      if (!eq || eq == tok || !eq[1] || set->n_rules == MAX_ENTRIES) {
        amd_fail(st, "--mode-map: '%s' is not NAME_OR_OPTYPE=MODE (e.g. Conv=am16,/fc/Gemm=acc32; modes: %s)", tok,
                 amd_mult_choices());
        free(copy);
        return -1;
      }
      *eq = 0;
      amd_mode_rule *r = &set->rules[set->n_rules];
      snprintf(r->key, sizeof r->key, "%s", tok);
      if (get_mult(set, eq + 1, &r->mult, st)) {
        amd_fail_prefix(st, "--mode-map entry '%s'", tok);
        free(copy);
        return -1;
      }
      set->n_rules++;
    }
    free(copy);
  }
  return 0;
}

void amd_mode_set_pick(amd_mode_set *set, const char *name, const char *op_type, const amd_mult **fwd,
                       const amd_mult **bwd) {
  const amd_mult *m = set->def;
  int by_name = -1, by_type = -1;
  for (int k = 0; k < set->n_rules; k++) {
    if (strcmp(set->rules[k].key, name) == 0) by_name = k;
    else if (strcmp(set->rules[k].key, op_type) == 0) by_type = k;
  }
  int k = by_name >= 0 ? by_name : by_type;
  if (k >= 0) {
    m = set->rules[k].mult;
    set->rules[k].used = 1;
  }
  *fwd = m;
  *bwd = set->has_bwd ? set->bwd : m;
}

int amd_mode_set_check_used(const amd_mode_set *set, amd_status *st) {
  for (int k = 0; k < set->n_rules; k++)
    if (!set->rules[k].used)
      return amd_fail(st, "--mode-map: '%s' names no Conv, Gemm or MatMul node (use a node name from `amdnn-onnx "
                      "info` or the op type Conv, Gemm or MatMul; for the q8 modes also QLinearConv, "
                      "QLinearMatMul, ConvInteger, MatMulInteger)", set->rules[k].key);
  return 0;
}

void amd_mode_set_free(amd_mode_set *set) {
  for (int i = 0; set->mults && i < set->n; i++) amd_mult_free(&set->mults[i]);
  free(set->mults);
  free(set->rules);
  memset(set, 0, sizeof *set);
}

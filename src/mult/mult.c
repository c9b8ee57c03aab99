/* PLACEHOLDER: only acc32 until the multiplier modes land. */
#include "mult.h"

#include <string.h>

int amd_mult_parse(const char *name, amd_mult *out, amd_status *st) {
  memset(out, 0, sizeof *out);
  if (strcmp(name, "acc32") == 0) {
    strcpy(out->name, "acc32");
    return 0;
  }
  return amd_fail(st, "unknown mode '%s' (valid: %s)", name, amd_mult_choices());
}
void amd_mult_free(amd_mult *m) { (void)m; }
float amd_mult_product(const amd_mult *m, float a, float b) {
  (void)m;
  return a * b;
}
const char *amd_mult_choices(void) { return "acc32"; }

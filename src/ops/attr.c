/* Attribute access for op parsers: typed reads from a node's attribute list
 * (core/attr.h) with defaults. */
#include <string.h>

#include "op.h"

const amd_attr *amd_attr_find(const amd_attr_list *p, const char *name) {
  for (int i = 0; i < p->n; i++)
    if (strcmp(p->a[i].name, name) == 0) return &p->a[i];
  return NULL;
}

int64_t amd_attr_int(const amd_attr_list *p, const char *name, int64_t def) {
  const amd_attr *a = amd_attr_find(p, name);
  return a && a->has_i ? a->i : def;
}

float amd_attr_float(const amd_attr_list *p, const char *name, float def) {
  const amd_attr *a = amd_attr_find(p, name);
  return a && a->has_f ? a->f : def;
}

const char *amd_attr_string(const amd_attr_list *p, const char *name, const char *def, char *buf, size_t n) {
  const amd_attr *a = amd_attr_find(p, name);
  if (!a || !a->has_s) return def;
  size_t len = a->s_len < n - 1 ? a->s_len : n - 1;
  if (len) memcpy(buf, a->s, len); /* an empty string may have no data pointer */
  buf[len] = 0;
  return buf;
}

int amd_attr_ints(const amd_attr_list *p, const char *name, int64_t *out, int max) {
  const amd_attr *a = amd_attr_find(p, name);
  if (!a) return -1;
  if (a->n_ints > (size_t)max) return -2;
  for (size_t i = 0; i < a->n_ints; i++) out[i] = a->ints[i];
  return (int)a->n_ints;
}

int amd_attr_floats(const amd_attr_list *p, const char *name, float *out, int max) {
  const amd_attr *a = amd_attr_find(p, name);
  if (!a) return -1;
  if (a->n_floats > (size_t)max) return -2;
  for (size_t i = 0; i < a->n_floats; i++) out[i] = a->floats[i];
  return (int)a->n_floats;
}

int amd_attr_tensor(const amd_attr_list *p, const char *name, amd_tensor *out, amd_status *st) {
  const amd_attr *a = amd_attr_find(p, name);
  if (!a || !a->t) return 1;
  return amd_tensor_copy(out, a->t, st);
}

int amd_attr_auto_pad(const amd_attr_list *p, int *out, amd_status *st) {
  char buf[32];
  const char *ap = amd_attr_string(p, "auto_pad", "NOTSET", buf, sizeof buf);
  if (strcmp(ap, "NOTSET") == 0 || ap[0] == 0)
    *out = AMD_PAD_NOTSET;
  else if (strcmp(ap, "SAME_UPPER") == 0)
    *out = AMD_PAD_SAME_UPPER;
  else if (strcmp(ap, "SAME_LOWER") == 0)
    *out = AMD_PAD_SAME_LOWER;
  else if (strcmp(ap, "VALID") == 0)
    *out = AMD_PAD_VALID;
  else
    return amd_fail(st, "auto_pad '%s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", ap);
  return 0;
}

void *amd_attrs_new(amd_node *n, size_t size, amd_status *st) {
  n->attrs = calloc(1, size);
  if (!n->attrs) amd_fail(st, "out of memory");
  return n->attrs;
}

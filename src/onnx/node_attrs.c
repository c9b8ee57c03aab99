/* NodeProto attributes -> amd_attr_list (see node_attrs.h). */
#include "node_attrs.h"

#include <stdlib.h>
#include <string.h>

#include "tensor_proto.h"

int amd_node_attrs_from_proto(const Onnx__NodeProto *p, amd_attr_list *out, amd_status *st) {
  memset(out, 0, sizeof *out);
  if (p->n_attribute == 0) return 0;
  out->a = calloc(p->n_attribute, sizeof *out->a);
  out->tensors = calloc(p->n_attribute, sizeof *out->tensors);
  if (!out->a || !out->tensors) {
    amd_node_attrs_free(out);
    return amd_fail(st, "out of memory");
  }
  out->n = (int)p->n_attribute;
  for (int k = 0; k < out->n; k++) {
    const Onnx__AttributeProto *ap = p->attribute[k];
    amd_attr *a = &out->a[k];
    a->name = ap->name ? ap->name : "";
    a->has_i = ap->has_i, a->i = ap->i;
    a->has_f = ap->has_f, a->f = ap->f;
    a->has_s = ap->has_s, a->s = (const char *)ap->s.data, a->s_len = ap->s.len;
    a->ints = ap->ints, a->n_ints = ap->n_ints;
    a->floats = ap->floats, a->n_floats = ap->n_floats;
    if (ap->t) {
      if (amd_tensor_from_proto(ap->t, NULL, &out->tensors[k], st)) {
        amd_node_attrs_free(out);
        return amd_fail_prefix(st, "attribute '%s'", ap->name ? ap->name : "");
      }
      a->t = &out->tensors[k];
    }
  }
  return 0;
}

void amd_node_attrs_free(amd_attr_list *list) {
  for (int k = 0; list->tensors && k < list->n; k++) amd_tensor_free(&list->tensors[k]);
  free(list->tensors);
  free(list->a);
  memset(list, 0, sizeof *list);
}

/* NodeProto attributes -> the plain list the ops parse (core/attr.h). */
#ifndef AMD_NODE_ATTRS_H
#define AMD_NODE_ATTRS_H

#include "../core/attr.h"
#include "../core/status.h"
#include "onnx.pb-c.h"

/* The attributes of p as a list that points into p (names, strings, lists)
 * and owns the converted tensor attributes. Free with amd_node_attrs_free. */
int amd_node_attrs_from_proto(const Onnx__NodeProto *p, amd_attr_list *out, amd_status *st);
void amd_node_attrs_free(amd_attr_list *list);

#endif

/* A node's attributes as the ops' parse functions see them: plain C values,
 * converted from the NodeProto by the loader (src/onnx/node_attrs.c), so that
 * no op depends on the protobuf wire format. The fields follow ONNX's
 * AttributeProto: a scalar attribute sets has_i / has_f / has_s, a list sets
 * its count and pointer. Everything here is valid only during the parse call
 * (ops copy what they keep). */
#ifndef AMD_ATTR_H
#define AMD_ATTR_H

#include <stddef.h>
#include <stdint.h>

#include "tensor.h"

typedef struct amd_attr {
  const char *name;
  int has_i, has_f, has_s;
  int64_t i;
  float f;
  const char *s; /* has_s: s_len bytes, not NUL-terminated */
  size_t s_len;
  const int64_t *ints;
  size_t n_ints;
  const float *floats;
  size_t n_floats;
  const amd_tensor *t; /* a tensor attribute ("value" of Constant), converted; else NULL */
} amd_attr;

typedef struct amd_attr_list {
  amd_attr *a;
  int n;
  amd_tensor *tensors; /* [n]: the storage of the converted tensor attributes (the loader's) */
} amd_attr_list;

#endif

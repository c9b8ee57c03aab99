/* TensorProto <-> amd_tensor: every dtype from raw_data and from the typed
 * fields, external data (path relative to the model's folder, never absolute
 * or with "..", and its real path, symbolic links resolved, inside the
 * folder's), counts checked against dims; and TensorProto files (the .pb
 * files of the ONNX test suite and of `run`). */
#ifndef AMD_TENSOR_PROTO_H
#define AMD_TENSOR_PROTO_H

#include "../core/tensor.h"
#include "onnx.pb-c.h"

/* Converts tp into out (host memory, caller frees). base_dir is the model's
 * folder for external data (NULL: external data is an error). */
int amd_tensor_from_proto(const Onnx__TensorProto *tp, const char *base_dir, amd_tensor *out,
                          amd_status *st);

/* Fills tp (zero-initialised by the caller with onnx__tensor_proto__init) from
 * t, storing the bytes in raw_data. The raw_data points into t->data (no copy):
 * keep t alive while tp is used. */
void amd_tensor_to_proto(const amd_tensor *t, const char *name, Onnx__TensorProto *tp);

/* Reads a whole file (at most max_bytes) into a malloc'd buffer. */
int amd_read_file(const char *path, size_t max_bytes, uint8_t **data, size_t *len, amd_status *st);

/* Reads a serialized TensorProto file. *name (may be NULL) receives a malloc'd
 * copy of the tensor's name ("" when unnamed). */
int amd_tensor_read_file(const char *path, amd_tensor *out, char **name, amd_status *st);
/* Writes t as a serialized TensorProto file, atomically (temp file + rename). */
int amd_tensor_write_file(const char *path, const amd_tensor *t, const char *name, amd_status *st);

#endif

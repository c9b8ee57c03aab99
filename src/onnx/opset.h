/* The opset policy: which implemented version of an op a node binds to.
 *
 * A model imports an opset of the default domain; each of its nodes then has
 * the op's newest ONNX since-version <= that opset (onnx_versions.h lists
 * every since-version ONNX defines, up to AMD_ONNX_NEWEST_OPSET). The node
 * binds to that version when the op implements it (amd_op.since). A newer
 * version the op does not implement binds to an older implemented one only
 * where opset.c's table records that the two agree for everything amdnn-onnx
 * computes (float32 data; in practice: versions that only add data types);
 * otherwise the node is refused, naming the op, its version and the newest
 * version implemented. So no node runs under semantics it was not written
 * for. */
#ifndef AMD_OPSET_H
#define AMD_OPSET_H

#include "../core/status.h"
#include "../ops/op.h"

/* The newest opset whose operator versions are known (onnx_versions.h). */
int amd_onnx_newest_opset(void);

/* The ONNX since-versions of op (ascending, 0-terminated); an empty list when
 * the table has no row for it (a test checks every op has one). */
const int *amd_onnx_versions(const amd_op *op);

/* The since-version a node of op binds to at the model's opset: the op's
 * ONNX version there when implemented, or the implemented version the table
 * of equivalents maps it to. On refusal returns -1 with st set (a message
 * without the node's name; the loader adds it). */
int amd_opset_bind_version(const amd_op *op, int opset, amd_status *st);

/* For listings: the equivalent-version row that covers (op, version), if any:
 * returns the implemented version it binds to and sets *why; 0 if none. */
int amd_opset_equivalent(const amd_op *op, int version, const char **why);

#endif

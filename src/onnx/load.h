/* Loads an ONNX model file into the graph IR (core/graph.h): parses the
 * ModelProto, converts initializers, binds each node to its op descriptor at
 * the model's opset, parses attributes, sorts the nodes topologically, and
 * checks that every input is produced by someone. Every failure is one clear
 * message in st. */
#ifndef AMD_LOAD_H
#define AMD_LOAD_H

#include "../core/graph.h"

/* keep_proto: keep the ModelProto in g->proto for writing the model back. */
int amd_graph_load(const char *path, int keep_proto, amd_graph **out, amd_status *st);
/* Same, from bytes in memory (base_dir for external data, may be NULL). */
int amd_graph_load_bytes(const uint8_t *data, size_t len, const char *base_dir, int keep_proto,
                         amd_graph **out, amd_status *st);
/* Reads the ModelProto of a graph loaded with keep_proto = 0 from its file
 * again (g->path) into g->proto, for amd_graph_write: the writer matches the
 * initializers by name, dtype and dims, so a file changed since the load is
 * refused there. A graph with a proto keeps it. */
int amd_graph_attach_proto(amd_graph *g, amd_status *st);
void amd_graph_free(amd_graph *g);

struct Onnx__NodeProto;
/* Binds node n (name, n_in, n_out already set) to the op of proto p at the
 * given opset and parses its attributes; used by the loader and by op tests. */
int amd_node_bind(amd_node *n, const struct Onnx__NodeProto *p, int opset, amd_status *st);

/* For the loader's rewrite passes: appends a value named name (no producer,
 * unknown dtype and shape) to g->values, whose capacity is *cap (grown as
 * needed); its index, or -1 (st set). */
int amd_load_add_value(amd_graph *g, const char *name, int *cap, amd_status *st);

#endif

/* The graph IR that everything after the loader works on.
 *
 * Values are named tensors (graph inputs, initializers, node outputs); nodes
 * refer to them by index. Nodes are kept in topological order (the loader
 * sorts them and rejects cycles). Each node carries its op descriptor, the
 * opset it was bound at, and its attributes parsed once into the op's own
 * struct. The ModelProto is kept only so that a trained model can be written
 * back; nothing at run time reads it. */
#ifndef AMD_GRAPH_H
#define AMD_GRAPH_H

#include <stdint.h>

#include "tensor.h"

struct amd_op;
struct amd_mult;
struct Onnx__ModelProto;

typedef struct amd_value {
  char *name;
  /* Declared type and shape from the graph's inputs / outputs / value_info
   * (dtype AMD_UNDEFINED and rank -1 when unknown); a symbolic dimension is
   * -1 here, with its name in dim_param. */
  amd_dtype dtype;
  int rank;
  int64_t dims[AMD_MAX_RANK];
  char *dim_param[AMD_MAX_RANK];
  int producer;           /* index of the node that writes it, -1 if none */
  int is_initializer;     /* constant weight: `init` holds it */
  int is_graph_input;     /* fed by the caller (not an initializer) */
  int is_graph_output;
  amd_tensor init;        /* initializer data */
  int init_in_block;      /* init.data points into g->param_block (not freed on its own) */
} amd_value;

typedef struct amd_node {
  char *name;             /* the ONNX node name, or "<op_type>_<index>" when empty */
  const struct amd_op *op;
  int opset;              /* the model's opset for the node's domain */
  int since;              /* the op version this node binds to: highest since-version <= opset */
  int n_in, n_out;
  int *in;                /* value indices; -1 for an omitted optional input */
  int *out;
  void *attrs;            /* the op's parsed attributes (malloc'd block, freed with free) */
  const struct amd_mult *mult;     /* the multiplier of the forward GEMM (NULL = exact fp32) */
  const struct amd_mult *bwd_mult; /* the multiplier of both backward GEMMs (NULL = exact fp32) */
} amd_node;

typedef struct amd_graph {
  amd_value *values;
  int n_values;
  amd_node *nodes;
  int n_nodes;
  int *inputs;            /* values fed by the caller, in graph order */
  int n_inputs;
  int *outputs;           /* graph outputs, in graph order */
  int n_outputs;
  int opset;              /* default-domain opset */
  int64_t ir_version;     /* the ModelProto's */
  char producer[128];     /* producer_name and producer_version, e.g. "pytorch 1.13.1" */
  char *path;             /* the file it was loaded from */
  struct Onnx__ModelProto *proto; /* kept for writing back (NULL when not kept) */
  float *param_block;     /* trainable initializers, contiguous (set by the trainer) */
} amd_graph;

/* Index of the value with this name, or -1. */
int amd_graph_find_value(const amd_graph *g, const char *name);

#endif

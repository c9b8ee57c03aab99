/* Writes a (trained) graph back as an ONNX model that onnxruntime and PyTorch
 * load: the ModelProto the graph was loaded from (g->proto, kept by
 * amd_graph_load with keep_proto = 1) with every initializer's data replaced
 * by the graph's current value. */
#ifndef AMD_WRITE_H
#define AMD_WRITE_H

#include "../core/graph.h"

/* Writes g to path as ONNX.
 *
 * Every initializer of g->proto (same name, dtype and dims, in the original
 * graph order) gets the data of g->values[v].init, stored as raw_data (typed
 * fields and external-data references cleared: external data is written
 * inline). Everything else in the model is kept as loaded.
 *
 * for_inference = 1 turns training-mode nodes into inference nodes:
 *  - BatchNormalization keeps only its first output (opset < 14: the running
 *    and saved mean/var outputs are what mark training mode; opset >= 14:
 *    the training_mode attribute is also set to 0; opset < 7: is_test = 1);
 *    graph outputs and value_info entries of the dropped outputs are removed.
 *    It is an error when another node reads a dropped output.
 *  - Dropout: opset >= 12 drops the optional training_mode input (its default
 *    is false) and the initializer that fed it when nothing else reads it;
 *    opset < 7 sets is_test = 1; opsets 7-11 need nothing.
 *
 * The file is written atomically: a temporary file in the same folder,
 * fsync, rename over path (then the folder is fsync'd). On failure nothing is
 * left behind and path is untouched. g->proto is never modified (the changes
 * are made on shallow copies of the affected messages), so the function can
 * be called again, e.g. after every epoch. Initializer data must be on the
 * host (AMD_DEVICE_CPU). Returns 0, or -1 with a message in st. */
int amd_graph_write(const amd_graph *g, const char *path, int for_inference, amd_status *st);

#endif

/* libFuzzer target: bytes -> amd_graph_load_bytes (no external data, proto
 * not kept); a model that loads is then run once shapes-only (the executor
 * runs only nodes with non-float outputs, so the op parsers, the infer
 * functions and the shape computations are what gets fuzzed) on zero inputs
 * of the declared shapes, symbolic dims bound to 1. Inputs whose declared
 * shape is unknown or larger than 2^20 elements skip the forward. */
#include "../src/exec/exec.h"
#include "../src/onnx/load.h"
#include "fuzz_common.h"

#define MAX_INPUT_ELEMS ((int64_t)1 << 20)

static void forward_shapes_only(const amd_graph *g) {
  amd_tensor *inputs = calloc((size_t)g->n_inputs + 1, sizeof *inputs);
  amd_tensor *outputs = calloc((size_t)g->n_outputs + 1, sizeof *outputs);
  amd_status st = {{0}};
  int ok = inputs && outputs;
  for (int i = 0; ok && i < g->n_inputs; i++) {
    const amd_value *v = &g->values[g->inputs[i]];
    if (v->rank < 0 || amd_dtype_size(v->dtype) == 0) {
      ok = 0;
      break;
    }
    int64_t dims[AMD_MAX_RANK], n = 1;
    for (int d = 0; d < v->rank; d++) {
      dims[d] = v->dims[d] < 0 ? 1 : v->dims[d];
      if (dims[d] > 0 && n > MAX_INPUT_ELEMS / dims[d]) ok = 0;
      n *= dims[d];
    }
    if (!ok || n > MAX_INPUT_ELEMS) {
      ok = 0;
      break;
    }
    amd_tensor_set_shape(&inputs[i], v->dtype, v->rank, dims);
    if (amd_tensor_alloc(&inputs[i], &st)) ok = 0;
  }
  if (ok) {
    amd_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.shapes_only = 1;
    ctx.rng = 1;
    if (amd_exec_forward(g, &ctx, inputs, outputs, &st) == 0) {
      for (int k = 0; k < g->n_outputs; k++) amd_tensor_free(&outputs[k]);
      if (fuzz_verbose()) fprintf(stderr, "forward: ok\n");
    } else if (fuzz_verbose()) {
      fprintf(stderr, "forward: %s\n", st.msg);
    }
  } else if (fuzz_verbose()) {
    fprintf(stderr, "forward: skipped %s\n", st.msg);
  }
  for (int i = 0; inputs && i < g->n_inputs; i++) amd_tensor_free(&inputs[i]);
  free(inputs);
  free(outputs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  amd_graph *g = NULL;
  amd_status st = {{0}};
  if (amd_graph_load_bytes(data, size, NULL, 0, &g, &st) != 0) {
    if (fuzz_verbose()) fprintf(stderr, "load: %s\n", st.msg);
    if (g) abort(); /* contract: *out is NULL on failure */
    return 0;
  }
  if (fuzz_verbose()) fprintf(stderr, "load: ok (%d nodes)\n", g->n_nodes);
  forward_shapes_only(g);
  amd_graph_free(g);
  return 0;
}

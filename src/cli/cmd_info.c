/* `amdnn-onnx info`: what a model is made of. Shapes and MACs come from a
 * shape-only pass at batch 1 (symbolic dims bound to 1): float tensors are not
 * computed, the small integer shape computations are. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../exec/exec.h"
#include "../exec/mode_apply.h"
#include "../onnx/load.h"
#include "cli_util.h"
#include "commands.h"
#ifdef AMD_HAVE_CUDA
#include "../../cuda/backend_cuda.h"
#endif

static const char usage[] =
    "usage: amdnn-onnx info MODEL.onnx [--mode MODE] [--mode-map NAME_OR_OPTYPE=MODE,...]\n"
    "                       [--backward-mode exact|MODE]\n"
    "\n"
    "Prints the model's inputs and outputs with their shapes (symbolic dims by\n"
    "name), the parameter count, the multiply-accumulates per sample, and a node\n"
    "table: output shape at batch 1, MACs, and whether the node runs on the\n"
    "multiplier GEMM (Conv, Gemm, MatMul) or exactly in fp32. With the mode\n"
    "options it shows the multiplier each GEMM node would use, forward / backward.\n";

static void print_value(const amd_value *v) {
  char dims[256];
  size_t k = 0;
  if (v->rank < 0) {
    snprintf(dims, sizeof dims, "(shape unknown)");
  } else {
    k += (size_t)snprintf(dims + k, sizeof dims - k, "[");
    for (int i = 0; i < v->rank && k < sizeof dims; i++) {
      if (v->dim_param[i] && v->dim_param[i][0])
        k += (size_t)snprintf(dims + k, sizeof dims - k, "%s%s", i ? "," : "", v->dim_param[i]);
      else if (v->dims[i] >= 0)
        k += (size_t)snprintf(dims + k, sizeof dims - k, "%s%lld", i ? "," : "", (long long)v->dims[i]);
      else
        k += (size_t)snprintf(dims + k, sizeof dims - k, "%s?", i ? "," : "");
    }
    if (k < sizeof dims) snprintf(dims + k, sizeof dims - k, "]");
  }
  printf("  %-24s %-8s %s\n", v->name, amd_dtype_name(v->dtype == AMD_UNDEFINED ? AMD_FLOAT : v->dtype), dims);
}

int amd_cmd_info(int argc, char **argv) {
  const char *model = NULL, *mode = "acc32", *map = NULL, *bmode = NULL;
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(usage, stdout);
      return 0;
    } else if (strcmp(argv[i], "--mode") == 0 && v) {
      mode = argv[++i];
    } else if (strcmp(argv[i], "--mode-map") == 0 && v) {
      map = argv[++i];
    } else if (strcmp(argv[i], "--backward-mode") == 0 && v) {
      bmode = argv[++i];
    } else if (argv[i][0] == '-' || model) {
      fprintf(stderr, "amdnn-onnx info: unexpected argument '%s'\n\n%s", argv[i], usage);
      return 2;
    } else {
      model = argv[i];
    }
  }
  if (!model) {
    fprintf(stderr, "amdnn-onnx info: a model is required\n\n%s", usage);
    return 2;
  }
  amd_status st = {{0}};
  amd_graph *g = NULL;
  amd_mode_set modes = {0};
  if (amd_graph_load(model, 0, &g, &st) || amd_mode_apply(g, mode, map, bmode, &modes, &st)) {
    fprintf(stderr, "amdnn-onnx info: %s\n", st.msg);
    amd_graph_free(g);
    amd_mode_set_free(&modes);
    return 1;
  }
  printf("model: %s\n", model);
  printf("producer: %s, ir_version %lld, opset %d\n", g->producer, (long long)g->ir_version, g->opset);
  printf("inputs:\n");
  for (int i = 0; i < g->n_inputs; i++) print_value(&g->values[g->inputs[i]]);
  printf("outputs:\n");
  for (int i = 0; i < g->n_outputs; i++) print_value(&g->values[g->outputs[i]]);

  int64_t params = 0;
  int n_init = 0;
  for (int i = 0; i < g->n_values; i++)
    if (g->values[i].is_initializer && g->values[i].init.dtype == AMD_FLOAT) {
      params += amd_tensor_numel(&g->values[i].init);
      n_init++;
    }

  /* shape-only pass at batch 1 */
  amd_cli_node_shape *shapes = calloc((size_t)g->n_nodes + 1, sizeof *shapes);
  int shapes_ok = shapes && amd_cli_shape_pass(g, shapes, &st) == 0;
  if (!shapes) snprintf(st.msg, sizeof st.msg, "out of memory");
  int64_t macs = 0;
  int n_gemm = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    if (g->nodes[i].op->is_gemm) n_gemm++;
    if (shapes) macs += shapes[i].macs;
  }
  printf("parameters: %lld (in %d float initializers)\n", (long long)params, n_init);
  if (shapes_ok)
    printf("MACs per sample: %lld (%d nodes on the multiplier GEMM)\n", (long long)macs, n_gemm);
  else
    printf("MACs per sample: unknown (shape inference stopped: %s)\n", st.msg);
  printf("nodes: %d\n", g->n_nodes);
#ifdef AMD_HAVE_CUDA
  {
    char summary[1400];
    printf("CUDA backend: %s\n", amd_cli_fallback_summary(g, &amd_backend_cuda, summary, sizeof summary));
  }
#endif
  printf("  %4s  %-36s %-20s %-18s %14s  %s\n", "#", "name", "op", "output (batch 1)", "MACs",
         "multiplier (forward / backward)");
  for (int i = 0; i < g->n_nodes; i++) {
    const amd_node *n = &g->nodes[i];
    const amd_cli_node_shape *ni = shapes ? &shapes[i] : NULL;
    char macs_s[32] = "-";
    if (ni && ni->known && n->op->is_gemm) snprintf(macs_s, sizeof macs_s, "%lld", (long long)ni->macs);
    char mult_s[600] = "exact";
    if (n->op->is_gemm)
      snprintf(mult_s, sizeof mult_s, "GEMM %s / %s", amd_mode_of(n->mult), amd_mode_of(n->bwd_mult));
    else if (n->mult && n->mult->q8) /* an integer op or a QDQ node in an 8-bit table mode */
      snprintf(mult_s, sizeof mult_s, "8-bit table %s / -", n->mult->name);
    printf("  %4d  %-36s %-20s %-18s %14s  %s\n", i, n->name, n->op->name, ni && ni->known ? ni->shape : "?",
           macs_s, mult_s);
  }
  free(shapes);
  amd_graph_free(g);
  amd_mode_set_free(&modes);
  return 0;
}

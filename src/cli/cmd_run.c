/* `amdnn-onnx run`: runs a model on TensorProto inputs and writes each output
 * as DIR/<output name>.pb (characters outside [A-Za-z0-9._-] become '_'). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../exec/backend.h"
#include "../exec/exec.h"
#include "../exec/mode_apply.h"
#include "../onnx/load.h"
#include "../onnx/tensor_proto.h"
#include "cli_util.h"
#include "commands.h"

static const char usage[] =
    "usage: amdnn-onnx run MODEL.onnx --input [NAME=]FILE.pb ... --output-dir DIR\n"
    "                      [--mode MODE] [--mode-map NAME_OR_OPTYPE=MODE,...]\n"
    "                      [--q8-calib minmax|percentile[:P]]\n"
    "                      [--device cpu|cuda[:N]] [--gemm fast|exact] [--debug-sync]\n"
    "\n"
    "Runs MODEL on the CPU or a GPU (--device; default cuda when a GPU is\n"
    "present; --debug-sync synchronises after every GPU kernel). Each --input gives one graph input\n"
    "as a serialized TensorProto file; without NAME= the inputs are taken in the\n"
    "graph's order. Each output is written to DIR/<output name>.pb (DIR is\n"
    "created if missing; characters other than letters, digits, '.', '_' and '-'\n"
    "in the name become '_'). --mode sets the multiplier of every Conv, Gemm and\n"
    "MatMul (default acc32), --mode-map overrides it per node name or op type.\n"
    "The 8-bit table modes q8u:FILE / q8s:FILE (or q8u:exact, q8s:exact) run\n"
    "the integer products of a quantized model (QLinearConv, QLinearMatMul,\n"
    "ConvInteger, MatMulInteger, QDQ Conv / Gemm / MatMul) through a 256 x 256\n"
    "product table (docs/quantized.md); a float Conv / Gemm / MatMul is quantized\n"
    "on the fly, its data range calibrated on this one call (--q8-calib, as for\n"
    "train: minmax, the default, or percentile[:P]).\n"
    "The model runs with its own ONNX semantics (a BatchNormalization exported in\n"
    "training mode normalises with the batch's statistics).\n" AMD_CLI_GEMM_HELP;

#define MAX_INPUTS 64

/* The model's inputs from the --input files (spec: FILE, the inputs in order, or NAME=FILE); every input
 * must be given once. */
static int read_inputs(const amd_graph *g, const char *const *in_spec, int n_spec, amd_tensor *inputs,
                       amd_status *st) {
  int have[MAX_INPUTS] = {0};
  for (int s = 0; s < n_spec; s++) {
    const char *eq = strchr(in_spec[s], '='), *file = eq ? eq + 1 : in_spec[s];
    int slot = s;
    if (eq) {
      slot = -1;
      for (int k = 0; k < g->n_inputs; k++) {
        const char *nm = g->values[g->inputs[k]].name;
        if (strlen(nm) == (size_t)(eq - in_spec[s]) && strncmp(nm, in_spec[s], (size_t)(eq - in_spec[s])) == 0)
          slot = k;
      }
      if (slot < 0) return amd_fail(st, "the model has no input named '%.*s'", (int)(eq - in_spec[s]), in_spec[s]);
    } else if (slot >= g->n_inputs) {
      return amd_fail(st, "more inputs given (%d) than the model has (%d)", n_spec, g->n_inputs);
    }
    if (have[slot]) return amd_fail(st, "input '%s' given twice", g->values[g->inputs[slot]].name);
    if (amd_tensor_read_file(file, &inputs[slot], NULL, st)) return -1;
    have[slot] = 1;
  }
  for (int k = 0; k < g->n_inputs; k++)
    if (!have[k]) return amd_fail(st, "no --input given for model input '%s'", g->values[g->inputs[k]].name);
  return 0;
}

int amd_cmd_run(int argc, char **argv) {
  const char *model = NULL, *outdir = NULL, *mode = "acc32", *map = NULL, *device = NULL,
             *q8_calib = NULL;
  int debug_sync = 0;
  const char *in_spec[MAX_INPUTS];
  int n_spec = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(usage, stdout);
      return 0;
    } else if (strcmp(argv[i], "--input") == 0 && i + 1 < argc) {
      if (n_spec == MAX_INPUTS) {
        fprintf(stderr, "amdnn-onnx run: at most %d inputs\n", MAX_INPUTS);
        return 2;
      }
      in_spec[n_spec++] = argv[++i];
    } else if (strcmp(argv[i], "--output-dir") == 0 && i + 1 < argc) {
      outdir = argv[++i];
    } else if (strcmp(argv[i], "--mode") == 0 && i + 1 < argc) {
      mode = argv[++i];
    } else if (strcmp(argv[i], "--mode-map") == 0 && i + 1 < argc) {
      map = argv[++i];
    } else if (strcmp(argv[i], "--q8-calib") == 0 && i + 1 < argc) {
      q8_calib = argv[++i];
      if (amd_cli_check_q8_calib("amdnn-onnx run", q8_calib)) return 2;
    } else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      device = argv[++i];
    } else if (strcmp(argv[i], "--debug-sync") == 0) {
      debug_sync = 1;
    } else if (strcmp(argv[i], "--gemm") == 0 && i + 1 < argc) {
      if (amd_cli_gemm_tier("amdnn-onnx run", argv[++i])) return 2;
    } else if (argv[i][0] == '-') {
      fprintf(stderr, "amdnn-onnx run: unknown or incomplete option '%s'\n\n%s", argv[i], usage);
      return 2;
    } else if (!model) {
      model = argv[i];
    } else {
      fprintf(stderr, "amdnn-onnx run: unexpected argument '%s'\n\n%s", argv[i], usage);
      return 2;
    }
  }
  if (!model || !outdir) {
    fprintf(stderr, "amdnn-onnx run: a model and --output-dir are required\n\n%s", usage);
    return 2;
  }

  amd_status st = {{0}};
  amd_graph *g = NULL;
  amd_tensor inputs[MAX_INPUTS], *outputs = NULL;
  int rc = 1;
  amd_mode_set modes = {0};
  memset(inputs, 0, sizeof inputs);
  if (amd_graph_load(model, 0, &g, &st) || amd_mode_apply(g, mode, map, NULL, &modes, &st) ||
      amd_q8_calib_apply(g, q8_calib, &st))
    goto fail;
  if (g->n_inputs > MAX_INPUTS) {
    amd_fail(&st, "the model has %d inputs (at most %d supported)", g->n_inputs, MAX_INPUTS);
    goto fail;
  }
  if (read_inputs(g, in_spec, n_spec, inputs, &st)) goto fail;
  outputs = calloc((size_t)g->n_outputs, sizeof *outputs);
  if (!outputs) {
    amd_fail(&st, "out of memory");
    goto fail;
  }
  amd_ctx ctx = {0};
  if (amd_cli_backend(device, debug_sync, &ctx.backend, &st)) goto fail;
  amd_cli_backend_note("run", g, ctx.backend);
  if (amd_exec_forward(g, &ctx, inputs, outputs, &st)) goto fail;
  if (amd_make_dir(outdir, st.msg, sizeof st.msg)) goto fail;
  for (int k = 0; k < g->n_outputs; k++) {
    const char *nm = g->values[g->outputs[k]].name;
    char safe[256], path[4096];
    snprintf(path, sizeof path, "%s/%s.pb", outdir, amd_safe_name(nm, safe, sizeof safe));
    if (amd_tensor_write_file(path, &outputs[k], nm, &st)) goto fail;
    char shape[160];
    printf("%s: %s %s -> %s\n", nm, amd_dtype_name(outputs[k].dtype),
           amd_shape_str(&outputs[k], shape, sizeof shape), path);
  }
  rc = 0;
  goto done;
fail:
  fprintf(stderr, "amdnn-onnx run: %s\n", st.msg);
done:
  for (int k = 0; k < MAX_INPUTS; k++) amd_tensor_free(&inputs[k]);
  if (outputs)
    for (int k = 0; k < g->n_outputs; k++) amd_tensor_free(&outputs[k]);
  free(outputs);
  amd_graph_free(g);
  amd_mode_set_free(&modes);
  return rc;
}

/* `amdnn-onnx grad`: the loss and the gradient of every trainable initializer
 * for one batch in training mode (BatchNormalization on batch statistics,
 * Dropout dropping), written as TensorProto files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../exec/backend.h"
#include "../onnx/load.h"
#include "../onnx/tensor_proto.h"
#include "../exec/mode_apply.h"
#include "../train/trainer.h"
#include "cli_util.h"
#include "commands.h"

static const char usage[] =
    "usage: amdnn-onnx grad MODEL.onnx --input X.pb --labels Y.pb --output-dir DIR\n"
    "                       [--mode MODE] [--mode-map NAME_OR_OPTYPE=MODE,...]\n"
    "                       [--backward-mode exact|MODE] [--q8-grad ste|table]\n"
    "                       [--q8-calib minmax|percentile[:P]]\n"
    "                       [--label-smoothing EPS]\n"
    "                       [--device cpu|cuda[:N]] [--gemm fast|exact] [--debug-sync]\n"
    "\n"
    "Runs one batch X (TensorProto, the model's input) with labels Y (int64 or\n"
    "int32 [N]) in training mode, takes the mean softmax cross-entropy of the\n"
    "model's output (of the logits before a final Softmax / LogSoftmax), and\n"
    "writes DIR/loss.pb (float scalar) and DIR/<initializer>.pb, the gradient of\n"
    "every trainable initializer (names with characters other than letters,\n"
    "digits, '.', '_' and '-' written with '_').\n"
    "--mode sets the multiplier of every Conv/Gemm/MatMul (default acc32);\n"
    "--mode-map overrides it for nodes named, or of an op type (Conv, Gemm, MatMul);\n"
    "--backward-mode sets both backward GEMMs (default: each node's forward mode).\n"
    "--q8-grad: the backward of the nodes a q8 mode quantizes on the fly, as for\n"
    "train (ste: straight-through, the default; table: the table's own slopes);\n"
    "--q8-calib: how they calibrate their data range, as for train (minmax, the\n"
    "default, or percentile[:P], P default 99.99; docs/quantized.md).\n"
    "--device runs it on the CPU or a GPU (default: cuda when a GPU is present);\n"
    "--debug-sync synchronises after every GPU kernel.\n" AMD_CLI_GEMM_HELP;

/* Reads labels as int64 [N] (from int64 or int32, [N] or [N,1]). */
static int read_labels(const char *path, int64_t n, int64_t **out, amd_status *st) {
  amd_tensor t;
  if (amd_tensor_read_file(path, &t, NULL, st)) return -1;
  int rc = 0;
  if ((t.dtype != AMD_INT64 && t.dtype != AMD_INT32) || amd_tensor_numel(&t) != n ||
      (t.rank != 1 && !(t.rank == 2 && t.dims[1] == 1)))
    rc = amd_fail(st, "%s: labels must be int64 or int32 [%lld]", path, (long long)n);
  int64_t *l = rc ? NULL : malloc((size_t)(n ? n : 1) * sizeof *l);
  if (!rc && !l) rc = amd_fail(st, "out of memory");
  for (int64_t i = 0; !rc && i < n; i++) l[i] = amd_tensor_get_i64(&t, i);
  amd_tensor_free(&t);
  *out = l;
  return rc;
}

int amd_cmd_grad(int argc, char **argv) {
  const char *model = NULL, *xin = NULL, *yin = NULL, *outdir = NULL, *mode = "acc32", *bmode = NULL, *map = NULL,
             *device = NULL, *q8_grad = NULL, *q8_calib = NULL;
  int debug_sync = 0;
  float smoothing = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int has = i + 1 < argc;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(usage, stdout);
      return 0;
    } else if (!strcmp(a, "--input") && has) xin = argv[++i];
    else if (!strcmp(a, "--labels") && has) yin = argv[++i];
    else if (!strcmp(a, "--output-dir") && has) outdir = argv[++i];
    else if (!strcmp(a, "--mode") && has) mode = argv[++i];
    else if (!strcmp(a, "--backward-mode") && has) bmode = argv[++i];
    else if (!strcmp(a, "--mode-map") && has) map = argv[++i];
    else if (!strcmp(a, "--q8-grad") && has) q8_grad = argv[++i];
    else if (!strcmp(a, "--q8-calib") && has) {
      q8_calib = argv[++i];
      if (amd_cli_check_q8_calib("amdnn-onnx grad", q8_calib)) return 2;
    }
    else if (!strcmp(a, "--device") && has) device = argv[++i];
    else if (!strcmp(a, "--debug-sync")) debug_sync = 1;
    else if (!strcmp(a, "--gemm") && has) {
      if (amd_cli_gemm_tier("amdnn-onnx grad", argv[++i])) return 2;
    }
    else if (!strcmp(a, "--label-smoothing") && has) {
      if (amd_parse_float(argv[++i], &smoothing) || smoothing < 0 || smoothing >= 1) {
        fprintf(stderr, "amdnn-onnx grad: --label-smoothing needs a number in [0, 1)\n");
        return 2;
      }
    } else if (a[0] == '-' || model) {
      fprintf(stderr, "amdnn-onnx grad: unknown or incomplete argument '%s'\n\n%s", a, usage);
      return 2;
    } else model = a;
  }
  if (!model || !xin || !yin || !outdir) {
    fprintf(stderr, "amdnn-onnx grad: MODEL, --input, --labels and --output-dir are required\n\n%s", usage);
    return 2;
  }
  amd_status st = {{0}};
  amd_graph *g = NULL;
  amd_trainer t = {0};
  amd_tensor x = {0};
  int64_t *labels = NULL;
  amd_mode_set modes = {0};
  int rc = 1;
  if (amd_graph_load(model, 0, &g, &st)) goto fail;
  if (amd_mode_apply(g, mode, map, bmode, &modes, &st) || amd_q8_grad_apply(g, q8_grad, &st) ||
      amd_q8_calib_apply(g, q8_calib, &st))
    goto fail;
  if (amd_tensor_read_file(xin, &x, NULL, &st)) goto fail;
  if (x.rank < 1) {
    amd_fail(&st, "%s: the input needs a batch dimension", xin);
    goto fail;
  }
  if (read_labels(yin, x.dims[0], &labels, &st)) goto fail;
  if (amd_trainer_init(&t, g, NULL, &st)) goto fail;
  if (t.warning[0]) fprintf(stderr, "amdnn-onnx grad: warning: %s\n", t.warning);
  const amd_backend *be;
  if (amd_cli_backend(device, debug_sync, &be, &st) || amd_trainer_set_backend(&t, be, &st)) goto fail;
  amd_cli_backend_note("grad", g, be);
  double loss;
  if (amd_trainer_step_grads(&t, &x, labels, smoothing, 1.0f, &loss, NULL, &st)) goto fail;
  if (amd_trainer_sync_host(&t, NULL, 0, &st)) goto fail;
  if (amd_make_dir(outdir, st.msg, sizeof st.msg)) goto fail;
  char path[4096], safe[256];
  amd_tensor lt = {.dtype = AMD_FLOAT, .rank = 0};
  float lf = (float)loss;
  lt.data = &lf;
  snprintf(path, sizeof path, "%s/loss.pb", outdir);
  if (amd_tensor_write_file(path, &lt, "loss", &st)) goto fail;
  for (int p = 0; p < t.n_params; p++) {
    const amd_value *v = &g->values[t.param_value[p]];
    amd_tensor gt = v->init;
    gt.data = t.grads + t.param_offset[p];
    snprintf(path, sizeof path, "%s/%s.pb", outdir, amd_safe_name(v->name, safe, sizeof safe));
    if (amd_tensor_write_file(path, &gt, v->name, &st)) goto fail;
  }
  printf("loss %.7g; gradients of %d initializers (%lld values) in %s\n", loss, t.n_params, (long long)t.n_floats,
         outdir);
  rc = 0;
  goto done;
fail:
  fprintf(stderr, "amdnn-onnx grad: %s\n", st.msg);
done:
  amd_trainer_free(&t);
  amd_graph_free(g);
  amd_tensor_free(&x);
  free(labels);
  amd_mode_set_free(&modes);
  return rc;
}

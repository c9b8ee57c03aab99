/* `amdnn-onnx run` (amdnn_session_run) and `amdnn-onnx grad`
 * (amdnn_session_grad): tensors in from TensorProto files, results out to
 * DIR/<name>.pb. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Reads --input [NAME=]FILE into t (its name: NAME, or NULL to take the
 * model's inputs in order); the caller frees *owned. */
static int read_input(const cli_args *a, const char *spec, amdnn_tensor *t, amdnn_tensor **owned) {
  const char *eq = strchr(spec, '='), *file = eq ? eq + 1 : spec;
  int rc = cli_fail(a, amdnn_tensor_read(file, owned));
  if (rc) return rc;
  *t = **owned;
  t->name = NULL;
  if (eq) {
    char *name = strndup(spec, (size_t)(eq - spec));
    if (!name) {
      fprintf(stderr, "%s: out of memory\n", a->prog);
      return 1;
    }
    free((char *)(*owned)->name);
    (*owned)->name = name;
    t->name = name;
  }
  return 0;
}

/* Writes tensors t[0..n) as DIR/<name>.pb, a line each on stdout. */
static int write_all(const cli_args *a, const amdnn_tensor *t, int n, int quiet) {
  for (int k = 0; k < n; k++) {
    char safe[256], path[4096], shape[160];
    snprintf(path, sizeof path, "%s/%s.pb", a->output_dir, cli_safe_name(t[k].name, safe, sizeof safe));
    int rc = cli_fail(a, amdnn_tensor_write(path, &t[k]));
    if (rc) return rc;
    if (!quiet)
      printf("%s: %s %s -> %s\n", t[k].name, amdnn_dtype_name(t[k].dtype), cli_shape(t[k].rank, t[k].dims, shape, sizeof shape),
             path);
  }
  return 0;
}

int cli_run(const cli_command *cmd, cli_args *a) {
  (void)cmd;
  amdnn_session *s = NULL;
  amdnn_tensor in[CLI_MAX_INPUTS], *owned[CLI_MAX_INPUTS] = {0}, *out = NULL;
  int n_out = 0;
  int rc = cli_open(a, &s);
  for (int k = 0; rc == 0 && k < a->n_inputs; k++) rc = read_input(a, a->inputs[k], &in[k], &owned[k]);
  if (rc == 0) rc = cli_fail(a, amdnn_session_run(s, in, a->n_inputs, &out, &n_out));
  if (rc == 0 && cli_make_dir(a, a->output_dir)) rc = 1;
  if (rc == 0) rc = write_all(a, out, n_out, 0);
  amdnn_tensors_free(out, n_out);
  for (int k = 0; k < a->n_inputs; k++) amdnn_tensors_free(owned[k], owned[k] ? 1 : 0);
  amdnn_session_close(s);
  return rc;
}

int cli_grad(const cli_command *cmd, cli_args *a) {
  (void)cmd;
  if (a->n_inputs != 1) {
    fprintf(stderr, "%s: grad takes one --input (the batch)\n", a->prog);
    return 2;
  }
  amdnn_session *s = NULL;
  amdnn_tensor *x = NULL, *y = NULL, *grads = NULL;
  int n = 0;
  double loss = 0;
  int rc = cli_open(a, &s);
  if (rc == 0) rc = cli_fail(a, amdnn_tensor_read(a->inputs[0], &x));
  if (rc == 0) rc = cli_fail(a, amdnn_tensor_read(a->labels, &y));
  cli_reporter rep;
  const amdnn_callbacks cb = cli_callbacks(&rep, a);
  if (rc == 0) rc = cli_fail(a, amdnn_session_grad(s, x, y, a->call, &cb, &loss, &grads, &n));
  if (rc == 0 && cli_make_dir(a, a->output_dir)) rc = 1;
  float lf = (float)loss;
  const amdnn_tensor lt = {.name = "loss", .dtype = AMDNN_FLOAT, .rank = 0, .data = &lf};
  if (rc == 0) rc = write_all(a, &lt, 1, 1);
  if (rc == 0) rc = write_all(a, grads, n, 1);
  if (rc == 0) {
    int64_t values = 0;
    for (int k = 0; k < n; k++) values += amdnn_tensor_numel(&grads[k]);
    printf("loss %.7g; gradients of %d initializers (%lld values) in %s\n", loss, n, (long long)values, a->output_dir);
  }
  amdnn_tensors_free(grads, n);
  amdnn_tensors_free(x, x ? 1 : 0);
  amdnn_tensors_free(y, y ? 1 : 0);
  amdnn_session_close(s);
  return rc;
}

/* `amdnn-onnx info`: what a model is made of (amdnn_session_info). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void print_value(const amdnn_value_info *v) {
  char dims[256];
  size_t k = 0;
  if (v->rank < 0) {
    snprintf(dims, sizeof dims, "(shape unknown)");
  } else {
    k += (size_t)snprintf(dims + k, sizeof dims - k, "[");
    for (int i = 0; i < v->rank && k < sizeof dims; i++) {
      if (v->dim_names[i]) k += (size_t)snprintf(dims + k, sizeof dims - k, "%s%s", i ? "," : "", v->dim_names[i]);
      else if (v->dims[i] >= 0) k += (size_t)snprintf(dims + k, sizeof dims - k, "%s%lld", i ? "," : "", (long long)v->dims[i]);
      else k += (size_t)snprintf(dims + k, sizeof dims - k, "%s?", i ? "," : "");
    }
    if (k < sizeof dims) snprintf(dims + k, sizeof dims - k, "]");
  }
  printf("  %-24s %-8s %s\n", v->name, amdnn_dtype_name(v->dtype ? v->dtype : AMDNN_FLOAT), dims);
}

static int print_info(amdnn_session *s, const cli_args *a) {
  const amdnn_model_info *m;
  amdnn_status *st = amdnn_session_info(s, &m);
  if (st) return cli_fail(a, st);
  printf("model: %s\n", m->path);
  printf("producer: %s, ir_version %lld, opset %d\n", m->producer, (long long)m->ir_version, m->opset);
  amdnn_value_info v;
  printf("inputs:\n");
  for (int i = 0; i < m->n_inputs; i++)
    if (!(st = amdnn_session_input(s, i, &v))) print_value(&v);
  printf("outputs:\n");
  for (int i = 0; !st && i < m->n_outputs; i++)
    if (!(st = amdnn_session_output(s, i, &v))) print_value(&v);
  if (st) return cli_fail(a, st);
  printf("parameters: %lld (in %d float initializers)\n", (long long)m->parameters, m->n_float_initializers);
  if (m->shapes_known)
    printf("MACs per sample: %lld (%d nodes on the multiplier GEMM)\n", (long long)m->macs, m->n_gemm_nodes);
  else
    printf("MACs per sample: unknown (shape inference stopped: %s)\n", m->shape_note);
  printf("nodes: %d\n", m->n_nodes);
  if (m->device_summary) printf("CUDA backend: %s\n", m->device_summary);
  printf("  %4s  %-36s %-20s %-18s %14s  %s\n", "#", "name", "op", "output (batch 1)", "MACs",
         "multiplier (forward / backward)");
  for (int i = 0; i < m->n_nodes; i++) {
    amdnn_node_info n;
    if ((st = amdnn_session_node(s, i, &n))) return cli_fail(a, st);
    char macs[32] = "-", mult[600] = "exact";
    if (n.on_multiplier && strcmp(n.shape, "?")) snprintf(macs, sizeof macs, "%lld", (long long)n.macs);
    if (n.on_multiplier) snprintf(mult, sizeof mult, "GEMM %s / %s", n.forward_mode, n.backward_mode);
    else if (n.forward_mode) snprintf(mult, sizeof mult, "8-bit table %s / -", n.forward_mode);
    printf("  %4d  %-36s %-20s %-18s %14s  %s\n", i, n.name, n.op_type, n.shape, macs, mult);
  }
  return 0;
}

int cli_info(const cli_command *cmd, cli_args *a) {
  (void)cmd;
  amdnn_session *s;
  int rc = cli_open(a, &s);
  if (rc) return rc;
  rc = print_info(s, a);
  amdnn_session_close(s);
  return rc;
}

/* amd_mode_apply (mode_apply.h): the multiplier rules applied to a graph's
 * GEMM nodes. It lives here, not in mult/, because telling GEMM nodes apart
 * and naming their op types takes the op descriptors (ops/op.h), which mult/
 * does not include.
 *
 * The 8-bit table modes (q8u:FILE, q8s:FILE; docs/quantized.md) apply to
 * integer products only:
 *   - QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger take the rules
 *     too (by name or op type); a q8 mode stays on the node (its forward
 *     passes the table to amd_q8_gemm), a float mode is dropped (these ops
 *     compute exact integer products in every float mode);
 *   - a Conv, Gemm or MatMul in a q8 mode must be in QDQ form: its data
 *     (input 0) and weight (input 1) are outputs of DequantizeLinear nodes,
 *     not blocked, the weight's per-axis scale (if any) along the output
 *     channel. The node then becomes an internal op (Conv[q8], Gemm[q8],
 *     MatMul[q8]: src/ops/qlinear.c) whose inputs are the codes, scales and
 *     zero points of both DequantizeLinear nodes and the node's bias / C;
 *   - any other float Conv / Gemm / MatMul in a q8 mode (not both inputs from
 *     DequantizeLinear) is quantized on the fly: Conv[q8f], Gemm[q8f],
 *     MatMul[q8f] (qlinear.c: per-tensor data range calibrated on the first
 *     batches, per-channel weights); a QDQ node that the q8 modes cannot take
 *     (blocked, weights per another axis, transA) is an error;
 *   - --backward-mode q8... is an error (the q8 modes have no backward).
 * amd_q8_grad_apply then picks the backward of the q8f nodes (train
 * --q8-grad ste|table), amd_q8_calib_apply their calibration (--q8-calib
 * minmax|percentile[:P]). */
#include "mode_apply.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/attrs.h"
#include "../ops/op.h"
#include "../ops/quant.h"

static int is_integer_gemm(const amd_op *op) {
  return op->idx == AMD_OP_IDX_QLinearConv || op->idx == AMD_OP_IDX_QLinearMatMul ||
         op->idx == AMD_OP_IDX_ConvInteger || op->idx == AMD_OP_IDX_MatMulInteger;
}

/* The DequantizeLinear node that produces value v, or NULL. */
static const amd_node *dequant_of(const amd_graph *g, int v) {
  if (v < 0 || g->values[v].producer < 0) return NULL;
  const amd_node *p = &g->nodes[g->values[v].producer];
  return p->op->idx == AMD_OP_IDX_DequantizeLinear ? p : NULL;
}

static int need_quantized(const amd_node *nd, const char *why, amd_status *st) {
  return amd_fail(st,
                  "node '%s' (%s) is in the 8-bit mode %s but %s. Quantize the model with onnxruntime's "
                  "quantize_static (QDQ format, see docs/quantized.md, \"8-bit multipliers\"), or give this node "
                  "a float mode (--mode-map '%s=acc32')",
                  nd->name, nd->op->name, nd->mult->name, why, nd->name);
}

/* Turns a QDQ Conv / Gemm / MatMul into its q8 internal op (see the file
 * comment), or fails naming the node. */
static int rewrite_qdq(amd_graph *g, amd_node *nd, amd_status *st) {
  const int op = nd->op->idx;
  if (nd->n_in < 2) return need_quantized(nd, "has no weight input", st);
  const amd_node *dx = dequant_of(g, nd->in[0]), *dw = dequant_of(g, nd->in[1]);
  if (!dx || !dw) return amd_q8_float_node(nd, st); /* not QDQ: quantized on the fly */
  if (dx->n_in < 2 || dw->n_in < 2 || dx->in[0] < 0 || dw->in[0] < 0 || dx->in[1] < 0 || dw->in[1] < 0)
    return need_quantized(nd, "a DequantizeLinear input is missing", st);
  /* blocked quantization and the weight's axis */
  int64_t axis, block;
  amd_dequant_axis(dx, -1, &axis, &block);
  if (block) return need_quantized(nd, "its data is block-quantized (block_size > 0)", st);
  const amd_value *wv = &g->values[dw->in[0]];
  int wrank = wv->is_initializer ? wv->init.rank : wv->rank;
  amd_dequant_axis(dw, wrank, &axis, &block);
  if (block) return need_quantized(nd, "its weight is block-quantized (block_size > 0)", st);
  const amd_value *ws = &g->values[dw->in[1]];
  /* per axis when the scale has more than one element (a computed scale of
   * unknown shape: left to the run-time checks) */
  int per_axis = ws->is_initializer ? amd_tensor_numel(&ws->init) > 1 : ws->rank == 1 && ws->dims[0] != 1;
  int trans_b = op == AMD_OP_IDX_Gemm ? ((const amd_gemm_attrs *)nd->attrs)->trans_b : 0;
  if (op == AMD_OP_IDX_Gemm && ((const amd_gemm_attrs *)nd->attrs)->trans_a)
    return amd_fail(st, "node '%s' (Gemm) has transA = 1, which the q8 modes do not implement", nd->name);
  int64_t want = op == AMD_OP_IDX_Conv ? 0 : op == AMD_OP_IDX_Gemm ? (trans_b ? 0 : 1) : wrank - 1;
  if (per_axis && wrank >= 0 && axis != want)
    return amd_fail(st,
                    "node '%s' (%s): its weight is quantized per axis %lld, but the q8 modes take per-channel "
                    "weights along the output channel only (axis %lld)",
                    nd->name, nd->op->name, (long long)axis, (long long)want);
  int n_in = op == AMD_OP_IDX_MatMul ? 6 : 7;
  int *in = malloc(sizeof(int) * (size_t)n_in);
  if (!in) return amd_fail(st, "out of memory");
  in[0] = dx->in[0], in[1] = dx->in[1], in[2] = dx->n_in > 2 ? dx->in[2] : -1;
  in[3] = dw->in[0], in[4] = dw->in[1], in[5] = dw->n_in > 2 ? dw->in[2] : -1;
  if (n_in == 7) in[6] = nd->n_in > 2 ? nd->in[2] : -1;
  free(nd->in);
  nd->in = in;
  nd->n_in = n_in;
  nd->op = op == AMD_OP_IDX_Conv ? &amd_op_QdqConv8 : op == AMD_OP_IDX_Gemm ? &amd_op_QdqGemm8 : &amd_op_QdqMatMul8;
  nd->bwd_mult = NULL;
  return 0;
}

int amd_mode_apply(amd_graph *g, const char *mode, const char *map, const char *backward, amd_mode_set *set,
                   amd_status *st) {
  if (amd_mode_set_parse(set, mode, map, backward, st)) return -1;
  if (set->has_bwd && set->bwd && set->bwd->q8)
    return amd_fail(st, "--backward-mode %s: the 8-bit table modes have no backward (they run quantized "
                        "models for inference)", set->bwd->name);
  for (int i = 0; i < g->n_nodes; i++) {
    amd_node *nd = &g->nodes[i];
    if (is_integer_gemm(nd->op)) {
      const amd_mult *bwd;
      amd_mode_set_pick(set, nd->name, nd->op->name, &nd->mult, &bwd);
      if (nd->mult && !nd->mult->q8) nd->mult = NULL; /* float modes: exact integer products */
      continue;
    }
    if (!nd->op->is_gemm) continue;
    amd_mode_set_pick(set, nd->name, nd->op->name, &nd->mult, &nd->bwd_mult);
    if (nd->mult && nd->mult->q8 && rewrite_qdq(g, nd, st)) return -1;
  }
  return amd_mode_set_check_used(set, st);
}

int amd_mode_apply_q8(amd_graph *g, amd_status *st) {
  for (int i = 0; i < g->n_nodes; i++) {
    amd_node *nd = &g->nodes[i];
    if (nd->op->is_gemm && nd->mult && nd->mult->q8 && rewrite_qdq(g, nd, st)) return -1;
  }
  return 0;
}

int amd_q8_grad_apply(amd_graph *g, const char *grad, amd_status *st) {
  int kind;
  if (!grad || strcmp(grad, "ste") == 0) kind = AMD_Q8_GRAD_STE;
  else if (strcmp(grad, "table") == 0) kind = AMD_Q8_GRAD_TABLE;
  else return amd_fail(st, "--q8-grad '%s': expected ste (the straight-through estimator) or table (the "
                           "multiplier table's own difference quotients)", grad);
  int any = 0;
  for (int i = 0; i < g->n_nodes; i++) any += amd_q8_float_set_grad(&g->nodes[i], kind);
  if (kind == AMD_Q8_GRAD_TABLE && !any)
    return amd_fail(st, "--q8-grad table: no node is quantized on the fly (the option applies to float Conv, "
                        "Gemm and MatMul nodes in a q8 mode, --mode q8u:FILE or q8s:FILE)");
  return 0;
}

int amd_q8_calib_parse(const char *calib, double *pct, amd_status *st) {
  static const char pre[] = "percentile";
  const size_t np = sizeof pre - 1;
  *pct = 0;
  if (!calib || strcmp(calib, "minmax") == 0) return 0;
  if (strcmp(calib, pre) == 0) {
    *pct = 99.99;
    return 0;
  }
  if (strncmp(calib, pre, np) == 0 && calib[np] == ':' && calib[np + 1]) {
    char *end;
    errno = 0;
    const double p = strtod(calib + np + 1, &end);
    if (errno == 0 && *end == '\0' && isfinite(p) && p > 50 && p <= 100) {
      *pct = p;
      return 0;
    }
  }
  return amd_fail(st, "--q8-calib '%s': expected minmax or percentile[:P] with 50 < P <= 100 (default P 99.99)",
                  calib);
}

int amd_q8_calib_apply(amd_graph *g, const char *calib, amd_status *st) {
  double pct;
  if (amd_q8_calib_parse(calib, &pct, st)) return -1;
  int any = 0;
  for (int i = 0; i < g->n_nodes; i++) any += amd_q8_float_set_calib(&g->nodes[i], pct);
  if (pct > 0 && !any)
    return amd_fail(st, "--q8-calib %s: no node is quantized on the fly (the option applies to float Conv, Gemm "
                        "and MatMul nodes in a q8 mode, --mode q8u:FILE or q8s:FILE)", calib);
  return 0;
}

/* Finite-difference gradient checks of one op's backward (header-only, for the
 * tests in this folder).
 *
 * gradcheck() builds a one-node graph for the op, runs forward in training
 * mode, takes the loss L = sum_i w_i * out0_i with fixed pseudo-random w,
 * runs backward with dout0 = w, and compares each requested input's gradient
 * with central differences (L(x + h) - L(x - h)) / 2h on up to 64 elements per
 * input. Float inputs use h = 1e-2 and a relative tolerance of `tol`; double
 * inputs h = 1e-5. Choose inputs away from kinks (ReLU at 0, max-pool ties). */
#ifndef AMD_GRADCHECK_H
#define AMD_GRADCHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "onnx/load.h"
#include "ops/op.h"

static int gc_passed = 0, gc_failed = 0;

/* ---- attributes ---- */
static Onnx__AttributeProto *gc_attr_new(const char *name) {
  Onnx__AttributeProto *a = calloc(1, sizeof *a);
  onnx__attribute_proto__init(a);
  a->name = (char *)name;
  return a;
}
static inline Onnx__AttributeProto *gc_attr_int(const char *name, int64_t v) {
  Onnx__AttributeProto *a = gc_attr_new(name);
  a->has_type = 1, a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
  a->has_i = 1, a->i = v;
  return a;
}
static inline Onnx__AttributeProto *gc_attr_float(const char *name, float v) {
  Onnx__AttributeProto *a = gc_attr_new(name);
  a->has_type = 1, a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
  a->has_f = 1, a->f = v;
  return a;
}
/* v must outlive the attribute (a literal) */
static inline Onnx__AttributeProto *gc_attr_string(const char *name, const char *v) {
  Onnx__AttributeProto *a = gc_attr_new(name);
  a->has_type = 1, a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
  a->has_s = 1, a->s.data = (uint8_t *)v, a->s.len = strlen(v);
  return a;
}
static inline Onnx__AttributeProto *gc_attr_ints(const char *name, int n, const int64_t *v) {
  Onnx__AttributeProto *a = gc_attr_new(name);
  a->has_type = 1, a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
  a->n_ints = (size_t)n;
  a->ints = malloc((size_t)n * sizeof *a->ints);
  memcpy(a->ints, v, (size_t)n * sizeof *v);
  return a;
}
static void gc_attrs_free(Onnx__AttributeProto **a, int n) {
  for (int i = 0; i < n; i++) {
    free(a[i]->ints);
    free(a[i]);
  }
}

/* ---- tensors ---- */
static uint64_t gc_rng = 0x9e3779b97f4a7c15ull;
static double gc_uniform(void) { /* [0, 1) */
  gc_rng ^= gc_rng << 13, gc_rng ^= gc_rng >> 7, gc_rng ^= gc_rng << 17;
  return (double)(gc_rng >> 11) / 9007199254740992.0;
}
/* A tensor of the given dtype and shape, uniform in [lo, hi). */
static amd_tensor gc_tensor(amd_dtype dt, int rank, const int64_t *dims, double lo, double hi) {
  amd_tensor t = {0};
  amd_tensor_set_shape(&t, dt, rank, dims);
  amd_status st;
  AMD_ASSERT(amd_tensor_alloc(&t, &st) == 0);
  for (int64_t i = 0; i < amd_tensor_numel(&t); i++) amd_tensor_set_f64(&t, i, lo + (hi - lo) * gc_uniform());
  return t;
}

/* ---- the check ---- */
/* Up to GC_MAX_IN inputs (QLinearConv has 9) and GC_MAX_OUT outputs. */
enum { GC_MAX_IN = 12, GC_MAX_OUT = 8 };
typedef struct gc_node {
  Onnx__NodeProto proto;
  char *in_names[GC_MAX_IN], *out_names[GC_MAX_OUT];
  amd_node node;
  int in_idx[GC_MAX_IN], out_idx[GC_MAX_OUT];
} gc_node;

static int gc_bind(gc_node *g, const char *op, int opset, Onnx__AttributeProto **attrs, int n_attrs,
                   amd_tensor **in, int n_in, int n_out, amd_status *st) {
  static char names[GC_MAX_IN + GC_MAX_OUT][8];
  AMD_ASSERT(n_in <= GC_MAX_IN && n_out <= GC_MAX_OUT);
  memset(g, 0, sizeof *g);
  onnx__node_proto__init(&g->proto);
  g->proto.op_type = (char *)op;
  g->proto.n_input = (size_t)n_in;
  g->proto.input = g->in_names;
  g->proto.n_output = (size_t)n_out;
  g->proto.output = g->out_names;
  g->proto.n_attribute = (size_t)n_attrs;
  g->proto.attribute = attrs;
  for (int k = 0; k < n_in; k++) {
    snprintf(names[k], sizeof names[k], "i%d", k);
    g->in_names[k] = in[k] ? names[k] : (char *)"";
    g->in_idx[k] = in[k] ? k : -1;
  }
  for (int k = 0; k < n_out; k++) {
    snprintf(names[GC_MAX_IN + k], sizeof names[GC_MAX_IN + k], "o%d", k);
    g->out_names[k] = names[GC_MAX_IN + k];
    g->out_idx[k] = GC_MAX_IN + k;
  }
  g->node.name = (char *)op;
  g->node.n_in = n_in;
  g->node.n_out = n_out;
  g->node.in = g->in_idx;
  g->node.out = g->out_idx;
  return amd_node_bind(&g->node, &g->proto, opset, st);
}

/* Forward; returns L = sum w * out0 (w NULL: just fills out). */
static int gc_forward(const amd_node *n, amd_tensor **in, amd_tensor *out, const amd_tensor *w, double *loss,
                      amd_status *st) {
  amd_ctx ctx = {.training = 1, .rng = 12345};
  memset(out, 0, GC_MAX_OUT * sizeof *out); /* out: GC_MAX_OUT tensors */
  if (n->op->infer(n, (const amd_tensor *const *)in, out, st)) return -1;
  for (int o = 0; o < n->n_out; o++)
    if (amd_tensor_alloc(&out[o], st)) return -1;
  if (n->op->forward(n, &ctx, (const amd_tensor *const *)in, out, st)) return -1;
  if (w) {
    double l = 0;
    for (int64_t i = 0; i < amd_tensor_numel(&out[0]); i++) l += amd_tensor_get_f64(w, i) * amd_tensor_get_f64(&out[0], i);
    *loss = l;
  }
  return 0;
}

static void gc_free_outs(amd_tensor *out, int n) {
  for (int o = 0; o < n; o++) amd_tensor_free(&out[o]);
}

/* Checks d(sum w*out0)/d(in[k]) for each k in mask. in[k] may be NULL (omitted input). */
static void gradcheck(const char *label, const char *op, int opset, Onnx__AttributeProto **attrs, int n_attrs,
                      amd_tensor **in, int n_in, int n_out, unsigned mask, double tol) {
  amd_status st = {{0}};
  gc_node g;
  amd_tensor out[8], w = {0}, *din[8] = {0}, grads[8];
  memset(grads, 0, sizeof grads);
  int ok = 1;
  if (gc_bind(&g, op, opset, attrs, n_attrs, in, n_in, n_out, &st) || gc_forward(&g.node, in, out, NULL, NULL, &st)) {
    printf("FAIL %s: %s\n", label, st.msg);
    gc_failed++;
    return;
  }
  if (!g.node.op->backward) {
    printf("FAIL %s: %s has no backward\n", label, op);
    gc_failed++;
    gc_free_outs(out, n_out);
    free(g.node.attrs);
    return;
  }
  w = gc_tensor(out[0].dtype, out[0].rank, out[0].dims, -1, 1);
  for (int k = 0; k < n_in; k++)
    if ((mask >> k) & 1 && in[k]) {
      amd_tensor_set_shape(&grads[k], in[k]->dtype, in[k]->rank, in[k]->dims);
      AMD_ASSERT(amd_tensor_alloc(&grads[k], &st) == 0);
      din[k] = &grads[k];
    }
  const amd_tensor *dout[8] = {&w};
  amd_ctx ctx = {.training = 1, .rng = 12345};
  if (g.node.op->backward(&g.node, &ctx, (const amd_tensor *const *)in, out, dout, din, &st)) {
    printf("FAIL %s: backward: %s\n", label, st.msg);
    ok = 0;
  }
  gc_free_outs(out, n_out);
  for (int k = 0; ok && k < n_in; k++) {
    if (!din[k]) continue;
    int64_t n = amd_tensor_numel(in[k]), stride = n > 64 ? n / 64 : 1;
    int is_double = in[k]->dtype == AMD_DOUBLE;
    double h = is_double ? 1e-5 : 1e-2, worst = 0;
    int checked = 0;
    for (int64_t i = 0; i < n; i += stride) {
      double x0 = amd_tensor_get_f64(in[k], i), lp, lm;
      amd_tensor_set_f64(in[k], i, x0 + h);
      int e1 = gc_forward(&g.node, in, out, &w, &lp, &st);
      gc_free_outs(out, n_out);
      amd_tensor_set_f64(in[k], i, x0 - h);
      int e2 = gc_forward(&g.node, in, out, &w, &lm, &st);
      gc_free_outs(out, n_out);
      amd_tensor_set_f64(in[k], i, x0);
      double num = (lp - lm) / (2 * h), ana = amd_tensor_get_f64(din[k], i);
      double err = fabs(num - ana) / (1 + fabs(num));
      if (e1 || e2) {
        printf("FAIL %s: forward: %s\n", label, st.msg);
        ok = 0;
        break;
      }
      if (err > worst) worst = err;
      if (err > tol && ok) {
        printf("FAIL %s: d/d input %d [%lld]: backward %.6g, finite difference %.6g\n", label, k, (long long)i, ana, num);
        ok = 0;
      }
      checked++;
    }
    if (ok) printf("ok   %s: input %d, %d elements, max rel err %.2e\n", label, k, checked, worst);
  }
  if (ok) gc_passed++;
  else gc_failed++;
  for (int k = 0; k < 8; k++) amd_tensor_free(&grads[k]);
  amd_tensor_free(&w);
  free(g.node.attrs);
}

static int gc_summary(void) {
  printf("%d passed, %d failed\n", gc_passed, gc_failed);
  return gc_failed ? 1 : 0;
}

#endif

/* CUDA backend against the CPU, op by op (GPU suite).
 *
 * For each case: a one-node graph (tests/grad/gradcheck.h builds it), finite
 * random float inputs, forward on the CPU backend and on the CUDA backend
 * (inputs uploaded), outputs compared; then backward with a random dY into
 * gradient buffers pre-filled with random values (backward accumulates), the
 * gradients compared. Native ops must report native() on the CUDA backend (so
 * the kernels, not the host fallback, are what is tested); a few ops without
 * kernels check the host fallback. Tolerance: max |gpu - cpu| <= tol * max(1,
 * max |cpu|) per tensor, tol 1e-5 (2e-4 for GEMM ops, whose sums run in
 * another order; Dropout, the random ops and the pools' gradients are compared
 * exactly: the random ops draw the same numbers on both). The
 * GEMM ops run in acc32 and in am16 (forward and both backward GEMMs).
 * Where an op has several float outputs the test can give each its own dY
 * (dy_all_outputs: SoftmaxCrossEntropyLoss's log_prob). Bad attributes,
 * shapes and indices must fail cleanly, on the GPU as on the CPU, at load,
 * in the forward or in the backward (run_fail_case); the cases after them
 * run on the same GPU state.
 *
 * The training kernels (src/exec/train_kernels.h) the same way: the CUDA set
 * against the CPU reference on random inputs (softmax cross-entropy with and
 * without smoothing and loss scale, finite check, scale, add, every
 * optimizer of the list with its options over a few steps, batch assembly
 * with augmentation), the deferred steps of the CUDA stream against the CPU
 * (loss, step guard), and an unknown optimizer id refused by both sets.
 * Tolerance as above (1e-9 for the mean loss, 1e-6 for the optimizers'
 * parameters and state; scale, add and the batches exactly).
 *
 * Without a usable GPU: prints SKIP and exits 77. `--probe` only does that
 * check (0: a GPU is there), for the scripts of this suite. */
#include "../grad/gradcheck.h"

#include "../../cuda/backend_cuda.h"
#include "core/env.h"
#include "data/dataset.h"
#include "exec/backend.h"
#include "mult/mult.h"
#include "train/batches.h"
#include "train/kernels.h"
#include "train/loss.h"
#include "train/optim.h"

static const amd_backend *gpu;
/* run_case with ctx->relu_out and ctx->add_in set on both sides (fused_ops): the Add's operand on the host
 * for the CPU, on the device for the GPU */
static int case_relu_out;
static const amd_tensor *case_add_host, *case_add_dev;
static int passed, failed;
/* set: run_case gives a random dY to every float output, not only output 0 */
static int dy_all_outputs;
/* ops that some case ran on the GPU's own kernels (native) */
static int covered[AMD_OP_COUNT];

static double max_abs(const amd_tensor *t) {
  double m = 0;
  for (int64_t i = 0; i < amd_tensor_numel(t); i++) m = fmax(m, fabs(amd_tensor_get_f64(t, i)));
  return m;
}

/* Compares host tensor ref with backend tensor got; returns 1 if within tol. */
static int compare(const char *label, const char *what, int k, const amd_tensor *ref, const amd_tensor *got,
                   double tol) {
  amd_status st = {{0}};
  amd_tensor h = {0};
  if (amd_backend_download(gpu, got, &h, &st)) {
    printf("FAIL %s: %s %d: download: %s\n", label, what, k, st.msg);
    return 0;
  }
  int ok = amd_same_shape(ref, &h) && ref->dtype == h.dtype;
  double md = 0, scale = fmax(1.0, max_abs(ref));
  for (int64_t i = 0; ok && i < amd_tensor_numel(ref); i++) {
    double a = amd_tensor_get_f64(ref, i), b = amd_tensor_get_f64(&h, i);
    double d = fabs(a - b);
    if (isnan(a) != isnan(b)) d = INFINITY;
    if (d > md || isnan(d)) md = d;
  }
  ok = ok && md <= tol * scale;
  printf("%s %s: %s %d max |diff| %.3g (tol %.3g)\n", ok ? "ok  " : "FAIL", label, what, k, md, tol * scale);
  amd_tensor_free(&h);
  return ok;
}

/* One case: in[k] host tensors (NULL: omitted); mult for the GEMM ops (NULL: acc32); train: ctx.training. */
/* The GPU's copies of a case's inputs: each float input uploaded into din[k] (dev[k] points at it), index
 * and shape inputs kept on the host (din[k] borrows the host tensor). Returns whether the GPU's kernels take
 * the node (noted in covered[]). */
static int upload_inputs(const gc_node *g, amd_tensor **in, int n_in, amd_tensor *din, amd_tensor **dev) {
  amd_status st = {{0}};
  for (int k = 0; k < n_in; k++) {
    if (!in[k]) continue;
    dev[k] = &din[k];
    if (in[k]->dtype == AMD_FLOAT)
      AMD_ASSERT(amd_backend_upload(gpu, in[k], &din[k], &st) == 0);
    else
      din[k] = *in[k];
  }
  const int native = gpu->compute->supports(&g->node, (const amd_tensor *const *)dev);
  if (native) covered[g->node.op->idx] = 1;
  return native;
}

static void free_inputs(amd_tensor **in, int n_in, amd_tensor *din) {
  for (int k = 0; k < n_in; k++)
    if (in[k] && in[k]->dtype == AMD_FLOAT) gpu->buf->free(&din[k]);
}

/* Gradient buffers of the inputs in grad_mask: cg[k] on the CPU, uniform in [lo, hi] (the backward adds to
 * them), gg[k] its GPU copy; cdin / gdin point at them (NULL for the other inputs). */
static void grad_buffers(amd_tensor **in, int n_in, unsigned grad_mask, double lo, double hi, amd_tensor *cg,
                         amd_tensor *gg, amd_tensor **cdin, amd_tensor **gdin) {
  amd_status st = {{0}};
  for (int k = 0; k < n_in; k++) {
    if (!((grad_mask >> k) & 1) || !in[k]) continue;
    cg[k] = gc_tensor(AMD_FLOAT, in[k]->rank, in[k]->dims, lo, hi);
    AMD_ASSERT(amd_backend_upload(gpu, &cg[k], &gg[k], &st) == 0);
    cdin[k] = &cg[k];
    gdin[k] = &gg[k];
  }
}

static void free_grads(int n_in, amd_tensor *cg, amd_tensor *gg) {
  for (int k = 0; k < n_in; k++) {
    amd_tensor_free(&cg[k]);
    if (gg[k].data) gpu->buf->free(&gg[k]);
  }
}

static void run_case(const char *label, const char *op, int opset, Onnx__AttributeProto **attrs, int n_attrs,
                     amd_tensor **in, int n_in, int n_out, const amd_mult *mult, unsigned grad_mask,
                     int train, int want_native, double tol) {
  amd_status st = {{0}};
  gc_node g;
  int ok = 1;
  if (gc_bind(&g, op, opset, attrs, n_attrs, in, n_in, n_out, &st)) {
    printf("FAIL %s: bind: %s\n", label, st.msg);
    failed++;
    return;
  }
  g.node.mult = g.node.bwd_mult = mult;
  amd_tensor din_in[8], *dev_in[8] = {0}, cpu_out[8], gpu_out[8];
  memset(din_in, 0, sizeof din_in);
  memset(cpu_out, 0, sizeof cpu_out);
  memset(gpu_out, 0, sizeof gpu_out);
  const int native = upload_inputs(&g, in, n_in, din_in, dev_in);
  if (native != want_native) {
    printf("FAIL %s: native() = %d, expected %d\n", label, native, want_native);
    ok = 0;
  }
  amd_ctx cctx = {.training = train, .inference = !train, .rng = 777, .relu_out = case_relu_out}, gctx = cctx;
  cctx.add_in = case_add_host, gctx.add_in = case_add_dev;
  if (amd_backend_forward_node(&amd_backend_cpu, &g.node, &cctx, (const amd_tensor *const *)in, cpu_out, 0,
                               &st)) {
    printf("FAIL %s: cpu forward: %s\n", label, st.msg);
    failed++;
    goto done;
  }
  if (amd_backend_forward_node(gpu, &g.node, &gctx, (const amd_tensor *const *)dev_in, gpu_out, 0, &st)) {
    printf("FAIL %s: gpu forward: %s\n", label, st.msg);
    failed++;
    goto done;
  }
  for (int o = 0; o < n_out; o++)
    if (cpu_out[o].dtype == AMD_FLOAT) ok &= compare(label, "output", o, &cpu_out[o], &gpu_out[o], tol);
  if (cctx.rng != gctx.rng) {
    printf("FAIL %s: rng after forward differs\n", label);
    ok = 0;
  }
  if (grad_mask && g.node.op->backward) {
    amd_tensor dy[8], ddy[8];
    const amd_tensor *cdo[8] = {0}, *gdo[8] = {0};
    memset(dy, 0, sizeof dy);
    memset(ddy, 0, sizeof ddy);
    for (int o = 0; o < n_out; o++) {
      if (o > 0 && !(dy_all_outputs && cpu_out[o].dtype == AMD_FLOAT)) continue;
      dy[o] = gc_tensor(AMD_FLOAT, cpu_out[o].rank, cpu_out[o].dims, -1, 1);
      AMD_ASSERT(amd_backend_upload(gpu, &dy[o], &ddy[o], &st) == 0);
      cdo[o] = &dy[o];
      gdo[o] = &ddy[o];
    }
    amd_tensor cg[8], gg[8], *cdin[8] = {0}, *gdin[8] = {0};
    memset(cg, 0, sizeof cg);
    memset(gg, 0, sizeof gg);
    grad_buffers(in, n_in, grad_mask, -0.5, 0.5, cg, gg, cdin, gdin);
    cctx.rng = gctx.rng = 777;
    int rc = amd_backend_backward_node(&amd_backend_cpu, &g.node, &cctx, (const amd_tensor *const *)in,
                                       cpu_out, cdo, cdin, &st);
    if (rc) printf("FAIL %s: cpu backward: %s\n", label, st.msg);
    if (rc == 0 && (rc = amd_backend_backward_node(gpu, &g.node, &gctx, (const amd_tensor *const *)dev_in,
                                                   gpu_out, gdo, gdin, &st)))
      printf("FAIL %s: gpu backward: %s\n", label, st.msg);
    if (rc) ok = 0;
    for (int k = 0; rc == 0 && k < n_in; k++)
      if (cdin[k]) ok &= compare(label, "gradient of input", k, &cg[k], &gg[k], tol);
    /* again, the GPU writing over unzeroed (NaN) gradient buffers where the
     * backend says its backward can (the trainer's fresh buffers), the CPU
     * adding to zeros */
    const unsigned ow =
        gpu->compute->bwd_overwrite ? gpu->compute->bwd_overwrite(&g.node, (const amd_tensor *const *)dev_in) : 0;
    if (rc == 0 && (ow & grad_mask)) {
      for (int k = 0; k < n_in; k++) {
        if (!cdin[k]) continue;
        amd_tensor_free(&cg[k]);
        gpu->buf->free(&gg[k]);
        amd_tensor h = {0};
        amd_tensor_set_shape(&cg[k], AMD_FLOAT, in[k]->rank, in[k]->dims);
        amd_tensor_set_shape(&h, AMD_FLOAT, in[k]->rank, in[k]->dims);
        AMD_ASSERT(amd_tensor_alloc(&cg[k], &st) == 0 && amd_tensor_alloc(&h, &st) == 0); /* zeros */
        if ((ow >> k) & 1)
          for (int64_t e = 0; e < amd_tensor_numel(&h); e++) ((float *)h.data)[e] = NAN;
        AMD_ASSERT(amd_backend_upload(gpu, &h, &gg[k], &st) == 0);
        amd_tensor_free(&h);
      }
      cctx.rng = gctx.rng = 777;
      gctx.bwd_overwrite = ow & grad_mask;
      rc = amd_backend_backward_node(&amd_backend_cpu, &g.node, &cctx, (const amd_tensor *const *)in, cpu_out,
                                     cdo, cdin, &st) ||
           amd_backend_backward_node(gpu, &g.node, &gctx, (const amd_tensor *const *)dev_in, gpu_out, gdo,
                                     gdin, &st);
      gctx.bwd_overwrite = 0;
      if (rc) {
        printf("FAIL %s: backward writing over the gradient buffers: %s\n", label, st.msg);
        ok = 0;
      }
      for (int k = 0; rc == 0 && k < n_in; k++)
        if (cdin[k])
          ok &= compare(label, (ow >> k) & 1 ? "gradient (written over NaN) of input" : "gradient of input",
                        k, &cg[k], &gg[k], tol);
    }
    free_grads(n_in, cg, gg);
    for (int o = 0; o < n_out; o++) {
      if (!cdo[o]) continue;
      amd_tensor_free(&dy[o]);
      gpu->buf->free(&ddy[o]);
    }
  }
  ok ? passed++ : failed++;
done:
  for (int o = 0; o < n_out; o++) {
    amd_tensor_free(&cpu_out[o]);
    if (gpu_out[o].data) gpu->buf->free(&gpu_out[o]);
  }
  free_inputs(in, n_in, din_in);
  free(g.node.attrs);
}

/* A case that must fail cleanly, on the GPU as on the CPU: stage -1, the
 * node refused at load (a bad attribute); stage 0, its forward fails (a bad
 * shape or index) on both backends with a message; stage 1, the forward
 * runs and the backward (dY into the inputs of grad_mask) fails on both.
 * want_native: whether the GPU's kernels (1) or the host fallback (0) take
 * the node (-1: either). The cases after it run on the same GPU state. */
static void run_fail_case(const char *label, const char *op, int opset, Onnx__AttributeProto **attrs,
                          int n_attrs, amd_tensor **in, int n_in, int n_out, int stage, unsigned grad_mask,
                          int want_native) {
  amd_status st = {{0}}, sc = {{0}}, sg = {{0}};
  gc_node g;
  const int bind_rc = gc_bind(&g, op, opset, attrs, n_attrs, in, n_in, n_out, &st);
  if (stage < 0 || bind_rc) {
    const int ok = stage < 0 && bind_rc != 0 && st.msg[0];
    printf("%s %s: refused at load: %s\n", ok ? "ok  " : "FAIL", label, bind_rc ? st.msg : "(loaded)");
    ok ? passed++ : failed++;
    free(g.node.attrs); /* a parse that failed may have made them */
    return;
  }
  amd_tensor din_in[8], *dev_in[8] = {0}, cpu_out[8], gpu_out[8];
  memset(din_in, 0, sizeof din_in);
  memset(cpu_out, 0, sizeof cpu_out);
  memset(gpu_out, 0, sizeof gpu_out);
  const int native = upload_inputs(&g, in, n_in, din_in, dev_in);
  int ok = want_native < 0 || native == want_native;
  amd_ctx cctx = {.training = 1, .rng = 777}, gctx = cctx;
  const int fc = amd_backend_forward_node(&amd_backend_cpu, &g.node, &cctx, (const amd_tensor *const *)in,
                                          cpu_out, 0, &sc);
  const int fg =
      amd_backend_forward_node(gpu, &g.node, &gctx, (const amd_tensor *const *)dev_in, gpu_out, 0, &sg);
  if (stage == 0) {
    ok = ok && fc != 0 && fg != 0 && sg.msg[0];
  } else if (fc || fg) {
    ok = 0;
  } else { /* stage 1: the backward must fail */
    amd_tensor dy = gc_tensor(AMD_FLOAT, cpu_out[0].rank, cpu_out[0].dims, -1, 1), ddy = {0};
    AMD_ASSERT(amd_backend_upload(gpu, &dy, &ddy, &st) == 0);
    amd_tensor cg[8], gg[8], *cdin[8] = {0}, *gdin[8] = {0};
    memset(cg, 0, sizeof cg);
    memset(gg, 0, sizeof gg);
    grad_buffers(in, n_in, grad_mask, 0, 0, cg, gg, cdin, gdin);
    const amd_tensor *cdo[8] = {&dy}, *gdo[8] = {&ddy};
    const int bc = amd_backend_backward_node(&amd_backend_cpu, &g.node, &cctx, (const amd_tensor *const *)in,
                                             cpu_out, cdo, cdin, &sc);
    const int bg = amd_backend_backward_node(gpu, &g.node, &gctx, (const amd_tensor *const *)dev_in, gpu_out,
                                             gdo, gdin, &sg);
    ok = ok && bc != 0 && bg != 0 && sg.msg[0];
    free_grads(n_in, cg, gg);
    amd_tensor_free(&dy);
    gpu->buf->free(&ddy);
  }
  printf("%s %s: %s fails (native() = %d): cpu \"%s\", cuda \"%s\"\n", ok ? "ok  " : "FAIL", label,
         stage ? "backward" : "forward", native, sc.msg, sg.msg);
  ok ? passed++ : failed++;
  for (int o = 0; o < n_out; o++) {
    if (!fc) amd_tensor_free(&cpu_out[o]);
    if (!fg && gpu_out[o].data) gpu->buf->free(&gpu_out[o]);
  }
  free_inputs(in, n_in, din_in);
  free(g.node.attrs);
}

static amd_tensor T(int rank, const int64_t *dims, double lo, double hi) {
  return gc_tensor(AMD_FLOAT, rank, dims, lo, hi);
}
static amd_tensor I64(int n, const int64_t *v) {
  int64_t d[1] = {n};
  amd_tensor t = {0};
  amd_tensor_set_shape(&t, AMD_INT64, 1, d);
  amd_status st;
  AMD_ASSERT(amd_tensor_alloc(&t, &st) == 0);
  memcpy(t.data, v, (size_t)n * sizeof *v);
  return t;
}
static void FREE(amd_tensor **in, int n) {
  for (int k = 0; k < n; k++)
    if (in[k]) amd_tensor_free(in[k]);
}

static void gemm_ops(const amd_mult *m, const char *mname) {
  char label[128];
  { /* Conv 3x3 pad 1, bias */
    int64_t xd[4] = {2, 3, 9, 9}, wd[4] = {4, 3, 3, 3}, bd[1] = {4}, pads[4] = {1, 1, 1, 1};
    amd_tensor x = T(4, xd, -1, 1), w = T(4, wd, -1, 1), b = T(1, bd, -1, 1), *in[3] = {&x, &w, &b};
    Onnx__AttributeProto *a[1] = {gc_attr_ints("pads", 4, pads)};
    snprintf(label, sizeof label, "Conv 3x3 pad1 bias %s", mname);
    run_case(label, "Conv", 13, a, 1, in, 3, 1, m, 7, 1, 1, 2e-4);
    gc_attrs_free(a, 1);
    FREE(in, 3);
  }
  { /* Conv 3x3 pad 1, bias, 16x16: the 16-byte copies of the output, and im2col rows over several blocks */
    int64_t xd[4] = {20, 4, 16, 16}, wd[4] = {8, 4, 3, 3}, bd[1] = {8}, pads[4] = {1, 1, 1, 1};
    amd_tensor x = T(4, xd, -1, 1), w = T(4, wd, -1, 1), b = T(1, bd, -1, 1), *in[3] = {&x, &w, &b};
    Onnx__AttributeProto *a[1] = {gc_attr_ints("pads", 4, pads)};
    snprintf(label, sizeof label, "Conv 3x3 pad1 bias 16x16 %s", mname);
    run_case(label, "Conv", 13, a, 1, in, 3, 1, m, 7, 1, 1, 2e-4);
    gc_attrs_free(a, 1);
    FREE(in, 3);
  }
  { /* Conv stride 2, dilation 2, asymmetric pads, groups 2 */
    int64_t xd[4] = {3, 4, 11, 10}, wd[4] = {6, 2, 3, 2}, s[2] = {2, 1}, dl[2] = {2, 1}, p[4] = {1, 0, 2, 1};
    amd_tensor x = T(4, xd, -1, 1), w = T(4, wd, -1, 1), *in[2] = {&x, &w};
    Onnx__AttributeProto *a[4] = {gc_attr_ints("strides", 2, s), gc_attr_ints("dilations", 2, dl),
                                  gc_attr_ints("pads", 4, p), gc_attr_int("group", 2)};
    snprintf(label, sizeof label, "Conv strided dilated group2 %s", mname);
    run_case(label, "Conv", 13, a, 4, in, 2, 1, m, 3, 1, 1, 2e-4);
    gc_attrs_free(a, 4);
    FREE(in, 2);
  }
  { /* depthwise 3x3 stride 2 pad 1, bias */
    int64_t xd[4] = {2, 5, 8, 8}, wd[4] = {5, 1, 3, 3}, bd[1] = {5}, s[2] = {2, 2}, p[4] = {1, 1, 1, 1};
    amd_tensor x = T(4, xd, -1, 1), w = T(4, wd, -1, 1), b = T(1, bd, -1, 1), *in[3] = {&x, &w, &b};
    Onnx__AttributeProto *a[3] = {gc_attr_ints("strides", 2, s), gc_attr_ints("pads", 4, p),
                                  gc_attr_int("group", 5)};
    snprintf(label, sizeof label, "Conv depthwise %s", mname);
    run_case(label, "Conv", 13, a, 3, in, 3, 1, m, 7, 1, 1, 2e-4);
    gc_attrs_free(a, 3);
    FREE(in, 3);
  }
  { /* 1x1 */
    int64_t xd[4] = {2, 8, 5, 5}, wd[4] = {16, 8, 1, 1};
    amd_tensor x = T(4, xd, -1, 1), w = T(4, wd, -1, 1), *in[2] = {&x, &w};
    snprintf(label, sizeof label, "Conv 1x1 %s", mname);
    run_case(label, "Conv", 13, NULL, 0, in, 2, 1, m, 3, 1, 1, 2e-4);
    FREE(in, 2);
  }
  { /* 1x1 over 24x24 and 23x23 images: the pointwise path (one GEMM per image, no im2col / col2im), with a
     * bias (16-byte adds) and without (an odd number of positions) */
    int64_t xd[4] = {3, 8, 24, 24}, wd[4] = {12, 8, 1, 1}, bd[1] = {12};
    amd_tensor x = T(4, xd, -1, 1), w = T(4, wd, -1, 1), b = T(1, bd, -1, 1), *in[3] = {&x, &w, &b};
    snprintf(label, sizeof label, "Conv 1x1 pointwise 24x24 bias %s", mname);
    run_case(label, "Conv", 13, NULL, 0, in, 3, 1, m, 7, 1, 1, 2e-4);
    FREE(in, 3);
    int64_t xo[4] = {2, 5, 23, 23}, wo[4] = {7, 5, 1, 1};
    amd_tensor x2 = T(4, xo, -1, 1), w2 = T(4, wo, -1, 1), *in2[2] = {&x2, &w2};
    snprintf(label, sizeof label, "Conv 1x1 pointwise 23x23 %s", mname);
    run_case(label, "Conv", 13, NULL, 0, in2, 2, 1, m, 3, 1, 1, 2e-4);
    FREE(in2, 2);
  }
  { /* Gemm transB bias row */
    int64_t ad[2] = {6, 20}, bd[2] = {7, 20}, cd[1] = {7};
    amd_tensor A = T(2, ad, -1, 1), B = T(2, bd, -1, 1), C = T(1, cd, -1, 1), *in[3] = {&A, &B, &C};
    Onnx__AttributeProto *a[1] = {gc_attr_int("transB", 1)};
    snprintf(label, sizeof label, "Gemm transB bias %s", mname);
    run_case(label, "Gemm", 13, a, 1, in, 3, 1, m, 7, 1, 1, 2e-4);
    gc_attrs_free(a, 1);
    FREE(in, 3);
  }
  { /* Gemm transA, alpha, beta, full C */
    int64_t ad[2] = {9, 5}, bd[2] = {9, 4}, cd[2] = {5, 4};
    amd_tensor A = T(2, ad, -1, 1), B = T(2, bd, -1, 1), C = T(2, cd, -1, 1), *in[3] = {&A, &B, &C};
    Onnx__AttributeProto *a[3] = {gc_attr_int("transA", 1), gc_attr_float("alpha", 0.5f),
                                  gc_attr_float("beta", 2.0f)};
    snprintf(label, sizeof label, "Gemm transA alpha beta %s", mname);
    run_case(label, "Gemm", 13, a, 3, in, 3, 1, m, 7, 1, 1, 2e-4);
    gc_attrs_free(a, 3);
    FREE(in, 3);
  }
  { /* Gemm bias row over 300 rows (the bias gradient's column sums in several slices), and a scalar C */
    int64_t ad[2] = {300, 9}, bd[2] = {9, 70}, cd[1] = {70}, sd[1] = {1};
    amd_tensor A = T(2, ad, -1, 1), B = T(2, bd, -1, 1), C = T(1, cd, -1, 1), S = T(1, sd, -1, 1);
    amd_tensor *in[3] = {&A, &B, &C}, *ins[3] = {&A, &B, &S};
    snprintf(label, sizeof label, "Gemm bias over 300 rows %s", mname);
    run_case(label, "Gemm", 13, NULL, 0, in, 3, 1, m, 7, 1, 1, 2e-4);
    snprintf(label, sizeof label, "Gemm scalar C %s", mname);
    run_case(label, "Gemm", 13, NULL, 0, ins, 3, 1, m, 7, 1, 1, 2e-4);
    amd_tensor *all[4] = {&A, &B, &C, &S};
    FREE(all, 4);
  }
  { /* Gemm column C [M,1] */
    int64_t ad[2] = {4, 6}, bd[2] = {6, 3}, cd[2] = {4, 1};
    amd_tensor A = T(2, ad, -1, 1), B = T(2, bd, -1, 1), C = T(2, cd, -1, 1), *in[3] = {&A, &B, &C};
    snprintf(label, sizeof label, "Gemm column C %s", mname);
    run_case(label, "Gemm", 13, NULL, 0, in, 3, 1, m, 7, 1, 1, 2e-4);
    FREE(in, 3);
  }
  { /* MatMul 2-D and batched with a shared B, and a broadcast batch */
    int64_t ad[3] = {3, 4, 6}, bd[2] = {6, 5};
    amd_tensor A = T(3, ad, -1, 1), B = T(2, bd, -1, 1), *in[2] = {&A, &B};
    snprintf(label, sizeof label, "MatMul shared B %s", mname);
    run_case(label, "MatMul", 13, NULL, 0, in, 2, 1, m, 3, 1, 1, 2e-4);
    FREE(in, 2);
    int64_t a2[4] = {2, 1, 3, 4}, b2[3] = {3, 4, 5};
    amd_tensor A2 = T(4, a2, -1, 1), B2 = T(3, b2, -1, 1), *in2[2] = {&A2, &B2};
    snprintf(label, sizeof label, "MatMul broadcast batch %s", mname);
    run_case(label, "MatMul", 13, NULL, 0, in2, 2, 1, m, 3, 1, 1, 2e-4);
    FREE(in2, 2);    /* attention: both operands carry the whole batch (one strided batched GEMM each way) */
    int64_t a3[4] = {2, 3, 5, 8}, b3[4] = {2, 3, 8, 7};
    amd_tensor A3 = T(4, a3, -1, 1), B3 = T(4, b3, -1, 1), *in3[2] = {&A3, &B3};
    snprintf(label, sizeof label, "MatMul attention batch %s", mname);
    run_case(label, "MatMul", 13, NULL, 0, in3, 2, 1, m, 3, 1, 1, 2e-4);
    FREE(in3, 2);
    /* a shared A against a batched B: forward batched with stride 0, dA summed over the batch */
    int64_t a4[2] = {4, 6}, b4[3] = {5, 6, 3};
    amd_tensor A4 = T(2, a4, -1, 1), B4 = T(3, b4, -1, 1), *in4[2] = {&A4, &B4};
    snprintf(label, sizeof label, "MatMul shared A %s", mname);
    run_case(label, "MatMul", 13, NULL, 0, in4, 2, 1, m, 3, 1, 1, 2e-4);
    FREE(in4, 2);
  }
}

/* Conv with an Add of res (and a Relu) fused in, against the CPU doing the same */
static void fused_add_case(const char *label, amd_tensor **in, int n_in, const int64_t *yd) {
  amd_status st;
  amd_tensor res = T(4, yd, -1, 1), dres = {0};
  AMD_ASSERT(amd_backend_upload(gpu, &res, &dres, &st) == 0);
  case_add_host = &res, case_add_dev = &dres;
  run_case(label, "Conv", 13, NULL, 0, in, n_in, 1, NULL, 0, 0, 1, 2e-4);
  case_add_host = case_add_dev = NULL;
  gpu->buf->free(&dres);
  amd_tensor_free(&res);
}

/* A Relu fused into Conv and Add, an Add into Conv (ctx->relu_out, ctx->add_in; src/exec/exec.c): forward
 * only, against the CPU doing the same. Conv: the im2col path's output reordering (16-byte and 4-byte), the
 * pointwise path's pass over its output (bias, Add, Relu, or some of them); Add: the same-shape and the
 * broadcast kernels. */
static void fused_ops(void) {
  case_relu_out = 1;
  int64_t xd[4] = {20, 4, 16, 16}, wd[4] = {8, 4, 3, 3}, bd[1] = {8}, pads[4] = {1, 1, 1, 1};
  amd_tensor x = T(4, xd, -1, 1), w = T(4, wd, -1, 1), b = T(1, bd, -1, 1), *in[3] = {&x, &w, &b};
  Onnx__AttributeProto *a[1] = {gc_attr_ints("pads", 4, pads)};
  run_case("Conv 3x3 pad1 bias 16x16, Relu fused", "Conv", 13, a, 1, in, 3, 1, NULL, 0, 0, 1, 2e-4);
  gc_attrs_free(a, 1);
  FREE(in, 3);
  int64_t x5[4] = {2, 3, 5, 5}, w5[4] = {4, 3, 3, 3};
  amd_tensor x2 = T(4, x5, -1, 1), w2 = T(4, w5, -1, 1), *in2[2] = {&x2, &w2};
  run_case("Conv 3x3 5x5 no bias, Relu fused", "Conv", 13, NULL, 0, in2, 2, 1, NULL, 0, 0, 1, 2e-4);
  FREE(in2, 2);
  int64_t xp[4] = {3, 8, 24, 24}, wp[4] = {12, 8, 1, 1}, bp[1] = {12}, xo[4] = {2, 5, 23, 23},
          wo[4] = {7, 5, 1, 1};
  amd_tensor x3 = T(4, xp, -1, 1), w3 = T(4, wp, -1, 1), b3 = T(1, bp, -1, 1), *in3[3] = {&x3, &w3, &b3};
  run_case("Conv 1x1 pointwise 24x24 bias, Relu fused", "Conv", 13, NULL, 0, in3, 3, 1, NULL, 0, 0, 1, 2e-4);
  FREE(in3, 3);
  amd_tensor x4 = T(4, xo, -1, 1), w4 = T(4, wo, -1, 1), *in4[2] = {&x4, &w4};
  run_case("Conv 1x1 pointwise 23x23 no bias, Relu fused", "Conv", 13, NULL, 0, in4, 2, 1, NULL, 0, 0, 1,
           2e-4);
  FREE(in4, 2);
  int64_t ed[4] = {4, 6, 8, 8}, cd[4] = {1, 6, 1, 1};
  amd_tensor ea = T(4, ed, -1, 1), eb = T(4, ed, -1, 1), ec = T(4, cd, -1, 1);
  amd_tensor *same[2] = {&ea, &eb}, *chan[2] = {&ea, &ec};
  run_case("Add same shape, Relu fused", "Add", 14, NULL, 0, same, 2, 1, NULL, 0, 0, 1, 1e-6);
  run_case("Add [N,C,H,W] + [1,C,1,1], Relu fused", "Add", 14, NULL, 0, chan, 2, 1, NULL, 0, 0, 1, 1e-6);
  amd_tensor_free(&ea), amd_tensor_free(&eb), amd_tensor_free(&ec);
  for (int relu = 1; relu >= 0; relu--) {
    case_relu_out = relu;
    char label[96];
    int64_t xa[4] = {6, 4, 8, 8}, wa[4] = {8, 4, 3, 3}, ba[1] = {8}, ya[4] = {6, 8, 6, 6};
    amd_tensor x5 = T(4, xa, -1, 1), w5 = T(4, wa, -1, 1), b5 = T(1, ba, -1, 1), *in5[3] = {&x5, &w5, &b5};
    snprintf(label, sizeof label, "Conv 3x3 bias + residual%s", relu ? ", Relu fused" : "");
    fused_add_case(label, in5, 3, ya);
    FREE(in5, 3);
    int64_t xq[4] = {3, 8, 24, 24}, wq[4] = {12, 8, 1, 1}, yq[4] = {3, 12, 24, 24};
    amd_tensor x6 = T(4, xq, -1, 1), w6 = T(4, wq, -1, 1), *in6[2] = {&x6, &w6};
    snprintf(label, sizeof label, "Conv 1x1 pointwise 24x24 + residual%s", relu ? ", Relu fused" : "");
    fused_add_case(label, in6, 2, yq);
    FREE(in6, 2);
  }
  case_relu_out = 0;
}

static void other_ops(void) {
  int64_t xd[4] = {4, 3, 6, 6};
  { /* BatchNormalization: training (with running statistics out) and inference */
    int64_t cd[1] = {3};
    amd_tensor x = T(4, xd, -2, 2), s = T(1, cd, 0.5, 1.5), b = T(1, cd, -1, 1), m = T(1, cd, -0.2, 0.2),
               v = T(1, cd, 0.5, 2), *in[5] = {&x, &s, &b, &m, &v};
    Onnx__AttributeProto *a[1] = {gc_attr_float("momentum", 0.9f)};
    run_case("BatchNormalization training", "BatchNormalization", 15, a, 1, in, 5, 3, NULL, 7, 1, 1, 1e-5);
    run_case("BatchNormalization inference", "BatchNormalization", 15, a, 1, in, 5, 1, NULL, 7, 0, 1, 1e-5);
    run_case("BatchNormalization-9 training, 5 outputs", "BatchNormalization", 9, a, 1, in, 5, 5, NULL, 7, 1,
             1, 1e-5);
    case_relu_out = 1; /* a Relu fused into it (src/exec/exec.c), forward only */
    run_case("BatchNormalization inference, Relu fused", "BatchNormalization", 15, a, 1, in, 5, 1, NULL, 0, 0,
             1, 1e-5);
    run_case("BatchNormalization training, Relu fused", "BatchNormalization", 15, a, 1, in, 5, 3, NULL, 0, 1,
             1, 1e-5);
    case_relu_out = 0;
    gc_attrs_free(a, 1);
    FREE(in, 5);
  }
  { /* BatchNormalization wide enough that every channel's sums are split over
       several blocks, with an odd spatial size and a mean far from zero */
    int64_t wd[4] = {64, 20, 9, 9}, cd[1] = {20};
    amd_tensor x = T(4, wd, 3, 5), s = T(1, cd, 0.5, 1.5), b = T(1, cd, -1, 1), m = T(1, cd, -0.2, 0.2),
               v = T(1, cd, 0.5, 2), *in[5] = {&x, &s, &b, &m, &v};
    Onnx__AttributeProto *a[1] = {gc_attr_float("momentum", 0.9f)};
    run_case("BatchNormalization training, split sums", "BatchNormalization", 15, a, 1, in, 5, 3, NULL, 7, 1,
             1, 1e-5);
    run_case("BatchNormalization inference, split sums", "BatchNormalization", 15, a, 1, in, 5, 1, NULL, 7, 0,
             1, 1e-5);
    gc_attrs_free(a, 1);
    FREE(in, 5);
  }
  { /* LayerNormalization: every per-row layout (a warp per row up to 256 columns, a block of 128,
       256 or 512 threads with the row in registers up to 4096, the row read twice beyond), with
       and without B, over the last axis and over two; Mean and InvStdDev out; rows far from
       zero; enough rows that dScale / dB are summed over several slices; a broadcast Scale
       takes the host fallback */
    int64_t d96[3] = {4, 7, 96}, p96[1] = {96}, d768[3] = {16, 24, 32}, p768[2] = {24, 32};
    int64_t d2304[3] = {6, 48, 48}, p2304[2] = {48, 48}, dwide[3] = {3, 96, 96}, pwide[2] = {96, 96};
    int64_t dtall[2] = {512, 96}, pb[2] = {1, 32};
    amd_tensor x1 = T(3, d96, -2, 2), s1 = T(1, p96, 0.5, 1.5), b1 = T(1, p96, -1, 1);
    amd_tensor x2 = T(3, d768, 3, 5), s2 = T(2, p768, 0.5, 1.5), b2 = T(2, p768, -1, 1);
    amd_tensor x3 = T(3, d2304, -2, 2), s3 = T(2, p2304, 0.5, 1.5);
    amd_tensor x4 = T(3, dwide, -2, 2), s4 = T(2, pwide, 0.5, 1.5), b4 = T(2, pwide, -1, 1);
    amd_tensor x5 = T(2, dtall, 100, 101), sb = T(2, pb, 0.5, 1.5);
    amd_tensor *in1b[3] = {&x1, &s1, &b1}, *in1n[2] = {&x1, &s1}, *in2[3] = {&x2, &s2, &b2},
               *in3[2] = {&x3, &s3}, *in4[3] = {&x4, &s4, &b4}, *in5[3] = {&x5, &s1, &b1},
               *inb[3] = {&x2, &sb, &b2};
    Onnx__AttributeProto *a1[1] = {gc_attr_int("axis", 1)};
    run_case("LayerNormalization axis -1, 96 columns (warp per row), 3 outputs", "LayerNormalization", 17,
             NULL, 0, in1b, 3, 3, NULL, 7, 1, 1, 1e-6);
    run_case("LayerNormalization axis -1, no B", "LayerNormalization", 17, NULL, 0, in1n, 2, 1, NULL, 3, 1, 1,
             1e-6);
    run_case("LayerNormalization axis 1 (two dims, 768 columns), x in [3, 5)", "LayerNormalization", 17, a1, 1,
             in2, 3, 3, NULL, 7, 1, 1, 1e-6);
    run_case("LayerNormalization axis 1 (two dims, 2304 columns), no B", "LayerNormalization", 17, a1, 1, in3,
             2, 1, NULL, 3, 1, 1, 1e-6);
    run_case("LayerNormalization axis 1 (9216 columns: the row read twice)", "LayerNormalization", 17, a1, 1,
             in4, 3, 3, NULL, 7, 1, 1, 1e-6);
    run_case("LayerNormalization 512 rows at 100 (sliced dScale, dB)", "LayerNormalization", 17, NULL, 0, in5,
             3, 1, NULL, 7, 1, 1, 1e-6);
    run_case("LayerNormalization Scale [1,32] broadcast (host fallback)", "LayerNormalization", 17, a1, 1, inb,
             3, 1, NULL, 7, 1, 0, 1e-6);
    gc_attrs_free(a1, 1);
    amd_tensor *all[13] = {&x1, &s1, &b1, &x2, &s2, &b2, &x3, &s3, &x4, &s4, &b4, &x5, &sb};
    FREE(all, 13);
  }
  amd_tensor x = T(4, xd, -2, 2), *in1[1] = {&x};
  run_case("Relu", "Relu", 14, NULL, 0, in1, 1, 1, NULL, 1, 1, 1, 1e-6);
  run_case("Sigmoid", "Sigmoid", 13, NULL, 0, in1, 1, 1, NULL, 1, 1, 1, 1e-5);
  {
    /* over all three pieces of each: x in [-5, 5) */
    amd_tensor w = T(4, xd, -5, 5), *inw[1] = {&w};
    Onnx__AttributeProto *h[2] = {gc_attr_float("alpha", 0.25f), gc_attr_float("beta", 0.4f)};
    run_case("HardSigmoid", "HardSigmoid", 6, h, 2, inw, 1, 1, NULL, 1, 1, 1, 1e-6);
    gc_attrs_free(h, 2);
    run_case("HardSwish", "HardSwish", 14, NULL, 0, inw, 1, 1, NULL, 1, 1, 1, 1e-6);
    amd_tensor_free(&w);
  }
  run_case("Tanh", "Tanh", 13, NULL, 0, in1, 1, 1, NULL, 1, 1, 1, 1e-5);
  run_case("Erf", "Erf", 13, NULL, 0, in1, 1, 1, NULL, 1, 1, 1, 1e-6);
  { /* Exp, Neg, Abs over [-3, 3]; Log, Sqrt, Reciprocal over positive inputs */
    int64_t ud[2] = {6, 41};
    amd_tensor wide = T(2, ud, -3, 3), pos = T(2, ud, 0.2, 4), *iw[1] = {&wide}, *ip[1] = {&pos};
    run_case("Exp", "Exp", 13, NULL, 0, iw, 1, 1, NULL, 1, 1, 1, 1e-6);
    run_case("Neg", "Neg", 13, NULL, 0, iw, 1, 1, NULL, 1, 1, 1, 0);
    run_case("Abs", "Abs", 13, NULL, 0, iw, 1, 1, NULL, 1, 1, 1, 0);
    run_case("Log", "Log", 13, NULL, 0, ip, 1, 1, NULL, 1, 1, 1, 1e-6);
    run_case("Sqrt", "Sqrt", 13, NULL, 0, ip, 1, 1, NULL, 1, 1, 1, 1e-6);
    run_case("Reciprocal", "Reciprocal", 13, NULL, 0, ip, 1, 1, NULL, 1, 1, 1, 1e-6);
    amd_tensor_free(&wide);
    amd_tensor_free(&pos);
  }
  run_case("Gelu", "Gelu", 20, NULL, 0, in1, 1, 1, NULL, 1, 1, 1, 1e-6);
  {
    Onnx__AttributeProto *ga[1] = {gc_attr_string("approximate", "tanh")};
    run_case("Gelu tanh", "Gelu", 20, ga, 1, in1, 1, 1, NULL, 1, 1, 1, 1e-6);
    gc_attrs_free(ga, 1);
  }
  { /* unary.c's float ops on the activation kernels, each over its domain */
    int64_t ud[2] = {7, 33};
    amd_tensor wide = T(2, ud, -3, 3), unit = T(2, ud, -0.9, 0.9), above1 = T(2, ud, 1.2, 3),
               tanr = T(2, ud, -1.2, 1.2);
    amd_tensor *iw[1] = {&wide}, *iu[1] = {&unit}, *ia[1] = {&above1}, *it[1] = {&tanr};
    Onnx__AttributeProto *al[1] = {gc_attr_float("alpha", 0.7f)},
                         *sg[2] = {gc_attr_float("alpha", 1.5f), gc_attr_float("gamma", 1.2f)};
    Onnx__AttributeProto *sh[2] = {gc_attr_float("lambd", 0.6f), gc_attr_float("bias", 0.25f)};
    run_case("Elu", "Elu", 6, al, 1, iw, 1, 1, NULL, 1, 1, 1, 1e-5);
    run_case("Selu", "Selu", 6, sg, 2, iw, 1, 1, NULL, 1, 1, 1, 1e-5);
    run_case("Celu", "Celu", 12, al, 1, iw, 1, 1, NULL, 1, 1, 1, 1e-5);
    run_case("Softplus", "Softplus", 1, NULL, 0, iw, 1, 1, NULL, 1, 1, 1, 1e-5);
    run_case("Softsign", "Softsign", 1, NULL, 0, iw, 1, 1, NULL, 1, 1, 1, 1e-5);
    run_case("ThresholdedRelu", "ThresholdedRelu", 10, al, 1, iw, 1, 1, NULL, 1, 1, 1, 1e-6);
    run_case("Mish", "Mish", 18, NULL, 0, iw, 1, 1, NULL, 1, 1, 1, 1e-5);
    run_case("Shrink", "Shrink", 9, sh, 2, iw, 1, 1, NULL, 1, 1, 1, 1e-6);
    run_case("Ceil (zero gradient)", "Ceil", 13, NULL, 0, iw, 1, 1, NULL, 1, 1, 1, 0);
    run_case("Floor (zero gradient)", "Floor", 13, NULL, 0, iw, 1, 1, NULL, 1, 1, 1, 0);
    run_case("Round (zero gradient)", "Round", 11, NULL, 0, iw, 1, 1, NULL, 1, 1, 1, 0);
    run_case("Sign (zero gradient)", "Sign", 13, NULL, 0, iw, 1, 1, NULL, 1, 1, 1, 0);
    run_case("Sin", "Sin", 7, NULL, 0, iw, 1, 1, NULL, 1, 1, 1, 1e-5);
    run_case("Cos", "Cos", 7, NULL, 0, iw, 1, 1, NULL, 1, 1, 1, 1e-5);
    run_case("Tan", "Tan", 7, NULL, 0, it, 1, 1, NULL, 1, 1, 1, 1e-5);
    run_case("Asin", "Asin", 7, NULL, 0, iu, 1, 1, NULL, 1, 1, 1, 1e-5);
    run_case("Acos", "Acos", 7, NULL, 0, iu, 1, 1, NULL, 1, 1, 1, 1e-5);
    run_case("Atan", "Atan", 7, NULL, 0, iw, 1, 1, NULL, 1, 1, 1, 1e-5);
    run_case("Sinh", "Sinh", 9, NULL, 0, iw, 1, 1, NULL, 1, 1, 1, 1e-5);
    run_case("Cosh", "Cosh", 9, NULL, 0, iw, 1, 1, NULL, 1, 1, 1, 1e-5);
    run_case("Asinh", "Asinh", 9, NULL, 0, iw, 1, 1, NULL, 1, 1, 1, 1e-5);
    run_case("Acosh", "Acosh", 9, NULL, 0, ia, 1, 1, NULL, 1, 1, 1, 1e-5);
    run_case("Atanh", "Atanh", 9, NULL, 0, iu, 1, 1, NULL, 1, 1, 1, 1e-5);
    gc_attrs_free(al, 1);
    gc_attrs_free(sg, 2);
    gc_attrs_free(sh, 2);
    amd_tensor_free(&wide);
    amd_tensor_free(&unit);
    amd_tensor_free(&above1);
    amd_tensor_free(&tanr);
  }
  { /* Sum and Mean: two inputs on the elementwise kernels (equal shapes, and
       broadcast), three on the host fallback */
    int64_t ad[3] = {4, 5, 6}, bd[2] = {5, 1};
    amd_tensor a = T(3, ad, -2, 2), a2 = T(3, ad, -2, 2), b = T(2, bd, -2, 2);
    amd_tensor *same[2] = {&a, &a2}, *bc[2] = {&a, &b}, *three[3] = {&a, &b, &a2};
    run_case("Sum, equal shapes", "Sum", 13, NULL, 0, same, 2, 1, NULL, 3, 1, 1, 1e-6);
    run_case("Sum, broadcast", "Sum", 13, NULL, 0, bc, 2, 1, NULL, 3, 1, 1, 1e-6);
    run_case("Mean, equal shapes", "Mean", 13, NULL, 0, same, 2, 1, NULL, 3, 1, 1, 1e-6);
    run_case("Mean, broadcast", "Mean", 13, NULL, 0, bc, 2, 1, NULL, 3, 1, 1, 1e-6);
    run_case("Mean of three (host fallback)", "Mean", 13, NULL, 0, three, 3, 1, NULL, 7, 1, 0, 1e-6);
    amd_tensor_free(&a);
    amd_tensor_free(&a2);
    amd_tensor_free(&b);
  }
  {
    Onnx__AttributeProto *a[1] = {gc_attr_float("alpha", 0.1f)};
    run_case("LeakyRelu", "LeakyRelu", 16, a, 1, in1, 1, 1, NULL, 1, 1, 1, 1e-6);
    gc_attrs_free(a, 1);
    Onnx__AttributeProto *c[2] = {gc_attr_float("min", -0.5f), gc_attr_float("max", 1.0f)};
    run_case("Clip-6 (attributes)", "Clip", 6, c, 2, in1, 1, 1, NULL, 1, 1, 1, 1e-6);
    gc_attrs_free(c, 2);
    amd_tensor lo = T(0, NULL, -0.7, -0.7), hi = T(0, NULL, 0.9, 0.9), *in3[3] = {&x, &lo, &hi};
    run_case("Clip-13 (min/max inputs, staged on the host)", "Clip", 13, NULL, 0, in3, 3, 1, NULL, 1, 1, 1,
             1e-6);
    amd_tensor_free(&lo);
    amd_tensor_free(&hi);
  }
  { /* pools */
    int64_t k3[2] = {3, 3}, s2[2] = {2, 2}, p1[4] = {1, 1, 1, 1}, k2[2] = {2, 2}, p01[4] = {0, 1, 1, 0};
    Onnx__AttributeProto *a[3] = {gc_attr_ints("kernel_shape", 2, k3), gc_attr_ints("strides", 2, s2),
                                  gc_attr_ints("pads", 4, p1)};
    run_case("MaxPool 3x3 s2 p1", "MaxPool", 12, a, 3, in1, 1, 1, NULL, 1, 1, 1, 0);
    run_case("AveragePool 3x3 s2 p1", "AveragePool", 11, a, 3, in1, 1, 1, NULL, 1, 1, 1, 1e-6);
    gc_attrs_free(a, 3);
    Onnx__AttributeProto *b[4] = {gc_attr_ints("kernel_shape", 2, k2), gc_attr_ints("pads", 4, p01),
                                  gc_attr_int("ceil_mode", 1), gc_attr_int("count_include_pad", 1)};
    run_case("AveragePool 2x2 ceil count_include_pad", "AveragePool", 11, b, 4, in1, 1, 1, NULL, 1, 1, 1,
             1e-6);
    run_case("MaxPool 2x2 ceil", "MaxPool", 12, b, 3, in1, 1, 1, NULL, 1, 1, 1, 0);
    gc_attrs_free(b, 4);
    /* windows that do not overlap (kernel <= stride): the backward's one-thread-per-window path */
    int64_t s3[2] = {3, 3};
    Onnx__AttributeProto *c[2] = {gc_attr_ints("kernel_shape", 2, k2), gc_attr_ints("strides", 2, s2)};
    run_case("MaxPool 2x2 s2", "MaxPool", 12, c, 2, in1, 1, 1, NULL, 1, 1, 1, 0);
    gc_attrs_free(c, 2);
    Onnx__AttributeProto *d[4] = {gc_attr_ints("kernel_shape", 2, k2), gc_attr_ints("strides", 2, s2),
                                  gc_attr_ints("pads", 4, p01), gc_attr_int("ceil_mode", 1)};
    run_case("MaxPool 2x2 s2 pads ceil", "MaxPool", 12, d, 4, in1, 1, 1, NULL, 1, 1, 1, 0);
    gc_attrs_free(d, 4);
    Onnx__AttributeProto *e[2] = {gc_attr_ints("kernel_shape", 2, k2), gc_attr_ints("strides", 2, s3)};
    run_case("MaxPool 2x2 s3", "MaxPool", 12, e, 2, in1, 1, 1, NULL, 1, 1, 1, 0);
    gc_attrs_free(e, 2);
    run_case("GlobalAveragePool", "GlobalAveragePool", 1, NULL, 0, in1, 1, 1, NULL, 1, 1, 1, 1e-6);
    run_case("GlobalMaxPool", "GlobalMaxPool", 1, NULL, 0, in1, 1, 1, NULL, 1, 1, 1, 0);
  }
  { /* elementwise */
    int64_t cd[4] = {1, 3, 1, 1}, rd[1] = {6};
    amd_tensor y = T(4, xd, 0.5, 2), c = T(4, cd, 0.5, 2), r = T(1, rd, 0.5, 2);
    amd_tensor *same[2] = {&x, &y}, *chan[2] = {&x, &c}, *row[2] = {&r, &x};
    const char *ops[4] = {"Add", "Sub", "Mul", "Div"};
    for (int i = 0; i < 4; i++) {
      char label[96];
      snprintf(label, sizeof label, "%s same shape", ops[i]);
      run_case(label, ops[i], 14, NULL, 0, same, 2, 1, NULL, 3, 1, 1, 1e-6);
      snprintf(label, sizeof label, "%s [N,C,H,W] op [1,C,1,1]", ops[i]);
      run_case(label, ops[i], 14, NULL, 0, chan, 2, 1, NULL, 3, 1, 1, 1e-6);
      snprintf(label, sizeof label, "%s [W] op [N,C,H,W]", ops[i]);
      run_case(label, ops[i], 14, NULL, 0, row, 2, 1, NULL, 3, 1, 1, 1e-6);
    }
    amd_tensor_free(&y);
    amd_tensor_free(&c);
    amd_tensor_free(&r);
  }
  { /* the broadcast operand's gradient as column sums (a bias [C] over 300 rows: several slices; a
       position embedding [1,N,C]), as row sums (a per-channel scale [B,C,1,1], as in
       squeeze-and-excitation) and as one row (a scalar) */
    int64_t xd2[2] = {300, 70}, bd2[1] = {70}, pd[3] = {5, 65, 12}, pe[3] = {1, 65, 12};
    int64_t sd[4] = {4, 6, 5, 7}, sc[4] = {4, 6, 1, 1}, one[1] = {1};
    amd_tensor bx = T(2, xd2, -1, 1), bb = T(1, bd2, 0.5, 2), px = T(3, pd, -1, 1), pp = T(3, pe, 0.5, 2),
               sx = T(4, sd, -1, 1), ss = T(4, sc, 0.5, 2), s1 = T(1, one, 0.5, 2);
    amd_tensor *bias[2] = {&bx, &bb}, *pos[2] = {&px, &pp}, *scale[2] = {&sx, &ss}, *scal[2] = {&s1, &sx};
    /* an attention scale (a scalar over [B*heads, L, d]) and a few rows: many slices per row */
    int64_t ld[4] = {8, 3, 65, 64}, fd[2] = {3, 40000}, fr1[2] = {3, 1};
    amd_tensor lx = T(4, ld, -1, 1), ls = T(0, NULL, 0.5, 2), fx = T(2, fd, -1, 1), fr = T(2, fr1, 0.5, 2);
    amd_tensor *big[2] = {&lx, &ls}, *few[2] = {&fr, &fx};
    /* both operands broadcast: [6,5,1] op [1,1,7] (the first indexed by the output's rows, the second by
       its columns), and [6,1,7] op [5,1] (a run in the middle: the general kernels) */
    int64_t rcd[3] = {6, 5, 1}, ccd[3] = {1, 1, 7}, md[3] = {6, 1, 7}, m2d[2] = {5, 1};
    amd_tensor ra = T(3, rcd, -1, 1), cb = T(3, ccd, 0.5, 2), ma = T(3, md, -1, 1), mb = T(2, m2d, 0.5, 2);
    amd_tensor *rc[2] = {&ra, &cb}, *mid[2] = {&ma, &mb};
    const char *ops2[2] = {"Add", "Mul"};
    for (int i = 0; i < 2; i++) {
      char label[96];
      snprintf(label, sizeof label, "%s [300,70] op [70] (column sums)", ops2[i]);
      run_case(label, ops2[i], 14, NULL, 0, bias, 2, 1, NULL, 3, 1, 1, 1e-6);
      snprintf(label, sizeof label, "%s [5,65,12] op [1,65,12] (column sums)", ops2[i]);
      run_case(label, ops2[i], 14, NULL, 0, pos, 2, 1, NULL, 3, 1, 1, 1e-6);
      snprintf(label, sizeof label, "%s [4,6,5,7] op [4,6,1,1] (row sums)", ops2[i]);
      run_case(label, ops2[i], 14, NULL, 0, scale, 2, 1, NULL, 3, 1, 1, 1e-6);
      snprintf(label, sizeof label, "%s [1] op [4,6,5,7] (one row)", ops2[i]);
      run_case(label, ops2[i], 14, NULL, 0, scal, 2, 1, NULL, 3, 1, 1, 1e-6);
      snprintf(label, sizeof label, "%s [8,3,65,64] op scalar (one row, sliced)", ops2[i]);
      run_case(label, ops2[i], 14, NULL, 0, big, 2, 1, NULL, 3, 1, 1, 1e-6);
      snprintf(label, sizeof label, "%s [3,1] op [3,40000] (three rows, sliced)", ops2[i]);
      run_case(label, ops2[i], 14, NULL, 0, few, 2, 1, NULL, 3, 1, 1, 1e-6);
      snprintf(label, sizeof label, "%s [6,5,1] op [1,1,7] (rows and columns)", ops2[i]);
      run_case(label, ops2[i], 14, NULL, 0, rc, 2, 1, NULL, 3, 1, 1, 1e-6);
      snprintf(label, sizeof label, "%s [6,1,7] op [5,1] (general)", ops2[i]);
      run_case(label, ops2[i], 14, NULL, 0, mid, 2, 1, NULL, 3, 1, 1, 1e-6);
    }
    amd_tensor *all7[15] = {&bx, &bb, &px, &pp, &sx, &ss, &s1, &lx, &ls, &fx, &fr, &ra, &cb, &ma, &mb};
    FREE(all7, 15);
  }
  { /* a size that is no multiple of 4: the one-element forms of the vectorised kernels */
    int64_t od[4] = {3, 5, 7, 1};
    amd_tensor p = T(4, od, -2, 2), q = T(4, od, 0.5, 2), *one[1] = {&p}, *two[2] = {&p, &q};
    run_case("Relu, odd size", "Relu", 14, NULL, 0, one, 1, 1, NULL, 1, 1, 1, 1e-6);
    run_case("Mul same shape, odd size", "Mul", 14, NULL, 0, two, 2, 1, NULL, 3, 1, 1, 1e-6);
    amd_tensor_free(&p);
    amd_tensor_free(&q);
  }
  { /* Pow (positive bases; tol 1e-5: CUDA's powf is within a few ulp, not
       correctly rounded), two-input Min / Max, with broadcasting */
    int64_t cd[4] = {1, 3, 1, 1}, rd[1] = {6};
    amd_tensor b = T(4, xd, 0.5, 2), e = T(4, xd, -2, 2), ec = T(4, cd, -2, 2), two = T(0, NULL, 2, 2),
               rp = T(1, rd, 0.5, 2), y = T(4, xd, -2, 2), c = T(4, cd, -2, 2), r = T(1, rd, -2, 2);
    amd_tensor *pp[2] = {&b, &e}, *pc[2] = {&b, &ec}, *p2[2] = {&x, &two}, *pr[2] = {&rp, &e};
    run_case("Pow same shape", "Pow", 15, NULL, 0, pp, 2, 1, NULL, 3, 1, 1, 1e-5);
    run_case("Pow [N,C,H,W] ^ [1,C,1,1]", "Pow", 15, NULL, 0, pc, 2, 1, NULL, 3, 1, 1, 1e-5);
    run_case("Pow [N,C,H,W] ^ 2 (LayerNorm's square, any sign)", "Pow", 13, NULL, 0, p2, 2, 1, NULL, 1, 1, 1,
             1e-6);
    run_case("Pow [W] ^ [N,C,H,W]", "Pow", 15, NULL, 0, pr, 2, 1, NULL, 3, 1, 1, 1e-5);
    int64_t ev[6] = {2, 3, -1, 0, 1, 2};
    amd_tensor ei = I64(6, ev), *pi[2] = {&b, &ei};
    run_case("Pow ^ int64 [W] (host fallback)", "Pow", 15, NULL, 0, pi, 2, 1, NULL, 1, 1, 0, 1e-6);
    amd_tensor_free(&ei);
    amd_tensor *same[2] = {&x, &y}, *chan[2] = {&x, &c}, *row[2] = {&r, &x}, *tie[2] = {&x, &x},
               *three[3] = {&x, &c, &r};
    const char *ops[2] = {"Min", "Max"};
    for (int i = 0; i < 2; i++) {
      char label[96];
      snprintf(label, sizeof label, "%s same shape", ops[i]);
      run_case(label, ops[i], 13, NULL, 0, same, 2, 1, NULL, 3, 1, 1, 1e-6);
      snprintf(label, sizeof label, "%s-6 same shape", ops[i]);
      run_case(label, ops[i], 6, NULL, 0, same, 2, 1, NULL, 3, 1, 1, 1e-6);
      snprintf(label, sizeof label, "%s [N,C,H,W] [1,C,1,1]", ops[i]);
      run_case(label, ops[i], 13, NULL, 0, chan, 2, 1, NULL, 3, 1, 1, 1e-6);
      snprintf(label, sizeof label, "%s [W] [N,C,H,W]", ops[i]);
      run_case(label, ops[i], 13, NULL, 0, row, 2, 1, NULL, 3, 1, 1, 1e-6);
      snprintf(label, sizeof label, "%s ties (one tensor twice: the first gets dY)", ops[i]);
      run_case(label, ops[i], 13, NULL, 0, tie, 2, 1, NULL, 3, 1, 1, 0);
      snprintf(label, sizeof label, "%s of three (host fallback)", ops[i]);
      run_case(label, ops[i], 13, NULL, 0, three, 3, 1, NULL, 7, 1, 0, 1e-6);
    }
    amd_tensor *all[8] = {&b, &e, &ec, &two, &rp, &y, &c, &r};
    FREE(all, 8);
  }
  { /* Where: the bool condition on the host, X and Y broadcast with it */
    int64_t cd[4] = {4, 1, 6, 6}, yd[4] = {1, 3, 1, 1};
    amd_tensor cf = gc_tensor(AMD_BOOL, 4, xd, 0, 1), cb = gc_tensor(AMD_BOOL, 4, cd, 0, 1);
    for (int64_t i = 0; i < amd_tensor_numel(&cf); i++) amd_tensor_set_i64(&cf, i, gc_uniform() < 0.5);
    for (int64_t i = 0; i < amd_tensor_numel(&cb); i++) amd_tensor_set_i64(&cb, i, gc_uniform() < 0.5);
    amd_tensor y = T(4, xd, -2, 2), yc = T(4, yd, -2, 2), ys = T(0, NULL, -1e4, -1e4);
    amd_tensor *same[3] = {&cf, &x, &y}, *bc[3] = {&cb, &x, &yc}, *fill[3] = {&cb, &ys, &x};
    run_case("Where same shape", "Where", 16, NULL, 0, same, 3, 1, NULL, 6, 1, 1, 1e-6);
    run_case("Where cond [N,1,H,W] X [N,C,H,W] Y [1,C,1,1]", "Where", 16, NULL, 0, bc, 3, 1, NULL, 6, 1, 1, 1e-6);
    run_case("Where-9 cond [N,1,H,W] X scalar Y [N,C,H,W] (masked fill)", "Where", 9, NULL, 0, fill, 3, 1, NULL,
             6, 1, 1, 1e-6);
    amd_tensor *all[5] = {&cf, &cb, &y, &yc, &ys};
    FREE(all, 5);
  }
  { /* shape ops: copies */
    run_case("Flatten", "Flatten", 13, NULL, 0, in1, 1, 1, NULL, 1, 1, 1, 0);
    run_case("Identity", "Identity", 16, NULL, 0, in1, 1, 1, NULL, 1, 1, 1, 0);
    int64_t shp[3] = {4, -1, 6}, ax0[1] = {0}, ax1[1] = {1};
    amd_tensor s = I64(3, shp), *in2[2] = {&x, &s};
    run_case("Reshape (shape on the host)", "Reshape", 14, NULL, 0, in2, 2, 1, NULL, 1, 1, 1, 0);
    amd_tensor_free(&s);
    amd_tensor u = I64(1, ax0), *in3[2] = {&x, &u};
    run_case("Unsqueeze", "Unsqueeze", 13, NULL, 0, in3, 2, 1, NULL, 1, 1, 1, 0);
    amd_tensor_free(&u);
    int64_t sd[4] = {4, 1, 6, 6};
    amd_tensor z = T(4, sd, -1, 1), q = I64(1, ax1), *in4[2] = {&z, &q};
    run_case("Squeeze", "Squeeze", 13, NULL, 0, in4, 2, 1, NULL, 1, 1, 1, 0);
    amd_tensor_free(&z);
    amd_tensor_free(&q);
    int64_t d2[4] = {4, 2, 6, 6}, d5[4] = {4, 5, 6, 6};
    amd_tensor c2 = T(4, d2, -1, 1), c5 = T(4, d5, -1, 1), *in5[3] = {&x, &c2, &c5};
    Onnx__AttributeProto *a[1] = {gc_attr_int("axis", 1)};
    run_case("Concat axis 1", "Concat", 13, a, 1, in5, 3, 1, NULL, 7, 1, 1, 0);
    gc_attrs_free(a, 1);
    amd_tensor_free(&c2);
    amd_tensor_free(&c5);
  }
  { /* Slice, Split, Expand, Tile (starts, splits, shapes, repeats on the host) */
    int64_t sts[3] = {-1, 5, 0}, ens[3] = {INT64_MIN, 0, 100}, axs[3] = {0, 2, 3}, stp[3] = {-2, -1, 2};
    amd_tensor s0 = I64(3, sts), s1 = I64(3, ens), s2 = I64(3, axs), s3 = I64(3, stp);
    amd_tensor *sl[5] = {&x, &s0, &s1, &s2, &s3};
    run_case("Slice-13 steps -2, -1, 2 on [4,3,6,6]", "Slice", 13, NULL, 0, sl, 5, 1, NULL, 1, 1, 1, 0);
    FREE(sl + 1, 4);
    int64_t sd[4] = {4, 7, 3, 2}, parts[2] = {2, 5};
    amd_tensor sx = T(4, sd, -1, 1), sp = I64(2, parts), *in1s[1] = {&sx}, *in2s[2] = {&sx, &sp};
    Onnx__AttributeProto *a[2] = {gc_attr_int("axis", 1), gc_attr_int("num_outputs", 3)};
    run_case("Split-18 num_outputs 3 over 7 (3, 3, 1)", "Split", 18, a, 2, in1s, 1, 3, NULL, 1, 1, 1, 0);
    run_case("Split-13 split 2, 5 (host input)", "Split", 13, a, 1, in2s, 2, 2, NULL, 1, 1, 1, 0);
    gc_attrs_free(a, 2);
    FREE(in2s, 2);
    int64_t ed[4] = {1, 3, 1, 6}, eshape[4] = {4, 1, 5, 6};
    amd_tensor ex = T(4, ed, -1, 1), es = I64(4, eshape), *ein[2] = {&ex, &es};
    run_case("Expand [1,3,1,6] to [4,1,5,6]", "Expand", 13, NULL, 0, ein, 2, 1, NULL, 1, 1, 1, 1e-6);
    FREE(ein, 2);
    int64_t td[4] = {2, 3, 2, 3}, reps[4] = {2, 1, 3, 2};
    amd_tensor tx = T(4, td, -1, 1), tr = I64(4, reps), *tin[2] = {&tx, &tr};
    run_case("Tile [2,3,2,3] by 2, 1, 3, 2", "Tile", 13, NULL, 0, tin, 2, 1, NULL, 1, 1, 1, 1e-6);
    FREE(tin, 2);
    /* ScatterND: native (data and updates gradients); more cases in training_path_ops */
    int64_t ud[4] = {2, 3, 6, 6}, ix[2] = {3, 1};
    amd_tensor idx = {0}, upd = T(4, ud, -1, 1), *scin[3] = {&x, &idx, &upd};
    int64_t idd[2] = {2, 1};
    amd_tensor_set_shape(&idx, AMD_INT64, 2, idd);
    amd_status st;
    AMD_ASSERT(amd_tensor_alloc(&idx, &st) == 0);
    memcpy(idx.data, ix, sizeof ix);
    run_case("ScatterND-11 (native)", "ScatterND", 11, NULL, 0, scin, 3, 1, NULL, 5, 1, 1, 0);
    FREE(scin + 1, 2);
  }
  { /* index.cu: GatherND (indices on the host; repeated tuples: the scatter-add in tuple order, the
     * CPU's bits), Trilu (k on the host), DepthToSpace, SpaceToDepth */
    amd_status st;
    int64_t gd[3] = {3, 5, 4}, id[3] = {3, 4, 1}, iv[12] = {0, 4, -1, 0, 2, 2, 3, 2, 1, 1, 1, -5};
    int64_t kd[2] = {4, 2}, kv[8] = {2, 1, -1, -1, 2, 1, 0, 4};
    amd_tensor gx = T(3, gd, -1, 1), gi = {0}, gk = {0};
    amd_tensor_set_shape(&gi, AMD_INT64, 3, id);
    amd_tensor_set_shape(&gk, AMD_INT64, 2, kd);
    AMD_ASSERT(amd_tensor_alloc(&gi, &st) == 0 && amd_tensor_alloc(&gk, &st) == 0);
    memcpy(gi.data, iv, sizeof iv);
    memcpy(gk.data, kv, sizeof kv);
    amd_tensor *gin[2] = {&gx, &gi}, *gkn[2] = {&gx, &gk};
    Onnx__AttributeProto *bd[1] = {gc_attr_int("batch_dims", 1)};
    run_case("GatherND-12 batch_dims 1, repeated tuples", "GatherND", 12, bd, 1, gin, 2, 1, NULL, 1, 1, 1, 0);
    run_case("GatherND-13 k = 2, repeated tuples", "GatherND", 13, NULL, 0, gkn, 2, 1, NULL, 1, 1, 1, 0);
    gc_attrs_free(bd, 1);
    int64_t tm[1] = {-1}, tp[1] = {2};
    amd_tensor km = I64(1, tm), kp = I64(1, tp), *tin[2] = {&x, &km}, *tin2[2] = {&x, &kp};
    Onnx__AttributeProto *lo[1] = {gc_attr_int("upper", 0)};
    run_case("Trilu-14 lower k = -1", "Trilu", 14, lo, 1, tin, 2, 1, NULL, 1, 1, 1, 0);
    run_case("Trilu-14 upper k = 2", "Trilu", 14, NULL, 0, tin2, 2, 1, NULL, 1, 1, 1, 0);
    run_case("Trilu-14 upper, no k", "Trilu", 14, NULL, 0, tin, 1, 1, NULL, 1, 1, 1, 0);
    gc_attrs_free(lo, 1);
    int64_t dd[4] = {2, 12, 3, 2}, sd[4] = {2, 3, 4, 6};
    amd_tensor dx = T(4, dd, -1, 1), sx = T(4, sd, -1, 1), *din[1] = {&dx}, *sin[1] = {&sx};
    Onnx__AttributeProto *dcr[1] = {gc_attr_int("blocksize", 2)},
                         *crd[2] = {gc_attr_int("blocksize", 2), gc_attr_string("mode", "CRD")};
    run_case("DepthToSpace-13 DCR", "DepthToSpace", 13, dcr, 1, din, 1, 1, NULL, 1, 1, 1, 0);
    run_case("DepthToSpace-13 CRD", "DepthToSpace", 13, crd, 2, din, 1, 1, NULL, 1, 1, 1, 0);
    run_case("SpaceToDepth-13", "SpaceToDepth", 13, dcr, 1, sin, 1, 1, NULL, 1, 1, 1, 0);
    run_case("SpaceToDepth-28 CRD", "SpaceToDepth", 28, crd, 2, sin, 1, 1, NULL, 1, 1, 1, 0);
    gc_attrs_free(dcr, 1);
    gc_attrs_free(crd, 2);
    amd_tensor *all[] = {&gx, &gi, &gk, &km, &kp, &dx, &sx};
    FREE(all, 7);
  }
  { /* pad.cu: Pad in each mode, pads and value on the host; negative pads crop; the copies of reflect /
     * edge / wrap added back in the CPU's order (same bits); pads over 16 in those modes: host */
    int64_t pd[4] = {2, 3, 5, 6};
    int64_t p1[8] = {0, 0, 1, 2, 0, 0, 3, 1}, p2[8] = {0, 1, -1, 2, 0, -1, 2, -2}, p3[4] = {3, 2, 4, 5};
    int64_t big[8] = {0, 0, 20, 0, 0, 0, 0, 0}, ax[2] = {-2, 3};
    amd_tensor px = T(4, pd, -1, 1), pa = I64(8, p1), pb = I64(8, p2), pc = I64(4, p3), pg = I64(8, big),
               pax = I64(2, ax), pv = T(0, NULL, 0.75, 0.75);
    amd_tensor *c1[3] = {&px, &pa, &pv}, *c2[2] = {&px, &pb}, *c3[4] = {&px, &pc, NULL, &pax},
               *c4[2] = {&px, &pg};
    static const char *modes[4] = {"constant", "reflect", "edge", "wrap"};
    char label[64];
    for (int m = 0; m < 4; m++) {
      Onnx__AttributeProto *ma[1] = {gc_attr_string("mode", modes[m])};
      snprintf(label, sizeof label, "Pad-19 %s, value", modes[m]);
      run_case(label, "Pad", 19, ma, 1, c1, m == 0 ? 3 : 2, 1, NULL, 1, 1, 1, 0);
      snprintf(label, sizeof label, "Pad-19 %s, crop", modes[m]);
      run_case(label, "Pad", 19, ma, 1, c2, 2, 1, NULL, 1, 1, 1, 0);
      snprintf(label, sizeof label, "Pad-18 %s, axes", modes[m]);
      run_case(label, "Pad", 18, ma, 1, c3, 4, 1, NULL, 1, 1, 1, 0);
      snprintf(label, sizeof label, "Pad-13 %s, pad 20", modes[m]);
      run_case(label, "Pad", 13, ma, 1, c4, 2, 1, NULL, 1, 1, m == 0, 0);
      gc_attrs_free(ma, 1);
    }
    Onnx__AttributeProto *old[2] = {gc_attr_ints("pads", 8, p1), gc_attr_float("value", -2)};
    amd_tensor *c0[1] = {&px};
    run_case("Pad-2 constant, attributes", "Pad", 2, old, 2, c0, 1, 1, NULL, 1, 1, 1, 0);
    gc_attrs_free(old, 2);
    amd_tensor *all[] = {&px, &pa, &pb, &pc, &pg, &pax, &pv};
    FREE(all, 7);
  }
  { /* softmax */
    int64_t ld[2] = {8, 10}, td[3] = {2, 5, 4};
    amd_tensor l = T(2, ld, -3, 3), t3 = T(3, td, -3, 3), *in2[1] = {&l}, *in3[1] = {&t3};
    run_case("Softmax-13 axis -1", "Softmax", 13, NULL, 0, in2, 1, 1, NULL, 1, 1, 1, 1e-5);
    run_case("LogSoftmax-13 axis -1", "LogSoftmax", 13, NULL, 0, in2, 1, 1, NULL, 1, 1, 1, 1e-5);
    Onnx__AttributeProto *a[1] = {gc_attr_int("axis", 1)};
    run_case("Softmax-13 axis 1 (inner 4)", "Softmax", 13, a, 1, in3, 1, 1, NULL, 1, 1, 1, 1e-5);
    run_case("LogSoftmax-11 axis 1 (coerced 2-D)", "LogSoftmax", 11, a, 1, in3, 1, 1, NULL, 1, 1, 1, 1e-5);
    gc_attrs_free(a, 1);
    amd_tensor_free(&l);
    amd_tensor_free(&t3);
  }
  { /* Dropout training (same counter-based masks), ratio input staged on the host */
    amd_tensor ratio = T(0, NULL, 0.3, 0.3), *in2[2] = {&x, &ratio};
    run_case("Dropout-13 training", "Dropout", 13, NULL, 0, in2, 2, 1, NULL, 1, 1, 1, 0);
    run_case("Dropout-13 inference", "Dropout", 13, NULL, 0, in2, 2, 1, NULL, 1, 0, 1, 0);
    amd_tensor_free(&ratio);
  }
  { /* the random ops: the same draws on both (exactly), the same rng after; no gradient (backward adds
     * nothing to the pre-filled buffers); a double or bool output runs on the host */
    amd_tensor p = T(4, xd, -0.1, 1.1), *in1x[1] = {&x}, *in1p[1] = {&p};
    int64_t shape[3] = {3, 5, 7}, big[2] = {1000, 100};
    Onnx__AttributeProto *u[3] = {gc_attr_float("low", -1), gc_attr_float("high", 2),
                                  gc_attr_ints("shape", 3, shape)};
    Onnx__AttributeProto *g[3] = {gc_attr_float("mean", 0.5f), gc_attr_float("scale", 2),
                                  gc_attr_ints("shape", 2, big)};
    Onnx__AttributeProto *d[2] = {gc_attr_int("dtype", AMD_DOUBLE), gc_attr_int("dtype", AMD_BOOL)};
    run_case("RandomUniformLike-22", "RandomUniformLike", 22, u, 2, in1x, 1, 1, NULL, 1, 1, 1, 0);
    run_case("RandomNormalLike-1 (inference ctx)", "RandomNormalLike", 1, g, 2, in1x, 1, 1, NULL, 1, 0, 1, 0);
    run_case("RandomUniform-1 [3,5,7]", "RandomUniform", 1, u, 3, NULL, 0, 1, NULL, 0, 1, 1, 0);
    run_case("RandomNormal-22 [1000,100]", "RandomNormal", 22, g, 3, NULL, 0, 1, NULL, 0, 1, 1, 0);
    run_case("Bernoulli-15 (p in [-0.1, 1.1])", "Bernoulli", 15, NULL, 0, in1p, 1, 1, NULL, 1, 1, 1, 0);
    run_case("RandomUniformLike dtype double (host fallback)", "RandomUniformLike", 1, d, 1, in1x, 1, 1, NULL,
             0, 1, 0, 0);
    run_case("Bernoulli-22 dtype bool (host fallback)", "Bernoulli", 22, d + 1, 1, in1p, 1, 1, NULL, 0, 1, 0,
             0);
    gc_attrs_free(u, 3);
    gc_attrs_free(g, 3);
    gc_attrs_free(d, 2);
    amd_tensor_free(&p);
  }
  { /* host fallback: ops without kernels, and a Conv-1d */
    int64_t perm[4] = {0, 2, 3, 1};
    Onnx__AttributeProto *a[1] = {gc_attr_ints("perm", 4, perm)};
    run_case("Transpose NCHW to NHWC", "Transpose", 13, a, 1, in1, 1, 1, NULL, 1, 1, 1, 0);
    gc_attrs_free(a, 1);
    { /* attention's [B, N, 3, H, d] -> [3, B, H, N, d] */
      int64_t qd[5] = {2, 5, 3, 2, 4}, qp[5] = {2, 0, 3, 1, 4};
      amd_tensor q = T(5, qd, -1, 1), *inq[1] = {&q};
      Onnx__AttributeProto *qa[1] = {gc_attr_ints("perm", 5, qp)};
      run_case("Transpose rank 5", "Transpose", 13, qa, 1, inq, 1, 1, NULL, 1, 1, 1, 0);
      gc_attrs_free(qa, 1);
      FREE(inq, 1);
    }
    { /* views whose last axis is strided and another contiguous, in 32 x 32 tiles (k_view_tile), forward
         and backward: K^T of attention [3, 40, 37] -> [3, 37, 40] (partial tiles), NCHW -> NHWC
         [2, 20, 6, 7] -> [2, 6, 7, 20] */
      int64_t kd[3] = {3, 40, 37}, kp[3] = {0, 2, 1}, nd[4] = {2, 20, 6, 7}, np[4] = {0, 2, 3, 1};
      amd_tensor kt = T(3, kd, -1, 1), nt = T(4, nd, -1, 1), *ink[1] = {&kt}, *inn[1] = {&nt};
      Onnx__AttributeProto *ka[1] = {gc_attr_ints("perm", 3, kp)}, *na[1] = {gc_attr_ints("perm", 4, np)};
      run_case("Transpose [3,40,37] last two axes (tiled)", "Transpose", 13, ka, 1, ink, 1, 1, NULL, 1, 1, 1,
               0);
      run_case("Transpose [2,20,6,7] NCHW to NHWC (tiled)", "Transpose", 13, na, 1, inn, 1, 1, NULL, 1, 1, 1,
               0);
      /* attention's head split [B, T, H, d] -> [B, H, T, d], d = 8: four elements a thread */
      int64_t hd[4] = {3, 5, 4, 8}, hp[4] = {0, 2, 1, 3};
      amd_tensor ht = T(4, hd, -1, 1), *inh[1] = {&ht};
      Onnx__AttributeProto *ha[1] = {gc_attr_ints("perm", 4, hp)};
      run_case("Transpose [3,5,4,8] heads (four a thread)", "Transpose", 13, ha, 1, inh, 1, 1, NULL, 1, 1, 1,
               0);
      gc_attrs_free(ha, 1);
      FREE(inh, 1);
      gc_attrs_free(ka, 1);
      gc_attrs_free(na, 1);
      FREE(ink, 1);
      FREE(inn, 1);
    }
    { /* Gather: the class token (a scalar index on axis 1), and repeated / negative indices on axis 0 */
      int64_t cd[3] = {4, 5, 6}, zero = 0;
      amd_tensor c = T(3, cd, -1, 1), ci = {0};
      amd_tensor_set_shape(&ci, AMD_INT64, 0, NULL);
      amd_status ast;
      AMD_ASSERT(amd_tensor_alloc(&ci, &ast) == 0);
      memcpy(ci.data, &zero, sizeof zero);
      amd_tensor *inc[2] = {&c, &ci};
      Onnx__AttributeProto *ga[1] = {gc_attr_int("axis", 1)};
      run_case("Gather class token", "Gather", 13, ga, 1, inc, 2, 1, NULL, 1, 1, 1, 0);
      gc_attrs_free(ga, 1);
      FREE(inc, 2);
      int64_t td[2] = {5, 3}, tv[5] = {2, -1, 2, 0, 2};
      amd_tensor tb = T(2, td, -1, 1), ti = I64(5, tv), *int_[2] = {&tb, &ti};
      run_case("Gather repeated indices", "Gather", 13, NULL, 0, int_, 2, 1, NULL, 1, 1, 1, 0);
      FREE(int_, 2);
    }
    Onnx__AttributeProto *l[1] = {gc_attr_int("size", 3)};
    run_case("LRN size 3 (native)", "LRN", 13, l, 1, in1, 1, 1, NULL, 1, 1, 1, 1e-6);
    gc_attrs_free(l, 1);
    int64_t xd1[3] = {2, 3, 10}, wd1[3] = {4, 3, 3};
    amd_tensor x1 = T(3, xd1, -1, 1), w1 = T(3, wd1, -1, 1), *in2[2] = {&x1, &w1};
    run_case("Conv-1d (host fallback)", "Conv", 13, NULL, 0, in2, 2, 1, NULL, 3, 1, 0, 1e-6);
    FREE(in2, 2);
    amd_tensor *in3[1] = {&x};
    run_case("ReduceMean all axes (native)", "ReduceMean", 13, NULL, 0, in3, 1, 1, NULL, 1, 1, 1, 1e-6);
    int64_t sp[2] = {2, 3}, mid[1] = {1}, lead[2] = {0, 1}, apart[2] = {1, 3};
    Onnx__AttributeProto *r[2] = {gc_attr_ints("axes", 2, sp), gc_attr_int("keepdims", 0)};
    run_case("ReduceMean axes 2,3 (native)", "ReduceMean", 13, r, 2, in3, 1, 1, NULL, 1, 1, 1, 1e-6);
    gc_attrs_free(r, 2);
    Onnx__AttributeProto *q[1] = {gc_attr_ints("axes", 1, mid)}, *qa[1] = {gc_attr_ints("axes", 2, apart)},
                         *ql[2] = {gc_attr_ints("axes", 2, lead), gc_attr_int("keepdims", 0)};
    run_case("ReduceMean axis 1 (native, at stride 36)", "ReduceMean", 13, q, 1, in3, 1, 1, NULL, 1, 1, 1, 1e-6);
    run_case("ReduceMean axes 0,1 keepdims 0 (native)", "ReduceMean", 13, ql, 2, in3, 1, 1, NULL, 1, 1, 1, 1e-6);
    run_case("ReduceMean axes 1,3 (host fallback)", "ReduceMean", 13, qa, 1, in3, 1, 1, NULL, 1, 1, 0, 1e-6);
    /* the other reductions with kernels: all axes, axes 2,3 without keepdims, opset 18's axes input [-1],
     * a middle axis, and two axes apart on the host */
    static const char *reds[] = {"ReduceSum", "ReduceMax", "ReduceSumSquare", "ReduceL2", "ReduceMin",
                                 "ReduceLogSumExp"};
    int64_t last = -1, ld[1] = {1};
    amd_tensor ax18 = gc_tensor(AMD_INT64, 1, ld, 0, 0), *in18[2] = {&x, &ax18};
    amd_tensor_set_i64(&ax18, 0, last);
    Onnx__AttributeProto *r2[2] = {gc_attr_ints("axes", 2, sp), gc_attr_int("keepdims", 0)};
    for (int k = 0; k < 6; k++) {
      const int oa = strcmp(reds[k], "ReduceSum") == 0 ? 11 : 13; /* an opset with the axes attribute */
      char lb[5][96];
      snprintf(lb[0], sizeof lb[0], "%s-%d all axes (native)", reds[k], oa);
      snprintf(lb[1], sizeof lb[1], "%s-%d axes 2,3 keepdims 0 (native)", reds[k], oa);
      snprintf(lb[2], sizeof lb[2], "%s opset 18 axes input [-1] (native)", reds[k]);
      snprintf(lb[3], sizeof lb[3], "%s-%d axis 1 (native)", reds[k], oa);
      snprintf(lb[4], sizeof lb[4], "%s-%d axes 1,3 (host fallback)", reds[k], oa);
      run_case(lb[0], reds[k], oa, NULL, 0, in3, 1, 1, NULL, 1, 1, 1, 1e-6);
      run_case(lb[1], reds[k], oa, r2, 2, in3, 1, 1, NULL, 1, 1, 1, 1e-6);
      run_case(lb[2], reds[k], 18, NULL, 0, in18, 2, 1, NULL, 1, 1, 1, 1e-6);
      run_case(lb[3], reds[k], oa, q, 1, in3, 1, 1, NULL, 1, 1, 1, 1e-6);
      run_case(lb[4], reds[k], oa, qa, 1, in3, 1, 1, NULL, 1, 1, 0, 1e-6);
    }
    gc_attrs_free(r2, 2);
    amd_tensor_free(&ax18);
    gc_attrs_free(q, 1);
    gc_attrs_free(qa, 1);
    gc_attrs_free(ql, 2);
    /* InstanceNormalization: [4,3,6,6], and [2,5,1000] (many threads per plane, mean far from zero) */
    int64_t cd[1] = {3}, cd5[1] = {5}, ld3[3] = {2, 5, 1000};
    amd_tensor s = T(1, cd, 0.5, 1.5), b = T(1, cd, -1, 1), *inn[3] = {&x, &s, &b};
    Onnx__AttributeProto *e[1] = {gc_attr_float("epsilon", 1e-3f)};
    run_case("InstanceNormalization-6 [4,3,6,6] (native)", "InstanceNormalization", 6, e, 1, inn, 3, 1, NULL, 7, 1,
             1, 1e-5);
    gc_attrs_free(e, 1);
    amd_tensor xl = T(3, ld3, 3, 5), s5 = T(1, cd5, 0.5, 1.5), b5 = T(1, cd5, -1, 1), *inl[3] = {&xl, &s5, &b5};
    run_case("InstanceNormalization-22 [2,5,1000] (native)", "InstanceNormalization", 22, NULL, 0, inl, 3, 1, NULL,
             7, 1, 1, 1e-5);
    FREE(inn + 1, 2);
    FREE(inl, 3);
  }
  amd_tensor_free(&x);
}

/* ================================================================ the ops of issue 16 */

/* An int64 tensor of the given shape holding v (an index input, on the host). */
static amd_tensor IDX(int rank, const int64_t *dims, const int64_t *v) {
  amd_tensor t = gc_tensor(AMD_INT64, rank, dims, 0, 0);
  memcpy(t.data, v, (size_t)amd_tensor_numel(&t) * sizeof *v);
  return t;
}
/* Random int64 indices in [-dim, dim) (negative ones count from the back). */
static amd_tensor IDX_RAND(int rank, const int64_t *dims, int64_t dim) {
  amd_tensor t = gc_tensor(AMD_INT64, rank, dims, 0, 0);
  for (int64_t i = 0; i < amd_tensor_numel(&t); i++)
    amd_tensor_set_i64(&t, i, (int64_t)(gc_uniform() * (double)(2 * dim)) - dim);
  return t;
}

/* The float ops that issue 16 gave CUDA kernels (the training step's path):
 * forward and backward against the CPU with their broadcast, axis and
 * attribute variants, and per op a bad attribute, shape or index that must
 * fail cleanly on both. */
static void training_path_ops(void) {
  char label[128];
  int64_t xd[4] = {4, 3, 6, 6};
  amd_tensor x = T(4, xd, -2, 2);
  { /* PRelu: the slope per channel (as PyTorch exports it), a scalar, X's own shape, one row, and a slope
       [4,1,6,1] whose gradient is the generic broadcast reduction */
    int64_t cd[3] = {3, 1, 1}, one[1] = {1}, rd[1] = {6}, gd[4] = {4, 1, 6, 1}, bad[1] = {5};
    amd_tensor sc = T(3, cd, 0.05, 0.5), s1 = T(1, one, 0.05, 0.5), sf = T(4, xd, -0.5, 0.5),
               sr = T(1, rd, 0.1, 1), sg = T(4, gd, 0.1, 1), sb = T(1, bad, 0.1, 1);
    amd_tensor *pc[2] = {&x, &sc}, *p1[2] = {&x, &s1}, *pf[2] = {&x, &sf}, *pr[2] = {&x, &sr},
               *pg[2] = {&x, &sg}, *pb[2] = {&x, &sb};
    run_case("PRelu-16 slope [3,1,1] (per channel)", "PRelu", 16, NULL, 0, pc, 2, 1, NULL, 3, 1, 1, 1e-6);
    run_case("PRelu-9 slope [3,1,1]", "PRelu", 9, NULL, 0, pc, 2, 1, NULL, 3, 1, 1, 1e-6);
    run_case("PRelu-16 slope [1] (scalar)", "PRelu", 16, NULL, 0, p1, 2, 1, NULL, 3, 1, 1, 1e-6);
    run_case("PRelu-16 slope of X's shape", "PRelu", 16, NULL, 0, pf, 2, 1, NULL, 3, 1, 1, 1e-6);
    run_case("PRelu-16 slope [6] (a row)", "PRelu", 16, NULL, 0, pr, 2, 1, NULL, 3, 1, 1, 1e-6);
    run_case("PRelu-16 slope [4,1,6,1]", "PRelu", 16, NULL, 0, pg, 2, 1, NULL, 3, 1, 1, 1e-6);
    run_fail_case("PRelu-16 slope [5] against X [4,3,6,6]", "PRelu", 16, NULL, 0, pb, 2, 1, 0, 0, -1);
    amd_tensor *all[6] = {&sc, &s1, &sf, &sr, &sg, &sb};
    FREE(all, 6);
  }
  { /* CumSum: axis as an int64 scalar or an int32 [1], negative, each exclusive / reverse combination */
    int64_t cd[3] = {3, 4, 5}, ax1 = 1, axm = -1, ax0 = 0, ax3 = 3, ad[1] = {1};
    amd_tensor c = T(3, cd, -1, 1), a1 = IDX(0, NULL, &ax1), am = gc_tensor(AMD_INT32, 1, ad, 0, 0),
               a0 = IDX(0, NULL, &ax0), a3 = IDX(0, NULL, &ax3);
    amd_tensor_set_i64(&am, 0, axm);
    amd_tensor *i1[2] = {&c, &a1}, *im[2] = {&c, &am}, *i0[2] = {&c, &a0}, *i3[2] = {&c, &a3};
    for (int e = 0; e < 2; e++)
      for (int r = 0; r < 2; r++) {
        Onnx__AttributeProto *at[2] = {gc_attr_int("exclusive", e), gc_attr_int("reverse", r)};
        snprintf(label, sizeof label, "CumSum-14 axis 1 exclusive %d reverse %d", e, r);
        run_case(label, "CumSum", 14, at, 2, i1, 2, 1, NULL, 1, 1, 1, 1e-6);
        snprintf(label, sizeof label, "CumSum-11 axis -1 (int32) exclusive %d reverse %d", e, r);
        run_case(label, "CumSum", 11, at, 2, im, 2, 1, NULL, 1, 1, 1, 1e-6);
        gc_attrs_free(at, 2);
      }
    run_case("CumSum-14 axis 0", "CumSum", 14, NULL, 0, i0, 2, 1, NULL, 1, 1, 1, 1e-6);
    run_fail_case("CumSum-14 axis 3 of a rank-3 input", "CumSum", 14, NULL, 0, i3, 2, 1, 0, 0, -1);
    Onnx__AttributeProto *bad[1] = {gc_attr_int("exclusive", 2)};
    run_fail_case("CumSum-14 exclusive 2", "CumSum", 14, bad, 1, i1, 2, 1, -1, 0, -1);
    gc_attrs_free(bad, 1);
    amd_tensor *all[5] = {&c, &a1, &am, &a0, &a3};
    FREE(all, 5);
  }
  { /* GatherElements: repeated and negative indices (their gradients add up in index order: the CPU's
       bits), along a middle axis, the last axis (indices smaller than data on the other axes), axis 0 */
    int64_t dd[3] = {4, 5, 6}, i1d[3] = {4, 3, 6}, i2d[3] = {2, 5, 3}, i0d[3] = {6, 5, 6};
    amd_tensor d = T(3, dd, -1, 1), g1 = IDX_RAND(3, i1d, 5), g2 = IDX_RAND(3, i2d, 6),
               g0 = IDX_RAND(3, i0d, 4), gb = IDX_RAND(3, i1d, 5);
    amd_tensor_set_i64(&gb, 7, 5); /* axis 1 has 5 elements */
    amd_tensor *in1[2] = {&d, &g1}, *in2[2] = {&d, &g2}, *in0[2] = {&d, &g0}, *inb[2] = {&d, &gb};
    Onnx__AttributeProto *a1[1] = {gc_attr_int("axis", 1)}, *am[1] = {gc_attr_int("axis", -1)};
    run_case("GatherElements-13 axis 1, repeated and negative indices", "GatherElements", 13, a1, 1, in1, 2,
             1, NULL, 1, 1, 1, 0);
    run_case("GatherElements-11 axis -1, indices [2,5,3]", "GatherElements", 11, am, 1, in2, 2, 1, NULL, 1, 1,
             1, 0);
    run_case("GatherElements-13 axis 0, indices [6,5,6]", "GatherElements", 13, NULL, 0, in0, 2, 1, NULL, 1,
             1, 1, 0);
    run_fail_case("GatherElements-13 index 5 on an axis of 5", "GatherElements", 13, a1, 1, inb, 2, 1, 0, 0,
                  1);
    gc_attrs_free(a1, 1);
    gc_attrs_free(am, 1);
    amd_tensor *all[5] = {&d, &g1, &g2, &g0, &gb};
    FREE(all, 5);
  }
  { /* ScatterElements (each reduction), Scatter-9, ScatterND (slices and single elements): repeated
       indices, applied in index order as the CPU does (the same bits); backward for none and add */
    int64_t dd[3] = {4, 5, 6}, id[3] = {4, 3, 6}, sd[3] = {3, 5, 6};
    amd_tensor d = T(3, dd, -1, 1), ix = IDX_RAND(3, id, 5), up = T(3, id, -1, 1), ix0 = IDX_RAND(3, sd, 4),
               up0 = T(3, sd, -1, 1), ixb = IDX_RAND(3, id, 5);
    amd_tensor_set_i64(&ixb, 11, -6);
    amd_tensor *in[3] = {&d, &ix, &up}, *in0[3] = {&d, &ix0, &up0}, *inb[3] = {&d, &ixb, &up};
    static const char *reds[5] = {"none", "add", "mul", "max", "min"};
    for (int r = 0; r < 5; r++) {
      Onnx__AttributeProto *at[2] = {gc_attr_int("axis", 1), gc_attr_string("reduction", reds[r])};
      snprintf(label, sizeof label, "ScatterElements-18 axis 1 reduction %s", reds[r]);
      run_case(label, "ScatterElements", 18, at, 2, in, 3, 1, NULL, r < 2 ? 5 : 0, 1, 1, 0);
      gc_attrs_free(at, 2);
    }
    Onnx__AttributeProto *a1[1] = {gc_attr_int("axis", 1)};
    run_case("ScatterElements-11 axis 1", "ScatterElements", 11, a1, 1, in, 3, 1, NULL, 5, 1, 1, 0);
    run_case("Scatter-9 axis 0", "Scatter", 9, NULL, 0, in0, 3, 1, NULL, 5, 1, 1, 0);
    run_fail_case("ScatterElements-13 index -6 on an axis of 5", "ScatterElements", 13, a1, 1, inb, 3, 1, 0,
                  0, 1);
    gc_attrs_free(a1, 1);
    Onnx__AttributeProto *mul[2] = {gc_attr_int("axis", 1), gc_attr_string("reduction", "mul")},
                         *foo[1] = {gc_attr_string("reduction", "foo")};
    run_fail_case("ScatterElements-16 reduction mul: no backward", "ScatterElements", 16, mul, 2, in, 3, 1, 1,
                  5, 1);
    run_fail_case("ScatterElements-18 reduction foo", "ScatterElements", 18, foo, 1, in, 3, 1, -1, 0, -1);
    /* ScatterND: k = 2 (slices of 6), the tuples (0,1), (3,-1), (0,1), (2,2), (-4,1) (three to one slice) */
    int64_t nd_id[2] = {5, 2}, nd_iv[10] = {0, 1, 3, -1, 0, 1, 2, 2, -4, 1}, nd_ud[2] = {5, 6};
    int64_t e_id[2] = {4, 3}, e_iv[12] = {1, 2, 3, 0, 0, 0, 1, 2, 3, 3, 4, 5}, e_ud[1] = {4};
    int64_t b_iv[10] = {0, 1, 4, 0, 0, 1, 2, 2, -4, 1};
    amd_tensor ni = IDX(2, nd_id, nd_iv), nu = T(2, nd_ud, -1, 1), ei = IDX(2, e_id, e_iv),
               eu = T(1, e_ud, -1, 1), bi = IDX(2, nd_id, b_iv);
    amd_tensor *nin[3] = {&d, &ni, &nu}, *ein[3] = {&d, &ei, &eu}, *bin[3] = {&d, &bi, &nu};
    for (int r = 0; r < 5; r++) {
      Onnx__AttributeProto *at[1] = {gc_attr_string("reduction", reds[r])};
      snprintf(label, sizeof label, "ScatterND-18 k 2, repeated tuples, reduction %s", reds[r]);
      run_case(label, "ScatterND", 18, at, 1, nin, 3, 1, NULL, r < 2 ? 5 : 0, 1, 1, 0);
      gc_attrs_free(at, 1);
    }
    run_case("ScatterND-13 k 3 (elements), repeated", "ScatterND", 13, NULL, 0, ein, 3, 1, NULL, 5, 1, 1, 0);
    run_fail_case("ScatterND-13 index 4 on an axis of 4", "ScatterND", 13, NULL, 0, bin, 3, 1, 0, 0, 1);
    Onnx__AttributeProto *nmax[1] = {gc_attr_string("reduction", "max")};
    run_fail_case("ScatterND-18 reduction max: no backward", "ScatterND", 18, nmax, 1, nin, 3, 1, 1, 5, 1);
    run_fail_case("ScatterND-16 reduction max (from 18)", "ScatterND", 16, nmax, 1, nin, 3, 1, -1, 0, -1);
    gc_attrs_free(nmax, 1);
    gc_attrs_free(mul, 2);
    gc_attrs_free(foo, 1);
    amd_tensor *all[11] = {&d, &ix, &up, &ix0, &up0, &ixb, &ni, &nu, &ei, &eu, &bi};
    FREE(all, 11);
  }
  { /* LRN: an even size (the window one further up), a rank-3 input, beta 0.5 and a beta through pow() */
    int64_t d3[3] = {2, 7, 10}, d4[4] = {3, 8, 5, 5};
    amd_tensor a = T(3, d3, -2, 2), b = T(4, d4, -2, 2), *ia[1] = {&a}, *ib[1] = {&b};
    Onnx__AttributeProto *l4[4] = {gc_attr_int("size", 4), gc_attr_float("alpha", 0.02f),
                                   gc_attr_float("beta", 0.5f), gc_attr_float("bias", 2.0f)};
    Onnx__AttributeProto *l5[2] = {gc_attr_int("size", 5), gc_attr_float("beta", 0.6f)};
    Onnx__AttributeProto *l0[1] = {gc_attr_int("size", 0)};
    run_case("LRN-13 size 4 (even) beta 0.5 bias 2, [2,7,10]", "LRN", 13, l4, 4, ia, 1, 1, NULL, 1, 1, 1,
             1e-6);
    run_case("LRN-1 size 5 beta 0.6 (pow), [3,8,5,5]", "LRN", 1, l5, 2, ib, 1, 1, NULL, 1, 1, 1, 1e-6);
    run_fail_case("LRN-13 size 0", "LRN", 13, l0, 1, ib, 1, 1, -1, 0, -1);
    gc_attrs_free(l4, 4);
    gc_attrs_free(l5, 2);
    gc_attrs_free(l0, 1);
    FREE(ia, 1);
    FREE(ib, 1);
  }
  { /* ReduceL1, ReduceLogSum (a positive input), ReduceProd (magnitudes near 1, mixed signs, a row with one
       zero and a row with two: the gradient exact with zeros) over adjacent axes, as the other kernels */
    amd_tensor xp = T(4, xd, 0.1, 2), xq = T(4, xd, 0.8, 1.25);
    for (int64_t i = 0; i < amd_tensor_numel(&xq); i++)
      if (gc_uniform() < 0.3) amd_tensor_set_f64(&xq, i, -amd_tensor_get_f64(&xq, i));
    amd_tensor_set_f64(&xq, 5, 0);  /* row 0 of the axes-2,3 view: one zero */
    amd_tensor_set_f64(&xq, 40, 0); /* row 1: two zeros */
    amd_tensor_set_f64(&xq, 41, 0);
    static const char *reds[3] = {"ReduceL1", "ReduceLogSum", "ReduceProd"};
    amd_tensor *xs[3] = {&x, &xp, &xq};
    int64_t sp[2] = {2, 3}, mid[1] = {1}, apart[2] = {1, 3}, ld[1] = {1};
    amd_tensor ax18 = gc_tensor(AMD_INT64, 1, ld, 0, 0);
    amd_tensor_set_i64(&ax18, 0, -1);
    Onnx__AttributeProto *r2[2] = {gc_attr_ints("axes", 2, sp), gc_attr_int("keepdims", 0)},
                         *q[1] = {gc_attr_ints("axes", 1, mid)}, *qa[1] = {gc_attr_ints("axes", 2, apart)};
    for (int k = 0; k < 3; k++) {
      amd_tensor *in1[1] = {xs[k]}, *in18[2] = {xs[k], &ax18};
      snprintf(label, sizeof label, "%s-13 all axes (native)", reds[k]);
      run_case(label, reds[k], 13, NULL, 0, in1, 1, 1, NULL, 1, 1, 1, 1e-6);
      snprintf(label, sizeof label, "%s-13 axes 2,3 keepdims 0 (native)", reds[k]);
      run_case(label, reds[k], 13, r2, 2, in1, 1, 1, NULL, 1, 1, 1, 1e-6);
      snprintf(label, sizeof label, "%s opset 18 axes input [-1] (native)", reds[k]);
      run_case(label, reds[k], 18, NULL, 0, in18, 2, 1, NULL, 1, 1, 1, 1e-6);
      snprintf(label, sizeof label, "%s-13 axis 1 (native)", reds[k]);
      run_case(label, reds[k], 13, q, 1, in1, 1, 1, NULL, 1, 1, 1, 1e-6);
      snprintf(label, sizeof label, "%s-13 axes 1,3 (host fallback)", reds[k]);
      run_case(label, reds[k], 13, qa, 1, in1, 1, 1, NULL, 1, 1, 0, 1e-6);
    }
    int64_t bad[1] = {4};
    Onnx__AttributeProto *rb[1] = {gc_attr_ints("axes", 1, bad)};
    amd_tensor *inq[1] = {&xq};
    run_fail_case("ReduceProd-13 axis 4 of a rank-4 input", "ReduceProd", 13, rb, 1, inq, 1, 1, 0, 0, -1);
    gc_attrs_free(rb, 1);
    gc_attrs_free(r2, 2);
    gc_attrs_free(q, 1);
    gc_attrs_free(qa, 1);
    amd_tensor *all[3] = {&xp, &xq, &ax18};
    FREE(all, 3);
  }
  { /* MeanVarianceNormalization over its default axes [0,2,3], a middle axis, two apart and the last;
       LpNormalization p = 1 and 2 along the last axis and a middle one, with an all-zero group (norm 0) */
    int64_t md[4] = {2, 3, 4, 5}, m1[1] = {1}, m03[2] = {0, 3}, mlast[1] = {-1}, mbad[1] = {5},
            ld[3] = {3, 4, 5};
    amd_tensor mx = T(4, md, 1, 3), lx = T(3, ld, -2, 2), *im[1] = {&mx}, *il[1] = {&lx};
    for (int i = 0; i < 5; i++) amd_tensor_set_f64(&lx, i, 0); /* lx[0,0,:] */
    Onnx__AttributeProto *a1[1] = {gc_attr_ints("axes", 1, m1)}, *a03[1] = {gc_attr_ints("axes", 2, m03)},
                         *al[1] = {gc_attr_ints("axes", 1, mlast)}, *ab[1] = {gc_attr_ints("axes", 1, mbad)};
    run_case("MeanVarianceNormalization-13 default axes [0,2,3]", "MeanVarianceNormalization", 13, NULL, 0,
             im, 1, 1, NULL, 1, 1, 1, 1e-5);
    run_case("MeanVarianceNormalization-13 axes [1]", "MeanVarianceNormalization", 13, a1, 1, im, 1, 1, NULL,
             1, 1, 1, 1e-5);
    run_case("MeanVarianceNormalization-9 axes [0,3]", "MeanVarianceNormalization", 9, a03, 1, im, 1, 1, NULL,
             1, 1, 1, 1e-5);
    run_case("MeanVarianceNormalization-13 axes [-1]", "MeanVarianceNormalization", 13, al, 1, im, 1, 1, NULL,
             1, 1, 1, 1e-5);
    run_fail_case("MeanVarianceNormalization-13 axes [5] of rank 4", "MeanVarianceNormalization", 13, ab, 1,
                  im, 1, 1, 0, 0, -1);
    Onnx__AttributeProto *p2[1] = {gc_attr_int("p", 2)},
                         *p1[2] = {gc_attr_int("p", 1), gc_attr_int("axis", 1)},
                         *p3[1] = {gc_attr_int("p", 3)};
    run_case("LpNormalization-22 p 2 axis -1, a zero row", "LpNormalization", 22, p2, 1, il, 1, 1, NULL, 1, 1,
             1, 1e-5);
    run_case("LpNormalization-1 p 1 axis 1", "LpNormalization", 1, p1, 2, il, 1, 1, NULL, 1, 1, 1, 1e-5);
    run_case("LpNormalization-22 p 1 axis -1, a zero row", "LpNormalization", 22, p1, 1, il, 1, 1, NULL, 1, 1,
             1, 1e-5);
    run_fail_case("LpNormalization-22 p 3", "LpNormalization", 22, p3, 1, il, 1, 1, -1, 0, -1);
    Onnx__AttributeProto *aall[4] = {a1[0], a03[0], al[0], ab[0]}, *pall[4] = {p2[0], p1[0], p1[1], p3[0]};
    gc_attrs_free(aall, 4);
    gc_attrs_free(pall, 4);
    FREE(im, 1);
    FREE(il, 1);
  }
  { /* the losses: classes with ignore_index, a weight (on the host), every reduction, [N, C] and
       [N, C, d1, d2]; SCE's log_prob output with its own dY */
    int64_t sd[2] = {6, 5}, td[1] = {6}, wd[1] = {5}, tv[6] = {0, 4, 2, 3, 2, 1}, bv[6] = {0, 4, 7, 3, 2, 1};
    int64_t s4[4] = {2, 5, 3, 4}, t4[3] = {2, 3, 4};
    amd_tensor sc = T(2, sd, -3, 3), tg = IDX(1, td, tv), w = T(1, wd, 0.5, 2), tb = IDX(1, td, bv),
               sc4 = T(4, s4, -3, 3), tg4 = IDX_RAND(3, t4, 5);
    for (int64_t i = 0; i < amd_tensor_numel(&tg4); i++) /* classes in [0, 5) */
      amd_tensor_set_i64(&tg4, i,
                         amd_tensor_get_i64(&tg4, i) < 0 ? amd_tensor_get_i64(&tg4, i) + 5
                                                         : amd_tensor_get_i64(&tg4, i));
    amd_tensor *i2[2] = {&sc, &tg}, *i3[3] = {&sc, &tg, &w}, *ib[2] = {&sc, &tb}, *i4[3] = {&sc4, &tg4, &w};
    static const char *reds[3] = {"none", "sum", "mean"};
    static const char *ops[2] = {"SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss"};
    for (int o = 0; o < 2; o++)
      for (int r = 0; r < 3; r++) {
        Onnx__AttributeProto *at[2] = {gc_attr_string("reduction", reds[r]), gc_attr_int("ignore_index", 2)};
        snprintf(label, sizeof label, "%s-13 [6,5] reduction %s", ops[o], reds[r]);
        run_case(label, ops[o], 13, at, 1, i2, 2, 1, NULL, 1, 1, 1, 1e-6);
        snprintf(label, sizeof label, "%s-13 [6,5] reduction %s, weight, ignore_index 2", ops[o], reds[r]);
        run_case(label, ops[o], 13, at, 2, i3, 3, 1, NULL, 1, 1, 1, 1e-6);
        snprintf(label, sizeof label, "%s-12 [2,5,3,4] reduction %s, weight", ops[o], reds[r]);
        run_case(label, ops[o], 12, at, 1, i4, 3, 1, NULL, 1, 1, 1, 1e-6);
        gc_attrs_free(at, 2);
      }
    dy_all_outputs = 1;
    Onnx__AttributeProto *mean[1] = {gc_attr_string("reduction", "mean")},
                         *none[2] = {gc_attr_string("reduction", "none"), gc_attr_int("ignore_index", 2)};
    run_case("SoftmaxCrossEntropyLoss-13 mean, log_prob out (dY on both)", "SoftmaxCrossEntropyLoss", 13,
             mean, 1, i3, 3, 2, NULL, 1, 1, 1, 1e-6);
    run_case("SoftmaxCrossEntropyLoss-13 [2,5,3,4] none, ignore_index 2, log_prob out (dY on both)",
             "SoftmaxCrossEntropyLoss", 13, none, 2, i4, 3, 2, NULL, 1, 1, 1, 1e-6);
    dy_all_outputs = 0;
    run_fail_case("SoftmaxCrossEntropyLoss-13 target 7 of 5 classes", "SoftmaxCrossEntropyLoss", 13, mean, 1,
                  ib, 2, 1, 0, 0, 1);
    run_fail_case("NegativeLogLikelihoodLoss-13 target 7 of 5 classes", "NegativeLogLikelihoodLoss", 13, mean,
                  1, ib, 2, 1, 0, 0, 1);
    Onnx__AttributeProto *avg[1] = {gc_attr_string("reduction", "avg")};
    run_fail_case("NegativeLogLikelihoodLoss-13 reduction avg", "NegativeLogLikelihoodLoss", 13, avg, 1, i2,
                  2, 1, -1, 0, -1);
    gc_attrs_free(avg, 1);
    gc_attrs_free(mean, 1);
    gc_attrs_free(none, 2);
    amd_tensor *all[6] = {&sc, &tg, &w, &tb, &sc4, &tg4};
    FREE(all, 6);
  }
  amd_tensor_free(&x);
}

/* ================================================================ training kernels */

static const amd_train_kernels *cpu_tk, *gpu_tk;

/* A device copy of n host floats (NULL: n zeros). */
static float *dev_floats(const float *h, int64_t n) {
  amd_status st = {{0}};
  void *d = NULL;
  AMD_ASSERT(gpu->buf->mem_alloc(&d, (size_t)n * sizeof(float), &st) == 0);
  if (h) AMD_ASSERT(gpu->buf->mem_from_host(d, h, (size_t)n * sizeof(float), &st) == 0);
  return d;
}

static float *host_of(const float *d, int64_t n) {
  amd_status st = {{0}};
  float *h = malloc((size_t)(n ? n : 1) * sizeof(float));
  AMD_ASSERT(h && gpu->buf->mem_to_host(h, d, (size_t)n * sizeof(float), &st) == 0);
  return h;
}

static float *rand_floats(int64_t n, double lo, double hi) {
  float *p = malloc((size_t)(n ? n : 1) * sizeof(float));
  AMD_ASSERT(p);
  for (int64_t i = 0; i < n; i++) p[i] = (float)(lo + (hi - lo) * gc_uniform());
  return p;
}

/* max |got - ref| <= tol * max(1, max |ref|) over n floats (got: device
 * memory when dev, else host); returns 1 if within. */
static int compare_floats(const char *label, const char *what, const float *ref, const float *got, int dev,
                          int64_t n, double tol) {
  float *h = dev ? host_of(got, n) : (float *)got;
  double md = 0, mx = 1;
  for (int64_t i = 0; i < n; i++) {
    double a = ref[i], b = h[i], d = fabs(a - b);
    if (isnan(a) != isnan(b)) d = INFINITY;
    if (d > md || isnan(d)) md = d;
    mx = fmax(mx, fabs(a));
  }
  const int ok = md <= tol * mx;
  printf("%s %s: %s max |diff| %.3g (tol %.3g)\n", ok ? "ok  " : "FAIL", label, what, md, tol * mx);
  if (dev) free(h);
  return ok;
}

static void count(int ok) { ok ? passed++ : failed++; }

static void tk_softmax_xent(int64_t n, int64_t c, float smoothing, float scale, int with_nan) {
  char label[160];
  snprintf(label, sizeof label, "softmax_xent n %lld c %lld smoothing %g scale %g%s", (long long)n,
           (long long)c, smoothing, scale, with_nan ? " (a NaN logit)" : "");
  amd_status st = {{0}};
  float *z = rand_floats(n * c, -4, 4);
  if (with_nan) z[c + 1] = NAN;
  int64_t *y = malloc((size_t)n * sizeof *y), *pc = malloc((size_t)n * sizeof *pc),
          *pg = malloc((size_t)n * sizeof *pg);
  for (int64_t i = 0; i < n; i++) y[i] = (int64_t)(gc_uniform() * (double)c);
  float *dzc = malloc((size_t)(n * c) * sizeof(float)), *dz = dev_floats(NULL, n * c),
        *zd = dev_floats(z, n * c);
  amd_batch_stats bc = {0}, bg = {0};
  double mc = 0, mg = 0;
  int ok = amd_train_softmax_xent(cpu_tk, z, y, n, c, smoothing, scale, dzc, pc, &bc, &mc, &st) == 0;
  ok = ok && amd_train_softmax_xent(gpu_tk, zd, y, n, c, smoothing, scale, dz, pg, &bg, &mg, &st) == 0;
  if (!ok) printf("FAIL %s: %s\n", label, st.msg);
  if (ok) {
    const double d = fabs(mc - mg);
    const int same_nan = isnan(mc) == isnan(mg);
    int same_pred = bc.top1 == bg.top1 && bc.top5 == bg.top5 && bc.n == bg.n;
    for (int64_t i = 0; i < n; i++) same_pred &= pc[i] == pg[i];
    ok = same_nan && (isnan(mc) || d <= 1e-9 * fmax(1, fabs(mc))) && same_pred;
    printf("%s %s: mean loss %.17g vs %.17g, top1 %lld/%lld top5 %lld/%lld, predictions %s\n",
           ok ? "ok  " : "FAIL", label, mc, mg, (long long)bc.top1, (long long)bg.top1, (long long)bc.top5,
           (long long)bg.top5, same_pred ? "equal" : "differ");
    if (!with_nan) ok &= compare_floats(label, "dz", dzc, dz, 1, n * c, 1e-6);
  }
  count(ok);
  gpu->buf->mem_free(dz);
  gpu->buf->mem_free(zd);
  free(z), free(y), free(pc), free(pg), free(dzc);
}

static void tk_elementwise(void) {
  amd_status st = {{0}};
  const int64_t n = 100003;
  float *x = rand_floats(n, -3, 3), *y = rand_floats(n, -3, 3);
  { /* all_finite: finite, then one Inf, then one NaN */
    float *d = dev_floats(x, n);
    int ok = 1;
    const float bad[2] = {INFINITY, NAN};
    for (int k = 0; k < 3; k++) {
      if (k > 0) {
        x[n / 2 + k] = bad[k - 1];
        AMD_ASSERT(gpu->buf->mem_from_host(d, x, (size_t)n * sizeof(float), &st) == 0);
      }
      int fc = -1, fg = -1;
      const int rc = cpu_tk->all_finite(x, n, &fc, &st) | gpu_tk->all_finite(d, n, &fg, &st);
      const int want = k == 0;
      const int good = rc == 0 && fc == want && fg == want;
      printf("%s all_finite %s: cpu %d cuda %d\n", good ? "ok  " : "FAIL",
             k == 0   ? "finite"
             : k == 1 ? "Inf"
                      : "NaN",
             fc, fg);
      ok &= good;
    }
    x[n / 2 + 1] = x[n / 2 + 2] = 0.5f;
    count(ok);
    gpu->buf->mem_free(d);
  }
  { /* scale and add: one rounded float operation each, so exactly the CPU's */
    float *d = dev_floats(x, n), *e = dev_floats(y, n);
    float *ref = malloc((size_t)n * sizeof(float));
    memcpy(ref, x, (size_t)n * sizeof(float));
    int ok = cpu_tk->scale(ref, n, 0.37f, &st) == 0 && gpu_tk->scale(d, n, 0.37f, &st) == 0;
    count(ok && compare_floats("scale", "p * 0.37", ref, d, 1, n, 0));
    ok = cpu_tk->add(ref, y, n, &st) == 0 && gpu_tk->add(d, e, n, &st) == 0;
    count(ok && compare_floats("add", "y + x", ref, d, 1, n, 0));
    ok = gpu_tk->scale(d, 0, 2.0f, &st) == 0 && gpu_tk->add(d, e, 0, &st) == 0; /* n = 0: nothing */
    count(ok && compare_floats("scale / add of 0 values", "unchanged", ref, d, 1, n, 0));
    gpu->buf->mem_free(d);
    gpu->buf->mem_free(e);
    free(ref);
  }
  free(x);
  free(y);
}

/* Three steps of optimizer o (its kind's name and the options in label) on
 * the CPU and the GPU from the same parameters, gradients and zero state. */
static void tk_optim_case(const char *label, const amd_optim *o) {
  amd_status st = {{0}};
  const int64_t n = 4099;
  const int blocks = amd_optim_state_blocks(o);
  float *p = rand_floats(n, -1, 1), *state = calloc((size_t)(2 * n), sizeof(float));
  float *dp = dev_floats(p, n), *ds = dev_floats(NULL, 2 * n), *dg = dev_floats(NULL, n);
  int ok = 1;
  for (int64_t t = 1; ok && t <= 3; t++) {
    float *g = rand_floats(n, -0.5, 0.5);
    AMD_ASSERT(gpu->buf->mem_from_host(dg, g, (size_t)n * sizeof(float), &st) == 0);
    amd_optim_update u;
    amd_optim_update_make(o, 0.01 * (double)t, t, &u);
    ok = cpu_tk->optim_step(&u, p, g, state, n, 0, &st) == 0 &&
         gpu_tk->optim_step(&u, dp, dg, ds, n, 0, &st) == 0;
    if (!ok) printf("FAIL %s: step %lld: %s\n", label, (long long)t, st.msg);
    free(g);
  }
  if (ok) {
    ok &= compare_floats(label, "parameters after 3 steps", p, dp, 1, n, 1e-6);
    if (blocks) ok &= compare_floats(label, "state after 3 steps", state, ds, 1, blocks * n, 1e-6);
  }
  count(ok);
  gpu->buf->mem_free(dp);
  gpu->buf->mem_free(ds);
  gpu->buf->mem_free(dg);
  free(p);
  free(state);
}

static void tk_optimizers(void) {
  amd_status st = {{0}};
  for (int k = 0; k < AMD_OPT_COUNT; k++) { /* every optimizer of the list */
    const amd_optim named = {.kind = (amd_opt_kind)k};
    amd_optim o;
    AMD_ASSERT(amd_optim_init(amd_optim_name(&named), &o, &st) == 0 && (int)o.kind == k);
    char label[128];
    for (int variant = 0; variant < 4; variant++) {
      amd_optim v = o;
      const char *what = "defaults";
      if (variant == 1) v.weight_decay = 0.05, what = "weight decay";
      if (variant == 2 && (k == AMD_OPT_SGD || k == AMD_OPT_RMSPROP)) v.momentum = 0.9, what = "momentum";
      if (variant == 3 && k == AMD_OPT_SGD)
        v.momentum = 0.9, v.nesterov = 1, v.weight_decay = 0.01, what = "nesterov";
      if (variant == 3 && k == AMD_OPT_RMSPROP)
        v.momentum = 0.5, v.weight_decay = 0.01, what = "momentum + decay";
      if (variant >= 2 && k != AMD_OPT_SGD && k != AMD_OPT_RMSPROP) continue;
      AMD_ASSERT(amd_optim_check(&v, &st) == 0);
      snprintf(label, sizeof label, "optim_step %s (%s)", amd_optim_name(&v), what);
      tk_optim_case(label, &v);
    }
  }
  { /* an id outside the list is an error on both, not a silent RMSprop */
    amd_optim bad;
    AMD_ASSERT(amd_optim_init("sgd", &bad, &st) == 0);
    bad.kind = (amd_opt_kind)AMD_OPT_COUNT;
    const int64_t n = 64;
    float *p = rand_floats(n, -1, 1), *g = rand_floats(n, -1, 1),
          *state = calloc((size_t)(2 * n), sizeof(float));
    float *dp = dev_floats(p, n), *dg = dev_floats(g, n), *ds = dev_floats(NULL, 2 * n);
    amd_optim_update u;
    amd_optim_update_make(&bad, 0.01, 1, &u);
    amd_status sc = {{0}}, sg = {{0}};
    const int rc = cpu_tk->optim_step(&u, p, g, state, n, 0, &sc),
              rg = gpu_tk->optim_step(&u, dp, dg, ds, n, 0, &sg);
    const int ok =
        rc != 0 && rg != 0 && compare_floats("optim_step unknown id", "parameters unchanged", p, dp, 1, n, 0);
    printf("%s optim_step unknown id %d: cpu \"%s\", cuda \"%s\"\n", ok ? "ok  " : "FAIL", (int)bad.kind,
           sc.msg, sg.msg);
    count(ok);
    gpu->buf->mem_free(dp);
    gpu->buf->mem_free(dg);
    gpu->buf->mem_free(ds);
    free(p), free(g), free(state);
  }
}

/* The deferred steps of the CUDA stream: the loss, its sums and the finite
 * flag as the CPU's, and a cleared step guard stopping the guarded optimizer
 * step until guard_reset. */
static void tk_deferred(void) {
  const amd_stream *sm = gpu->stream;
  if (!sm || !sm->step_begin) {
    printf("FAIL deferred steps: the CUDA backend has no stream\n");
    failed++;
    return;
  }
  amd_status st = {{0}};
  const int64_t n = 50, c = 10, np = 777;
  float *z = rand_floats(n * c, -3, 3), *g = rand_floats(np, -1, 1), *p = rand_floats(np, -1, 1);
  int64_t *y = malloc((size_t)n * sizeof *y);
  for (int64_t i = 0; i < n; i++) y[i] = (int64_t)(gc_uniform() * (double)c);
  float *dzc = malloc((size_t)(n * c) * sizeof(float));
  amd_batch_stats bc = {0};
  double mc = 0;
  AMD_ASSERT(amd_train_softmax_xent(cpu_tk, z, y, n, c, 0.1f, 1.0f, dzc, NULL, &bc, &mc, &st) == 0);
  float *dzd = dev_floats(z, n * c), *dz = dev_floats(NULL, n * c), *dg = dev_floats(g, np),
        *dp = dev_floats(p, np);
  amd_optim o;
  AMD_ASSERT(amd_optim_init("sgd", &o, &st) == 0);
  amd_optim_update u;
  amd_optim_update_make(&o, 0.1, 1, &u);
  for (int round = 0; round < 2; round++) { /* round 1: a NaN gradient clears the guard */
    const int slot = round % AMD_STEP_SLOTS;
    if (round == 1) {
      g[np - 1] = NAN;
      AMD_ASSERT(gpu->buf->mem_from_host(dg, g, (size_t)np * sizeof(float), &st) == 0);
    }
    float *before = host_of(dp, np);
    int64_t m = 0;
    const int64_t *lab = NULL;
    const void *rows = NULL;
    int fin = -1;
    int ok = sm->guard_reset(&st) == 0 && sm->step_begin(y, n, slot, &st) == 0 &&
             sm->xent_defer(dzd, n, c, 0.1f, dz, &st) == 0 && sm->step_end(dg, np, &st) == 0 &&
             gpu_tk->optim_step(&u, dp, dg, NULL, np, 1, &st) == 0 && sm->step_finish(slot, &st) == 0 &&
             sm->step_collect(slot, &m, &lab, &rows, &fin, &st) == 0;
    if (!ok) printf("FAIL deferred step %d: %s\n", round, st.msg);
    const char *label = round ? "deferred step, NaN gradient" : "deferred step";
    if (ok) {
      amd_batch_stats bg = {0};
      const double mg = amd_xent_tally(rows, lab, m, NULL, &bg);
      ok = m == n && fabs(mc - mg) <= 1e-9 * fmax(1, fabs(mc)) && bc.top1 == bg.top1 && bc.top5 == bg.top5 &&
           fin == !round;
      printf("%s %s: mean loss %.17g vs %.17g, finite %d\n", ok ? "ok  " : "FAIL", label, mc, mg, fin);
      ok &= compare_floats(label, "dz", dzc, dz, 1, n * c, 1e-6);
      if (round == 1) { /* the guarded step changed nothing */
        ok &= compare_floats(label, "parameters unchanged (guard cleared)", before, dp, 1, np, 0);
      } else {
        float *ref = malloc((size_t)np * sizeof(float));
        memcpy(ref, before, (size_t)np * sizeof(float));
        AMD_ASSERT(cpu_tk->optim_step(&u, ref, g, NULL, np, 0, &st) == 0);
        ok &= compare_floats(label, "parameters after the guarded step", ref, dp, 1, np, 1e-6);
        free(ref);
      }
    }
    count(ok);
    free(before);
  }
  AMD_ASSERT(sm->guard_reset(&st) == 0);
  gpu->buf->mem_free(dzd);
  gpu->buf->mem_free(dz);
  gpu->buf->mem_free(dg);
  gpu->buf->mem_free(dp);
  free(z), free(g), free(p), free(y), free(dzc);
}

/* Batches assembled by the CUDA data_batch against the host's, through
 * batches.h (the same plan, the same random draws), uint8 and float splits. */
static void tk_batches(int f32) {
  amd_status st = {{0}};
  const int64_t n = 13, C = 3, H = 9, W = 8, batch = 6, chw = C * H * W;
  float mean[3] = {0.4f, 0.5f, 0.3f}, std[3] = {0.2f, 0.25f, 0.3f};
  amd_dataset ds = {
      .format = AMD_DATA_NONE, .c = C, .h = H, .w = W, .n_classes = 4, .mean = mean, .std = std};
  ds.train.n = n;
  ds.train.labels = malloc((size_t)n * sizeof(int64_t));
  if (f32)
    ds.train.f32 = rand_floats(n * chw, -1, 2);
  else
    ds.train.u8 = malloc((size_t)(n * chw));
  for (int64_t i = 0; i < n; i++) ds.train.labels[i] = i % 4;
  for (int64_t i = 0; !f32 && i < n * chw; i++) ds.train.u8[i] = (uint8_t)(gc_uniform() * 256);
  amd_batches bd, bh;
  const char *label =
      f32 ? "data_batch float split (crop, flip, cutout)" : "data_batch uint8 split (crop, flip, cutout)";
  int ok = amd_batches_open(&bd, gpu, 0, &ds, &ds.train, batch, "test", &st) == 0;
  ok = ok && amd_batches_open(&bh, gpu, 1, &ds, &ds.train, batch, "test", &st) == 0;
  if (ok && !bd.be) {
    printf("FAIL %s: batches not assembled on the GPU\n", label);
    ok = 0;
  }
  const amd_augment aug = {.pad_crop = 2, .hflip = 1, .cutout = 3};
  uint64_t rd = 42, rh = 42;
  int64_t idx[6] = {12, 0, 5, 7, 3, 9}, yd[6], yh[6];
  for (int round = 0; ok && round < 3; round++) {
    const int64_t k = round == 2 ? 4 : batch; /* a short last batch */
    ok = amd_batches_make(&bd, idx, k, &aug, &rd, yd, &st) == 0 &&
         amd_batches_make(&bh, idx, k, &aug, &rh, yh, &st) == 0;
    for (int64_t i = 0; ok && i < k; i++) ok = yd[i] == yh[i];
    ok = ok && rd == rh && compare_floats(label, "x", bh.x.data, bd.x.data, 1, k * chw, 0);
    idx[round] = (idx[round] + 1) % n;
  }
  if (!ok && st.msg[0]) printf("FAIL %s: %s\n", label, st.msg);
  count(ok);
  amd_batches_close(&bd);
  amd_batches_close(&bh);
  free(ds.train.labels);
  free(ds.train.u8);
  free(ds.train.f32);
}

static void train_kernels(void) {
  tk_softmax_xent(37, 10, 0, 1, 0);
  tk_softmax_xent(37, 10, 0.1f, 1, 0);
  tk_softmax_xent(5, 1000, 0.1f, 256, 0);
  tk_softmax_xent(8, 10, 0, 1, 1);
  tk_elementwise();
  tk_optimizers();
  tk_deferred();
  tk_batches(0);
  tk_batches(1);
}

int main(int argc, char **argv) {
  (void)gradcheck, (void)gc_summary; /* gradcheck.h's finite differences are not used here */
  char why[256] = "";
  if (amd_cuda_device_count(why, sizeof why) <= 0) {
    printf("SKIP: no CUDA device (%s)\n", why);
    return 77;
  }
  if (argc > 1 && strcmp(argv[1], "--probe") == 0) return 0;
  amd_status st = {{0}};
  amd_cuda_poison_outputs(amd_env_read().faults.cuda_poison_outputs); /* the poisoned run of the suite */
  if (amd_cuda_backend_open(0, 0, &gpu, &st)) {
    printf("FAIL: %s\n", st.msg);
    return 1;
  }
  cpu_tk = amd_train_kernels_for(AMD_DEVICE_CPU);
  if (amd_train_kernels_add(&amd_train_kernels_cuda, &st) || !(gpu_tk = amd_train_kernels_for(gpu->device)) ||
      !cpu_tk) {
    printf("FAIL: training kernels: %s\n", st.msg);
    return 1;
  }
  amd_mult am16;
  if (amd_mult_parse("am16", &am16, &st)) {
    printf("FAIL: %s\n", st.msg);
    return 1;
  }
  gemm_ops(NULL, "acc32");
  gemm_ops(&am16, "am16");
  amd_cuda_gemm_exact(1); /* am16's other GEMM tier */
  gemm_ops(&am16, "am16, exact tier");
  amd_cuda_gemm_exact(0);
  fused_ops();
  other_ops();
  training_path_ops();
  train_kernels();
  /* no kernel untested: every op the backend has kernels for ran natively in some case above */
  for (int i = 0; i < AMD_OP_COUNT; i++) {
    if (!amd_cuda_has_kernel(i) || covered[i]) continue;
    printf("FAIL the CUDA backend has kernels for %s, and no case of this test runs them\n", amd_ops[i]->name);
    failed++;
  }
  amd_mult_free(&am16);
  amd_cuda_backend_close();
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}

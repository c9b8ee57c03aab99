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
 * another order; Dropout and the pools' gradients are compared exactly). The
 * GEMM ops run in acc32 and in am16 (forward and both backward GEMMs).
 *
 * Without a usable GPU: prints SKIP and exits 77. `--probe` only does that
 * check (0: a GPU is there), for the scripts of this suite. */
#include "../grad/gradcheck.h"

#include "../../cuda/backend_cuda.h"
#include "exec/backend.h"
#include "mult/mult.h"

static const amd_backend *gpu;
static int passed, failed;

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
  for (int k = 0; k < n_in; k++) {
    if (!in[k]) continue;
    dev_in[k] = &din_in[k];
    if (in[k]->dtype == AMD_FLOAT)
      AMD_ASSERT(amd_backend_upload(gpu, in[k], &din_in[k], &st) == 0);
    else
      din_in[k] = *in[k]; /* shape and index inputs stay on the host */
  }
  int native = gpu->compute->supports(&g.node, (const amd_tensor *const *)dev_in);
  if (native != want_native) {
    printf("FAIL %s: native() = %d, expected %d\n", label, native, want_native);
    ok = 0;
  }
  amd_ctx cctx = {.training = train, .inference = !train, .rng = 777}, gctx = cctx;
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
    amd_tensor dy = gc_tensor(AMD_FLOAT, cpu_out[0].rank, cpu_out[0].dims, -1, 1), ddy = {0};
    AMD_ASSERT(amd_backend_upload(gpu, &dy, &ddy, &st) == 0);
    amd_tensor cg[8], gg[8], *cdin[8] = {0}, *gdin[8] = {0};
    memset(cg, 0, sizeof cg);
    memset(gg, 0, sizeof gg);
    for (int k = 0; k < n_in; k++) {
      if (!((grad_mask >> k) & 1) || !in[k]) continue;
      cg[k] = gc_tensor(AMD_FLOAT, in[k]->rank, in[k]->dims, -0.5, 0.5);
      AMD_ASSERT(amd_backend_upload(gpu, &cg[k], &gg[k], &st) == 0);
      cdin[k] = &cg[k];
      gdin[k] = &gg[k];
    }
    const amd_tensor *cdo[8] = {&dy}, *gdo[8] = {&ddy};
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
    for (int k = 0; k < n_in; k++) {
      amd_tensor_free(&cg[k]);
      if (gg[k].data) gpu->buf->free(&gg[k]);
    }
    amd_tensor_free(&dy);
    gpu->buf->free(&ddy);
  }
  ok ? passed++ : failed++;
done:
  for (int o = 0; o < n_out; o++) {
    amd_tensor_free(&cpu_out[o]);
    if (gpu_out[o].data) gpu->buf->free(&gpu_out[o]);
  }
  for (int k = 0; k < n_in; k++)
    if (in[k] && in[k]->dtype == AMD_FLOAT) gpu->buf->free(&din_in[k]);
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
    FREE(in2, 2);
  }
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
  amd_tensor x = T(4, xd, -2, 2), *in1[1] = {&x};
  run_case("Relu", "Relu", 14, NULL, 0, in1, 1, 1, NULL, 1, 1, 1, 1e-6);
  run_case("Sigmoid", "Sigmoid", 13, NULL, 0, in1, 1, 1, NULL, 1, 1, 1, 1e-5);
  run_case("Tanh", "Tanh", 13, NULL, 0, in1, 1, 1, NULL, 1, 1, 1, 1e-5);
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
  { /* a size that is no multiple of 4: the one-element forms of the vectorised kernels */
    int64_t od[4] = {3, 5, 7, 1};
    amd_tensor p = T(4, od, -2, 2), q = T(4, od, 0.5, 2), *one[1] = {&p}, *two[2] = {&p, &q};
    run_case("Relu, odd size", "Relu", 14, NULL, 0, one, 1, 1, NULL, 1, 1, 1, 1e-6);
    run_case("Mul same shape, odd size", "Mul", 14, NULL, 0, two, 2, 1, NULL, 3, 1, 1, 1e-6);
    amd_tensor_free(&p);
    amd_tensor_free(&q);
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
  { /* host fallback: ops without kernels, and a Conv-1d */
    int64_t perm[4] = {0, 2, 3, 1};
    Onnx__AttributeProto *a[1] = {gc_attr_ints("perm", 4, perm)};
    run_case("Transpose (host fallback)", "Transpose", 13, a, 1, in1, 1, 1, NULL, 1, 1, 0, 0);
    gc_attrs_free(a, 1);
    Onnx__AttributeProto *l[1] = {gc_attr_int("size", 3)};
    run_case("LRN (host fallback)", "LRN", 13, l, 1, in1, 1, 1, NULL, 1, 1, 0, 1e-6);
    gc_attrs_free(l, 1);
    int64_t xd1[3] = {2, 3, 10}, wd1[3] = {4, 3, 3};
    amd_tensor x1 = T(3, xd1, -1, 1), w1 = T(3, wd1, -1, 1), *in2[2] = {&x1, &w1};
    run_case("Conv-1d (host fallback)", "Conv", 13, NULL, 0, in2, 2, 1, NULL, 3, 1, 0, 1e-6);
    FREE(in2, 2);
    amd_tensor *in3[1] = {&x};
    run_case("ReduceMean all axes (native)", "ReduceMean", 13, NULL, 0, in3, 1, 1, NULL, 1, 1, 1, 1e-6);
    int64_t sp[2] = {2, 3}, mid[1] = {1};
    Onnx__AttributeProto *r[2] = {gc_attr_ints("axes", 2, sp), gc_attr_int("keepdims", 0)};
    run_case("ReduceMean axes 2,3 (native)", "ReduceMean", 13, r, 2, in3, 1, 1, NULL, 1, 1, 1, 1e-6);
    gc_attrs_free(r, 2);
    Onnx__AttributeProto *q[1] = {gc_attr_ints("axes", 1, mid)};
    run_case("ReduceMean axis 1 (host fallback)", "ReduceMean", 13, q, 1, in3, 1, 1, NULL, 1, 1, 0, 1e-6);
    gc_attrs_free(q, 1);
  }
  amd_tensor_free(&x);
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
  if (amd_cuda_backend_open(0, 0, &gpu, &st)) {
    printf("FAIL: %s\n", st.msg);
    return 1;
  }
  amd_mult am16;
  if (amd_mult_parse("am16", &am16, &st)) {
    printf("FAIL: %s\n", st.msg);
    return 1;
  }
  gemm_ops(NULL, "acc32");
  gemm_ops(&am16, "am16");
  other_ops();
  amd_mult_free(&am16);
  amd_cuda_backend_close();
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}

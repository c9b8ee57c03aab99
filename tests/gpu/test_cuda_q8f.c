/* The CUDA kernels of Conv[q8f], Gemm[q8f] and MatMul[q8f] (cuda/ops/q8f.cu)
 * against their CPU ops (src/ops/qlinear.c), GPU suite.
 *
 * Each case binds the float node twice (one for the CPU, one for the GPU:
 * each has its own calibration state), turns both into the q8f op of a q8
 * mode (amd_q8_float_node), checks that the CUDA backend runs it natively,
 * and runs six forward calls on both with new data each time (the first
 * four calibrate the data range, the last two reach past it and saturate)
 * and weights that move between calls: outputs must be the same bits, and
 * the calibration states (calls, lo, hi) equal after every call. Then the
 * backward (the clipped straight-through estimator) with a random dY into
 * gradient buffers holding random values: within 2e-4 of the CPU (the float
 * op's GEMMs sum in another order), and again written over NaN where the
 * backend says it may. Modes: q8u:exact and q8s:exact (the int8 tensor
 * cores), approximate tables that fit int16 (q8s) and uint16 (q8u), and one
 * whose entries need int32. One case has NaN, -0 and huge values in the data
 * (forward only).
 *
 * The table-derived backward (--q8-grad table, cuda/q8_grad.h): every case
 * with a backward again with both nodes set to AMD_Q8_GRAD_TABLE and their
 * inputs on grids (data in 1/8, weights in 1/4, dY in 1/4, the gradient
 * buffers in 1/16) where every sum of the float op's backward is exact in
 * any order (and in TF32): the straight-through part is then the same on
 * both, and the table's sums, kept in the CPU's order on the GPU, make the
 * whole gradient the same bits. With an approximate table the test also
 * checks that the table's terms moved the CPU's gradients away from the
 * straight-through ones (so that a GPU that left them out fails).
 *
 * The percentile calibration (--q8-calib percentile:P, amd_q8f_percentile_range):
 * the straight-through cases again with P = 99 and 99.99 on both nodes and a
 * few outliers in the data of every calibrating call (and in the wild case a
 * huge one): the calibration state must be the same bits after every call (the
 * device's histogram and edges against the CPU's), and the range must lie
 * inside the min / max one's. Exits 1 on any failure, 77 without a GPU. */
#include "../grad/gradcheck.h"

#include "../../cuda/backend_cuda.h"
#include "exec/backend.h"
#include "mult/mult.h"
#include "mult/q8.h"
#include "ops/q8f.h"
#include "ops/quant.h"

static const amd_backend *gpu;
static int passed, failed;
/* forward calls before the backward: 6, or fewer for a backward while the data range still calibrates */
static int fwd_calls = 6;
/* the calibration: 0 min / max, else the percentile P (amd_q8_float_set_calib) */
static double calib_pct = 0;

static void fill(amd_tensor *t, double lo, double hi) {
  for (int64_t i = 0; i < amd_tensor_numel(t); i++) ((float *)t->data)[i] = (float)(lo + (hi - lo) * gc_uniform());
}

/* Output bits: any NaN equals any NaN. */
static int same_bits(const char *label, int call, const amd_tensor *ref, const amd_tensor *got) {
  amd_status st = {{0}};
  amd_tensor h = {0};
  if (amd_backend_download(gpu, got, &h, &st)) {
    printf("FAIL %s: download: %s\n", label, st.msg);
    return 0;
  }
  int64_t bad = 0, first = -1;
  const int64_t n = amd_tensor_numel(ref);
  for (int64_t i = 0; i < n; i++) {
    uint32_t a, b;
    memcpy(&a, (const float *)ref->data + i, 4);
    memcpy(&b, (const float *)h.data + i, 4);
    const int na = (a & 0x7FFFFFFFu) > 0x7F800000u, nb = (b & 0x7FFFFFFFu) > 0x7F800000u;
    if (na ? !nb : a != b) {
      if (first < 0) first = i;
      bad++;
    }
  }
  int ok = bad == 0 && amd_same_shape(ref, &h);
  if (!ok)
    printf("FAIL %s: call %d: %lld of %lld outputs differ (first [%lld]: cpu %.9g gpu %.9g)\n", label, call,
           (long long)bad, (long long)n, (long long)first, first >= 0 ? ((const float *)ref->data)[first] : 0.0,
           first >= 0 ? ((const float *)h.data)[first] : 0.0);
  amd_tensor_free(&h);
  return ok;
}

static int close_to(const char *label, const char *what, int k, const amd_tensor *ref, const amd_tensor *got,
                    double tol) {
  amd_status st = {{0}};
  amd_tensor h = {0};
  if (amd_backend_download(gpu, got, &h, &st)) {
    printf("FAIL %s: download: %s\n", label, st.msg);
    return 0;
  }
  double md = 0, scale = 1;
  for (int64_t i = 0; i < amd_tensor_numel(ref); i++) scale = fmax(scale, fabs(((const float *)ref->data)[i]));
  for (int64_t i = 0; i < amd_tensor_numel(ref); i++) {
    double d = fabs((double)((const float *)ref->data)[i] - (double)((const float *)h.data)[i]);
    if (isnan(d)) d = INFINITY;
    md = fmax(md, d);
  }
  const int ok = md <= tol * scale;
  printf("%s %s: %s %d max |diff| %.3g (tol %.3g)\n", ok ? "ok  " : "FAIL", label, what, k, md, tol * scale);
  amd_tensor_free(&h);
  return ok;
}

/* Rounds t's values to multiples of step. */
static void to_grid(amd_tensor *t, float step) {
  float *v = t->data;
  for (int64_t i = 0; i < amd_tensor_numel(t); i++) v[i] = rintf(v[i] / step) * step;
}

/* The largest |a - b| over two host tensors of the same shape. */
static double max_diff(const amd_tensor *a, const amd_tensor *b) {
  double md = 0;
  for (int64_t i = 0; i < amd_tensor_numel(a); i++)
    md = fmax(md, fabs((double)((const float *)a->data)[i] - (double)((const float *)b->data)[i]));
  return md;
}

/* One case: in[0] data, in[1] weight, in[2] bias / C (may be NULL); wild: NaN, -0 and huge data values;
 * grad: the backward (AMD_Q8_GRAD_TABLE: inputs on grids, gradients compared bit for bit; table_terms: the
 * table's terms must show). */
static void q8f_case(const char *label, const char *op, Onnx__AttributeProto **attrs, int n_attrs, amd_tensor **in,
                     int n_in, const amd_mult *m, unsigned grad_mask, int wild, int grad, int table_terms) {
  amd_status st = {{0}};
  gc_node gcpu, ggpu;
  int ok = 1;
  if (gc_bind(&gcpu, op, 13, attrs, n_attrs, in, n_in, 1, &st) || gc_bind(&ggpu, op, 13, attrs, n_attrs, in, n_in, 1, &st)) {
    printf("FAIL %s: bind: %s\n", label, st.msg);
    failed++;
    return;
  }
  gcpu.node.mult = ggpu.node.mult = m;
  if (amd_q8_float_node(&gcpu.node, &st) || amd_q8_float_node(&ggpu.node, &st)) {
    printf("FAIL %s: %s\n", label, st.msg);
    failed++;
    free(gcpu.node.attrs);
    free(ggpu.node.attrs);
    return;
  }
  const int table = grad == AMD_Q8_GRAD_TABLE;
  amd_q8_float_set_grad(&gcpu.node, grad);
  amd_q8_float_set_grad(&ggpu.node, grad);
  amd_q8_float_set_calib(&gcpu.node, calib_pct);
  amd_q8_float_set_calib(&ggpu.node, calib_pct);
  double data_lo = 0, data_hi = 0; /* the min / max calibration's range, for the percentile's */
  if (table) to_grid(in[1], 0.25f);
  amd_tensor dev[8], *dev_in[8] = {0}, cpu_out = {0}, gpu_out = {0};
  memset(dev, 0, sizeof dev);
  const float w0 = ((float *)in[1]->data)[0];
  for (int call = 0; call < fwd_calls && ok; call++) {
    /* new data each call: calibration widens the range, then the last calls saturate */
    const double r = call < 4 ? 0.5 + 0.3 * call : 3.0;
    fill(in[0], -r, call == 1 ? 0.0 : r);
    if (table) to_grid(in[0], 0.125f);
    if (wild && (call == 2 || call == 4)) { /* NaN and -0 while calibrating; huge values after */
      float *x = in[0]->data;
      const int64_t nx = amd_tensor_numel(in[0]);
      x[0] = NAN, x[1 % nx] = -0.0f;
      if (call == 4) x[2 % nx] = 1e30f, x[3 % nx] = -1e30f, x[4 % nx] = INFINITY;
      if (calib_pct > 0 && call == 2) x[2 % nx] = 1e30f; /* one huge outlier in the histogram */
    }
    if (calib_pct > 0 && call < 4) { /* outliers, for the percentile to cut off */
      float *x = in[0]->data;
      const int64_t nx = amd_tensor_numel(in[0]);
      x[(nx / 2 + 5) % nx] = (float)(-20 * r), x[(nx / 3 + 7) % nx] = (float)(30 * r);
    }
    if (call < 4)
      for (int64_t i = 0; i < amd_tensor_numel(in[0]); i++) {
        const float v = ((const float *)in[0]->data)[i];
        if (v < data_lo) data_lo = v;
        if (v > data_hi) data_hi = v;
      }
    ((float *)in[1]->data)[0] = w0 + 0.25f * (float)call; /* the weights' ranges move */
    for (int k = 0; k < n_in; k++) {
      if (dev_in[k]) gpu->buf->free(&dev[k]);
      dev_in[k] = NULL;
      if (!in[k]) continue;
      AMD_ASSERT(amd_backend_upload(gpu, in[k], &dev[k], &st) == 0);
      dev_in[k] = &dev[k];
    }
    if (call == 0 && !gpu->compute->supports(&ggpu.node, (const amd_tensor *const *)dev_in)) {
      printf("FAIL %s: %s is not native on the GPU\n", label, ggpu.node.op->name);
      ok = 0;
      break;
    }
    amd_ctx cctx = {.training = 1, .rng = 7}, gctx = cctx;
    amd_tensor_free(&cpu_out);
    if (gpu_out.data) gpu->buf->free(&gpu_out);
    if (amd_backend_forward_node(&amd_backend_cpu, &gcpu.node, &cctx, (const amd_tensor *const *)in, &cpu_out, 0,
                                 &st)) {
      printf("FAIL %s: cpu forward: %s\n", label, st.msg);
      ok = 0;
      break;
    }
    if (amd_backend_forward_node(gpu, &ggpu.node, &gctx, (const amd_tensor *const *)dev_in, &gpu_out, 0, &st)) {
      printf("FAIL %s: gpu forward: %s\n", label, st.msg);
      ok = 0;
      break;
    }
    ok &= same_bits(label, call, &cpu_out, &gpu_out);
    amd_q8f_state sc, sg;
    amd_q8f_get_state(&gcpu.node, &sc);
    amd_q8f_get_state(&ggpu.node, &sg);
    if (sc.calls != sg.calls || sc.lo != sg.lo || sc.hi != sg.hi) {
      printf("FAIL %s: call %d: calibration state cpu (%d, %.17g, %.17g) gpu (%d, %.17g, %.17g)\n", label, call,
             sc.calls, sc.lo, sc.hi, sg.calls, sg.lo, sg.hi);
      ok = 0;
    }
    if (calib_pct > 0 && !(sc.lo >= data_lo && sc.hi <= data_hi && sc.lo <= 0 && sc.hi >= 0)) {
      printf("FAIL %s: call %d: percentile range [%.9g, %.9g] not inside the data's [%.9g, %.9g] with 0\n", label,
             call, sc.lo, sc.hi, data_lo, data_hi);
      ok = 0;
    }
  }
  if (ok && !table) printf("ok   %s: %d forward calls, same bits and calibration\n", label, fwd_calls);
  if (ok && grad_mask && !wild) {
    amd_tensor dy = gc_tensor(AMD_FLOAT, cpu_out.rank, cpu_out.dims, -1, 1), ddy = {0};
    if (table) to_grid(&dy, 0.25f);
    AMD_ASSERT(amd_backend_upload(gpu, &dy, &ddy, &st) == 0);
    const unsigned ow = gpu->compute->bwd_overwrite(&ggpu.node, (const amd_tensor *const *)dev_in) & grad_mask;
    for (int pass = 0; pass < 2 && ok; pass++) {
      if (pass == 1 && !ow) break;
      amd_tensor cg[8], gg[8], *cdin[8] = {0}, *gdin[8] = {0};
      memset(cg, 0, sizeof cg);
      memset(gg, 0, sizeof gg);
      for (int k = 0; k < n_in; k++) {
        if (!((grad_mask >> k) & 1) || !in[k]) continue;
        cg[k] = gc_tensor(AMD_FLOAT, in[k]->rank, in[k]->dims, -0.5, 0.5);
        if (table) to_grid(&cg[k], 0.0625f);
        amd_tensor h = cg[k];
        if (pass == 1 && ((ow >> k) & 1)) { /* the GPU writes over NaN, the CPU adds to zeros */
          h = gc_tensor(AMD_FLOAT, in[k]->rank, in[k]->dims, 0, 0);
          memcpy(cg[k].data, h.data, amd_tensor_nbytes(&h));
          for (int64_t e = 0; e < amd_tensor_numel(&h); e++) ((float *)h.data)[e] = NAN;
        }
        AMD_ASSERT(amd_backend_upload(gpu, &h, &gg[k], &st) == 0);
        if (h.data != cg[k].data) amd_tensor_free(&h);
        cdin[k] = &cg[k];
        gdin[k] = &gg[k];
      }
      const amd_tensor *cdo[1] = {&dy}, *gdo[1] = {&ddy};
      amd_ctx cctx = {.training = 1, .rng = 7}, gctx = cctx;
      gctx.bwd_overwrite = pass == 1 ? ow : 0;
      amd_tensor ste[8];
      memset(ste, 0, sizeof ste);
      if (ok && table && table_terms && pass == 0) { /* the CPU's straight-through gradients, from the same buffers */
        amd_tensor *sdin[8] = {0};
        for (int k = 0; k < n_in; k++)
          if (cdin[k]) {
            ste[k] = gc_tensor(AMD_FLOAT, in[k]->rank, in[k]->dims, 0, 0);
            memcpy(ste[k].data, cg[k].data, amd_tensor_nbytes(&cg[k])); /* the starting values */
            sdin[k] = &ste[k];
          }
        amd_q8_float_set_grad(&gcpu.node, AMD_Q8_GRAD_STE);
        amd_ctx sctx = {.training = 1, .rng = 7};
        if (amd_backend_backward_node(&amd_backend_cpu, &gcpu.node, &sctx, (const amd_tensor *const *)in, &cpu_out,
                                      cdo, sdin, &st)) {
          printf("FAIL %s: straight-through backward: %s\n", label, st.msg);
          ok = 0;
        }
        amd_q8_float_set_grad(&gcpu.node, grad);
      }
      if (ok && amd_backend_backward_node(&amd_backend_cpu, &gcpu.node, &cctx, (const amd_tensor *const *)in,
                                          &cpu_out, cdo, cdin, &st)) {
        printf("FAIL %s: backward: %s\n", label, st.msg);
        ok = 0;
      }
      if (ok && amd_backend_backward_node(gpu, &ggpu.node, &gctx, (const amd_tensor *const *)dev_in, &gpu_out, gdo,
                                          gdin, &st)) {
        printf("FAIL %s: backward: %s\n", label, st.msg);
        ok = 0;
      }
      for (int k = 0; ok && k < n_in; k++) {
        if (!cdin[k]) continue;
        if (!table) {
          ok &= close_to(label, pass ? "gradient (written over NaN) of input" : "gradient of input", k, &cg[k],
                         &gg[k], 2e-4);
          continue;
        }
        char what[200];
        snprintf(what, sizeof what, "%s: table-derived gradient of input %d%s", label, k,
                 pass ? " (written over NaN)" : "");
        const int same = same_bits(what, 0, &cg[k], &gg[k]);
        ok &= same;
        if (ste[k].data && k < 2) { /* data and weight: the table's terms must have moved them */
          const double md = max_diff(&cg[k], &ste[k]);
          if (!(md > 1e-3)) {
            printf("FAIL %s: the table's terms do not show in the gradient of input %d (max |table - ste| %.3g)\n",
                   label, k, md);
            ok = 0;
          } else if (same) {
            printf("ok   %s: gradient of input %d: same bits (table terms up to %.3g)\n", label, k, md);
          }
        } else if (same) {
          printf("ok   %s: gradient%s of input %d: same bits\n", label, pass ? " (written over NaN)" : "", k);
        }
      }
      for (int k = 0; k < n_in; k++) amd_tensor_free(&ste[k]);
      amd_q8f_state sc, sg; /* the backward calibrates nothing */
      amd_q8f_get_state(&gcpu.node, &sc);
      amd_q8f_get_state(&ggpu.node, &sg);
      const int want_calls = fwd_calls < amd_q8f_calib_calls() ? fwd_calls : amd_q8f_calib_calls();
      if (sc.calls != want_calls || sg.calls != want_calls || sc.lo != sg.lo || sc.hi != sg.hi) {
        printf("FAIL %s: after the backward: calibration state cpu (%d, %.17g, %.17g) gpu (%d, %.17g, %.17g), "
               "%d calls expected\n", label, sc.calls, sc.lo, sc.hi, sg.calls, sg.lo, sg.hi, want_calls);
        ok = 0;
      }
      for (int k = 0; k < n_in; k++) {
        amd_tensor_free(&cg[k]);
        if (gg[k].data) gpu->buf->free(&gg[k]);
      }
    }
    amd_tensor_free(&dy);
    gpu->buf->free(&ddy);
  }
  ok ? passed++ : failed++;
  amd_tensor_free(&cpu_out);
  if (gpu_out.data) gpu->buf->free(&gpu_out);
  for (int k = 0; k < n_in; k++)
    if (dev_in[k]) gpu->buf->free(&dev[k]);
  free(gcpu.node.attrs);
  free(ggpu.node.attrs);
}

static amd_tensor T(int rank, const int64_t *dims) { return gc_tensor(AMD_FLOAT, rank, dims, -1, 1); }
static void FREE(amd_tensor **in, int n) {
  for (int k = 0; k < n; k++)
    if (in[k]) amd_tensor_free(in[k]);
}

/* The cases in backward mode grad (AMD_Q8_GRAD_TABLE: those with a backward; table_terms: the table is
 * approximate, its terms must show). */
static void cases(const amd_mult *m, const char *mname, int grad, int table_terms) {
  char label[200];
  const int table = grad == AMD_Q8_GRAD_TABLE;
  char mbuf[120];
  if (table) {
    snprintf(mbuf, sizeof mbuf, "%s --q8-grad table", mname);
    mname = mbuf;
  }
  { /* Conv 3x3 pad 1, bias */
    int64_t xd[4] = {2, 3, 9, 9}, wd[4] = {4, 3, 3, 3}, bd[1] = {4}, pads[4] = {1, 1, 1, 1};
    amd_tensor x = T(4, xd), w = T(4, wd), b = T(1, bd), *in[3] = {&x, &w, &b};
    Onnx__AttributeProto *a[1] = {gc_attr_ints("pads", 4, pads)};
    snprintf(label, sizeof label, "Conv[q8f] 3x3 pad1 bias %s", mname);
    q8f_case(label, "Conv", a, 1, in, 3, m, 7, 0, grad, table_terms);
    snprintf(label, sizeof label, "Conv[q8f] 3x3 pad1 bias, NaN / -0 / huge data %s", mname);
    if (!table) q8f_case(label, "Conv", a, 1, in, 3, m, 0, 1, grad, table_terms);
    gc_attrs_free(a, 1);
    FREE(in, 3);
  }
  { /* Conv 3x3 pad 1, 16 -> 72 channels: more than one tile of rows, K = 144 */
    int64_t xd[4] = {4, 16, 12, 12}, wd[4] = {72, 16, 3, 3}, pads[4] = {1, 1, 1, 1};
    amd_tensor x = T(4, xd), w = T(4, wd), *in[2] = {&x, &w};
    Onnx__AttributeProto *a[1] = {gc_attr_ints("pads", 4, pads)};
    snprintf(label, sizeof label, "Conv[q8f] 3x3 16->72 %s", mname);
    q8f_case(label, "Conv", a, 1, in, 2, m, 3, 0, grad, table_terms);
    gc_attrs_free(a, 1);
    FREE(in, 2);
  }
  { /* Conv stride 2, dilation 2, asymmetric pads, groups 2 */
    int64_t xd[4] = {3, 4, 11, 10}, wd[4] = {6, 2, 3, 2}, s[2] = {2, 1}, dl[2] = {2, 1}, p[4] = {1, 0, 2, 1};
    amd_tensor x = T(4, xd), w = T(4, wd), *in[2] = {&x, &w};
    Onnx__AttributeProto *a[4] = {gc_attr_ints("strides", 2, s), gc_attr_ints("dilations", 2, dl),
                                  gc_attr_ints("pads", 4, p), gc_attr_int("group", 2)};
    snprintf(label, sizeof label, "Conv[q8f] strided dilated group2 %s", mname);
    q8f_case(label, "Conv", a, 4, in, 2, m, 3, 0, grad, table_terms);
    gc_attrs_free(a, 4);
    FREE(in, 2);
  }
  { /* Conv 3x3 pad 1, 64 -> 8 channels, 5 images: the table-derived backward's chunks (AMD_Q8G_CHUNK) hold 3
     * images; only the weight's gradient, then both */
    int64_t xd[4] = {5, 64, 32, 32}, wd[4] = {8, 64, 3, 3}, pads[4] = {1, 1, 1, 1};
    amd_tensor x = T(4, xd), w = T(4, wd), *in[2] = {&x, &w};
    Onnx__AttributeProto *a[1] = {gc_attr_ints("pads", 4, pads)};
    snprintf(label, sizeof label, "Conv[q8f] 3x3 64->8 batch 5, weight gradient only %s", mname);
    q8f_case(label, "Conv", a, 1, in, 2, m, 2, 0, grad, table_terms);
    snprintf(label, sizeof label, "Conv[q8f] 3x3 64->8 batch 5 %s", mname);
    q8f_case(label, "Conv", a, 1, in, 2, m, 3, 0, grad, table_terms);
    gc_attrs_free(a, 1);
    FREE(in, 2);
  }
  { /* Conv 1x1, 20 -> 70 channels */
    int64_t xd[4] = {2, 20, 6, 6}, wd[4] = {70, 20, 1, 1};
    amd_tensor x = T(4, xd), w = T(4, wd), *in[2] = {&x, &w};
    snprintf(label, sizeof label, "Conv[q8f] 1x1 %s", mname);
    q8f_case(label, "Conv", NULL, 0, in, 2, m, 3, 0, grad, table_terms);
    FREE(in, 2);
  }
  { /* Gemm transB, bias row; again with the backward after 2 forward calls (still calibrating) */
    int64_t ad[2] = {6, 20}, bd[2] = {7, 20}, cd[1] = {7};
    amd_tensor A = T(2, ad), B = T(2, bd), C = T(1, cd), *in[3] = {&A, &B, &C};
    Onnx__AttributeProto *a[1] = {gc_attr_int("transB", 1)};
    snprintf(label, sizeof label, "Gemm[q8f] transB bias %s", mname);
    q8f_case(label, "Gemm", a, 1, in, 3, m, 7, 0, grad, table_terms);
    snprintf(label, sizeof label, "Gemm[q8f] transB bias, backward while calibrating %s", mname);
    fwd_calls = 2;
    q8f_case(label, "Gemm", a, 1, in, 3, m, 7, 0, grad, table_terms);
    fwd_calls = 6;
    gc_attrs_free(a, 1);
    FREE(in, 3);
  }
  { /* Gemm, alpha, beta, full C, 130 columns */
    int64_t ad[2] = {9, 40}, bd[2] = {40, 130}, cd[2] = {9, 130};
    amd_tensor A = T(2, ad), B = T(2, bd), C = T(2, cd), *in[3] = {&A, &B, &C};
    Onnx__AttributeProto *a[2] = {gc_attr_float("alpha", 0.5f), gc_attr_float("beta", 2.0f)};
    snprintf(label, sizeof label, "Gemm[q8f] alpha beta %s", mname);
    q8f_case(label, "Gemm", a, 2, in, 3, m, 7, 0, grad, table_terms);
    gc_attrs_free(a, 2);
    FREE(in, 3);
  }
  { /* MatMul: shared B, broadcast batch, a 1-D B */
    int64_t ad[3] = {3, 4, 6}, bd[2] = {6, 5};
    amd_tensor A = T(3, ad), B = T(2, bd), *in[2] = {&A, &B};
    snprintf(label, sizeof label, "MatMul[q8f] shared B %s", mname);
    q8f_case(label, "MatMul", NULL, 0, in, 2, m, 3, 0, grad, table_terms);
    FREE(in, 2);
    int64_t a2[4] = {2, 1, 3, 4}, b2[3] = {3, 4, 5};
    amd_tensor A2 = T(4, a2), B2 = T(3, b2), *in2[2] = {&A2, &B2};
    snprintf(label, sizeof label, "MatMul[q8f] broadcast batch %s", mname);
    q8f_case(label, "MatMul", NULL, 0, in2, 2, m, 3, 0, grad, table_terms);
    FREE(in2, 2);
    int64_t a3[2] = {5, 7}, b3[1] = {7};
    amd_tensor A3 = T(2, a3), B3 = T(1, b3), *in3[2] = {&A3, &B3};
    snprintf(label, sizeof label, "MatMul[q8f] 1-D B %s", mname);
    q8f_case(label, "MatMul", NULL, 0, in3, 2, m, 3, 0, grad, table_terms);
    FREE(in3, 2);
  }
}

/* The mode with its table replaced: the exact one plus noise of amplitude amp (or times mul); table_t kept
 * the transpose. */
static void retable(amd_mult *m, int amp, int mul) {
  const int sgn = m->q8 == 's';
  for (int a = 0; a < 256; a++)
    for (int b = 0; b < 256; b++) {
      int32_t v = amd_q8_value(a, sgn) * amd_q8_value(b, sgn) * mul;
      if (amp) v += (int32_t)(gc_uniform() * (2 * amp + 1)) - amp;
      if (!sgn && v < 0) v = -v;
      m->q8_table[a * 256 + b] = v;
      m->q8_table_t[b * 256 + a] = v;
    }
  amd_q8_grad_tables(sgn, m->q8_table, m->q8_ea, m->q8_eb); /* the slopes of the new table */
}

int main(int argc, char **argv) {
  (void)argc, (void)argv, (void)gradcheck, (void)gc_summary;
  char why[256] = "";
  if (amd_cuda_device_count(why, sizeof why) <= 0) {
    printf("SKIP: no CUDA device (%s)\n", why);
    return 77;
  }
  amd_status st = {{0}};
  if (amd_cuda_backend_open(0, 0, &gpu, &st)) {
    printf("FAIL: %s\n", st.msg);
    return 1;
  }
  amd_mult mu, ms, mua, msa, ms32;
  if (amd_mult_parse("q8u:exact", &mu, &st) || amd_mult_parse("q8s:exact", &ms, &st) ||
      amd_mult_parse("q8u:exact", &mua, &st) || amd_mult_parse("q8s:exact", &msa, &st) ||
      amd_mult_parse("q8s:exact", &ms32, &st)) {
    printf("FAIL: %s\n", st.msg);
    return 1;
  }
  retable(&mua, 300, 1); /* uint16 entries */
  retable(&msa, 200, 1); /* int16 */
  retable(&ms32, 0, 3);  /* up to 3 * 16384: int32 */
  for (int grad = AMD_Q8_GRAD_STE; grad <= AMD_Q8_GRAD_TABLE; grad++) {
    cases(&mu, "q8u:exact", grad, 0);
    cases(&ms, "q8s:exact", grad, 0);
    cases(&mua, "q8u approximate", grad, 1);
    cases(&msa, "q8s approximate", grad, 1);
    cases(&ms32, "q8s int32 table", grad, 1);
  }
  calib_pct = 99; /* the percentile calibration, both nodes */
  cases(&mu, "q8u:exact --q8-calib percentile:99", AMD_Q8_GRAD_STE, 0);
  cases(&msa, "q8s approximate --q8-calib percentile:99", AMD_Q8_GRAD_STE, 0);
  calib_pct = 99.99;
  cases(&mua, "q8u approximate --q8-calib percentile:99.99", AMD_Q8_GRAD_STE, 0);
  cases(&ms, "q8s:exact --q8-calib percentile:99.99", AMD_Q8_GRAD_TABLE, 0);
  calib_pct = 0;
  amd_mult_free(&mu), amd_mult_free(&ms), amd_mult_free(&mua), amd_mult_free(&msa), amd_mult_free(&ms32);
  amd_cuda_backend_close();
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}

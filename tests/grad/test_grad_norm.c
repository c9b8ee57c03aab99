/* Finite-difference checks of the backward passes in src/ops/norm.c,
 * layernorm.c, pool.c and activation.c: BatchNormalization (batch and running
 * statistics), LayerNormalization (with its values and shape errors), MaxPool,
 * AveragePool, GlobalAveragePool, GlobalMaxPool and the unary activations.
 *
 * Double tensors (tolerance 1e-6) wherever forward supports them; each op is
 * also checked once in float (h = 1e-2, tolerance 2e-2) to cover the float
 * code path. Inputs of ops with kinks (Relu, Abs, Clip, max pools) are kept
 * at least 0.05 away from the kinks and from each other, so that a step of h
 * never flips a branch or an argmax. */
#include "gradcheck.h"

#define ARRAY_LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* A tensor whose elements are a shuffled grid lo, lo + step, ...: all distinct,
 * >= step apart (no max-pool ties). */
static amd_tensor gc_grid(amd_dtype dt, int rank, const int64_t *dims, double lo, double step) {
  amd_tensor t = gc_tensor(dt, rank, dims, 0, 1);
  int64_t n = amd_tensor_numel(&t);
  for (int64_t i = 0; i < n; i++) amd_tensor_set_f64(&t, i, lo + step * (double)i);
  for (int64_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
    int64_t j = (int64_t)(gc_uniform() * (double)(i + 1));
    double a = amd_tensor_get_f64(&t, i), b = amd_tensor_get_f64(&t, j);
    amd_tensor_set_f64(&t, i, b);
    amd_tensor_set_f64(&t, j, a);
  }
  return t;
}

/* Moves every element at least `gap` away from each kink in k[0..nk). */
static void gc_avoid(amd_tensor *t, const double *k, int nk, double gap) {
  for (int64_t i = 0; i < amd_tensor_numel(t); i++) {
    double v = amd_tensor_get_f64(t, i);
    for (int j = 0; j < nk; j++)
      if (fabs(v - k[j]) < gap) v = v < k[j] ? k[j] - gap - fabs(v - k[j]) : k[j] + gap + fabs(v - k[j]);
    amd_tensor_set_f64(t, i, v);
  }
}

static double tol_for(amd_dtype dt) { return dt == AMD_DOUBLE ? 1e-6 : 2e-2; }
static const char *dt_name(amd_dtype dt) { return dt == AMD_DOUBLE ? "double" : "float"; }

/* ---- activations ---- */

/* One-input op on a [2,3,4,5] tensor uniform in [lo, hi), pushed away from kinks. */
static void check_unary(const char *op, int opset, Onnx__AttributeProto **attrs, int n_attrs, amd_dtype dt,
                        double lo, double hi, const double *kinks, int nk) {
  int64_t dims[] = {2, 3, 4, 5};
  amd_tensor x = gc_tensor(dt, 4, dims, lo, hi);
  if (nk) gc_avoid(&x, kinks, nk, 0.05);
  amd_tensor *in[] = {&x};
  char label[96];
  snprintf(label, sizeof label, "%s-%d %s", op, opset, dt_name(dt));
  gradcheck(label, op, opset, attrs, n_attrs, in, 1, 1, 1u, tol_for(dt));
  amd_tensor_free(&x);
}

static void test_activations(amd_dtype dt) {
  const double zero[] = {0};
  check_unary("Relu", 14, NULL, 0, dt, -2, 2, zero, 1);
  check_unary("Sigmoid", 13, NULL, 0, dt, -4, 4, NULL, 0);
  check_unary("Tanh", 13, NULL, 0, dt, -2, 2, NULL, 0);
  check_unary("Exp", 13, NULL, 0, dt, -2, 2, NULL, 0);
  check_unary("Log", 13, NULL, 0, dt, 0.5, 3, NULL, 0);
  check_unary("Sqrt", 13, NULL, 0, dt, 0.5, 3, NULL, 0);
  check_unary("Neg", 13, NULL, 0, dt, -2, 2, NULL, 0);
  check_unary("Abs", 13, NULL, 0, dt, -2, 2, zero, 1);
  check_unary("Reciprocal", 13, NULL, 0, dt, 0.5, 2, NULL, 0);
  Onnx__AttributeProto *a[] = {gc_attr_float("alpha", 0.2f)};
  check_unary("LeakyRelu", 16, a, 1, dt, -2, 2, zero, 1);
  gc_attrs_free(a, 1);
  /* HardSigmoid alpha 0.25, beta 0.4: kinks where 0.25 x + 0.4 is 0 or 1;
   * HardSwish (alpha 1/6, beta 1/2): kinks at -3 and 3. Both over all three
   * pieces. */
  const double khs[] = {-1.6, 2.4}, khw[] = {-3, 3};
  Onnx__AttributeProto *h[] = {gc_attr_float("alpha", 0.25f), gc_attr_float("beta", 0.4f)};
  check_unary("HardSigmoid", 6, h, 2, dt, -4, 4, khs, 2);
  gc_attrs_free(h, 2);
  check_unary("HardSwish", 14, NULL, 0, dt, -5, 5, khw, 2);
  check_unary("Erf", 13, NULL, 0, dt, -2.5, 2.5, NULL, 0);
  check_unary("Gelu", 20, NULL, 0, dt, -4, 4, NULL, 0);
  Onnx__AttributeProto *gt[] = {gc_attr_string("approximate", "tanh")};
  check_unary("Gelu", 20, gt, 1, dt, -4, 4, NULL, 0);
  gc_attrs_free(gt, 1);
  /* Clip-6: attributes. */
  const double k6[] = {-0.5, 0.75};
  Onnx__AttributeProto *c[] = {gc_attr_float("min", -0.5f), gc_attr_float("max", 0.75f)};
  check_unary("Clip", 6, c, 2, dt, -2, 2, k6, 2);
  gc_attrs_free(c, 2);

  /* Clip-13: min/max inputs (both, and max only). */
  int64_t dims[] = {2, 3, 4, 5};
  const double k13[] = {-0.3, 0.6};
  amd_tensor x = gc_tensor(dt, 4, dims, -1.5, 1.5);
  gc_avoid(&x, k13, 2, 0.05);
  amd_tensor lo = gc_tensor(dt, 0, NULL, -0.3, -0.3), hi = gc_tensor(dt, 0, NULL, 0.6, 0.6);
  amd_tensor_set_f64(&lo, 0, -0.3);
  amd_tensor_set_f64(&hi, 0, 0.6);
  amd_tensor *in3[] = {&x, &lo, &hi}, *in_hi[] = {&x, NULL, &hi};
  char label[96];
  snprintf(label, sizeof label, "Clip-13 min,max %s", dt_name(dt));
  gradcheck(label, "Clip", 13, NULL, 0, in3, 3, 1, 1u, tol_for(dt));
  snprintf(label, sizeof label, "Clip-13 max only %s", dt_name(dt));
  gradcheck(label, "Clip", 13, NULL, 0, in_hi, 3, 1, 1u, tol_for(dt));
  amd_tensor_free(&x);
  amd_tensor_free(&lo);
  amd_tensor_free(&hi);

  /* PRelu: slope [3,1,1] (per channel), a full-shape slope and a scalar slope. */
  int64_t sdims[] = {3, 1, 1}, one[] = {1};
  amd_tensor px = gc_tensor(dt, 4, dims, -2, 2);
  gc_avoid(&px, zero, 1, 0.05);
  amd_tensor s3 = gc_tensor(dt, 3, sdims, 0.1, 0.5), sfull = gc_tensor(dt, 4, dims, 0.1, 0.5);
  amd_tensor s1 = gc_tensor(dt, 1, one, 0.1, 0.5);
  amd_tensor *p3[] = {&px, &s3}, *pf[] = {&px, &sfull}, *p1[] = {&px, &s1};
  snprintf(label, sizeof label, "PRelu-16 slope[3,1,1] %s", dt_name(dt));
  gradcheck(label, "PRelu", 16, NULL, 0, p3, 2, 1, 3u, tol_for(dt));
  snprintf(label, sizeof label, "PRelu-16 slope full %s", dt_name(dt));
  gradcheck(label, "PRelu", 16, NULL, 0, pf, 2, 1, 3u, tol_for(dt));
  snprintf(label, sizeof label, "PRelu-9 slope[1] %s", dt_name(dt));
  gradcheck(label, "PRelu", 9, NULL, 0, p1, 2, 1, 3u, tol_for(dt));
  amd_tensor_free(&px);
  amd_tensor_free(&s3);
  amd_tensor_free(&sfull);
  amd_tensor_free(&s1);
}

/* ---- pools ---- */

static void check_pool(const char *label, const char *op, int opset, Onnx__AttributeProto **attrs,
                       int n_attrs, amd_dtype dt, int rank, const int64_t *dims, int n_out) {
  /* Grid values 0.05 apart: distinct, so argmaxes are stable under +-h. */
  amd_tensor x = gc_grid(dt, rank, dims, -4.0, 0.05);
  amd_tensor *in[] = {&x};
  char full[128];
  snprintf(full, sizeof full, "%s %s", label, dt_name(dt));
  gradcheck(full, op, opset, attrs, n_attrs, in, 1, n_out, 1u, tol_for(dt));
  amd_tensor_free(&x);
}

static void test_pools(amd_dtype dt) {
  int64_t d2[] = {2, 3, 7, 7}, d1[] = {2, 2, 11}, d3[] = {1, 2, 4, 5, 5};
  int64_t k3[] = {3, 3}, s2[] = {2, 2}, p1[] = {1, 1, 1, 1}, k2[] = {2, 2}, dil[] = {2, 2};
  int64_t p0101[] = {0, 1, 0, 1};

  /* MaxPool 3x3 stride 2 pad 1, ceil_mode 0 and 1; with Indices output too. */
  for (int ceil = 0; ceil <= 1; ceil++) {
    Onnx__AttributeProto *a[] = {gc_attr_ints("kernel_shape", 2, k3), gc_attr_ints("strides", 2, s2),
                                 gc_attr_ints("pads", 4, p1), gc_attr_int("ceil_mode", ceil)};
    check_pool(ceil ? "MaxPool-12 3x3/2 pad1 ceil" : "MaxPool-12 3x3/2 pad1", "MaxPool", 12, a, 4, dt, 4, d2,
               1);
    check_pool(ceil ? "MaxPool-12 3x3/2 pad1 ceil +Indices" : "MaxPool-12 3x3/2 pad1 +Indices", "MaxPool", 12,
               a, 4, dt, 4, d2, 2);
    check_pool(ceil ? "AveragePool-19 3x3/2 pad1 ceil" : "AveragePool-19 3x3/2 pad1", "AveragePool", 19, a, 4,
               dt, 4, d2, 1);
    gc_attrs_free(a, 4);
  }
  /* AveragePool count_include_pad both ways, with asymmetric pads and ceil_mode
   * (the last window hangs past the end padding). */
  for (int cip = 0; cip <= 1; cip++) {
    Onnx__AttributeProto *a[] = {gc_attr_ints("kernel_shape", 2, k3), gc_attr_ints("strides", 2, s2),
                                 gc_attr_ints("pads", 4, p0101), gc_attr_int("ceil_mode", 1),
                                 gc_attr_int("count_include_pad", cip)};
    check_pool(cip ? "AveragePool-19 cip=1 ceil pads0101" : "AveragePool-19 cip=0 ceil pads0101",
               "AveragePool", 19, a, 5, dt, 4, d2, 1);
    gc_attrs_free(a, 5);
    Onnx__AttributeProto *b[] = {gc_attr_ints("kernel_shape", 2, k3), gc_attr_ints("pads", 4, p1),
                                 gc_attr_int("count_include_pad", cip)};
    check_pool(cip ? "AveragePool-11 3x3/1 pad1 cip=1" : "AveragePool-11 3x3/1 pad1 cip=0", "AveragePool", 11,
               b, 3, dt, 4, d2, 1);
    gc_attrs_free(b, 3);
  }
  /* Dilation and SAME_UPPER (2-D fast path). */
  {
    Onnx__AttributeProto *a[] = {gc_attr_ints("kernel_shape", 2, k2), gc_attr_ints("dilations", 2, dil)};
    check_pool("MaxPool-12 2x2 dil2", "MaxPool", 12, a, 2, dt, 4, d2, 1);
    check_pool("AveragePool-19 2x2 dil2", "AveragePool", 19, a, 2, dt, 4, d2, 1);
    gc_attrs_free(a, 2);
    Onnx__AttributeProto *b[] = {gc_attr_ints("kernel_shape", 2, k3), gc_attr_ints("strides", 2, s2),
                                 gc_attr_new("auto_pad")};
    b[2]->has_type = 1, b[2]->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    b[2]->has_s = 1, b[2]->s.data = (uint8_t *)"SAME_UPPER", b[2]->s.len = 10;
    check_pool("MaxPool-12 3x3/2 SAME_UPPER", "MaxPool", 12, b, 3, dt, 4, d2, 1);
    check_pool("AveragePool-19 3x3/2 SAME_UPPER", "AveragePool", 19, b, 3, dt, 4, d2, 1);
    gc_attrs_free(b, 3);
  }
  /* 1-D and 3-D (generic N-d loops). */
  {
    int64_t k[] = {3}, s[] = {2}, p[] = {1, 1};
    for (int cip = 0; cip <= 1; cip++) {
      Onnx__AttributeProto *a[] = {gc_attr_ints("kernel_shape", 1, k), gc_attr_ints("strides", 1, s),
                                   gc_attr_ints("pads", 2, p), gc_attr_int("ceil_mode", 1),
                                   gc_attr_int("count_include_pad", cip)};
      if (!cip) check_pool("MaxPool-12 1-D 3/2 pad1 ceil", "MaxPool", 12, a, 4, dt, 3, d1, 1);
      check_pool(cip ? "AveragePool-19 1-D cip=1 ceil" : "AveragePool-19 1-D cip=0 ceil", "AveragePool", 19,
                 a, 5, dt, 3, d1, 1);
      gc_attrs_free(a, 5);
    }
    int64_t k3d[] = {2, 3, 3}, s3d[] = {1, 2, 2}, p3d[] = {0, 1, 1, 1, 1, 1};
    for (int cip = 0; cip <= 1; cip++) {
      Onnx__AttributeProto *a[] = {gc_attr_ints("kernel_shape", 3, k3d), gc_attr_ints("strides", 3, s3d),
                                   gc_attr_ints("pads", 6, p3d), gc_attr_int("count_include_pad", cip)};
      if (!cip) check_pool("MaxPool-12 3-D", "MaxPool", 12, a, 3, dt, 5, d3, 1);
      check_pool(cip ? "AveragePool-19 3-D cip=1" : "AveragePool-19 3-D cip=0", "AveragePool", 19, a, 4, dt,
                 5, d3, 1);
      gc_attrs_free(a, 4);
    }
  }
  /* Global pools. */
  check_pool("GlobalAveragePool-1", "GlobalAveragePool", 1, NULL, 0, dt, 4, d2, 1);
  check_pool("GlobalMaxPool-1", "GlobalMaxPool", 1, NULL, 0, dt, 4, d2, 1);
  check_pool("GlobalMaxPool-1 3-D", "GlobalMaxPool", 1, NULL, 0, dt, 5, d3, 1);
}

/* ---- BatchNormalization ---- */

/* X [4,3,5,5] (or [4,3,2,3] with spatial=0), scale, B, mean, var of X's dtype
 * (params_dt for opset 15's mixed types). Checks X, scale, B. */
static void check_bn(const char *label, int opset, Onnx__AttributeProto **attrs, int n_attrs, amd_dtype dt,
                     amd_dtype params_dt, int n_out, int per_position) {
  int64_t dx[] = {4, 3, 5, 5}, dxs[] = {4, 3, 2, 3}, dc[] = {3}, dcs[] = {3, 2, 3};
  amd_tensor x = gc_tensor(dt, 4, per_position ? dxs : dx, -1, 3);
  const int64_t *pd = per_position ? dcs : dc;
  int pr = per_position ? 3 : 1;
  amd_tensor scale = gc_tensor(params_dt, pr, pd, 0.5, 1.5), bias = gc_tensor(params_dt, pr, pd, -1, 1);
  amd_tensor mean = gc_tensor(params_dt, pr, pd, 0, 2), var = gc_tensor(params_dt, pr, pd, 0.5, 2);
  amd_tensor *in[] = {&x, &scale, &bias, &mean, &var};
  char full[128];
  snprintf(full, sizeof full, "%s %s", label, dt_name(dt));
  gradcheck(full, "BatchNormalization", opset, attrs, n_attrs, in, 5, n_out, 7u, tol_for(dt));
  amd_tensor_free(&x);
  amd_tensor_free(&scale);
  amd_tensor_free(&bias);
  amd_tensor_free(&mean);
  amd_tensor_free(&var);
}

static void test_bn(amd_dtype dt) {
  Onnx__AttributeProto *tm[] = {gc_attr_int("training_mode", 1), gc_attr_float("epsilon", 1e-3f)};
  check_bn("BN-15 training_mode=1", 15, tm, 2, dt, dt, 1, 0);
  check_bn("BN-15 training_mode=1, 3 outputs", 15, tm, 2, dt, dt, 3, 0);
  if (dt == AMD_DOUBLE) check_bn("BN-15 training_mode=1, float params", 15, tm, 2, dt, AMD_FLOAT, 3, 0);
  gc_attrs_free(tm, 2);
  /* Opset 9/13 training: the 5 outputs imply batch statistics. */
  check_bn("BN-13 5 outputs (training)", 13, NULL, 0, dt, dt, 5, 0);
  check_bn("BN-9 5 outputs (training)", 9, NULL, 0, dt, dt, 5, 0);
  /* Opset 7 spatial=0: per-position statistics (ctx->training is set). */
  Onnx__AttributeProto *sp[] = {gc_attr_int("spatial", 0)};
  check_bn("BN-7 spatial=0 (training)", 7, sp, 1, dt, dt, 1, 1);
  gc_attrs_free(sp, 1);
  /* Inference: running statistics. */
  Onnx__AttributeProto *inf[] = {gc_attr_int("training_mode", 0)};
  check_bn("BN-15 inference", 15, inf, 1, dt, dt, 1, 0);
  gc_attrs_free(inf, 1);
  check_bn("BN-14 inference (default)", 14, NULL, 0, dt, dt, 1, 0);
}

/* ---- LayerNormalization ---- */

/* X [3,5,8] normalised over the last axis (Scale, B [8]) or over the last
 * two (axis 1: Scale, B [5,8]); with and without B; Scale [1,8] broadcast
 * over the 5 (its gradient summed over them); all three outputs. Checks X,
 * Scale, B. */
static void test_layernorm(amd_dtype dt) {
  int64_t xd[] = {3, 5, 8}, p1[] = {8}, p2[] = {5, 8}, pb[] = {1, 8};
  amd_tensor x = gc_tensor(dt, 3, xd, -1, 3);
  amd_tensor s1 = gc_tensor(dt, 1, p1, 0.5, 1.5), b1 = gc_tensor(dt, 1, p1, -1, 1);
  amd_tensor s2 = gc_tensor(dt, 2, p2, 0.5, 1.5), b2 = gc_tensor(dt, 2, p2, -1, 1);
  amd_tensor sb = gc_tensor(dt, 2, pb, 0.5, 1.5);
  amd_tensor *last[] = {&x, &s1, &b1}, *last_nob[] = {&x, &s1}, *two[] = {&x, &s2, &b2},
             *two_nob[] = {&x, &s2}, *bcast[] = {&x, &sb, &b1};
  Onnx__AttributeProto *a1[] = {gc_attr_int("axis", 1), gc_attr_float("epsilon", 1e-3f)};
  char label[128];
  snprintf(label, sizeof label, "LayerNormalization-17 axis -1 %s", dt_name(dt));
  gradcheck(label, "LayerNormalization", 17, NULL, 0, last, 3, 1, 7u, tol_for(dt));
  snprintf(label, sizeof label, "LayerNormalization-17 axis -1, no B, 3 outputs %s", dt_name(dt));
  gradcheck(label, "LayerNormalization", 17, NULL, 0, last_nob, 2, 3, 3u, tol_for(dt));
  snprintf(label, sizeof label, "LayerNormalization-17 axis 1 (two dims), eps 1e-3 %s", dt_name(dt));
  gradcheck(label, "LayerNormalization", 17, a1, 2, two, 3, 1, 7u, tol_for(dt));
  snprintf(label, sizeof label, "LayerNormalization-17 axis 1, no B, 3 outputs %s", dt_name(dt));
  gradcheck(label, "LayerNormalization", 17, a1, 2, two_nob, 2, 3, 3u, tol_for(dt));
  snprintf(label, sizeof label, "LayerNormalization-17 axis 1, Scale [1,8] broadcast %s", dt_name(dt));
  gradcheck(label, "LayerNormalization", 17, a1, 2, bcast, 3, 1, 7u, tol_for(dt));
  gc_attrs_free(a1, 2);
  amd_tensor *all[] = {&x, &s1, &b1, &s2, &b2, &sb};
  for (int i = 0; i < ARRAY_LEN(all); i++) amd_tensor_free(all[i]);
}

/* Values worked out by hand (epsilon 0): rows [1 2 3 4] (mean 2.5, variance
 * 1.25) and [-2 0 2 4] (mean 1, variance 5) both normalise to
 * [-3 -1 1 3] / sqrt(5); Scale [1 2 -1 0.5], B [0 1 0 -1]. */
static void test_layernorm_values(void) {
  static const double xv[8] = {1, 2, 3, 4, -2, 0, 2, 4}, sv[4] = {1, 2, -1, 0.5}, bv[4] = {0, 1, 0, -1};
  const double r5 = 1.0 / sqrt(5.0);
  const double yrow[4] = {-3 * r5, 1 - 2 * r5, -r5, 1.5 * r5 - 1};
  const double mean[2] = {2.5, 1}, inv[2] = {1 / sqrt(1.25), r5};
  int64_t xd[] = {2, 4}, pd[] = {4};
  amd_tensor x = gc_tensor(AMD_DOUBLE, 2, xd, 0, 1), s = gc_tensor(AMD_DOUBLE, 1, pd, 0, 1),
             b = gc_tensor(AMD_DOUBLE, 1, pd, 0, 1), out[8];
  for (int i = 0; i < 8; i++) amd_tensor_set_f64(&x, i, xv[i]);
  for (int i = 0; i < 4; i++) amd_tensor_set_f64(&s, i, sv[i]), amd_tensor_set_f64(&b, i, bv[i]);
  amd_tensor *in[] = {&x, &s, &b};
  Onnx__AttributeProto *a[] = {gc_attr_float("epsilon", 0.0f)};
  amd_status st = {{0}};
  gc_node g;
  int bound = gc_bind(&g, "LayerNormalization", 17, a, 1, in, 3, 3, &st) == 0;
  int ok = bound && gc_forward(&g.node, in, out, NULL, NULL, &st) == 0;
  double worst = ok ? 0 : INFINITY, worst_st = worst;
  for (int i = 0; ok && i < 8; i++) worst = fmax(worst, fabs(amd_tensor_get_f64(&out[0], i) - yrow[i % 4]));
  /* Mean and InvStdDev are float ([2,1]): within float rounding */
  for (int r = 0; ok && r < 2; r++) {
    worst_st = fmax(worst_st, fabs(amd_tensor_get_f64(&out[1], r) - mean[r]));
    worst_st = fmax(worst_st, fabs(amd_tensor_get_f64(&out[2], r) - inv[r]));
  }
  ok = ok && out[1].dtype == AMD_FLOAT && out[1].rank == 2 && out[1].dims[0] == 2 && out[1].dims[1] == 1;
  if (ok && worst < 1e-12 && worst_st < 1e-7) {
    printf("ok   LayerNormalization values: Y within %.1e of the hand-computed ones, Mean/InvStdDev [2,1] "
           "float within %.1e\n",
           worst, worst_st);
    gc_passed++;
  } else {
    printf("FAIL LayerNormalization values: %s max diff Y %.3g, statistics %.3g\n", st.msg, worst, worst_st);
    gc_failed++;
  }
  if (ok) gc_free_outs(out, 3);
  if (bound) free(g.node.attrs);
  gc_attrs_free(a, 1);
  amd_tensor_free(&x);
  amd_tensor_free(&s);
  amd_tensor_free(&b);
}

/* Scale or B that does not broadcast to the normalised shape, a dtype
 * mismatch, a bad axis and an unsupported stash_type fail with a message,
 * in infer (or parse), never crash. */
static void test_layernorm_bad(void) {
  int64_t xd[] = {3, 5, 8}, s7[] = {7}, s58[] = {5, 8}, s38[] = {3, 1, 8}, p8[] = {8};
  amd_tensor x = gc_tensor(AMD_FLOAT, 3, xd, -1, 1), bad7 = gc_tensor(AMD_FLOAT, 1, s7, 0, 1);
  amd_tensor bad58 = gc_tensor(AMD_FLOAT, 2, s58, 0, 1), bad38 = gc_tensor(AMD_FLOAT, 3, s38, 0, 1);
  amd_tensor good = gc_tensor(AMD_FLOAT, 1, p8, 0, 1), dbl = gc_tensor(AMD_DOUBLE, 1, p8, 0, 1);
  struct {
    const char *label, *want;
    amd_tensor *scale, *bias;
    int64_t axis;
    int stash;
  } cases[] = {
      {"Scale [7] for axis -1 of [3,5,8]", "Scale has shape [7], which does not broadcast", &bad7, NULL, -1, 1},
      {"Scale [5,8] for axis -1 (5 lies before the axis)", "does not broadcast to the normalised shape [8]",
       &bad58, NULL, -1, 1},
      {"B [3,1,8] for axis 1", "B has shape [3,1,8], which does not broadcast", &good, &bad38, 1, 1},
      {"Scale double, X float", "Scale has dtype double, X has float", &dbl, NULL, -1, 1},
      {"axis 3 of a rank-3 X", "axis 3 out of range", &good, NULL, 3, 1},
      {"stash_type 16", "stash_type 16 is not supported", &good, NULL, -1, 16},
  };
  for (int c = 0; c < ARRAY_LEN(cases); c++) {
    amd_tensor *in[] = {&x, cases[c].scale, cases[c].bias}, out[8];
    memset(out, 0, sizeof out);
    Onnx__AttributeProto *a[] = {gc_attr_int("axis", cases[c].axis), gc_attr_int("stash_type", cases[c].stash)};
    amd_status st = {{0}};
    gc_node g;
    int bound = gc_bind(&g, "LayerNormalization", 17, a, 2, in, cases[c].bias ? 3 : 2, 1, &st) == 0;
    int rc = bound ? g.node.op->infer(&g.node, (const amd_tensor *const *)in, out, &st) : -1;
    if (rc != 0 && strstr(st.msg, cases[c].want)) {
      printf("ok   LayerNormalization refuses %s: %s\n", cases[c].label, st.msg);
      gc_passed++;
    } else {
      printf("FAIL LayerNormalization %s: rc %d, message '%s' (expected '%s')\n", cases[c].label, rc, st.msg,
             cases[c].want);
      gc_failed++;
    }
    if (bound) free(g.node.attrs);
    gc_attrs_free(a, 2);
  }
  amd_tensor *all[] = {&x, &bad7, &bad58, &bad38, &good, &dbl};
  for (int i = 0; i < ARRAY_LEN(all); i++) amd_tensor_free(all[i]);
}

/* The backward contract beyond gradcheck: gradients ACCUMULATE (a buffer
 * pre-filled with 0.25 ends at gradient + 0.25) and each input's gradient is
 * the same when it is the only one requested (the others' din NULL). */
static void check_accumulates(const char *label, const char *op, int opset, Onnx__AttributeProto **attrs,
                              int n_attrs, amd_tensor **in, int n_in, int n_out, unsigned mask) {
  amd_status st = {{0}};
  gc_node g;
  amd_tensor out[8], w, ref[8], got[8];
  memset(ref, 0, sizeof ref);
  memset(got, 0, sizeof got);
  int ok = 1;
  if (gc_bind(&g, op, opset, attrs, n_attrs, in, n_in, n_out, &st) ||
      gc_forward(&g.node, in, out, NULL, NULL, &st)) {
    printf("FAIL %s: %s\n", label, st.msg);
    gc_failed++;
    return;
  }
  w = gc_tensor(out[0].dtype, out[0].rank, out[0].dims, -1, 1);
  const amd_tensor *dout[8] = {&w};
  amd_ctx ctx = {.training = 1, .rng = 12345};
  /* pass 0: all of mask, zeroed; pass 1: all, pre-filled 0.25; pass 2+k: only input k. */
  for (int pass = 0; ok && pass < 2 + n_in; pass++) {
    int only = pass - 2;
    if (only >= 0 && !((mask >> only) & 1)) continue;
    amd_tensor *din[8] = {0};
    for (int k = 0; k < n_in; k++) {
      if (!((mask >> k) & 1) || !in[k] || (only >= 0 && k != only)) continue;
      amd_tensor *t = pass == 0 ? &ref[k] : &got[k];
      amd_tensor_free(t);
      amd_tensor_set_shape(t, in[k]->dtype, in[k]->rank, in[k]->dims);
      AMD_ASSERT(amd_tensor_alloc(t, &st) == 0);
      if (pass == 1)
        for (int64_t i = 0; i < amd_tensor_numel(t); i++) amd_tensor_set_f64(t, i, 0.25);
      din[k] = t;
    }
    if (g.node.op->backward(&g.node, &ctx, (const amd_tensor *const *)in, out, dout, din, &st)) {
      printf("FAIL %s: backward: %s\n", label, st.msg);
      ok = 0;
      break;
    }
    for (int k = 0; pass > 0 && k < n_in; k++) {
      if (!din[k]) continue;
      double tol = in[k]->dtype == AMD_DOUBLE ? 1e-12 : 1e-5;
      for (int64_t i = 0; ok && i < amd_tensor_numel(din[k]); i++) {
        double want = amd_tensor_get_f64(&ref[k], i) + (pass == 1 ? 0.25 : 0.0);
        double have = amd_tensor_get_f64(din[k], i);
        if (fabs(want - have) > tol * (1 + fabs(want))) {
          printf("FAIL %s: %s, input %d [%lld]: %.9g, expected %.9g\n", label,
                 pass == 1 ? "accumulation" : "alone", k, (long long)i, have, want);
          ok = 0;
        }
      }
    }
  }
  if (ok) printf("ok   %s: accumulates, inputs alone match\n", label);
  if (ok)
    gc_passed++;
  else
    gc_failed++;
  gc_free_outs(out, n_out);
  for (int k = 0; k < 8; k++) {
    amd_tensor_free(&ref[k]);
    amd_tensor_free(&got[k]);
  }
  amd_tensor_free(&w);
  free(g.node.attrs);
}

static void test_accumulation(void) {
  int64_t dims[] = {2, 3, 5, 5}, sd[] = {3, 1, 1}, c[] = {3};
  amd_tensor x = gc_grid(AMD_DOUBLE, 4, dims, -3.7, 0.05), xf = gc_grid(AMD_FLOAT, 4, dims, -3.7, 0.05);
  amd_tensor s = gc_tensor(AMD_DOUBLE, 3, sd, 0.1, 0.5);
  amd_tensor *x1[] = {&x}, *x1f[] = {&xf}, *xs[] = {&x, &s};
  static const char *unary[] = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Exp", "Neg", "Abs", "Clip"};
  for (int i = 0; i < ARRAY_LEN(unary); i++) {
    char label[64];
    snprintf(label, sizeof label, "%s-13 double", unary[i]);
    check_accumulates(label, unary[i], 13, NULL, 0, x1, 1, 1, 1u);
    snprintf(label, sizeof label, "%s-13 float", unary[i]);
    check_accumulates(label, unary[i], 13, NULL, 0, x1f, 1, 1, 1u);
  }
  check_accumulates("PRelu-16 slope[3,1,1]", "PRelu", 16, NULL, 0, xs, 2, 1, 3u);
  int64_t k3[] = {3, 3}, s2[] = {2, 2}, p1[] = {1, 1, 1, 1};
  Onnx__AttributeProto *a[] = {gc_attr_ints("kernel_shape", 2, k3), gc_attr_ints("strides", 2, s2),
                               gc_attr_ints("pads", 4, p1), gc_attr_int("ceil_mode", 1)};
  check_accumulates("MaxPool-12 double", "MaxPool", 12, a, 4, x1, 1, 1, 1u);
  check_accumulates("MaxPool-12 float", "MaxPool", 12, a, 4, x1f, 1, 1, 1u);
  check_accumulates("AveragePool-19 double", "AveragePool", 19, a, 4, x1, 1, 1, 1u);
  gc_attrs_free(a, 4);
  check_accumulates("GlobalAveragePool-1", "GlobalAveragePool", 1, NULL, 0, x1, 1, 1, 1u);
  check_accumulates("GlobalMaxPool-1", "GlobalMaxPool", 1, NULL, 0, x1, 1, 1, 1u);
  amd_tensor sc = gc_tensor(AMD_DOUBLE, 1, c, 0.5, 1.5), b = gc_tensor(AMD_DOUBLE, 1, c, -1, 1);
  amd_tensor m = gc_tensor(AMD_DOUBLE, 1, c, 0, 1), v = gc_tensor(AMD_DOUBLE, 1, c, 0.5, 2);
  amd_tensor *bn[] = {&x, &sc, &b, &m, &v};
  for (int tm = 0; tm <= 1; tm++) {
    Onnx__AttributeProto *t[] = {gc_attr_int("training_mode", tm)};
    check_accumulates(tm ? "BN-15 training" : "BN-15 inference", "BatchNormalization", 15, t, 1, bn, 5, 1,
                      7u);
    gc_attrs_free(t, 1);
  }
  { /* LayerNormalization over the last two axes of x ([2,3,5,5]: Scale, B [5,5]) */
    int64_t pd[] = {5, 5};
    amd_tensor ls = gc_tensor(AMD_DOUBLE, 2, pd, 0.5, 1.5), lb = gc_tensor(AMD_DOUBLE, 2, pd, -1, 1);
    amd_tensor *ln[] = {&x, &ls, &lb};
    Onnx__AttributeProto *t[] = {gc_attr_int("axis", -2)};
    check_accumulates("LayerNormalization-17 axis -2", "LayerNormalization", 17, t, 1, ln, 3, 1, 7u);
    gc_attrs_free(t, 1);
    amd_tensor_free(&ls);
    amd_tensor_free(&lb);
  }
  amd_tensor *all[] = {&x, &s, &sc, &b, &m, &v, &xf};
  for (int i = 0; i < ARRAY_LEN(all); i++) amd_tensor_free(all[i]);
}

/* MaxPool ties: on inputs full of equal values, backward must send each dY to
 * the element forward's Indices output names (the first maximum). */
static void check_maxpool_ties(const char *label, Onnx__AttributeProto **attrs, int n_attrs, amd_dtype dt,
                               int rank, const int64_t *dims) {
  amd_status st = {{0}};
  gc_node g;
  amd_tensor out[8], x = gc_tensor(dt, rank, dims, 0, 3), dx = {0}, *in[] = {&x};
  for (int64_t i = 0; i < amd_tensor_numel(&x); i++)
    amd_tensor_set_f64(&x, i, floor(amd_tensor_get_f64(&x, i)));
  if (gc_bind(&g, "MaxPool", 12, attrs, n_attrs, in, 1, 2, &st) ||
      gc_forward(&g.node, in, out, NULL, NULL, &st)) {
    printf("FAIL %s: %s\n", label, st.msg);
    gc_failed++;
    amd_tensor_free(&x);
    return;
  }
  amd_tensor w = gc_tensor(dt, out[0].rank, out[0].dims, -1, 1);
  amd_tensor_set_shape(&dx, dt, x.rank, x.dims);
  AMD_ASSERT(amd_tensor_alloc(&dx, &st) == 0);
  const amd_tensor *dout[8] = {&w};
  amd_tensor *din[8] = {&dx};
  amd_ctx ctx = {.training = 1};
  int ok = g.node.op->backward(&g.node, &ctx, (const amd_tensor *const *)in, out, dout, din, &st) == 0;
  int64_t n = amd_tensor_numel(&x);
  double *want = calloc((size_t)n, sizeof *want);
  for (int64_t o = 0; o < amd_tensor_numel(&out[1]); o++)
    want[amd_tensor_get_i64(&out[1], o)] += amd_tensor_get_f64(&w, o);
  for (int64_t i = 0; ok && i < n; i++)
    if (fabs(want[i] - amd_tensor_get_f64(&dx, i)) > 1e-5) {
      printf("FAIL %s: dX[%lld] = %g, Indices say %g\n", label, (long long)i, amd_tensor_get_f64(&dx, i),
             want[i]);
      ok = 0;
    }
  if (ok) printf("ok   %s: gradient lands on forward's Indices\n", label);
  if (ok)
    gc_passed++;
  else
    gc_failed++;
  free(want);
  gc_free_outs(out, 2);
  amd_tensor_free(&w);
  amd_tensor_free(&dx);
  amd_tensor_free(&x);
  free(g.node.attrs);
}

static void test_maxpool_ties(void) {
  int64_t d2[] = {2, 3, 7, 7}, d3[] = {1, 2, 4, 5, 5};
  int64_t k3[] = {3, 3}, s2[] = {2, 2}, p1[] = {1, 1, 1, 1};
  Onnx__AttributeProto *a[] = {gc_attr_ints("kernel_shape", 2, k3), gc_attr_ints("strides", 2, s2),
                               gc_attr_ints("pads", 4, p1), gc_attr_int("ceil_mode", 1)};
  check_maxpool_ties("MaxPool-12 ties 2-D double", a, 4, AMD_DOUBLE, 4, d2);
  check_maxpool_ties("MaxPool-12 ties 2-D float", a, 4, AMD_FLOAT, 4, d2);
  gc_attrs_free(a, 4);
  int64_t k3d[] = {2, 3, 3}, s3d[] = {1, 2, 2}, p3d[] = {0, 1, 1, 1, 1, 1};
  Onnx__AttributeProto *b[] = {gc_attr_ints("kernel_shape", 3, k3d), gc_attr_ints("strides", 3, s3d),
                               gc_attr_ints("pads", 6, p3d)};
  check_maxpool_ties("MaxPool-12 ties 3-D double", b, 3, AMD_DOUBLE, 5, d3);
  gc_attrs_free(b, 3);
}

/* Gelu (exact and tanh) and Erf at a few points against values computed
 * with Python's math.erf / math.tanh in double: the gradient checks above
 * would pass a forward with a wrong constant, these would not. */
static void test_gelu_erf_values(void) {
  static const double xs[4] = {1.0, -2.0, 0.5, 3.0};
  static const double want[3][4] = {
      {0.8413447460685429, -0.04550026389635842, 0.34573123063700656, 2.99595030590511},    /* Gelu */
      {0.8411919906082768, -0.04540230591222494, 0.34571400982514394, 2.996362607918227},   /* tanh */
      {0.8427007929497149, -0.9953222650189527, 0.5204998778130465, 0.9999779095030014}}; /* Erf */
  int64_t d[] = {4};
  for (int k = 0; k < 3; k++) {
    amd_tensor x = gc_tensor(AMD_DOUBLE, 1, d, 0, 1), out[8];
    for (int i = 0; i < 4; i++) amd_tensor_set_f64(&x, i, xs[i]);
    amd_tensor *in[] = {&x};
    Onnx__AttributeProto *a[] = {gc_attr_string("approximate", "tanh")};
    amd_status st = {{0}};
    gc_node g;
    const char *label = k == 0 ? "Gelu values" : k == 1 ? "Gelu tanh values" : "Erf values";
    int ok = gc_bind(&g, k == 2 ? "Erf" : "Gelu", k == 2 ? 13 : 20, a, k == 1, in, 1, 1, &st) == 0 &&
             gc_forward(&g.node, in, out, NULL, NULL, &st) == 0;
    double worst = ok ? 0 : INFINITY;
    for (int i = 0; ok && i < 4; i++) worst = fmax(worst, fabs(amd_tensor_get_f64(&out[0], i) - want[k][i]));
    if (ok && worst < 1e-12) {
      printf("ok   %s: 4 points within %.1e of math.erf / math.tanh\n", label, worst);
    } else {
      printf("FAIL %s: %s max diff %.3g\n", label, st.msg, worst);
      gc_failed++;
    }
    if (ok) {
      gc_free_outs(out, 1);
      free(g.node.attrs);
    }
    gc_attrs_free(a, 1);
    amd_tensor_free(&x);
  }
}

int main(void) {
  amd_dtype dts[] = {AMD_DOUBLE, AMD_FLOAT};
  for (int i = 0; i < ARRAY_LEN(dts); i++) {
    test_activations(dts[i]);
    test_pools(dts[i]);
    test_bn(dts[i]);
    test_layernorm(dts[i]);
  }
  test_layernorm_values();
  test_layernorm_bad();
  test_accumulation();
  test_maxpool_ties();
  test_gelu_erf_values();
  return gc_summary();
}

/* The quantized ops (src/ops/quant.c, src/ops/qlinear.c) and their integer
 * GEMM (src/gemm/qgemm.c) on the CPU:
 *  - amd_q8_gemm against a direct sum of (a - za)(b - zb) for every signedness
 *    pair, per-row and per-column zero points, odd sizes (more columns than a
 *    block), and int32 wrap-around (K large enough to overflow);
 *  - the table hook: amd_q8_gemm with the exact 256 x 256 table of products
 *    of the raw codes gives the same bits; with every entry one too high,
 *    exactly K more (the zero-point corrections stay exact); the expansion
 *    itself recomputed here from the table;
 *  - rounding: half to even at exact ties, saturation at both ends, NaN;
 *  - bad input failing with a message (never a crash): mismatched scale and
 *    zero-point shapes, a scale of the wrong length, a zero point of another
 *    type than its input, an axis out of range, wrong dtypes (float16 scale,
 *    int16 zero point, float x for DequantizeLinear), output_dtype int4,
 *    precision float16, a per-axis scale at version 10, a bad block size, a
 *    1-D per-row zero point for a, a bias of the wrong type. */
#include "../grad/gradcheck.h"

#include "../test_check.h"
#include "gemm/qgemm.h"

static int32_t val(uint8_t code, int sgn) { return sgn ? (int32_t)(int8_t)code : (int32_t)code; }

static void test_gemm(int64_t M, int64_t N, int64_t K, int as, int bs, int big) {
  uint8_t *A = malloc((size_t)(M * K)), *B = malloc((size_t)(K * N));
  int32_t *za = malloc(sizeof(int32_t) * (size_t)M), *zb = malloc(sizeof(int32_t) * (size_t)N);
  int32_t *C = malloc(sizeof(int32_t) * (size_t)(M * N));
  for (int64_t i = 0; i < M * K; i++) A[i] = big ? (as ? 0x80 : 0xff) : (uint8_t)(gc_uniform() * 256);
  for (int64_t i = 0; i < K * N; i++) B[i] = big ? (bs ? 0x80 : 0xff) : (uint8_t)(gc_uniform() * 256);
  for (int64_t i = 0; i < M; i++) za[i] = big ? 0 : val((uint8_t)(gc_uniform() * 256), as);
  for (int64_t j = 0; j < N; j++) zb[j] = big ? 0 : val((uint8_t)(gc_uniform() * 256), bs);
  int32_t *Ct = malloc(sizeof(int32_t) * (size_t)(M * N)), *Cp = malloc(sizeof(int32_t) * (size_t)(M * N));
  CHECK(amd_q8_gemm(M, N, K, A, as, za, B, bs, zb, NULL, C) == 0, "gemm");
  /* the 256 x 256 product table of the raw codes, as a table multiplier would use */
  static int32_t table[256][256], plus1[256][256];
  for (int x = 0; x < 256; x++)
    for (int y = 0; y < 256; y++) {
      table[x][y] = val((uint8_t)x, as) * val((uint8_t)y, bs);
      plus1[x][y] = table[x][y] + 1; /* a "multiplier" one too high everywhere */
    }
  CHECK(amd_q8_gemm(M, N, K, A, as, za, B, bs, zb, &table[0][0], Ct) == 0, "gemm, table");
  CHECK(amd_q8_gemm(M, N, K, A, as, za, B, bs, zb, &plus1[0][0], Cp) == 0, "gemm, table + 1");
  int64_t bad_gemm_table = 0, bad_plus1 = 0;
  for (int64_t e = 0; e < M * N; e++) {
    bad_gemm_table += Ct[e] != C[e];
    bad_plus1 += (uint32_t)Cp[e] != (uint32_t)C[e] + (uint32_t)K; /* only P changes: + K */
  }
  CHECK(bad_gemm_table == 0, "amd_q8_gemm with the exact table: %lld differ", (long long)bad_gemm_table);
  CHECK(bad_plus1 == 0, "amd_q8_gemm with table + 1: %lld not exact + K", (long long)bad_plus1);
  free(Ct), free(Cp);
  int64_t bad = 0, bad_table = 0;
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      int64_t s = 0, p = 0, ra = 0, cb = 0;
      for (int64_t k = 0; k < K; k++) {
        s += (int64_t)(val(A[i * K + k], as) - za[i]) * (val(B[k * N + j], bs) - zb[j]);
        p += table[A[i * K + k]][B[k * N + j]];
        ra += val(A[i * K + k], as);
        cb += val(B[k * N + j], bs);
      }
      int32_t want = (int32_t)(uint32_t)(uint64_t)s; /* int32 wrap-around */
      int32_t from_table = (int32_t)(uint32_t)(uint64_t)(p - zb[j] * ra - za[i] * cb + K * za[i] * zb[j]);
      bad += C[i * N + j] != want;
      bad_table += from_table != want;
    }
  CHECK(bad == 0, "amd_q8_gemm %lldx%lldx%lld signed %d/%d%s: %lld wrong", (long long)M, (long long)N,
        (long long)K, as, bs, big ? " (wrapping)" : "", (long long)bad);
  CHECK(bad_table == 0, "table expansion %lldx%lldx%lld: %lld wrong", (long long)M, (long long)N, (long long)K,
        (long long)bad_table);
  free(A), free(B), free(za), free(zb), free(C);
}

/* Runs one node; returns 0 or -1 with msg set; out[0..n_out) allocated on success. */
static int run(const char *op, int opset, Onnx__AttributeProto **attrs, int n_attrs, amd_tensor **in, int n_in,
               int n_out, amd_tensor *out, char *msg) {
  amd_status st = {{0}};
  gc_node g;
  msg[0] = 0;
  int rc = gc_bind(&g, op, opset, attrs, n_attrs, in, n_in, n_out, &st);
  if (rc == 0) rc = gc_forward(&g.node, in, out, NULL, NULL, &st);
  if (rc) {
    snprintf(msg, 512, "%.500s", st.msg);
    if (g.node.op) gc_free_outs(out, n_out);
  }
  free(g.node.attrs);
  return rc;
}

static amd_tensor mk(amd_dtype dt, int rank, const int64_t *dims, const double *v) {
  amd_tensor t = gc_tensor(dt, rank, dims, 0, 0);
  for (int64_t i = 0; i < amd_tensor_numel(&t); i++) amd_tensor_set_f64(&t, i, v ? v[i] : 0);
  return t;
}

/* Expects failure with a message containing `want`. */
static void expect_fail(const char *label, const char *op, int opset, Onnx__AttributeProto **attrs, int n_attrs,
                        amd_tensor **in, int n_in, int n_out, const char *want) {
  amd_tensor out[8];
  memset(out, 0, sizeof out);
  char msg[512];
  int rc = run(op, opset, attrs, n_attrs, in, n_in, n_out, out, msg);
  if (rc == 0) gc_free_outs(out, n_out);
  CHECK(rc != 0 && strstr(msg, want), "%s: rc %d, message '%s' (expected '%s')", label, rc, msg, want);
  if (rc != 0 && strstr(msg, want)) printf("ok   %-44s -> %s\n", label, msg);
}

static void test_rounding(void) {
  /* x / 1 = k + 0.5 rounds to the even neighbour; saturation at both ends */
  double xv[] = {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5, 127.5, 1e9, -1e9, NAN};
  int8_t want_s8[] = {0, 2, 2, 0, -2, -2, 126, 127, 127, -128, 0};
  int64_t d1[] = {11};
  amd_tensor x = mk(AMD_FLOAT, 1, d1, xv), s = mk(AMD_FLOAT, 0, NULL, (double[]){1});
  amd_tensor z = mk(AMD_INT8, 0, NULL, (double[]){0});
  amd_tensor *in[3] = {&x, &s, &z}, out[8];
  char msg[512];
  CHECK(run("QuantizeLinear", 13, NULL, 0, in, 3, 1, out, msg) == 0, "%s", msg);
  int bad = 0;
  for (int i = 0; i < 11; i++) bad += ((int8_t *)out[0].data)[i] != want_s8[i];
  CHECK(bad == 0, "int8 ties / saturation: %d wrong", bad);
  gc_free_outs(out, 1);
  /* uint8 with zero point 10: 0.5 -> 10, -10.5 -> 0 (saturated), 300 -> 255, 245.5 -> 246 + 10 -> 255 */
  double xu[] = {0.5, 1.5, -10.5, -9.5, 300, 244.5, 245.5, 0, 0, 0, 0};
  uint8_t want_u8[] = {10, 12, 0, 0, 255, 254, 255, 10, 10, 10, 10}; /* 244.5 -> 244 */
  amd_tensor xu_t = mk(AMD_FLOAT, 1, d1, xu), zu = mk(AMD_UINT8, 0, NULL, (double[]){10});
  amd_tensor *inu[3] = {&xu_t, &s, &zu};
  CHECK(run("QuantizeLinear", 10, NULL, 0, inu, 3, 1, out, msg) == 0, "%s", msg);
  bad = 0;
  for (int i = 0; i < 11; i++) bad += ((uint8_t *)out[0].data)[i] != want_u8[i];
  CHECK(bad == 0, "uint8 ties / saturation: %d wrong", bad);
  gc_free_outs(out, 1);
  amd_tensor_free(&x), amd_tensor_free(&s), amd_tensor_free(&z), amd_tensor_free(&xu_t), amd_tensor_free(&zu);
}

static void test_errors(void) {
  int64_t d23[] = {2, 3}, d3[] = {3}, d2[] = {2}, d4[] = {4};
  amd_tensor x = gc_tensor(AMD_FLOAT, 2, d23, -1, 1);
  amd_tensor s1 = mk(AMD_FLOAT, 0, NULL, (double[]){0.1}), s3 = mk(AMD_FLOAT, 1, d3, (double[]){.1, .2, .3});
  amd_tensor s2 = mk(AMD_FLOAT, 1, d2, (double[]){.1, .2}), s4 = mk(AMD_FLOAT, 1, d4, (double[]){1, 1, 1, 1});
  amd_tensor z3 = mk(AMD_UINT8, 1, d3, NULL), z2 = mk(AMD_UINT8, 1, d2, NULL), zs8 = mk(AMD_INT8, 0, NULL, NULL);
  amd_tensor zu8 = mk(AMD_UINT8, 0, NULL, NULL), z16 = mk(AMD_INT16, 0, NULL, NULL);
  amd_tensor h1 = mk(AMD_FLOAT16, 0, NULL, NULL);
  amd_tensor q = mk(AMD_UINT8, 2, d23, NULL), q8 = mk(AMD_INT8, 2, d23, NULL);
  Onnx__AttributeProto *ax1[] = {gc_attr_int("axis", 1)}, *ax5[] = {gc_attr_int("axis", 5)};
  Onnx__AttributeProto *axm3[] = {gc_attr_int("axis", -3)};
  Onnx__AttributeProto *od4[] = {gc_attr_int("output_dtype", 22)}; /* int4 */
  Onnx__AttributeProto *prec[] = {gc_attr_int("precision", AMD_FLOAT16)};
  Onnx__AttributeProto *blk[] = {gc_attr_int("axis", 1), gc_attr_int("block_size", 2)};

  expect_fail("Q: zero point shape != scale shape", "QuantizeLinear", 13, ax1, 1, (amd_tensor *[]){&x, &s3, &z2}, 3,
              1, "must have the same shape");
  expect_fail("Q: per-axis scale of the wrong length", "QuantizeLinear", 13, ax1, 1, (amd_tensor *[]){&x, &s2, &z2},
              3, 1, "1-D tensor of length 3");
  expect_fail("Q: axis out of range", "QuantizeLinear", 13, ax5, 1, (amd_tensor *[]){&x, &s3, &z3}, 3, 1,
              "axis 5 is out of range");
  expect_fail("DQ: negative axis out of range", "DequantizeLinear", 13, axm3, 1, (amd_tensor *[]){&q, &s3, &z3}, 3,
              1, "axis -3 is out of range");
  expect_fail("Q: per-axis scale at version 10", "QuantizeLinear", 10, NULL, 0, (amd_tensor *[]){&x, &s3, &z3}, 3, 1,
              "version 10 takes a scalar scale");
  expect_fail("Q: int16 zero point", "QuantizeLinear", 21, NULL, 0, (amd_tensor *[]){&x, &s1, &z16}, 3, 1,
              "produces only int8 and uint8");
  expect_fail("Q: float16 scale", "QuantizeLinear", 21, NULL, 0, (amd_tensor *[]){&x, &h1, &zu8}, 3, 1,
              "only float scales");
  expect_fail("Q: output_dtype int4", "QuantizeLinear", 21, od4, 1, (amd_tensor *[]){&x, &s1}, 2, 1,
              "output_dtype");
  expect_fail("Q: precision float16", "QuantizeLinear", 23, prec, 1, (amd_tensor *[]){&x, &s1}, 2, 1, "precision");
  expect_fail("Q: blocked scale of the wrong shape", "QuantizeLinear", 21, blk, 2, (amd_tensor *[]){&x, &s3}, 2, 1,
              "blocked quantization");
  expect_fail("DQ: zero point type != x type", "DequantizeLinear", 13, NULL, 0, (amd_tensor *[]){&q, &s1, &zs8}, 3,
              1, "must have the same type");
  expect_fail("DQ: float x", "DequantizeLinear", 13, NULL, 0, (amd_tensor *[]){&x, &s1}, 2, 1,
              "takes int8, uint8 and int32");
  expect_fail("DynamicQuantizeLinear: uint8 x", "DynamicQuantizeLinear", 11, NULL, 0, (amd_tensor *[]){&q}, 1, 3,
              "only float");
  /* matrix products */
  int64_t d32[] = {3, 2}, d2c[] = {2, 1};
  amd_tensor b = mk(AMD_INT8, 2, d32, NULL), bu = mk(AMD_UINT8, 2, d32, NULL);
  amd_tensor za1d = mk(AMD_UINT8, 1, d2, NULL), zarow = mk(AMD_UINT8, 2, d2c, NULL);
  amd_tensor sarow = mk(AMD_FLOAT, 2, d2c, (double[]){1, 1}), zb3 = mk(AMD_INT8, 1, d3, NULL);
  expect_fail("MatMulInteger: 1-D zero point for a", "MatMulInteger", 10, NULL, 0,
              (amd_tensor *[]){&q, &b, &za1d}, 3, 1, "one value per row of a");
  expect_fail("MatMulInteger: b zero point of 3 for 2 columns", "MatMulInteger", 10, NULL, 0,
              (amd_tensor *[]){&q, &b, NULL, &zb3}, 4, 1, "one value per column of b");
  expect_fail("MatMulInteger: zero point type != b type", "MatMulInteger", 10, NULL, 0,
              (amd_tensor *[]){&q, &bu, NULL, &zs8}, 4, 1, "must have the same type");
  expect_fail("MatMulInteger: float a", "MatMulInteger", 10, NULL, 0, (amd_tensor *[]){&x, &b}, 2, 1,
              "only int8 and uint8");
  expect_fail("QLinearMatMul: a scale [2,1], zero point []", "QLinearMatMul", 10, NULL, 0,
              (amd_tensor *[]){&q, &sarow, &zu8, &b, &s1, &zs8, &s1, &zu8}, 8, 1, "must have the same shape");
  amd_tensor ok_out[8];
  char msg[512];
  CHECK(run("QLinearMatMul", 10, NULL, 0, (amd_tensor *[]){&q, &sarow, &zarow, &b, &s1, &zs8, &s1, &zu8}, 8, 1,
            ok_out, msg) == 0,
        "per-row a: %s", msg);
  if (!msg[0]) gc_free_outs(ok_out, 1);
  expect_fail("QLinearMatMul: y_scale per axis", "QLinearMatMul", 10, NULL, 0,
              (amd_tensor *[]){&q, &s1, &zu8, &b, &s1, &zs8, &s2, &z2}, 8, 1, "expected a scalar");
  /* convolutions */
  int64_t dx[] = {1, 2, 4, 4}, dw[] = {3, 2, 3, 3};
  amd_tensor cx = mk(AMD_UINT8, 4, dx, NULL), cw = mk(AMD_INT8, 4, dw, NULL), bias_f = mk(AMD_FLOAT, 1, d3, NULL);
  amd_tensor wz4 = mk(AMD_INT8, 1, d4, NULL);
  expect_fail("ConvInteger: w zero point of 4 for 3 channels", "ConvInteger", 10, NULL, 0,
              (amd_tensor *[]){&cx, &cw, &zu8, &wz4}, 4, 1, "one value per output channel");
  expect_fail("ConvInteger: x zero point type != x", "ConvInteger", 10, NULL, 0, (amd_tensor *[]){&cx, &cw, &zs8},
              3, 1, "must have the same type");
  expect_fail("QLinearConv: float bias", "QLinearConv", 10, NULL, 0,
              (amd_tensor *[]){&cx, &s1, &zu8, &cw, &s1, &zs8, &s1, &zu8, &bias_f}, 9, 1, "expected int32 [3]");
  expect_fail("QLinearConv: w_scale [4], w_zero_point []", "QLinearConv", 10, NULL, 0,
              (amd_tensor *[]){&cx, &s1, &zu8, &cw, &s4, &zs8, &s1, &zu8}, 8, 1, "must have the same shape");
  expect_fail("QLinearConv: w_scale of 4 for 3 channels", "QLinearConv", 10, NULL, 0,
              (amd_tensor *[]){&cx, &s1, &zu8, &cw, &s4, &wz4, &s1, &zu8}, 8, 1, "one value per output channel");
  expect_fail("QLinearConv: x_scale per axis", "QLinearConv", 10, NULL, 0,
              (amd_tensor *[]){&cx, &s2, &z2, &cw, &s1, &zs8, &s1, &zu8}, 8, 1, "expected a scalar");
  expect_fail("QLinearConv: int16 y zero point", "QLinearConv", 10, NULL, 0,
              (amd_tensor *[]){&cx, &s1, &zu8, &cw, &s1, &zs8, &s1, &z16}, 8, 1, "only int8 and uint8");
  amd_tensor *all[] = {&x, &s1, &s3, &s2, &s4, &z3, &z2, &zs8, &zu8, &z16, &h1, &q, &q8, &b, &bu, &za1d,
                       &zarow, &sarow, &zb3, &cx, &cw, &bias_f, &wz4};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) amd_tensor_free(all[i]);
  gc_attrs_free(ax1, 1), gc_attrs_free(ax5, 1), gc_attrs_free(axm3, 1), gc_attrs_free(od4, 1);
  gc_attrs_free(prec, 1), gc_attrs_free(blk, 2);
}

int main(void) {
  for (int as = 0; as < 2; as++)
    for (int bs = 0; bs < 2; bs++) {
      test_gemm(7, 1037, 45, as, bs, 0);
      test_gemm(1, 3, 1, as, bs, 0);
    }
  test_gemm(2, 5, 140000, 0, 0, 1); /* 255 * 255 * 140000 > 2^31: wraps */
  test_gemm(2, 5, 140000, 1, 1, 1); /* 128 * 128 * 140000 > 2^31 */
  test_rounding();
  test_errors();
  (void)gradcheck, (void)gc_summary, (void)gc_attr_ints, (void)gc_attr_float, (void)gc_bind; /* gradcheck.h's, unused here */
  return check_summary();
}

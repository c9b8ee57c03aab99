/* The 8-bit table multipliers (src/mult/q8.c, the q8u:/q8s: modes of
 * src/mult/mult.c) and their use by the integer ops (src/ops/qlinear.c):
 *  - table files: the built-in exact tables, a TFApprox .bin read as uint16
 *    and as int16, our AMDQ8TAB format round trip; bad files fail with a
 *    message that names the file (wrong size, bad magic, bad version, a
 *    signedness other than the mode's, an out-of-range entry, a missing
 *    file, a directory, no file name);
 *  - a table exact but for one entry [x][y] (+D) changes each output of
 *    MatMulInteger, ConvInteger and QLinearMatMul by exactly D times the
 *    number of products of a data code x with a weight code y (and nothing
 *    else): this also pins the orientation (row = data, column = weight; the
 *    convolutions use the transposed table);
 *  - a q8u mode on int8 codes fails with a message;
 *  - a float MatMul quantized on the fly (MatMul[q8f]): the data range
 *    widens over the first 4 calls, then stays frozen (a larger value
 *    saturates);
 *  - float Conv, Gemm (B's columns, transB's rows) and batched MatMul
 *    quantized on the fly, in q8u:exact and q8s:exact, with weights whose
 *    output channels span ranges from 0.04 to 50 wide: every channel's output
 *    within 3 % (of its own largest value) of the float result in double,
 *    which holds only when each channel is quantized on its own range (a
 *    per-tensor scale, or a channel's values taken for another's, rounds
 *    the small channels to nothing);
 *  - amd_q8_error and SHA-256 (FIPS 180-4 test vectors);
 *  - amd_q8_bit_bilinear on exact, truncated, perturbed and rounded tables. */
#include <unistd.h>

#pragma GCC diagnostic ignored "-Wunused-function" /* gradcheck.h helpers this test does not use */
#include "../grad/gradcheck.h"

#include "../test_check.h"
#include "mult/mult.h"
#include "mult/q8.h"
#include "ops/quant.h"

static char tmpdir[256];

static const char *write_file(const char *name, const uint8_t *data, size_t n) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", tmpdir, name);
  FILE *f = fopen(path, "wb");
  AMD_ASSERT(f);
  AMD_ASSERT(fwrite(data, 1, n, f) == n);
  fclose(f);
  return path;
}

static void expect_load_fail(const char *label, const char *path, int sgn, const char *want) {
  static int32_t table[AMD_Q8_ENTRIES];
  amd_status st = {{0}};
  int rc = amd_q8_load(path, sgn, table, &st);
  CHECK(rc != 0 && strstr(st.msg, want) && strstr(st.msg, path), "%s: rc %d, message '%s' (expected '%s')", label,
        rc, st.msg, want);
  if (rc != 0) printf("ok   %-28s -> %s\n", label, st.msg);
}

static void test_files(void) {
  static int32_t t[AMD_Q8_ENTRIES], u[AMD_Q8_ENTRIES];
  static uint8_t buf[AMD_Q8_FILE_BYTES];
  amd_status st = {{0}};
  /* exact */
  CHECK(amd_q8_load("exact", 0, t, &st) == 0, "%s", st.msg);
  CHECK(t[255 * 256 + 255] == 65025 && t[3 * 256 + 7] == 21, "exact u8");
  CHECK(amd_q8_load("exact", 1, t, &st) == 0, "%s", st.msg);
  CHECK(t[0x80 * 256 + 0x80] == 16384 && t[0xff * 256 + 0x02] == -2 && t[0x7f * 256 + 0x80] == -16256, "exact s8");
  /* .bin: entry i = i (as uint16), little-endian */
  for (int i = 0; i < AMD_Q8_ENTRIES; i++) buf[2 * i] = (uint8_t)i, buf[2 * i + 1] = (uint8_t)(i >> 8);
  const char *p = write_file("ramp.bin", buf, AMD_Q8_BIN_BYTES);
  CHECK(amd_q8_load(p, 0, t, &st) == 0, "%s", st.msg);
  int bad = 0;
  for (int i = 0; i < AMD_Q8_ENTRIES; i++) bad += t[i] != i;
  CHECK(bad == 0, ".bin as uint16: %d wrong", bad);
  CHECK(amd_q8_load(p, 1, t, &st) == 0, "%s", st.msg);
  bad = 0;
  for (int i = 0; i < AMD_Q8_ENTRIES; i++) bad += t[i] != (int16_t)(uint16_t)i;
  CHECK(bad == 0, ".bin as int16: %d wrong", bad);
  int sgn = 0;
  CHECK(amd_q8_probe(p, &sgn, &st) == 0 && sgn == -1, "probe .bin");
  /* AMDQ8TAB round trip (signed, with negative and > 16-bit entries) */
  amd_q8_exact(1, t);
  t[5] = -100000, t[65535] = 131072;
  amd_q8_serialize(1, t, buf);
  p = write_file("round.amdq8", buf, AMD_Q8_FILE_BYTES);
  CHECK(amd_q8_load(p, 1, u, &st) == 0, "%s", st.msg);
  CHECK(memcmp(t, u, sizeof t) == 0, "AMDQ8TAB round trip");
  CHECK(amd_q8_probe(p, &sgn, &st) == 0 && sgn == 1, "probe AMDQ8TAB");
  expect_load_fail("signedness other than mode", p, 0, "is signed but the mode is q8u");
  /* .bin of a table that does not fit 16 bits */
  static uint8_t bin[AMD_Q8_BIN_BYTES];
  CHECK(amd_q8_serialize_bin(1, t, bin, &st) != 0 && strstr(st.msg, "int16"), "bin range: %s", st.msg);
  /* bad files */
  p = write_file("short.bin", buf, 100);
  expect_load_fail("wrong size", p, 0, "has 100 bytes");
  uint8_t save = buf[0];
  buf[0] = 'X';
  p = write_file("magic.amdq8", buf, AMD_Q8_FILE_BYTES);
  expect_load_fail("bad magic", p, 1, "AMDQ8TAB");
  buf[0] = save;
  buf[9] = 2;
  p = write_file("version.amdq8", buf, AMD_Q8_FILE_BYTES);
  expect_load_fail("bad version", p, 1, "version 1");
  buf[9] = 1;
  t[5] = 200000; /* out of range: |v| <= 2^17 */
  amd_q8_serialize(1, t, buf);
  p = write_file("range.amdq8", buf, AMD_Q8_FILE_BYTES);
  expect_load_fail("out-of-range entry", p, 1, "entry [0][5] = 200000 is out of range");
  char missing[512];
  snprintf(missing, sizeof missing, "%s/no-such-table.bin", tmpdir);
  expect_load_fail("missing file", missing, 0, "cannot open");
  expect_load_fail("unreadable (a directory)", tmpdir, 0, "error reading");
  /* through the mode parser */
  amd_mult m;
  CHECK(amd_mult_parse("q8u:", &m, &st) != 0 && strstr(st.msg, "needs a table file"), "q8u: -> %s", st.msg);
  CHECK(amd_mult_parse("q8x:exact", &m, &st) != 0 && strstr(st.msg, "q8u:FILE"), "q8x -> %s", st.msg);
  CHECK(amd_mult_parse("q8s:exact", &m, &st) == 0 && m.q8 == 's' && m.mode == AMD_MODE_ACC32, "%s", st.msg);
  bad = 0;
  for (int a = 0; a < 256; a++)
    for (int b = 0; b < 256; b++) bad += m.q8_table_t[b * 256 + a] != m.q8_table[a * 256 + b];
  CHECK(bad == 0, "q8_table_t is the transpose: %d wrong", bad);
  amd_mult_free(&m);
}

/* Runs a node with multiplier m (NULL: none). */
static int run_mult(const char *op, int opset, amd_tensor **in, int n_in, const amd_mult *m, amd_tensor *out,
                    char *msg) {
  amd_status st = {{0}};
  gc_node g;
  msg[0] = 0;
  int rc = gc_bind(&g, op, opset, NULL, 0, in, n_in, 1, &st);
  g.node.mult = m;
  if (rc == 0) rc = gc_forward(&g.node, in, out, NULL, NULL, &st);
  if (rc) {
    snprintf(msg, 512, "%.500s", st.msg);
    if (g.node.op) gc_free_outs(out, 1);
  }
  free(g.node.attrs);
  return rc;
}

/* codes in 0..3 (many repeats of the changed pair) */
static amd_tensor codes(amd_dtype dt, int rank, const int64_t *dims) {
  amd_tensor t = gc_tensor(dt, rank, dims, 0, 0);
  for (int64_t i = 0; i < amd_tensor_numel(&t); i++) ((uint8_t *)t.data)[i] = (uint8_t)(gc_uniform() * 4);
  return t;
}

static void test_one_entry(void) {
  enum { X = 2, Y = 3, D = 1000 };
  amd_status st = {{0}};
  char msg[512];
  amd_mult m;
  /* ---- MatMulInteger: A [M,K] data, B [K,N] weight; table row = A's code */
  CHECK(amd_mult_parse("q8u:exact", &m, &st) == 0, "%s", st.msg);
  const int64_t M = 5, K = 37, N = 9;
  amd_tensor A = codes(AMD_UINT8, 2, (int64_t[]){M, K}), B = codes(AMD_UINT8, 2, (int64_t[]){K, N});
  amd_tensor za = gc_tensor(AMD_UINT8, 0, NULL, 0, 0), zb = gc_tensor(AMD_UINT8, 0, NULL, 0, 0);
  ((uint8_t *)za.data)[0] = 1, ((uint8_t *)zb.data)[0] = 2;
  amd_tensor *in[4] = {&A, &B, &za, &zb}, ref[8], got[8];
  CHECK(run_mult("MatMulInteger", 10, in, 4, NULL, ref, msg) == 0, "%s", msg);
  CHECK(run_mult("MatMulInteger", 10, in, 4, &m, got, msg) == 0, "%s", msg);
  CHECK(memcmp(ref[0].data, got[0].data, amd_tensor_nbytes(&ref[0])) == 0, "q8u:exact = no table");
  gc_free_outs(got, 1);
  m.q8_table[X * 256 + Y] += D;
  m.q8_table_t[Y * 256 + X] += D;
  CHECK(run_mult("MatMulInteger", 10, in, 4, &m, got, msg) == 0, "%s", msg);
  int bad = 0, changed = 0;
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      int64_t cnt = 0;
      for (int64_t k = 0; k < K; k++) cnt += ((uint8_t *)A.data)[i * K + k] == X && ((uint8_t *)B.data)[k * N + j] == Y;
      int32_t d = ((int32_t *)got[0].data)[i * N + j] - ((int32_t *)ref[0].data)[i * N + j];
      bad += d != D * cnt;
      changed += cnt > 0;
    }
  CHECK(bad == 0 && changed > 0, "MatMulInteger one entry: %d wrong, %d changed", bad, changed);
  gc_free_outs(ref, 1), gc_free_outs(got, 1);

  /* ---- ConvInteger 1x1: x [1,C,H,W] data, w [Mo,C,1,1] weight */
  const int64_t C = 23, H = 3, W = 4, Mo = 6;
  amd_tensor x = codes(AMD_UINT8, 4, (int64_t[]){1, C, H, W}), w = codes(AMD_UINT8, 4, (int64_t[]){Mo, C, 1, 1});
  amd_tensor *cin[4] = {&x, &w, &za, &zb};
  CHECK(run_mult("ConvInteger", 10, cin, 4, NULL, ref, msg) == 0, "%s", msg);
  CHECK(run_mult("ConvInteger", 10, cin, 4, &m, got, msg) == 0, "%s", msg);
  bad = changed = 0;
  for (int64_t o = 0; o < Mo; o++)
    for (int64_t p = 0; p < H * W; p++) {
      int64_t cnt = 0;
      for (int64_t c = 0; c < C; c++) cnt += ((uint8_t *)x.data)[c * H * W + p] == X && ((uint8_t *)w.data)[o * C + c] == Y;
      int32_t d = ((int32_t *)got[0].data)[o * H * W + p] - ((int32_t *)ref[0].data)[o * H * W + p];
      bad += d != D * cnt;
      changed += cnt > 0;
    }
  CHECK(bad == 0 && changed > 0, "ConvInteger one entry (row = data code): %d wrong, %d changed", bad, changed);
  gc_free_outs(ref, 1), gc_free_outs(got, 1);

  /* ---- a q8u mode on int8 codes */
  amd_tensor As = codes(AMD_INT8, 2, (int64_t[]){M, K}), Bs = codes(AMD_INT8, 2, (int64_t[]){K, N});
  amd_tensor *sin[2] = {&As, &Bs};
  int rc = run_mult("MatMulInteger", 10, sin, 2, &m, got, msg);
  CHECK(rc != 0 && strstr(msg, "q8u:exact multiplies uint8 codes"), "q8u on int8: rc %d '%s'", rc, msg);
  if (rc) printf("ok   %-28s -> %s\n", "q8u on int8 codes", msg);
  else gc_free_outs(got, 1);
  amd_mult_free(&m);

  /* ---- QLinearMatMul, signed codes, q8s with one entry (-3 x 2) changed:
   * the requantized output moves where acc moves by D * count * scale */
  CHECK(amd_mult_parse("q8s:exact", &m, &st) == 0, "%s", st.msg);
  for (int64_t i = 0; i < M * K; i++) ((int8_t *)As.data)[i] = (int8_t)((int)(gc_uniform() * 7) - 3);
  for (int64_t i = 0; i < K * N; i++) ((int8_t *)Bs.data)[i] = (int8_t)((int)(gc_uniform() * 5) - 2);
  amd_tensor one = gc_tensor(AMD_FLOAT, 0, NULL, 0, 0), z8 = gc_tensor(AMD_INT8, 0, NULL, 0, 0);
  amd_tensor ys = gc_tensor(AMD_FLOAT, 0, NULL, 0, 0), z32 = gc_tensor(AMD_INT32, 0, NULL, 0, 0);
  ((float *)one.data)[0] = 1.0f, ((float *)ys.data)[0] = 1.0f;
  (void)z32;
  /* y = saturate(acc) with all scales 1, zero points 0: D = 1 keeps it in range */
  amd_tensor *qin[8] = {&As, &one, &z8, &Bs, &one, &z8, &ys, &z8};
  CHECK(run_mult("QLinearMatMul", 10, qin, 8, NULL, ref, msg) == 0, "%s", msg);
  m.q8_table[0xfd * 256 + 0x02] += 1; /* (-3) x 2 */
  m.q8_table_t[0x02 * 256 + 0xfd] += 1;
  CHECK(run_mult("QLinearMatMul", 10, qin, 8, &m, got, msg) == 0, "%s", msg);
  bad = changed = 0;
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      int64_t cnt = 0, acc = 0;
      for (int64_t k = 0; k < K; k++) {
        int8_t a = ((int8_t *)As.data)[i * K + k], b = ((int8_t *)Bs.data)[k * N + j];
        cnt += a == -3 && b == 2;
        acc += a * b;
      }
      int64_t want = acc + cnt;
      want = want < -128 ? -128 : want > 127 ? 127 : want;
      bad += ((int8_t *)got[0].data)[i * N + j] != want;
      changed += cnt > 0;
    }
  CHECK(bad == 0 && changed > 0, "QLinearMatMul q8s one entry: %d wrong, %d changed", bad, changed);
  gc_free_outs(ref, 1), gc_free_outs(got, 1);
  amd_mult_free(&m);
  amd_tensor_free(&A), amd_tensor_free(&B), amd_tensor_free(&za), amd_tensor_free(&zb);
  amd_tensor_free(&x), amd_tensor_free(&w), amd_tensor_free(&As), amd_tensor_free(&Bs);
  amd_tensor_free(&one), amd_tensor_free(&z8), amd_tensor_free(&ys), amd_tensor_free(&z32);
}

static void test_calibration(void) {
  amd_status st = {{0}};
  amd_mult m;
  CHECK(amd_mult_parse("q8u:exact", &m, &st) == 0, "%s", st.msg);
  int64_t d11[2] = {1, 1};
  amd_tensor a = gc_tensor(AMD_FLOAT, 2, d11, 0, 0), b = gc_tensor(AMD_FLOAT, 2, d11, 0, 0);
  ((float *)b.data)[0] = 1.0f;
  amd_tensor *in[2] = {&a, &b}, out[8];
  gc_node g;
  CHECK(gc_bind(&g, "MatMul", 13, NULL, 0, in, 2, 1, &st) == 0, "%s", st.msg);
  g.node.mult = &m;
  CHECK(amd_q8_float_node(&g.node, &st) == 0 && g.node.op == &amd_op_Q8fMatMul, "%s", st.msg);
  /* x = 1, 2, 3, 4 widen the range [0, x] (x is then its top code, exact up
   * to the float scaling); after 4 calls [0, 4] is frozen and 10 gives 4 */
  const float xs[6] = {1, 2, 3, 4, 10, 0.5f}, want[6] = {1, 2, 3, 4, 4, 0.5f};
  for (int c = 0; c < 6; c++) {
    ((float *)a.data)[0] = xs[c];
    int rc = gc_forward(&g.node, in, out, NULL, NULL, &st);
    float y = rc ? NAN : ((float *)out[0].data)[0];
    /* 0.5 on the frozen [0, 4] scale is code 32 (31.875 rounded): 32 * 4 / 255 */
    float w = c == 5 ? 32.0f * 4.0f / 255.0f : want[c];
    CHECK(rc == 0 && fabsf(y - w) < 1e-5f, "call %d: x %g -> %g (want %g) %s", c + 1, xs[c], y, w, st.msg);
    if (rc == 0) gc_free_outs(out, 1);
  }
  free(g.node.attrs);
  amd_tensor_free(&a), amd_tensor_free(&b);
  amd_mult_free(&m);
}

/* ---- float nodes quantized on the fly, weights whose output channels have
 * ranges three orders of magnitude apart */

/* Channel c of a weight: uniform in [-CH_LO[c], CH_HI[c]] (q8u's zero points
 * differ too). */
static const double CH_HI[6] = {0.02, 40, 0.5, 3, 0.06, 12}, CH_LO[6] = {0.02, 10, 0.05, 3, 0.01, 2};

static double ch_uniform(int c) { return -CH_LO[c] + (CH_LO[c] + CH_HI[c]) * gc_uniform(); }

/* Runs node op (attrs, inputs x and w) quantized on the fly in mode (a q8f
 * node) and compares its output with want (the float result, in double):
 * for every output channel (chan(i) of output element i), the largest error
 * over the channel's outputs relative to the largest |want| of the channel.
 * Each channel's weights are quantized on their own range, so 8 bits leave
 * about 1 % of error per channel; one scale for the tensor (or another
 * channel's) puts the small channels' weights on a step larger than
 * themselves. */
static void q8f_channels(const char *label, const char *mode, const char *op, int opset,
                         Onnx__AttributeProto **attrs, int n_attrs, amd_tensor *x, amd_tensor *w,
                         const double *want, int64_t nch, int64_t (*chan)(int64_t i)) {
  amd_status st = {{0}};
  amd_mult m;
  gc_node g;
  amd_tensor *in[2] = {x, w}, out[GC_MAX_OUT];
  CHECK(amd_mult_parse(mode, &m, &st) == 0, "%s", st.msg);
  int rc = gc_bind(&g, op, opset, attrs, n_attrs, in, 2, 1, &st);
  g.node.mult = &m;
  if (rc == 0) rc = amd_q8_float_node(&g.node, &st);
  int q8f = rc == 0 &&
            (g.node.op == &amd_op_Q8fConv || g.node.op == &amd_op_Q8fGemm || g.node.op == &amd_op_Q8fMatMul);
  if (q8f) rc = gc_forward(&g.node, in, out, NULL, NULL, &st);
  CHECK(rc == 0 && q8f, "%s %s: not run as a q8f node: %s", label, mode, st.msg);
  if (rc == 0 && q8f) {
    double err[6] = {0}, top[6] = {0};
    const float *y = out[0].data;
    for (int64_t i = 0; i < amd_tensor_numel(&out[0]); i++) {
      const int64_t c = chan(i);
      if (fabs(want[i]) > top[c]) top[c] = fabs(want[i]);
      if (fabs(y[i] - want[i]) > err[c]) err[c] = fabs(y[i] - want[i]);
    }
    char line[256];
    int len = 0, bad = 0;
    for (int64_t c = 0; c < nch; c++) {
      const double rel = top[c] > 0 ? err[c] / top[c] : 1;
      bad += !(rel < 0.03);
      len += snprintf(line + len, sizeof line - (size_t)len, " %.2g", rel);
    }
    CHECK(bad == 0, "%s %s: %d of %lld channels beyond 3 %% of their largest output (relative errors:%s)",
          label, mode, bad, (long long)nch, line);
    if (bad == 0) printf("ok   %-32s %s: each channel's relative error within 3 %%:%s\n", label, mode, line);
    gc_free_outs(out, 1);
  }
  free(g.node.attrs);
  amd_mult_free(&m);
}

enum { QN = 2, QC = 3, QH = 5, QW = 4, QM = 6, QK = 12, QR = 5 };
static int64_t conv_chan(int64_t i) { return i / (QH * QW) % QM; }
static int64_t last_chan(int64_t i) { return i % QM; }

static void test_q8f_channels(void) {
  /* Conv: x [QN, QC, QH, QW], w [QM, QC, 3, 3] (channel = axis 0), pads 1 */
  amd_tensor x = gc_tensor(AMD_FLOAT, 4, (int64_t[]){QN, QC, QH, QW}, -1, 1.5);
  amd_tensor w = gc_tensor(AMD_FLOAT, 4, (int64_t[]){QM, QC, 3, 3}, 0, 0);
  float *xd = x.data, *wd = w.data;
  for (int64_t e = 0; e < QM * QC * 9; e++) wd[e] = (float)ch_uniform((int)(e / (QC * 9)));
  static double want[QN * QM * QH * QW];
  for (int n = 0; n < QN; n++)
    for (int o = 0; o < QM; o++)
      for (int i = 0; i < QH; i++)
        for (int j = 0; j < QW; j++) {
          double acc = 0;
          for (int c = 0; c < QC; c++)
            for (int ki = 0; ki < 3; ki++)
              for (int kj = 0; kj < 3; kj++) {
                const int yi = i + ki - 1, xj = j + kj - 1;
                if (yi < 0 || yi >= QH || xj < 0 || xj >= QW) continue;
                acc += (double)xd[((n * QC + c) * QH + yi) * QW + xj] * wd[((o * QC + c) * 3 + ki) * 3 + kj];
              }
          want[((n * QM + o) * QH + i) * QW + j] = acc;
        }
  Onnx__AttributeProto *pads[1] = {gc_attr_ints("pads", 4, (int64_t[]){1, 1, 1, 1})};
  for (int sg = 0; sg < 2; sg++)
    q8f_channels("Conv (channels on axis 0)", sg ? "q8s:exact" : "q8u:exact", "Conv", 11, pads, 1, &x, &w,
                 want, QM, conv_chan);
  gc_attrs_free(pads, 1);
  amd_tensor_free(&x), amd_tensor_free(&w);

  /* Gemm: A [QR, QK]; B [QK, QM] (channel = column) and, with transB, [QM, QK] (channel = row) */
  amd_tensor a = gc_tensor(AMD_FLOAT, 2, (int64_t[]){QR, QK}, -2, 1);
  amd_tensor b = gc_tensor(AMD_FLOAT, 2, (int64_t[]){QK, QM}, 0, 0);
  amd_tensor bt = gc_tensor(AMD_FLOAT, 2, (int64_t[]){QM, QK}, 0, 0);
  const float *ad = a.data;
  float *bd = b.data, *btd = bt.data;
  for (int k = 0; k < QK; k++)
    for (int c = 0; c < QM; c++) bd[k * QM + c] = btd[c * QK + k] = (float)ch_uniform(c);
  static double gwant[QR * QM];
  for (int r = 0; r < QR; r++)
    for (int c = 0; c < QM; c++) {
      double acc = 0;
      for (int k = 0; k < QK; k++) acc += (double)ad[r * QK + k] * bd[k * QM + c];
      gwant[r * QM + c] = acc;
    }
  Onnx__AttributeProto *tb[1] = {gc_attr_int("transB", 1)};
  for (int sg = 0; sg < 2; sg++) {
    const char *mode = sg ? "q8s:exact" : "q8u:exact";
    q8f_channels("Gemm (channels = B's columns)", mode, "Gemm", 13, NULL, 0, &a, &b, gwant, QM, last_chan);
    q8f_channels("Gemm transB (channels = rows)", mode, "Gemm", 13, tb, 1, &a, &bt, gwant, QM, last_chan);
  }
  gc_attrs_free(tb, 1);

  /* MatMul: A [2, QR, QK] (batched) by B [QK, QM] (channel = last axis) */
  amd_tensor a3 = gc_tensor(AMD_FLOAT, 3, (int64_t[]){2, QR, QK}, -1, 1);
  const float *a3d = a3.data;
  static double mwant[2 * QR * QM];
  for (int r = 0; r < 2 * QR; r++)
    for (int c = 0; c < QM; c++) {
      double acc = 0;
      for (int k = 0; k < QK; k++) acc += (double)a3d[r * QK + k] * bd[k * QM + c];
      mwant[r * QM + c] = acc;
    }
  for (int sg = 0; sg < 2; sg++)
    q8f_channels("MatMul batched (channels = last)", sg ? "q8s:exact" : "q8u:exact", "MatMul", 13, NULL, 0,
                 &a3, &b, mwant, QM, last_chan);
  amd_tensor_free(&a), amd_tensor_free(&b), amd_tensor_free(&bt), amd_tensor_free(&a3);
}

static void test_error_sha(void) {
  static int32_t t[AMD_Q8_ENTRIES];
  amd_q8_stats e;
  amd_q8_exact(0, t);
  amd_q8_error(0, t, &e);
  CHECK(e.n_diff == 0 && e.max_ae == 0 && e.mae == 0 && e.mre == 0, "exact has no error");
  t[10 * 256 + 20] -= 50; /* exact 200: relative error 0.25 on one of 255^2 non-zero pairs */
  amd_q8_error(0, t, &e);
  CHECK(e.n_diff == 1 && e.max_ae == 50 && fabs(e.mae - 50.0 / 65536) < 1e-12 &&
            fabs(e.mre - 0.25 / 65025) < 1e-12,
        "one entry off: n %lld max %lld mae %g mre %g", (long long)e.n_diff, (long long)e.max_ae, e.mae, e.mre);
  struct {
    const char *msg;
    size_t n;
    const char *hex;
  } v[] = {
      {"", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
  };
  char hex[65];
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    amd_sha256_hex((const uint8_t *)v[i].msg, v[i].n, hex);
    CHECK(strcmp(hex, v[i].hex) == 0, "sha256 of '%s': %s", v[i].msg, hex);
  }
  uint8_t *a = malloc(1000000);
  memset(a, 'a', 1000000);
  amd_sha256_hex(a, 1000000, hex);
  CHECK(strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0, "a x 1e6: %s", hex);
  memset(a, 'x', 64);
  amd_sha256_hex(a, 55, hex); /* padding fits one block exactly */
  CHECK(strcmp(hex, "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072") == 0, "x * 55: %s", hex);
  amd_sha256_hex(a, 64, hex);
  CHECK(strcmp(hex, "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c") == 0, "x * 64: %s", hex);
  free(a);
}

/* amd_q8_bit_bilinear: the exact tables and a truncated one are bilinear in the code bits with the expected
 * partial-product weights; one entry off, or a product that is not a sum of partial products, is not. */
static void test_bit_bilinear(void) {
  static int32_t t[AMD_Q8_ENTRIES];
  int64_t c[8][8];
  for (int sgn = 0; sgn < 2; sgn++) {
    amd_q8_exact(sgn, t);
    int ok = amd_q8_bit_bilinear(t, c), weights = 1;
    for (int i = 0; i < 8; i++)
      for (int j = 0; j < 8; j++) {
        /* int8: bit 7 weighs -2^7, so the partial products of one sign bit are negative, of both positive */
        const int64_t want = ((int64_t)1 << (i + j)) * (sgn && (i == 7) != (j == 7) ? -1 : 1);
        weights &= c[i][j] == want;
      }
    CHECK(ok && weights, "exact %s table: bilinear %d, weights %d", sgn ? "int8" : "uint8", ok, weights);
    t[77 * 256 + 200] += 1;
    CHECK(!amd_q8_bit_bilinear(t, c), "exact %s table with one entry off: not bilinear",
          sgn ? "int8" : "uint8");
  }
  /* a truncated multiplier: partial products a_i b_j with i + j < 5 dropped */
  for (int a = 0; a < 256; a++)
    for (int b = 0; b < 256; b++) {
      int32_t v = 0;
      for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++)
          if (i + j >= 5 && (a >> i & 1) && (b >> j & 1)) v += 1 << (i + j);
      t[a * 256 + b] = v;
    }
  int weights = 1;
  const int ok = amd_q8_bit_bilinear(t, c);
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 8; j++) weights &= c[i][j] == (i + j >= 5 ? (int64_t)1 << (i + j) : 0);
  CHECK(ok && weights, "truncated table: bilinear %d, weights %d", ok, weights);
  /* a rounded product (the nearest multiple of 16) keeps no fixed set of partial products */
  for (int a = 0; a < 256; a++)
    for (int b = 0; b < 256; b++) t[a * 256 + b] = (a * b + 8) / 16 * 16;
  CHECK(!amd_q8_bit_bilinear(t, c), "rounded table: not bilinear");
}

int main(void) {
  const char *base = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/amdnn-q8-XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  test_files();
  test_one_entry();
  test_calibration();
  test_q8f_channels();
  test_error_sha();
  test_bit_bilinear();
  /* clean up the files of test_files */
  const char *names[] = {"ramp.bin", "round.amdq8", "short.bin", "magic.amdq8", "version.amdq8", "range.amdq8"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char p[600];
    snprintf(p, sizeof p, "%s/%s", tmpdir, names[i]);
    remove(p);
  }
  rmdir(tmpdir);
  return check_summary();
}

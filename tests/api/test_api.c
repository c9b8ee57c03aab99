/* The public API (include/amdnn.h), through that header alone: the option
 * table and its checks, the modes and their products against the spec's
 * vectors, the host GEMM against its products, sessions (info, run against
 * PyTorch's logits, grad, evaluate, train, save, sweep) and their errors, and
 * one session used again after training: the trained weights are the ones
 * evaluated, saved and reopened bit for bit.
 * usage: test_api AM_VECTORS.tsv MODELS_DIR IDX_DATA_DIR */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api_check.h"

static void test_options(void) {
  amdnn_options *o;
  if (!ok(amdnn_options_create(&o), "options_create")) return;
  fails_with(amdnn_options_set(o, "frobnicate", "1"), AMDNN_ERR_ARGUMENT, "frobnicate", "unknown option");
  fails_with(amdnn_options_set(o, "mode", "am17"), AMDNN_ERR_ARGUMENT, "valid:", "unknown mode");
  fails_with(amdnn_options_set(o, "epochs", "0"), AMDNN_ERR_ARGUMENT, "epochs", "epochs 0");
  fails_with(amdnn_options_set(o, "epochs", "3x"), AMDNN_ERR_ARGUMENT, "whole number", "epochs 3x");
  fails_with(amdnn_options_set(o, "lr", "nan"), AMDNN_ERR_ARGUMENT, "finite", "lr nan");
  fails_with(amdnn_options_set(o, "tta", "yes"), AMDNN_ERR_ARGUMENT, "flag", "flag yes");
  fails_with(amdnn_options_set(o, "mode-map", "Conv"), AMDNN_ERR_ARGUMENT, "NAME_OR_OPTYPE=MODE", "map");
  fails_with(amdnn_options_set(o, "data", "svhn:/x"), AMDNN_ERR_ARGUMENT, "mnist:DIR", "data kind");
  fails_with(amdnn_options_set(o, "device", "tpu"), AMDNN_ERR_ARGUMENT, "cuda:N", "device");
  fails_with(amdnn_options_set(o, "walltime", "soon"), AMDNN_ERR_ARGUMENT, "duration", "walltime");
  CHECK(amdnn_options_get(o, "mode") == NULL, "a refused value is not kept");
  if (ok(amdnn_options_set(o, "mode-map", "conv1=acc32,Gemm=lut:t.bin"), "a good map"))
    CHECK(!strcmp(amdnn_options_get(o, "mode-map"), "conv1=acc32,Gemm=lut:t.bin"), "the value kept");
  ok(amdnn_options_set(o, "o", "x.onnx"), "the short name -o");
  CHECK(amdnn_options_get(o, "output") && !strcmp(amdnn_options_get(o, "output"), "x.onnx"), "-o is output");
  ok(amdnn_options_set(o, "output", NULL), "unset");
  CHECK(amdnn_options_get(o, "output") == NULL, "unset is unset");
  amdnn_options_free(o);
  /* the table: every entry complete, each name once, help lines that fit the help column */
  for (int i = 0; i < amdnn_option_count(); i++) {
    const amdnn_option_info *in = amdnn_option_at(i);
    CHECK(in->name && in->help && in->group && in->used_by, "option %d incomplete", i);
    CHECK(amdnn_option_find(in->name) == in, "%s found twice", in->name);
    CHECK((in->kind == AMDNN_OPTION_FLAG) == (in->metavar == NULL), "%s: a metavar iff it takes a value", in->name);
    for (const char *line = in->help; *line;) {
      const char *end = strchr(line, '\n');
      size_t len = end ? (size_t)(end - line) : strlen(line);
      CHECK(len <= 72, "%s: a help line of %zu characters", in->name, len);
      line += len + (end != NULL);
    }
  }
  CHECK(amdnn_option_at(amdnn_option_count()) == NULL, "past the end");
}

/* Every mode's products against the spec's vectors (hex fp32: a, b, then a column per mode). */
static void test_products(const char *vectors) {
  CHECK(amdnn_mode_count() == 11 && !strcmp(amdnn_mode_name(0), "acc32"), "%d modes", amdnn_mode_count());
  for (int i = 0; i < amdnn_mode_count(); i++) CHECK(amdnn_mode_summary(i), "mode %d has no summary", i);
  FILE *f = fopen(vectors, "r");
  CHECK(f != NULL, "cannot open %s", vectors);
  if (!f) return;
  char line[4096], cols[16][16];
  int n_cols = 0, rows = 0;
  amdnn_multiplier *m[16] = {0};
  while (fgets(line, sizeof line, f)) {
    char *save = NULL;
    int k = 0;
    for (char *tok = strtok_r(line[0] == '#' ? line + 1 : line, "\t\n ", &save); tok && k < 16;
         tok = strtok_r(NULL, "\t\n ", &save))
      snprintf(cols[k++], sizeof cols[0], "%s", tok);
    if (line[0] == '#') { /* the header: a, b, the modes */
      n_cols = k;
      for (int c = 2; c < n_cols; c++) ok(amdnn_multiplier_open(cols[c], &m[c]), cols[c]);
      continue;
    }
    uint32_t ab[2];
    float a, b, want, got;
    sscanf(cols[0], "%x", &ab[0]), sscanf(cols[1], "%x", &ab[1]);
    memcpy(&a, &ab[0], 4), memcpy(&b, &ab[1], 4);
    for (int c = 2; c < n_cols && c < k; c++) {
      uint32_t w, g;
      sscanf(cols[c], "%x", &w);
      memcpy(&want, &w, 4);
      if (!m[c] || !ok(amdnn_multiply(m[c], &a, &b, &got, 1), "multiply")) continue;
      memcpy(&g, &got, 4);
      CHECK(g == w || (isnan(got) && isnan(want)), /* any NaN equals any NaN, as the vectors test has it */ "%s(%s, %s) = %08X, the spec says %s", amdnn_multiplier_name(m[c]), cols[0], cols[1], g, cols[c]);
    }
    rows++;
  }
  fclose(f);
  CHECK(rows > 50, "only %d vectors", rows);
  for (int c = 0; c < 16; c++) amdnn_multiplier_close(m[c]);
}

static void test_codes_and_gemm(void) {
  amdnn_multiplier *u, *s, *am;
  if (!ok(amdnn_multiplier_open("q8u:exact", &u), "q8u") || !ok(amdnn_multiplier_open("q8s:exact", &s), "q8s") ||
      !ok(amdnn_multiplier_open("am16", &am), "am16"))
    return;
  const uint8_t ua[3] = {255, 3, 0}, ub[3] = {255, 7, 9};
  const int8_t sa[3] = {-128, -3, 127}, sb[3] = {-128, 7, -1};
  int32_t out[3];
  if (ok(amdnn_multiply_codes(u, ua, ub, out, 3), "q8u codes")) CHECK(out[0] == 65025 && out[1] == 21 && out[2] == 0, "q8u");
  if (ok(amdnn_multiply_codes(s, sa, sb, out, 3), "q8s codes"))
    CHECK(out[0] == 16384 && out[1] == -21 && out[2] == -127, "q8s %d %d %d", out[0], out[1], out[2]);
  CHECK(amdnn_multiplier_codes(u) == 'u' && amdnn_multiplier_codes(am) == 0, "codes kinds");
  float x = 1.5f, y;
  fails_with(amdnn_multiply(u, &x, &x, &y, 1), AMDNN_ERR_ARGUMENT, "codes", "a float product of a table");
  fails_with(amdnn_multiply_codes(am, ua, ub, out, 1), AMDNN_ERR_ARGUMENT, "not an 8-bit", "codes of a float mode");
  /* the GEMM: each output the fp32 sum in k order of its products (K under one K block) */
  enum { M = 5, N = 7, K = 48 };
  float A[M * K], B[K * N], C[M * N], p;
  uint32_t seed = 7;
  for (int i = 0; i < M * K + K * N; i++) {
    seed = seed * 1664525u + 1013904223u;
    *(i < M * K ? &A[i] : &B[i - M * K]) = (float)((int)(seed >> 9) % 2001 - 1000) / 250.0f;
  }
  if (ok(amdnn_gemm(am, 0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N), "gemm am16")) {
    int same = 1;
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) {
        float sum = 0;
        for (int k = 0; k < K; k++) {
          amdnn_multiply(am, &A[i * K + k], &B[k * N + j], &p, 1);
          sum += p;
        }
        same &= memcmp(&sum, &C[i * N + j], 4) == 0;
      }
    CHECK(same, "amdnn_gemm differs from the sum of amdnn_multiply's products");
  }
  fails_with(amdnn_gemm(am, 0, 0, M, N, K, 1.0f, A, K - 1, B, N, 0.0f, C, N), AMDNN_ERR_ARGUMENT, "leading",
             "a short lda");
  /* the batched host GEMM: each entry amdnn_gemm's bits (A repeated with stride 0, three Bs); a C stride of
   * 0 sums the entries in order, each after the first with beta 1 */
  enum { NB = 3 };
  float Bs[NB * K * N], Cb[NB * M * N], Cs[M * N], Ce[M * N], Cacc[M * N];
  for (int i = 0; i < NB * K * N; i++) Bs[i] = B[i % (K * N)] * (float)(1 + i / (K * N)) - 0.25f;
  if (ok(amdnn_gemm_batched(am, 0, 0, M, N, K, 1.0f, A, K, 0, Bs, N, K * N, 0.0f, Cb, N, M * N, NB), "batched")) {
    int same = 1;
    for (int e = 0; e < NB; e++) {
      amdnn_gemm(am, 0, 0, M, N, K, 1.0f, A, K, Bs + e * K * N, N, 0.0f, Ce, N);
      same &= memcmp(Ce, Cb + e * M * N, sizeof Ce) == 0;
    }
    CHECK(same, "an entry of amdnn_gemm_batched differs from amdnn_gemm of its matrices");
  }
  for (int i = 0; i < M * N; i++) Cs[i] = Cacc[i] = 0.5f;
  if (ok(amdnn_gemm_batched(am, 1, 1, M, N, K, 1.0f, A, M, 0, Bs, K, K * N, 1.0f, Cs, N, 0, NB), "summed")) {
    for (int e = 0; e < NB; e++) amdnn_gemm(am, 1, 1, M, N, K, 1.0f, A, M, Bs + e * K * N, K, 1.0f, Cacc, N);
    CHECK(memcmp(Cs, Cacc, sizeof Cs) == 0, "a C stride of 0 does not sum the entries in order with beta 1");
  }
  fails_with(amdnn_gemm_batched(am, 0, 0, M, N, K, 1.0f, A, K, -1, B, N, 0, 0.0f, C, N, 0, 2), AMDNN_ERR_ARGUMENT,
             "negative", "a negative stride");
  fails_with(amdnn_gemm_batched(u, 0, 0, M, N, K, 1.0f, A, K, 0, B, N, 0, 0.0f, C, N, 0, 1), AMDNN_ERR_ARGUMENT,
             "8-bit", "a batched table GEMM");
  fails_with(amdnn_gemm(u, 0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N), AMDNN_ERR_ARGUMENT, "8-bit", "a table GEMM");
  if (amdnn_cuda_device_count() == 0)
    fails_with(amdnn_gemm_cuda(am, AMDNN_GEMM_EXACT, 0, 0, M, N, K, 1.0f, A, K, 0, B, N, 0, 0.0f, C, N, 0, 1, NULL),
               AMDNN_ERR_FAILED, "CUDA", "the device GEMM without a GPU");
  amdnn_multiplier_close(u), amdnn_multiplier_close(s), amdnn_multiplier_close(am);
}

/* The convolution's plan (every build): ONNX Conv's output size, workspaces
 * only where a pass needs one, and the refusals of bad shapes; the
 * convolution without a GPU fails with a message. */
static void test_conv2d_plan(void) {
  /* 2 x 4 x 9 x 8, 6 filters of 2 x 3 x 3 (two groups), strides 2 x 1, dilation 1 x 2, pads 1, 0, 2, 1 */
  amdnn_conv2d_shape s = {.n = 2, .c = 4, .h = 9, .w = 8, .m = 6, .kh = 3, .kw = 3, .groups = 2,
                          .stride = {2, 1}, .dilation = {1, 2}, .pads = {1, 0, 2, 1}};
  int64_t oh = 0, ow = 0;
  size_t fwd = 1, bwd = 1;
  if (ok(amdnn_conv2d_plan(&s, &oh, &ow, &fwd, &bwd), "plan")) {
    /* (9 + 1 + 2 - 3) / 2 + 1 = 5; (8 + 0 + 1 - 5) / 1 + 1 = 5 */
    CHECK(oh == 5 && ow == 5, "plan: output %lldx%lld, expected 5x5", (long long)oh, (long long)ow);
  }
  /* a pointwise convolution of large images needs no forward workspace in a CUDA build */
  amdnn_conv2d_shape pw = {.n = 3, .c = 8, .h = 32, .w = 32, .m = 16, .kh = 1, .kw = 1, .groups = 1,
                           .stride = {1, 1}, .dilation = {1, 1}};
  if (ok(amdnn_conv2d_plan(&pw, &oh, &ow, &fwd, &bwd), "pointwise plan"))
    CHECK(oh == 32 && ow == 32 && fwd == 0, "pointwise plan: %lldx%lld, forward workspace %zu", (long long)oh,
          (long long)ow, fwd);
  amdnn_conv2d_shape bad = s;
  bad.c = 5;
  fails_with(amdnn_conv2d_plan(&bad, NULL, NULL, NULL, NULL), AMDNN_ERR_ARGUMENT, "not divisible", "5 channels");
  bad = s, bad.stride[1] = 0;
  fails_with(amdnn_conv2d_plan(&bad, NULL, NULL, NULL, NULL), AMDNN_ERR_ARGUMENT, "under 1", "stride 0");
  bad = s, bad.kh = 20;
  fails_with(amdnn_conv2d_plan(&bad, NULL, NULL, NULL, NULL), AMDNN_ERR_ARGUMENT, "larger than", "a large kernel");
  bad = s, bad.pads[2] = -1;
  fails_with(amdnn_conv2d_plan(&bad, NULL, NULL, NULL, NULL), AMDNN_ERR_ARGUMENT, "negative pad", "a negative pad");
  fails_with(amdnn_conv2d_plan(NULL, NULL, NULL, NULL, NULL), AMDNN_ERR_ARGUMENT, "no shape", "no shape");
  float x[2 * 4 * 9 * 8] = {0}, w[6 * 2 * 9] = {0}, y[2 * 6 * 25];
  fails_with(amdnn_conv2d_cuda(NULL, AMDNN_GEMM_FAST, &s, x, w, NULL, NULL, NULL, 0, NULL), AMDNN_ERR_ARGUMENT,
             "NULL", "no output");
  amdnn_multiplier *u = NULL;
  if (ok(amdnn_multiplier_open("q8u:exact", &u), "q8u:exact"))
    fails_with(amdnn_conv2d_cuda(u, AMDNN_GEMM_FAST, &s, x, w, NULL, y, NULL, 0, NULL), AMDNN_ERR_ARGUMENT, "8-bit",
               "a table convolution");
  amdnn_multiplier_close(u);
  if (amdnn_cuda_device_count() == 0) {
    fails_with(amdnn_conv2d_cuda(NULL, AMDNN_GEMM_FAST, &s, x, w, NULL, y, NULL, 0, NULL), AMDNN_ERR_FAILED, "CUDA",
               "the convolution without a GPU");
    fails_with(amdnn_conv2d_backward_cuda(NULL, AMDNN_GEMM_FAST, &s, x, w, y, x, NULL, NULL, 0, NULL),
               AMDNN_ERR_FAILED, "CUDA", "its backward without a GPU");
  }
}

/* An options object from name, value pairs (NULL-terminated). */
static amdnn_options *opts_of(const char *name, ...) {
  amdnn_options *o = NULL;
  if (!ok(amdnn_options_create(&o), "options")) return NULL;
  va_list ap;
  va_start(ap, name);
  for (const char *n = name; n; n = va_arg(ap, const char *)) {
    const char *v = va_arg(ap, const char *);
    ok(amdnn_options_set(o, n, v), n);
  }
  va_end(ap);
  return o;
}

/* Max |a - b| relative to max |b| of two float tensors of one shape; -1 when the shapes differ. */
static double rel_diff(const amdnn_tensor *a, const amdnn_tensor *b) {
  if (a->dtype != AMDNN_FLOAT || b->dtype != AMDNN_FLOAT || amdnn_tensor_numel(a) != amdnn_tensor_numel(b)) return -1;
  const float *x = a->data, *y = b->data;
  double d = 0, m = 0;
  for (int64_t i = 0; i < amdnn_tensor_numel(a); i++) {
    d = fmax(d, fabs((double)x[i] - y[i]));
    m = fmax(m, fabs((double)y[i]));
  }
  return m > 0 ? d / m : d;
}

/* info, run against PyTorch's logits (acc32), another mode's differ, and the errors. */
static void test_session_run(const char *models) {
  char path[4096], input[4096], logits[4096];
  snprintf(path, sizeof path, "%s/lenet5.onnx", models);
  snprintf(input, sizeof input, "%s/lenet5.input.pb", models);
  snprintf(logits, sizeof logits, "%s/lenet5.logits.pb", models);
  amdnn_session *s = NULL;
  amdnn_options *bad = opts_of("epochs", "3", NULL);
  fails_with(amdnn_session_open(path, bad, &s), AMDNN_ERR_ARGUMENT, "takes no option 'epochs'", "a train option");
  amdnn_options_free(bad);
  fails_with(amdnn_session_open("/nonexistent/m.onnx", NULL, &s), AMDNN_ERR_FAILED, "cannot open", "no file");
  CHECK(s == NULL, "no session after a failure");
  amdnn_tensor *x = NULL, *want = NULL, *out = NULL, *out16 = NULL;
  int n = 0, n16 = 0;
  if (!ok(amdnn_tensor_read(input, &x), "input") || !ok(amdnn_tensor_read(logits, &want), "logits")) goto done;
  if (!ok(amdnn_session_open(path, NULL, &s), "open acc32")) goto done;
  const amdnn_model_info *info;
  if (ok(amdnn_session_info(s, &info), "info"))
    CHECK(info->n_inputs == 1 && info->n_gemm_nodes == 5 && info->macs == 416520 && info->shapes_known,
          "info: %d inputs, %d GEMM nodes, %lld MACs", info->n_inputs, info->n_gemm_nodes, (long long)info->macs);
  amdnn_node_info node;
  if (ok(amdnn_session_node(s, 0, &node), "node 0"))
    CHECK(!strcmp(node.op_type, "Conv") && node.on_multiplier && !strcmp(node.forward_mode, "acc32"), "node 0");
  fails_with(amdnn_session_node(s, 999, &node), AMDNN_ERR_ARGUMENT, "no node", "node 999");
  free((char *)x->name); /* run by position: no name */
  x->name = NULL;
  if (ok(amdnn_session_run(s, x, 1, &out, &n), "run acc32"))
    CHECK(n == 1 && rel_diff(&out[0], want) >= 0 && rel_diff(&out[0], want) <= 1e-4, "acc32 logits off by %g",
          n ? rel_diff(&out[0], want) : -1.0);
  amdnn_tensor named = *x;
  named.name = "nope";
  fails_with(amdnn_session_run(s, &named, 1, &out16, &n16), AMDNN_ERR_ARGUMENT, "no input named 'nope'", "by name");
  amdnn_session_close(s);
  amdnn_options *am16 = opts_of("mode", "am16", "device", "cpu", NULL);
  s = NULL;
  if (ok(amdnn_session_open(path, am16, &s), "open am16") && ok(amdnn_session_run(s, x, 1, &out16, &n16), "run am16"))
    CHECK(n16 == 1 && rel_diff(&out16[0], &out[0]) > 1e-4 && rel_diff(&out16[0], &out[0]) < 0.2,
          "am16 logits against acc32's: %g", rel_diff(&out16[0], &out[0]));
  amdnn_options_free(am16);
done:
  amdnn_session_close(s);
  amdnn_tensors_free(out, n), amdnn_tensors_free(out16, n16);
  amdnn_tensors_free(x, x ? 1 : 0), amdnn_tensors_free(want, want ? 1 : 0);
}

/* Progress reports seen, and a stop asked after the first. */
typedef struct seen {
  int progress, epochs, rows, stop_at_first;
} seen;
static int on_progress(void *user, const amdnn_progress *p) {
  seen *w = user;
  (void)p;
  w->progress++;
  return w->stop_at_first;
}
static int on_epoch(void *user, const amdnn_epoch *e) {
  ((seen *)user)->epochs++;
  (void)e;
  return 0;
}
static int on_row(void *user, const amdnn_sweep_row *r) {
  ((seen *)user)->rows++;
  (void)r;
  return 0;
}

/* Top-1 and mean loss of a session on the data. */
static int evaluate(amdnn_session *s, const amdnn_options *o, double *top1, double *loss) {
  amdnn_eval_result *r = NULL;
  if (!ok(amdnn_session_evaluate(s, o, NULL, &r), "evaluate")) return -1;
  *top1 = (double)r->top1 / (double)r->n;
  *loss = r->loss;
  int n = (int)r->n;
  amdnn_eval_result_free(r);
  return n;
}

/* Evaluate, train, evaluate again: the trained weights, saved and reopened, evaluate the same bit for bit;
 * a stop asked by a callback; grad; a sweep whose baseline and last rows are the evaluations. */
static void test_session_train(const char *models, const char *idx) {
  char path[4096], data[4096], tmp[] = "/tmp/test_api_XXXXXX", saved[4200];
  snprintf(path, sizeof path, "%s/lenet5_train.onnx", models);
  snprintf(data, sizeof data, "mnist:%s", idx);
  if (!mkdtemp(tmp)) return;
  snprintf(saved, sizeof saved, "%s/trained.onnx", tmp);
  amdnn_options *so = opts_of("device", "cpu", NULL), *ev = opts_of("data", data, "limit", "300", NULL);
  amdnn_options *tr = opts_of("data", data, "limit", "600", "epochs", "1", "batch", "50", "lr", "0.05", NULL);
  amdnn_session *s = NULL, *again = NULL;
  double top_before, loss_before, top_after, loss_after, top_saved, loss_saved;
  seen w = {0};
  amdnn_callbacks cb = {.user = &w, .progress = on_progress, .epoch = on_epoch, .sweep_row = on_row};
  if (!ok(amdnn_session_open(path, so, &s), "open") || evaluate(s, ev, &top_before, &loss_before) != 300) goto done;
  fails_with(amdnn_session_evaluate(s, tr, NULL, NULL), AMDNN_ERR_ARGUMENT, "NULL", "no result pointer");
  amdnn_eval_result *r = NULL;
  fails_with(amdnn_session_evaluate(s, tr, NULL, &r), AMDNN_ERR_ARGUMENT, "takes no option", "a train option");
  if (!ok(amdnn_session_train(s, tr, &cb), "train")) goto done;
  CHECK(w.epochs == 1 && w.progress > 0, "%d epochs and %d progress reports seen", w.epochs, w.progress);
  if (evaluate(s, ev, &top_after, &loss_after) != 300) goto done;
  CHECK(loss_after < loss_before, "one epoch did not lower the loss: %g -> %g", loss_before, loss_after);
  if (!ok(amdnn_session_save(s, saved), "save") || !ok(amdnn_session_open(saved, so, &again), "reopen") ||
      evaluate(again, ev, &top_saved, &loss_saved) != 300)
    goto done;
  CHECK(top_saved == top_after && loss_saved == loss_after, "the saved model evaluates to %.6f / %.9g, the session to "
        "%.6f / %.9g", top_saved, loss_saved, top_after, loss_after);
  /* a callback that asks to stop */
  w.stop_at_first = 1;
  fails_with(amdnn_session_train(again, tr, &cb), AMDNN_ERR_STOPPED, "stopped", "a stop request");
  /* a sweep on the session: its baseline is the acc32 evaluation, its last row all nodes in the mode */
  amdnn_options *sw = opts_of("data", data, "limit", "300", NULL);
  w = (seen){0};
  amdnn_session_close(again);
  amdnn_options *am16 = opts_of("device", "cpu", "mode", "am16", NULL);
  again = NULL;
  double top_am16, loss_am16;
  if (ok(amdnn_session_open(saved, am16, &again), "open am16") && evaluate(again, ev, &top_am16, &loss_am16) == 300 &&
      ok(amdnn_session_sweep(again, sw, &cb), "sweep")) {
    CHECK(w.rows == 7, "%d sweep rows (5 nodes, the baseline, all)", w.rows);
    double top_all, loss_all;
    evaluate(again, ev, &top_all, &loss_all); /* the session's am16 again after the sweep */
    CHECK(top_all == top_am16 && loss_all == loss_am16, "the sweep did not give the session its modes back");
  }
  amdnn_options_free(sw), amdnn_options_free(am16);
done:
  amdnn_session_close(s);
  amdnn_session_close(again);
  amdnn_options_free(so), amdnn_options_free(ev), amdnn_options_free(tr);
  unlink(saved);
  rmdir(tmp);
}

/* The warnings a callback heard. */
typedef struct heard {
  int warnings;
  char last[512];
} heard;
static void on_message(void *user, amdnn_message_kind kind, const char *text) {
  heard *h = user;
  if (kind != AMDNN_MSG_WARNING) return;
  h->warnings++;
  snprintf(h->last, sizeof h->last, "%s", text);
}

/* grad: a loss and every initializer's gradient; the training set-up's warning reaches the callback (a model
 * exported in eval mode, BatchNormalization folded into its Conv nodes), and none for a training export. */
static void test_session_grad(const char *models) {
  float x[2 * 3 * 32 * 32];
  int64_t y[2] = {3, 7};
  for (size_t i = 0; i < sizeof x / sizeof x[0]; i++) x[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
  const amdnn_tensor xt = {.dtype = AMDNN_FLOAT, .rank = 4, .dims = {2, 3, 32, 32}, .data = x};
  const amdnn_tensor yt = {.dtype = AMDNN_INT64, .rank = 1, .dims = {2}, .data = y};
  const char *names[] = {"resnet8.onnx", "resnet8_train.onnx"};
  amdnn_options *so = opts_of("device", "cpu", NULL);
  for (int k = 0; k < 2; k++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", models, names[k]);
    amdnn_session *s = NULL;
    amdnn_tensor *g = NULL;
    int n = 0;
    double loss = -1;
    heard h = {0};
    const amdnn_callbacks cb = {.user = &h, .message = on_message};
    if (ok(amdnn_session_open(path, so, &s), "open for grad") &&
        ok(amdnn_session_grad(s, &xt, &yt, NULL, &cb, &loss, &g, &n), names[k])) {
      CHECK(n > 0 && isfinite(loss) && loss > 0, "%s: %d gradients, loss %g", names[k], n, loss);
      if (k == 0)
        CHECK(h.warnings == 1 && strstr(h.last, "exported in eval mode"), "%s: %d warnings, '%s'", names[k],
              h.warnings, h.last);
      else
        CHECK(h.warnings == 0, "%s: %d warnings ('%s')", names[k], h.warnings, h.last);
      /* no callbacks: the same call, nothing heard */
      amdnn_tensors_free(g, n), g = NULL;
      ok(amdnn_session_grad(s, &xt, &yt, NULL, NULL, &loss, &g, &n), "grad without callbacks");
    }
    amdnn_tensors_free(g, g ? n : 0);
    amdnn_session_close(s);
  }
  amdnn_options_free(so);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: test_api AM_VECTORS.tsv MODELS_DIR IDX_DATA_DIR\n");
    return 2;
  }
  CHECK(!strcmp(amdnn_version(), AMDNN_VERSION), "library %s, header %s", amdnn_version(), AMDNN_VERSION);
  test_options();
  test_products(argv[1]);
  test_codes_and_gemm();
  test_conv2d_plan();
  test_session_run(argv[2]);
  test_session_grad(argv[2]);
  if (access(argv[3], R_OK) == 0) test_session_train(argv[2], argv[3]);
  else printf("no IDX data in %s: the training part is skipped\n", argv[3]);
  return check_summary();
}

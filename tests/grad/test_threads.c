/* The CPU ops that run on every core (src/core/omp.h, AMD_PARALLEL_FOR) give
 * the same bits with 1, 2 and 3 threads: forward outputs, every input
 * gradient and the random stream's state after the node. Tensors are large
 * enough (over AMD_PAR_MIN elements) for the threaded paths to be taken;
 * gradcheck.h's one-node graphs, in training mode. Without OpenMP there is
 * one thread and nothing to compare: the test skips. */
#include "gradcheck.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/omp.h"

enum { MAX_IN = 5 };

typedef struct run_result {
  amd_tensor out[GC_MAX_OUT], grad[MAX_IN];
  uint64_t rng_after; /* ctx->rng after forward */
} run_result;

/* Forward and backward of the node with `threads` threads; dY is w. */
static int run_once(gc_node *g, amd_tensor **in, int n_in, int n_out, unsigned grad_mask, const amd_tensor *w,
                    int threads, run_result *r, amd_status *st) {
#ifdef _OPENMP
  omp_set_num_threads(threads);
#else
  (void)threads;
#endif
  memset(r, 0, sizeof *r);
  amd_ctx ctx = {.training = 1, .rng = 12345};
  if (g->node.op->infer(&g->node, (const amd_tensor *const *)in, r->out, st)) return -1;
  for (int o = 0; o < n_out; o++)
    if (amd_tensor_alloc(&r->out[o], st)) return -1;
  if (g->node.op->forward(&g->node, &ctx, (const amd_tensor *const *)in, r->out, st)) return -1;
  r->rng_after = ctx.rng;
  amd_tensor *din[GC_MAX_IN] = {0};
  for (int k = 0; k < n_in; k++)
    if ((grad_mask >> k) & 1) {
      amd_tensor_set_shape(&r->grad[k], in[k]->dtype, in[k]->rank, in[k]->dims);
      if (amd_tensor_alloc(&r->grad[k], st)) return -1;
      for (int64_t i = 0; i < amd_tensor_numel(&r->grad[k]); i++) /* backward adds into what is there */
        amd_tensor_set_f64(&r->grad[k], i, 0.25);
      din[k] = &r->grad[k];
    }
  const amd_tensor *dout[GC_MAX_OUT] = {w};
  amd_ctx bctx = {.training = 1, .rng = 12345};
  return g->node.op->backward(&g->node, &bctx, (const amd_tensor *const *)in, r->out, dout, din, st);
}

static void free_result(run_result *r) {
  for (int o = 0; o < GC_MAX_OUT; o++) amd_tensor_free(&r->out[o]);
  for (int k = 0; k < MAX_IN; k++) amd_tensor_free(&r->grad[k]);
}

static int same_bits(const amd_tensor *a, const amd_tensor *b) {
  size_t na = a->data ? amd_tensor_nbytes(a) : 0, nb = b->data ? amd_tensor_nbytes(b) : 0;
  return na == nb && (na == 0 || memcmp(a->data, b->data, na) == 0);
}

/* Runs the op with 1, 2 and 3 threads and compares with the 1-thread run. */
static void check(const char *label, const char *op, int opset, Onnx__AttributeProto **attrs, int n_attrs,
                  amd_tensor **in, int n_in, int n_out, unsigned grad_mask) {
  amd_status st = {{0}};
  gc_node g;
  AMD_ASSERT(n_in <= MAX_IN);
  if (gc_bind(&g, op, opset, attrs, n_attrs, in, n_in, n_out, &st)) {
    printf("FAIL %s: %s\n", label, st.msg);
    gc_failed++;
    return;
  }
  run_result ref, r;
  amd_tensor w = {0};
  int ok = 1;
  if (g.node.op->infer(&g.node, (const amd_tensor *const *)in, ref.out, &st) == 0)
    w = gc_tensor(ref.out[0].dtype, ref.out[0].rank, ref.out[0].dims, -1, 1);
  if (amd_tensor_numel(&w) < AMD_PAR_MIN) {
    printf("FAIL %s: output of %lld elements, under AMD_PAR_MIN (the threads would not start)\n", label,
           (long long)amd_tensor_numel(&w));
    ok = 0;
  }
  if (ok && run_once(&g, in, n_in, n_out, grad_mask, &w, 1, &ref, &st)) {
    printf("FAIL %s: 1 thread: %s\n", label, st.msg);
    ok = 0;
  }
  for (int threads = 2; ok && threads <= 3; threads++) {
    if (run_once(&g, in, n_in, n_out, grad_mask, &w, threads, &r, &st)) {
      printf("FAIL %s: %d threads: %s\n", label, threads, st.msg);
      ok = 0;
    }
    for (int o = 0; ok && o < n_out; o++)
      if (!same_bits(&ref.out[o], &r.out[o])) {
        printf("FAIL %s: output %d differs with %d threads\n", label, o, threads);
        ok = 0;
      }
    for (int k = 0; ok && k < n_in; k++)
      if (!same_bits(&ref.grad[k], &r.grad[k])) {
        printf("FAIL %s: the gradient of input %d differs with %d threads\n", label, k, threads);
        ok = 0;
      }
    if (ok && r.rng_after != ref.rng_after) {
      printf("FAIL %s: the random stream ends elsewhere with %d threads\n", label, threads);
      ok = 0;
    }
    free_result(&r);
  }
  free_result(&ref);
  amd_tensor_free(&w);
  free(g.node.attrs);
  if (ok) printf("ok   %s\n", label);
  ok ? gc_passed++ : gc_failed++;
}

static const int64_t act[] = {8, 16, 32, 32}; /* 131072 elements */

static void unary(const char *op, int opset, amd_dtype dt) {
  amd_tensor x = gc_tensor(dt, 4, act, -3, 3);
  amd_tensor *in[] = {&x};
  char label[64];
  snprintf(label, sizeof label, "%s %s", op, dt == AMD_DOUBLE ? "double" : "float");
  check(label, op, opset, NULL, 0, in, 1, 1, 1u);
  amd_tensor_free(&x);
}

/* A (act) op B of shape bdims; both gradients. */
static void binary(const char *op, int brank, const int64_t *bdims, const char *label) {
  amd_tensor a = gc_tensor(AMD_FLOAT, 4, act, -2, 2), b = gc_tensor(AMD_FLOAT, brank, bdims, 0.5, 2);
  amd_tensor *in[] = {&a, &b};
  check(label, op, 14, NULL, 0, in, 2, 1, 3u);
  amd_tensor_free(&a);
  amd_tensor_free(&b);
}

int main(void) {
#ifndef _OPENMP
  printf("SKIP: built without OpenMP\n");
  return 77;
#endif
  unary("Relu", 14, AMD_FLOAT);
  unary("Relu", 14, AMD_DOUBLE);
  unary("Erf", 13, AMD_FLOAT);
  unary("Sigmoid", 13, AMD_FLOAT);
  unary("Gelu", 20, AMD_FLOAT);
  unary("Elu", 6, AMD_FLOAT);
  unary("Softplus", 1, AMD_DOUBLE);
  unary("Identity", 16, AMD_FLOAT);

  const int64_t same[] = {8, 16, 32, 32}, chan[] = {1, 16, 1, 1}, sample[] = {8, 16, 1, 1}, row[] = {32},
                one[] = {1};
  binary("Add", 4, same, "Add, equal shapes");
  binary("Mul", 4, chan, "Mul by [1,16,1,1]");
  binary("Mul", 4, sample, "Mul by [8,16,1,1]");
  binary("Sub", 1, row, "Sub of [32]");
  binary("Div", 1, one, "Div by a scalar");

  { /* Conv 3x3, padding 1, bias: a batch of small images (the images go to the threads) */
    const int64_t xd[] = {8, 8, 16, 16}, wd[] = {16, 8, 3, 3}, bd[] = {16}, pads[] = {1, 1, 1, 1};
    amd_tensor x = gc_tensor(AMD_FLOAT, 4, xd, -1, 1), w = gc_tensor(AMD_FLOAT, 4, wd, -0.5, 0.5),
               b = gc_tensor(AMD_FLOAT, 1, bd, -0.5, 0.5);
    amd_tensor *in[] = {&x, &w, &b};
    Onnx__AttributeProto *a[] = {gc_attr_ints("pads", 4, pads)};
    check("Conv 3x3, 8 images", "Conv", 11, a, 1, in, 3, 1, 7u);
    gc_attrs_free(a, 1);
    for (int k = 0; k < 3; k++) amd_tensor_free(in[k]);
  }
  { /* BatchNormalization on batch statistics */
    const int64_t c[] = {16};
    amd_tensor x = gc_tensor(AMD_FLOAT, 4, act, -2, 2), s = gc_tensor(AMD_FLOAT, 1, c, 0.5, 1.5),
               b = gc_tensor(AMD_FLOAT, 1, c, -1, 1), m = gc_tensor(AMD_FLOAT, 1, c, -0.1, 0.1),
               v = gc_tensor(AMD_FLOAT, 1, c, 0.9, 1.1);
    amd_tensor *in[] = {&x, &s, &b, &m, &v};
    Onnx__AttributeProto *a[] = {gc_attr_int("training_mode", 1)};
    check("BatchNormalization, batch statistics", "BatchNormalization", 15, a, 1, in, 5, 3, 7u);
    gc_attrs_free(a, 1);
    for (int k = 0; k < 5; k++) amd_tensor_free(in[k]);
  }
  { /* LayerNormalization over the last axis of [64, 65, 48] */
    const int64_t xd[] = {64, 65, 48}, c[] = {48};
    amd_tensor x = gc_tensor(AMD_FLOAT, 3, xd, -2, 2), s = gc_tensor(AMD_FLOAT, 1, c, 0.5, 1.5),
               b = gc_tensor(AMD_FLOAT, 1, c, -1, 1);
    amd_tensor *in[] = {&x, &s, &b};
    Onnx__AttributeProto *a[] = {gc_attr_int("axis", -1)};
    check("LayerNormalization", "LayerNormalization", 17, a, 1, in, 3, 1, 7u);
    gc_attrs_free(a, 1);
    for (int k = 0; k < 3; k++) amd_tensor_free(in[k]);
  }
  { /* Softmax over the last axis (rows) and over axis 1 (columns) */
    const int64_t xd[] = {8, 3, 65, 65};
    amd_tensor x = gc_tensor(AMD_FLOAT, 4, xd, -4, 4);
    amd_tensor *in[] = {&x};
    Onnx__AttributeProto *last[] = {gc_attr_int("axis", -1)}, *mid[] = {gc_attr_int("axis", 1)};
    check("Softmax, last axis", "Softmax", 13, last, 1, in, 1, 1, 1u);
    check("LogSoftmax, last axis", "LogSoftmax", 13, last, 1, in, 1, 1, 1u);
    check("Softmax, axis 1", "Softmax", 13, mid, 1, in, 1, 1, 1u);
    gc_attrs_free(last, 1);
    gc_attrs_free(mid, 1);
    amd_tensor_free(&x);
  }
  { /* Transpose as attention's heads split: [8, 65, 3, 64] -> [8, 3, 65, 64] */
    const int64_t xd[] = {8, 65, 3, 64}, perm[] = {0, 2, 1, 3};
    amd_tensor x = gc_tensor(AMD_FLOAT, 4, xd, -1, 1);
    amd_tensor *in[] = {&x};
    Onnx__AttributeProto *a[] = {gc_attr_ints("perm", 4, perm)};
    check("Transpose", "Transpose", 13, a, 1, in, 1, 1, 1u);
    gc_attrs_free(a, 1);
    amd_tensor_free(&x);
  }
  { /* Dropout 0.3 in training: the draws of every element, the mask, the stream's end */
    const int64_t sc[1] = {0};
    amd_tensor x = gc_tensor(AMD_FLOAT, 4, act, -1, 1), ratio = {0}, train = {0};
    amd_tensor_set_shape(&ratio, AMD_FLOAT, 0, sc);
    amd_tensor_set_shape(&train, AMD_BOOL, 0, sc);
    amd_status st;
    AMD_ASSERT(amd_tensor_alloc(&ratio, &st) == 0 && amd_tensor_alloc(&train, &st) == 0);
    amd_tensor_set_f64(&ratio, 0, 0.3);
    amd_tensor_set_i64(&train, 0, 1);
    amd_tensor *in[] = {&x, &ratio, &train};
    check("Dropout 0.3", "Dropout", 13, NULL, 0, in, 3, 2, 1u);
    amd_tensor_free(&x);
    amd_tensor_free(&ratio);
    amd_tensor_free(&train);
  }
  (void)gradcheck; /* gradcheck.h's finite differences: not used here */
  return gc_summary();
}

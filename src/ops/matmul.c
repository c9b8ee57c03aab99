/* Gemm (opsets 1, 6, 7, 9, 11, 13) and MatMul (opsets 1, 9, 13).
 *
 * Gemm: Y[M,N] = alpha * op(A) * op(B) + beta * C, A and B 2-D, op() the
 * optional transpose (transA, transB); C broadcasts unidirectionally to
 * [M,N] and is optional from opset 11 (required before). The pre-opset-7
 * `broadcast` attribute is ignored: C is always broadcast.
 *
 * MatMul: numpy matmul. A 1-D A is [1,K] and a 1-D B is [K,1], with the
 * added dimension removed from the result; leading (batch) dimensions
 * broadcast. When B has no batch dimensions (or only 1s) and A's batch is
 * not broadcast, the whole batch is one GEMM of (batch*M) rows.
 *
 * Both run on amd_gemm with the node's multiplier. */
#include <string.h>

#include "../gemm/gemm.h"
#include "op.h"

/* ---- Gemm ---- */

typedef struct gemm_attrs {
  float alpha, beta;
  int trans_a, trans_b;
} gemm_attrs;

static int gemm_parse(amd_node *node, const Onnx__NodeProto *p, amd_status *st) {
  gemm_attrs *a = amd_attrs_new(node, sizeof *a, st);
  if (!a) return -1;
  a->alpha = amd_attr_float(p, "alpha", 1.0f);
  a->beta = amd_attr_float(p, "beta", 1.0f);
  a->trans_a = amd_attr_int(p, "transA", 0) != 0;
  a->trans_b = amd_attr_int(p, "transB", 0) != 0;
  return 0;
}

static int gemm_infer(const amd_node *node, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  const gemm_attrs *a = node->attrs;
  const amd_tensor *A = in[0], *B = in[1], *C = node->n_in > 2 ? in[2] : NULL;
  char s1[128], s2[128];
  if (!A || !B) return amd_fail(st, "Gemm needs inputs A and B");
  if (amd_require_float(A, "input A", st) || amd_require_float(B, "input B", st)) return -1;
  if (A->rank != 2 || B->rank != 2)
    return amd_fail(st, "A %s and B %s must both be 2-D", amd_shape_str(A, s1, sizeof s1),
                    amd_shape_str(B, s2, sizeof s2));
  int64_t M = a->trans_a ? A->dims[1] : A->dims[0], K = a->trans_a ? A->dims[0] : A->dims[1];
  int64_t KB = a->trans_b ? B->dims[1] : B->dims[0], N = a->trans_b ? B->dims[0] : B->dims[1];
  if (K != KB)
    return amd_fail(st, "inner dimensions differ: A %s%s, B %s%s", amd_shape_str(A, s1, sizeof s1),
                    a->trans_a ? " (transposed)" : "", amd_shape_str(B, s2, sizeof s2),
                    a->trans_b ? " (transposed)" : "");
  if (!C && node->since < 11) return amd_fail(st, "input C is required before opset 11");
  if (C) {
    if (amd_require_float(C, "input C", st)) return -1;
    int64_t target[2] = {M, N};
    int ok = C->rank <= 2;
    for (int i = 0; ok && i < C->rank; i++) {
      int64_t d = C->dims[C->rank - 1 - i], t = target[1 - i];
      if (d != t && d != 1) ok = 0;
    }
    if (!ok)
      return amd_fail(st, "C %s does not broadcast to [%lld,%lld]", amd_shape_str(C, s1, sizeof s1),
                      (long long)M, (long long)N);
  }
  int64_t dims[2] = {M, N};
  amd_tensor_set_shape(&out[0], AMD_FLOAT, 2, dims);
  return 0;
}

static int gemm_forward(const amd_node *node, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                        amd_status *st) {
  (void)ctx;
  (void)st;
  const gemm_attrs *a = node->attrs;
  const amd_tensor *A = in[0], *B = in[1], *C = node->n_in > 2 ? in[2] : NULL;
  int64_t M = out[0].dims[0], N = out[0].dims[1], K = a->trans_a ? A->dims[0] : A->dims[1];
  float *y = out[0].data;
  float beta = 0;
  if (C && a->beta != 0) {
    /* Y = C broadcast to [M,N]; the GEMM then adds alpha * op(A) op(B). */
    const float *c = C->data;
    int64_t rs = C->rank == 2 && C->dims[0] != 1 ? C->dims[1] : 0; /* row stride of C */
    int64_t cs = C->rank >= 1 && C->dims[C->rank - 1] != 1 ? 1 : 0;
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) y[i * N + j] = c[i * rs + j * cs];
    beta = a->beta;
  }
  amd_gemm(node->mult, a->trans_a, a->trans_b, M, N, K, a->alpha, A->data, A->dims[1], B->data, B->dims[1],
           beta, y, N);
  return 0;
}

const amd_op amd_op_Gemm = {
    .name = "Gemm",
    .since = {1, 6, 7, 9, 11, 13},
    .parse = gemm_parse,
    .infer = gemm_infer,
    .forward = gemm_forward,
    .is_gemm = 1,
};

/* ---- MatMul ---- */

/* The batch shape (broadcast of the leading dimensions) and the matrix sizes. */
typedef struct mm_shape {
  int64_t M, N, K;
  amd_tensor batch_a, batch_b, batch; /* shapes only */
} mm_shape;

static int mm_shapes(const amd_tensor *A, const amd_tensor *B, mm_shape *s, amd_status *st) {
  char s1[128], s2[128];
  if (A->rank < 1 || B->rank < 1)
    return amd_fail(st, "MatMul inputs must have rank >= 1 (A %s, B %s)", amd_shape_str(A, s1, sizeof s1),
                    amd_shape_str(B, s2, sizeof s2));
  memset(s, 0, sizeof *s);
  s->M = A->rank >= 2 ? A->dims[A->rank - 2] : 1;
  s->K = A->dims[A->rank - 1];
  int64_t kb = B->rank >= 2 ? B->dims[B->rank - 2] : B->dims[0];
  s->N = B->rank >= 2 ? B->dims[B->rank - 1] : 1;
  if (s->K != kb)
    return amd_fail(st, "inner dimensions differ: A %s, B %s", amd_shape_str(A, s1, sizeof s1),
                    amd_shape_str(B, s2, sizeof s2));
  s->batch_a.rank = A->rank > 2 ? A->rank - 2 : 0;
  s->batch_b.rank = B->rank > 2 ? B->rank - 2 : 0;
  memcpy(s->batch_a.dims, A->dims, sizeof(int64_t) * (size_t)s->batch_a.rank);
  memcpy(s->batch_b.dims, B->dims, sizeof(int64_t) * (size_t)s->batch_b.rank);
  if (amd_broadcast_shape(&s->batch_a, &s->batch_b, &s->batch, st))
    return amd_fail_prefix(st, "batch dimensions of A %s and B %s", amd_shape_str(A, s1, sizeof s1),
                           amd_shape_str(B, s2, sizeof s2));
  return 0;
}

static int matmul_infer(const amd_node *node, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  (void)node;
  const amd_tensor *A = in[0], *B = in[1];
  if (!A || !B) return amd_fail(st, "MatMul needs inputs A and B");
  if (amd_require_float(A, "input A", st) || amd_require_float(B, "input B", st)) return -1;
  mm_shape s;
  if (mm_shapes(A, B, &s, st)) return -1;
  int64_t dims[AMD_MAX_RANK + 2];
  int r = s.batch.rank;
  memcpy(dims, s.batch.dims, sizeof(int64_t) * (size_t)r);
  if (A->rank >= 2) dims[r++] = s.M;
  if (B->rank >= 2) dims[r++] = s.N;
  if (r > AMD_MAX_RANK) return amd_fail(st, "result of rank %d (at most %d supported)", r, AMD_MAX_RANK);
  amd_tensor_set_shape(&out[0], AMD_FLOAT, r, dims);
  return 0;
}

static int matmul_forward(const amd_node *node, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                          amd_status *st) {
  (void)ctx;
  const amd_tensor *A = in[0], *B = in[1];
  mm_shape s;
  if (mm_shapes(A, B, &s, st)) return -1;
  const float *a = A->data, *b = B->data;
  float *y = out[0].data;
  const int64_t M = s.M, N = s.N, K = s.K, mk = M * K, kn = K * N, mn = M * N;
  const int64_t nb = amd_tensor_numel(&s.batch);
  const int64_t nb_b = amd_tensor_numel(&s.batch_b);
  /* B shared by every batch entry and A not broadcast: one tall GEMM. */
  if (nb_b == 1 && amd_tensor_numel(&s.batch_a) == nb) {
    amd_gemm(node->mult, 0, 0, nb * M, N, K, 1.0f, a, K, b, N, 0.0f, y, N);
    return 0;
  }
  int64_t sa[AMD_MAX_RANK], sb[AMD_MAX_RANK], idx[AMD_MAX_RANK] = {0};
  amd_broadcast_strides(&s.batch_a, &s.batch, sa);
  amd_broadcast_strides(&s.batch_b, &s.batch, sb);
  const int r = s.batch.rank;
  int64_t oa = 0, ob = 0; /* batch offsets (in matrices) into A and B */
  for (int64_t t = 0; t < nb; t++) {
    amd_gemm(node->mult, 0, 0, M, N, K, 1.0f, a + oa * mk, K, b + ob * kn, N, 0.0f, y + t * mn, N);
    for (int d = r - 1; d >= 0; d--) { /* advance the batch odometer */
      idx[d]++;
      oa += sa[d];
      ob += sb[d];
      if (idx[d] < s.batch.dims[d]) break;
      oa -= sa[d] * idx[d];
      ob -= sb[d] * idx[d];
      idx[d] = 0;
    }
  }
  return 0;
}

const amd_op amd_op_MatMul = {
    .name = "MatMul",
    .since = {1, 9, 13},
    .infer = matmul_infer,
    .forward = matmul_forward,
    .is_gemm = 1,
};

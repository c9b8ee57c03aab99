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
 * Both run on amd_gemm with the node's multiplier.
 *
 * Backward (ACCUMULATES += into din, as op.h requires; a NULL din is skipped):
 * both gradients are amd_gemm calls on node->bwd_mult with beta = 1, straight
 * into the gradient buffers (no scratch).
 * Gemm: dop(A) = alpha * dY op(B)^T, dop(B) = alpha * op(A)^T dY, written in
 * A's / B's stored layout by choosing the GEMM's transposes; dC = beta * dY
 * summed over the axes C was broadcast along.
 * MatMul: per batch entry dA = dY B^T, dB = A^T dY; a broadcast operand's
 * entry receives the sum over every batch entry that read it (successive
 * beta = 1 GEMMs). 1-D operands have the layout of [1,K] / [K,1] already. */
#include <string.h>

#include "../gemm/gemm.h"
#include "../report/profile.h"
#include "attrs.h"

/* ---- Gemm ---- */



static int gemm_parse(amd_node *node, const amd_attr_list *p, amd_status *st) {
  amd_gemm_attrs *a = amd_attrs_new(node, sizeof *a, st);
  if (!a) return -1;
  a->alpha = amd_attr_float(p, "alpha", 1.0f);
  a->beta = amd_attr_float(p, "beta", 1.0f);
  a->trans_a = amd_attr_int(p, "transA", 0) != 0;
  a->trans_b = amd_attr_int(p, "transB", 0) != 0;
  return 0;
}

static int gemm_infer(const amd_node *node, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  const amd_gemm_attrs *a = node->attrs;
  if (node->n_in < 2 || !in[0] || !in[1]) return amd_fail(st, "Gemm needs inputs A and B");
  const amd_tensor *A = in[0], *B = in[1], *C = node->n_in > 2 ? in[2] : NULL;
  char s1[128], s2[128];
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
  const amd_gemm_attrs *a = node->attrs;
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
  double t0 = AMD_PROF_T0;
  amd_gemm(node->mult, a->trans_a, a->trans_b, M, N, K, a->alpha, A->data, A->dims[1], B->data, B->dims[1],
           beta, y, N);
  AMD_PROF_STAGE(t0, AMD_PROF_FWD_GEMM, M * N * K);
  return 0;
}

static int gemm_backward(const amd_node *node, amd_ctx *ctx, const amd_tensor *const *in,
                         const amd_tensor *out, const amd_tensor *const *dout, amd_tensor *const *din,
                         amd_status *st) {
  (void)ctx;
  const amd_gemm_attrs *a = node->attrs;
  const amd_tensor *A = in[0], *B = in[1], *C = node->n_in > 2 ? in[2] : NULL, *dY = dout[0];
  amd_tensor *dA = din[0], *dB = din[1], *dC = C ? din[2] : NULL;
  if (!dY) return 0;
  if (amd_require_float(dY, "gradient dY", st)) return -1;
  const int64_t M = out[0].dims[0], N = out[0].dims[1], K = a->trans_a ? A->dims[0] : A->dims[1];
  const int64_t lda = A->dims[1], ldb = B->dims[1];
  const float *dy = dY->data;
  double t0 = AMD_PROF_T0;
  if (dA) {
    if (!a->trans_a) /* dA [M,K] += alpha * dY [M,N] op(B)^T [N,K] */
      amd_gemm(node->bwd_mult, 0, !a->trans_b, M, K, N, a->alpha, dy, N, B->data, ldb, 1.0f, dA->data, K);
    else /* dA [K,M] += alpha * op(B) [K,N] dY^T [N,M] */
      amd_gemm(node->bwd_mult, a->trans_b, 1, K, M, N, a->alpha, B->data, ldb, dy, N, 1.0f, dA->data, M);
    AMD_PROF_STAGE(t0, AMD_PROF_BWD_DATA_GEMM, M * N * K);
  }
  t0 = AMD_PROF_T0;
  if (dB) {
    if (!a->trans_b) /* dB [K,N] += alpha * op(A)^T [K,M] dY [M,N] */
      amd_gemm(node->bwd_mult, !a->trans_a, 0, K, N, M, a->alpha, A->data, lda, dy, N, 1.0f, dB->data, N);
    else /* dB [N,K] += alpha * dY^T [N,M] op(A) [M,K] */
      amd_gemm(node->bwd_mult, 1, a->trans_a, N, K, M, a->alpha, dy, N, A->data, lda, 1.0f, dB->data, K);
    AMD_PROF_STAGE(t0, AMD_PROF_BWD_WEIGHT_GEMM, M * N * K);
  }
  if (dC && a->beta != 0) {
    float *dc = dC->data;
    const int64_t rs = C->rank == 2 && C->dims[0] != 1 ? C->dims[1] : 0; /* as in forward */
    const int64_t cs = C->rank >= 1 && C->dims[C->rank - 1] != 1 ? 1 : 0;
    if (rs == 0 && cs == 0) { /* one value */
      double sum = 0;
      for (int64_t i = 0; i < M * N; i++) sum += dy[i];
      dc[0] += a->beta * (float)sum;
    } else if (rs == 0) { /* a row [N] (or [1,N]): sum over rows */
      for (int64_t j = 0; j < N; j++) {
        double sum = 0;
        for (int64_t i = 0; i < M; i++) sum += dy[i * N + j];
        dc[j] += a->beta * (float)sum;
      }
    } else {
      for (int64_t i = 0; i < M; i++) {
        if (cs) {
          for (int64_t j = 0; j < N; j++) dc[i * rs + j] += a->beta * dy[i * N + j];
        } else { /* a column [M,1]: sum over columns */
          double sum = 0;
          for (int64_t j = 0; j < N; j++) sum += dy[i * N + j];
          dc[i * rs] += a->beta * (float)sum;
        }
      }
    }
  }
  return 0;
}

const amd_op amd_op_Gemm = {
    .name = "Gemm",
    .idx = AMD_OP_IDX_Gemm,
    .since = {1, 6, 7, 9, 11, 13},
    .parse = gemm_parse,
    .infer = gemm_infer,
    .forward = gemm_forward,
    .backward = gemm_backward,
    .is_gemm = 1,
};

/* ---- MatMul ---- */

/* The batch shape (broadcast of the leading dimensions) and the matrix sizes. */


int amd_mm_shapes(const amd_tensor *A, const amd_tensor *B, amd_mm_shape *s, amd_status *st) {
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
  if (node->n_in < 2 || !in[0] || !in[1]) return amd_fail(st, "MatMul needs inputs A and B");
  const amd_tensor *A = in[0], *B = in[1];
  if (amd_require_float(A, "input A", st) || amd_require_float(B, "input B", st)) return -1;
  amd_mm_shape s;
  if (amd_mm_shapes(A, B, &s, st)) return -1;
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
  amd_mm_shape s;
  if (amd_mm_shapes(A, B, &s, st)) return -1;
  const float *a = A->data, *b = B->data;
  float *y = out[0].data;
  const int64_t M = s.M, N = s.N, K = s.K, mk = M * K, kn = K * N, mn = M * N;
  const int64_t nb = amd_tensor_numel(&s.batch);
  const int64_t nb_b = amd_tensor_numel(&s.batch_b);
  /* B shared by every batch entry and A not broadcast: one tall GEMM. */
  double t0 = AMD_PROF_T0;
  if (nb_b == 1 && amd_tensor_numel(&s.batch_a) == nb) {
    amd_gemm(node->mult, 0, 0, nb * M, N, K, 1.0f, a, K, b, N, 0.0f, y, N);
    AMD_PROF_STAGE(t0, AMD_PROF_FWD_GEMM, nb * M * N * K);
    return 0;
  }
  int64_t sa[AMD_MAX_RANK], sb[AMD_MAX_RANK], idx[AMD_MAX_RANK] = {0};
  amd_broadcast_strides(&s.batch_a, &s.batch, sa);
  amd_broadcast_strides(&s.batch_b, &s.batch, sb);
  int64_t oa = 0, ob = 0; /* batch offsets (in matrices) into A and B */
  for (int64_t t = 0; t < nb; t++) {
    amd_gemm(node->mult, 0, 0, M, N, K, 1.0f, a + oa * mk, K, b + ob * kn, N, 0.0f, y + t * mn, N);
    amd_mm_batch_next(&s, sa, sb, idx, &oa, &ob);
  }
  AMD_PROF_STAGE(t0, AMD_PROF_FWD_GEMM, nb * M * N * K);
  return 0;
}

static int matmul_backward(const amd_node *node, amd_ctx *ctx, const amd_tensor *const *in,
                           const amd_tensor *out, const amd_tensor *const *dout, amd_tensor *const *din,
                           amd_status *st) {
  (void)ctx;
  (void)out;
  const amd_tensor *A = in[0], *B = in[1], *dY = dout[0];
  amd_tensor *dA = din[0], *dB = din[1];
  if (!dY || (!dA && !dB)) return 0;
  if (amd_require_float(dY, "gradient dY", st)) return -1;
  amd_mm_shape s;
  if (amd_mm_shapes(A, B, &s, st)) return -1;
  const float *a = A->data, *b = B->data, *dy = dY->data;
  float *da = dA ? dA->data : NULL, *db = dB ? dB->data : NULL;
  const int64_t M = s.M, N = s.N, K = s.K, mk = M * K, kn = K * N, mn = M * N;
  const int64_t nb = amd_tensor_numel(&s.batch);
  const int64_t nb_b = amd_tensor_numel(&s.batch_b);
  if (nb_b == 1 && amd_tensor_numel(&s.batch_a) == nb) { /* forward's one tall GEMM */
    double t0 = AMD_PROF_T0;
    if (da) amd_gemm(node->bwd_mult, 0, 1, nb * M, K, N, 1.0f, dy, N, b, N, 1.0f, da, K);
    if (da) AMD_PROF_STAGE(t0, AMD_PROF_BWD_DATA_GEMM, nb * M * N * K);
    t0 = AMD_PROF_T0;
    if (db) amd_gemm(node->bwd_mult, 1, 0, K, N, nb * M, 1.0f, a, K, dy, N, 1.0f, db, N);
    if (db) AMD_PROF_STAGE(t0, AMD_PROF_BWD_WEIGHT_GEMM, nb * M * N * K);
    return 0;
  }
  int64_t sa[AMD_MAX_RANK], sb[AMD_MAX_RANK], idx[AMD_MAX_RANK] = {0};
  amd_broadcast_strides(&s.batch_a, &s.batch, sa);
  amd_broadcast_strides(&s.batch_b, &s.batch, sb);
  int64_t oa = 0, ob = 0;
  for (int64_t t = 0; t < nb; t++) {
    const float *dyt = dy + t * mn;
    double t0 = AMD_PROF_T0;
    if (da) { /* dA [M,K] += dY [M,N] B^T [N,K] */
      amd_gemm(node->bwd_mult, 0, 1, M, K, N, 1.0f, dyt, N, b + ob * kn, N, 1.0f, da + oa * mk, K);
      AMD_PROF_STAGE(t0, AMD_PROF_BWD_DATA_GEMM, M * N * K);
      t0 = AMD_PROF_T0;
    }
    if (db) { /* dB [K,N] += A^T [K,M] dY [M,N] */
      amd_gemm(node->bwd_mult, 1, 0, K, N, M, 1.0f, a + oa * mk, K, dyt, N, 1.0f, db + ob * kn, N);
      AMD_PROF_STAGE(t0, AMD_PROF_BWD_WEIGHT_GEMM, M * N * K);
    }
    amd_mm_batch_next(&s, sa, sb, idx, &oa, &ob);
  }
  return 0;
}

const amd_op amd_op_MatMul = {
    .name = "MatMul",
    .idx = AMD_OP_IDX_MatMul,
    .since = {1, 9, 13},
    .infer = matmul_infer,
    .forward = matmul_forward,
    .backward = matmul_backward,
    .is_gemm = 1,
    .bwd_unread_out = 1,
};

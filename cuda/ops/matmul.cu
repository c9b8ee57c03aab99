/* CUDA kernels of Gemm and MatMul (src/ops/matmul.c). */
#include "ops_internal.h"

/* ================================================================ Gemm */

/* y[i][j] = c[i*rs + j*cs] */
__global__ void k_bcast2(int64_t M, int64_t N, const float *c, int64_t rs, int64_t cs, float *y) {
  AMD_CU_LOOP(i, M * N) y[i] = c[(i / N) * rs + (i % N) * cs];
}

/* dC += beta * dY where C has Y's shape (one thread per element), or (a
 * scalar C) dC += beta * the sum of dY; a bias row or column takes
 * col_sum_into / row_sum_into */
__global__ void k_gemm_dc(int64_t M, int64_t N, int64_t rs, float beta, const float *dy, float *dc) {
  if (rs) {
    AMD_CU_LOOP(e, M * N) dc[(e / N) * rs + e % N] += beta * dy[e];
    return;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    double sum = 0;
    for (int64_t i = 0; i < M * N; i++) sum += dy[i];
    dc[0] += beta * (float)sum;
  }
}

int gemm_forward(FWD_ARGS) {
  (void)ctx;
  const amd_gemm_attrs *a = (const amd_gemm_attrs *)n->attrs;
  const amd_tensor *A = in[0], *B = in[1], *C = n->n_in > 2 ? in[2] : NULL;
  int64_t M = out[0].dims[0], N = out[0].dims[1], K = a->trans_a ? A->dims[0] : A->dims[1];
  float beta = 0;
  if (C && a->beta != 0 && M * N > 0) {
    int64_t rs = C->rank == 2 && C->dims[0] != 1 ? C->dims[1] : 0;
    int64_t cs = C->rank >= 1 && C->dims[C->rank - 1] != 1 ? 1 : 0;
    k_bcast2<<<amd_cu_blocks(M * N), 256, 0, amd_cu.stream>>>(M, N, F(C), rs, cs, F(&out[0]));
    AMD_CUDA_CHECK_LAUNCH("k_bcast2", st);
    beta = a->beta;
  }
  double t0 = amd_cu_prof_t0();
  if (amd_cuda_gemm(amd_cu.gemm, n->mult, a->trans_a, a->trans_b, M, N, K, a->alpha, F(A), A->dims[1], 0,
                    F(B), B->dims[1], 0, beta, F(&out[0]), N, 0, 1, st))
    return -1;
  amd_cu_prof_stage(t0, AMD_PROF_FWD_GEMM, (double)M * (double)N * (double)K);
  return 0;
}

int gemm_backward(BWD_ARGS) {
  (void)ctx;
  const amd_gemm_attrs *a = (const amd_gemm_attrs *)n->attrs;
  const amd_tensor *A = in[0], *B = in[1], *C = n->n_in > 2 ? in[2] : NULL, *dY = dout[0];
  amd_tensor *dA = din[0], *dB = din[1], *dC = C ? din[2] : NULL;
  if (!dY) return 0;
  const int64_t M = out[0].dims[0], N = out[0].dims[1], K = a->trans_a ? A->dims[0] : A->dims[1];
  const int64_t lda = A->dims[1], ldb = B->dims[1];
  const amd_mult *bm = n->bwd_mult;
  amd_cuda_gemm_ctx *gc = amd_cu.gemm;
  const double macs = (double)M * (double)N * (double)K;
  double t0 = amd_cu_prof_t0();
  if (dA) {
    int rc = !a->trans_a ? amd_cuda_gemm(gc, bm, 0, !a->trans_b, M, K, N, a->alpha, F(dY), N, 0, F(B), ldb, 0,
                                         1.0f, F(dA), K, 0, 1, st)
                         : amd_cuda_gemm(gc, bm, a->trans_b, 1, K, M, N, a->alpha, F(B), ldb, 0, F(dY), N, 0,
                                         1.0f, F(dA), M, 0, 1, st);
    if (rc) return -1;
    amd_cu_prof_stage(t0, AMD_PROF_BWD_DATA_GEMM, macs);
    t0 = amd_cu_prof_t0();
  }
  if (dB) {
    int rc = !a->trans_b ? amd_cuda_gemm(gc, bm, !a->trans_a, 0, K, N, M, a->alpha, F(A), lda, 0, F(dY), N, 0,
                                         1.0f, F(dB), N, 0, 1, st)
                         : amd_cuda_gemm(gc, bm, 1, a->trans_a, N, K, M, a->alpha, F(dY), N, 0, F(A), lda, 0,
                                         1.0f, F(dB), K, 0, 1, st);
    if (rc) return -1;
    amd_cu_prof_stage(t0, AMD_PROF_BWD_WEIGHT_GEMM, macs);
  }
  if (dC && a->beta != 0 && M * N > 0) {
    int64_t rs = C->rank == 2 && C->dims[0] != 1 ? C->dims[1] : 0;
    int64_t cs = C->rank >= 1 && C->dims[C->rank - 1] != 1 ? 1 : 0;
    if (!rs && cs) return col_sum_into(F(dY), M, N, a->beta, F(dC), st); /* a bias [N] */
    if (rs && !cs) return row_sum_into(F(dY), M, N, a->beta, F(dC), st); /* a column [M, 1] */
    k_gemm_dc<<<rs ? amd_cu_blocks(M * N) : 1, 256, 0, amd_cu.stream>>>(M, N, rs, a->beta, F(dY), F(dC));
    AMD_CUDA_CHECK_LAUNCH("k_gemm_dc", st);
  }
  return 0;
}

/* ================================================================ MatMul */

/* Calls fn(t, oa, ob) for every batch entry t with the matrix offsets of A and B (the CPU's odometer). */
template <typename Fn> static int mm_each(const amd_mm_shape *s, Fn fn) {
  int64_t sa[AMD_MAX_RANK], sb[AMD_MAX_RANK], idx[AMD_MAX_RANK] = {0};
  amd_broadcast_strides(&s->batch_a, &s->batch, sa);
  amd_broadcast_strides(&s->batch_b, &s->batch, sb);
  int64_t oa = 0, ob = 0, nb = amd_tensor_numel(&s->batch);
  for (int64_t t = 0; t < nb; t++) {
    if (fn(t, oa, ob)) return -1;
    amd_mm_batch_next(s, sa, sb, idx, &oa, &ob);
  }
  return 0;
}

/* Each operand's batch is either the whole broadcast batch or one matrix
 * shared by every entry: then every GEMM of the batch is one strided batched
 * call (stride 0 for the shared one). */
static bool mm_uniform(int64_t nba, int64_t nbb, int64_t nb) {
  return (nba == nb || nba == 1) && (nbb == nb || nbb == 1);
}

int matmul_forward(FWD_ARGS) {
  (void)ctx;
  amd_mm_shape s;
  if (amd_mm_shapes(in[0], in[1], &s, st)) return -1;
  const float *a = F(in[0]), *b = F(in[1]);
  float *y = F(&out[0]);
  const int64_t M = s.M, N = s.N, K = s.K, nb = amd_tensor_numel(&s.batch);
  double t0 = amd_cu_prof_t0();
  int rc;
  const int64_t nba = amd_tensor_numel(&s.batch_a), nbb = amd_tensor_numel(&s.batch_b);
  if (nbb == 1 && nba == nb)
    rc =
        amd_cuda_gemm(amd_cu.gemm, n->mult, 0, 0, nb * M, N, K, 1.0f, a, K, 0, b, N, 0, 0.0f, y, N, 0, 1, st);
  else if (mm_uniform(nba, nbb, nb)) /* attention's Q K^T and P V: one strided batched GEMM */
    rc = amd_cuda_gemm(amd_cu.gemm, n->mult, 0, 0, M, N, K, 1.0f, a, K, nba == 1 ? 0 : M * K, b, N,
                       nbb == 1 ? 0 : K * N, 0.0f, y, N, M * N, nb, st);
  else
    rc = mm_each(&s, [&](int64_t t, int64_t oa, int64_t ob) {
      return amd_cuda_gemm(amd_cu.gemm, n->mult, 0, 0, M, N, K, 1.0f, a + oa * M * K, K, 0, b + ob * K * N, N,
                           0, 0.0f, y + t * M * N, N, 0, 1, st);
    });
  if (rc) return -1;
  amd_cu_prof_stage(t0, AMD_PROF_FWD_GEMM, (double)nb * (double)M * (double)N * (double)K);
  return 0;
}

int matmul_backward(BWD_ARGS) {
  (void)ctx, (void)out;
  const amd_tensor *dY = dout[0];
  float *da = F(din[0]), *db = F(din[1]);
  if (!dY || (!da && !db)) return 0;
  amd_mm_shape s;
  if (amd_mm_shapes(in[0], in[1], &s, st)) return -1;
  const float *a = F(in[0]), *b = F(in[1]), *dy = F(dY);
  const int64_t M = s.M, N = s.N, K = s.K, nb = amd_tensor_numel(&s.batch);
  const amd_mult *bm = n->bwd_mult;
  const double macs = (double)M * (double)N * (double)K;
  if (amd_tensor_numel(&s.batch_b) == 1 && amd_tensor_numel(&s.batch_a) == nb) {
    double t0 = amd_cu_prof_t0();
    if (da &&
        amd_cuda_gemm(amd_cu.gemm, bm, 0, 1, nb * M, K, N, 1.0f, dy, N, 0, b, N, 0, 1.0f, da, K, 0, 1, st))
      return -1;
    if (da) amd_cu_prof_stage(t0, AMD_PROF_BWD_DATA_GEMM, (double)nb * macs);
    t0 = amd_cu_prof_t0();
    if (db &&
        amd_cuda_gemm(amd_cu.gemm, bm, 1, 0, K, N, nb * M, 1.0f, a, K, 0, dy, N, 0, 1.0f, db, N, 0, 1, st))
      return -1;
    if (db) amd_cu_prof_stage(t0, AMD_PROF_BWD_WEIGHT_GEMM, (double)nb * macs);
    return 0;
  }
  const int64_t nba = amd_tensor_numel(&s.batch_a), nbb = amd_tensor_numel(&s.batch_b);
  if (mm_uniform(nba, nbb, nb) && nba == nb && nbb == nb) {
    /* every entry has its own A and B: dA_t = dY_t B_t^T and dB_t = A_t^T dY_t, batched */
    double t0 = amd_cu_prof_t0();
    if (da && amd_cuda_gemm(amd_cu.gemm, bm, 0, 1, M, K, N, 1.0f, dy, N, M * N, b, N, K * N, 1.0f, da, K, M * K,
                            nb, st))
      return -1;
    if (da) amd_cu_prof_stage(t0, AMD_PROF_BWD_DATA_GEMM, (double)nb * macs);
    t0 = amd_cu_prof_t0();
    if (db && amd_cuda_gemm(amd_cu.gemm, bm, 1, 0, K, N, M, 1.0f, a, K, M * K, dy, N, M * N, 1.0f, db, N, K * N,
                            nb, st))
      return -1;
    if (db) amd_cu_prof_stage(t0, AMD_PROF_BWD_WEIGHT_GEMM, (double)nb * macs);
    return 0;
  }
  return mm_each(&s, [&](int64_t t, int64_t oa, int64_t ob) {
    const float *dyt = dy + t * M * N;
    double t0 = amd_cu_prof_t0();
    if (da && amd_cuda_gemm(amd_cu.gemm, bm, 0, 1, M, K, N, 1.0f, dyt, N, 0, b + ob * K * N, N, 0, 1.0f,
                            da + oa * M * K, K, 0, 1, st))
      return -1;
    if (da) amd_cu_prof_stage(t0, AMD_PROF_BWD_DATA_GEMM, macs);
    t0 = amd_cu_prof_t0();
    if (db && amd_cuda_gemm(amd_cu.gemm, bm, 1, 0, K, N, M, 1.0f, a + oa * M * K, K, 0, dyt, N, 0, 1.0f,
                            db + ob * K * N, N, 0, 1, st))
      return -1;
    if (db) amd_cu_prof_stage(t0, AMD_PROF_BWD_WEIGHT_GEMM, macs);
    return 0;
  });
}

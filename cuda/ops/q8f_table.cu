/* CUDA kernels of the q8f ops' table-derived backward (--q8-grad table;
 * src/ops/q8_grad.h, docs/quantized.md "Table-derived gradients"): the
 * CPU's q8f_table_grad (src/ops/q8f.c) with the lookup sums of
 * cuda/q8_grad.h, the same bits. */
#include "q8f_internal.h"

/* dx[img][g0 * cg + ch][y][x] of the chunk's nb images (dx at its first) += dcol[(img * osz + o) * kdim + row]
 * for every output position o whose window reads it (row = ch * kh * kw + tap), in o order: the CPU's
 * col2im_t_add, which adds o after o (taps from the last: oy, then ox, ascending); padding dropped. */
__global__ void k_q8f_col2im_add(q8f_conv p, const float *dcol, float *dx) {
  const int64_t hw = p.h * p.w, total = p.nb * p.cg * hw;
  AMD_CU_LOOP(e, total) {
    const int64_t img = e / (p.cg * hw), ch = e / hw % p.cg, pos = e % hw, iy = pos / p.w, ix = pos % p.w;
    float *d = dx + (img * p.c + p.g0 * p.cg + ch) * hw + pos;
    const float *src = dcol + img * p.osz * p.kdim + ch * p.kh * p.kw;
    float v = *d;
    for (int64_t ki = p.kh - 1; ki >= 0; ki--) {
      const int64_t ty = iy + p.ph - ki * p.dh;
      if (ty < 0 || ty % p.sh != 0 || ty / p.sh >= p.oh) continue;
      for (int64_t kj = p.kw - 1; kj >= 0; kj--) {
        const int64_t tx = ix + p.pw - kj * p.dw;
        if (tx < 0 || tx % p.sw != 0 || tx / p.sw >= p.ow) continue;
        v = __fadd_rn(v, src[((ty / p.sh) * p.ow + tx / p.sw) * p.kdim + ki * p.kw + kj]);
      }
    }
    *d = v;
  }
}

/* ---- the table-derived backward (--q8-grad table): the CPU's q8f_table_grad (src/ops/q8f.c) with the
 * sums of amd_cuda_q8g_run (cuda/q8_grad.h, the same bits as amd_q8_grad_gemm). The codes are made again as
 * the forward made them (q8f_begin frozen: no calibration call counted). dx: x's full gradient before the
 * clipping (or NULL), dw: the weight's (or NULL); both added to. */

static amd_q8g_args q8g_args(int64_t M, int64_t N, int64_t K, const q8f_run &r) {
  amd_q8g_args a;
  memset(&a, 0, sizeof a);
  a.M = M, a.N = N, a.K = K;
  a.code_xor = r.x;
  a.ca_src = &r.e->dev->scale; /* the data's scale (the device state's) */
  a.cs = (const float *)r.ws.p;
  a.alpha = 1.0f;
  return a;
}

/* Conv: per group, the product colT x W_g^T with G = dY^T over passes of several of the CPU's chunks of
 * images (AMD_Q8G_CHUNK: each chunk's dW sum is scaled and added on its own, into a zeroed buffer that is
 * added to dW at the end; the chunks of a pass sum in parallel, m_chunk), the data gradient's columns of a
 * pass (under 2^26 floats) folded back (k_q8f_col2im_add). */
static int q8f_conv_table(const amd_node *n, const amd_tensor *x, const amd_tensor *w, const float *dy, float *dx,
                          float *dw, amd_status *st) {
  const amd_mult *m = n->mult;
  amd_conv_geom g;
  if (amd_conv_geometry((const amd_conv_attrs *)n->attrs, x, w, &g, st)) return -1;
  const int64_t kdim = g.cg * g.kvol, os = g.osize, mg = g.mg;
  q8f_run r;
  if (q8f_begin(n, x, w, g.m, g.m ? amd_tensor_numel(w) / g.m : 1, 1, kdim, 0, 1, 1, r, st)) return -1;
  if (os == 0 || g.m == 0 || g.n == 0 || kdim == 0) return 0;
  int64_t nbc = AMD_Q8G_CHUNK / (os * kdim);
  nbc = nbc < 1 ? 1 : nbc > g.n ? g.n : nbc;
  int64_t per = ((int64_t)1 << 26) / (nbc * os * kdim); /* chunks per pass */
  per = per < 1 ? 1 : per;
  const int64_t nbp = per * nbc < g.n ? per * nbc : g.n, chunks = (nbp + nbc - 1) / nbc;
  const int64_t rows = nbp * os, ld = round16(kdim), nx = amd_tensor_numel(x);
  amd_cuda_q8g_ctx *gc = q8_grad_ctx(st);
  scratch xq, col, sums, dcol, dwt, part;
  if (!gc || xq.get((size_t)nx, st) || col.get((size_t)(rows * ld), st) ||
      sums.get(sizeof(uint32_t) * (size_t)rows, st) ||
      (dx && dcol.get(sizeof(float) * (size_t)(rows * kdim), st)) ||
      (dw && dwt.get(sizeof(float) * (size_t)(g.m * kdim), st)) ||
      (dw && chunks > 1 && part.get(sizeof(float) * (size_t)(chunks * kdim * mg), st)))
    return -1;
  if (dw) AMD_CUDA_CHECK(cudaMemsetAsync(dwt.p, 0, sizeof(float) * (size_t)(g.m * kdim), amd_cu.stream), st);
  if (xquant(nx, nx, nx, F(x), r, (uint8_t *)xq.p, st)) return -1;
  for (int64_t gi = 0; gi < g.group; gi++)
    for (int64_t b0 = 0; b0 < g.n; b0 += nbp) {
      const int64_t nb = g.n - b0 < nbp ? g.n - b0 : nbp;
      q8f_conv p = {nb,       g.c,       g.cg,      gi,        g.in[0],     g.in[1],     g.k[0],
                    g.k[1],   g.out[0],  g.out[1],  g.stride[0], g.stride[1], g.dil[0], g.dil[1],
                    g.pad0[0], g.pad0[1], kdim,     os,        nb * os,     ld};
      const uint8_t *xs = (const uint8_t *)xq.p + b0 * g.c * g.isize;
      uint32_t *cs = (uint32_t *)sums.p;
      if (q8f_im2col(p, xs, nx, r, (uint8_t *)col.p, cs, st)) return -1;
      amd_q8g_args a = q8g_args(nb * os, mg, kdim, r);
      a.A = (const uint8_t *)col.p, a.a_rs = ld, a.a_cs = 1;
      a.B = (const uint8_t *)r.wq.p + gi * mg * r.ldw, a.b_rs = 1, a.b_cs = r.ldw;
      a.G = dy + (b0 * g.m + gi * mg) * os, a.g_rows = os, a.g_img = g.m * os, a.g_rs = 1, a.g_cs = os;
      a.cs = r.ws.f() + gi * mg;
      a.dA = dx ? dcol.f() : NULL, a.da_rs = kdim, a.da_store = 1;
      a.dB = dw ? dwt.f() + gi * mg * kdim : NULL, a.db_rs = 1, a.db_cs = kdim;
      a.m_chunk = nbc * os, a.dB_part = part.f();
      if (amd_cuda_q8g_run(gc, &a, m->q8_ea, m->q8_eb, st)) return -1;
      if (dx) {
        k_q8f_col2im_add<<<amd_cu_blocks(nb * g.cg * g.isize), 256, 0, amd_cu.stream>>>(p, dcol.f(),
                                                                                       dx + b0 * g.c * g.isize);
        AMD_CUDA_CHECK_LAUNCH("k_q8f_col2im_add", st);
      }
    }
  if (dw && add_into(dw, dwt.f(), g.m * kdim, st)) return -1;
  return 0;
}

/* Gemm: A [M, K] against B's codes (TN: B[k][j] at row j), cb = alpha * w_scale, ca = alpha * x_scale; with
 * transB the weight's gradient goes through a zeroed buffer on the CPU (db_via_zero). */
static int q8f_gemm_table(const amd_node *n, const amd_tensor *A, const amd_tensor *B, const float *dy, float *dx,
                          float *dw, amd_status *st) {
  const amd_gemm_attrs *ga = (const amd_gemm_attrs *)n->attrs;
  const int tb = ga->trans_b;
  const int64_t M = A->dims[0], K = A->dims[1], N = tb ? B->dims[0] : B->dims[1];
  q8f_run r;
  if (q8f_begin(n, A, B, N, tb ? K : 1, tb, K, N, 0, 1, r, st)) return -1;
  if (M == 0 || N == 0 || K == 0) return 0;
  const int64_t ldx = round16(K);
  amd_cuda_q8g_ctx *gc = q8_grad_ctx(st);
  scratch xq;
  if (!gc || xq.get((size_t)(M * ldx), st) || xquant(M * K, K, ldx, F(A), r, (uint8_t *)xq.p, st)) return -1;
  amd_q8g_args a = q8g_args(M, N, K, r);
  a.A = (const uint8_t *)xq.p, a.a_rs = ldx, a.a_cs = 1;
  a.B = (const uint8_t *)r.wq.p, a.b_rs = 1, a.b_cs = r.ldw;
  a.G = dy, a.g_rows = M, a.g_img = 0, a.g_rs = N, a.g_cs = 1;
  a.alpha = ga->alpha;
  a.dA = dx, a.da_rs = K;
  a.dB = dw, a.db_rs = tb ? 1 : N, a.db_cs = tb ? K : 1, a.db_via_zero = tb;
  return amd_cuda_q8g_run(gc, &a, n->mult->q8_ea, n->mult->q8_eb, st);
}

/* MatMul: one product per batch entry (numpy's broadcasting, the CPU's odometer), in the CPU's order (the
 * gradients of a broadcast operand add the entries one after another). */
static int q8f_matmul_table(const amd_node *n, const amd_tensor *x, const amd_tensor *w, const float *dy, float *dx,
                            float *dw, amd_status *st) {
  amd_mm_shape s;
  if (amd_mm_shapes(x, w, &s, st)) return -1;
  const int64_t M = s.M, N = s.N, K = s.K, nb = amd_tensor_numel(&s.batch);
  const int64_t nch = w->rank >= 2 ? w->dims[w->rank - 1] : 1;
  q8f_run r;
  if (q8f_begin(n, x, w, nch, 1, 0, K, N, 0, 1, r, st)) return -1;
  if (M == 0 || N == 0 || K == 0 || nb == 0) return 0;
  const int64_t nx = amd_tensor_numel(x), ldx = round16(K);
  amd_cuda_q8g_ctx *gc = q8_grad_ctx(st);
  scratch xq;
  if (!gc || xq.get((size_t)(nx / K * ldx), st) || xquant(nx, K, ldx, F(x), r, (uint8_t *)xq.p, st)) return -1;
  int64_t sa[AMD_MAX_RANK], sb[AMD_MAX_RANK], idx[AMD_MAX_RANK] = {0};
  amd_broadcast_strides(&s.batch_a, &s.batch, sa);
  amd_broadcast_strides(&s.batch_b, &s.batch, sb);
  int64_t oa = 0, ob = 0;
  for (int64_t t = 0; t < nb; t++) {
    amd_q8g_args a = q8g_args(M, N, K, r);
    a.A = (const uint8_t *)xq.p + oa * M * ldx, a.a_rs = ldx, a.a_cs = 1;
    a.B = (const uint8_t *)r.wq.p + ob * N * r.ldw, a.b_rs = 1, a.b_cs = r.ldw;
    a.G = dy + t * M * N, a.g_rows = M, a.g_img = 0, a.g_rs = N, a.g_cs = 1;
    a.dA = dx ? dx + oa * M * K : NULL, a.da_rs = K;
    a.dB = dw ? dw + ob * K * N : NULL, a.db_rs = N, a.db_cs = 1;
    if (amd_cuda_q8g_run(gc, &a, n->mult->q8_ea, n->mult->q8_eb, st)) return -1;
    amd_mm_batch_next(&s, sa, sb, idx, &oa, &ob);
  }
  return 0;
}


/* The table's terms (nothing in the STE mode), as the CPU's q8f_table_grad (q8f_internal.h). */
int q8f_table_backward(int kind, const amd_node *n, const amd_tensor *const *in, const amd_tensor *const *dout,
                       float *dx, amd_tensor *const *din, amd_status *st) {
  if (amd_q8_float_grad(n) != AMD_Q8_GRAD_TABLE || !dout[0]) return 0;
  float *dw = n->n_in > 1 && din[1] && din[1]->dtype == AMD_FLOAT ? F(din[1]) : NULL;
  if (!dx && !dw) return 0;
  const amd_mult *m = n->mult;
  if (!m || !m->q8 || !m->q8_ea || !m->q8_eb)
    return amd_fail(st, "the table-derived backward (--q8-grad table) needs the node's 8-bit table");
  if (dout[0]->dtype != AMD_FLOAT) return amd_fail(st, "the output gradient must be float");
  const amd_tensor *x = in[0], *w = n->n_in > 1 ? in[1] : NULL;
  if (!x || !w || w->rank < 1) return amd_fail(st, "the table-derived backward needs the data and the weight");
  const float *dy = F(dout[0]);
  return kind == Q8F_CONV   ? q8f_conv_table(n, x, w, dy, dx, dw, st)
         : kind == Q8F_GEMM ? q8f_gemm_table(n, x, w, dy, dx, dw, st)
                            : q8f_matmul_table(n, x, w, dy, dx, dw, st);
}

/* Every multiplier mode's product on the GPU against
 * tests/mult/am_vectors.tsv, bit for bit (any NaN equals any NaN):
 * 1. directly: a kernel calls the product functions of src/mult/products.h
 *    (the CPU's code, compiled for the device) on every row;
 * 2. through amd_cuda_gemm: a batch of 1 x 1 x 1 GEMMs (one per row, alpha 1,
 *    beta 0), which runs the mode kernels' fast path or exact path per row;
 *    the expected value is 0 + p (the sum starts at +0), as on the CPU.
 * lut: runs with the MBM_7 and MIT_7 tables of amd_mult_make_table against
 * the am16 and mit16 columns (section 5: the same products on every input),
 * and with a random 5-bit table against the CPU's amd_mult_product.
 *
 * usage: test_cuda_products AM_VECTORS_TSV */
#include <stdio.h>
#include <string.h>

#include "gpu_common.h"

extern "C" {
#include "../../src/mult/products.h"
#include "../mult/vectors_io.h"
}
#include "../../cuda/mode_gemm.h"

/* The product of mode on bit patterns, from products.h. */
__global__ void prod_kernel(int mode, const uint32_t *a, const uint32_t *b, uint32_t *out, int n,
                            const uint8_t *lut, int m) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  uint32_t x = a[i], y = b[i], r;
  /* every mode's BITS from src/mult/mode_list.h (acc32's is its IEEE multiply) */
#define MODE_BITS(ID, NAME, PROD, BITS, ARGS, KIND, M, TABLE7, SUMMARY)                                              \
  case ID:                                                                                                \
    r = AMD_MODE_CALL_##ARGS(BITS, x, y, lut, m);                                                         \
    break;
  switch (mode) {
    AMD_MODE_LIST(MODE_BITS)
  default:
    r = 0;
    break;
  }
#undef MODE_BITS
  out[i] = r;
}

static int failed;

/* Compares n results; zero_sign: +0 and -0 count as equal. */
static void compare(const char *what, const uint32_t *a, const uint32_t *b, const uint32_t *want,
                    const uint32_t *got, int n, int zero_sign) {
  int ok = 0, shown = 0;
  for (int i = 0; i < n; i++) {
    int same = vec_same(want[i], got[i]);
    if (!same && zero_sign && ((want[i] | got[i]) & 0x7FFFFFFFu) == 0) same = 1;
    if (same)
      ok++;
    else if (shown++ < 5)
      printf("  %s row %d: a=%08X b=%08X want %08X got %08X\n", what, i + 1, a[i], b[i], want[i], got[i]);
  }
  printf("%-28s %5d / %d match%s\n", what, ok, n, ok == n ? "" : "  FAIL");
  if (ok != n) failed = 1;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s AM_VECTORS_TSV\n", argv[0]);
    return 1;
  }
  vec_table vt;
  if (vec_read(argv[1], &vt)) return 1; /* a missing file fails, never skips */
  gpu_require_device();
  const int n = vt.nrows;
  printf("%s: %d rows, %d modes\n", argv[1], n, vt.ncols - 2);

  uint32_t *ha = (uint32_t *)malloc(n * 4 * 4), *hb = ha + n, *want = ha + 2 * n, *got = ha + 3 * n;
  for (int r = 0; r < n; r++) {
    ha[r] = vt.rows[r][0];
    hb[r] = vt.rows[r][1];
  }
  uint32_t *da, *db, *dout;
  uint8_t *dlut;
  GPU_CHECK(cudaMalloc(&da, n * 4));
  GPU_CHECK(cudaMalloc(&db, n * 4));
  GPU_CHECK(cudaMalloc(&dout, n * 4));
  GPU_CHECK(cudaMalloc(&dlut, AMD_MULT_TABLE7_SIZE));
  GPU_CHECK(cudaMemcpy(da, ha, n * 4, cudaMemcpyHostToDevice));
  GPU_CHECK(cudaMemcpy(db, hb, n * 4, cudaMemcpyHostToDevice));

  amd_cuda_gemm_ctx *ctx;
  amd_status st = {{0}};
  if (amd_cuda_gemm_create(&ctx, 0, &st)) {
    printf("FAIL: amd_cuda_gemm_create: %s\n", st.msg);
    return 1;
  }

  /* One mode (column c of the table, or a lut: mult against column c, or
   * against the CPU when c < 0). */
  auto run = [&](const char *name, const amd_mult *mult, int c) {
    char what[96];
    if (c >= 0)
      for (int r = 0; r < n; r++) want[r] = vt.rows[r][c];
    else
      for (int r = 0; r < n; r++) want[r] = vec_u(amd_mult_product(mult, vec_f(ha[r]), vec_f(hb[r])));
    int m = 0;
    if (mult->mode == AMD_MODE_LUT) {
      m = mult->lut_bits;
      GPU_CHECK(cudaMemcpy(dlut, mult->lut, (size_t)1 << (2 * m), cudaMemcpyHostToDevice));
    }
    prod_kernel<<<(n + 127) / 128, 128>>>(mult->mode, da, db, dout, n, dlut, m);
    GPU_CHECK(cudaGetLastError());
    GPU_CHECK(cudaMemcpy(got, dout, n * 4, cudaMemcpyDeviceToHost));
    snprintf(what, sizeof what, "%s product", name);
    compare(what, ha, hb, want, got, n, 0);

    /* 1 x 1 x 1 GEMMs: C_r = 1 * (0 + a_r * b_r) */
    for (int r = 0; r < n; r++) want[r] = vec_u(1.0f * (0.0f + vec_f(want[r])));
    GPU_CHECK(cudaMemset(dout, 0xFF, n * 4)); /* NaN: beta == 0 must not read C */
    if (amd_cuda_gemm(ctx, mult, 0, 0, 1, 1, 1, 1.0f, (const float *)da, 1, 1, (const float *)db, 1, 1, 0.0f,
                      (float *)dout, 1, 1, n, &st)) {
      printf("FAIL: amd_cuda_gemm (%s): %s\n", name, st.msg);
      failed = 1;
      return;
    }
    GPU_CHECK(cudaDeviceSynchronize());
    GPU_CHECK(cudaMemcpy(got, dout, n * 4, cudaMemcpyDeviceToHost));
    snprintf(what, sizeof what, "%s gemm K=1", name);
    compare(what, ha, hb, want, got, n, mult->mode == AMD_MODE_ACC32);
  };

  int seen[AMD_MODE_COUNT] = {0};
  for (int c = 2; c < vt.ncols; c++) {
    amd_mult m;
    if (amd_mult_parse(vt.names[c], &m, &st)) {
      printf("FAIL: column '%s': %s\n", vt.names[c], st.msg);
      failed = 1;
      continue;
    }
    seen[m.mode] = 1;
    run(vt.names[c], &m, c);
  }
  for (int i = 0; i < AMD_MODE_COUNT; i++)
    if (i != AMD_MODE_LUT && !seen[i]) {
      printf("FAIL: no column for mode %s\n", amd_mode_name((amd_mode)i));
      failed = 1;
    }

  /* lut: with the 7-bit tables of am16 and mit16 */
  static uint8_t tab[AMD_MULT_TABLE7_SIZE];
  const amd_mode tmodes[2] = {AMD_MODE_AM16, AMD_MODE_MIT16};
  for (int t = 0; t < 2; t++) {
    int col = -1;
    for (int c = 2; c < vt.ncols; c++)
      if (!strcmp(vt.names[c], amd_mode_name(tmodes[t]))) col = c;
    if (col < 0 || amd_mult_make_table(tmodes[t], tab, &st)) {
      printf("FAIL: no column or table for %s\n", amd_mode_name(tmodes[t]));
      failed = 1;
      continue;
    }
    amd_mult m;
    memset(&m, 0, sizeof m);
    m.mode = AMD_MODE_LUT;
    m.lut_bits = 7;
    m.lut = tab;
    char name[64];
    snprintf(name, sizeof name, "lut:%s-table", amd_mode_name(tmodes[t]));
    run(name, &m, col);
  }
  /* lut: with a random 5-bit table, against the CPU */
  static uint8_t tab5[1024];
  for (int i = 0; i < 1024; i++) tab5[i] = (uint8_t)(gpu_urand() & 0x9F); /* carry bit and 5 fraction bits */
  amd_mult m5;
  memset(&m5, 0, sizeof m5);
  m5.mode = AMD_MODE_LUT;
  m5.lut_bits = 5;
  m5.lut = tab5;
  run("lut:random-5bit", &m5, -1);

  amd_cuda_gemm_destroy(ctx);
  free(ha);
  free(vt.rows);
  printf(failed ? "FAILED\n" : "PASSED\n");
  return failed;
}

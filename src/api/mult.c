/* Multipliers alone (include/amdnn.h): the modes, element-wise products, the
 * mode GEMM on host memory and on CUDA device memory on a caller's stream,
 * and the multiplier tables (write, read, describe). The products are the
 * functions of src/mult/products.h, the GEMMs src/gemm/gemm.c and
 * cuda/mode_gemm.cu: the code Conv, Gemm and MatMul run. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/omp.h"
#include "../gemm/gemm.h"
#include "../mult/mult.h"
#include "../mult/q8.h"
#include "api.h"

int amdnn_mode_count(void) { return AMD_MODE_COUNT; }

const char *amdnn_mode_name(int i) { return amd_mode_name((amd_mode)i); }

const char *amdnn_mode_summary(int i) { return amd_mode_summary((amd_mode)i); }

const char *amdnn_mode_choices(void) { return amd_mult_choices(); }

amdnn_status *amdnn_multiplier_open(const char *mode, amdnn_multiplier **out) {
  if (!out) return api_error(AMDNN_ERR_ARGUMENT, "amdnn_multiplier_open: out is NULL");
  *out = NULL;
  amd_status st = {{0}};
  if (amd_mult_check_name(mode, &st)) return api_from(&st, AMDNN_ERR_ARGUMENT);
  api_init();
  amdnn_multiplier *m = calloc(1, sizeof *m);
  if (!m) return api_error(AMDNN_ERR_NO_MEMORY, "out of memory");
  if (amd_mult_parse(mode, &m->m, &st)) {
    free(m);
    return api_from(&st, AMDNN_ERR_FAILED); /* a table file that does not read */
  }
  *out = m;
  return NULL;
}

void amdnn_multiplier_close(amdnn_multiplier *m) {
  if (!m) return;
  amd_mult_free(&m->m);
  free(m);
}

const char *amdnn_multiplier_name(const amdnn_multiplier *m) { return m ? m->m.name : NULL; }

int amdnn_multiplier_codes(const amdnn_multiplier *m) { return m ? m->m.q8 : 0; }

amdnn_status *amdnn_multiply(const amdnn_multiplier *m, const float *a, const float *b, float *out, size_t n) {
  if (!m || (n && (!a || !b || !out))) return api_error(AMDNN_ERR_ARGUMENT, "amdnn_multiply: a NULL argument");
  if (m->m.q8)
    return api_error(AMDNN_ERR_ARGUMENT, "%s is an 8-bit table: its operands are codes (amdnn_multiply_codes)",
                     m->m.name);
  for (size_t i = 0; i < n; i++) out[i] = amd_mult_product(&m->m, a[i], b[i]);
  return NULL;
}

amdnn_status *amdnn_multiply_codes(const amdnn_multiplier *m, const void *a, const void *b, int32_t *out,
                                   size_t n) {
  if (!m || (n && (!a || !b || !out)))
    return api_error(AMDNN_ERR_ARGUMENT, "amdnn_multiply_codes: a NULL argument");
  if (!m->m.q8) return api_error(AMDNN_ERR_ARGUMENT, "%s is not an 8-bit table (amdnn_multiply)", m->m.name);
  const uint8_t *ca = a, *cb = b; /* int8 codes index the table by their byte */
  for (size_t i = 0; i < n; i++) out[i] = m->m.q8_table[ca[i] * 256 + cb[i]];
  return NULL;
}

/* The checks the GEMMs share. */
amdnn_status *api_check_gemm(const char *fn, const amdnn_multiplier *m, int trans_a, int trans_b, int64_t M,
                             int64_t N, int64_t K, int64_t lda, int64_t ldb, int64_t ldc) {
  if (m && m->m.q8)
    return api_error(AMDNN_ERR_ARGUMENT, "%s: %s is an 8-bit table, whose GEMM is on integer codes", fn, m->m.name);
  if (M < 0 || N < 0 || K < 0) return api_error(AMDNN_ERR_ARGUMENT, "%s: negative size", fn);
  const int64_t need_a = trans_a ? M : K, need_b = trans_b ? K : N;
  if (lda < (need_a > 1 ? need_a : 1) || ldb < (need_b > 1 ? need_b : 1) || ldc < (N > 1 ? N : 1))
    return api_error(AMDNN_ERR_ARGUMENT, "%s: a leading dimension is smaller than its rows (lda %lld, ldb %lld, "
                     "ldc %lld for M %lld, N %lld, K %lld)", fn, (long long)lda, (long long)ldb, (long long)ldc,
                     (long long)M, (long long)N, (long long)K);
  return NULL;
}

amdnn_status *amdnn_gemm(const amdnn_multiplier *m, int trans_a, int trans_b, int64_t M, int64_t N, int64_t K,
                         float alpha, const float *A, int64_t lda, const float *B, int64_t ldb, float beta, float *C,
                         int64_t ldc) {
  amdnn_status *bad = api_check_gemm("amdnn_gemm", m, trans_a, trans_b, M, N, K, lda, ldb, ldc);
  if (bad) return bad;
  if (M && N && (!C || (K && (!A || !B)))) return api_error(AMDNN_ERR_ARGUMENT, "amdnn_gemm: a NULL matrix");
  amd_gemm(m ? &m->m : NULL, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  return NULL;
}

amdnn_status *amdnn_gemm_batched(const amdnn_multiplier *m, int trans_a, int trans_b, int64_t M, int64_t N,
                                 int64_t K, float alpha, const float *A, int64_t lda, int64_t stride_a,
                                 const float *B, int64_t ldb, int64_t stride_b, float beta, float *C, int64_t ldc,
                                 int64_t stride_c, int64_t batch) {
  amdnn_status *bad = api_check_gemm("amdnn_gemm_batched", m, trans_a, trans_b, M, N, K, lda, ldb, ldc);
  if (bad) return bad;
  if (batch < 0 || stride_a < 0 || stride_b < 0 || stride_c < 0)
    return api_error(AMDNN_ERR_ARGUMENT, "amdnn_gemm_batched: negative batch or stride");
  if (batch == 0 || M == 0 || N == 0) return NULL;
  if (!C || (K && (!A || !B))) return api_error(AMDNN_ERR_ARGUMENT, "amdnn_gemm_batched: a NULL matrix");
  const amd_mult *mult = m ? &m->m : NULL;
  if (stride_c == 0) { /* one C: the entries summed in their order */
    for (int64_t b = 0; b < batch; b++)
      amd_gemm(mult, trans_a, trans_b, M, N, K, alpha, A + b * stride_a, lda, B + b * stride_b, ldb,
               b ? 1.0f : beta, C, ldc);
    return NULL;
  }
  /* the entries to the threads (each GEMM single-threaded inside) when there
   * are enough of them and each is small; the bits are the same either way */
  const int par = batch >= 2 * amd_max_threads() && (double)M * (double)N * (double)K < 64.0 * 1024 * 1024;
  (void)par; /* unused without OpenMP */
  AMD_PRAGMA(omp parallel for schedule(dynamic, 1) if (par))
  for (int64_t b = 0; b < batch; b++)
    amd_gemm(mult, trans_a, trans_b, M, N, K, alpha, A + b * stride_a, lda, B + b * stride_b, ldb, beta,
             C + b * stride_c, ldc);
  return NULL;
}

#ifdef AMD_HAVE_CUDA
/* One GEMM context per (device, stream), made on first use and kept for the
 * process: a cuBLAS handle bound to the stream, the mode tables, workspaces. */
typedef struct stream_ctx {
  int device;
  cudaStream_t stream;
  amd_cuda_gemm_ctx *ctx;
} stream_ctx;

static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static stream_ctx *ctxs;
static int n_ctxs, cap_ctxs;

static int ctx_for(cudaStream_t stream, amd_cuda_gemm_ctx **out, amd_status *st) {
  int device;
  if (cudaGetDevice(&device) != cudaSuccess) return amd_fail(st, "no CUDA device is usable");
  pthread_mutex_lock(&ctx_lock);
  int rc = 0;
  *out = NULL;
  for (int i = 0; i < n_ctxs && !*out; i++)
    if (ctxs[i].device == device && ctxs[i].stream == stream) *out = ctxs[i].ctx;
  if (!*out) {
    if (n_ctxs == cap_ctxs) {
      int cap = cap_ctxs ? 2 * cap_ctxs : 8;
      stream_ctx *grown = realloc(ctxs, (size_t)cap * sizeof *grown);
      if (!grown) rc = amd_fail(st, "out of memory");
      else ctxs = grown, cap_ctxs = cap;
    }
    if (rc == 0) rc = amd_cuda_gemm_create(out, stream, st);
    if (rc == 0) ctxs[n_ctxs++] = (stream_ctx){device, stream, *out};
  }
  pthread_mutex_unlock(&ctx_lock);
  return rc;
}

int api_cuda_gemm_ctx(void *stream, amdnn_gemm_tier tier, amd_cuda_gemm_ctx **ctx, amd_status *st) {
  if (ctx_for((cudaStream_t)stream, ctx, st)) return -1;
  amd_cuda_gemm_set_tier(*ctx, tier == AMDNN_GEMM_EXACT ? AMD_GEMM_TIER_EXACT : AMD_GEMM_TIER_FAST);
  return 0;
}
#endif

amdnn_status *amdnn_gemm_cuda(const amdnn_multiplier *m, amdnn_gemm_tier tier, int trans_a, int trans_b, int64_t M,
                              int64_t N, int64_t K, float alpha, const float *A, int64_t lda, int64_t stride_a,
                              const float *B, int64_t ldb, int64_t stride_b, float beta, float *C, int64_t ldc,
                              int64_t stride_c, int64_t batch, void *cuda_stream) {
  amdnn_status *bad = api_check_gemm("amdnn_gemm_cuda", m, trans_a, trans_b, M, N, K, lda, ldb, ldc);
  if (bad) return bad;
  if (batch < 0 || stride_a < 0 || stride_b < 0 || stride_c < 0)
    return api_error(AMDNN_ERR_ARGUMENT, "amdnn_gemm_cuda: negative batch or stride");
#ifdef AMD_HAVE_CUDA
  amd_status st = {{0}};
  amd_cuda_gemm_ctx *ctx;
  if (api_cuda_gemm_ctx(cuda_stream, tier, &ctx, &st)) return api_from(&st, AMDNN_ERR_FAILED);
  if (amd_cuda_gemm(ctx, m ? &m->m : NULL, trans_a, trans_b, M, N, K, alpha, A, lda, stride_a, B, ldb, stride_b, beta,
                    C, ldc, stride_c, batch, &st))
    return api_from(&st, AMDNN_ERR_FAILED);
  return NULL;
#else
  (void)tier, (void)alpha, (void)A, (void)stride_a, (void)B, (void)stride_b, (void)beta, (void)C, (void)stride_c;
  (void)cuda_stream;
  return api_error(AMDNN_ERR_FAILED, "amdnn_gemm_cuda: this build has no CUDA backend (rebuild where nvcc is found)");
#endif
}

/* ---------------------------------------------------------------- tables */

/* Writes data to path through a temporary file beside it, fsync and rename(). */
static int write_atomic(const char *path, const uint8_t *data, size_t n, amd_status *st) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
    return amd_fail(st, "output path too long: %s", path);
  FILE *f = fopen(tmp, "wbx");
  if (!f) return amd_fail(st, "cannot create %s: %s", tmp, strerror(errno));
  int ok = fwrite(data, 1, n, f) == n && fflush(f) == 0 && fsync(fileno(f)) == 0;
  int err = errno;
  if (fclose(f) != 0 && ok) ok = 0, err = errno;
  if (!ok) {
    remove(tmp);
    return amd_fail(st, "cannot write %s: %s", tmp, strerror(err));
  }
  if (rename(tmp, path) != 0) {
    err = errno;
    remove(tmp);
    return amd_fail(st, "cannot rename %s to %s: %s", tmp, path, strerror(err));
  }
  return 0;
}

/* An 8-bit table in format "amdq8" (NULL) or "bin", atomically. */
static amdnn_status *write_q8(const int32_t *table, int is_signed, const char *path, const char *format) {
  const int bin = format && !strcmp(format, "bin");
  if (format && !bin && strcmp(format, "amdq8"))
    return api_error(AMDNN_ERR_ARGUMENT, "format '%s': amdq8 or bin", format);
  size_t n = bin ? AMD_Q8_BIN_BYTES : AMD_Q8_FILE_BYTES;
  uint8_t *data = malloc(n);
  if (!data) return api_error(AMDNN_ERR_NO_MEMORY, "out of memory");
  amd_status st = {{0}};
  amdnn_status *bad = NULL;
  if (bin && amd_q8_serialize_bin(is_signed, table, data, &st)) bad = api_from(&st, AMDNN_ERR_ARGUMENT);
  if (!bin) amd_q8_serialize(is_signed, table, data);
  if (!bad && write_atomic(path, data, n, &st)) bad = api_from(&st, AMDNN_ERR_FAILED);
  free(data);
  return bad;
}

amdnn_status *amdnn_table_write(const char *mode, const char *path, const char *format) {
  if (!mode || !path) return api_error(AMDNN_ERR_ARGUMENT, "amdnn_table_write: mode or path is NULL");
  amdnn_multiplier *m;
  amdnn_status *bad = amdnn_multiplier_open(mode, &m);
  if (bad) return bad;
  if (m->m.q8) {
    bad = write_q8(m->m.q8_table, m->m.q8 == 's', path, format);
  } else if (format) {
    bad = api_error(AMDNN_ERR_ARGUMENT, "format is for the 8-bit tables (q8u:..., q8s:...)");
  } else {
    static uint8_t table[AMD_MULT_TABLE7_SIZE];
    amd_status st = {{0}};
    if (amd_mult_make_table(m->m.mode, table, &st)) bad = api_from(&st, AMDNN_ERR_ARGUMENT);
    else if (write_atomic(path, table, sizeof table, &st)) bad = api_from(&st, AMDNN_ERR_FAILED);
  }
  amdnn_multiplier_close(m);
  return bad;
}

amdnn_status *amdnn_q8_table_write(const int32_t *table, int is_signed, const char *path, const char *format) {
  if (!table || !path) return api_error(AMDNN_ERR_ARGUMENT, "amdnn_q8_table_write: table or path is NULL");
  for (int i = 0; i < AMD_Q8_ENTRIES; i++)
    if (table[i] > AMD_Q8_MAX_ABS || table[i] < -AMD_Q8_MAX_ABS)
      return api_error(AMDNN_ERR_ARGUMENT, "entry [%d][%d] = %ld is outside +-%d", i / 256, i % 256, (long)table[i],
                       AMD_Q8_MAX_ABS);
  return write_q8(table, is_signed != 0, path, format);
}

amdnn_status *amdnn_q8_table_read(const char *path, int bin_signed, int32_t *table, int *is_signed) {
  if (!path || !table || !is_signed) return api_error(AMDNN_ERR_ARGUMENT, "amdnn_q8_table_read: a NULL argument");
  amd_status st = {{0}};
  int sgn = 0;
  if (amd_q8_probe(path, &sgn, &st)) return api_from(&st, AMDNN_ERR_FAILED);
  if (sgn < 0) sgn = bin_signed != 0; /* a .bin says nothing of its signedness */
  if (amd_q8_load(path, sgn, table, &st)) return api_from(&st, AMDNN_ERR_FAILED);
  *is_signed = sgn;
  return NULL;
}

/* Reads a whole file (up to max bytes; *size is the true size). */
static uint8_t *slurp(const char *path, size_t max, size_t *size, amd_status *st) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    amd_fail(st, "cannot open '%s': %s", path, strerror(errno));
    return NULL;
  }
  uint8_t *buf = malloc(max);
  size_t n = 0;
  for (;;) {
    uint8_t chunk[8192];
    size_t r = fread(chunk, 1, sizeof chunk, f);
    if (buf && r > 0 && n < max) memcpy(buf + n, chunk, max - n < r ? max - n : r);
    n += r;
    if (r < sizeof chunk) break;
  }
  fclose(f);
  if (!buf) amd_fail(st, "out of memory");
  *size = n;
  return buf;
}

/* An 8-bit table's part of the description. */
static amdnn_status *describe_q8(const char *path, int bin_signed, amdnn_table_info *out) {
  int32_t *table = malloc(sizeof(int32_t) * AMD_Q8_ENTRIES);
  if (!table) return api_error(AMDNN_ERR_NO_MEMORY, "out of memory");
  amd_status st = {{0}};
  int sgn = 0;
  amdnn_status *bad = NULL;
  if (amd_q8_probe(path, &sgn, &st)) bad = api_from(&st, AMDNN_ERR_FAILED);
  const int is_bin = sgn < 0;
  if (is_bin) sgn = bin_signed != 0;
  if (!bad && amd_q8_load(path, sgn, table, &st)) bad = api_from(&st, AMDNN_ERR_FAILED);
  if (!bad) {
    snprintf(out->format, sizeof out->format, "%s",
             is_bin ? "TFApprox .bin (65536 little-endian 16-bit entries)" : "AMDQ8TAB (65536 int32)");
    out->is_signed = sgn;
    amd_q8_stats e;
    amd_q8_error(sgn, table, &e);
    out->lo = out->hi = table[0];
    for (int i = 1; i < AMD_Q8_ENTRIES; i++) {
      if (table[i] < out->lo) out->lo = table[i];
      if (table[i] > out->hi) out->hi = table[i];
    }
    out->n_diff = e.n_diff, out->mean_abs_error = e.mae, out->mean_rel_error = e.mre, out->max_abs_error = e.max_ae;
    int64_t c[8][8];
    out->bilinear = amd_q8_bit_bilinear(table, c);
    for (int i = 0; out->bilinear && i < 8; i++)
      for (int j = 0; j < 8; j++) out->bit_weight[i][j] = (double)c[i][j] / (double)((int64_t)1 << (i + j));
  }
  free(table);
  return bad;
}

amdnn_status *amdnn_table_describe(const char *path, int bin_signed, amdnn_table_info *out) {
  if (!path || !out) return api_error(AMDNN_ERR_ARGUMENT, "amdnn_table_describe: path or out is NULL");
  memset(out, 0, sizeof *out);
  amd_status st = {{0}};
  size_t size = 0;
  uint8_t *buf = slurp(path, AMD_Q8_FILE_BYTES, &size, &st);
  if (!buf) return api_from(&st, AMDNN_ERR_FAILED);
  out->bytes = (int64_t)size;
  if (size <= AMD_Q8_FILE_BYTES) amd_sha256_hex(buf, size, out->sha256);
  free(buf);
  for (int k = 1; k <= 7; k++)
    if (size == ((size_t)1 << (2 * k))) out->lut_bits = k;
  if (out->lut_bits) {
    snprintf(out->format, sizeof out->format, "section 5 table (lut:FILE)");
    return NULL;
  }
  return describe_q8(path, bin_signed, out);
}

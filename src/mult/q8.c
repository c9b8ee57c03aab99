/* 8-bit table multipliers (q8.h): exact tables, the two file formats, error
 * statistics and SHA-256 (for `amdnn-onnx lut --describe`). */
#include "q8.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char q8_magic[8] = {'A', 'M', 'D', 'Q', '8', 'T', 'A', 'B'};

void amd_q8_exact(int is_signed, int32_t *table) {
  for (int a = 0; a < 256; a++)
    for (int b = 0; b < 256; b++) table[a * 256 + b] = amd_q8_value(a, is_signed) * amd_q8_value(b, is_signed);
}

/* The codes of the value below and above code c's (-1 where the value is the
 * lowest / highest of the range: the quotient is then one-sided). */
static void q8_neighbours(int c, int is_signed, int *below, int *above) {
  const int v = amd_q8_value(c, is_signed), lo = is_signed ? -128 : 0, hi = is_signed ? 127 : 255;
  *below = v > lo ? (uint8_t)(v - 1) : -1;
  *above = v < hi ? (uint8_t)(v + 1) : -1;
}

void amd_q8_grad_tables(int is_signed, const int32_t *table, float *ea, float *eb) {
  for (int a = 0; a < 256; a++) {
    int a0, a1;
    q8_neighbours(a, is_signed, &a0, &a1);
    const int32_t va = amd_q8_value(a, is_signed);
    for (int b = 0; b < 256; b++) {
      int b0, b1;
      q8_neighbours(b, is_signed, &b0, &b1);
      const int32_t vb = amd_q8_value(b, is_signed);
      /* along a: differences of int32 entries (|T| <= 2^17, no overflow) */
      const int32_t ta1 = table[(a1 < 0 ? a : a1) * 256 + b], ta0 = table[(a0 < 0 ? a : a0) * 256 + b];
      const double da = (double)(ta1 - ta0) / (a0 < 0 || a1 < 0 ? 1.0 : 2.0);
      const int32_t tb1 = table[a * 256 + (b1 < 0 ? b : b1)], tb0 = table[a * 256 + (b0 < 0 ? b : b0)];
      const double db = (double)(tb1 - tb0) / (b0 < 0 || b1 < 0 ? 1.0 : 2.0);
      ea[a * 256 + b] = (float)(da - vb);
      eb[a * 256 + b] = (float)(db - va);
    }
  }
}

/* Reads the whole file (at most max + 1 bytes are kept, so that a larger
 * file is reported with its true size). */
static uint8_t *read_all(const char *path, size_t max, size_t *size, amd_status *st) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    amd_fail(st, "cannot open 8-bit multiplier table '%s': %s", path, strerror(errno));
    return NULL;
  }
  uint8_t *buf = malloc(max + 1);
  if (!buf) {
    fclose(f);
    amd_fail(st, "out of memory reading 8-bit multiplier table '%s'", path);
    return NULL;
  }
  size_t n = 0;
  for (;;) {
    uint8_t chunk[8192];
    size_t r = fread(chunk, 1, sizeof chunk, f);
    if (r > 0 && n <= max) {
      size_t keep = max + 1 - n < r ? max + 1 - n : r;
      memcpy(buf + n, chunk, keep);
    }
    n += r;
    if (r < sizeof chunk) break;
  }
  int err = ferror(f);
  fclose(f);
  if (err) {
    free(buf);
    amd_fail(st, "error reading 8-bit multiplier table '%s'", path);
    return NULL;
  }
  *size = n;
  return buf;
}

static int bad_size(const char *path, size_t size, amd_status *st) {
  return amd_fail(st,
                  "8-bit multiplier table '%s' has %zu bytes: expected %d (TFApprox .bin: 65536 16-bit "
                  "little-endian entries) or %d (AMDQ8TAB: 16-byte header + 65536 int32)",
                  path, size, AMD_Q8_BIN_BYTES, AMD_Q8_FILE_BYTES);
}

/* Checks our header; *sgn gets its signedness. */
static int check_header(const char *path, const uint8_t *buf, int *sgn, amd_status *st) {
  if (memcmp(buf, q8_magic, 8) != 0)
    return amd_fail(st, "8-bit multiplier table '%s' has %d bytes but does not start with \"AMDQ8TAB\"", path,
                    AMD_Q8_FILE_BYTES);
  if ((buf[8] != 'u' && buf[8] != 's') || buf[9] != 1)
    return amd_fail(st,
                    "8-bit multiplier table '%s': header byte 8 must be 'u' or 's' and byte 9 the version 1 "
                    "(found 0x%02x, %d)",
                    path, buf[8], buf[9]);
  for (int k = 10; k < 16; k++)
    if (buf[k]) return amd_fail(st, "8-bit multiplier table '%s': header bytes 10..15 must be 0", path);
  *sgn = buf[8] == 's';
  return 0;
}

int amd_q8_probe(const char *path, int *is_signed, amd_status *st) {
  size_t size = 0;
  uint8_t *buf = read_all(path, AMD_Q8_FILE_BYTES, &size, st);
  if (!buf) return -1;
  int rc = 0;
  if (size == AMD_Q8_BIN_BYTES)
    *is_signed = -1;
  else if (size == AMD_Q8_FILE_BYTES)
    rc = check_header(path, buf, is_signed, st);
  else
    rc = bad_size(path, size, st);
  free(buf);
  return rc;
}

int amd_q8_load(const char *path, int is_signed, int32_t *table, amd_status *st) {
  const char *kind = is_signed ? "q8s" : "q8u";
  if (!path || !*path) return amd_fail(st, "mode '%s:' needs a table file or 'exact' (%s:FILE)", kind, kind);
  if (strcmp(path, "exact") == 0) {
    amd_q8_exact(is_signed, table);
    return 0;
  }
  size_t size = 0;
  uint8_t *buf = read_all(path, AMD_Q8_FILE_BYTES, &size, st);
  if (!buf) return -1;
  int rc = 0;
  if (size == AMD_Q8_BIN_BYTES) {
    for (int i = 0; i < AMD_Q8_ENTRIES; i++) {
      uint16_t u = (uint16_t)(buf[2 * i] | (buf[2 * i + 1] << 8));
      table[i] = is_signed ? (int32_t)(int16_t)u : (int32_t)u;
    }
  } else if (size == AMD_Q8_FILE_BYTES) {
    int sgn = 0;
    rc = check_header(path, buf, &sgn, st);
    if (rc == 0 && sgn != is_signed)
      rc = amd_fail(st, "8-bit multiplier table '%s' is %s but the mode is %s (use %s:%s)", path,
                    sgn ? "signed" : "unsigned", kind, sgn ? "q8s" : "q8u", path);
    for (int i = 0; rc == 0 && i < AMD_Q8_ENTRIES; i++) {
      const uint8_t *p = buf + AMD_Q8_HEADER_BYTES + 4 * i;
      int32_t v = (int32_t)((uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24));
      if (v < -AMD_Q8_MAX_ABS || v > AMD_Q8_MAX_ABS)
        rc = amd_fail(st,
                      "8-bit multiplier table '%s': entry [%d][%d] = %ld is out of range (|value| <= %d)", path,
                      i / 256, i % 256, (long)v, AMD_Q8_MAX_ABS);
      table[i] = v;
    }
  } else {
    rc = bad_size(path, size, st);
  }
  free(buf);
  return rc;
}

void amd_q8_serialize(int is_signed, const int32_t *table, uint8_t *out) {
  memset(out, 0, AMD_Q8_HEADER_BYTES);
  memcpy(out, q8_magic, 8);
  out[8] = is_signed ? 's' : 'u';
  out[9] = 1;
  for (int i = 0; i < AMD_Q8_ENTRIES; i++) {
    uint32_t v = (uint32_t)table[i];
    uint8_t *p = out + AMD_Q8_HEADER_BYTES + 4 * i;
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
  }
}

int amd_q8_serialize_bin(int is_signed, const int32_t *table, uint8_t *out, amd_status *st) {
  for (int i = 0; i < AMD_Q8_ENTRIES; i++) {
    int32_t v = table[i];
    if (is_signed ? (v < -32768 || v > 32767) : (v < 0 || v > 65535))
      return amd_fail(st, "entry [%d][%d] = %ld does not fit the .bin format's %s", i / 256, i % 256, (long)v,
                      is_signed ? "int16" : "uint16");
    uint16_t u = (uint16_t)v;
    out[2 * i] = (uint8_t)u, out[2 * i + 1] = (uint8_t)(u >> 8);
  }
  return 0;
}

void amd_q8_error(int is_signed, const int32_t *table, amd_q8_stats *s) {
  double sum_ae = 0, sum_re = 0;
  int64_t n_re = 0;
  memset(s, 0, sizeof *s);
  for (int a = 0; a < 256; a++)
    for (int b = 0; b < 256; b++) {
      int64_t exact = (int64_t)amd_q8_value(a, is_signed) * amd_q8_value(b, is_signed);
      int64_t d = (int64_t)table[a * 256 + b] - exact;
      int64_t ad = d < 0 ? -d : d;
      sum_ae += (double)ad;
      if (ad > s->max_ae) s->max_ae = ad;
      s->n_diff += d != 0;
      if (exact != 0) {
        sum_re += (double)ad / fabs((double)exact);
        n_re++;
      }
    }
  s->mae = sum_ae / AMD_Q8_ENTRIES;
  s->mre = n_re ? sum_re / (double)n_re : 0;
}

int amd_q8_bit_bilinear(const int32_t *table, int64_t c[8][8]) {
  /* row[i][b] = the sum over j of c[i][j] b_j: T[a][b] must be the sum of row[i][b] over a's set bits i */
  int64_t row[8][256];
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 8; j++) c[i][j] = table[(1 << i) * 256 + (1 << j)];
  for (int i = 0; i < 8; i++)
    for (int b = 0; b < 256; b++) {
      row[i][b] = 0;
      for (int j = 0; j < 8; j++)
        if (b >> j & 1) row[i][b] += c[i][j];
    }
  for (int a = 0; a < 256; a++)
    for (int b = 0; b < 256; b++) {
      int64_t v = 0;
      for (int i = 0; i < 8; i++)
        if (a >> i & 1) v += row[i][b];
      if (v != table[a * 256 + b]) return 0;
    }
  return 1;
}

/* ---------------------------------------------------------------- SHA-256 */

/* The round constants and initial hash are the first 32 bits of the
 * fractional parts of the cube roots of the first 64 primes and of the square
 * roots of the first 8 (FIPS 180-4, 4.2.2 and 5.3.3); computed here exactly
 * with integer roots instead of being typed in. */
static uint32_t root_frac(uint32_t p, int cube) {
  /* x = floor(p^(1/k) * 2^32): the largest x with x^k <= p * 2^(32k) */
  unsigned __int128 target = (unsigned __int128)p << (cube ? 96 : 64);
  uint64_t x = (uint64_t)((cube ? cbrt((double)p) : sqrt((double)p)) * 4294967296.0);
  for (;;) { /* the double estimate is within a few units: adjust */
    unsigned __int128 v = (unsigned __int128)x * x;
    if (cube) v *= x;
    if (v > target) {
      x--;
      continue;
    }
    unsigned __int128 w = (unsigned __int128)(x + 1) * (x + 1);
    if (cube) w *= (x + 1);
    if (w <= target) {
      x++;
      continue;
    }
    break;
  }
  return (uint32_t)x;
}

static uint32_t sha_k[64], sha_h0[8];
static int sha_ready;

static void sha_init(void) {
  if (sha_ready) return;
  int n = 0;
  for (uint32_t p = 2; n < 64; p++) {
    int prime = 1;
    for (uint32_t d = 2; d * d <= p; d++)
      if (p % d == 0) prime = 0;
    if (!prime) continue;
    if (n < 8) sha_h0[n] = root_frac(p, 0);
    sha_k[n++] = root_frac(p, 1);
  }
  sha_ready = 1;
}

static uint32_t ror(uint32_t x, int r) { return (x >> r) | (x << (32 - r)); }

static void sha_block(uint32_t h[8], const uint8_t *blk) {
  uint32_t w[64];
  for (int t = 0; t < 16; t++)
    w[t] = ((uint32_t)blk[4 * t] << 24) | ((uint32_t)blk[4 * t + 1] << 16) | ((uint32_t)blk[4 * t + 2] << 8) |
           blk[4 * t + 3];
  for (int t = 16; t < 64; t++) {
    uint32_t s0 = ror(w[t - 15], 7) ^ ror(w[t - 15], 18) ^ (w[t - 15] >> 3);
    uint32_t s1 = ror(w[t - 2], 17) ^ ror(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int t = 0; t < 64; t++) {
    uint32_t t1 = hh + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + sha_k[t] + w[t];
    uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    hh = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
  }
  h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

void amd_sha256_hex(const uint8_t *data, size_t n, char hex[65]) {
  sha_init();
  uint32_t h[8];
  memcpy(h, sha_h0, sizeof h);
  size_t full = n / 64 * 64;
  for (size_t o = 0; o < full; o += 64) sha_block(h, data + o);
  /* padding: 0x80, zeros, the bit length as a 64-bit big-endian number */
  uint8_t tail[128] = {0};
  size_t rest = n - full;
  memcpy(tail, data + full, rest);
  tail[rest] = 0x80;
  size_t tl = rest + 1 + 8 <= 64 ? 64 : 128;
  uint64_t bits = (uint64_t)n * 8;
  for (int k = 0; k < 8; k++) tail[tl - 1 - k] = (uint8_t)(bits >> (8 * k));
  for (size_t o = 0; o < tl; o += 64) sha_block(h, tail + o);
  for (int k = 0; k < 8; k++) snprintf(hex + 8 * k, 9, "%08x", h[k]);
}

/* Table-driven multipliers (spec section 5):
 *  - the 7-bit tables of am16, mit16 and acc16 (amd_mult_make_table) have the
 *    sha256 digests of the spec, and entry 8256 (1.5 x 1.5) of MBM_7 is 0x87;
 *  - `amdnn-onnx lut --mode M -o FILE` writes the same bytes, and rejects
 *    modes without a table and bad arguments;
 *  - lut:FILE with the am16 table equals am16 on every vector and on random
 *    inputs (all exponents, specials included); tables of other widths
 *    (MBM_5, MBM_3 as m = 5, 3 tables) equal mbm14, mbm12;
 *  - files whose size is not 4^m (m = 1..7) are rejected, naming the size.
 *
 * usage: test_lut AM_VECTORS_TSV AMDNN_ONNX_EXE SCRATCH_DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mult/mult.h"
#include "mult/products.h"
#include "vectors_io.h"

/* ---- a small sha256 (FIPS 180-4) ---- */

static uint32_t ror32(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void sha256(const uint8_t *data, size_t len, char hex[65]) {
  static const uint32_t k[64] = {
      0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
      0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
      0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
      0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
      0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
      0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
      0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
      0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
  uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  size_t total = ((len + 9 + 63) / 64) * 64;
  for (size_t off = 0; off < total; off += 64) {
    uint8_t blk[64];
    for (int i = 0; i < 64; i++) {
      size_t p = off + (size_t)i;
      if (p < len)
        blk[i] = data[p];
      else if (p == len)
        blk[i] = 0x80;
      else if (p >= total - 8)
        blk[i] = (uint8_t)(((uint64_t)len * 8) >> (8 * (total - 1 - p)));
      else
        blk[i] = 0;
    }
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
      w[i] = (uint32_t)blk[4 * i] << 24 | (uint32_t)blk[4 * i + 1] << 16 | (uint32_t)blk[4 * i + 2] << 8 |
             blk[4 * i + 3];
    for (int i = 16; i < 64; i++) {
      uint32_t s0 = ror32(w[i - 15], 7) ^ ror32(w[i - 15], 18) ^ (w[i - 15] >> 3);
      uint32_t s1 = ror32(w[i - 2], 17) ^ ror32(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
      uint32_t t1 = hh + (ror32(e, 6) ^ ror32(e, 11) ^ ror32(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      uint32_t t2 = (ror32(a, 2) ^ ror32(a, 13) ^ ror32(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      hh = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
  }
  for (int i = 0; i < 8; i++) snprintf(hex + 8 * i, 9, "%08x", h[i]);
}

/* ---- helpers ---- */

static int failed = 0;

#define CHECK(cond, ...)                                                                                     \
  do {                                                                                                       \
    if (!(cond)) {                                                                                           \
      printf("FAIL: " __VA_ARGS__);                                                                          \
      printf("\n");                                                                                          \
      failed = 1;                                                                                            \
    }                                                                                                        \
  } while (0)

static int write_file(const char *path, const uint8_t *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  int ok = fwrite(data, 1, n, f) == n;
  return (fclose(f) == 0 && ok) ? 0 : -1;
}

static uint8_t *read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16;
  uint8_t *buf = malloc(cap);
  *n = fread(buf, 1, cap, f);
  fclose(f);
  return buf;
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state >> 16);
}

/* Compares lut:FILE against a reference mode on the vectors (a, b columns)
 * and on n random pairs with every exponent (so zero, subnormal, Inf, NaN,
 * underflow and overflow all occur). Returns the number of mismatches. */
static long compare_modes(const vec_table *vt, const amd_mult *lut, const amd_mult *ref, long n,
                          const char *what) {
  long bad = 0, total = 0;
  for (int r = 0; r < vt->nrows; r++, total++) {
    float a = vec_f(vt->rows[r][0]), b = vec_f(vt->rows[r][1]);
    uint32_t want = vec_u(amd_mult_product(ref, a, b)), got = vec_u(amd_mult_product(lut, a, b));
    if (!vec_same(want, got) && bad++ < 5)
      printf("  %s vector row %d: a=%08X b=%08X %s %08X, %s %08X\n", what, r + 1, vt->rows[r][0],
             vt->rows[r][1], ref->name, want, lut->name, got);
  }
  for (long i = 0; i < n; i++, total++) {
    uint32_t ua = rnd(), ub = rnd();
    /* half of the pairs with exponents near the bias: products in range */
    if (i & 1) {
      ua = (ua & 0x807FFFFFu) | ((uint32_t)(112 + ua % 32) << 23);
      ub = (ub & 0x807FFFFFu) | ((uint32_t)(112 + ub % 32) << 23);
    }
    float a = vec_f(ua), b = vec_f(ub);
    uint32_t want = vec_u(amd_mult_product(ref, a, b)), got = vec_u(amd_mult_product(lut, a, b));
    if (!vec_same(want, got) && bad++ < 5)
      printf("  %s random: a=%08X b=%08X %s %08X, %s %08X\n", what, ua, ub, ref->name, want, lut->name, got);
  }
  printf("%-28s %ld / %ld products equal\n", what, total - bad, total);
  return bad;
}

/* Builds a table of width m from a product on bit patterns (section 5). */
static void make_table_m(uint32_t (*prod)(uint32_t, uint32_t), int m, uint8_t *t) {
  for (uint32_t i = 0; i < (1u << m); i++)
    for (uint32_t j = 0; j < (1u << m); j++) {
      uint32_t p = prod(0x3F800000u | (i << (23 - m)), 0x3F800000u | (j << (23 - m)));
      uint32_t carry = ((p >> 23) & 0xFF) - 127;
      t[(i << m) | j] = (uint8_t)(carry << 7 | ((p & 0x7FFFFF) >> (23 - m)));
    }
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s AM_VECTORS_TSV AMDNN_ONNX_EXE SCRATCH_DIR\n", argv[0]);
    return 1;
  }
  const char *exe = argv[2], *dir = argv[3];
  vec_table vt;
  if (vec_read(argv[1], &vt)) return 1;

  static const struct {
    amd_mode mode;
    const char *name, *sha;
  } tables[] = {
      {AMD_MODE_AM16, "am16", "dc2c5c50eb820657f593fde6927a18fbb591582e5e050d8cb727895f9a350d7a"},
      {AMD_MODE_MIT16, "mit16", "ac623c7e6e5bb79b33d6a5b71dcac0fd324788c73c71370e406c0600bbfab667"},
      {AMD_MODE_ACC16, "acc16", "96a1b918f9dea7db98eceb484d1b606e3cf60982274d7443b9ed65baf4dfcbee"},
  };
  static uint8_t table[3][AMD_MULT_TABLE7_SIZE];
  char path[4096], cmd[8192], hex[65];
  amd_status st = {{0}};

  /* the sha256 itself, on the FIPS 180-2 examples */
  sha256((const uint8_t *)"abc", 3, hex);
  CHECK(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"), "sha256(abc) = %s",
        hex);
  const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  sha256((const uint8_t *)two, strlen(two), hex);
  CHECK(!strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
        "sha256(2 blocks) = %s", hex);

  /* 1. in-process tables */
  for (int t = 0; t < 3; t++) {
    int rc = amd_mult_make_table(tables[t].mode, table[t], &st);
    CHECK(rc == 0, "amd_mult_make_table(%s): %s", tables[t].name, st.msg);
    sha256(table[t], AMD_MULT_TABLE7_SIZE, hex);
    printf("table %-5s sha256 %s %s\n", tables[t].name, hex, strcmp(hex, tables[t].sha) ? "MISMATCH" : "ok");
    CHECK(!strcmp(hex, tables[t].sha), "table %s: sha256 %s, spec says %s", tables[t].name, hex,
          tables[t].sha);
  }
  printf("MBM_7 entry 8256 (1.5 x 1.5) = 0x%02X\n", table[0][8256]);
  CHECK(table[0][8256] == 0x87, "MBM_7 entry 8256 is 0x%02X, not 0x87", table[0][8256]);
  uint8_t junk[AMD_MULT_TABLE7_SIZE];
  CHECK(amd_mult_make_table(AMD_MODE_AM32, junk, &st) != 0 && strstr(st.msg, "am32"),
        "amd_mult_make_table(am32) must fail naming the mode");

  /* 2. the CLI writes the same bytes */
  for (int t = 0; t < 3; t++) {
    snprintf(path, sizeof path, "%s/cli_%s.bin", dir, tables[t].name);
    remove(path);
    snprintf(cmd, sizeof cmd, "'%s' lut --mode %s -o '%s'", exe, tables[t].name, path);
    int rc = system(cmd);
    CHECK(rc == 0, "`%s` exited with %d", cmd, rc);
    size_t n = 0;
    uint8_t *data = read_file(path, &n);
    CHECK(data && n == AMD_MULT_TABLE7_SIZE, "`%s`: output %s missing or %zu bytes", cmd, path, n);
    if (data) {
      sha256(data, n, hex);
      printf("cli   %-5s sha256 %s %s\n", tables[t].name, hex,
             strcmp(hex, tables[t].sha) ? "MISMATCH" : "ok");
      CHECK(!strcmp(hex, tables[t].sha), "`%s`: sha256 %s", cmd, hex);
      free(data);
    }
  }
  static const char *bad_cli[] = {
      "lut --mode am32 -o '%s/cli_bad.bin'",
      "lut --mode nosuch -o '%s/cli_bad.bin'",
      "lut --mode am16",
      "lut -o '%s/cli_bad.bin'",
      "lut --mode am16 -o '%s/cli_bad.bin' extra",
      "lut --frobnicate -o '%s/cli_bad.bin'",
      "lut --mode am16 -o '%s/no/such/dir/x.bin'",
  };
  for (size_t i = 0; i < sizeof bad_cli / sizeof *bad_cli; i++) {
    char args[1024];
    snprintf(args, sizeof args, bad_cli[i], dir);
    snprintf(path, sizeof path, "%s/cli_bad.bin", dir);
    remove(path);
    snprintf(cmd, sizeof cmd, "'%s' %s 2>/dev/null", exe, args);
    int rc = system(cmd);
    FILE *f = fopen(path, "rb");
    CHECK(rc != 0 && !f, "`%s` should fail and write nothing (rc %d)", cmd, rc);
    if (f) fclose(f);
  }
  snprintf(cmd, sizeof cmd, "'%s' lut --help >/dev/null", exe);
  CHECK(system(cmd) == 0, "`%s` should succeed", cmd);
  printf("CLI: bad arguments rejected, --help ok\n");

  /* 3. lut: with the am16 table equals am16 */
  amd_mult am16, lut;
  CHECK(amd_mult_parse("am16", &am16, &st) == 0, "parse am16: %s", st.msg);
  snprintf(path, sizeof path, "lut:%s/cli_am16.bin", dir);
  if (amd_mult_parse(path, &lut, &st) == 0) {
    CHECK(lut.mode == AMD_MODE_LUT && lut.lut_bits == 7, "lut: from %s: mode %d, m %d", path, lut.mode,
          lut.lut_bits);
    CHECK(compare_modes(&vt, &lut, &am16, 2000000, "lut:(MBM_7 table) vs am16") == 0,
          "lut: with the MBM_7 table differs from am16");
    amd_mult_free(&lut);
  } else {
    CHECK(0, "parse %s: %s", path, st.msg);
  }
  /* and the other tables against their modes, written in process */
  static const struct {
    const char *ref;
    int m;
    uint32_t (*prod)(uint32_t, uint32_t);
  } widths[] = {
      {"mit16", 7, amd_prod_mit16_bits},
      {"mbm14", 5, amd_prod_mbm14_bits},
      {"mbm12", 3, amd_prod_mbm12_bits},
  };
  for (size_t w = 0; w < sizeof widths / sizeof *widths; w++) {
    static uint8_t t[AMD_MULT_TABLE7_SIZE];
    int m = widths[w].m;
    make_table_m(widths[w].prod, m, t);
    snprintf(path, sizeof path, "%s/table_%s.bin", dir, widths[w].ref);
    CHECK(write_file(path, t, (size_t)1 << (2 * m)) == 0, "cannot write %s", path);
    char name[4200], what[64];
    snprintf(name, sizeof name, "lut:%s", path);
    snprintf(what, sizeof what, "lut:(m=%d table) vs %s", m, widths[w].ref);
    amd_mult ref;
    CHECK(amd_mult_parse(widths[w].ref, &ref, &st) == 0, "parse %s", widths[w].ref);
    if (amd_mult_parse(name, &lut, &st) == 0) {
      CHECK(lut.lut_bits == m, "%s: m = %d, want %d", name, lut.lut_bits, m);
      CHECK(compare_modes(&vt, &lut, &ref, 500000, what) == 0, "%s", what);
      amd_mult_free(&lut);
    } else {
      CHECK(0, "parse %s: %s", name, st.msg);
    }
  }

  /* 4. bad table sizes */
  static const size_t bad_sizes[] = {0, 1, 2, 3, 5, 8, 32, 128, 8192, 16383, 16385, 65536};
  for (size_t i = 0; i < sizeof bad_sizes / sizeof *bad_sizes; i++) {
    static uint8_t zeros[65536];
    snprintf(path, sizeof path, "%s/table_bad.bin", dir);
    CHECK(write_file(path, zeros, bad_sizes[i]) == 0, "cannot write %s", path);
    char name[4200], size[32];
    snprintf(name, sizeof name, "lut:%s", path);
    snprintf(size, sizeof size, "%zu bytes", bad_sizes[i]);
    int rc = amd_mult_parse(name, &lut, &st);
    CHECK(rc != 0 && strstr(st.msg, size), "table of %zu bytes: rc %d, msg '%s'", bad_sizes[i], rc, st.msg);
    if (rc == 0) amd_mult_free(&lut);
    if (i == 4) printf("bad size rejected: %s\n", st.msg);
  }
  for (int m = 1; m <= 7; m++) { /* every good size loads */
    static uint8_t zeros[AMD_MULT_TABLE7_SIZE];
    snprintf(path, sizeof path, "%s/table_m%d.bin", dir, m);
    CHECK(write_file(path, zeros, (size_t)1 << (2 * m)) == 0, "cannot write %s", path);
    char name[4200];
    snprintf(name, sizeof name, "lut:%s", path);
    int rc = amd_mult_parse(name, &lut, &st);
    CHECK(rc == 0 && lut.lut_bits == m, "table of 4^%d bytes: rc %d (%s)", m, rc, st.msg);
    if (rc == 0) amd_mult_free(&lut);
  }
  CHECK(amd_mult_parse("lut:", &lut, &st) != 0, "'lut:' without a file must fail");
  snprintf(path, sizeof path, "lut:%s/no_such_table.bin", dir);
  CHECK(amd_mult_parse(path, &lut, &st) != 0 && strstr(st.msg, "no_such_table"), "missing table must fail");
  printf("table sizes: bad sizes rejected, 4^1..4^7 accepted\n");

  amd_mult_free(&am16);
  free(vt.rows);
  printf(failed ? "FAILED\n" : "PASSED\n");
  return failed;
}

/* `amdnn-onnx lut --mode MODE -o FILE`: writes the 7-bit multiplier table of
 * a mode (spec section 5: 128 x 128 bytes, row = first operand, bit 7 =
 * carry, bits 6..0 = fraction), the format that `--mult lut:FILE` and
 * ApproxTrain's lut tables (*.bin) use. The file is written atomically: a temporary
 * file beside it, flushed and synced, then renamed over FILE.
 *
 * 8-bit tables (src/mult/q8.h): `lut --mode q8u:exact -o FILE` (or any
 * q8u:/q8s: mode, e.g. to convert a TFApprox .bin) writes the table in our
 * AMDQ8TAB format, or TFApprox's .bin with --format bin; `lut --describe FILE
 * [--signed]` prints a table's format, signedness, SHA-256, its error
 * against the exact products and its bit form (a section 5 table: its size,
 * m and SHA-256). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../mult/mult.h"
#include "../mult/q8.h"
#include "commands.h"

static void usage(FILE *out) {
  fprintf(out, "usage: amdnn-onnx lut --mode MODE -o FILE [--format amdq8|bin]\n"
               "       amdnn-onnx lut --describe FILE [--signed]\n"
               "\n"
               "Writes the multiplier table of MODE (16384 bytes: entry [i*128 + j] describes\n"
               "(1 + i/128) * (1 + j/128); bit 7 = carry, bits 6..0 = the product's top 7\n"
               "fraction bits). Load it back with --mult lut:FILE.\n"
               "\n"
               "8-bit tables: with MODE q8u:exact, q8s:exact, q8u:FILE or q8s:FILE it writes\n"
               "the 256 x 256 product table (entry [a*256 + b], a the data code, b the weight\n"
               "code) in the AMDQ8TAB format (262160 bytes) or, with --format bin, as\n"
               "TFApprox's .bin (65536 little-endian 16-bit entries). Use it with\n"
               "--mode q8u:FILE / q8s:FILE (docs/quantized.md).\n"
               "\n"
               "options:\n"
               "  --mode MODE         am16 (MBM_7), mit16 (MIT_7) or acc16 (bfloat16, ACC_7);\n"
               "                      q8u:exact, q8s:exact, q8u:FILE, q8s:FILE (8-bit tables)\n"
               "  -o, --output FILE   where to write the table (replaced atomically)\n"
               "  --format F          8-bit tables: amdq8 (default) or bin\n"
               "  --describe FILE     print a table's format, signedness, SHA-256 and (8-bit\n"
               "                      tables) its mean / max absolute and mean relative error\n"
               "                      against the exact products, and whether it is bilinear in\n"
               "                      the code bits (which partial products it keeps)\n"
               "  --signed            --describe: read a .bin table as int16 (q8s; default\n"
               "                      uint16, q8u)\n"
               "  -h, --help          this text\n");
}

/* Writes data to path through a temporary file and rename(). */
static int write_atomic(const char *path, const uint8_t *data, size_t n, amd_status *st) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
    return amd_fail(st, "output path too long: %s", path);
  FILE *f = fopen(tmp, "wbx");
  if (!f) return amd_fail(st, "cannot create %s: %s", tmp, strerror(errno));
  int ok = fwrite(data, 1, n, f) == n && fflush(f) == 0 && fsync(fileno(f)) == 0;
  int err = errno;
  if (fclose(f) != 0 && ok) {
    ok = 0;
    err = errno;
  }
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

/* The bit form of an 8-bit table (amd_q8_bit_bilinear): whether it is
 * bilinear in the code bits and, if so, each partial product's weight
 * C[i][j] / 2^(i+j) (1: kept as in the exact unsigned product, -1: the sign
 * terms of an int8 product, 0: dropped). */
static void print_bit_form(const int32_t *table) {
  int64_t c[8][8];
  if (!amd_q8_bit_bilinear(table, c)) {
    printf("bit form:  not bilinear in the code bits\n");
    return;
  }
  printf("bit form:  bilinear in the code bits, T[a][b] = sum of C[i][j] a_i b_j; C[i][j] / 2^(i+j)\n"
         "           (1 = the exact partial product, -1 = an int8 sign term, 0 = dropped), rows i = 7..0\n"
         "           (bits of the first operand), columns j = 7..0 (bits of the second):\n");
  for (int i = 7; i >= 0; i--) {
    printf("           ");
    for (int j = 7; j >= 0; j--) printf(" %5g", (double)c[i][j] / (double)((int64_t)1 << (i + j)));
    printf("\n");
  }
}

/* lut --describe FILE */
static int describe(const char *path, int bin_signed) {
  amd_status st = {{0}};
  size_t size = 0;
  uint8_t *buf = slurp(path, AMD_Q8_FILE_BYTES, &size, &st);
  if (!buf) {
    fprintf(stderr, "amdnn-onnx lut: %s\n", st.msg);
    return 1;
  }
  char hex[65];
  int rc = 0;
  if (size <= AMD_Q8_FILE_BYTES) amd_sha256_hex(buf, size, hex);
  int m = 0;
  for (int k = 1; k <= 7; k++)
    if (size == ((size_t)1 << (2 * k))) m = k;
  if (m) {
    printf("file:      %s\nformat:    section 5 table (lut:FILE), m = %d, %zu bytes\nsha256:    %s\n", path, m, size,
           hex);
  } else {
    int sgn = 0;
    int32_t *table = malloc(sizeof(int32_t) * AMD_Q8_ENTRIES);
    if (!table || amd_q8_probe(path, &sgn, &st)) {
      fprintf(stderr, "amdnn-onnx lut: %s\n", table ? st.msg : "out of memory");
      free(table);
      free(buf);
      return 1;
    }
    const int is_bin = sgn < 0;
    if (is_bin) sgn = bin_signed;
    if (amd_q8_load(path, sgn, table, &st)) {
      fprintf(stderr, "amdnn-onnx lut: %s\n", st.msg);
      rc = 1;
    } else {
      amd_q8_stats e;
      amd_q8_error(sgn, table, &e);
      int32_t lo = table[0], hi = table[0];
      for (int i = 1; i < AMD_Q8_ENTRIES; i++) {
        if (table[i] < lo) lo = table[i];
        if (table[i] > hi) hi = table[i];
      }
      printf("file:      %s\n", path);
      printf("format:    %s, %zu bytes\n",
             is_bin ? "TFApprox .bin (65536 little-endian 16-bit entries)" : "AMDQ8TAB (65536 int32)", size);
      printf("operands:  %s (mode %s:%s)%s\n", sgn ? "signed int8 x int8" : "unsigned uint8 x uint8",
             sgn ? "q8s" : "q8u", path, is_bin ? (sgn ? "; read as int16 (--signed)" : "; read as uint16") : "");
      printf("sha256:    %s\n", hex);
      printf("range:     %ld .. %ld\n", (long)lo, (long)hi);
      printf("differ:    %lld of 65536 entries from the exact products\n", (long long)e.n_diff);
      printf("mean |e|:  %.4f\nmax |e|:   %lld\nmean rel:  %.6f (%.4f %%, over the pairs with a non-zero exact product)\n",
             e.mae, (long long)e.max_ae, e.mre, 100 * e.mre);
      print_bit_form(table);
    }
    free(table);
  }
  free(buf);
  return rc;
}

/* lut --mode q8u:... -o FILE */
static int write_q8(const amd_mult *mult, const char *out_path, int bin) {
  amd_status st = {{0}};
  const int sgn = mult->q8 == 's';
  size_t n = bin ? AMD_Q8_BIN_BYTES : AMD_Q8_FILE_BYTES;
  uint8_t *data = malloc(n);
  if (!data) {
    fprintf(stderr, "amdnn-onnx lut: out of memory\n");
    return 1;
  }
  int rc = 0;
  if (bin) {
    if (amd_q8_serialize_bin(sgn, mult->q8_table, data, &st)) {
      fprintf(stderr, "amdnn-onnx lut: %s: %s\n", mult->name, st.msg);
      rc = 2;
    }
  } else {
    amd_q8_serialize(sgn, mult->q8_table, data);
  }
  if (rc == 0 && write_atomic(out_path, data, n, &st)) {
    fprintf(stderr, "amdnn-onnx lut: %s\n", st.msg);
    rc = 1;
  }
  free(data);
  return rc;
}

int amd_cmd_lut(int argc, char **argv) {
  const char *mode_name = NULL, *out_path = NULL, *describe_path = NULL, *format = NULL;
  int bin_signed = 0;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(arg, "--signed")) {
      bin_signed = 1;
    } else if (!strcmp(arg, "--mode") || !strcmp(arg, "-o") || !strcmp(arg, "--output") ||
               !strcmp(arg, "--describe") || !strcmp(arg, "--format")) {
      if (i + 1 >= argc) {
        fprintf(stderr, "amdnn-onnx lut: %s needs a value\n", arg);
        return 2;
      }
      if (!strcmp(arg, "--mode"))
        mode_name = argv[++i];
      else if (!strcmp(arg, "--describe"))
        describe_path = argv[++i];
      else if (!strcmp(arg, "--format"))
        format = argv[++i];
      else
        out_path = argv[++i];
    } else if (!strncmp(arg, "--mode=", 7)) {
      mode_name = arg + 7;
    } else if (!strncmp(arg, "--output=", 9)) {
      out_path = arg + 9;
    } else if (!strncmp(arg, "--format=", 9)) {
      format = arg + 9;
    } else if (!strncmp(arg, "--describe=", 11)) {
      describe_path = arg + 11;
    } else {
      fprintf(stderr, "amdnn-onnx lut: unexpected argument '%s' (see amdnn-onnx lut --help)\n", arg);
      return 2;
    }
  }
  if (describe_path) {
    if (mode_name || out_path || format) {
      fprintf(stderr, "amdnn-onnx lut: --describe takes no --mode, -o or --format\n");
      return 2;
    }
    return describe(describe_path, bin_signed);
  }
  if (bin_signed) {
    fprintf(stderr, "amdnn-onnx lut: --signed goes with --describe (a mode says its signedness: q8s:...)\n");
    return 2;
  }
  if (format && strcmp(format, "amdq8") && strcmp(format, "bin")) {
    fprintf(stderr, "amdnn-onnx lut: --format must be amdq8 or bin, not '%s'\n", format);
    return 2;
  }
  if (!mode_name || !*mode_name) {
    fprintf(stderr, "amdnn-onnx lut: --mode is required (am16, mit16 or acc16; q8u:exact, q8s:exact, "
                    "q8u:FILE, q8s:FILE), or --describe FILE\n");
    return 2;
  }
  if (!out_path || !*out_path) {
    fprintf(stderr, "amdnn-onnx lut: -o FILE is required\n");
    return 2;
  }

  amd_status st = {{0}};
  amd_mult mult;
  if (amd_mult_parse(mode_name, &mult, &st)) {
    fprintf(stderr, "amdnn-onnx lut: %s\n", st.msg);
    return 2;
  }
  if (mult.q8) {
    int rc = write_q8(&mult, out_path, format && !strcmp(format, "bin"));
    amd_mult_free(&mult);
    return rc;
  }
  if (format) {
    amd_mult_free(&mult);
    fprintf(stderr, "amdnn-onnx lut: --format is for the 8-bit tables (q8u:..., q8s:...)\n");
    return 2;
  }
  amd_mode mode = mult.mode;
  amd_mult_free(&mult);
  static uint8_t table[AMD_MULT_TABLE7_SIZE];
  if (amd_mult_make_table(mode, table, &st)) {
    fprintf(stderr, "amdnn-onnx lut: %s\n", st.msg);
    return 2;
  }
  if (write_atomic(out_path, table, sizeof table, &st)) {
    fprintf(stderr, "amdnn-onnx lut: %s\n", st.msg);
    return 1;
  }
  return 0;
}

/* `amdnn-onnx lut --mode MODE -o FILE`: writes the 7-bit multiplier table of
 * a mode (spec section 5: 128 x 128 bytes, row = first operand, bit 7 =
 * carry, bits 6..0 = fraction), the format that `--mult lut:FILE` and
 * ApproxTrain's lut tables (*.bin) use. The file is written atomically: a temporary
 * file beside it, flushed and synced, then renamed over FILE. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../mult/mult.h"
#include "commands.h"

static void usage(FILE *out) {
  fprintf(out, "usage: amdnn-onnx lut --mode MODE -o FILE\n"
               "\n"
               "Writes the multiplier table of MODE (16384 bytes: entry [i*128 + j] describes\n"
               "(1 + i/128) * (1 + j/128); bit 7 = carry, bits 6..0 = the product's top 7\n"
               "fraction bits). Load it back with --mult lut:FILE.\n"
               "\n"
               "options:\n"
               "  --mode MODE         am16 (MBM_7), mit16 (MIT_7) or acc16 (bfloat16, ACC_7)\n"
               "  -o, --output FILE   where to write the table (replaced atomically)\n"
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

int amd_cmd_lut(int argc, char **argv) {
  const char *mode_name = NULL, *out_path = NULL;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(arg, "--mode") || !strcmp(arg, "-o") || !strcmp(arg, "--output")) {
      if (i + 1 >= argc) {
        fprintf(stderr, "amdnn-onnx lut: %s needs a value\n", arg);
        return 2;
      }
      if (!strcmp(arg, "--mode"))
        mode_name = argv[++i];
      else
        out_path = argv[++i];
    } else if (!strncmp(arg, "--mode=", 7)) {
      mode_name = arg + 7;
    } else if (!strncmp(arg, "--output=", 9)) {
      out_path = arg + 9;
    } else {
      fprintf(stderr, "amdnn-onnx lut: unexpected argument '%s' (see amdnn-onnx lut --help)\n", arg);
      return 2;
    }
  }
  if (!mode_name || !*mode_name) {
    fprintf(stderr, "amdnn-onnx lut: --mode is required (am16, mit16 or acc16)\n");
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

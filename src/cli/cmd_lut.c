/* `amdnn-onnx lut`: writes a multiplier table (amdnn_table_write) or
 * describes one (amdnn_table_describe). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* The bit form of an 8-bit table: whether it is bilinear in the code bits
 * and, if so, each partial product's weight C[i][j] / 2^(i+j) (1: kept as in
 * the exact unsigned product, -1: the sign terms of an int8 product, 0:
 * dropped). */
static void print_bit_form(const amdnn_table_info *t) {
  if (!t->bilinear) {
    printf("bit form:  not bilinear in the code bits\n");
    return;
  }
  printf("bit form:  bilinear in the code bits, T[a][b] = sum of C[i][j] a_i b_j; C[i][j] / 2^(i+j)\n"
         "           (1 = the exact partial product, -1 = an int8 sign term, 0 = dropped), rows i = 7..0\n"
         "           (bits of the first operand), columns j = 7..0 (bits of the second):\n");
  for (int i = 7; i >= 0; i--) {
    printf("           ");
    for (int j = 7; j >= 0; j--) printf(" %5g", t->bit_weight[i][j]);
    printf("\n");
  }
}

static int describe(const cli_args *a, const char *path, int bin_signed) {
  amdnn_table_info t;
  int rc = cli_fail(a, amdnn_table_describe(path, bin_signed, &t));
  if (rc) return rc;
  if (t.lut_bits) {
    printf("file:      %s\nformat:    %s, m = %d, %lld bytes\nsha256:    %s\n", path, t.format, t.lut_bits,
           (long long)t.bytes, t.sha256);
    return 0;
  }
  const int is_bin = strncmp(t.format, "TFApprox", 8) == 0;
  printf("file:      %s\n", path);
  printf("format:    %s, %lld bytes\n", t.format, (long long)t.bytes);
  printf("operands:  %s (mode %s:%s)%s\n", t.is_signed ? "signed int8 x int8" : "unsigned uint8 x uint8",
         t.is_signed ? "q8s" : "q8u", path, is_bin ? (t.is_signed ? "; read as int16 (--signed)" : "; read as uint16") : "");
  printf("sha256:    %s\n", t.sha256);
  printf("range:     %ld .. %ld\n", (long)t.lo, (long)t.hi);
  printf("differ:    %lld of 65536 entries from the exact products\n", (long long)t.n_diff);
  printf("mean |e|:  %.4f\nmax |e|:   %lld\nmean rel:  %.6f (%.4f %%, over the pairs with a non-zero exact product)\n",
         t.mean_abs_error, (long long)t.max_abs_error, t.mean_rel_error, 100 * t.mean_rel_error);
  print_bit_form(&t);
  return 0;
}

int cli_lut(const cli_command *cmd, cli_args *a) {
  (void)cmd;
  const char *mode = amdnn_options_get(a->call, "mode"), *out = amdnn_options_get(a->call, "output");
  const char *format = amdnn_options_get(a->call, "format"), *desc = amdnn_options_get(a->call, "describe");
  const int bin_signed = amdnn_options_get(a->call, "signed") != NULL;
  if (desc) {
    if (mode || out || format) {
      fprintf(stderr, "%s: --describe takes no --mode, -o or --format\n", a->prog);
      return 2;
    }
    return describe(a, desc, bin_signed);
  }
  if (bin_signed) {
    fprintf(stderr, "%s: --signed goes with --describe (a mode says its signedness: q8s:...)\n", a->prog);
    return 2;
  }
  if (!mode || !out) {
    fprintf(stderr, "%s: --mode and -o are required, or --describe FILE (see %s --help)\n", a->prog, a->prog);
    return 2;
  }
  return cli_fail(a, amdnn_table_write(mode, out, format));
}

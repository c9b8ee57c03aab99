/* Every multiplier mode against tests/mult/am_vectors.tsv, bit for bit
 * (any NaN equals any NaN), through amd_mult_parse + amd_mult_product.
 *
 * usage: test_vectors AM_VECTORS_TSV
 * Each column after a and b names a mode; every mode except lut: must have a
 * column, and every row of every column must match. */
#include <stdio.h>
#include <string.h>

#include "mult/mult.h"
#include "vectors_io.h"

#define SHOW_MISMATCHES 5

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s AM_VECTORS_TSV\n", argv[0]);
    return 1;
  }
  vec_table vt;
  if (vec_read(argv[1], &vt)) return 1;
  printf("%s: %d rows, %d modes\n", argv[1], vt.nrows, vt.ncols - 2);

  int failed = 0;
  int seen[AMD_MODE_COUNT] = {0};
  for (int c = 2; c < vt.ncols; c++) {
    amd_mult m;
    amd_status st = {{0}};
    if (amd_mult_parse(vt.names[c], &m, &st)) {
      printf("FAIL: column '%s': %s\n", vt.names[c], st.msg);
      failed = 1;
      continue;
    }
    seen[m.mode] = 1;
    int ok = 0, shown = 0;
    for (int r = 0; r < vt.nrows; r++) {
      uint32_t a = vt.rows[r][0], b = vt.rows[r][1], want = vt.rows[r][c];
      uint32_t got = vec_u(amd_mult_product(&m, vec_f(a), vec_f(b)));
      if (vec_same(want, got)) {
        ok++;
      } else if (shown++ < SHOW_MISMATCHES) {
        printf("  %s row %d: a=%08X b=%08X want %08X (%.9g) got %08X (%.9g)\n", vt.names[c], r + 1, a, b,
               want, vec_f(want), got, vec_f(got));
      }
    }
    printf("%-6s %4d / %d rows match%s\n", vt.names[c], ok, vt.nrows, ok == vt.nrows ? "" : "  FAIL");
    if (ok != vt.nrows) failed = 1;
    amd_mult_free(&m);
  }
  for (int i = 0; i < AMD_MODE_COUNT; i++) {
    if (i == AMD_MODE_LUT || seen[i]) continue;
    printf("FAIL: no column for mode %s in %s\n", amd_mode_name((amd_mode)i), argv[1]);
    failed = 1;
  }

  /* amd_mult_product(NULL, ...) is acc32 */
  int null_ok = 0;
  for (int r = 0; r < vt.nrows; r++) {
    uint32_t want = vec_u(vec_f(vt.rows[r][0]) * vec_f(vt.rows[r][1]));
    uint32_t got = vec_u(amd_mult_product(NULL, vec_f(vt.rows[r][0]), vec_f(vt.rows[r][1])));
    null_ok += vec_same(want, got);
  }
  printf("NULL   %4d / %d rows equal fp32 a*b%s\n", null_ok, vt.nrows, null_ok == vt.nrows ? "" : "  FAIL");
  if (null_ok != vt.nrows) failed = 1;

  /* unknown names fail with the list of valid choices */
  amd_mult m;
  amd_status st = {{0}};
  if (amd_mult_parse("am17", &m, &st) == 0 || !strstr(st.msg, "am17") || !strstr(st.msg, "mbm12") ||
      !strstr(st.msg, "lut:FILE")) {
    printf("FAIL: unknown mode 'am17' not rejected with the list of choices (msg: '%s')\n", st.msg);
    failed = 1;
  } else {
    printf("unknown mode rejected: %s\n", st.msg);
  }

  free(vt.rows);
  printf(failed ? "FAILED\n" : "PASSED\n");
  return failed;
}

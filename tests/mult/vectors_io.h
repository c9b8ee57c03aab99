/* Reads tests/mult/am_vectors.tsv for the multiplier tests: a header
 * line "# a b <mode> ..." then one row per input pair, fp32 bit patterns in
 * hex, tab-separated. Fails loudly (returns -1 with a message) on a missing
 * file, a malformed row or an empty table, so no test can pass silently. */
#ifndef AMD_TEST_VECTORS_IO_H
#define AMD_TEST_VECTORS_IO_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VEC_MAX_COLS 16

typedef struct vec_table {
  int ncols;                    /* including a and b */
  char names[VEC_MAX_COLS][32]; /* column names, names[0] = "a", names[1] = "b" */
  int nrows;
  uint32_t (*rows)[VEC_MAX_COLS]; /* rows[r][c] */
} vec_table;

static int vec_is_nan(uint32_t u) { return (u & 0x7FFFFFFFu) > 0x7F800000u; }

/* Bit-for-bit equality, except that any NaN equals any NaN. */
static int vec_same(uint32_t want, uint32_t got) {
  if (vec_is_nan(want)) return vec_is_nan(got);
  return want == got;
}

static int vec_split(char *line, char **fields, int max) {
  int n = 0;
  char *p = line;
  for (;;) {
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
    if (!*p) return n;
    if (n == max) return -1;
    fields[n++] = p;
    while (*p && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') p++;
    if (*p) *p++ = 0;
  }
}

static int vec_read(const char *path, vec_table *vt) {
  memset(vt, 0, sizeof *vt);
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "FAIL: cannot open test vectors '%s'\n", path);
    return -1;
  }
  char line[1024];
  int cap = 0, lineno = 0;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    char *fields[VEC_MAX_COLS + 1];
    if (line[0] == '#') {
      if (vt->ncols) continue;
      int n = vec_split(line + 1, fields, VEC_MAX_COLS + 1);
      if (n < 3 || n > VEC_MAX_COLS || strcmp(fields[0], "a") || strcmp(fields[1], "b")) {
        fprintf(stderr, "FAIL: %s:%d: bad header (want '# a b <modes...>')\n", path, lineno);
        fclose(f);
        return -1;
      }
      vt->ncols = n;
      for (int c = 0; c < n; c++) snprintf(vt->names[c], sizeof vt->names[c], "%s", fields[c]);
      continue;
    }
    int n = vec_split(line, fields, VEC_MAX_COLS + 1);
    if (n == 0) continue;
    if (!vt->ncols || n != vt->ncols) {
      fprintf(stderr, "FAIL: %s:%d: %d fields, header has %d\n", path, lineno, n, vt->ncols);
      fclose(f);
      return -1;
    }
    if (vt->nrows == cap) {
      cap = cap ? 2 * cap : 1024;
      void *p = realloc(vt->rows, (size_t)cap * sizeof *vt->rows);
      if (!p) {
        fclose(f);
        return -1;
      }
      vt->rows = (uint32_t(*)[VEC_MAX_COLS])p; /* cast: also compiles as C++/CUDA */
    }
    for (int c = 0; c < n; c++) {
      char *end;
      unsigned long v = strtoul(fields[c], &end, 16);
      if (*end || end == fields[c] || v > 0xFFFFFFFFul) {
        fprintf(stderr, "FAIL: %s:%d: bad hex '%s'\n", path, lineno, fields[c]);
        fclose(f);
        return -1;
      }
      vt->rows[vt->nrows][c] = (uint32_t)v;
    }
    vt->nrows++;
  }
  fclose(f);
  if (!vt->ncols || vt->nrows == 0) {
    fprintf(stderr, "FAIL: %s: no header or no rows\n", path);
    return -1;
  }
  return 0;
}

static float vec_f(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static uint32_t vec_u(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

#endif

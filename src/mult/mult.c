/* Multiplier modes: parsing mode names, loading lut: tables, the scalar
 * product by mode, and generating the 7-bit tables of section 5
 * (docs/multipliers.md). The products themselves are the static
 * inline functions of products.h, which the CUDA code shares. */
#include "mult.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "products.h"
#include "q8.h"

/* The expansions of mode_list.h used here. */
#define NAME_OF(ID, NAME, PROD, BITS, ARGS, KIND, M, TABLE7, SUMMARY) [ID] = NAME,
#define SUMMARY_OF(ID, NAME, PROD, BITS, ARGS, KIND, M, TABLE7, SUMMARY) [ID] = SUMMARY,
#define CHOICE(ID, NAME, PROD, BITS, ARGS, KIND, M, TABLE7, SUMMARY) ", " NAME AMD_MODE_ARG_##ARGS
#define TABLE7_NAME(ID, NAME, PROD, BITS, ARGS, KIND, M, TABLE7, SUMMARY) TABLE7_NAME_##TABLE7(NAME)
#define TABLE7_NAME_0(name)
#define TABLE7_NAME_1(name) ", " name

static const char *const mode_names[AMD_MODE_COUNT] = {AMD_MODE_LIST(NAME_OF)};
static const char *const mode_summaries[AMD_MODE_COUNT] = {AMD_MODE_LIST(SUMMARY_OF)};
_Static_assert(AMD_MODE_ACC32 == 0, "acc32 is the first mode (amd_mult zeroed = acc32)");

/* ", acc32, acc16, ..., lut:FILE" and ", acc16, am16, mit16": every mode
 * (with its argument) and every 7-bit design, each after ", " */
static const char choices[] = AMD_MODE_LIST(CHOICE) ", q8u:FILE|exact, q8s:FILE|exact";
static const char table7_names[] = "" AMD_MODE_LIST(TABLE7_NAME);

const char *amd_mult_choices(void) { return choices + 2; }

const char *amd_mode_name(amd_mode mode) {
  if ((int)mode < 0 || mode >= AMD_MODE_COUNT) return NULL;
  return mode_names[mode];
}

const char *amd_mode_summary(amd_mode mode) {
  if ((int)mode < 0 || mode >= AMD_MODE_COUNT) return NULL;
  return mode_summaries[mode];
}

int amd_mult_check_name(const char *name, amd_status *st) {
  if (!name || !*name) return amd_fail(st, "no multiplier mode given (valid: %s)", amd_mult_choices());
  static const char *const with_file[] = {"lut:", "q8u:", "q8s:"};
  for (size_t k = 0; k < sizeof with_file / sizeof with_file[0]; k++)
    if (strncmp(name, with_file[k], 4) == 0) {
      if (!name[4]) return amd_fail(st, "mode '%s' needs a table file (%sFILE)", name, with_file[k]);
      return 0;
    }
  for (int i = 0; i < AMD_MODE_COUNT; i++)
    if (i != AMD_MODE_LUT && strcmp(name, mode_names[i]) == 0) return 0;
  return amd_fail(st, "unknown multiplier mode '%s' (valid: %s)", name, amd_mult_choices());
}

/* Reads a section 5 table: 4^m bytes, m in 1..7. */
static int load_table(const char *path, amd_mult *out, amd_status *st) {
  if (!*path) return amd_fail(st, "mode 'lut:' needs a table file (lut:FILE)");
  FILE *f = fopen(path, "rb");
  if (!f) return amd_fail(st, "cannot open multiplier table '%s': %s", path, strerror(errno));
  uint8_t *buf = malloc(AMD_MULT_TABLE7_SIZE);
  if (!buf) {
    fclose(f);
    return amd_fail(st, "out of memory reading multiplier table '%s'", path);
  }
  /* Read everything, keeping at most 16384 bytes, so that the error can name
   * the real size (also for pipes). */
  size_t size = 0;
  for (;;) {
    uint8_t chunk[4096];
    size_t n = fread(chunk, 1, sizeof chunk, f);
    if (n > 0 && size < AMD_MULT_TABLE7_SIZE) {
      size_t keep = AMD_MULT_TABLE7_SIZE - size < n ? AMD_MULT_TABLE7_SIZE - size : n;
      memcpy(buf + size, chunk, keep);
    }
    size += n;
    if (n < sizeof chunk) break;
  }
  int err = ferror(f);
  fclose(f);
  if (err) {
    free(buf);
    return amd_fail(st, "error reading multiplier table '%s'", path);
  }
  int m = 0;
  for (int k = 1; k <= 7; k++)
    if (size == ((size_t)1 << (2 * k))) m = k;
  if (!m) {
    free(buf);
    return amd_fail(st,
                    "multiplier table '%s' has %zu bytes; a table has 4^m bytes for m = 1..7 "
                    "(4, 16, 64, 256, 1024, 4096 or 16384)",
                    path, size);
  }
  out->lut = buf;
  out->lut_bits = m;
  return 0;
}

int amd_mult_parse(const char *name, amd_mult *out, amd_status *st) {
  memset(out, 0, sizeof *out);
  if (!name) return amd_fail(st, "no multiplier mode given (valid: %s)", amd_mult_choices());
  if (strncmp(name, "q8u:", 4) == 0 || strncmp(name, "q8s:", 4) == 0) {
    int sgn = name[2] == 's';
    out->q8_table = malloc(sizeof(int32_t) * AMD_Q8_ENTRIES);
    out->q8_table_t = malloc(sizeof(int32_t) * AMD_Q8_ENTRIES);
    out->q8_ea = malloc(sizeof(float) * AMD_Q8_ENTRIES);
    out->q8_eb = malloc(sizeof(float) * AMD_Q8_ENTRIES);
    if (!out->q8_table || !out->q8_table_t || !out->q8_ea || !out->q8_eb) {
      amd_mult_free(out);
      return amd_fail(st, "out of memory for an 8-bit multiplier table");
    }
    if (amd_q8_load(name + 4, sgn, out->q8_table, st)) {
      amd_mult_free(out);
      return -1;
    }
    for (int a = 0; a < 256; a++)
      for (int b = 0; b < 256; b++) out->q8_table_t[b * 256 + a] = out->q8_table[a * 256 + b];
    amd_q8_grad_tables(sgn, out->q8_table, out->q8_ea, out->q8_eb);
    out->q8 = sgn ? 's' : 'u';
    out->mode = AMD_MODE_ACC32;
    snprintf(out->name, sizeof out->name, "%s", name);
    return 0;
  }
  if (strncmp(name, "lut:", 4) == 0) {
    if (load_table(name + 4, out, st)) return -1;
    out->mode = AMD_MODE_LUT;
    snprintf(out->name, sizeof out->name, "%s", name);
    return 0;
  }
  for (int i = 0; i < AMD_MODE_COUNT; i++) {
    if (i == AMD_MODE_LUT) continue;
    if (strcmp(name, mode_names[i]) == 0) {
      out->mode = (amd_mode)i;
      snprintf(out->name, sizeof out->name, "%s", name);
      return 0;
    }
  }
  return amd_fail(st, "unknown multiplier mode '%s' (valid: %s)", name, amd_mult_choices());
}

void amd_mult_free(amd_mult *m) {
  if (!m) return;
  free(m->lut);
  m->lut = NULL;
  free(m->q8_table);
  free(m->q8_table_t);
  m->q8_table = m->q8_table_t = NULL;
  free(m->q8_ea);
  free(m->q8_eb);
  m->q8_ea = m->q8_eb = NULL;
  m->lut_bits = 0;
}

float amd_mult_product(const amd_mult *m, float a, float b) {
  if (!m) return amd_prod_acc32(a, b);
#define PRODUCT(ID, NAME, PROD, BITS, ARGS, KIND, M, TABLE7, SUMMARY)                                                \
  case ID:                                                                                                \
    PRODUCT_##ARGS(PROD)
#define PRODUCT_AB(fn) return fn(a, b);
#define PRODUCT_LUT(fn)                                                                                   \
  AMD_ASSERT(m->lut);                                                                                     \
  return fn(a, b, m->lut, m->lut_bits);
  switch (m->mode) {
    AMD_MODE_LIST(PRODUCT)
  case AMD_MODE_COUNT:
    break;
  }
  AMD_ASSERT(!"invalid multiplier mode");
  return 0.0f;
}

int amd_mult_make_table(amd_mode mode, uint8_t *table, amd_status *st) {
  /* the bit-level product of a 7-bit design (TABLE7 in mode_list.h) */
#define TABLE_MAKER(ID, NAME, PROD, BITS, ARGS, KIND, M, TABLE7, SUMMARY)                                            \
  case ID:                                                                                                \
    prod = TABLE_MAKER_##TABLE7(BITS);                                                                    \
    break;
#define TABLE_MAKER_0(fn) NULL
#define TABLE_MAKER_1(fn) fn
  uint32_t (*prod)(uint32_t, uint32_t) = NULL;
  switch (mode) {
    AMD_MODE_LIST(TABLE_MAKER)
  case AMD_MODE_COUNT:
    break;
  }
  if (!prod) {
    const char *n = amd_mode_name(mode);
    return amd_fail(st, "mode '%s' has no 7-bit multiplier table (tables exist for %s)", n ? n : "?",
                    table7_names + 2);
  }
  for (uint32_t i = 0; i < 128; i++) {
    for (uint32_t j = 0; j < 128; j++) {
      uint32_t a = 0x3F800000u | (i << 16); /* 1 + i/128 */
      uint32_t b = 0x3F800000u | (j << 16);
      uint32_t p = prod(a, b);
      uint32_t e = (p >> 23) & 0xFFu;
      /* the product of two values in [1, 2) lies in [1, 4) in all three modes */
      AMD_ASSERT((p >> 31) == 0 && (e == 127 || e == 128));
      table[i * 128 + j] = (uint8_t)(((e - 127u) << 7) | ((p >> 16) & 0x7Fu));
    }
  }
  return 0;
}

/* Multiplier modes (docs/multipliers.md is the contract).
 *
 * An amd_mult names the scalar product that every Conv / Gemm / MatMul uses,
 * in the forward pass and in both backward GEMMs. NULL or AMD_MODE_ACC32 means
 * IEEE fp32. The modes are the lines of mode_list.h; the bit-level products
 * themselves are the static inline functions of products.h, shared by the C
 * and the CUDA code. */
#ifndef AMD_MULT_H
#define AMD_MULT_H

#include <stdint.h>

#include "../core/status.h"
#include "mode_list.h"

/* The modes in the order of mode_list.h (acc32 = 0, lut last). */
typedef enum amd_mode {
#define AMD_MODE_ENUM(ID, NAME, PROD, BITS, ARGS, KIND, M, TABLE7, SUMMARY) ID,
  AMD_MODE_LIST(AMD_MODE_ENUM)
#undef AMD_MODE_ENUM
  AMD_MODE_COUNT
} amd_mode;

typedef struct amd_mult {
  amd_mode mode;
  int lut_bits;            /* m for AMD_MODE_LUT (table of 4^m bytes) */
  uint8_t *lut;            /* the table for AMD_MODE_LUT, else NULL */
  char name[256];          /* "am16", "lut:FILE" (as given) */
  /* 8-bit table modes q8u:FILE / q8s:FILE (q8.h, docs/quantized.md): q8 is
   * 'u' or 's' (0 for the float modes, whose mode field is then meaningful;
   * a q8 mode keeps mode = AMD_MODE_ACC32 and never reaches a float GEMM:
   * amd_mode_apply gives it only to quantized nodes). q8_table is the
   * 256 x 256 product table (row = data code, column = weight code),
   * q8_table_t its transpose (row = weight code) for GEMMs whose first
   * operand is the weight (the convolutions). q8_ea, q8_eb are the table's
   * error slopes dE/da, dE/db (amd_q8_grad_tables, q8.h), read by the
   * table-derived backward (--q8-grad table, src/ops/q8_grad.h); a caller
   * that changes q8_table recomputes them. */
  int q8;
  int32_t *q8_table;
  int32_t *q8_table_t;
  float *q8_ea, *q8_eb;
} amd_mult;

/* Parses a mode name ("acc32", ..., "lut:FILE"; a table is read from FILE;
 * "q8u:FILE", "q8s:FILE", "q8u:exact", "q8s:exact": 8-bit tables).
 * An unknown name is an error whose message lists the valid choices. */
int amd_mult_parse(const char *name, amd_mult *out, amd_status *st);
void amd_mult_free(amd_mult *m);
/* The product of two fp32 values in this mode (m may be NULL: acc32). */
float amd_mult_product(const amd_mult *m, float a, float b);
/* "acc32, acc16, am16, ..., lut:FILE" */
const char *amd_mult_choices(void);

/* Size of a table with m = 7 fraction bits (spec section 5): 128 x 128. */
#define AMD_MULT_TABLE7_SIZE 16384
/* Fills table[AMD_MULT_TABLE7_SIZE] with the section 5 table of a mode:
 * entry [i*128 + j] describes (1 + i/128) * (1 + j/128) in that mode (bit 7 =
 * carry, bits 6..0 = the product's top 7 fraction bits after normalisation).
 * Only the 7-bit designs (TABLE7 in mode_list.h: acc16 (ACC_7), am16 (MBM_7),
 * mit16 (MIT_7)) have one; any other mode is an error. */
int amd_mult_make_table(amd_mode mode, uint8_t *table, amd_status *st);
/* The name of a mode ("am16"; "lut" for AMD_MODE_LUT), or NULL if invalid. */
const char *amd_mode_name(amd_mode mode);
/* Its one-line description (mode_list.h's SUMMARY), or NULL if invalid. */
const char *amd_mode_summary(amd_mode mode);
/* Checks that name is a mode amd_mult_parse would take, without reading a
 * table file: a listed name, or lut:, q8u:, q8s: with a file (or exact).
 * An unknown name is an error that lists the valid choices. */
int amd_mult_check_name(const char *name, amd_status *st);

#endif

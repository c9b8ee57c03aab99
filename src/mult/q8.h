/* 8-bit table multipliers: the q8u:FILE / q8s:FILE modes (docs/quantized.md,
 * "8-bit multipliers").
 *
 * A q8 table is 256 x 256 int32 products indexed by the raw operand codes:
 * entry [a * 256 + b] is the product of the code bytes a and b, read as
 * uint8 (q8u) or as two's-complement int8 (q8s). Row a is the FIRST operand:
 * the data (activation) code of a convolution or a matrix product, column b
 * the weight code (for MatMulInteger / QLinearMatMul: row = input A, column =
 * input B). The exact table holds value(a) * value(b).
 *
 * Files (amd_q8_load picks the format by size):
 *   - TFApprox .bin: exactly 131072 bytes, 65536 little-endian 16-bit
 *     entries in the same order (row = first operand); read as uint16 for
 *     q8u and int16 for q8s. The file does not say which: the mode does.
 *   - ours ("AMDQ8TAB"): a 16-byte header, the 8 bytes "AMDQ8TAB", one byte
 *     'u' or 's' (the signedness, which must match the mode), one byte 1 (the
 *     format version), 6 zero bytes; then 65536 little-endian int32 entries:
 *     262160 bytes in all. Entries must lie in [-2^17, 2^17] (twice the
 *     largest exact product's magnitude: a larger value is a corrupt file).
 *   - "exact" (q8u:exact, q8s:exact) is the built-in exact table, no file. */
#ifndef AMD_Q8_H
#define AMD_Q8_H

#include <stddef.h>
#include <stdint.h>

#include "../core/status.h"

#define AMD_Q8_ENTRIES 65536
#define AMD_Q8_BIN_BYTES (AMD_Q8_ENTRIES * 2)
#define AMD_Q8_HEADER_BYTES 16
#define AMD_Q8_FILE_BYTES (AMD_Q8_HEADER_BYTES + AMD_Q8_ENTRIES * 4)
#define AMD_Q8_MAX_ABS (1 << 17)

/* The value of code byte c in a table of this signedness. */
static inline int32_t amd_q8_value(int c, int is_signed) {
  return is_signed ? (int32_t)(int8_t)(uint8_t)c : (int32_t)(uint8_t)c;
}

/* Fills table[65536] with the exact products. */
void amd_q8_exact(int is_signed, int32_t *table);
/* Loads a table of this signedness from path ("exact" = the exact table);
 * errors name the file. table has AMD_Q8_ENTRIES entries. */
int amd_q8_load(const char *path, int is_signed, int32_t *table, amd_status *st);
/* Reads a file's format without a mode: *is_signed from our header (-1 for a
 * .bin, whose signedness the caller must say). */
int amd_q8_probe(const char *path, int *is_signed, amd_status *st);
/* Our format in memory (AMD_Q8_FILE_BYTES bytes). */
void amd_q8_serialize(int is_signed, const int32_t *table, uint8_t *out);
/* TFApprox .bin (AMD_Q8_BIN_BYTES); -1 when an entry does not fit 16 bits. */
int amd_q8_serialize_bin(int is_signed, const int32_t *table, uint8_t *out, amd_status *st);

/* Error of a table against the exact products, over all 65536 pairs:
 * mean and max |t - exact|, mean relative error |t - exact| / |exact| over
 * the pairs whose exact product is not 0, and how many entries differ. */
typedef struct amd_q8_stats {
  double mae, mre;
  int64_t max_ae;
  int64_t n_diff;
} amd_q8_stats;
void amd_q8_error(int is_signed, const int32_t *table, amd_q8_stats *s);

/* Whether the table is bilinear in the bits of the code bytes: T[a][b] = the
 * sum over i, j < 8 of c[i][j] a_i b_j for every pair (a_i: bit i of byte a),
 * as the exact products are (value(a) = the sum of 2^i a_i, with -2^7 for
 * bit 7 of an int8 code) and as multipliers that keep or drop whole partial
 * products (truncated, broken-array) are. Fills c[i][j] = T[1 << i][1 << j]
 * either way. Such a table's sum over k of T[a_k][b_k] is a sum of 64 sums of
 * products of bits: integer GEMMs of the operands' bit planes. */
int amd_q8_bit_bilinear(const int32_t *table, int64_t c[8][8]);

/* The table's own gradients, as used by `--q8-grad table` (src/ops/q8_grad.h,
 * docs/quantized.md, "Table-derived gradients"). With T the table and
 * E[a][b] = T[a][b] - value(a) * value(b) its error against the exact
 * products, fills
 *   ea[a * 256 + b] = dT/da - value(b)   (= dE/da),
 *   eb[a * 256 + b] = dT/db - value(a)   (= dE/db),
 * dT/da the central difference quotient of the table along the first operand
 * in code units, (T[a+1][b] - T[a-1][b]) / 2, where a+1 and a-1 are the codes
 * of value(a) + 1 and value(a) - 1, one-sided at the ends of the code range
 * (T[a+1][b] - T[a][b] at the lowest value, T[a][b] - T[a-1][b] at the
 * highest); dT/db likewise along the second operand. The same difference
 * quotients of the exact products are exactly value(b) and value(a), so the
 * exact table gives 0 everywhere. Every entry is a multiple of 1/2 below 2^19
 * in magnitude: exact in float. */
void amd_q8_grad_tables(int is_signed, const int32_t *table, float *ea, float *eb);

/* SHA-256 (FIPS 180-4) of n bytes; hex gets 65 chars. */
void amd_sha256_hex(const uint8_t *data, size_t n, char hex[65]);

#endif

/* The integer product-and-sum of the quantized ops (src/ops/quant.c):
 * QLinearConv, QLinearMatMul, ConvInteger and MatMulInteger all reduce to one
 * call of amd_q8_gemm (the convolutions after an im2col of 8-bit codes).
 *
 *   C[i][j] = sum_k (A[i][k] - za[i]) * (B[k][j] - zb[j])      (int32, wrapping)
 *
 * A (M x K) and B (K x N) hold raw 8-bit codes, row-major, each read as int8
 * or uint8 by its flag; za is A's zero point per row, zb B's per column
 * (callers expand a per-tensor zero point into such an array).
 *
 * Zero-point handling: the product is expanded as
 *   (a - za)(b - zb) = a*b - zb*a - za*b + za*zb
 * so that
 *   C[i][j] = P[i][j] - zb[j] * rowsumA[i] - za[i] * colsumB[j] + K * za[i] * zb[j]
 * with P[i][j] = sum_k a*b over the raw codes' values, rowsumA[i] = sum_k
 * A[i][k], colsumB[j] = sum_k B[k][j]. Only P multiplies two operand codes; the
 * other terms are sums and zero-point corrections. All of it is computed in
 * uint32 (mod 2^32, the ring in which the identity holds exactly), which is
 * the int32 result with the wrap-around ONNX allows ("accumulation may
 * overflow if and only if in 32 bits").
 *
 * Hook for table-driven 8-bit multipliers: P's product `a * b` is written in
 * one place (q8_row_block in qgemm.c); `table` (256 x 256 int32, row-major,
 * indexed by the raw codes: table[A code * 256 + B code]) replaces it when not
 * NULL. With the exact table (table[x][y] = value(x) * value(y)) the result is
 * bit-identical to the integer arithmetic above; an approximate table changes
 * only P, while the zero-point corrections stay exact (tests/ops/test_quant.c
 * checks both). The ops pass NULL (exact products) except in the 8-bit table
 * modes q8u:FILE / q8s:FILE (src/mult/q8.h), where they pass the node's table
 * (transposed for the convolutions, whose A is the weight). */
#ifndef AMD_QGEMM_H
#define AMD_QGEMM_H

#include <stdint.h>

/* Returns 0, or -1 when out of memory (for N column sums). */
int amd_q8_gemm(int64_t M, int64_t N, int64_t K, const uint8_t *A, int a_signed, const int32_t *za,
                 const uint8_t *B, int b_signed, const int32_t *zb, const int32_t *table, int32_t *C);

#endif

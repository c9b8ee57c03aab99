/* Every multiplier mode, one line each: the list that mult.h's enum, mult.c
 * (names, parsing, products, section 5 tables), the CPU GEMM (src/gemm/gemm.c)
 * and the CUDA mode GEMM (cuda/mode_gemm.cu) expand. docs/multipliers.md is
 * the contract of the arithmetic.
 *
 * Adding a mode whose arithmetic an existing kind covers (say mit12 = MIT_5):
 *   1. its product in src/mult/products.h: amd_prod_<name>_bits(ua, ub) on
 *      bit patterns and amd_prod_<name>(a, b) on floats (AMD_HD inline, so
 *      that the CUDA kernels share it);
 *   2. one line below, before AMD_MODE_LUT (lut stays last: "lut:FILE" ends
 *      the list of choices);
 *   3. a column of expected products in tests/mult/am_vectors.tsv (the
 *      vectors test fails for a mode without one).
 * The CPU and GPU kernels pick the mode up from its KIND and M; the GPU gets
 * one more instantiation of its kernel templates. A mode that no kind covers
 * needs a new kind: kernels in both GEMMs (see the kind list below).
 *
 * X(ID, NAME, PROD, BITS, ARGS, KIND, M, TABLE7, SUMMARY)
 *   ID     the amd_mode enum value (the list's order is the enum's)
 *   NAME   the --mode name ("lut" is given as lut:FILE)
 *   PROD   the product on floats, BITS the same on fp32 bit patterns
 *          (products.h), called as AMD_MODE_CALL_<ARGS>(fn, a, b, lut, m):
 *   ARGS   AB: fn(a, b); LUT: fn(a, b, lut, m), the amd_mult's table
 *   KIND   the family of GEMM kernels that computes it (amd_mode_kind)
 *   M      the fraction bits the kind's kernels keep (0: the table's m)
 *   TABLE7 1: a 7-bit design, whose section 5 table amd_mult_make_table
 *          builds from BITS (what `amdnn-onnx lut` writes)
 *   SUMMARY one line for `amdnn-onnx modes` and --help */
#ifndef AMD_MODE_LIST_H
#define AMD_MODE_LIST_H

/* clang-format off */
#define AMD_MODE_LIST(X)                                                                                   \
  X(AMD_MODE_ACC32, "acc32", amd_prod_acc32, amd_prod_acc32_bits, AB,  AMD_KIND_ACC32,      23, 0, "IEEE fp32 products, the exact baseline (cuBLAS SGEMM on a GPU, no TF32)") \
  X(AMD_MODE_ACC16, "acc16", amd_prod_acc16, amd_prod_acc16_bits, AB,  AMD_KIND_ACC16,       7, 1, "bfloat16: operands and product truncated to 7 fraction bits (ACC_7)") \
  X(AMD_MODE_AM16,  "am16",  amd_prod_am16,  amd_prod_am16_bits,  AB,  AMD_KIND_MBM,         7, 1, "approximate 16-bit (1,8,7): Mitchell with correction, MBM_7") \
  X(AMD_MODE_AM32,  "am32",  amd_prod_am32,  amd_prod_am32_bits,  AB,  AMD_KIND_MBM23,      23, 0, "approximate 32-bit: Mitchell with correction on 23 bits, MBM_23") \
  X(AMD_MODE_FP16,  "fp16",  amd_prod_fp16,  amd_prod_fp16_bits,  AB,  AMD_KIND_FP16,       10, 0, "IEEE binary16 operands and product, round to nearest even") \
  X(AMD_MODE_MIT16, "mit16", amd_prod_mit16, amd_prod_mit16_bits, AB,  AMD_KIND_MIT,         7, 1, "Mitchell's logarithmic multiplier on 7 fraction bits, MIT_7") \
  X(AMD_MODE_MIT32, "mit32", amd_prod_mit32, amd_prod_mit32_bits, AB,  AMD_KIND_MIT,        23, 0, "Mitchell's logarithmic multiplier on 23 fraction bits, MIT_23") \
  X(AMD_MODE_MBM14, "mbm14", amd_prod_mbm14, amd_prod_mbm14_bits, AB,  AMD_KIND_MBM,         5, 0, "Mitchell with correction on 5 fraction bits, MBM_5") \
  X(AMD_MODE_MBM12, "mbm12", amd_prod_mbm12, amd_prod_mbm12_bits, AB,  AMD_KIND_MIT_FORCED,  3, 0, "MBM_3: Mitchell on 3 fraction bits with the forced bit, no correction") \
  X(AMD_MODE_MIT14, "mit14", amd_prod_mit14, amd_prod_mit14_bits, AB,  AMD_KIND_MIT,         5, 0, "Mitchell's logarithmic multiplier on 5 fraction bits, MIT_5") \
  X(AMD_MODE_LUT,   "lut",   amd_prod_lut,   amd_prod_lut_bits,   LUT, AMD_KIND_LUT,         0, 0, "any (1,8,m) multiplier, m <= 7, as a table of 4^m bytes (section 5)")
/* clang-format on */

/* The kinds: modes of one kind share the GEMM kernels (CPU and GPU), which
 * take the mode's M as a parameter (see gemm.c's "Mode kernels" and the file
 * comment of cuda/mode_gemm.cu).
 *   ACC32       IEEE fp32: the plain fp32 kernels and cuBLAS, no emulation
 *   ACC16       bfloat16 operands, one IEEE multiply, the product truncated
 *   FP16        binary16 operands and product (round to nearest even)
 *   MIT         Mitchell MIT_M: the sum of the operands' encodings (T_M)
 *   MIT_FORCED  MBM_M without correction (M = 3 or 1): MIT on the T_M
 *               fractions with the forced bit 2^(23-M)
 *   MBM         MBM_M with correction, M in 2..7: a table indexed by the sum
 *               of the M - 1 kept bits above the forced one (built from BITS)
 *   MBM23       MBM_23
 *   LUT         a section 5 table given at run time (lut:FILE, m = 1..7) */
typedef enum amd_mode_kind {
  AMD_KIND_ACC32,
  AMD_KIND_ACC16,
  AMD_KIND_FP16,
  AMD_KIND_MIT,
  AMD_KIND_MIT_FORCED,
  AMD_KIND_MBM,
  AMD_KIND_MBM23,
  AMD_KIND_LUT
} amd_mode_kind;

/* Calls a list entry's PROD or BITS by its ARGS. */
#define AMD_MODE_CALL_AB(fn, a, b, lut, m) fn(a, b)
#define AMD_MODE_CALL_LUT(fn, a, b, lut, m) fn(a, b, lut, m)
/* What follows NAME in the list of choices ("lut:FILE"). */
#define AMD_MODE_ARG_AB ""
#define AMD_MODE_ARG_LUT ":FILE"

#endif

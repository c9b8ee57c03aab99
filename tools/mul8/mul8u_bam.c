/* mul8u_bam: unsigned 8x8 broken-array multiplier (BAM), HBL = 1, VBL = 6.
 *
 * Definition (Mahdiani et al., "Bio-inspired imprecise computational blocks
 * for efficient VLSI implementation of soft-computing applications", IEEE
 * TCAS-I 2010): the carry-save array of an array multiplier is broken by a
 * horizontal break line, which removes the cells of the partial-product rows
 * j < HBL (the rows of the multiplier b's low bits), and a vertical break
 * line, which removes the cells of the columns i + j < VBL. The remaining
 * cells add exactly:
 *   P = sum over i, j with j >= HBL and i + j >= VBL of a_i b_j 2^(i+j).
 * Here HBL = 1 and VBL = 6 (P <= a * b). Note the asymmetry: the first
 * operand a is the multiplicand (columns), b the multiplier (rows); in the
 * q8 modes the first operand is the data code, the second the weight code. */
#include <stdint.h>

#define BAM_HBL 1
#define BAM_VBL 6

uint16_t mul8u_bam(uint8_t a, uint8_t b) {
  uint32_t p = 0;
  for (int j = BAM_HBL; j < 8; j++)
    for (int i = 0; i < 8; i++)
      if (i + j >= BAM_VBL && ((a >> i) & 1) && ((b >> j) & 1)) p += 1u << (i + j);
  return (uint16_t)p;
}

/* mul8u_trunc6: unsigned 8x8 truncated array multiplier, k = 6.
 *
 * The same definition as mul8u_trunc4.c with the six least significant
 * partial-product columns left out:
 *   P = sum over i, j with i + j >= 6 of a_i b_j 2^(i+j),
 * so P <= a * b and the error is at most sum_{c < 6} (c + 1) 2^c = 321. */
#include <stdint.h>

uint16_t mul8u_trunc6(uint8_t a, uint8_t b) {
  uint32_t p = 0;
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 8; j++)
      if (i + j >= 6 && ((a >> i) & 1) && ((b >> j) & 1)) p += 1u << (i + j);
  return (uint16_t)p;
}

/* mul8u_trunc4: unsigned 8x8 truncated array multiplier, k = 4.
 *
 * Definition: an array multiplier adds the partial-product bits
 * a_i * b_j (i, j = 0..7), each weighted 2^(i+j); a truncated multiplier
 * leaves out every partial-product bit of the k least significant columns
 * (i + j < k), and so also the carries they would have sent upwards:
 *   P = sum over i, j with i + j >= k of a_i b_j 2^(i+j).
 * No correction constant is added: P <= a * b, the error is at most
 * sum_{c < k} (c + 1) 2^c (= 49 for k = 4). */
#include <stdint.h>

uint16_t mul8u_trunc4(uint8_t a, uint8_t b) {
  uint32_t p = 0;
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 8; j++)
      if (i + j >= 4 && ((a >> i) & 1) && ((b >> j) & 1)) p += 1u << (i + j);
  return (uint16_t)p;
}

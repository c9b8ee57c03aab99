/* mul8s_trunc6: signed (two's complement) 8x8 truncated Baugh-Wooley
 * multiplier, k = 6.
 *
 * Definition: the Baugh-Wooley array computes a signed product from the
 * operand bits a_i, b_j (bit 7 the sign) as
 *   a * b =   sum_{i<7, j<7} a_i b_j 2^(i+j) + a_7 b_7 2^14
 *           - sum_{i<7} a_i b_7 2^(i+7) - sum_{j<7} a_7 b_j 2^(j+7)
 * (the negative rows are formed with complemented bits and constant ones in
 * hardware). Truncation leaves out every partial-product bit of the k least
 * significant columns, i + j < k; for k <= 7 those are only positive terms
 * of the first sum:
 *   P = a * b - sum_{i<7, j<7, i+j<k} a_i b_j 2^(i+j),
 * so P <= a * b, by at most sum_{c < 6} (c + 1) 2^c = 321 for k = 6. */
#include <stdint.h>

int16_t mul8s_trunc6(int8_t a, int8_t b) {
  uint8_t ua = (uint8_t)a, ub = (uint8_t)b;
  int32_t p = (int32_t)a * (int32_t)b;
  for (int i = 0; i < 7; i++)
    for (int j = 0; j < 7; j++)
      if (i + j < 6 && ((ua >> i) & 1) && ((ub >> j) & 1)) p -= 1 << (i + j);
  return (int16_t)p;
}

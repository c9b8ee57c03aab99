/* mul8u_mitchell: unsigned 8x8 Mitchell logarithmic multiplier.
 *
 * Definition (J. N. Mitchell, "Computer multiplication and division using
 * binary logarithms", IRE Trans. Electronic Computers, 1962): write each
 * non-zero operand as a = 2^ka (1 + xa) with ka = floor(log2 a) and the
 * fraction xa = a / 2^ka - 1 in [0, 1); approximate log2 a by ka + xa, add
 * the two logarithms and take the antilogarithm with the same piecewise
 * linear approximation:
 *   xa + xb <  1:  P = 2^(ka+kb) (1 + xa + xb)
 *   xa + xb >= 1:  P = 2^(ka+kb+1) (xa + xb)
 * With ra = a - 2^ka and rb = b - 2^kb, S = ra 2^kb + rb 2^ka equals
 * 2^(ka+kb) (xa + xb), so both cases are integers here and nothing is
 * rounded: P = 2^(ka+kb) + S, or 2 S. A zero operand gives 0. Mitchell's
 * product never exceeds a * b (its worst relative error is about 11.1 %). */
#include <stdint.h>

static int mitchell_log2(uint32_t v) {
  int k = 0;
  while (v >> (k + 1)) k++;
  return k;
}

uint16_t mul8u_mitchell(uint8_t a, uint8_t b) {
  if (a == 0 || b == 0) return 0;
  int ka = mitchell_log2(a), kb = mitchell_log2(b);
  uint32_t ra = a - (1u << ka), rb = b - (1u << kb);
  uint32_t s = (ra << kb) + (rb << ka);
  uint32_t one = 1u << (ka + kb);
  return (uint16_t)(s < one ? one + s : 2 * s);
}

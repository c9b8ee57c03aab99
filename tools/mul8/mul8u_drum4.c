/* mul8u_drum4: unsigned 8x8 DRUM multiplier, k = 4.
 *
 * Definition (Hashemi, Bahar, Reda, "DRUM: A dynamic range unbiased
 * multiplier for approximate applications", ICCAD 2015): each operand is cut
 * to a k-bit segment that starts at its leading one; operands of at most k
 * bits are used as they are. The segment's least significant bit is forced
 * to 1, which makes the truncation error unbiased on average (the dropped
 * bits are replaced by their expected value). The two k-bit segments are
 * multiplied exactly and the product shifted back:
 *   t = floor(log2 v); if t < k: seg = v, sh = 0
 *                      else:     sh = t - k + 1, seg = (v >> sh) | 1
 *   P = (seg_a * seg_b) << (sh_a + sh_b)
 * P may exceed a * b (the error is signed, mean near zero). */
#include <stdint.h>

#define DRUM_K 4

static uint32_t drum_segment(uint32_t v, int *sh) {
  int t = 0;
  while (v >> (t + 1)) t++;
  if (v == 0 || t < DRUM_K) {
    *sh = 0;
    return v;
  }
  *sh = t - DRUM_K + 1;
  return (v >> *sh) | 1u;
}

uint16_t mul8u_drum4(uint8_t a, uint8_t b) {
  int sa, sb;
  uint32_t x = drum_segment(a, &sa), y = drum_segment(b, &sb);
  return (uint16_t)((x * y) << (sa + sb));
}

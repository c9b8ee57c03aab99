/* libFuzzer target: bytes -> FILE -> amd_mult_parse("lut:FILE"); a table that
 * loads is used for products of a fixed set of operands (normal, subnormal,
 * zero, infinite, NaN, both signs, extreme exponents). */
#include <math.h>

#include "../src/mult/mult.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const float vals[] = {1.0f,    1.5f,    -1.9921875f, 3.1415927f, 1e-40f,  -1e-45f, 0.0f, -0.0f,
                               1e38f,   -3e38f,  INFINITY,    -INFINITY,  NAN,     1.17549435e-38f,
                               0.7f,    -255.0f};
  enum { NV = sizeof vals / sizeof vals[0] };
  fuzz_write("table.lut", data, size);
  char spec[4200];
  snprintf(spec, sizeof spec, "lut:%s/table.lut", fuzz_tmpdir());
  amd_mult m;
  amd_status st = {{0}};
  if (amd_mult_parse(spec, &m, &st) != 0) {
    if (fuzz_verbose()) fprintf(stderr, "lut: %s\n", st.msg);
    return 0;
  }
  volatile float sink = 0.0f;
  for (int i = 0; i < NV; i++)
    for (int j = 0; j < NV; j++) sink += amd_mult_product(&m, vals[i], vals[j]);
  /* and a few operands taken from the table bytes themselves */
  for (size_t k = 0; k + 8 <= size && k < 64; k += 8) {
    float a, b;
    memcpy(&a, data + k, 4);
    memcpy(&b, data + k + 4, 4);
    sink += amd_mult_product(&m, a, b);
  }
  (void)sink;
  if (fuzz_verbose()) fprintf(stderr, "lut: ok (m = %d)\n", m.lut_bits);
  amd_mult_free(&m);
  return 0;
}

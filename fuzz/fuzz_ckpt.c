/* libFuzzer target: bytes -> DIR/ckpt-0000000001.amdckpt ->
 * amd_ckpt_find_latest(DIR) and amd_ckpt_read with a fixed set of sections
 * (the shapes of the seed written by make_seeds.sh: "params" 64 bytes,
 * "step" 8 bytes, "config" 16 bytes); amd_ckpt_verify as well. */
#include "../src/train/checkpoint.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_write("ckpt/ckpt-0000000001.amdckpt", data, size);
  char dir[4200], path[4200], warning[1024];
  fuzz_path(dir, sizeof dir, "ckpt");
  amd_status st = {{0}};
  int rc = amd_ckpt_find_latest(dir, path, sizeof path, warning, sizeof warning, &st);
  if (fuzz_verbose()) fprintf(stderr, "find_latest: %d %s %s\n", rc, rc ? st.msg : path, warning);
  /* read the file whatever find_latest said: the reader must verify itself */
  fuzz_path(path, sizeof path, "ckpt/ckpt-0000000001.amdckpt");
  uint8_t params[64], step[8], config[16];
  amd_ckpt_section secs[3] = {
      {"params", params, sizeof params}, {"step", step, sizeof step}, {"config", config, sizeof config}};
  rc = amd_ckpt_read(path, secs, 3, &st);
  if (fuzz_verbose()) fprintf(stderr, "read: %s\n", rc ? st.msg : "ok");
  rc = amd_ckpt_verify(path, &st);
  if (fuzz_verbose()) fprintf(stderr, "verify: %s\n", rc ? st.msg : "ok");
  return 0;
}

/* libFuzzer target: images:DIR with one class folder 'a': the input is
 * DIR/train/a/x.png. If the first byte is odd, the input (after that byte) is
 * split in two halves at byte1/255: the first is train/a/x.png and the second
 * test/a/y.png (different sizes and formats meet); else the whole input (after
 * the first byte) is both files. The content decides the decoder (JPEG or
 * PNG: the seeds have both, see the *.jpg seeds, written with PIL). Bit 1 of
 * the first byte: --resize 7 --crop 5x6 (the resize and crop path). One
 * decoding thread. */
#include "../src/data/dataset.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  if (data[0] & 1) {
    size_t rest = size - 2, k = rest * data[1] / 255;
    fuzz_write("images/train/a/x.png", data + 2, k);
    fuzz_write("images/test/a/y.png", data + 2 + k, rest - k);
  } else {
    fuzz_write("images/train/a/x.png", data + 1, size - 1);
    fuzz_write("images/test/a/y.png", data + 1, size - 1);
  }
  char spec[4200];
  snprintf(spec, sizeof spec, "images:%s/images", fuzz_tmpdir());
  amd_dataset ds;
  amd_status st = {{0}};
  amd_image_opts o = {0};
  o.workers = 1;
  if (data[0] & 2) o.resize = 7, o.crop_h = 5, o.crop_w = 6;
  int rc = amd_dataset_load_opts(spec, &o, &ds, &st);
  if (fuzz_verbose()) fprintf(stderr, "png: %s\n", rc ? st.msg : "ok");
  if (rc == 0) amd_dataset_free(&ds);
  return 0;
}

/* libFuzzer target: mnist:DIR. The first input byte splits the rest between
 * the image file and the label file (split at byte0/255 of the rest); the
 * test files are links to the training files. Either file may hold gzip data
 * (the reader inflates transparently). */
#include "../src/data/dataset.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int ready;
  if (!ready) {
    fuzz_symlink("train-images-idx3-ubyte", "mnist/t10k-images-idx3-ubyte");
    fuzz_symlink("train-labels-idx1-ubyte", "mnist/t10k-labels-idx1-ubyte");
    ready = 1;
  }
  if (size < 1) return 0;
  size_t rest = size - 1, k = rest * data[0] / 255;
  fuzz_write("mnist/train-images-idx3-ubyte", data + 1, k);
  fuzz_write("mnist/train-labels-idx1-ubyte", data + 1 + k, rest - k);
  char spec[4200];
  snprintf(spec, sizeof spec, "mnist:%s/mnist", fuzz_tmpdir());
  amd_dataset ds;
  amd_status st = {{0}};
  int rc = amd_dataset_load(spec, &ds, &st);
  if (fuzz_verbose()) fprintf(stderr, "idx: %s\n", rc ? st.msg : "ok");
  if (rc == 0) amd_dataset_free(&ds);
  return 0;
}

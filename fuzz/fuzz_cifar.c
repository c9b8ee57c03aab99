/* libFuzzer target: cifar10:DIR. The input is data_batch_1.bin; batches 2-5
 * and test_batch.bin are links to it (the reader needs all six). */
#include "../src/data/dataset.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int ready;
  if (!ready) {
    static const char *const links[] = {"cifar/data_batch_2.bin", "cifar/data_batch_3.bin",
                                        "cifar/data_batch_4.bin", "cifar/data_batch_5.bin",
                                        "cifar/test_batch.bin"};
    for (int i = 0; i < 5; i++) fuzz_symlink("data_batch_1.bin", links[i]);
    ready = 1;
  }
  fuzz_write("cifar/data_batch_1.bin", data, size);
  char spec[4200];
  snprintf(spec, sizeof spec, "cifar10:%s/cifar", fuzz_tmpdir());
  amd_dataset ds;
  amd_status st = {{0}};
  int rc = amd_dataset_load(spec, &ds, &st);
  if (fuzz_verbose()) fprintf(stderr, "cifar: %s\n", rc ? st.msg : "ok");
  if (rc == 0) amd_dataset_free(&ds);
  return 0;
}

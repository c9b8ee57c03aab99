/* cifar10:DIR — the CIFAR-10 binary version: data_batch_1..5.bin (train) and
 * test_batch.bin, each plain or .gz; records of 1 label byte (0-9) followed by
 * 3072 bytes: R, G, B planes of 32x32, row-major (already CHW). */
#include <string.h>

#include "reader_common.h"
#include "dataset.h"

#define REC_PIX 3072
#define REC_BYTES (1 + REC_PIX)
#define N_CLASSES 10

/* Reads the named files into one split (records appended in file order). */
static int load_files(const char *dir, const char *const *names, int nfiles, amd_data_split *s,
                      amd_status *st) {
  uint8_t *bufs[8] = {0};
  int64_t lens[8] = {0}, total = 0;
  char paths[8][AMD_DATA_PATH_MAX];
  int rc = 0;
  for (int f = 0; f < nfiles && !rc; f++) {
    if (amd_data_find(paths[f], sizeof paths[f], dir, names[f], st) ||
        amd_data_read_all(paths[f], AMD_DATA_MAX_BYTES / 2, &bufs[f], &lens[f], st)) {
      rc = -1;
      break;
    }
    if (lens[f] == 0) {
      rc = amd_fail(st, "%s: empty file", paths[f]);
    } else if (lens[f] % REC_BYTES != 0) {
      rc = amd_fail(st, "%s: truncated: %lld bytes is not a whole number of %d-byte records", paths[f],
                    (long long)lens[f], REC_BYTES);
    } else {
      total += lens[f] / REC_BYTES;
      if (total * REC_PIX > AMD_DATA_MAX_BYTES)
        rc = amd_fail(st, "%s: more than %lld bytes of pixels (limit)", paths[f],
                      (long long)AMD_DATA_MAX_BYTES);
    }
    for (int64_t i = 0; !rc && i < lens[f] / REC_BYTES; i++) {
      uint8_t l = bufs[f][i * REC_BYTES];
      if (l >= N_CLASSES)
        rc = amd_fail(st, "%s: record %lld has label %u (CIFAR-10 labels are 0-9)", paths[f],
                      (long long)i, l);
    }
  }
  if (!rc) {
    s->u8 = malloc((size_t)total * REC_PIX);
    s->labels = malloc((size_t)total * sizeof *s->labels);
    if (!s->u8 || !s->labels) rc = amd_fail(st, "out of memory");
  }
  if (!rc) {
    int64_t k = 0;
    for (int f = 0; f < nfiles; f++)
      for (int64_t i = 0; i < lens[f] / REC_BYTES; i++, k++) {
        s->labels[k] = bufs[f][i * REC_BYTES];
        memcpy(s->u8 + k * REC_PIX, bufs[f] + i * REC_BYTES + 1, REC_PIX);
      }
    s->n = total;
  }
  for (int f = 0; f < nfiles; f++) free(bufs[f]);
  return rc;
}

int amd_dataset_load_cifar10(const char *dir, amd_dataset *ds, amd_status *st) {
  static const char *const train[] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                      "data_batch_4.bin", "data_batch_5.bin"};
  static const char *const test[] = {"test_batch.bin"};
  memset(ds, 0, sizeof *ds);
  ds->format = AMD_DATA_CIFAR10;
  ds->c = 3;
  ds->h = 32;
  ds->w = 32;
  ds->n_classes = N_CLASSES;
  if (load_files(dir, train, 5, &ds->train, st) || load_files(dir, test, 1, &ds->test, st) ||
      amd_data_set_stats(ds, 0, st)) {
    amd_dataset_free(ds);
    return -1;
  }
  return 0;
}

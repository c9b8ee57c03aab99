/* The binary versions of CIFAR-10 and CIFAR-100, each file plain or .gz:
 *   cifar10:DIR   data_batch_1..5.bin (train) and test_batch.bin; records of
 *                 1 label byte (0-9) and 3072 pixel bytes;
 *   cifar100:DIR  train.bin and test.bin; records of a coarse label byte
 *                 (0-19), a fine label byte (0-99: the label used) and 3072
 *                 pixel bytes.
 * Pixels: R, G, B planes of 32x32, row-major (already CHW). */
#include <string.h>

#include "dataset.h"
#include "reader_common.h"

#define REC_PIX 3072

/* A record layout: label_bytes bytes of labels (the one used at label_at),
 * then REC_PIX pixel bytes; labels below n_classes. */
typedef struct cifar_layout {
  const char *name; /* for messages: "CIFAR-10" */
  int label_bytes, label_at;
  int n_classes;
} cifar_layout;

static const cifar_layout cifar10 = {"CIFAR-10", 1, 0, 10};
static const cifar_layout cifar100 = {"CIFAR-100", 2, 1, 100}; /* the fine label */

/* Reads the named files into one split (records appended in file order). */
static int load_files(const char *dir, const char *const *names, int nfiles, const cifar_layout *lay,
                      amd_data_split *s, amd_status *st) {
  const int64_t rec_bytes = lay->label_bytes + REC_PIX;
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
    } else if (lens[f] % rec_bytes != 0) {
      rc = amd_fail(st, "%s: truncated: %lld bytes is not a whole number of %lld-byte records", paths[f],
                    (long long)lens[f], (long long)rec_bytes);
    } else {
      total += lens[f] / rec_bytes;
      if (total * REC_PIX > AMD_DATA_MAX_BYTES)
        rc = amd_fail(st, "%s: more than %lld bytes of pixels (limit)", paths[f],
                      (long long)AMD_DATA_MAX_BYTES);
    }
    for (int64_t i = 0; !rc && i < lens[f] / rec_bytes; i++) {
      uint8_t l = bufs[f][i * rec_bytes + lay->label_at];
      if (l >= lay->n_classes)
        rc = amd_fail(st, "%s: record %lld has label %u (%s labels are 0-%d)", paths[f], (long long)i, l,
                      lay->name, lay->n_classes - 1);
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
      for (int64_t i = 0; i < lens[f] / rec_bytes; i++, k++) {
        s->labels[k] = bufs[f][i * rec_bytes + lay->label_at];
        memcpy(s->u8 + k * REC_PIX, bufs[f] + i * rec_bytes + lay->label_bytes, REC_PIX);
      }
    s->n = total;
  }
  for (int f = 0; f < nfiles; f++) free(bufs[f]);
  return rc;
}

/* Both splits from their files, 3x32x32 images, statistics of the training split. */
static int load_cifar(const char *dir, const cifar_layout *lay, const char *const *train, int n_train,
                      const char *test, amd_dataset *ds, amd_status *st) {
  memset(ds, 0, sizeof *ds);
  ds->c = 3;
  ds->h = 32;
  ds->w = 32;
  ds->n_classes = lay->n_classes;
  if (load_files(dir, train, n_train, lay, &ds->train, st) || load_files(dir, &test, 1, lay, &ds->test, st) ||
      amd_data_set_stats(ds, 0, st)) {
    amd_dataset_free(ds);
    return -1;
  }
  return 0;
}

int amd_dataset_load_cifar10(const char *dir, amd_dataset *ds, amd_status *st) {
  static const char *const train[] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                      "data_batch_4.bin", "data_batch_5.bin"};
  return load_cifar(dir, &cifar10, train, 5, "test_batch.bin", ds, st);
}

int amd_dataset_load_cifar100(const char *dir, amd_dataset *ds, amd_status *st) {
  static const char *const train[] = {"train.bin"};
  return load_cifar(dir, &cifar100, train, 1, "test.bin", ds, st);
}

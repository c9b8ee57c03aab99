/* mnist:DIR — IDX files (MNIST, Fashion-MNIST): big-endian header, images
 * magic 2051 (ubyte, 3 dims: N, rows, cols), labels magic 2049 (ubyte, N).
 * Files may be gzip-compressed (.gz). Pixels stay uint8, one channel. */
#include <string.h>

#include "reader_common.h"
#include "dataset.h"

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Reads one images + labels pair into s; sets *rows / *cols. */
static int load_pair(const char *dir, const char *img_name, const char *lbl_name, amd_data_split *s,
                     int64_t *rows, int64_t *cols, int64_t *max_label, amd_status *st) {
  char ipath[AMD_DATA_PATH_MAX], lpath[AMD_DATA_PATH_MAX];
  if (amd_data_find(ipath, sizeof ipath, dir, img_name, st)) return -1;
  if (amd_data_find(lpath, sizeof lpath, dir, lbl_name, st)) return -1;

  uint8_t *img = NULL, *lbl = NULL;
  int64_t ilen = 0, llen = 0;
  if (amd_data_read_all(ipath, AMD_DATA_MAX_BYTES + 16, &img, &ilen, st)) return -1;
  if (ilen < 16) {
    free(img);
    return amd_fail(st, "%s: truncated IDX header (%lld bytes)", ipath, (long long)ilen);
  }
  uint32_t magic = be32(img);
  if (magic != 2051) {
    free(img);
    return amd_fail(st, "%s: not an IDX image file (magic %u, expected 2051)", ipath, magic);
  }
  int64_t n = be32(img + 4), r = be32(img + 8), c = be32(img + 12);
  if (n == 0 || r == 0 || c == 0) {
    free(img);
    return amd_fail(st, "%s: empty images (header says %lld x %lld x %lld)", ipath, (long long)n,
                    (long long)r, (long long)c);
  }
  if (n > AMD_DATA_MAX_BYTES / c / r) { /* n * r * c > limit, without overflow (each < 2^32) */
    free(img);
    return amd_fail(st, "%s: header asks for %lld x %lld x %lld pixels (more than the %lld-byte limit)",
                    ipath, (long long)n, (long long)r, (long long)c, (long long)AMD_DATA_MAX_BYTES);
  }
  int64_t bytes = n * r * c;
  if (ilen - 16 < bytes) {
    free(img);
    return amd_fail(st, "%s: truncated: header says %lld images of %lldx%lld (%lld bytes), the file has %lld",
                    ipath, (long long)n, (long long)r, (long long)c, (long long)bytes,
                    (long long)(ilen - 16));
  }
  /* keep the buffer: move the pixels to its start and give back the rest */
  memmove(img, img + 16, (size_t)bytes);
  uint8_t *shrunk = realloc(img, (size_t)bytes);
  if (shrunk) img = shrunk;

  if (amd_data_read_all(lpath, AMD_DATA_MAX_BYTES + 8, &lbl, &llen, st)) {
    free(img);
    return -1;
  }
  int rc = 0;
  int64_t ln = 0;
  if (llen < 8) {
    rc = amd_fail(st, "%s: truncated IDX header (%lld bytes)", lpath, (long long)llen);
  } else if (be32(lbl) != 2049) {
    rc = amd_fail(st, "%s: not an IDX label file (magic %u, expected 2049)", lpath, be32(lbl));
  } else if ((ln = be32(lbl + 4)) != n) {
    rc = amd_fail(st, "%s has %lld labels but %s has %lld images", lpath, (long long)ln, ipath,
                  (long long)n);
  } else if (llen - 8 < n) {
    rc = amd_fail(st, "%s: truncated: header says %lld labels, the file has %lld", lpath, (long long)n,
                  (long long)(llen - 8));
  }
  int64_t *labels = NULL;
  if (!rc) {
    labels = malloc((size_t)n * sizeof *labels);
    if (!labels) rc = amd_fail(st, "out of memory");
  }
  if (rc) {
    free(img);
    free(lbl);
    return -1;
  }
  for (int64_t i = 0; i < n; i++) {
    labels[i] = lbl[8 + i];
    if (labels[i] > *max_label) *max_label = labels[i];
  }
  free(lbl);
  s->n = n;
  s->u8 = img;
  s->labels = labels;
  *rows = r;
  *cols = c;
  return 0;
}

int amd_dataset_load_idx(const char *dir, amd_dataset *ds, amd_status *st) {
  memset(ds, 0, sizeof *ds);
  int64_t r = 0, c = 0, tr = 0, tc = 0, max_label = -1;
  if (load_pair(dir, "train-images-idx3-ubyte", "train-labels-idx1-ubyte", &ds->train, &r, &c,
                &max_label, st) ||
      load_pair(dir, "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte", &ds->test, &tr, &tc,
                &max_label, st)) {
    amd_dataset_free(ds);
    return -1;
  }
  if (tr != r || tc != c) {
    amd_fail(st, "mnist:%s: test images are %lldx%lld but training images are %lldx%lld", dir,
             (long long)tr, (long long)tc, (long long)r, (long long)c);
    amd_dataset_free(ds);
    return -1;
  }
  ds->c = 1;
  ds->h = r;
  ds->w = c;
  ds->n_classes = max_label + 1;
  if (amd_data_set_stats(ds, 0, st)) {
    amd_dataset_free(ds);
    return -1;
  }
  return 0;
}

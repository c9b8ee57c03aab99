/* Tests of the data layer (src/data): writes tiny fixtures into a temporary
 * folder at run time (IDX plain and gzip, CIFAR-10 .bin/.bin.gz, a PNG class
 * folder tree written with libpng, TensorProto files) and checks values,
 * labels, statistics, batch normalisation, augmentation and every bad-input
 * case (each must fail with a non-empty message). Exit 0 on success, 1 on any
 * failure. */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <math.h>
#include <png.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../test_check.h"
#include "data/dataset.h"
#include "onnx/tensor_proto.h"

static char root[512];

/* ---------------------------------------------------------------- fixture helpers */

static const char *P(const char *fmt, ...) {
  static char bufs[8][1024];
  static int k = 0;
  char *b = bufs[k++ & 7];
  int n = snprintf(b, 1024, "%s/", root);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(b + n, 1024 - (size_t)n, fmt, ap);
  va_end(ap);
  return b;
}

static void mkdirs(const char *path) {
  char tmp[1024];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++)
    if (*p == '/') {
      *p = 0;
      mkdir(tmp, 0755);
      *p = '/';
    }
  mkdir(tmp, 0755);
}

static void write_bytes(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, n, f) != n) {
    printf("cannot write fixture %s\n", path);
    exit(1);
  }
  fclose(f);
}

static void write_gz(const char *path, const void *data, size_t n) {
  gzFile f = gzopen(path, "wb");
  if (!f || (n && gzwrite(f, data, (unsigned)n) != (int)n)) {
    printf("cannot write fixture %s\n", path);
    exit(1);
  }
  gzclose(f);
}

static void put_be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

static uint8_t pix_value(int64_t i, int64_t k) { return (uint8_t)((i * 37 + k * 11 + 3) & 255); }

/* IDX image file of n r x c images (pixel_value), magic and header count overridable. */
static void write_idx_images(const char *path, int gz, uint32_t magic, uint32_t hdr_n, int64_t n,
                             uint32_t r, uint32_t c) {
  size_t len = 16 + (size_t)(n * r * c);
  uint8_t *b = calloc(len, 1);
  put_be32(b, magic);
  put_be32(b + 4, hdr_n);
  put_be32(b + 8, r);
  put_be32(b + 12, c);
  for (int64_t i = 0; i < n; i++)
    for (int64_t k = 0; k < (int64_t)(r * c); k++) b[16 + i * r * c + k] = pix_value(i, k);
  if (gz) write_gz(path, b, len);
  else write_bytes(path, b, len);
  free(b);
}

static uint8_t label_value(int64_t i) { return (uint8_t)((i * 3 + 1) % 7); }

static void write_idx_labels(const char *path, int gz, uint32_t magic, uint32_t hdr_n, int64_t n) {
  size_t len = 8 + (size_t)n;
  uint8_t *b = calloc(len, 1);
  put_be32(b, magic);
  put_be32(b + 4, hdr_n);
  for (int64_t i = 0; i < n; i++) b[8 + i] = label_value(i);
  if (gz) write_gz(path, b, len);
  else write_bytes(path, b, len);
  free(b);
}

/* A good MNIST-like folder: train 5 images 3x4 (plain or gz), test 2 (gz). */
static void write_idx_dir(const char *dir, int train_gz) {
  char p[1024];
  mkdirs(dir);
  snprintf(p, sizeof p, "%s/train-images-idx3-ubyte%s", dir, train_gz ? ".gz" : "");
  write_idx_images(p, train_gz, 2051, 5, 5, 3, 4);
  snprintf(p, sizeof p, "%s/train-labels-idx1-ubyte%s", dir, train_gz ? ".gz" : "");
  write_idx_labels(p, train_gz, 2049, 5, 5);
  snprintf(p, sizeof p, "%s/t10k-images-idx3-ubyte.gz", dir);
  write_idx_images(p, 1, 2051, 2, 2, 3, 4);
  snprintf(p, sizeof p, "%s/t10k-labels-idx1-ubyte", dir);
  write_idx_labels(p, 0, 2049, 2, 2);
}

static int cifar_label(int64_t file, int64_t i) { return (int)((file * 3 + i) % 10); }
/* Byte k of image i: each colour plane (k / 1024) gets its own offset, so the
 * three planes differ and a reader that swaps or repeats a plane fails. */
static uint8_t cifar_pix(int64_t file, int64_t i, int64_t k) {
  return (uint8_t)((file * 91 + i * 13 + k * 7 + (k / 1024) * 61) & 255);
}

static void write_cifar_file(const char *path, int gz, int64_t file, int64_t n, int bad_label,
                             size_t cut) {
  size_t len = (size_t)n * 3073;
  uint8_t *b = malloc(len);
  for (int64_t i = 0; i < n; i++) {
    b[i * 3073] = (uint8_t)(bad_label && i == n - 1 ? 10 : cifar_label(file, i));
    for (int64_t k = 0; k < 3072; k++) b[i * 3073 + 1 + k] = cifar_pix(file, i, k);
  }
  if (gz) write_gz(path, b, len - cut);
  else write_bytes(path, b, len - cut);
  free(b);
}

static void write_cifar_dir(const char *dir) {
  char p[1024];
  mkdirs(dir);
  for (int f = 1; f <= 5; f++) {
    snprintf(p, sizeof p, "%s/data_batch_%d.bin%s", dir, f, f % 2 ? ".gz" : "");
    write_cifar_file(p, f % 2, f, 2, 0, 0);
  }
  snprintf(p, sizeof p, "%s/test_batch.bin", dir);
  write_cifar_file(p, 0, 6, 3, 0, 0);
}

/* PNG writer: w x h, color type, bit depth; pixel(x, y, ch) from a formula. */
static uint8_t png_pix(int seed, int x, int y, int ch) { return (uint8_t)(seed * 29 + y * 17 + x * 5 + ch * 60 + 1); }
/* A 16-bit PNG's sample: grey alone has values below 256 (every other pixel)
 * and above; the other types png_pix as the high byte over a low byte that
 * is not zero. */
static unsigned png_pix16(int seed, int x, int y, int ch, int ctype) {
  const unsigned v = png_pix(seed, x, y, ch);
  if (ctype == PNG_COLOR_TYPE_GRAY) return (x + y) % 2 ? v * 256 + 7 : v;
  return v * 256 + (v * 7 + 3) % 256;
}

static void write_png_il(const char *path, int w, int h, int ctype, int depth, int seed, int interlace) {
  FILE *f = fopen(path, "wb");
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png_create_info_struct(png);
  if (!f || !png || !info || setjmp(png_jmpbuf(png))) {
    printf("cannot write PNG %s\n", path);
    exit(1);
  }
  png_init_io(png, f);
  png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, depth, ctype,
               interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (ctype == PNG_COLOR_TYPE_PALETTE) {
    png_color pal[4];
    for (int i = 0; i < 4; i++) {
      pal[i].red = (png_byte)(i * 60 + 10);
      pal[i].green = (png_byte)(i * 30 + 20);
      pal[i].blue = (png_byte)(250 - i * 40);
    }
    png_set_PLTE(png, info, pal, 4);
  }
  png_write_info(png, info);
  int passes = png_set_interlace_handling(png);
  int ch = ctype == PNG_COLOR_TYPE_RGB ? 3 : ctype == PNG_COLOR_TYPE_RGBA ? 4
          : ctype == PNG_COLOR_TYPE_GRAY_ALPHA ? 2 : 1;
  int bytes_per = depth == 16 ? 2 : 1;
  png_bytep row = calloc((size_t)(w * ch * bytes_per), 1);
  for (int pass = 0; pass < passes; pass++)
  for (int y = 0; y < h; y++) {
    for (int x = 0; x < w; x++)
      for (int c = 0; c < ch; c++) {
        uint8_t v = ctype == PNG_COLOR_TYPE_PALETTE ? (uint8_t)((x + y) % 4) : png_pix(seed, x, y, c);
        if (depth == 16) {
          const unsigned v16 = png_pix16(seed, x, y, c, ctype);
          row[(x * ch + c) * 2] = (png_byte)(v16 >> 8);
          row[(x * ch + c) * 2 + 1] = (png_byte)(v16 & 255);
        } else {
          row[x * ch + c] = v;
        }
      }
    png_write_row(png, row);
  }
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  free(row);
  fclose(f);
}

static void write_png(const char *path, int w, int h, int ctype, int depth, int seed) {
  write_png_il(path, w, h, ctype, depth, seed, 0);
}

static void write_tensor(const char *path, amd_dtype dt, int rank, const int64_t *dims,
                         const double *vals) {
  amd_tensor t = {0};
  amd_status st = {{0}};
  amd_tensor_set_shape(&t, dt, rank, dims);
  if (amd_tensor_alloc(&t, &st)) {
    printf("alloc: %s\n", st.msg);
    exit(1);
  }
  int64_t n = amd_tensor_numel(&t);
  for (int64_t i = 0; i < n; i++) amd_tensor_set_f64(&t, i, vals[i]);
  if (amd_tensor_write_file(path, &t, "t", &st)) {
    printf("write: %s\n", st.msg);
    exit(1);
  }
  amd_tensor_free(&t);
}

/* Loading must fail with a message and leave ds zeroed. */
static void expect_fail(const char *spec, const char *what) {
  amd_dataset ds;
  amd_status st = {{0}};
  memset(&ds, 0x5a, sizeof ds);
  int rc = amd_dataset_load(spec, &ds, &st);
  CHECK(rc == -1, "%s: load of %s succeeded", what, spec);
  CHECK(st.msg[0] != 0, "%s: empty error message", what);
  CHECK(ds.train.u8 == NULL && ds.train.labels == NULL && ds.mean == NULL && ds.class_names == NULL,
        "%s: data set not emptied", what);
  printf("  ok (%s): %s\n", what, st.msg);
  if (rc == 0) amd_dataset_free(&ds);
}

static int load_ok(const char *spec, amd_dataset *ds) {
  amd_status st = {{0}};
  int rc = amd_dataset_load(spec, ds, &st);
  CHECK(rc == 0, "load %s: %s", spec, st.msg);
  return rc;
}

/* Exact mean/std of x/255 over a uint8 split, per channel, the slow way. */
static void naive_stats(const amd_data_split *s, int64_t c, int64_t hw, int64_t ch, double *m,
                        double *sd) {
  double sum = 0, cnt = (double)s->n * (double)hw;
  for (int64_t i = 0; i < s->n; i++)
    for (int64_t k = 0; k < hw; k++) sum += s->u8[(i * c + ch) * hw + k] / 255.0;
  *m = sum / cnt;
  double v = 0;
  for (int64_t i = 0; i < s->n; i++)
    for (int64_t k = 0; k < hw; k++) {
      double d = s->u8[(i * c + ch) * hw + k] / 255.0 - *m;
      v += d * d;
    }
  *sd = sqrt(v / cnt);
}

/* ---------------------------------------------------------------- IDX */

static void test_idx(void) {
  printf("idx\n");
  for (int gz = 0; gz <= 1; gz++) {
    const char *dir = P("idx%d", gz);
    write_idx_dir(dir, gz);
    char spec[1100];
    snprintf(spec, sizeof spec, "mnist:%s", dir);
    amd_dataset ds;
    if (load_ok(spec, &ds)) continue;
    CHECK(ds.format == AMD_DATA_IDX, "format");
    CHECK(ds.c == 1 && ds.h == 3 && ds.w == 4, "shape %lldx%lldx%lld", (long long)ds.c, (long long)ds.h,
          (long long)ds.w);
    CHECK(ds.train.n == 5 && ds.test.n == 2, "counts %lld %lld", (long long)ds.train.n,
          (long long)ds.test.n);
    int64_t maxl = 0;
    for (int64_t i = 0; i < 5; i++) {
      CHECK(ds.train.labels[i] == label_value(i), "train label %lld", (long long)i);
      if (label_value(i) > maxl) maxl = label_value(i);
      for (int64_t k = 0; k < 12; k++)
        CHECK(ds.train.u8[i * 12 + k] == pix_value(i, k), "train pixel %lld,%lld", (long long)i,
              (long long)k);
    }
    for (int64_t i = 0; i < 2; i++) {
      CHECK(ds.test.labels[i] == label_value(i), "test label");
      for (int64_t k = 0; k < 12; k++) CHECK(ds.test.u8[i * 12 + k] == pix_value(i, k), "test pixel");
    }
    CHECK(ds.n_classes == maxl + 1, "n_classes %lld, expected %lld", (long long)ds.n_classes,
          (long long)maxl + 1);
    double m, sd;
    naive_stats(&ds.train, 1, 12, 0, &m, &sd);
    CHECK(fabs(ds.mean[0] - m) < 1e-6 && fabs(ds.std[0] - sd) < 1e-6, "stats %g %g vs %g %g",
          ds.mean[0], ds.std[0], m, sd);
    char line[256];
    printf("  %s\n", amd_dataset_describe(&ds, line, sizeof line));
    amd_dataset_free(&ds);
    CHECK(ds.train.u8 == NULL && ds.mean == NULL, "free zeroes");
    amd_dataset_free(&ds); /* twice is harmless */
  }

  /* bad inputs: one folder per case, starting from a good one */
  char spec[1100];
  snprintf(spec, sizeof spec, "mnist:%s", P("no_such_dir"));
  expect_fail(spec, "missing folder");

  const char *d = P("idx_nolabels");
  write_idx_dir(d, 0);
  unlink(P("idx_nolabels/train-labels-idx1-ubyte"));
  snprintf(spec, sizeof spec, "mnist:%s", d);
  expect_fail(spec, "missing label file");

  d = P("idx_magic");
  write_idx_dir(d, 0);
  write_idx_images(P("idx_magic/train-images-idx3-ubyte"), 0, 2049, 5, 5, 3, 4);
  snprintf(spec, sizeof spec, "mnist:%s", d);
  expect_fail(spec, "wrong image magic");

  d = P("idx_lmagic");
  write_idx_dir(d, 1);
  write_idx_labels(P("idx_lmagic/train-labels-idx1-ubyte.gz"), 1, 2051, 5, 5);
  snprintf(spec, sizeof spec, "mnist:%s", d);
  expect_fail(spec, "wrong label magic");

  d = P("idx_trunc");
  write_idx_dir(d, 0);
  write_idx_images(P("idx_trunc/train-images-idx3-ubyte"), 0, 2051, 5, 4, 3, 4);
  snprintf(spec, sizeof spec, "mnist:%s", d);
  expect_fail(spec, "truncated images");

  d = P("idx_truncl");
  write_idx_dir(d, 1);
  write_idx_labels(P("idx_truncl/train-labels-idx1-ubyte.gz"), 1, 2049, 5, 3);
  snprintf(spec, sizeof spec, "mnist:%s", d);
  expect_fail(spec, "truncated labels");

  d = P("idx_hdr");
  write_idx_dir(d, 0);
  write_bytes(P("idx_hdr/train-images-idx3-ubyte"), "\0\0\x08\x03\0\0", 6);
  snprintf(spec, sizeof spec, "mnist:%s", d);
  expect_fail(spec, "truncated header");

  d = P("idx_count");
  write_idx_dir(d, 0);
  write_idx_labels(P("idx_count/train-labels-idx1-ubyte"), 0, 2049, 4, 4);
  snprintf(spec, sizeof spec, "mnist:%s", d);
  expect_fail(spec, "image/label count mismatch");

  d = P("idx_huge");
  write_idx_dir(d, 0);
  write_idx_images(P("idx_huge/train-images-idx3-ubyte"), 0, 2051, 0x7fffffff, 1, 1000, 1000);
  snprintf(spec, sizeof spec, "mnist:%s", d);
  expect_fail(spec, "header over the size limit");

  d = P("idx_empty");
  write_idx_dir(d, 0);
  write_idx_images(P("idx_empty/train-images-idx3-ubyte"), 0, 2051, 0, 0, 3, 4);
  snprintf(spec, sizeof spec, "mnist:%s", d);
  expect_fail(spec, "zero images");

  d = P("idx_testsize");
  write_idx_dir(d, 0);
  write_idx_images(P("idx_testsize/t10k-images-idx3-ubyte.gz"), 1, 2051, 2, 2, 4, 3);
  snprintf(spec, sizeof spec, "mnist:%s", d);
  expect_fail(spec, "test images of another size");

  /* a gzip stream cut in the middle */
  d = P("idx_gzcut");
  write_idx_dir(d, 1);
  {
    uint8_t *b;
    int64_t n = 16 + 5 * 12;
    b = malloc((size_t)n);
    put_be32(b, 2051);
    put_be32(b + 4, 5);
    put_be32(b + 8, 3);
    put_be32(b + 12, 4);
    for (int64_t i = 16; i < n; i++) b[i] = (uint8_t)(i * 7919 % 251);
    uLongf clen = compressBound((uLong)n) + 64;
    uint8_t *cb = malloc(clen);
    /* write a proper gzip file, then keep only its first half */
    write_gz(P("idx_gzcut/train-images-idx3-ubyte.gz"), b, (size_t)n);
    FILE *f = fopen(P("idx_gzcut/train-images-idx3-ubyte.gz"), "rb");
    size_t got = fread(cb, 1, clen, f);
    fclose(f);
    write_bytes(P("idx_gzcut/train-images-idx3-ubyte.gz"), cb, got / 2);
    free(cb);
    free(b);
  }
  snprintf(spec, sizeof spec, "mnist:%s", d);
  expect_fail(spec, "truncated gzip");
}

/* ---------------------------------------------------------------- CIFAR */

static void test_cifar(void) {
  printf("cifar10\n");
  const char *dir = P("cifar");
  write_cifar_dir(dir);
  char spec[1100];
  snprintf(spec, sizeof spec, "cifar10:%s", dir);
  amd_dataset ds;
  if (!load_ok(spec, &ds)) {
    CHECK(ds.c == 3 && ds.h == 32 && ds.w == 32 && ds.n_classes == 10, "shape");
    CHECK(ds.train.n == 10 && ds.test.n == 3, "counts %lld %lld", (long long)ds.train.n,
          (long long)ds.test.n);
    int bad = 0;
    for (int64_t f = 1; f <= 5; f++)
      for (int64_t i = 0; i < 2; i++) {
        int64_t s = (f - 1) * 2 + i;
        if (ds.train.labels[s] != cifar_label(f, i)) bad++;
        for (int64_t k = 0; k < 3072; k++)
          if (ds.train.u8[s * 3072 + k] != cifar_pix(f, i, k)) bad++;
      }
    for (int64_t i = 0; i < 3; i++) {
      if (ds.test.labels[i] != cifar_label(6, i)) bad++;
      for (int64_t k = 0; k < 3072; k++)
        if (ds.test.u8[i * 3072 + k] != cifar_pix(6, i, k)) bad++;
    }
    CHECK(bad == 0, "%d wrong values/labels", bad);
    for (int ch = 0; ch < 3; ch++) {
      double m, sd;
      naive_stats(&ds.train, 3, 1024, ch, &m, &sd);
      CHECK(fabs(ds.mean[ch] - m) < 1e-6 && fabs(ds.std[ch] - sd) < 1e-6, "stats ch %d", ch);
    }
    amd_dataset_free(&ds);
  }

  const char *d = P("cifar_label");
  write_cifar_dir(d);
  write_cifar_file(P("cifar_label/data_batch_2.bin"), 0, 2, 2, 1, 0);
  snprintf(spec, sizeof spec, "cifar10:%s", d);
  expect_fail(spec, "label >= 10");

  d = P("cifar_trunc");
  write_cifar_dir(d);
  write_cifar_file(P("cifar_trunc/test_batch.bin"), 0, 6, 3, 0, 100);
  snprintf(spec, sizeof spec, "cifar10:%s", d);
  expect_fail(spec, "truncated record");

  d = P("cifar_missing");
  write_cifar_dir(d);
  unlink(P("cifar_missing/data_batch_3.bin.gz"));
  snprintf(spec, sizeof spec, "cifar10:%s", d);
  expect_fail(spec, "missing batch file");

  d = P("cifar_empty");
  write_cifar_dir(d);
  write_bytes(P("cifar_empty/data_batch_4.bin"), "", 0);
  snprintf(spec, sizeof spec, "cifar10:%s", d);
  expect_fail(spec, "empty batch file");

  snprintf(spec, sizeof spec, "cifar10:%s", P("nope"));
  expect_fail(spec, "missing folder");
}

/* ---------------------------------------------------------------- CIFAR-100 */

/* Record i of a CIFAR-100 file: coarse label, fine label (the class), pixels. */
static int c100_fine(int64_t file, int64_t i) { return (int)((file * 37 + i * 11) % 100); }
static int c100_coarse(int64_t file, int64_t i) { return (int)((file + i) % 20); }

static void write_c100_file(const char *path, int gz, int64_t file, int64_t n, int bad_fine, size_t cut) {
  size_t len = (size_t)n * 3074;
  uint8_t *b = malloc(len);
  for (int64_t i = 0; i < n; i++) {
    b[i * 3074] = (uint8_t)c100_coarse(file, i);
    b[i * 3074 + 1] = (uint8_t)(bad_fine && i == n - 1 ? 100 : c100_fine(file, i));
    for (int64_t k = 0; k < 3072; k++) b[i * 3074 + 2 + k] = cifar_pix(file, i, k);
  }
  if (gz) write_gz(path, b, len - cut);
  else write_bytes(path, b, len - cut);
  free(b);
}

static void test_cifar100(void) {
  printf("cifar100\n");
  const char *dir = P("c100");
  mkdirs(dir);
  write_c100_file(P("c100/train.bin.gz"), 1, 1, 5, 0, 0);
  write_c100_file(P("c100/test.bin"), 0, 2, 3, 0, 0);
  char spec[1100];
  snprintf(spec, sizeof spec, "cifar100:%s", dir);
  amd_dataset ds;
  if (!load_ok(spec, &ds)) {
    CHECK(ds.format == AMD_DATA_CIFAR100 && !strcmp(amd_data_format_name(ds.format), "cifar100"), "format");
    CHECK(ds.c == 3 && ds.h == 32 && ds.w == 32 && ds.n_classes == 100, "shape / classes");
    CHECK(ds.train.n == 5 && ds.test.n == 3, "counts %lld %lld", (long long)ds.train.n, (long long)ds.test.n);
    int bad = 0;
    for (int64_t i = 0; i < 5; i++) {
      if (ds.train.labels[i] != c100_fine(1, i)) bad++;
      for (int64_t k = 0; k < 3072; k++) bad += ds.train.u8[i * 3072 + k] != cifar_pix(1, i, k);
    }
    for (int64_t i = 0; i < 3; i++) {
      if (ds.test.labels[i] != c100_fine(2, i)) bad++;
      for (int64_t k = 0; k < 3072; k++) bad += ds.test.u8[i * 3072 + k] != cifar_pix(2, i, k);
    }
    CHECK(bad == 0, "%d wrong values/labels (the fine label is the class)", bad);
    for (int ch = 0; ch < 3; ch++) {
      double m, sd;
      naive_stats(&ds.train, 3, 1024, ch, &m, &sd);
      CHECK(fabs(ds.mean[ch] - m) < 1e-6 && fabs(ds.std[ch] - sd) < 1e-6, "stats ch %d", ch);
    }
    amd_dataset_free(&ds);
  }
  const char *d = P("c100_label");
  mkdirs(d);
  write_c100_file(P("c100_label/train.bin"), 0, 1, 4, 1, 0);
  write_c100_file(P("c100_label/test.bin"), 0, 2, 3, 0, 0);
  snprintf(spec, sizeof spec, "cifar100:%s", d);
  expect_fail(spec, "fine label >= 100");
  d = P("c100_trunc");
  mkdirs(d);
  write_c100_file(P("c100_trunc/train.bin"), 0, 1, 4, 0, 0);
  write_c100_file(P("c100_trunc/test.bin"), 0, 2, 3, 0, 1);
  snprintf(spec, sizeof spec, "cifar100:%s", d);
  expect_fail(spec, "truncated record");
  /* CIFAR-10's files are not CIFAR-100's */
  snprintf(spec, sizeof spec, "cifar100:%s", P("cifar"));
  expect_fail(spec, "a CIFAR-10 folder");
}

/* ---------------------------------------------------------------- PNG folders */

static void write_png_tree(const char *dir) {
  char p[1024];
  const char *dirs[] = {"train/cat", "train/dog", "test/cat", "test/dog"};
  for (int i = 0; i < 4; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, dirs[i]);
    mkdirs(p);
  }
  /* class folders created in reverse order on purpose: labels follow the names */
  snprintf(p, sizeof p, "%s/train/dog/c.png", dir);
  write_png(p, 5, 4, PNG_COLOR_TYPE_RGBA, 8, 3);
  snprintf(p, sizeof p, "%s/train/cat/b.png", dir);
  write_png(p, 5, 4, PNG_COLOR_TYPE_RGB, 8, 2);
  snprintf(p, sizeof p, "%s/train/cat/a.png", dir);
  write_png(p, 5, 4, PNG_COLOR_TYPE_RGB, 8, 1);
  snprintf(p, sizeof p, "%s/train/cat/notes.txt", dir);
  write_bytes(p, "skip me", 7);
  snprintf(p, sizeof p, "%s/test/cat/x.png", dir);
  write_png_il(p, 5, 4, PNG_COLOR_TYPE_RGB, 8, 4, 1); /* Adam7 */
  snprintf(p, sizeof p, "%s/test/dog/y.png", dir);
  write_png(p, 5, 4, PNG_COLOR_TYPE_PALETTE, 8, 0);
}

static int check_rgb(const uint8_t *chw, int seed, int w, int h) {
  int bad = 0;
  for (int c = 0; c < 3; c++)
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++)
        if (chw[c * w * h + y * w + x] != png_pix(seed, x, y, c)) bad++;
  return bad;
}

static void test_png(void) {
  printf("images\n");
  const char *dir = P("png");
  write_png_tree(dir);
  char spec[1100];
  snprintf(spec, sizeof spec, "images:%s", dir);
  amd_dataset ds;
  if (!load_ok(spec, &ds)) {
    CHECK(ds.c == 3 && ds.h == 4 && ds.w == 5, "shape %lldx%lldx%lld", (long long)ds.c,
          (long long)ds.h, (long long)ds.w);
    CHECK(ds.n_classes == 2 && !strcmp(ds.class_names[0], "cat") && !strcmp(ds.class_names[1], "dog"),
          "classes");
    CHECK(ds.train.n == 3 && ds.test.n == 2, "counts");
    CHECK(ds.train.labels[0] == 0 && ds.train.labels[1] == 0 && ds.train.labels[2] == 1, "labels");
    CHECK(ds.test.labels[0] == 0 && ds.test.labels[1] == 1, "test labels");
    CHECK(check_rgb(ds.train.u8, 1, 5, 4) == 0, "a.png pixels (first in name order)");
    CHECK(check_rgb(ds.train.u8 + 60, 2, 5, 4) == 0, "b.png pixels");
    CHECK(check_rgb(ds.train.u8 + 120, 3, 5, 4) == 0, "c.png pixels (RGBA, alpha dropped)");
    CHECK(check_rgb(ds.test.u8, 4, 5, 4) == 0, "x.png pixels (interlaced)");
    /* palette image: index (x+y)%4 -> colour */
    int bad = 0;
    for (int y = 0; y < 4; y++)
      for (int x = 0; x < 5; x++) {
        int i = (x + y) % 4;
        const uint8_t *t = ds.test.u8 + 60;
        if (t[y * 5 + x] != i * 60 + 10 || t[20 + y * 5 + x] != i * 30 + 20 ||
            t[40 + y * 5 + x] != 250 - i * 40)
          bad++;
      }
    CHECK(bad == 0, "palette pixels");
    for (int ch = 0; ch < 3; ch++) {
      double m, sd;
      naive_stats(&ds.train, 3, 20, ch, &m, &sd);
      CHECK(fabs(ds.mean[ch] - m) < 1e-6 && fabs(ds.std[ch] - sd) < 1e-6, "stats ch %d", ch);
    }
    amd_dataset_free(&ds);
  }

  /* gray, 8-bit and 4-bit */
  const char *g = P("png_gray");
  mkdirs(P("png_gray/train/0"));
  mkdirs(P("png_gray/test/0"));
  write_png(P("png_gray/train/0/a.png"), 3, 2, PNG_COLOR_TYPE_GRAY, 8, 5);
  write_png(P("png_gray/test/0/b.png"), 3, 2, PNG_COLOR_TYPE_GRAY_ALPHA, 8, 6);
  snprintf(spec, sizeof spec, "images:%s", g);
  if (!load_ok(spec, &ds)) {
    CHECK(ds.c == 1 && ds.h == 2 && ds.w == 3 && ds.n_classes == 1, "gray shape");
    int bad = 0;
    for (int y = 0; y < 2; y++)
      for (int x = 0; x < 3; x++) {
        if (ds.train.u8[y * 3 + x] != png_pix(5, x, y, 0)) bad++;
        if (ds.test.u8[y * 3 + x] != png_pix(6, x, y, 0)) bad++;
      }
    CHECK(bad == 0, "gray pixels");
    amd_dataset_free(&ds);
  }

  /* bad inputs */
  const char *d = P("png_size");
  write_png_tree(d);
  write_png(P("png_size/test/dog/z.png"), 6, 4, PNG_COLOR_TYPE_RGB, 8, 1);
  snprintf(spec, sizeof spec, "images:%s", d);
  expect_fail(spec, "image of another size");

  /* 16-bit PNGs as PIL 9.4 + convert('RGB'): colour, RGBA and grey+alpha the
   * high byte, grey alone clipped at 255 */
  static const int types16[4] = {PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGBA, PNG_COLOR_TYPE_GRAY_ALPHA,
                                 PNG_COLOR_TYPE_GRAY};
  for (int k = 0; k < 4; k++) {
    mkdirs(P("png16_%d/0", k)); /* one split: a class folder */
    write_png_il(P("png16_%d/0/a.png", k), 5, 4, types16[k], 16, 3, k == 3); /* the grey one interlaced */
    snprintf(spec, sizeof spec, "images:%s", P("png16_%d", k));
    const int colour = types16[k] & PNG_COLOR_MASK_COLOR;
    if (!load_ok(spec, &ds)) {
      int bad = 0;
      for (int ch = 0; ch < (colour ? 3 : 1); ch++)
        for (int y = 0; y < 4; y++)
          for (int x = 0; x < 5; x++) {
            const unsigned v16 = png_pix16(3, x, y, ch, types16[k]);
            const unsigned want = types16[k] == PNG_COLOR_TYPE_GRAY ? (v16 > 255 ? 255 : v16) : v16 >> 8;
            bad += ds.train.u8[ch * 20 + y * 5 + x] != want;
          }
      CHECK(ds.c == (colour ? 3 : 1) && bad == 0, "16-bit PNG colour type %d: %d pixels differ", types16[k], bad);
      amd_dataset_free(&ds);
    }
  }

  d = P("png_chan");
  write_png_tree(d);
  write_png(P("png_chan/train/dog/c.png"), 5, 4, PNG_COLOR_TYPE_GRAY, 8, 1);
  snprintf(spec, sizeof spec, "images:%s", d);
  /* a grey image in a colour set is replicated to RGB (PIL's convert('RGB')) */
  if (!load_ok(spec, &ds)) {
    int bad = 0;
    const uint8_t *t = ds.train.u8 + 2 * 60; /* train/dog/c.png */
    for (int y = 0; y < 4; y++)
      for (int x = 0; x < 5; x++)
        for (int ch = 0; ch < 3; ch++) bad += t[ch * 20 + y * 5 + x] != png_pix(1, x, y, 0);
    CHECK(ds.c == 3 && bad == 0, "gray among RGB: replicated to 3 channels");
    amd_dataset_free(&ds);
  }

  d = P("png_emptyclass");
  write_png_tree(d);
  mkdirs(P("png_emptyclass/train/eel"));
  snprintf(spec, sizeof spec, "images:%s", d);
  expect_fail(spec, "empty class folder");

  d = P("png_notest");
  write_png_tree(d);
  unlink(P("png_notest/test/cat/x.png"));
  unlink(P("png_notest/test/dog/y.png"));
  rmdir(P("png_notest/test/cat"));
  rmdir(P("png_notest/test/dog"));
  rmdir(P("png_notest/test"));
  snprintf(spec, sizeof spec, "images:%s", d);
  expect_fail(spec, "missing test folder");

  d = P("png_junk");
  write_png_tree(d);
  write_bytes(P("png_junk/train/cat/b.png"), "GIF89a....", 10);
  snprintf(spec, sizeof spec, "images:%s", d);
  expect_fail(spec, "not a PNG");

  d = P("png_corrupt");
  write_png_tree(d);
  {
    FILE *f = fopen(P("png_corrupt/train/cat/a.png"), "rb");
    uint8_t buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    write_bytes(P("png_corrupt/train/cat/a.png"), buf, n - 20 > 40 ? 40 : n - 20);
  }
  snprintf(spec, sizeof spec, "images:%s", d);
  expect_fail(spec, "truncated PNG");

  d = P("png_extraclass");
  write_png_tree(d);
  mkdirs(P("png_extraclass/test/emu"));
  write_png(P("png_extraclass/test/emu/e.png"), 5, 4, PNG_COLOR_TYPE_RGB, 8, 1);
  snprintf(spec, sizeof spec, "images:%s", d);
  expect_fail(spec, "test class not in train");

  mkdirs(P("png_noclasses/train"));
  mkdirs(P("png_noclasses/test"));
  snprintf(spec, sizeof spec, "images:%s", P("png_noclasses"));
  expect_fail(spec, "no class folders");

  snprintf(spec, sizeof spec, "images:%s", P("nope"));
  expect_fail(spec, "missing folder");
}

/* ---------------------------------------------------------------- tensors */

static void test_tensors(void) {
  printf("tensors\n");
  int64_t xd[4] = {4, 2, 3, 3}, yd[1] = {4}, xtd[4] = {2, 2, 3, 3}, ytd[1] = {2};
  double xv[72], yv[4] = {0, 2, 1, 2}, ytv[2] = {3, 0};
  for (int i = 0; i < 72; i++) xv[i] = 0.25 * i - 3.5 + (i % 2 ? 0.125 : 0);
  write_tensor(P("x.pb"), AMD_FLOAT, 4, xd, xv);
  write_tensor(P("y.pb"), AMD_INT64, 1, yd, yv);
  write_tensor(P("y32.pb"), AMD_INT32, 1, yd, yv);
  write_tensor(P("xt.pb"), AMD_FLOAT, 4, xtd, xv);
  write_tensor(P("yt.pb"), AMD_INT64, 1, ytd, ytv);

  char spec[4200];
  amd_dataset ds;
  snprintf(spec, sizeof spec, "tensors:%s,%s", P("x.pb"), P("y.pb"));
  if (!load_ok(spec, &ds)) {
    CHECK(ds.c == 2 && ds.h == 3 && ds.w == 3 && ds.train.n == 4 && ds.test.n == 4, "shape");
    CHECK(ds.test_is_train && ds.test.f32 == ds.train.f32, "test is train");
    CHECK(ds.n_classes == 3, "n_classes %lld", (long long)ds.n_classes);
    int bad = 0;
    for (int i = 0; i < 72; i++)
      if (ds.train.f32[i] != (float)xv[i]) bad++;
    for (int i = 0; i < 4; i++)
      if (ds.train.labels[i] != (int64_t)yv[i]) bad++;
    CHECK(bad == 0, "values");
    CHECK(ds.mean[0] == 0 && ds.std[1] == 1, "identity normalisation");
    /* batch: identity normalisation gives the values back */
    float x[2 * 18];
    int64_t y[2], idx[2] = {3, 1};
    amd_dataset_batch(&ds, &ds.test, idx, 2, NULL, NULL, x, y);
    bad = 0;
    for (int k = 0; k < 18; k++)
      if (x[k] != (float)xv[3 * 18 + k] || x[18 + k] != (float)xv[18 + k]) bad++;
    CHECK(bad == 0 && y[0] == 2 && y[1] == 2, "tensor batch");
    amd_dataset_free(&ds);
  }
  snprintf(spec, sizeof spec, "tensors:%s,%s,%s,%s", P("x.pb"), P("y32.pb"), P("xt.pb"), P("yt.pb"));
  if (!load_ok(spec, &ds)) {
    CHECK(!ds.test_is_train && ds.test.n == 2 && ds.train.n == 4, "separate test pair");
    CHECK(ds.n_classes == 4, "n_classes over both splits: %lld", (long long)ds.n_classes);
    CHECK(ds.train.labels[1] == 2 && ds.test.labels[0] == 3, "int32 labels");
    amd_dataset_free(&ds);
  }

  /* bad inputs */
  write_tensor(P("xi.pb"), AMD_INT64, 4, xd, xv);
  snprintf(spec, sizeof spec, "tensors:%s,%s", P("xi.pb"), P("y.pb"));
  expect_fail(spec, "int64 inputs");
  int64_t x2d[2] = {4, 18};
  write_tensor(P("x2.pb"), AMD_FLOAT, 2, x2d, xv);
  snprintf(spec, sizeof spec, "tensors:%s,%s", P("x2.pb"), P("y.pb"));
  expect_fail(spec, "rank-2 inputs");
  snprintf(spec, sizeof spec, "tensors:%s,%s", P("x.pb"), P("yt.pb"));
  expect_fail(spec, "label count mismatch");
  double yneg[4] = {0, -1, 1, 1};
  write_tensor(P("yneg.pb"), AMD_INT64, 1, yd, yneg);
  snprintf(spec, sizeof spec, "tensors:%s,%s", P("x.pb"), P("yneg.pb"));
  expect_fail(spec, "negative label");
  write_tensor(P("yf.pb"), AMD_FLOAT, 1, yd, yv);
  snprintf(spec, sizeof spec, "tensors:%s,%s", P("x.pb"), P("yf.pb"));
  expect_fail(spec, "float labels");
  double xnan[72];
  memcpy(xnan, xv, sizeof xnan);
  xnan[40] = NAN;
  write_tensor(P("xnan.pb"), AMD_FLOAT, 4, xd, xnan);
  snprintf(spec, sizeof spec, "tensors:%s,%s", P("xnan.pb"), P("y.pb"));
  expect_fail(spec, "NaN input");
  int64_t xod[4] = {2, 2, 3, 2};
  write_tensor(P("xo.pb"), AMD_FLOAT, 4, xod, xv);
  write_tensor(P("yo.pb"), AMD_INT64, 1, ytd, ytv);
  snprintf(spec, sizeof spec, "tensors:%s,%s,%s,%s", P("x.pb"), P("y.pb"), P("xo.pb"), P("yo.pb"));
  expect_fail(spec, "test samples of another shape");
  snprintf(spec, sizeof spec, "tensors:%s,%s", P("x.pb"), P("missing.pb"));
  expect_fail(spec, "missing label file");
  write_bytes(P("junk.pb"), "\xff\xff\xff\xff\xff", 5);
  snprintf(spec, sizeof spec, "tensors:%s,%s", P("junk.pb"), P("y.pb"));
  expect_fail(spec, "not a TensorProto");
  snprintf(spec, sizeof spec, "tensors:%s", P("x.pb"));
  expect_fail(spec, "one file");
  snprintf(spec, sizeof spec, "tensors:%s,%s,%s", P("x.pb"), P("y.pb"), P("xt.pb"));
  expect_fail(spec, "three files");
  expect_fail("bogus:/tmp", "unknown format");
  expect_fail("mnist", "no colon");
  expect_fail("mnist:", "no folder");
  expect_fail(NULL, "NULL spec");
}

/* ---------------------------------------------------------------- batches and augmentation */

enum { TN = 16, TC = 2, TH = 6, TW = 5, THW = TH * TW, TCHW = TC * THW };

static void make_synthetic(amd_dataset *ds, uint8_t *pix, int64_t *labels, float *mean, float *std) {
  memset(ds, 0, sizeof *ds);
  for (int i = 0; i < TN * TCHW; i++) pix[i] = (uint8_t)(1 + (i * 97) % 254); /* never 0 */
  for (int i = 0; i < TN; i++) labels[i] = i % 3;
  mean[0] = 0.5f;
  std[0] = 0.25f;
  mean[1] = 0.4f;
  std[1] = 0.2f;
  ds->format = AMD_DATA_IDX;
  ds->c = TC;
  ds->h = TH;
  ds->w = TW;
  ds->n_classes = 3;
  ds->mean = mean;
  ds->std = std;
  ds->train.n = TN;
  ds->train.u8 = pix;
  ds->train.labels = labels;
}

static float ref_norm(const amd_dataset *ds, int64_t s, int c, int y, int x) {
  uint8_t v = ds->train.u8[s * TCHW + c * THW + y * TW + x];
  return (float)(((double)v / 255.0 - ds->mean[c]) / ds->std[c]);
}

static void test_batches(void) {
  printf("batches\n");
  static uint8_t pix[TN * TCHW];
  int64_t labels[TN], idx[TN];
  float mean[TC], std[TC];
  amd_dataset ds;
  make_synthetic(&ds, pix, labels, mean, std);
  for (int i = 0; i < TN; i++) idx[i] = (i * 5 + 3) % TN;
  static float x0[TN * TCHW], x1[TN * TCHW], x2[TN * TCHW];
  int64_t y[TN];

  /* plain normalisation */
  amd_dataset_batch(&ds, &ds.train, idx, TN, NULL, NULL, x0, y);
  double maxd = 0;
  int badl = 0;
  for (int b = 0; b < TN; b++) {
    if (y[b] != labels[idx[b]]) badl++;
    for (int c = 0; c < TC; c++)
      for (int i = 0; i < TH; i++)
        for (int j = 0; j < TW; j++) {
          double d = fabs(x0[b * TCHW + c * THW + i * TW + j] - ref_norm(&ds, idx[b], c, i, j));
          if (d > maxd) maxd = d;
        }
  }
  CHECK(badl == 0, "batch labels");
  CHECK(maxd < 2e-6, "normalisation max diff %g", maxd);
  printf("  normalisation max |diff| %.3g\n", maxd);
  amd_augment none = {0};
  amd_dataset_batch(&ds, &ds.train, idx, TN, &none, NULL, x1, y);
  CHECK(!memcmp(x0, x1, sizeof x0), "all-zero augment = none");

  /* determinism */
  amd_augment all = {.pad_crop = 2, .hflip = 1, .cutout = 3};
  uint64_t r1 = 42, r2 = 42, r3 = 43;
  amd_dataset_batch(&ds, &ds.train, idx, TN, &all, &r1, x1, y);
  amd_dataset_batch(&ds, &ds.train, idx, TN, &all, &r2, x2, y);
  CHECK(!memcmp(x1, x2, sizeof x1) && r1 == r2, "same seed, same batch");
  amd_dataset_batch(&ds, &ds.train, idx, TN, &all, &r3, x2, y);
  CHECK(memcmp(x1, x2, sizeof x1) != 0, "another seed, another batch");
  CHECK(r1 != 42, "rng state advanced");

  /* flip only: each sample is either the plain one or its exact mirror; both occur */
  amd_augment flip = {.hflip = 1};
  uint64_t r = 7;
  amd_dataset_batch(&ds, &ds.train, idx, TN, &flip, &r, x1, y);
  int n_same = 0, n_mirror = 0, n_other = 0;
  for (int b = 0; b < TN; b++) {
    int same = 1, mirror = 1;
    for (int c = 0; c < TC; c++)
      for (int i = 0; i < TH; i++)
        for (int j = 0; j < TW; j++) {
          float v = x1[b * TCHW + c * THW + i * TW + j];
          if (v != x0[b * TCHW + c * THW + i * TW + j]) same = 0;
          if (v != x0[b * TCHW + c * THW + i * TW + (TW - 1 - j)]) mirror = 0;
        }
    if (same) n_same++;
    else if (mirror) n_mirror++;
    else n_other++;
  }
  CHECK(n_other == 0 && n_same > 0 && n_mirror > 0, "flip: same %d mirror %d other %d", n_same,
        n_mirror, n_other);
  printf("  flip: %d kept, %d mirrored\n", n_same, n_mirror);

  /* mirror_all (test-time augmentation): every sample is the exact mirror, with no draw */
  amd_augment mirror_all = {.mirror_all = 1};
  amd_dataset_batch(&ds, &ds.train, idx, TN, &mirror_all, NULL, x1, y);
  int n_not_mirrored = 0;
  for (int b = 0; b < TN; b++)
    for (int c = 0; c < TC; c++)
      for (int i = 0; i < TH; i++)
        for (int j = 0; j < TW; j++)
          n_not_mirrored += x1[b * TCHW + c * THW + i * TW + j] != x0[b * TCHW + c * THW + i * TW + (TW - 1 - j)];
  CHECK(n_not_mirrored == 0, "mirror_all: %d pixels are not the mirror's", n_not_mirrored);

  /* flip:alt: no draw; each sample mirrored in exactly one epoch of a pair, by a phase of its own that
   * depends on the seed; epoch 2 repeats epoch 0 */
  {
    amd_augment alt = {0};
    amd_status ast = {{0}};
    CHECK(amd_augment_parse("crop:1,flip:alt", &alt, &ast) == 0 && alt.hflip_alt && !alt.hflip, "flip:alt parsed");
    CHECK(amd_augment_parse("flip,flip:alt", &alt, &ast) == -1 && strstr(ast.msg, "choose one"),
          "flip with flip:alt refused: %s", ast.msg);
    CHECK(amd_augment_parse("flip:alt", &alt, &ast) == 0, "flip:alt alone");
    amd_batch_sample pe[3][TN];
    int64_t ya[TN];
    alt.flip_seed = 5;
    for (int e = 0; e < 3; e++) {
      alt.epoch = e;
      amd_dataset_batch_plan(&ds, &ds.train, idx, TN, &alt, NULL, pe[e], ya);
    }
    int once = 1, repeat = 1, n_first = 0, n_moved = 0;
    for (int b = 0; b < TN; b++) {
      once &= pe[0][b].mirror + pe[1][b].mirror == 1;
      repeat &= pe[2][b].mirror == pe[0][b].mirror && pe[0][b].dy == 0 && pe[0][b].dx == 0;
      n_first += pe[0][b].mirror;
    }
    alt.flip_seed = 6, alt.epoch = 0;
    amd_batch_sample other[TN];
    amd_dataset_batch_plan(&ds, &ds.train, idx, TN, &alt, NULL, other, ya);
    for (int b = 0; b < TN; b++) n_moved += other[b].mirror != pe[0][b].mirror;
    CHECK(once && repeat, "flip:alt: every sample mirrored in one epoch of a pair, the same every other epoch");
    CHECK(n_first > 0 && n_first < TN && n_moved > 0, "flip:alt: both phases occur (%d of %d), another seed moves %d",
          n_first, TN, n_moved);
  }

  /* a fixed shift (test-time augmentation's translations): no draw, padding outside */
  {
    amd_augment shift = {.shift_y = 1, .shift_x = -2, .mirror_all = 1};
    amd_dataset_batch(&ds, &ds.train, idx, TN, &shift, NULL, x1, y);
    int n_bad = 0;
    for (int b = 0; b < TN; b++)
      for (int c = 0; c < TC; c++)
        for (int i = 0; i < TH; i++)
          for (int j = 0; j < TW; j++) {
            int si = i + 1, sj = (TW - 1 - j) - 2;
            float want = (si < 0 || si >= TH || sj < 0 || sj >= TW) ? -mean[c] / std[c]
                                                                    : x0[b * TCHW + c * THW + si * TW + sj];
            n_bad += fabsf(x1[b * TCHW + c * THW + i * TW + j] - want) > 1e-6f;
          }
    CHECK(n_bad == 0, "shift (1, -2) mirrored: %d pixels differ", n_bad);
  }

  /* crop only: each sample is the plain one shifted by some (dy, dx) in [-P, P]^2 with
   * padding = normalised 0 pixel; a non-zero shift occurs */
  const int PAD = 2;
  amd_augment crop = {.pad_crop = PAD};
  r = 9;
  amd_dataset_batch(&ds, &ds.train, idx, TN, &crop, &r, x1, y);
  int n_match = 0, n_shifted = 0;
  for (int b = 0; b < TN; b++) {
    int found = 0;
    for (int dy = -PAD; dy <= PAD && !found; dy++)
      for (int dx = -PAD; dx <= PAD && !found; dx++) {
        int ok = 1;
        for (int c = 0; c < TC && ok; c++)
          for (int i = 0; i < TH && ok; i++)
            for (int j = 0; j < TW && ok; j++) {
              int si = i + dy, sj = j + dx;
              float want = (si < 0 || si >= TH || sj < 0 || sj >= TW)
                               ? -mean[c] / std[c]
                               : x0[b * TCHW + c * THW + si * TW + sj];
              if (fabsf(x1[b * TCHW + c * THW + i * TW + j] - want) > 1e-6f) ok = 0;
            }
        if (ok) {
          found = 1;
          if (dy || dx) n_shifted++;
        }
      }
    n_match += found;
  }
  CHECK(n_match == TN && n_shifted > 0, "crop: %d of %d match a shift, %d shifted", n_match, TN,
        n_shifted);
  printf("  crop: %d of %d shifted\n", n_shifted, TN);

  /* cutout only: the zeros form one clipped square of side <= S in every channel; the
   * rest is unchanged (no normalised pixel of this data is 0) */
  const int S = 3;
  amd_augment cut = {.cutout = S};
  r = 11;
  amd_dataset_batch(&ds, &ds.train, idx, TN, &cut, &r, x1, y);
  int cut_ok = 1, any_zero = 0;
  for (int b = 0; b < TN; b++) {
    int y0 = TH, y1 = -1, x0b = TW, x1b = -1, nz = 0;
    for (int i = 0; i < TH; i++)
      for (int j = 0; j < TW; j++) {
        int z0 = x1[b * TCHW + i * TW + j] == 0.0f;
        for (int c = 0; c < TC; c++) {
          float v = x1[b * TCHW + c * THW + i * TW + j];
          if ((v == 0.0f) != z0) cut_ok = 0; /* same square in every channel */
          if (v != 0.0f && v != x0[b * TCHW + c * THW + i * TW + j]) cut_ok = 0;
        }
        if (z0) {
          nz++;
          if (i < y0) y0 = i;
          if (i > y1) y1 = i;
          if (j < x0b) x0b = j;
          if (j > x1b) x1b = j;
        }
      }
    if (nz) {
      any_zero = 1;
      if (y1 - y0 + 1 > S || x1b - x0b + 1 > S || nz != (y1 - y0 + 1) * (x1b - x0b + 1)) cut_ok = 0;
    } else {
      cut_ok = 0; /* the centre is inside the image: something is always cut */
    }
  }
  CHECK(cut_ok && any_zero, "cutout squares");

  /* the two-part form (what the GPU path uses): plan + fill = amd_dataset_batch, draws and pixels */
  {
    amd_batch_sample plan[TN];
    int64_t y2[TN];
    uint64_t ra = 99, rb = 99;
    amd_dataset_batch(&ds, &ds.train, idx, TN, &all, &ra, x1, y);
    amd_dataset_batch_plan(&ds, &ds.train, idx, TN, &all, &rb, plan, y2);
    amd_dataset_batch_fill(&ds, &ds.train, plan, TN, x2);
    CHECK(!memcmp(x1, x2, sizeof x1) && !memcmp(y, y2, sizeof y) && ra == rb,
          "plan + fill = amd_dataset_batch (pixels, labels, rng state)");
    int crops = 0, mirrors = 0, cuts = 0;
    for (int b = 0; b < TN; b++) {
      crops += plan[b].dy != 0 || plan[b].dx != 0;
      mirrors += plan[b].mirror;
      cuts += plan[b].cut_y1 > plan[b].cut_y0;
      CHECK(plan[b].src == idx[b] && plan[b].dy >= -2 && plan[b].dy <= 2 && plan[b].dx >= -2 && plan[b].dx <= 2,
            "plan %d: source and crop offsets", b);
    }
    CHECK(crops > 0 && mirrors > 0 && cuts == TN, "the plan draws crops, flips and cutouts");
  }

  /* statistics helper against the slow way */
  float m2[TC], s2[TC];
  amd_data_stats_u8(&ds.train, TC, THW, m2, s2);
  for (int c = 0; c < TC; c++) {
    double m, sd;
    naive_stats(&ds.train, TC, THW, c, &m, &sd);
    CHECK(fabs(m2[c] - m) < 1e-6 && fabs(s2[c] - sd) < 1e-6, "stats ch %d", c);
  }
}

/* ---------------------------------------------------------------- RNG, shuffles */

static int is_perm(const int64_t *p, int64_t n) {
  char *seen = calloc((size_t)n, 1);
  int ok = 1;
  for (int64_t i = 0; i < n; i++) {
    if (p[i] < 0 || p[i] >= n || seen[p[i]]) ok = 0;
    else seen[p[i]] = 1;
  }
  free(seen);
  return ok;
}

static void test_rng(void) {
  printf("rng\n");
  uint64_t a = 1, b = 1;
  CHECK(amd_rng_next(&a) == amd_rng_next(&b), "rng determinism");
  /* splitmix64 reference value: seed 0 -> first output 0xe220a8397b1dcdaf */
  uint64_t z = 0;
  CHECK(amd_rng_next(&z) == 0xe220a8397b1dcdafull, "splitmix64 reference");
  uint64_t s = 5;
  int hist[7] = {0}, inrange = 1;
  for (int i = 0; i < 7000; i++) {
    uint64_t v = amd_rng_below(&s, 7);
    if (v >= 7) inrange = 0;
    else hist[v]++;
  }
  int flat = 1;
  for (int i = 0; i < 7; i++)
    if (hist[i] < 800 || hist[i] > 1200) flat = 0;
  CHECK(inrange && flat, "rng_below range/uniformity");

  enum { N = 1000 };
  static int64_t p1[N], p2[N], p3[N];
  amd_permutation(p1, N, 123);
  amd_permutation(p2, N, 123);
  amd_permutation(p3, N, 124);
  CHECK(is_perm(p1, N), "permutation");
  CHECK(!memcmp(p1, p2, sizeof p1), "same seed, same permutation");
  CHECK(memcmp(p1, p3, sizeof p1) != 0, "another seed, another permutation");
  int fixed = 0;
  for (int i = 0; i < N; i++) fixed += p1[i] == i;
  CHECK(fixed < 10, "shuffled (%d fixed points)", fixed);

  amd_status st = {{0}};
  CHECK(amd_val_split(N, 100, 9, p1, &st) == 0, "val split: %s", st.msg);
  amd_permutation(p2, N, 9);
  CHECK(is_perm(p1, N) && !memcmp(p1, p2, sizeof p1), "val split = seeded permutation");
  CHECK(amd_val_split(N, 0, 9, p1, &st) == 0, "k = 0");
  st.msg[0] = 0;
  CHECK(amd_val_split(N, N, 9, p1, &st) == -1 && st.msg[0], "k = n fails");
  st.msg[0] = 0;
  CHECK(amd_val_split(N, -1, 9, p1, &st) == -1 && st.msg[0], "k < 0 fails");
  st.msg[0] = 0;
  CHECK(amd_val_split(0, 0, 9, p1, &st) == -1 && st.msg[0], "n = 0 fails");
}

/* --augment rrc: parsing, torchvision's box (in the image, the fallback,
 * reproducible), and batches of a hand-made ragged split (plan + fill =
 * amd_dataset_batch, the centre crop with padding). */
static void test_rrc(void) {
  printf("rrc\n");
  amd_status st = {{0}};
  amd_augment a;
  CHECK(amd_augment_parse("rrc", &a, &st) == 0 && a.rrc && a.rrc_min_scale == 0.08 && !a.hflip, "rrc: %s",
        st.msg);
  CHECK(amd_augment_parse("flip,rrc:0.25,cutout:3", &a, &st) == 0 && a.rrc && a.rrc_min_scale == 0.25 &&
            a.hflip && a.cutout == 3,
        "rrc:0.25 with flip and cutout: %s", st.msg);
  const char *bad[] = {"rrc:0", "rrc:1.5", "rrc:", "rrc:x", "rrc:0.5x", "rrc,crop:2", "rrcc"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    st.msg[0] = 0;
    CHECK(amd_augment_parse(bad[i], &a, &st) == -1 && st.msg[0], "'%s' refused", bad[i]);
  }
  /* boxes: always inside, the same for the same stream */
  static const int64_t sizes[][2] = {{1, 1}, {1, 300}, {300, 1}, {7, 5}, {256, 341}, {1000, 10}, {100, 100}};
  static const double smins[] = {0.08, 0.5, 1.0};
  int inside = 1, same = 1;
  double min_frac_s1 = 1.0;
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
    for (size_t m = 0; m < 3; m++) {
      uint64_t r1 = 11 + k, r2 = 11 + k;
      for (int t = 0; t < 500; t++) {
        int32_t y, x, h, w, y2, x2, h2, w2;
        const int64_t ih = sizes[k][0], iw = sizes[k][1];
        amd_rrc_box(ih, iw, smins[m], &r1, &y, &x, &h, &w);
        amd_rrc_box(ih, iw, smins[m], &r2, &y2, &x2, &h2, &w2);
        same &= y == y2 && x == x2 && h == h2 && w == w2;
        inside &= y >= 0 && x >= 0 && h > 0 && w > 0 && y + h <= ih && x + w <= iw;
        if (smins[m] == 1.0 && ih == 100 && iw == 100) {
          double f = (double)h * w / (ih * iw);
          if (f < min_frac_s1) min_frac_s1 = f;
        }
      }
    }
  CHECK(inside, "every box inside its image");
  CHECK(same, "the same stream, the same boxes");
  CHECK(min_frac_s1 > 0.98, "rrc:1 on 100x100: area fractions >= %.3f", min_frac_s1);
  /* 1x300 and 300x1 never fit a drawn box: the centre crop clamped to the ratio range */
  uint64_t r = 3;
  int32_t y, x, h, w;
  amd_rrc_box(1, 300, 0.08, &r, &y, &x, &h, &w);
  CHECK(y == 0 && x == 149 && h == 1 && w == 1, "1x300 fallback (%d, %d, %d, %d)", y, x, h, w);
  amd_rrc_box(300, 1, 0.08, &r, &y, &x, &h, &w);
  CHECK(y == 149 && x == 0 && h == 1 && w == 1, "300x1 fallback (%d, %d, %d, %d)", y, x, h, w);

  /* a ragged split of 4 RGB images, samples of 4x4 */
  enum { K = 4, C = 3, H = 4, W = 4 };
  static const int32_t ih[K] = {5, 9, 6, 2}, iw[K] = {7, 4, 6, 3};
  amd_dataset ds = {.format = AMD_DATA_IMAGES, .c = C, .h = H, .w = W, .n_classes = 2};
  float mean[C] = {0.5f, 0.4f, 0.3f}, sd[C] = {0.2f, 0.25f, 0.3f};
  ds.mean = mean, ds.std = sd;
  amd_data_split sp = {.n = K};
  int64_t off[K + 1], labels[K] = {0, 1, 0, 1};
  off[0] = 0;
  for (int i = 0; i < K; i++) off[i + 1] = off[i] + (int64_t)ih[i] * iw[i] * C;
  uint8_t pix[1024];
  for (int64_t i = 0; i < off[K]; i++) pix[i] = (uint8_t)(i * 37 + 11);
  sp.rag = pix, sp.rag_off = off, sp.rag_h = (int32_t *)ih, sp.rag_w = (int32_t *)iw, sp.labels = labels;
  int64_t idx[8] = {0, 1, 2, 3, 3, 2, 1, 0}, yb[8], yp[8];
  static float xb[8 * C * H * W], xp[8 * C * H * W];
  amd_batch_sample plan[8];
  CHECK(amd_augment_parse("rrc:0.3,flip,cutout:2", &a, &st) == 0, "parse");
  uint64_t ra = 5, rb = 5;
  int equal = 1, finite = 1, boxes = 1;
  for (int e = 0; e < 50; e++) {
    amd_dataset_batch(&ds, &sp, idx, 8, &a, &ra, xb, yb);
    amd_dataset_batch_plan(&ds, &sp, idx, 8, &a, &rb, plan, yp);
    amd_dataset_batch_fill(&ds, &sp, plan, 8, xp);
    equal &= ra == rb && !memcmp(xb, xp, sizeof xb) && !memcmp(yb, yp, sizeof yb);
    for (int i = 0; i < 8 * C * H * W; i++) finite &= isfinite(xb[i]) != 0;
    for (int b = 0; b < 8; b++) boxes &= plan[b].box_h > 0 && plan[b].box_y + plan[b].box_h <= ih[idx[b]];
  }
  CHECK(equal, "amd_dataset_batch = plan + fill, the same stream");
  CHECK(finite && boxes, "finite values, a box for every sample");
  /* no augmentation: the centre crop; image 3 (2x3) is padded: rows 1-2 read its rows 0-1, column 3 is
   * padding */
  amd_dataset_batch(&ds, &sp, idx, 4, NULL, NULL, xb, yb);
  const float *s3 = xb + 3 * C * H * W;
  float sc, sh, inv;
  amd_dataset_batch_norm(&ds, 1, &sc, &sh, &inv);
  CHECK(s3[1 * H * W + 0 * W + 0] == sh && s3[1 * H * W + 2 * W + 3] == sh, "padding (channel 1)");
  CHECK(s3[1 * H * W + 2 * W + 1] == (float)pix[off[3] + (1 * iw[3] + 1) * C + 1] * sc + sh,
        "image 3 pixel (1, 1)");
  /* image 0 (5x7): offsets round(1/2) = 0 (half to even) and round(3/2) = 2 */
  amd_dataset_batch_norm(&ds, 2, &sc, &sh, &inv);
  CHECK(xb[2 * H * W + 3 * W + 3] == (float)pix[(3 * iw[0] + 5) * C + 2] * sc + sh, "image 0 centre crop");
  /* crop:P on a ragged split shifts the centre crop as on the others (it was ignored there): a plan with
   * (dy, dx) = (1, -1) against the unshifted crop */
  {
    amd_batch_sample p0[1], p1[1];
    int64_t one = 0, yy;
    static float c0[C * H * W], c1[C * H * W];
    amd_dataset_batch_plan(&ds, &sp, &one, 1, NULL, NULL, p0, &yy);
    amd_dataset_batch_fill(&ds, &sp, p0, 1, c0);
    p1[0] = p0[0], p1[0].dy = 1, p1[0].dx = -1;
    amd_dataset_batch_fill(&ds, &sp, p1, 1, c1);
    int n_bad = 0;
    for (int c = 0; c < C; c++) {
      amd_dataset_batch_norm(&ds, c, &sc, &sh, &inv);
      for (int i = 0; i < H; i++)
        for (int j = 0; j < W; j++) {
          const int si = i + 1, sj = j - 1;
          const float want = si >= H || sj < 0 ? sh : c0[c * H * W + si * W + sj];
          n_bad += c1[c * H * W + i * W + j] != want;
        }
    }
    CHECK(n_bad == 0, "ragged crop shift (1, -1): %d values differ", n_bad);
  }
}

/* ---------------------------------------------------------------- main */

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

/* --limit: N samples of each split spread evenly over it (amd_dataset_limit), so that a split sorted by class
 * keeps every class; pixels, floats and ragged images move with their labels; a test split that is the
 * training split stays the same arrays. */
static void test_limit(void) {
  enum { N = 12, C = 1, H = 2, W = 2 };
  amd_dataset ds = {.c = C, .h = H, .w = W, .n_classes = 4};
  amd_status st;
  for (int s = 0; s < 2; s++) {
    amd_data_split *sp = s ? &ds.test : &ds.train;
    sp->n = N;
    sp->labels = malloc(N * sizeof *sp->labels);
    sp->u8 = malloc(N * C * H * W);
    for (int i = 0; i < N; i++) {
      sp->labels[i] = i / 3; /* sorted by class: 0 0 0 1 1 1 2 2 2 3 3 3 */
      for (int k = 0; k < C * H * W; k++) sp->u8[i * C * H * W + k] = (uint8_t)(10 * i + k);
    }
  }
  CHECK(amd_dataset_limit(&ds, 4, &st) == 0, "limit");
  CHECK(ds.train.n == 4 && ds.test.n == 4, "limit");
  for (int j = 0; j < 4; j++) {
    const int i = j * N / 4; /* 0, 3, 6, 9: one of each class */
    CHECK(ds.train.labels[j] == j && ds.test.labels[j] == j, "limit");
    CHECK(ds.train.u8[j * 4 + 3] == (uint8_t)(10 * i + 3), "limit");
  }
  CHECK(amd_dataset_limit(&ds, 10, &st) == 0 && ds.train.n == 4, "limit"); /* a split already that small stays */
  CHECK(amd_dataset_limit(&ds, 0, &st) != 0 && st.msg[0], "limit");
  amd_dataset_free(&ds);
  /* ragged (uncropped) images of their own sizes, and a test split that is the training split */
  amd_dataset r = {.c = 1, .h = 1, .w = 1, .n_classes = 3, .test_is_train = 1};
  amd_data_split *t = &r.train;
  t->n = 6;
  t->labels = malloc(6 * sizeof *t->labels);
  t->rag_off = malloc(6 * sizeof *t->rag_off);
  t->rag_h = malloc(6 * sizeof *t->rag_h);
  t->rag_w = malloc(6 * sizeof *t->rag_w);
  t->rag = malloc(1 + 4 + 9 + 16 + 25 + 36);
  int64_t off = 0;
  for (int i = 0; i < 6; i++) {
    t->labels[i] = i / 2;
    t->rag_h[i] = t->rag_w[i] = i + 1;
    t->rag_off[i] = off;
    for (int k = 0; k < (i + 1) * (i + 1); k++) t->rag[off + k] = (uint8_t)(i * 40 + k);
    off += (i + 1) * (i + 1);
  }
  r.test = r.train;
  CHECK(amd_dataset_limit(&r, 3, &st) == 0 && r.train.n == 3 && r.test.n == 3 && r.test.labels == r.train.labels, "limit");
  for (int j = 0; j < 3; j++) { /* images 0, 2, 4 */
    const int i = 2 * j, side = i + 1;
    CHECK(t->labels[j] == j && t->rag_h[j] == side && t->rag_w[j] == side, "limit");
    CHECK(t->rag[t->rag_off[j] + side * side - 1] == (uint8_t)(i * 40 + side * side - 1), "limit");
  }
  amd_dataset_free(&r);
}

int main(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(root, sizeof root, "%s/amd-test-data-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(root)) {
    perror("mkdtemp");
    return 1;
  }
  test_idx();
  test_cifar();
  test_cifar100();
  test_png();
  test_tensors();
  test_batches();
  test_rng();
  test_rrc();
  test_limit();
  nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  return check_summary();
}

/* Tests of the streaming image-folder reader (src/data/image_stream.c)
 * against the in-memory load (amd_dataset_load_opts) of the same folder: a
 * folder of JPEGs (colour and grey, several sizes, written with TurboJPEG)
 * and PNGs (libpng) made at run time. For several batch sizes, ring sizes,
 * worker counts, --limit, both splits of a train/val folder, the batches
 * put end to end must be the in-memory split byte for byte (pixels, labels,
 * order), each batch full but the last, and the data set description (shape,
 * classes, normalisation) the same. Bad files: one that fails its header and
 * one truncated JPEG that passes it and fails while decoding: without
 * --skip-bad both readers fail with the same message; with it the batches
 * are the in-memory split without them and the skipped count agrees. The
 * lockstep mode (the CPU backend's) too. Also
 * closing a stream midway, the dataset normalisation refused. Exit 0 on
 * success, 1 on any failure (under valgrind: no leak, no error). */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <png.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <turbojpeg.h>
#include <unistd.h>

#include "../test_check.h"
#include "data/dataset.h"
#include "data/image_stream.h"

static int lockstep; /* compare() streams with amd_image_stream_set_overlap(s, 0) */
static char root[512];

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

static uint8_t pix(int seed, int x, int y, int c) { return (uint8_t)(seed * 37 + x * 7 + y * 3 + c * 80 + (x * y) % 11); }

/* A JPEG of w x h, colour (3) or grey (1), quality 90. */
static void write_jpeg(const char *path, int w, int h, int ch, int seed) {
  uint8_t *img = malloc((size_t)(w * h * ch));
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      for (int c = 0; c < ch; c++) img[(y * w + x) * ch + c] = pix(seed, x, y, c);
  tjhandle tj = tjInitCompress();
  unsigned char *jpg = NULL;
  unsigned long len = 0;
  if (tjCompress2(tj, img, w, 0, h, ch == 3 ? TJPF_RGB : TJPF_GRAY, &jpg, &len, ch == 3 ? TJSAMP_420 : TJSAMP_GRAY,
                  90, 0)) {
    printf("cannot write %s: %s\n", path, tjGetErrorStr());
    exit(1);
  }
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(jpg, 1, len, f) != len) exit(1);
  fclose(f);
  tjFree(jpg);
  tjDestroy(tj);
  free(img);
}

/* An RGB PNG of w x h. */
static void write_png(const char *path, int w, int h, int seed) {
  FILE *f = fopen(path, "wb");
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png_create_info_struct(png);
  if (!f || !png || !info || setjmp(png_jmpbuf(png))) exit(1);
  png_init_io(png, f);
  png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  png_bytep row = malloc((size_t)(w * 3));
  for (int y = 0; y < h; y++) {
    for (int x = 0; x < w; x++)
      for (int c = 0; c < 3; c++) row[x * 3 + c] = pix(seed, x, y, c);
    png_write_row(png, row);
  }
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  free(row);
  fclose(f);
}

/* DIR/<class>/ for 3 classes (n_per images each, mixed kinds and sizes). */
static void write_folder(const char *dir, int n_per, int seed0) {
  static const char *classes[] = {"ant", "bee", "cat"};
  for (int c = 0; c < 3; c++) {
    char d[1024];
    snprintf(d, sizeof d, "%s/%s", dir, classes[c]);
    mkdirs(d);
    for (int i = 0; i < n_per; i++) {
      char p[1200];
      const int seed = seed0 + c * 100 + i, w = 20 + (seed * 7) % 23, h = 18 + (seed * 5) % 29;
      if (i % 5 == 3) {
        snprintf(p, sizeof p, "%s/img%03d.png", d, i);
        write_png(p, w, h, seed);
      } else {
        snprintf(p, sizeof p, "%s/img%03d.jpg", d, i);
        write_jpeg(p, w, h, i % 4 == 1 ? 1 : 3, seed);
      }
    }
  }
}

/* The file cut to half its size (the header stays: a decoding error). */
static void truncate_half(const char *path) {
  struct stat sb;
  if (stat(path, &sb) || truncate(path, sb.st_size / 2)) exit(1);
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(p);
}

static amd_image_opts opts(int only_split, int64_t limit, int workers, int skip_bad) {
  amd_image_opts o = {0};
  o.resize = 16;
  o.crop_h = o.crop_w = 14;
  o.norm = AMD_NORM_IMAGENET;
  o.only_split = only_split;
  o.max_samples = limit;
  o.workers = workers;
  o.skip_bad = skip_bad;
  return o;
}

/* Streams spec with o in batches of `batch` (ring R) and compares with the
 * in-memory load. */
static int64_t compare(const char *what, const char *spec, amd_image_opts o, int64_t batch, int ring) {
  amd_dataset mem, sds;
  amd_status st = {{0}}, st2 = {{0}};
  amd_image_opts om = o;
  int rc_mem = amd_dataset_load_opts(spec, &om, &mem, &st);
  amd_image_stream *s = NULL;
  int rc = amd_image_stream_open(spec, &o, batch, ring, &sds, &s, &st2);
  if (!rc && lockstep) amd_image_stream_set_overlap(s, 0);
  const amd_data_split *ms = rc_mem ? NULL : o.only_split == 2 ? &mem.train : &mem.test;
  if (!rc) {
    CHECK(sds.c == mem.c && sds.h == mem.h && sds.w == mem.w && sds.n_classes == mem.n_classes &&
              sds.format == AMD_DATA_IMAGES && sds.partial == mem.partial,
          "%s: shape %lldx%lldx%lld, %lld classes", what, (long long)sds.c, (long long)sds.h, (long long)sds.w,
          (long long)sds.n_classes);
    for (int64_t c = 0; c < sds.c && c < mem.c; c++)
      CHECK(sds.mean[c] == mem.mean[c] && sds.std[c] == mem.std[c], "%s: normalisation of channel %lld", what,
            (long long)c);
    for (int64_t k = 0; k < sds.n_classes && k < mem.n_classes && mem.class_names; k++)
      CHECK(!strcmp(sds.class_names[k], mem.class_names[k]), "%s: class %lld", what, (long long)k);
  }
  if (rc_mem || rc) {
    /* a failure in the header pass: both fail alike */
    CHECK(rc_mem && rc && !strcmp(st.msg, st2.msg), "%s: load %d '%s', stream open %d '%s'", what, rc_mem, st.msg,
          rc, st2.msg);
  } else {
    const int64_t chw = mem.c * mem.h * mem.w;
    int64_t at = 0, batches = 0;
    int rc_next = 0;
    for (;;) {
      amd_data_split b;
      rc_next = amd_image_stream_next(s, &b, &st2);
      if (rc_next || b.n == 0) break;
      batches++;
      const int64_t want = ms->n - at < batch ? ms->n - at : batch;
      CHECK(b.n == want, "%s: batch %lld of %lld samples, expected %lld", what, (long long)batches, (long long)b.n,
            (long long)want);
      if (b.n != want) break;
      CHECK(!memcmp(b.u8, ms->u8 + at * chw, (size_t)(b.n * chw)), "%s: batch %lld pixels", what,
            (long long)batches);
      CHECK(!memcmp(b.labels, ms->labels + at, (size_t)b.n * sizeof *b.labels), "%s: batch %lld labels", what,
            (long long)batches);
      at += b.n;
    }
    CHECK(!rc_next && at == ms->n, "%s: %lld of %lld samples streamed (%s)", what, (long long)at, (long long)ms->n,
          rc_next ? st2.msg : "ok");
    amd_image_stream_finish(s, &sds);
    CHECK(sds.skipped == mem.skipped, "%s: skipped %lld vs %lld", what, (long long)sds.skipped,
          (long long)mem.skipped);
  }
  const int64_t skipped = rc_mem ? -1 : mem.skipped;
  amd_image_stream_close(s);
  amd_dataset_free(&sds);
  amd_dataset_free(&mem);
  return skipped;
}

/* Both fail with the same message: the load at once, the stream in next. */
static void compare_failure(const char *what, const char *spec, amd_image_opts o, int64_t batch) {
  amd_dataset mem, sds;
  amd_status st = {{0}}, st2 = {{0}};
  int rc_mem = amd_dataset_load_opts(spec, &o, &mem, &st);
  amd_image_stream *s = NULL;
  int rc = amd_image_stream_open(spec, &o, batch, 3, &sds, &s, &st2);
  int64_t got = 0;
  while (!rc) {
    amd_data_split b;
    rc = amd_image_stream_next(s, &b, &st2);
    if (!rc && b.n == 0) break;
    got += b.n;
  }
  CHECK(rc_mem && rc && !strcmp(st.msg, st2.msg), "%s: load %d '%s', stream %d '%s' after %lld samples", what, rc_mem,
        st.msg, rc, st2.msg, (long long)got);
  amd_image_stream_close(s);
  amd_dataset_free(&sds);
  if (!rc_mem) amd_dataset_free(&mem);
}

int main(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(root, sizeof root, "%s/amd-test-stream-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(root)) {
    perror("mkdtemp");
    return 1;
  }
  char one[600], two[600], spec1[700], spec2[700], p[1200];
  snprintf(one, sizeof one, "%s/one", root);
  snprintf(two, sizeof two, "%s/two", root);
  write_folder(one, 9, 1);
  char tr[700], va[700];
  snprintf(tr, sizeof tr, "%s/train", two);
  snprintf(va, sizeof va, "%s/val", two);
  write_folder(tr, 6, 500);
  write_folder(va, 5, 900);
  snprintf(spec1, sizeof spec1, "images:%s", one);
  snprintf(spec2, sizeof spec2, "images:%s", two);

  /* batch sizes around the 27 files, rings, workers */
  static const int cases[][3] = {{1, 2, 1}, {4, 2, 2}, {5, 3, 3}, {7, 4, 2}, {9, 2, 4}, {26, 2, 2}, {27, 4, 3},
                                 {64, 4, 2}};
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    char what[64];
    snprintf(what, sizeof what, "batch %d ring %d workers %d", cases[k][0], cases[k][1], cases[k][2]);
    compare(what, spec1, opts(1, 0, cases[k][2], 0), cases[k][0], cases[k][1]);
  }
  lockstep = 1; /* the CPU backend's way */
  compare("lockstep, batch 4", spec1, opts(1, 0, 2, 0), 4, 2);
  compare("lockstep, batch 10, ring 4, 3 workers", spec1, opts(1, 0, 3, 0), 10, 4);
  lockstep = 0;
  compare("--limit 10 spread", spec1, opts(1, 10, 2, 0), 4, 2);
  compare("train/val: val", spec2, opts(1, 0, 2, 0), 4, 3);
  compare("train/val: train", spec2, opts(2, 0, 3, 0), 5, 2);
  compare("train/val: val, --limit 7", spec2, opts(1, 7, 2, 0), 3, 2);
  amd_image_opts none = opts(1, 0, 2, 0);
  none.norm = AMD_NORM_NONE;
  compare("--normalize none", spec1, none, 8, 4);
  amd_image_opts custom = opts(1, 0, 2, 0);
  custom.norm = AMD_NORM_CUSTOM;
  custom.norm_n = 1;
  custom.norm_mean[0] = 0.5f;
  custom.norm_std[0] = 0.25f;
  compare("--normalize 0.5/0.25", spec1, custom, 8, 4);

  /* the dataset normalisation is refused */
  {
    amd_image_opts o = opts(1, 0, 2, 0);
    o.norm = AMD_NORM_DATASET;
    amd_dataset ds;
    amd_image_stream *s = NULL;
    amd_status st = {{0}};
    CHECK(amd_image_stream_open(spec1, &o, 4, 0, &ds, &s, &st) && s == NULL && strstr(st.msg, "dataset"),
          "dataset normalisation: '%s'", st.msg);
  }

  /* closed midway, the workers still decoding */
  {
    amd_image_opts o = opts(1, 0, 3, 0);
    amd_dataset ds;
    amd_image_stream *s = NULL;
    amd_status st = {{0}};
    amd_data_split b;
    int rc = amd_image_stream_open(spec1, &o, 2, 2, &ds, &s, &st);
    CHECK(!rc && !amd_image_stream_next(s, &b, &st) && b.n == 2, "first batch before closing: %s", st.msg);
    amd_image_stream_close(s);
    amd_dataset_free(&ds);
  }

  /* bad files: a truncated JPEG (fails while decoding) in the second class,
   * then also a file that is not an image (fails its header) */
  snprintf(p, sizeof p, "%s/bee/img002.jpg", one);
  truncate_half(p);
  compare_failure("a truncated JPEG", spec1, opts(1, 0, 2, 0), 4);
  compare_failure("a truncated JPEG, batch 1", spec1, opts(1, 0, 3, 0), 1);
  for (int b = 1; b <= 10; b += 3) {
    char what[64];
    snprintf(what, sizeof what, "--skip-bad, decoding failure, batch %d", b);
    CHECK(compare(what, spec1, opts(1, 0, 2, 1), b, 2) == 1, "%s: one file skipped", what);
  }
  snprintf(p, sizeof p, "%s/ant/img004.jpg", one);
  FILE *f = fopen(p, "wb");
  fputs("not an image", f);
  fclose(f);
  snprintf(p, sizeof p, "%s/cat/img007.jpg", one);
  truncate_half(p);
  CHECK(compare("a bad header without --skip-bad", spec1, opts(1, 0, 2, 0), 4, 2) == -1, "the header pass fails");
  CHECK(compare("--skip-bad, three bad files, batch 4", spec1, opts(1, 0, 2, 1), 4, 3) == 3, "3 skipped");
  CHECK(compare("--skip-bad, three bad files, batch 8", spec1, opts(1, 0, 3, 1), 8, 2) == 3, "3 skipped");
  lockstep = 1;
  CHECK(compare("lockstep, --skip-bad, three bad files, batch 5", spec1, opts(1, 0, 2, 1), 5, 2) == 3, "3 skipped");
  lockstep = 0;
  compare("--skip-bad, --limit 12", spec1, opts(1, 12, 2, 1), 5, 2);

  /* every file fails while decoding (--skip-bad): both fail */
  {
    char all[700], spec3[800];
    snprintf(all, sizeof all, "%s/allbad", root);
    write_folder(all, 2, 7);
    static const char *cls[] = {"ant", "bee", "cat"};
    for (int c = 0; c < 3; c++)
      for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%s/img%03d.jpg", all, cls[c], i);
        truncate_half(p);
      }
    snprintf(spec3, sizeof spec3, "images:%s", all);
    amd_image_opts o = opts(1, 0, 2, 1);
    amd_dataset mem, sds;
    amd_image_stream *s = NULL;
    amd_status st = {{0}}, st2 = {{0}};
    amd_data_split b;
    int rc_mem = amd_dataset_load_opts(spec3, &o, &mem, &st);
    int rc = amd_image_stream_open(spec3, &o, 4, 2, &sds, &s, &st2);
    if (!rc) rc = amd_image_stream_next(s, &b, &st2);
    CHECK(rc_mem && strstr(st.msg, "every training image is bad") && rc && strstr(st2.msg, "every image is bad"),
          "every file bad: load '%s', stream '%s'", st.msg, st2.msg);
    amd_image_stream_close(s);
    amd_dataset_free(&sds);
  }

  nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  return check_summary();
}

/* Tests of src/report/plot.c: the metrics plot, the runs plot and the confusion picture are
 * valid PNG files of the expected size (signature and IHDR read from the bytes
 * here), the pictures change with the data, and bad input gives clear errors.
 * Built without cairo: checks the error message and exits 77 (skipped).
 * Usage: test-plot [OUTPUT_DIR] (default: the current directory). */
#include "report/plot.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef AMD_HAVE_CAIRO
#include <cairo.h>
#endif

static int failures = 0;

#define CHECK(cond, ...)                                                                                     \
  do {                                                                                                       \
    if (!(cond)) {                                                                                           \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                                        \
      fprintf(stderr, __VA_ARGS__);                                                                          \
      fprintf(stderr, "\n");                                                                                 \
      failures++;                                                                                            \
    }                                                                                                        \
  } while (0)

static const char *TSV_A = "epoch\thours\ttrain_loss\ttrain_acc\ttest_loss\ttest_top1\tlr\timages_per_s\n"
                           "1\t0.004763\t0.602031\t0.777467\t0.392574\t0.858300\t0.0487816\t3498.9\n"
                           "2\t0.009719\t0.343420\t0.872967\t0.336782\t0.875000\t0.0452353\t3363.4\n"
                           "3\t0.022075\t0.298975\t0.887883\t0.314308\t0.885000\t0.0397082\t1348.8\n";

/* other numbers, and the validation columns */
static const char *TSV_B =
    "epoch\thours\ttrain_loss\ttrain_acc\ttest_loss\ttest_top1\tlr\timages_per_s\tval_loss\tval_top1\n"
    "1\t0.01\t2.100000\t0.210000\t1.900000\t0.300000\t0.1\t1000.0\t1.950000\t0.290000\n"
    "2\t0.02\t1.400000\t0.480000\t1.300000\t0.520000\t0.1\t1000.0\t1.350000\t0.500000\n"
    "3\t0.03\t0.900000\t0.690000\t1.000000\t0.640000\t0.1\t1000.0\t1.050000\t0.620000\n";

static unsigned char *read_all(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  unsigned char *buf = NULL;
  size_t cap = 0, len = 0, got;
  do {
    if (len == cap) {
      cap = cap ? 2 * cap : 65536;
      unsigned char *b = realloc(buf, cap);
      if (!b) {
        free(buf);
        fclose(f);
        return NULL;
      }
      buf = b;
    }
    got = fread(buf + len, 1, cap - len, f);
    len += got;
  } while (got > 0);
  fclose(f);
  *n = len;
  return buf;
}

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Checks the PNG signature, that the first chunk is a 13-byte IHDR, and that
 * the file ends with IEND; returns the size from IHDR (0, 0 when invalid). */
static void png_size(const char *path, uint32_t *w, uint32_t *h) {
  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  size_t n = 0;
  unsigned char *b = read_all(path, &n);
  *w = *h = 0;
  CHECK(b != NULL, "cannot read %s", path);
  if (!b) return;
  CHECK(n > 8 + 25 + 12, "%s: %zu bytes is too short for a PNG", path, n);
  if (n > 8 + 25 + 12) {
    CHECK(memcmp(b, sig, 8) == 0, "%s: no PNG signature", path);
    CHECK(be32(b + 8) == 13 && memcmp(b + 12, "IHDR", 4) == 0, "%s: the first chunk is not IHDR", path);
    CHECK(memcmp(b + n - 8, "IEND", 4) == 0, "%s: does not end with IEND", path);
    CHECK(b[24] == 8, "%s: bit depth %d, expected 8", path, b[24]);
    if (memcmp(b, sig, 8) == 0 && memcmp(b + 12, "IHDR", 4) == 0) *w = be32(b + 16), *h = be32(b + 20);
  }
  free(b);
}

static int file_exists(const char *path) { return access(path, F_OK) == 0; }

/* 1 when the two PNG files decode to different pixels (or differ in size). */
static int pictures_differ(const char *a, const char *b) {
#ifdef AMD_HAVE_CAIRO
  cairo_surface_t *sa = cairo_image_surface_create_from_png(a), *sb = cairo_image_surface_create_from_png(b);
  int differ = -1;
  if (cairo_surface_status(sa) == CAIRO_STATUS_SUCCESS && cairo_surface_status(sb) == CAIRO_STATUS_SUCCESS) {
    int w = cairo_image_surface_get_width(sa), h = cairo_image_surface_get_height(sa);
    if (w != cairo_image_surface_get_width(sb) || h != cairo_image_surface_get_height(sb))
      differ = 1;
    else {
      long changed = 0;
      int stride = cairo_image_surface_get_stride(sa);
      const unsigned char *pa = cairo_image_surface_get_data(sa), *pb = cairo_image_surface_get_data(sb);
      for (int y = 0; y < h; y++)
        for (int x = 0; x < w * 4; x++) changed += pa[(size_t)y * stride + x] != pb[(size_t)y * stride + x];
      printf("  %s vs %s: %ld bytes of pixels differ\n", a, b, changed);
      differ = changed > 100;
    }
  }
  CHECK(differ >= 0, "cannot decode %s or %s", a, b);
  cairo_surface_destroy(sa);
  cairo_surface_destroy(sb);
  return differ == 1;
#else
  (void)a, (void)b;
  return 0;
#endif
}

/* Non-white pixels of a decoded PNG: a blank picture would pass the size checks. */
static long inked_pixels(const char *path) {
#ifdef AMD_HAVE_CAIRO
  cairo_surface_t *s = cairo_image_surface_create_from_png(path);
  long inked = 0;
  if (cairo_surface_status(s) == CAIRO_STATUS_SUCCESS) {
    int w = cairo_image_surface_get_width(s), h = cairo_image_surface_get_height(s);
    int stride = cairo_image_surface_get_stride(s);
    const unsigned char *p = cairo_image_surface_get_data(s);
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        const unsigned char *q = p + (size_t)y * stride + 4 * x;
        inked += q[0] < 200 || q[1] < 200 || q[2] < 200;
      }
  }
  cairo_surface_destroy(s);
  return inked;
#else
  (void)path;
  return 0;
#endif
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : ".";
  char a[4096], b[4096], c1[4096], c2[4096], tmp[4200];
  snprintf(a, sizeof a, "%s/plot_a.png", dir);
  snprintf(b, sizeof b, "%s/plot_b.png", dir);
  snprintf(c1, sizeof c1, "%s/confusion_1.png", dir);
  snprintf(c2, sizeof c2, "%s/confusion_2.png", dir);
  amd_status st = {{0}};

  if (!amd_plot_available()) {
    CHECK(amd_plot_metrics(TSV_A, a, 1200, 480, &st) == -1, "drawing without cairo succeeded");
    CHECK(strstr(st.msg, "built without cairo") && strstr(st.msg, "--plot") &&
              strstr(st.msg, "libcairo2-dev"),
          "message: %s", st.msg);
    st.msg[0] = 0;
    int64_t cm[4] = {1, 0, 0, 1};
    CHECK(amd_plot_confusion(cm, 2, NULL, c1, &st) == -1, "drawing without cairo succeeded");
    CHECK(strstr(st.msg, "built without cairo") && strstr(st.msg, "--confusion"), "message: %s", st.msg);
    const char *texts[1] = {TSV_A}, *labels[1] = {"a"};
    st.msg[0] = 0;
    CHECK(amd_plot_runs(texts, labels, 1, "test_top1", NULL, a, 800, 400, &st) == -1 &&
              strstr(st.msg, "built without cairo"),
          "runs without cairo: %s", st.msg);
    amd_plot_release();
    if (failures) return 1;
    printf("built without cairo: the messages are right; skipping the drawing tests\n");
    return 77;
  }

  uint32_t w, h;
  /* the metrics plot: valid PNG, the requested size, not blank, no temporary file left */
  remove(a);
  CHECK(amd_plot_metrics(TSV_A, a, 1200, 480, &st) == 0, "plot A: %s", st.msg);
  png_size(a, &w, &h);
  CHECK(w == 1200 && h == 480, "plot A is %ux%u, expected 1200x480", w, h);
  snprintf(tmp, sizeof tmp, "%s.tmp", a);
  CHECK(!file_exists(tmp), "%s was left behind", tmp);
  long ink = inked_pixels(a);
  CHECK(ink > 1200 * 480 / 50, "plot A has only %ld inked pixels", ink);
  printf("  plot A: %ux%u, %ld inked pixels\n", w, h, ink);

  /* other data, same size: another picture */
  CHECK(amd_plot_metrics(TSV_B, b, 1200, 480, &st) == 0, "plot B: %s", st.msg);
  png_size(b, &w, &h);
  CHECK(w == 1200 && h == 480, "plot B is %ux%u, expected 1200x480", w, h);
  CHECK(pictures_differ(a, b), "plots of different metrics are the same picture");
  /* the same data twice: the same picture (drawing is deterministic) */
  char a2[4200];
  snprintf(a2, sizeof a2, "%s/plot_a2.png", dir);
  CHECK(amd_plot_metrics(TSV_A, a2, 1200, 480, &st) == 0, "plot A again: %s", st.msg);
  CHECK(!pictures_differ(a, a2), "the same metrics gave different pictures");
  /* one value changed: the picture changes */
  char *tsv_c = strdup(TSV_A);
  char *p = strstr(tsv_c, "0.885000");
  if (p) memcpy(p, "0.805000", 8);
  CHECK(amd_plot_metrics(tsv_c, a2, 1200, 480, &st) == 0, "plot A': %s", st.msg);
  CHECK(pictures_differ(a, a2), "changing the last test accuracy left the picture as it was");
  free(tsv_c);

  /* a tall picture (stacked panels), a single epoch, CRLF line ends */
  char t[4200];
  snprintf(t, sizeof t, "%s/plot_tall.png", dir);
  CHECK(amd_plot_metrics(TSV_B, t, 640, 900, &st) == 0, "tall plot: %s", st.msg);
  png_size(t, &w, &h);
  CHECK(w == 640 && h == 900, "tall plot is %ux%u", w, h);
  const char *one = "epoch\ttrain_loss\ttrain_acc\ttest_loss\ttest_top1\r\n1\t0.5\t0.8\t0.6\t0.75\r\n";
  snprintf(t, sizeof t, "%s/plot_one.png", dir);
  CHECK(amd_plot_metrics(one, t, 800, 400, &st) == 0, "one epoch: %s", st.msg);
  png_size(t, &w, &h);
  CHECK(w == 800 && h == 400, "one-epoch plot is %ux%u", w, h);
  /* a missing value (a run without a test split) is left out, not an error */
  const char *gap =
      "epoch\ttrain_loss\ttrain_acc\ttest_loss\ttest_top1\n1\t0.5\t0.8\t\t\n2\t0.4\t0.85\tnan\t\n";
  snprintf(t, sizeof t, "%s/plot_gap.png", dir);
  CHECK(amd_plot_metrics(gap, t, 800, 400, &st) == 0, "missing values: %s", st.msg);

  /* errors */
  const char *header_only = "epoch\thours\ttrain_loss\ttrain_acc\ttest_loss\ttest_top1\tlr\timages_per_s\n";
  char e[4200];
  snprintf(e, sizeof e, "%s/plot_error.png", dir);
  remove(e);
  st.msg[0] = 0;
  CHECK(amd_plot_metrics("", e, 800, 400, &st) == -1 && strstr(st.msg, "empty"), "empty TSV: '%s'", st.msg);
  st.msg[0] = 0;
  CHECK(amd_plot_metrics(header_only, e, 800, 400, &st) == -1 && strstr(st.msg, "no epoch rows"),
        "header only: '%s'", st.msg);
  st.msg[0] = 0;
  CHECK(amd_plot_metrics("a\tb\n1\t2\n", e, 800, 400, &st) == -1 && strstr(st.msg, "metrics TSV"),
        "not a metrics TSV: '%s'", st.msg);
  st.msg[0] = 0;
  CHECK(amd_plot_metrics("epoch\ttrain_loss\nx\t1\n", e, 800, 400, &st) == -1 && strstr(st.msg, "line 2"),
        "bad epoch: '%s'", st.msg);
  st.msg[0] = 0;
  CHECK(amd_plot_metrics(TSV_A, e, 50, 400, &st) == -1 && strstr(st.msg, "50x400"), "tiny picture: '%s'",
        st.msg);
  CHECK(!file_exists(e), "a failed plot wrote %s", e);
  st.msg[0] = 0;
  CHECK(amd_plot_metrics(TSV_A, "/nonexistent-dir/plot.png", 800, 400, &st) == -1 &&
            strstr(st.msg, "/nonexistent-dir/plot.png"),
        "unwritable path: '%s'", st.msg);
  printf("  errors: e.g. \"%s\"\n", st.msg);

  /* several runs' curves of one column (amd_plot_runs) */
  {
    const char *texts[3] = {TSV_A, TSV_B, TSV_A};
    const char *labels[3] = {"acc32", "am16", "fp16"};
    char r1[4200], r2[4200];
    snprintf(r1, sizeof r1, "%s/runs_1.png", dir);
    snprintf(r2, sizeof r2, "%s/runs_2.png", dir);
    CHECK(amd_plot_runs(texts, labels, 2, "test_top1", NULL, r1, 900, 500, &st) == 0, "runs: %s", st.msg);
    png_size(r1, &w, &h);
    CHECK(w == 900 && h == 500, "runs picture is %ux%u, expected 900x500", w, h);
    CHECK(inked_pixels(r1) > 900 * 500 / 60, "the runs picture is nearly blank");
    /* a third run, and another column: other pictures */
    CHECK(amd_plot_runs(texts, labels, 3, "test_top1", "ResNet-18", r2, 900, 500, &st) == 0, "3 runs: %s", st.msg);
    CHECK(pictures_differ(r1, r2), "a third run left the picture as it was");
    CHECK(amd_plot_runs(texts, labels, 2, "train_loss", NULL, r2, 900, 500, &st) == 0, "losses: %s", st.msg);
    CHECK(pictures_differ(r1, r2), "another column gave the same picture");
    /* errors name the run or the column */
    remove(e);
    st.msg[0] = 0;
    CHECK(amd_plot_runs(texts, labels, 2, "top5", NULL, e, 900, 500, &st) == -1 && strstr(st.msg, "'top5'"),
          "unknown column: '%s'", st.msg);
    st.msg[0] = 0;
    CHECK(amd_plot_runs(texts, labels, 2, "val_top1", NULL, e, 900, 500, &st) == -1 &&
              strstr(st.msg, "'acc32' has no column val_top1"),
          "missing column: '%s'", st.msg);
    const char *bad[2] = {TSV_A, header_only};
    st.msg[0] = 0;
    CHECK(amd_plot_runs(bad, labels, 2, "test_top1", NULL, e, 900, 500, &st) == -1 &&
              strstr(st.msg, "run 'am16'") && strstr(st.msg, "no epoch rows"),
          "a run without rows: '%s'", st.msg);
    st.msg[0] = 0;
    CHECK(amd_plot_runs(texts, labels, 0, "test_top1", NULL, e, 900, 500, &st) == -1 && st.msg[0], "no runs");
    CHECK(!file_exists(e), "a failed runs picture wrote %s", e);
    printf("  runs: %ux%u; errors: e.g. \"%s\"\n", w, h, st.msg);
  }

  /* the confusion picture */
  int64_t m1[9] = {50, 3, 2, 4, 40, 6, 1, 2, 47}, m2[9] = {20, 20, 15, 10, 30, 10, 25, 5, 20};
  const char *names[3] = {"cat", "dog", "automobile"};
  CHECK(amd_plot_confusion(m1, 3, names, c1, &st) == 0, "confusion 1: %s", st.msg);
  CHECK(amd_plot_confusion(m2, 3, names, c2, &st) == 0, "confusion 2: %s", st.msg);
  uint32_t w2, h2;
  png_size(c1, &w, &h);
  png_size(c2, &w2, &h2);
  CHECK(w >= 200 && h >= 200 && w == w2 && h == h2, "confusion pictures %ux%u and %ux%u", w, h, w2, h2);
  CHECK(inked_pixels(c1) > 2000, "confusion 1 is nearly blank");
  CHECK(pictures_differ(c1, c2), "different confusion matrices gave the same picture");
  printf("  confusion: %ux%u\n", w, h);
  /* ten classes without names; a hundred classes (no counts in the tiny cells) */
  int64_t *big = calloc(100 * 100, sizeof *big);
  for (int i = 0; i < 100; i++)
    for (int j = 0; j < 100; j++) big[i * 100 + j] = i == j ? 90 : (i * 7 + j * 3) % 11 == 0 ? 3 : 0;
  char c3[4200], c4[4200];
  snprintf(c3, sizeof c3, "%s/confusion_10.png", dir);
  snprintf(c4, sizeof c4, "%s/confusion_100.png", dir);
  int64_t ten[100];
  for (int i = 0; i < 100; i++) ten[i] = i / 10 == i % 10 ? 900 + i : (i * 13) % 7 * 3;
  CHECK(amd_plot_confusion(ten, 10, NULL, c3, &st) == 0, "10 classes: %s", st.msg);
  CHECK(amd_plot_confusion(big, 100, NULL, c4, &st) == 0, "100 classes: %s", st.msg);
  png_size(c4, &w, &h);
  CHECK(w > 0 && h > 0, "100-class picture");
  free(big);
  /* errors */
  st.msg[0] = 0;
  CHECK(amd_plot_confusion(m1, 0, NULL, e, &st) == -1 && st.msg[0], "0 classes");
  int64_t neg[4] = {1, -1, 0, 1};
  st.msg[0] = 0;
  CHECK(amd_plot_confusion(neg, 2, NULL, e, &st) == -1 && strstr(st.msg, "negative"), "negative: '%s'",
        st.msg);
  CHECK(!file_exists(e), "a failed confusion picture wrote %s", e);

  amd_plot_release(); /* fonts freed: LeakSanitizer sees no leak in the sanitize suite */
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("all plot checks passed\n");
  return 0;
}

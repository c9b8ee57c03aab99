/* Loads a real data set when it is present and checks what is known about it.
 *   test_data_real mnist DIR     60000/10000, 28x28, first labels 5 (train) and 7 (test)
 *   test_data_real fashion DIR   60000/10000, 28x28, first labels 9 (train) and 9 (test)
 *   test_data_real cifar10 DIR   50000/10000, 3x32x32, test first label 3, 5000 per class
 * Prints SKIP and exits 77 (meson's skip code) when DIR does not exist. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "data/dataset.h"

static int failures = 0;
#define CHECK(cond, ...)                                     \
  do {                                                       \
    if (!(cond)) {                                           \
      failures++;                                            \
      printf("FAIL %s: ", #cond);                            \
      printf(__VA_ARGS__);                                   \
      printf("\n");                                          \
    }                                                        \
  } while (0)

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s mnist|fashion|cifar10 DIR\n", argv[0]);
    return 2;
  }
  const char *kind = argv[1], *dir = argv[2];
  struct stat sb;
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
    printf("SKIP: %s not found\n", dir);
    return 77;
  }
  char spec[4200];
  snprintf(spec, sizeof spec, "%s:%s", strcmp(kind, "fashion") ? kind : "mnist", dir);
  amd_dataset ds;
  amd_status st = {{0}};
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (amd_dataset_load(spec, &ds, &st)) {
    printf("FAIL: %s\n", st.msg);
    return 1;
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  char line[512];
  printf("%s (%.2f s)\n", amd_dataset_describe(&ds, line, sizeof line),
         (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
  CHECK(ds.n_classes == 10, "n_classes %lld", (long long)ds.n_classes);
  if (!strcmp(kind, "mnist") || !strcmp(kind, "fashion")) {
    int fashion = !strcmp(kind, "fashion");
    CHECK(ds.train.n == 60000 && ds.test.n == 10000, "counts %lld %lld", (long long)ds.train.n,
          (long long)ds.test.n);
    CHECK(ds.c == 1 && ds.h == 28 && ds.w == 28, "shape");
    int64_t l0 = fashion ? 9 : 5, t0l = fashion ? 9 : 7;
    CHECK(ds.train.labels[0] == l0, "first train label %lld", (long long)ds.train.labels[0]);
    CHECK(ds.test.labels[0] == t0l, "first test label %lld", (long long)ds.test.labels[0]);
    /* The training split's statistics (numpy, float64, over all pixels / 255).
     * The test split's differ by 8e-4 or more in the mean (Fashion-MNIST:
     * 0.2868492, MNIST: 0.1325146), so the tolerance tells the two apart. */
    double m = fashion ? 0.2860406 : 0.1306605, s = fashion ? 0.3530242 : 0.3081078;
    CHECK(fabs(ds.mean[0] - m) < 1e-5 && fabs(ds.std[0] - s) < 1e-5, "mean %.7f std %.7f",
          ds.mean[0], ds.std[0]);
  } else if (!strcmp(kind, "cifar10")) {
    CHECK(ds.train.n == 50000 && ds.test.n == 10000, "counts %lld %lld", (long long)ds.train.n,
          (long long)ds.test.n);
    CHECK(ds.c == 3 && ds.h == 32 && ds.w == 32, "shape");
    CHECK(ds.test.labels[0] == 3, "first test label %lld", (long long)ds.test.labels[0]);
    int64_t per[10] = {0};
    for (int64_t i = 0; i < ds.train.n; i++) per[ds.train.labels[i]]++;
    int even = 1;
    for (int k = 0; k < 10; k++) even &= per[k] == 5000;
    CHECK(even, "5000 training images per class");
    /* Training split (numpy, float64); the test split's means are 0.4942143,
     * 0.4851314, 0.4504091: 1.8e-3 or more away. */
    static const double m[3] = {0.4913997, 0.4821584, 0.4465309}, s[3] = {0.2470322, 0.2434851, 0.2615878};
    for (int c = 0; c < 3; c++)
      CHECK(fabs(ds.mean[c] - m[c]) < 1e-5 && fabs(ds.std[c] - s[c]) < 1e-5, "channel %d mean %.7f std %.7f",
            c, ds.mean[c], ds.std[c]);
  } else {
    printf("unknown kind %s\n", kind);
    failures++;
  }
  amd_dataset_free(&ds);
  printf(failures ? "FAILED\n" : "OK\n");
  return failures ? 1 : 0;
}

/* dump-images: loads a data set as `eval` / `train` do (amd_dataset_load_opts
 * with the image options) and writes what the trainer would get, for the
 * comparisons with torchvision (test_images.py). Not installed.
 *
 * usage: dump-images SPEC OUT.bin [--resize N|HxW] [--crop N|HxW] [--normalize NORM]
 *                    [--workers N] [--fast-decode] [--skip-bad]
 * OUT.bin (little-endian): 8 int64 n_train n_test c h w n_classes test_is_train skipped,
 * then c float32 means and c stds, then per split (train, test): n*c*h*w uint8
 * pixels, n int64 labels, n*c*h*w float32 normalised values (amd_dataset_batch,
 * no augmentation). Prints the describe line and the note on stdout; on a
 * load error prints "error: MESSAGE" on stderr and exits 1 (2: bad arguments). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "data/dataset.h"

static int write_split(FILE *f, const amd_dataset *ds, const amd_data_split *s) {
  int64_t chw = ds->c * ds->h * ds->w;
  if (fwrite(s->u8, 1, (size_t)(s->n * chw), f) != (size_t)(s->n * chw)) return -1;
  if (fwrite(s->labels, sizeof(int64_t), (size_t)s->n, f) != (size_t)s->n) return -1;
  int64_t *idx = malloc((size_t)(s->n ? s->n : 1) * sizeof *idx);
  float *x = malloc((size_t)(s->n ? s->n * chw : 1) * sizeof *x);
  int64_t *y = malloc((size_t)(s->n ? s->n : 1) * sizeof *y);
  if (!idx || !x || !y) return -1;
  for (int64_t i = 0; i < s->n; i++) idx[i] = i;
  amd_dataset_batch(ds, s, idx, s->n, NULL, NULL, x, y);
  int rc = fwrite(x, sizeof(float), (size_t)(s->n * chw), f) == (size_t)(s->n * chw) ? 0 : -1;
  free(idx);
  free(x);
  free(y);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: dump-images SPEC OUT.bin [image options]\n");
    return 2;
  }
  amd_image_opts o = {0};
  amd_status st = {{0}};
  for (int i = 3; i < argc; i++) {
    int k = amd_image_opt_parse(argv[i], i + 1 < argc ? argv[i + 1] : NULL, &o, &st);
    if (k <= 0) {
      fprintf(stderr, "dump-images: %s\n", k < 0 ? st.msg : "unknown option");
      return 2;
    }
    i += k - 1;
  }
  amd_dataset ds;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (amd_dataset_load_opts(argv[1], &o, &ds, &st)) {
    fprintf(stderr, "error: %s\n", st.msg);
    return 1;
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  char line[2048];
  printf("%s\n", amd_dataset_describe(&ds, line, sizeof line));
  printf("load %.3f s, %.1f images/s\n", secs,
         secs > 0 ? (double)(ds.train.n + (ds.test_is_train ? 0 : ds.test.n)) / secs : 0.0);
  if (ds.note[0]) fprintf(stderr, "note: %s\n", ds.note);
  FILE *f = fopen(argv[2], "wb");
  int64_t hdr[8] = {ds.train.n, ds.test.n, ds.c, ds.h, ds.w, ds.n_classes, ds.test_is_train, ds.skipped};
  int rc = !f || fwrite(hdr, sizeof hdr, 1, f) != 1 || fwrite(ds.mean, sizeof(float), (size_t)ds.c, f) != (size_t)ds.c ||
           fwrite(ds.std, sizeof(float), (size_t)ds.c, f) != (size_t)ds.c || write_split(f, &ds, &ds.train) ||
           write_split(f, &ds, &ds.test);
  if (f && fclose(f)) rc = 1;
  amd_dataset_free(&ds);
  if (rc) {
    fprintf(stderr, "dump-images: cannot write %s\n", argv[2]);
    return 1;
  }
  return 0;
}

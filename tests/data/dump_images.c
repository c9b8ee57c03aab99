/* dump-images: loads a data set as `eval` / `train` do (amd_dataset_load_opts
 * with the image options) and writes what the trainer would get, for the
 * comparisons with torchvision (test_images.py). Not installed.
 *
 * usage: dump-images SPEC OUT.bin [--resize N|HxW] [--crop N|HxW] [--normalize NORM]
 *                    [--workers N] [--fast-decode] [--skip-bad]
 *                    [--augment LIST [--seed S] [--epochs E]]
 * OUT.bin (little-endian): 8 int64 n_train n_test c h w n_classes test_is_train skipped,
 * then c float32 means and c stds, then per split (train, test): n*c*h*w uint8
 * pixels, n int64 labels, n*c*h*w float32 normalised values (amd_dataset_batch,
 * no augmentation; an uncropped split (rrc): its centre crops). With
 * --augment (train's list; rrc keeps the training images uncropped): int64
 * ragged, then where ragged n_train int32 heights, n_train int32 widths and
 * the stored images (HWC uint8, one after the other); int64 E, then per
 * epoch E the training split's samples 0..n-1 in order as train draws them
 * (the augmentation stream seeded as train seeds it from S, default 1, and
 * running on through the epochs): n records of 8 int32 (box y, x, h, w,
 * mirror, dy, dx, and 1 when amd_dataset_batch gave the same values as the
 * plan + fill), n*h*w*c uint8 pixels before normalisation and mirroring
 * (ragged only, else nothing), n*c*h*w float32 (the batch).
 * Prints the describe line and the note on stdout; on a load error prints
 * "error: MESSAGE" on stderr and exits 1 (2: bad arguments). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "data/dataset.h"

/* An uncropped split's centre crops as [n, C, H, W] uint8. */
static uint8_t *centre_crops(const amd_dataset *ds, const amd_data_split *s) {
  const int64_t C = ds->c, HW = ds->h * ds->w;
  uint8_t *out = malloc((size_t)(s->n * C * HW + 1)), *hwc = malloc((size_t)(C * HW));
  if (!out || !hwc) exit(1);
  for (int64_t i = 0; i < s->n; i++) {
    amd_batch_sample p = {.src = i};
    amd_dataset_ragged_pixels(ds, s, &p, hwc);
    for (int64_t k = 0; k < HW; k++)
      for (int64_t c = 0; c < C; c++) out[(i * C + c) * HW + k] = hwc[k * C + c];
  }
  free(hwc);
  return out;
}

static int write_split(FILE *f, const amd_dataset *ds, const amd_data_split *s) {
  int64_t chw = ds->c * ds->h * ds->w;
  uint8_t *u8 = s->rag ? centre_crops(ds, s) : s->u8;
  size_t wrote = fwrite(u8, 1, (size_t)(s->n * chw), f);
  if (s->rag) free(u8);
  if (wrote != (size_t)(s->n * chw)) return -1;
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

/* The --augment section (see the header comment). */
static int write_augmented(FILE *f, const amd_dataset *ds, const amd_augment *aug, int64_t seed,
                           int64_t epochs) {
  const amd_data_split *s = &ds->train;
  const int64_t n = s->n, chw = ds->c * ds->h * ds->w;
  int64_t ragged = s->rag != NULL;
  if (fwrite(&ragged, 8, 1, f) != 1) return -1;
  if (ragged &&
      (fwrite(s->rag_h, 4, (size_t)n, f) != (size_t)n || fwrite(s->rag_w, 4, (size_t)n, f) != (size_t)n ||
       fwrite(s->rag, 1, (size_t)s->rag_off[n], f) != (size_t)s->rag_off[n]))
    return -1;
  if (fwrite(&epochs, 8, 1, f) != 1) return -1;
  int64_t *idx = malloc((size_t)(n + 1) * sizeof *idx), *y = malloc((size_t)(n + 1) * sizeof *y);
  amd_batch_sample *plan = malloc((size_t)(n + 1) * sizeof *plan);
  float *x = malloc((size_t)(n * chw + 1) * sizeof *x), *x2 = malloc((size_t)(n * chw + 1) * sizeof *x2);
  int32_t *rec = malloc((size_t)(n + 1) * 8 * sizeof *rec);
  uint8_t *pix = malloc((size_t)(n * chw + 1));
  if (!idx || !y || !plan || !x || !x2 || !rec || !pix) return -1;
  for (int64_t i = 0; i < n; i++) idx[i] = i;
  uint64_t rng = (uint64_t)seed * 0x9e3779b97f4a7c15ull + 1; /* as train seeds the augmentation stream */
  int rc = 0;
  for (int64_t e = 0; !rc && e < epochs; e++) {
    uint64_t rng2 = rng;
    amd_dataset_batch_plan(ds, s, idx, n, aug, &rng, plan, y);
    amd_dataset_batch_fill(ds, s, plan, n, x);
    amd_dataset_batch(ds, s, idx, n, aug, &rng2, x2, y); /* train's call: the same draws and values */
    int same = rng2 == rng && !memcmp(x, x2, (size_t)(n * chw) * sizeof *x);
    for (int64_t i = 0; i < n; i++) {
      const amd_batch_sample *p = &plan[i];
      int32_t r[8] = {p->box_y, p->box_x, p->box_h, p->box_w, p->mirror, p->dy, p->dx, same};
      memcpy(rec + 8 * i, r, sizeof r);
      if (ragged) amd_dataset_ragged_pixels(ds, s, p, pix + i * chw);
    }
    if (fwrite(rec, sizeof *rec, (size_t)(8 * n), f) != (size_t)(8 * n) ||
        (ragged && fwrite(pix, 1, (size_t)(n * chw), f) != (size_t)(n * chw)) ||
        fwrite(x, sizeof *x, (size_t)(n * chw), f) != (size_t)(n * chw))
      rc = -1;
  }
  free(idx), free(y), free(plan), free(x), free(x2), free(rec), free(pix);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr,
            "usage: dump-images SPEC OUT.bin [image options] [--augment LIST [--seed S] [--epochs E]]\n");
    return 2;
  }
  amd_image_opts o = {0};
  amd_status st = {{0}};
  amd_augment aug = {0};
  const char *augment = NULL;
  long long seed = 1, epochs = 1;
  for (int i = 3; i < argc; i++) {
    if (i + 1 < argc && !strcmp(argv[i], "--augment")) {
      augment = argv[++i];
      if (amd_augment_parse(augment, &aug, &st)) {
        fprintf(stderr, "dump-images: %s\n", st.msg);
        return 2;
      }
      o.uncropped_train = aug.rrc;
      continue;
    }
    if (i + 1 < argc && !strcmp(argv[i], "--seed")) {
      seed = atoll(argv[++i]);
      continue;
    }
    if (i + 1 < argc && !strcmp(argv[i], "--epochs")) {
      epochs = atoll(argv[++i]);
      continue;
    }
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
  int rc = !f || fwrite(hdr, sizeof hdr, 1, f) != 1 ||
           fwrite(ds.mean, sizeof(float), (size_t)ds.c, f) != (size_t)ds.c ||
           fwrite(ds.std, sizeof(float), (size_t)ds.c, f) != (size_t)ds.c || write_split(f, &ds, &ds.train) ||
           write_split(f, &ds, &ds.test) || (augment && write_augmented(f, &ds, &aug, seed, epochs));
  if (f && fclose(f)) rc = 1;
  amd_dataset_free(&ds);
  if (rc) {
    fprintf(stderr, "dump-images: cannot write %s\n", argv[2]);
    return 1;
  }
  return 0;
}

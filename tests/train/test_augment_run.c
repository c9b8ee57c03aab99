/* The augmentation stream through the training loop (src/train/run.c,
 * amd_train_run): every batch of an epoch, and every epoch, must take new
 * draws from the run's stream (amd_train_state.aug_rng), not start again from
 * one copy of it.
 *
 * The draws are made observable through the loss: the learning rate is 1e-30
 * (0 is refused; lr times a gradient is below half an ulp of every weight, so
 * the weights keep their values), and every training sample is the same image with
 * the same label, so the loss of a step is a function of that step's
 * augmentation draws alone. The progress hook, called after every step,
 * gives the epoch's running loss sum, hence each step's loss. Then:
 *  - without augmentation (the control), every step has the same loss: the
 *    weights did not move, and what varies below varies through the draws only;
 *  - with --augment crop:2,flip,cutout:4 (a tensors: data set) and with
 *    --augment rrc,flip (an images: folder of PNGs, random resized crops from
 *    the uncropped images), no two steps of the run have the same loss, within
 *    an epoch or across the two epochs. A loop that hands every batch the same
 *    copy of the stream gives every step the same loss; one that restarts the
 *    stream each epoch repeats the first epoch's losses.
 * usage: test_augment_run MODELS_DIR */
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../test_check.h"
#include "exec/backend.h"
#include "onnx/tensor_proto.h"
#include "onnx/load.h"
#include "train/run.h"

enum { SAMPLES = 12, BATCH = 2, EPOCHS = 2, STEPS = EPOCHS * SAMPLES / BATCH, SIDE = 28 };

static char tmpdir[256];

/* The steps' losses of one run, from the progress reports. */
typedef struct step_losses {
  int n;          /* steps seen */
  int bad_report; /* a report out of order (not one per step) */
  int64_t epoch[STEPS + 1];
  double loss[STEPS + 1];
  double prev_sum; /* the epoch's loss sum at the previous report */
} step_losses;

static int on_progress(void *user, const amd_train_progress *p) {
  step_losses *l = user;
  if (!p) return 0;                  /* the epoch's steps are over */
  if (p->done == 1) l->prev_sum = 0; /* the sums restart with each epoch */
  int k = l->n;
  int64_t want_epoch = k / (SAMPLES / BATCH), want_done = k % (SAMPLES / BATCH) + 1;
  if (k == STEPS || p->epoch != want_epoch || p->done != want_done) {
    l->bad_report = 1;
    return 0;
  }
  l->epoch[k] = p->epoch;
  l->loss[k] = p->loss_sum - l->prev_sum;
  l->prev_sum = p->loss_sum;
  l->n++;
  return 0;
}

static void on_line(void *user, amd_train_line kind, const char *text) {
  (void)user;
  if (kind != AMD_TRAIN_INFO && kind != AMD_TRAIN_INFO_FLUSHED) printf("    train: %s\n", text);
}

static int cpu_backend(void *user, const amd_train_cfg *c, int local_rank, const amd_backend **be,
                       amd_status *st) {
  (void)user, (void)c, (void)local_rank, (void)st;
  *be = &amd_backend_cpu;
  return 0;
}

/* Trains lenet300 for EPOCHS epochs of batches of BATCH at learning rate 1e-30 on
 * data with the augmentation aug (NULL: none); fills l. Returns amd_train_run's
 * 0 (done) or -1 after printing the error. */
static int train(const char *model, const char *data, const char *aug, const amd_image_opts *img,
                 step_losses *l) {
  char out[300];
  snprintf(out, sizeof out, "%s/trained.onnx", tmpdir);
  amd_train_cfg c;
  memset(&c, 0, sizeof c);
  c.model = model, c.data = data, c.out = out, c.augment = aug;
  c.mode = "acc32", c.optimizer = "sgd", c.schedule = "constant";
  c.epochs = EPOCHS, c.batch = BATCH, c.seed = 1;
  c.lr = 1e-30f, c.momentum = 0, c.momentum_set = 1; /* the weights stay as they are (see the top) */
  c.env = amd_env_defaults();
  if (img) c.img = *img;
  memset(l, 0, sizeof *l);
  const amd_train_hooks h = {
      .user = l, .progress_every_step = 1, .backend = cpu_backend, .line = on_line, .progress = on_progress};
  amd_status st = {{0}};
  int rc = amd_graph_load(model, 1, &c.graph, &st);
  if (rc == 0) rc = amd_train_run(&c, &h, &st);
  if (rc) printf("    train: %s\n", st.msg);
  amd_graph_free(c.graph);
  return rc;
}

/* Losses closer than this are the same: the per-step losses come back as
 * differences of a running double sum (a few ulps of noise), while different
 * inputs change the float32 loss by at least one float32 ulp (~1e-7). */
static int same_loss(double a, double b) { return fabs(a - b) <= 1e-9 * (1 + fabs(a)); }

static void print_losses(const char *what, const step_losses *l) {
  printf("  %s:", what);
  for (int k = 0; k < l->n; k++)
    printf("%s %.7f", k && l->epoch[k] != l->epoch[k - 1] ? " |" : "", l->loss[k]);
  printf("\n");
}

static void check_run(const char *what, int rc, const step_losses *l) {
  CHECK(rc == 0, "%s: train exited with %d", what, rc);
  CHECK(l->n == STEPS && !l->bad_report, "%s: %d progress reports of the %d steps (one per step expected%s)",
        what, l->n, STEPS, l->bad_report ? ", some out of order" : "");
  print_losses(what, l);
}

/* No two steps of the run share a loss: new draws for every batch of an
 * epoch, and another epoch's draws are not the first's again. */
static void check_all_differ(const char *what, const step_losses *l) {
  int within = 0, across = 0;
  for (int j = 1; j < l->n; j++)
    for (int i = 0; i < j; i++) {
      if (!same_loss(l->loss[i], l->loss[j])) continue;
      if (l->epoch[i] == l->epoch[j])
        within++;
      else
        across++;
      if (within + across <= 3)
        printf("    %s: step %d of epoch %lld and step %d of epoch %lld have the same loss %.9f\n", what,
               i % (SAMPLES / BATCH) + 1, (long long)l->epoch[i] + 1, j % (SAMPLES / BATCH) + 1,
               (long long)l->epoch[j] + 1, l->loss[j]);
    }
  CHECK(within == 0, "%s: %d pairs of steps of the same epoch have the same loss (the same draws)", what,
        within);
  CHECK(across == 0, "%s: %d pairs of steps of different epochs have the same loss (the same draws again)",
        what, across);
}

/* A pixel of the one training image: any value, no symmetry (flips and crops show). */
static uint8_t pixel(int x, int y) {
  return (uint8_t)(40 + (unsigned)(x * 7919 + y * 104729 + x * y * 31) % 211);
}

static void write_tensor(const char *path, const amd_tensor *t) {
  amd_status st = {{0}};
  CHECK(amd_tensor_write_file(path, t, "t", &st) == 0, "write %s: %s", path, st.msg);
}

/* SAMPLES copies of the image as float [SAMPLES, 1, SIDE, SIDE] with label 3. */
static void write_tensors(char *spec, size_t len) {
  amd_tensor x = {.dtype = AMD_FLOAT, .rank = 4, .dims = {SAMPLES, 1, SIDE, SIDE}};
  amd_tensor y = {.dtype = AMD_INT64, .rank = 1, .dims = {SAMPLES}};
  amd_status st = {{0}};
  CHECK(amd_tensor_alloc(&x, &st) == 0 && amd_tensor_alloc(&y, &st) == 0, "alloc: %s", st.msg);
  float *xv = x.data;
  for (int s = 0; s < SAMPLES; s++) {
    ((int64_t *)y.data)[s] = 3;
    for (int i = 0; i < SIDE * SIDE; i++) xv[s * SIDE * SIDE + i] = pixel(i % SIDE, i / SIDE) / 255.0f;
  }
  char xp[300], yp[300];
  snprintf(xp, sizeof xp, "%s/x.pb", tmpdir);
  snprintf(yp, sizeof yp, "%s/y.pb", tmpdir);
  write_tensor(xp, &x);
  write_tensor(yp, &y);
  amd_tensor_free(&x);
  amd_tensor_free(&y);
  snprintf(spec, len, "tensors:%s,%s", xp, yp);
}

/* A grey PNG of w x h pixels, pixel(x, y). */
static void write_png(const char *path, int w, int h) {
  FILE *f = fopen(path, "wb");
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  png_byte row[64];
  if (!f || !info || w > 64 || setjmp(png_jmpbuf(png))) {
    CHECK(0, "cannot write %s", path);
    if (f) fclose(f);
    png_destroy_write_struct(&png, &info);
    return;
  }
  png_init_io(png, f);
  png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int y = 0; y < h; y++) {
    for (int x = 0; x < w; x++) row[x] = pixel(x, y);
    png_write_row(png, row);
  }
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  fclose(f);
}

/* An image folder of one class holding SAMPLES copies of a 40 x 36 image. */
static void write_folder(char *spec, size_t len) {
  char dir[300], path[340];
  snprintf(dir, sizeof dir, "%s/images", tmpdir);
  mkdir(dir, 0700);
  snprintf(path, sizeof path, "%s/a", dir);
  CHECK(mkdir(path, 0700) == 0, "mkdir %s", path);
  for (int s = 0; s < SAMPLES; s++) {
    snprintf(path, sizeof path, "%s/a/%02d.png", dir, s);
    write_png(path, 40, 36);
  }
  snprintf(spec, len, "images:%s", dir);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODELS_DIR\n", argv[0]);
    return 2;
  }
  char model[4096];
  snprintf(model, sizeof model, "%s/lenet300_train.onnx", argv[1]);
  snprintf(tmpdir, sizeof tmpdir, "/tmp/amd-augment-run-XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  char tensors[700], images[400];
  write_tensors(tensors, sizeof tensors);
  write_folder(images, sizeof images);
  step_losses l;

  int rc = train(model, tensors, NULL, NULL, &l);
  check_run("tensors, no augmentation", rc, &l);
  int differ = 0;
  for (int k = 1; k < l.n; k++) differ += !same_loss(l.loss[k], l.loss[0]);
  CHECK(differ == 0,
        "without augmentation %d steps differ from the first: the loss is not a function of the draws",
        differ);

  rc = train(model, tensors, "crop:2,flip,cutout:4", NULL, &l);
  check_run("tensors, crop:2,flip,cutout:4", rc, &l);
  check_all_differ("crop:2,flip,cutout:4", &l);

  amd_image_opts img = {.crop_h = SIDE, .crop_w = SIDE}; /* the crops' size; the images stay 40 x 36 */
  rc = train(model, images, NULL, &img, &l);
  check_run("images, no augmentation", rc, &l);
  differ = 0;
  for (int k = 1; k < l.n; k++) differ += !same_loss(l.loss[k], l.loss[0]);
  CHECK(differ == 0, "images without augmentation: %d steps differ from the first", differ);

  rc = train(model, images, "rrc,flip", &img, &l);
  check_run("images, rrc,flip", rc, &l);
  check_all_differ("rrc,flip", &l);

  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) printf("warning: could not remove %s\n", tmpdir);
  return check_summary();
}

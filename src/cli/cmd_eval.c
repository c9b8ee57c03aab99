/* `amdnn-onnx eval`: a model's accuracy on a data set under a multiplier mode,
 * in inference mode (BatchNormalization on its running statistics, no dropout). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../data/dataset.h"
#include "../data/image_stream.h"
#include "../exec/backend.h"
#include "../onnx/load.h"
#include "../report/plot.h"
#include "../report/profile.h"
#include "../exec/mode_apply.h"
#include "../train/trainer.h"
#include "cli_util.h"
#include "commands.h"

static const char usage[] =
    "usage: amdnn-onnx eval MODEL.onnx --data SPEC [--mode MODE] [--mode-map NAME_OR_OPTYPE=MODE,...]\n"
    "                       [--q8-calib minmax|percentile[:P]]\n"
    "                       [--batch N] [--split test|train] [--limit N] [--confusion FILE.png]\n"
    "                       [--tta] [--profile FILE.tsv] [--device cpu|cuda[:N]] [--gemm fast|exact]\n"
    "                       [--debug-sync]\n"
    "                       [--resize N|HxW] [--crop N|HxW] [--normalize NORM] [--workers N]\n"
    "                       [--fast-decode] [--skip-bad] [--in-memory]\n"
    "\n"
    "Evaluates MODEL on the test split (or the training split) of SPEC (the forms\n"
    "of `amdnn-onnx train --help`) with every Conv/Gemm/MatMul product computed by\n"
    "MODE (default acc32; --mode-map overrides nodes by name or op type; q8u:FILE and q8s:FILE\n"
    "are 8-bit product tables for quantized models, docs/quantized.md; --q8-calib how the\n"
    "float nodes they quantize on the fly calibrate their data range on the first 4\n"
    "batches, as for train), and prints top-1 and top-5 accuracy, the mean\n"
    "cross-entropy, images/s, the accuracy of each class and the confusion matrix\n"
    "(rows: label, columns: prediction). A model that ends in Softmax or\n"
    "LogSoftmax is scored on that node's input. --limit N scores only the first N\n"
    "samples of the split (of an image folder, sorted by class: N spread evenly over it). --confusion draws the confusion matrix as a picture.\n"
    "--tta (test-time augmentation) also runs every image mirrored left-right and\n"
    "scores the mean of the two logits.\n"
    "--profile FILE.tsv prints the time per stage (im2col, GEMM) and per op family\n"
    "(on a GPU timed with CUDA events) and writes the same rows to FILE.tsv.\n"
    "--device runs it on the CPU or a GPU (default: cuda when a GPU is present);\n"
    "--debug-sync synchronises after every GPU kernel.\n"
    AMD_CLI_GEMM_HELP
    "images: data (JPEG/PNG folders) and the normalisation of any data set:\n"
    "%s"
    "e.g. a torchvision ImageNet model: --data images:DIR --resize 256 --crop 224\n"
    "--normalize imagenet (the model exported to ONNX: tools/export_torchvision.py).\n"
    "With a normalisation other than dataset, only the split evaluated is decoded\n"
    "(DIR/val of DIR/train + DIR/val), and with --limit N only those N images;\n"
    "it is streamed: --workers threads decode it batch after batch, a few batches\n"
    "ahead of the model, in bounded memory, with the results of decoding it whole\n"
    "first, which --in-memory does (and the dataset normalisation always does).\n";

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* amd_trainer_eval_pieces's source: the stream's batches. */
static int next_batch(void *user, amd_data_split *piece, amd_status *st) {
  return amd_image_stream_next(user, piece, st);
}

/* The per-class accuracy and the confusion matrix (rows: label, columns: prediction). */
static void print_confusion(const int64_t *confusion, int64_t c, char **class_names) {
  printf("per-class accuracy:\n");
  for (int64_t k = 0; k < c; k++) {
    int64_t row = 0;
    for (int64_t j = 0; j < c; j++) row += confusion[k * c + j];
    char label[32];
    snprintf(label, sizeof label, "%lld", (long long)k);
    printf("  %-12s %6.2f%% of %lld\n", class_names ? class_names[k] : label,
           row ? 100.0 * (double)confusion[k * c + k] / (double)row : 0.0, (long long)row);
  }
  printf("confusion matrix (rows: label, columns: prediction):\n      ");
  for (int64_t j = 0; j < c; j++) printf(" %6lld", (long long)j);
  printf("\n");
  for (int64_t k = 0; k < c; k++) {
    printf("  %3lld ", (long long)k);
    for (int64_t j = 0; j < c; j++) printf(" %6lld", (long long)confusion[k * c + j]);
    printf("\n");
  }
}

/* The command line. */
typedef struct eval_args {
  const char *model, *data, *mode, *split, *map, *confusion_png, *profile, *device, *q8_calib;
  int debug_sync, tta, in_memory;
  int64_t batch, limit;
  amd_image_opts img; /* images: decoding and preprocessing, the normalisation */
} eval_args;

/* Parses argv into a; returns -1 to go on, else the exit code (0 after --help, 2 on a bad argument). */
static int parse_args(int argc, char **argv, eval_args *a) {
  memset(a, 0, sizeof *a);
  a->mode = "acc32", a->split = "test", a->batch = 256;
  amd_status img_st;
  int img_k;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
      printf(usage, amd_image_opts_help());
      return 0;
    } else if (!strcmp(o, "--data") && v) a->data = argv[++i];
    else if (!strcmp(o, "--mode") && v) a->mode = argv[++i];
    else if (!strcmp(o, "--mode-map") && v) a->map = argv[++i];
    else if (!strcmp(o, "--q8-calib") && v) {
      a->q8_calib = argv[++i];
      if (amd_cli_check_q8_calib("amdnn-onnx eval", a->q8_calib)) return 2;
    }
    else if (!strcmp(o, "--device") && v) a->device = argv[++i];
    else if (!strcmp(o, "--debug-sync")) a->debug_sync = 1;
    else if (!strcmp(o, "--gemm") && v) {
      if (amd_cli_gemm_tier("amdnn-onnx eval", argv[++i])) return 2;
    }
    else if (!strcmp(o, "--tta")) a->tta = 1;
    else if (!strcmp(o, "--in-memory")) a->in_memory = 1;
    else if (!strcmp(o, "--confusion") && v) {
      a->confusion_png = argv[++i];
      if (!amd_plot_available()) {
        fprintf(stderr, "amdnn-onnx eval: --confusion: built without cairo (install libcairo2-dev and rebuild)\n");
        return 2;
      }
    }
    else if (!strcmp(o, "--split") && v) a->split = argv[++i];
    else if (!strcmp(o, "--profile") && v) a->profile = argv[++i];
    else if ((!strcmp(o, "--batch") || !strcmp(o, "--limit")) && v) {
      int64_t *dst = !strcmp(o, "--batch") ? &a->batch : &a->limit;
      if (amd_parse_i64(argv[++i], dst) || *dst < 1) {
        fprintf(stderr, "amdnn-onnx eval: bad value '%s' for %s\n", v, o);
        return 2;
      }
    } else if ((img_k = amd_image_opt_parse(o, v, &a->img, &img_st)) != 0) {
      if (img_k < 0) {
        fprintf(stderr, "amdnn-onnx eval: %s\n", img_st.msg);
        return 2;
      }
      i += img_k - 1;
    } else if (o[0] != '-' && !a->model) a->model = o;
    else {
      fprintf(stderr, "amdnn-onnx eval: unknown or incomplete argument '%s' (see --help)\n", o);
      return 2;
    }
  }
  if (!a->model || !a->data || (strcmp(a->split, "test") && strcmp(a->split, "train"))) {
    fprintf(stderr, "amdnn-onnx eval: MODEL and --data are required; --split is test or train (see --help)\n");
    return 2;
  }
  return -1;
}

/* How the streamed decoding kept up with the model, on stderr; then the stream's end (its skipped files). */
static void finish_stream(amd_image_stream *stream, amd_dataset *ds) {
  amd_image_stream_stats ss;
  amd_image_stream_stats_get(stream, &ss);
  if (ss.overlap)
    fprintf(stderr, "amdnn-onnx eval: decoded %lld images in %.2f s on %d threads (%.0f images/s) while the model "
                    "ran; the model waited %.2f s for them\n",
            (long long)ss.decoded, ss.decode_s, ss.workers,
            ss.decode_s > 0 ? (double)ss.decoded / ss.decode_s : 0.0, ss.wait_s);
  else
    fprintf(stderr, "amdnn-onnx eval: decoded %lld images on %d threads between the model's batches; the model "
                    "waited %.2f s for them\n",
            (long long)ss.decoded, ss.workers, ss.wait_s);
  amd_image_stream_finish(stream, ds);
  if (ds->note[0]) fprintf(stderr, "amdnn-onnx eval: warning: %s\n", ds->note);
}

int amd_cmd_eval(int argc, char **argv) {
  eval_args a;
  int rc = parse_args(argc, argv, &a);
  if (rc >= 0) return rc;
  rc = 1;
  amd_status st = {{0}};
  amd_graph *g = NULL;
  amd_dataset ds = {0};
  amd_trainer t = {0};
  amd_image_stream *stream = NULL; /* an image folder decoded while the model runs */
  amd_mode_set modes = {0};
  int64_t *confusion = NULL;
  const int test = strcmp(a.split, "test") == 0;
  if (amd_graph_load(a.model, 0, &g, &st) || amd_mode_apply(g, a.mode, a.map, NULL, &modes, &st) ||
      amd_q8_calib_apply(g, a.q8_calib, &st) ||
      amd_cli_eval_setup("amdnn-onnx eval", g, a.data, &a.img, test, a.limit, a.batch,
                         a.in_memory ? NULL : &stream, a.device, a.debug_sync, a.tta, &ds, &t, &st))
    goto fail;
  int64_t c = ds.n_classes;
  confusion = calloc((size_t)(c * c), sizeof *confusion);
  if (!confusion) {
    amd_fail(&st, "out of memory");
    goto fail;
  }
  const amd_data_split *s = test ? &ds.test : &ds.train;
  int64_t count = a.limit && a.limit < s->n ? a.limit : s->n;
  amd_batch_stats bs = {0};
  if (a.profile) amd_prof_start();
  double t0 = now_s();
  int eval_rc;
  if (stream) {
    eval_rc = amd_trainer_eval_pieces(&t, &ds, a.batch, next_batch, stream, &bs, confusion, c, &st);
  } else {
    int64_t *limit_idx = amd_cli_limit_index(&ds, s, a.limit);
    eval_rc = amd_trainer_eval_split(&t, &ds, s, limit_idx, count, a.batch, &bs, confusion, c, &st);
    free(limit_idx);
  }
  if (eval_rc) goto fail;
  double secs = now_s() - t0;
  if (stream) finish_stream(stream, &ds);
  amd_prof_on = 0;
  printf("model %s, mode %s, %s split of %s: %lld images%s\n", a.model, a.mode, a.split, a.data, (long long)bs.n,
         a.tta ? " (and each mirrored: --tta)" : "");
  printf("top1 %.2f%%  top5 %.2f%%  loss %.4f  %.0f images/s\n", 100.0 * (double)bs.top1 / (double)bs.n,
         100.0 * (double)bs.top5 / (double)bs.n, bs.loss_sum / (double)bs.n, secs > 0 ? (double)bs.n / secs : 0);
  print_confusion(confusion, c, ds.class_names);
  if (a.confusion_png) {
    if (amd_plot_confusion(confusion, c, (const char *const *)ds.class_names, a.confusion_png, &st)) goto fail;
    printf("confusion matrix picture: %s\n", a.confusion_png);
  }
  if (a.profile && amd_prof_report(stdout, a.profile, secs, (count + a.batch - 1) / a.batch, &st)) goto fail;
  rc = 0;
  goto done;
fail:
  fprintf(stderr, "amdnn-onnx eval: %s\n", st.msg);
done:
  amd_prof_on = 0;
  free(confusion);
  amd_trainer_free(&t);
  amd_graph_free(g);
  amd_image_stream_close(stream);
  amd_dataset_free(&ds);
  amd_mode_set_free(&modes);
  if (a.confusion_png) amd_plot_release();
  return rc;
}

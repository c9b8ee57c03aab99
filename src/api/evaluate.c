/* amdnn_session_evaluate: a model's accuracy on a data set in inference mode
 * (BatchNormalization on its running statistics, no dropout), and the
 * evaluator that sweep shares (api.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../data/image_stream.h"
#include "../exec/backend.h"
#include "../report/plot.h"
#include "../report/profile.h"
#include "../train/trainer.h"
#include "api.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void api_message(const amdnn_callbacks *cb, amdnn_message_kind kind, const char *fmt, ...) {
  if (!cb || !cb->message) return;
  char text[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  cb->message(cb->user, kind, text);
}

int api_progress(const amdnn_callbacks *cb, const amdnn_progress *p) {
  return cb && cb->progress && cb->progress(cb->user, p) != 0;
}

int api_profile_report(const amdnn_callbacks *cb, const char *tsv, double wall, int64_t steps, amd_status *st) {
  char *text;
  if (amd_prof_report_text(&text, tsv, wall, steps, st)) return -1;
  api_message(cb, AMDNN_MSG_INFO, "%s", text);
  free(text);
  return 0;
}

int64_t *api_limit_index(const amd_data_split *s, int64_t limit, int64_t *n) {
  *n = s->n;
  if (limit <= 0 || limit >= s->n) return NULL;
  int64_t *idx = malloc((size_t)limit * sizeof *idx);
  for (int64_t j = 0; idx && j < limit; j++) idx[j] = amd_spread_index(j, limit, s->n);
  if (idx) *n = limit;
  return idx;
}

/* The images' progress (decoding, header reading) as progress reports. */
static void on_image_progress(void *user, const char *stage, int64_t done, int64_t total) {
  const api_image_progress *ip = user;
  const double el = now_s() - ip->t0, rate = el > 0 ? (double)done / el : 0;
  const amdnn_progress p = {.stage = stage, .done = done, .total = total, .samples = done, .elapsed_s = el,
                            .images_per_s = rate, .eta_s = rate > 0 ? (double)(total - done) / rate : -1};
  api_progress(ip->cb, &p);
}

int api_check_tta(const amdnn_options *opts, amd_status *st) {
  if (api_opt_i64(opts, "tta-shift", 0) && !api_opt_flag(opts, "tta"))
    return amd_fail(st, "--tta-shift needs --tta (the shifted views come with the mirrored ones)");
  return 0;
}

int api_eval_trainer(amdnn_session *s, const amdnn_options *opts, amd_trainer *t, amd_status *st) {
  const amd_trainer_opts eval_opts = {.inference_only = 1}; /* quantized models too */
  const amd_backend *be;
  if (amd_trainer_init(t, s->g, &eval_opts, st)) return -1;
  /* (a profile on a GPU times with CUDA events on the stream: report/profile.h) */
  if (api_session_backend(s, 0, &be, st) || amd_trainer_set_backend(t, be, st)) return -1;
  t->tta = api_opt_flag(opts, "tta"), t->tta_shift = (int)api_opt_i64(opts, "tta-shift", 0);
  return 0;
}

int api_check_outputs(amd_trainer *t, const amd_dataset *ds, amd_status *st) {
  int64_t n_out;
  if (amd_trainer_n_outputs(t, ds, &n_out, st)) return -1;
  if (ds->n_classes > n_out)
    return amd_fail(st, "the data set has %lld classes but the model has %lld outputs", (long long)ds->n_classes,
                    (long long)n_out);
  return 0;
}

int api_eval_setup(amdnn_session *s, const amdnn_options *opts, api_image_progress *ip, int split_test,
                   amd_image_stream **stream, amd_dataset *ds, amd_trainer *t, amd_status *st) {
  const amdnn_callbacks *cb = ip->cb;
  const char *data = api_opt(opts, "data");
  if (!data) return amd_fail(st, "--data is required (mnist:DIR, cifar10:DIR, images:DIR, ...)");
  if (api_check_tta(opts, st)) return -1; /* (before the data is loaded) */
  amd_image_opts img;
  if (api_image_opts(opts, &img, st)) return -1;
  const int64_t limit = api_opt_i64(opts, "limit", 0), batch = api_opt_i64(opts, "batch", 256);
  img.only_split = split_test ? 1 : 2; /* the other split is not decoded (images:) */
  img.max_samples = limit;
  ip->t0 = now_s();
  img.progress = on_image_progress, img.progress_user = ip;
  char desc[512];
  if (stream && !api_opt_flag(opts, "in-memory") && !strncmp(data, "images:", 7) && img.norm != AMD_NORM_DATASET) {
    if (amd_image_stream_open(data, &img, batch, 0, ds, stream, st)) return -1;
  } else {
    if (amd_dataset_load_opts(data, &img, ds, st)) return -1;
    const double secs = now_s() - ip->t0;
    api_message(cb, AMDNN_MSG_NOTE, "%s; loaded in %.2f s (%.0f samples/s)", amd_dataset_describe(ds, desc, sizeof desc),
                secs, (double)(ds->train.n + (ds->test_is_train ? 0 : ds->test.n)) / (secs > 0 ? secs : 1e-9));
  }
  /* (a stream's note is complete at its end: the caller gives it then) */
  if (ds->note[0] && !(stream && *stream)) api_message(cb, AMDNN_MSG_WARNING, "%s", ds->note);
  if (api_eval_trainer(s, opts, t, st)) return -1;
  if (stream && *stream) {
    /* on the CPU the model's threads need every core: decoding between batches */
    const int overlap = t->be->device != AMD_DEVICE_CPU;
    amd_image_stream_set_overlap(*stream, overlap);
    amd_image_stream_stats ss;
    amd_image_stream_stats_get(*stream, &ss);
    api_message(cb, AMDNN_MSG_NOTE, "%s; headers read in %.2f s, decoding streamed on %d threads %s",
                amd_dataset_describe(ds, desc, sizeof desc), ss.header_s, ss.workers,
                overlap ? "while the model runs" : "between the model's batches (CPU)");
  }
  api_device_note(cb, s);
  return api_check_outputs(t, ds, st);
}

void api_device_note(const amdnn_callbacks *cb, amdnn_session *s) {
  const amdnn_model_info *info;
  if (!s->be || s->be->device == AMD_DEVICE_CPU) return;
  amdnn_status *bad = amdnn_session_info(s, &info);
  if (!bad && info->device_summary) api_message(cb, AMDNN_MSG_NOTE, "device %s: %s", s->be->name, info->device_summary);
  amdnn_status_free(bad);
}

/* amd_trainer_eval_pieces's source: the stream's batches. */
static int next_batch(void *user, amd_data_split *piece, amd_status *st) {
  return amd_image_stream_next(user, piece, st);
}

/* How the streamed decoding kept up with the model; then the stream's end (its skipped files). */
static void finish_stream(const amdnn_callbacks *cb, amd_image_stream *stream, amd_dataset *ds) {
  amd_image_stream_stats ss;
  amd_image_stream_stats_get(stream, &ss);
  if (ss.overlap)
    api_message(cb, AMDNN_MSG_NOTE,
                "decoded %lld images in %.2f s on %d threads (%.0f images/s) while the model ran; the model "
                "waited %.2f s for them",
                (long long)ss.decoded, ss.decode_s, ss.workers,
                ss.decode_s > 0 ? (double)ss.decoded / ss.decode_s : 0.0, ss.wait_s);
  else
    api_message(cb, AMDNN_MSG_NOTE,
                "decoded %lld images on %d threads between the model's batches; the model waited %.2f s for them",
                (long long)ss.decoded, ss.workers, ss.wait_s);
  amd_image_stream_finish(stream, ds);
  if (ds->note[0]) api_message(cb, AMDNN_MSG_WARNING, "%s", ds->note);
}

/* The result's copies of what outlives the data set: the class names. */
static int keep_class_names(amdnn_eval_result *r, const amd_dataset *ds, amd_status *st) {
  if (!ds->class_names) return 0;
  r->class_names = calloc((size_t)ds->n_classes, sizeof *r->class_names);
  if (!r->class_names) return amd_fail(st, "out of memory");
  for (int64_t k = 0; k < ds->n_classes; k++)
    if (!(r->class_names[k] = strdup(ds->class_names[k]))) return amd_fail(st, "out of memory");
  return 0;
}

void amdnn_eval_result_free(amdnn_eval_result *r) {
  if (!r) return;
  for (int64_t k = 0; r->class_names && k < r->n_classes; k++) free(r->class_names[k]);
  free(r->class_names);
  free(r->confusion);
  free(r);
}

/* The evaluation itself, once set up: the split (or the stream's pieces), the result, the pictures. */
static int evaluate(amdnn_session *s, const amdnn_options *opts, const amdnn_callbacks *cb, amd_dataset *ds,
                    amd_trainer *t, amd_image_stream *stream, amdnn_eval_result *r, amd_status *st) {
  const int test = !api_opt(opts, "split") || !strcmp(api_opt(opts, "split"), "test");
  const int64_t batch = api_opt_i64(opts, "batch", 256), limit = api_opt_i64(opts, "limit", 0);
  const char *profile = api_opt(opts, "profile"), *confusion = api_opt(opts, "confusion");
  r->n_classes = ds->n_classes;
  r->confusion = calloc((size_t)(r->n_classes * r->n_classes), sizeof *r->confusion);
  if (!r->confusion) return amd_fail(st, "out of memory");
  const amd_data_split *split = test ? &ds->test : &ds->train;
  int64_t count;
  amd_batch_stats bs = {0};
  if (profile) amd_prof_start();
  const double t0 = now_s();
  int rc;
  if (stream) {
    rc = amd_trainer_eval_pieces(t, ds, batch, next_batch, stream, &bs, r->confusion, r->n_classes, st);
  } else {
    int64_t *idx = api_limit_index(split, limit, &count);
    rc = amd_trainer_eval_split(t, ds, split, idx, count, batch, &bs, r->confusion, r->n_classes, st);
    free(idx);
  }
  if (rc) return -1;
  r->seconds = now_s() - t0;
  if (stream) finish_stream(cb, stream, ds);
  amd_prof_on = 0;
  r->n = bs.n, r->top1 = bs.top1, r->top5 = bs.top5;
  r->loss = bs.n ? bs.loss_sum / (double)bs.n : 0;
  r->images_per_s = r->seconds > 0 ? (double)bs.n / r->seconds : 0;
  amd_dataset_describe(ds, r->data_note, sizeof r->data_note);
  if (keep_class_names(r, ds, st)) return -1;
  if (confusion) {
    if (!amd_plot_available()) return amd_fail(st, "--confusion: this build has no cairo (install libcairo2-dev and rebuild)");
    int prc = amd_plot_confusion(r->confusion, r->n_classes, (const char *const *)ds->class_names, confusion, st);
    amd_plot_release();
    if (prc) return -1;
  }
  if (profile && api_profile_report(cb, profile, r->seconds, (bs.n + batch - 1) / batch, st)) return -1;
  (void)s;
  return 0;
}

amdnn_status *amdnn_session_evaluate(amdnn_session *s, const amdnn_options *opts, const amdnn_callbacks *cb,
                                     amdnn_eval_result **out) {
  if (!s || !out) return api_error(AMDNN_ERR_ARGUMENT, "amdnn_session_evaluate: session or out is NULL");
  *out = NULL;
  amdnn_status *bad = api_opts_check(opts, AMDNN_FOR_EVAL, "evaluate");
  if (bad) return bad;
  if (!api_opt(opts, "data")) return api_error(AMDNN_ERR_ARGUMENT, "--data is required (mnist:DIR, cifar10:DIR, images:DIR, ...)");
  amd_status st = {{0}};
  amd_dataset ds = {0};
  amd_trainer t = {0};
  amd_image_stream *stream = NULL; /* an image folder decoded while the model runs */
  amdnn_eval_result *r = calloc(1, sizeof *r);
  api_image_progress ip = {cb, 0}; /* outlives the stream */
  const int test = !api_opt(opts, "split") || !strcmp(api_opt(opts, "split"), "test");
  int rc = r ? 0 : amd_fail(&st, "out of memory");
  if (rc == 0) rc = api_eval_setup(s, opts, &ip, test, &stream, &ds, &t, &st);
  if (rc == 0) rc = evaluate(s, opts, cb, &ds, &t, stream, r, &st);
  amd_prof_on = 0;
  amd_trainer_free(&t);
  amd_image_stream_close(stream);
  amd_dataset_free(&ds);
  if (rc) {
    amdnn_eval_result_free(r);
    return api_from(&st, AMDNN_ERR_FAILED);
  }
  *out = r;
  return NULL;
}

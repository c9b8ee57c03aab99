/* Streaming one split of an image folder (see image_stream.h).
 *
 * The files that passed the header pass ("good" files, g = 0 .. ng-1) are
 * cut into chunks of B files; chunk j is decoded into ring slot j % R. The
 * workers take the files in order (a counter under the lock) and wait while
 * the file's chunk is R or more ahead of the oldest chunk the consumer still
 * holds. The consumer waits for its chunk to be complete, then either hands
 * the slot out as it is (the usual case: no file of it failed, and it is
 * full or the last one) or, once files have failed (--skip-bad), copies the
 * surviving samples into a staging batch so that every batch still holds B
 * samples, as the in-memory split cut every B samples would.
 *
 * Without --skip-bad a failed file stops the workers; the consumer waits
 * for the files being decoded, then reports the failure of the lowest file
 * index: every file before it was claimed (in order), so it is the first
 * bad file in file order, the one the in-memory load names.
 *
 * Lockstep (amd_image_stream_set_overlap 0): the workers claim only files
 * of chunks up to the one the consumer waits for, so they sleep while the
 * consumer works (the CPU backend, whose threads need every core). */
#include "image_stream.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "image_folder.h"

struct amd_image_stream {
  amd_img_folder f;
  amd_image_opts o; /* the caller's options (f.pool keeps a pointer to this copy) */
  const amd_img_split *sp;
  int64_t C, H, W, chw, B, ng, n_chunks;
  int R, slots; /* the ring's length, and the slots allocated (min(R, n_chunks)) */
  int64_t *good; /* [ng] the index in sp of good file g */
  uint8_t *pix;  /* [slots, B, chw] */
  int64_t *lab;  /* [slots, B] */
  uint8_t *fail; /* [slots, B] the file failed while decoding */
  int64_t *done; /* [slots] the files of the slot's chunk finished (decoded or failed) */
  /* shared with the workers, under mu */
  pthread_mutex_t mu;
  pthread_cond_t cv_work, cv_done;
  int64_t next_file;  /* the next good file to claim */
  int64_t released;   /* chunks [0, released) are free for reuse */
  int overlap;        /* 0: the workers decode only the chunk the consumer waits for (lockstep) */
  int64_t wanted;     /* the chunk the consumer waits for, or will first */
  int active;         /* workers decoding a file */
  int stop;           /* 1: a file failed (without --skip-bad); 2: closing */
  int64_t err_index;  /* the lowest good file that failed, and its message */
  amd_status err;
  int64_t n_failed;   /* files that failed while decoding */
  int64_t files_done;
  double t_start, t_last;
  /* the consumer's */
  int64_t chunk, cursor; /* the chunk being read and the next position in it */
  int hold;              /* the chunk was handed out whole: released at the next call */
  uint8_t *stage;        /* [B, chw] and [B]: a batch made up across chunks */
  int64_t *stage_lab;
  int64_t emitted;
  double last_report, wait_s, header_s;
  pthread_t *th;
  struct stream_worker_arg *args;
  int n_th;
  int mu_ok;
};

typedef struct stream_worker_arg {
  amd_image_stream *s;
  int id;
} stream_worker_arg;

static int64_t chunk_files(const amd_image_stream *s, int64_t j) {
  int64_t left = s->ng - j * s->B;
  return left < s->B ? left : s->B;
}

static void *stream_worker(void *arg) {
  stream_worker_arg *wa = arg;
  amd_image_stream *s = wa->s;
  const amd_img_split *sp = s->sp;
  for (;;) {
    pthread_mutex_lock(&s->mu);
    while (!s->stop && s->next_file < s->ng &&
           (s->next_file / s->B >= s->released + s->R || (!s->overlap && s->next_file / s->B > s->wanted)))
      pthread_cond_wait(&s->cv_work, &s->mu);
    if (s->stop || s->next_file >= s->ng) {
      pthread_mutex_unlock(&s->mu);
      break;
    }
    const int64_t g = s->next_file++;
    s->active++;
    pthread_mutex_unlock(&s->mu);

    /* the slot's position of file g is only written by this worker */
    const int64_t slot = (g / s->B) % s->R, k = slot * s->B + g % s->B, f = s->good[g];
    const int64_t bytes = amd_img_work_bytes(&sp->info[f]);
    amd_status est;
    amd_img_mem_reserve(&s->f.pool, bytes);
    const int bad = amd_img_decode_sample(sp->path[f], &sp->info[f], &s->o, s->C, s->H, s->W, &s->f.pool.tj[wa->id],
                                          s->pix + k * s->chw, &est) != 0;
    amd_img_mem_release(&s->f.pool, bytes);

    pthread_mutex_lock(&s->mu);
    s->lab[k] = sp->label[f];
    s->fail[k] = (uint8_t)bad;
    if (bad) {
      s->n_failed++;
      if (g < s->err_index) {
        s->err_index = g;
        s->err = est;
      }
      if (!s->o.skip_bad && !s->stop) {
        s->stop = 1;
        pthread_cond_broadcast(&s->cv_work);
      }
    }
    s->done[slot]++;
    s->files_done++;
    s->t_last = amd_img_mono_s();
    s->active--;
    pthread_cond_broadcast(&s->cv_done);
    pthread_mutex_unlock(&s->mu);
  }
  return NULL;
}

/* The progress line (amd_image_opts.progress) about every 2 s; mu not held. */
static void report(amd_image_stream *s) {
  if (!s->o.progress) return;
  const double t = amd_img_mono_s();
  if (t - s->last_report < 2.0) return;
  s->last_report = t;
  pthread_mutex_lock(&s->mu);
  const int64_t done = s->files_done;
  pthread_mutex_unlock(&s->mu);
  s->o.progress(s->o.progress_user, "decoding", done, s->ng);
}

/* Waits until chunk j is decoded; -1 with the first bad file's message
 * when the workers stopped on one. */
static int wait_chunk(amd_image_stream *s, int64_t j, amd_status *st) {
  const int64_t slot = j % s->R, n = chunk_files(s, j);
  const double t0 = amd_img_mono_s();
  pthread_mutex_lock(&s->mu);
  if (j > s->wanted) {
    s->wanted = j;
    pthread_cond_broadcast(&s->cv_work);
  }
  while (s->stop != 1 && s->done[slot] < n) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 1;
    pthread_cond_timedwait(&s->cv_done, &s->mu, &until);
    if (s->o.progress) {
      pthread_mutex_unlock(&s->mu);
      report(s);
      pthread_mutex_lock(&s->mu);
    }
  }
  int rc = 0;
  if (s->stop == 1) {
    while (s->active > 0) pthread_cond_wait(&s->cv_done, &s->mu);
    *st = s->err;
    rc = -1;
  }
  pthread_mutex_unlock(&s->mu);
  s->wait_s += amd_img_mono_s() - t0;
  return rc;
}

/* The consumer is done with chunk j: its slot goes to chunk j + R. */
static void release_chunk(amd_image_stream *s, int64_t j) {
  pthread_mutex_lock(&s->mu);
  s->done[j % s->R] = 0;
  s->released = j + 1;
  pthread_cond_broadcast(&s->cv_work);
  pthread_mutex_unlock(&s->mu);
}

int amd_image_stream_next(amd_image_stream *s, amd_data_split *b, amd_status *st) {
  memset(b, 0, sizeof *b);
  if (s->hold) {
    release_chunk(s, s->chunk);
    s->chunk++;
    s->cursor = 0;
    s->hold = 0;
  }
  report(s);
  int64_t have = 0;
  while (have < s->B && s->chunk < s->n_chunks) {
    if (wait_chunk(s, s->chunk, st)) return -1;
    const int64_t slot = s->chunk % s->R, n = chunk_files(s, s->chunk);
    const uint8_t *fail = s->fail + slot * s->B;
    if (have == 0 && s->cursor == 0 && (n == s->B || s->chunk == s->n_chunks - 1) && !memchr(fail, 1, (size_t)n)) {
      /* the slot is the batch */
      b->n = n;
      b->u8 = s->pix + slot * s->B * s->chw;
      b->labels = s->lab + slot * s->B;
      s->hold = 1;
      s->emitted += n;
      return 0;
    }
    if (!s->stage) {
      s->stage = malloc((size_t)(s->B * s->chw));
      s->stage_lab = malloc((size_t)s->B * sizeof *s->stage_lab);
      if (!s->stage || !s->stage_lab) return amd_fail(st, "out of memory");
    }
    for (; s->cursor < n && have < s->B; s->cursor++) {
      const int64_t k = slot * s->B + s->cursor;
      if (s->fail[k]) continue;
      memcpy(s->stage + have * s->chw, s->pix + k * s->chw, (size_t)s->chw);
      s->stage_lab[have++] = s->lab[k];
    }
    if (s->cursor == n) {
      release_chunk(s, s->chunk);
      s->chunk++;
      s->cursor = 0;
    }
  }
  if (have == 0 && s->emitted == 0)
    return amd_fail(st, "%s: every image is bad (e.g. %.900s)",
                    s->o.only_split == 1 && s->f.vdir[0] ? s->f.vdir : s->f.dir, s->err.msg);
  b->n = have;
  b->u8 = have ? s->stage : NULL;
  b->labels = have ? s->stage_lab : NULL;
  s->emitted += have;
  return 0;
}

void amd_image_stream_set_overlap(amd_image_stream *s, int overlap) {
  pthread_mutex_lock(&s->mu);
  s->overlap = overlap != 0;
  pthread_cond_broadcast(&s->cv_work);
  pthread_mutex_unlock(&s->mu);
}

void amd_image_stream_finish(amd_image_stream *s, amd_dataset *ds) {
  pthread_mutex_lock(&s->mu);
  const int64_t failed = s->n_failed;
  amd_status err = s->err;
  pthread_mutex_unlock(&s->mu);
  /* the in-memory load's note names the last pass's first failure */
  amd_img_folder_note(&s->f, s->sp->n_bad + failed, failed ? err.msg : s->f.pool.err.msg, ds);
}

void amd_image_stream_stats_get(amd_image_stream *s, amd_image_stream_stats *out) {
  pthread_mutex_lock(&s->mu);
  out->workers = s->n_th;
  out->overlap = s->overlap;
  out->decoded = s->files_done;
  out->total = s->ng;
  out->decode_s = (s->files_done == s->ng ? s->t_last : amd_img_mono_s()) - s->t_start;
  pthread_mutex_unlock(&s->mu);
  out->header_s = s->header_s;
  out->wait_s = s->wait_s;
}

void amd_image_stream_close(amd_image_stream *s) {
  if (!s) return;
  if (s->mu_ok) {
    pthread_mutex_lock(&s->mu);
    s->stop = 2;
    pthread_cond_broadcast(&s->cv_work);
    pthread_mutex_unlock(&s->mu);
  }
  for (int k = 0; k < s->n_th; k++) pthread_join(s->th[k], NULL);
  if (s->mu_ok) {
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv_work);
    pthread_cond_destroy(&s->cv_done);
  }
  amd_img_folder_free(&s->f);
  free(s->th);
  free(s->args);
  free(s->good);
  free(s->pix);
  free(s->lab);
  free(s->fail);
  free(s->done);
  free(s->stage);
  free(s->stage_lab);
  free(s);
}

int amd_image_stream_open(const char *spec, const amd_image_opts *o, int64_t batch, int ring, amd_dataset *ds,
                          amd_image_stream **out, amd_status *st) {
  *out = NULL;
  memset(ds, 0, sizeof *ds);
  if (strncmp(spec, "images:", 7) || !spec[7]) return amd_fail(st, "streaming needs images:DIR data, not '%s'", spec);
  if (o->norm == AMD_NORM_DATASET)
    return amd_fail(st, "the dataset normalisation needs every training image first: load the data set instead");
  if (batch < 1) return amd_fail(st, "batch %lld: must be at least 1", (long long)batch);
  if (ring == 0) ring = 4;
  if (ring < 2 || ring > 64) return amd_fail(st, "a ring of %d batches: 2 to 64", ring);
  amd_image_stream *s = calloc(1, sizeof *s);
  if (!s) return amd_fail(st, "out of memory");
  s->o = *o;
  if (!s->o.only_split) s->o.only_split = 1;
  const double t0 = amd_img_mono_s();
  int rc = amd_img_folder_open(spec + 7, &s->o, &s->f, ds, st);
  if (!rc) {
    s->header_s = amd_img_mono_s() - t0;
    s->sp = &s->f.split[0];
    s->C = ds->c, s->H = ds->h, s->W = ds->w, s->chw = ds->c * ds->h * ds->w;
    s->ng = s->sp->n - s->sp->n_bad;
    /* (a batch larger than the split is the split: one chunk) */
    s->B = batch < s->ng ? batch : s->ng, s->R = ring;
    s->n_chunks = (s->ng + s->B - 1) / s->B;
    /* slot j % R of chunk j: with fewer chunks than R, only n_chunks slots */
    s->slots = s->n_chunks < s->R ? (int)s->n_chunks : s->R;
    s->err_index = INT64_MAX;
    s->overlap = 1;
    s->last_report = amd_img_mono_s();
    if (s->B > AMD_DATA_MAX_BYTES / s->slots / s->chw)
      rc = amd_fail(st, "%d batches of %lld images of %lldx%lldx%lld exceed the %lld-byte limit (use a smaller batch)",
                    s->slots, (long long)s->B, (long long)ds->c, (long long)ds->h, (long long)ds->w,
                    (long long)AMD_DATA_MAX_BYTES);
  }
  if (!rc) {
    s->good = malloc((size_t)(s->ng ? s->ng : 1) * sizeof *s->good);
    s->pix = calloc((size_t)(s->slots * s->B), (size_t)s->chw);
    s->lab = calloc((size_t)(s->slots * s->B), sizeof *s->lab);
    s->fail = calloc((size_t)(s->slots * s->B), 1);
    s->done = calloc((size_t)s->slots, sizeof *s->done);
    s->th = calloc((size_t)s->f.pool.n_workers, sizeof *s->th);
    s->args = calloc((size_t)s->f.pool.n_workers, sizeof *s->args);
    if (!s->good || !s->pix || !s->lab || !s->fail || !s->done || !s->th || !s->args) rc = amd_fail(st, "out of memory");
  }
  if (!rc) {
    for (int64_t i = 0, g = 0; i < s->sp->n; i++)
      if (!s->sp->bad[i]) s->good[g++] = i;
    /* as the in-memory load: the train and test split are the one split */
    ds->format = AMD_DATA_IMAGES;
    ds->train.n = ds->test.n = s->ng;
    ds->test_is_train = 1;
    amd_img_folder_note(&s->f, s->sp->n_bad, s->f.pool.err.msg, ds);
    rc = amd_data_set_stats(ds, 1, st) || amd_data_apply_norm(ds, &s->o, st) ? -1 : 0;
  }
  if (!rc) {
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv_work, NULL);
    pthread_cond_init(&s->cv_done, NULL);
    s->mu_ok = 1;
    s->t_start = s->t_last = amd_img_mono_s();
    const int nw = s->f.pool.n_workers < s->ng ? s->f.pool.n_workers : (int)(s->ng > 0 ? s->ng : 1);
    for (int k = 0; k < nw; k++) {
      s->args[k] = (stream_worker_arg){s, k};
      if (pthread_create(&s->th[k], NULL, stream_worker, &s->args[k])) break;
      s->n_th = k + 1;
    }
    if (s->n_th == 0) rc = amd_fail(st, "cannot start the decoding threads");
  }
  if (rc) {
    amd_image_stream_close(s);
    amd_dataset_free(ds);
    return -1;
  }
  *out = s;
  return 0;
}

/* The image loaders' thread pool (image_folder.h, amd_img_pool): workers
 * that take file indices in order from an atomic counter, the first error by
 * file order, the memory budget of the images being decoded, progress. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "image_folder.h"


double amd_img_mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void amd_img_mem_reserve(amd_img_pool *p, int64_t bytes) {
  pthread_mutex_lock(&p->mu);
  while (p->in_use > 0 && p->in_use + bytes > p->budget) pthread_cond_wait(&p->cv, &p->mu);
  p->in_use += bytes;
  pthread_mutex_unlock(&p->mu);
}

void amd_img_mem_release(amd_img_pool *p, int64_t bytes) {
  pthread_mutex_lock(&p->mu);
  p->in_use -= bytes;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
}

typedef struct worker_arg {
  amd_img_pool *p;
  int id;
} worker_arg;

static void *worker_main(void *arg) {
  worker_arg *w = arg;
  amd_img_pool *p = w->p;
  for (;;) {
    if (atomic_load(&p->stop)) break;
    int64_t i = atomic_fetch_add(&p->next, 1);
    if (i >= p->n) break;
    p->fn(p, i, w->id);
    if (w->id == 0 && p->o && p->o->progress) {
      const double t = amd_img_mono_s();
      if (t - p->last_report >= 2.0) {
        p->last_report = t;
        p->o->progress(p->o->progress_user, p->stage, i + 1, p->n);
      }
    }
  }
  return NULL;
}

/* File i failed with st: recorded (and the work stops unless skipping). */
void amd_img_pool_fail(amd_img_pool *p, int64_t i, const amd_status *st) {
  pthread_mutex_lock(&p->mu);
  p->bad[i] = 1;
  p->bad_count++;
  if (i < p->err_index) {
    p->err_index = i;
    p->err = *st;
  }
  pthread_mutex_unlock(&p->mu);
  if (!p->skip_bad) atomic_store(&p->stop, 1);
}

/* Runs fn over [0, n) on the workers; 0, or -1 with the first failure in st
 * (without skip_bad). */
int amd_img_pool_run(amd_img_pool *p, int64_t n, void (*fn)(amd_img_pool *, int64_t, int), void *ctx,
                     amd_status *st) {
  p->n = n;
  atomic_store(&p->next, 0);
  atomic_store(&p->stop, 0);
  p->fn = fn;
  p->ctx = ctx;
  p->err_index = INT64_MAX;
  p->last_report = amd_img_mono_s();
  int nw = p->n_workers < n ? p->n_workers : (int)(n > 0 ? n : 1);
  pthread_t th[1024];
  worker_arg wa[1024];
  int started = 0;
  for (int k = 1; k < nw; k++) {
    wa[k] = (worker_arg){p, k};
    if (pthread_create(&th[k], NULL, worker_main, &wa[k])) break;
    started = k;
  }
  wa[0] = (worker_arg){p, 0};
  worker_main(&wa[0]);
  for (int k = 1; k <= started; k++) pthread_join(th[k], NULL);
  if (p->err_index != INT64_MAX && !p->skip_bad) {
    *st = p->err;
    return -1;
  }
  return 0;
}

/* The thread pool: n_workers TurboJPEG handles, the lock, the memory budget. */
int amd_img_pool_start(amd_img_pool *p, const amd_image_opts *o, amd_status *st) {
  memset(p, 0, sizeof *p);
  p->o = o;
  p->skip_bad = o->skip_bad;
  p->n_workers = o->workers > 0 ? o->workers : (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (p->n_workers < 1) p->n_workers = 1;
  if (p->n_workers > 1024) p->n_workers = 1024;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  /* a quarter of the memory (at least 1 GiB) for the images being decoded */
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  p->budget = pages > 0 && page > 0 ? (int64_t)pages * page / 4 : (int64_t)1 << 30;
  if (p->budget < ((int64_t)1 << 30)) p->budget = (int64_t)1 << 30;
  p->tj = calloc((size_t)p->n_workers, sizeof *p->tj);
  if (!p->tj) return amd_fail(st, "out of memory");
  for (int k = 0; k < p->n_workers; k++)
    if (!(p->tj[k] = amd_img_tj_new())) return amd_fail(st, "cannot start the JPEG decoder");
  return 0;
}

void amd_img_pool_stop(amd_img_pool *p) {
  for (int k = 0; p->tj && k < p->n_workers; k++) amd_img_tj_free(p->tj[k]);
  free(p->tj);
  p->tj = NULL;
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
}

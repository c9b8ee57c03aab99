/* The part of `images:` (image_folder.c) that both ways of reading an image
 * folder share: the in-memory load (amd_dataset_load_images_opts, the same
 * file) and the streaming reader (image_stream.c). Internal to src/data.
 *
 * amd_img_folder_open does everything before the pixels: it parses
 * "DIR[,labels=FILE]", lists the files of the split(s) in ImageFolder's
 * order, keeps only the split evaluated and the --limit spread where the
 * options ask (amd_image_opts.only_split, max_samples), reads every header on
 * the thread pool (pass 1: bad files fail here, or are marked with
 * --skip-bad), and decides the sample shape and channel count (ds->c, h, w).
 * amd_img_decode_sample is pass 2 for one file: decode, resize, centre crop,
 * CHW, grey replicated, into a caller's buffer. */
#ifndef AMD_IMAGE_FOLDER_H
#define AMD_IMAGE_FOLDER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "dataset.h"
#include "image_decode.h"
#include "reader_common.h"

/* One split's image files in file order (path and label), after the header
 * pass: info[i] (pass 1) and bad[i] (1: the file failed its header). */
typedef struct amd_img_split {
  char **path;
  int64_t *label;
  int64_t n, cap;
  amd_img_info *info;
  uint8_t *bad;
  int64_t n_bad; /* files that failed (pass 1, and pass 2 for the in-memory load) */
} amd_img_split;

/* The decoding threads' shared state (image_pool.c). amd_img_pool_run runs a
 * function over [0, n) on n_workers threads; the streaming reader has its
 * own threads and uses tj, the memory budget and the first error only. */
typedef struct amd_img_pool {
  int64_t n;
  _Atomic int64_t next;
  atomic_int stop;
  void (*fn)(struct amd_img_pool *p, int64_t i, int worker);
  void *ctx;
  int n_workers;
  void **tj; /* per worker: a TurboJPEG handle */
  /* errors: the lowest file index that failed and its message */
  pthread_mutex_t mu;
  int64_t err_index;
  amd_status err;
  int64_t bad_count;
  uint8_t *bad; /* [n]: the file failed */
  int skip_bad;
  /* memory: the workers decoding at once reserve their images' working
   * memory (amd_img_work_bytes) from budget; one image larger than the whole
   * budget runs alone */
  pthread_cond_t cv;
  int64_t budget, in_use;
  /* progress (amd_image_opts.progress), reported by the calling thread */
  const amd_image_opts *o;
  const char *stage;
  double last_report;
} amd_img_pool;

typedef struct amd_img_folder {
  amd_img_split split[2]; /* split[0]: train, or the one split kept (only_split) */
  int n_splits;
  char dir[AMD_DATA_PATH_MAX], vdir[AMD_DATA_PATH_MAX]; /* the folder; the test split's (two splits) */
  int64_t other;         /* files with other image extensions (not loaded) */
  char other_first[512]; /* the first of them */
  amd_img_pool pool;     /* started (tj handles, mutex) by amd_img_folder_open */
  int pool_started;
} amd_img_folder;

/* The steps before decoding (see the header comment); fills ds->class_names,
 * n_classes, partial, c, h, w. On failure f is freed; the caller frees ds. */
int amd_img_folder_open(const char *arg, const amd_image_opts *o, amd_img_folder *f, amd_dataset *ds,
                        amd_status *st);
void amd_img_folder_free(amd_img_folder *f);

/* Pass 2 of one file whose header is in: decode (tj: the calling worker's
 * TurboJPEG handle), resize, crop, into dst [C, H, W]. */
int amd_img_decode_sample(const char *path, const amd_img_info *in, const amd_image_opts *o, int64_t C, int64_t H,
                          int64_t W, void **tj, uint8_t *dst, amd_status *st);

/* The pool (image_pool.c): started with o's worker count (a TurboJPEG handle
 * each, the lock, the memory budget) and stopped; _run runs fn over [0, n) on
 * the workers and returns 0, or -1 with the first failure (by file index) in
 * st unless the pool skips bad files; _fail records file i's failure. */
int amd_img_pool_start(amd_img_pool *p, const amd_image_opts *o, amd_status *st);
void amd_img_pool_stop(amd_img_pool *p);
int amd_img_pool_run(amd_img_pool *p, int64_t n, void (*fn)(amd_img_pool *, int64_t, int), void *ctx,
                     amd_status *st);
void amd_img_pool_fail(amd_img_pool *p, int64_t i, const amd_status *st);

/* The working memory of one image taken from / given back to the pool's budget. */
void amd_img_mem_reserve(amd_img_pool *p, int64_t bytes);
void amd_img_mem_release(amd_img_pool *p, int64_t bytes);

/* ds->skipped = skipped and ds->note: the skipped files (first_error: one of
 * their messages) and the files with other image extensions. */
void amd_img_folder_note(const amd_img_folder *f, int64_t skipped, const char *first_error, amd_dataset *ds);

/* Seconds of CLOCK_MONOTONIC. */
double amd_img_mono_s(void);

#endif

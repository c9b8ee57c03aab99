/* Streaming one split of an image folder (`images:`): the files decoded by a
 * pool of threads that run ahead of the consumer, batch after batch, in file
 * order, so that decoding overlaps the evaluation instead of preceding it
 * (`amdnn-onnx eval`). Memory is bounded: a ring of `ring` buffers of
 * `batch` samples each.
 *
 * The listing, the --limit spread, the header pass (with --skip-bad), the
 * sample shape and channel count, the decoding and the normalisation are
 * those of the in-memory load (amd_dataset_load_opts, image_folder.c, which
 * shares the code), so the batches hold the same pixels, labels and order as
 * that load's split cut every `batch` samples, also when files fail while
 * decoding (--skip-bad: the batches are then made up from the next files).
 *
 * The `dataset` normalisation needs the statistics of every training image
 * before the first batch: the stream refuses it (load the data set in
 * memory instead, as eval does).
 *
 * Errors: a bad file without --skip-bad fails amd_image_stream_next (not
 * necessarily the call whose batch would have held it) with the message of
 * the first bad file in file order, as the in-memory load does; the stream
 * must still be closed. */
#ifndef AMD_IMAGE_STREAM_H
#define AMD_IMAGE_STREAM_H

#include <stdint.h>

#include "../core/status.h"
#include "dataset.h"

typedef struct amd_image_stream amd_image_stream;

/* Opens spec "images:DIR[,labels=FILE]" with the options o (only_split: 1
 * the test split, 2 the training split, 0 taken as 1; max_samples; the
 * decoding options; progress) for batches of up to `batch` samples, `ring`
 * (>= 2; 0: 4) buffers ahead. Lists the files, reads every header, then
 * starts the workers. ds (overwritten) gets what amd_dataset_load_opts
 * would give except the pixels: format, c, h, w, classes, mean/std,
 * partial, train.n = test.n = the files that passed the header pass
 * (test_is_train set, u8 and labels NULL), skipped and note as far as the
 * header pass knows them. The caller frees ds (amd_dataset_free) and closes
 * the stream. */
int amd_image_stream_open(const char *spec, const amd_image_opts *o, int64_t batch, int ring, amd_dataset *ds,
                          amd_image_stream **out, amd_status *st);

/* The next batch into *b: n samples (1 to batch; 0 at the end), u8 [n, c, h,
 * w] and labels [n], valid until the next call or the close. -1 on a bad
 * file (without --skip-bad), or when every file failed. */
int amd_image_stream_next(amd_image_stream *s, amd_data_split *b, amd_status *st);

/* overlap 1 (the default): the workers decode up to ring - 1 batches ahead
 * while the consumer works on one (a GPU runs the model); 0: they decode
 * only while the consumer waits in amd_image_stream_next, all of them on its
 * batch (the model runs on the CPU and needs every core: decoding threads
 * beside it would slow both). Any time, from any thread. */
void amd_image_stream_set_overlap(amd_image_stream *s, int overlap);

/* After the end: ds->skipped and ds->note with the files that failed while
 * decoding too. */
void amd_image_stream_finish(amd_image_stream *s, amd_dataset *ds);

typedef struct amd_image_stream_stats {
  int workers;         /* decoding threads */
  int overlap;         /* amd_image_stream_set_overlap's */
  int64_t decoded;     /* files decoded (or failed) so far */
  int64_t total;       /* files to decode (those that passed the header pass) */
  double header_s;     /* the listing and the header pass (amd_image_stream_open) */
  double decode_s;     /* from the workers' start to the last file decoded (or now) */
  double wait_s;       /* time amd_image_stream_next waited for the workers */
} amd_image_stream_stats;
void amd_image_stream_stats_get(amd_image_stream *s, amd_image_stream_stats *out);

/* Stops the workers (a file being decoded is finished first) and frees
 * everything; safe on NULL and at any point. */
void amd_image_stream_close(amd_image_stream *s);

#endif

/* Batches of a data split for a backend (see batches.h). */
#include "batches.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Backend memory for `bytes` of pixels (filled from host when non-NULL) and
 * for x; 0 on success. */
static int device_buffers(amd_batches *b, const amd_backend *be, size_t bytes, const void *host, amd_status *why) {
  if (be->buf->mem_alloc(&b->pixels, bytes, why)) return -1;
  if ((host && be->buf->mem_from_host(b->pixels, host, bytes, why)) || be->buf->alloc(&b->x, why)) {
    be->buf->mem_free(b->pixels);
    b->pixels = NULL;
    return -1;
  }
  return 0;
}

/* The shared part of the two opens: split NULL opens for pieces of up to
 * batch uint8 samples (amd_batches_load). */
static int open_batches(amd_batches *b, const amd_backend *be, int host_only, const amd_dataset *ds,
                        const amd_data_split *split, int64_t batch, const char *what, amd_status *st) {
  memset(b, 0, sizeof *b);
  b->ds = ds;
  b->split = split;
  b->x = (amd_tensor){.dtype = AMD_FLOAT, .rank = 4, .dims = {batch, ds->c, ds->h, ds->w}};
  const int64_t chw = ds->c * ds->h * ds->w;
  const amd_train_kernels *tk = amd_train_kernels_for(be->device);
  const int pieces = split == NULL;
  if (!host_only && tk && tk->data_batch && ds->c <= 64 && (pieces || ((split->u8 || split->f32) && split->n > 0))) {
    b->plan = malloc((size_t)batch * sizeof *b->plan);
    if (!b->plan) return amd_fail(st, "out of memory");
    amd_status why = {{0}};
    const size_t bytes = pieces ? (size_t)(batch * chw) : (size_t)(split->n * chw) * (split->u8 ? 1 : sizeof(float));
    const void *host = pieces ? NULL : split->u8 ? (const void *)split->u8 : (const void *)split->f32;
    if (device_buffers(b, be, bytes, host, &why) == 0) {
      for (int64_t c = 0; c < ds->c; c++) {
        float *n = b->norm + 4 * c;
        amd_dataset_batch_norm(ds, c, &n[0], &n[1], &n[2]);
        n[3] = ds->mean[c];
      }
      b->be = be;
      b->tk = tk;
      b->capacity = pieces ? batch : split->n;
      return 0;
    }
    snprintf(b->note, sizeof b->note, "%s: batches assembled on the host (the images do not go to %s: %.400s)", what,
             be->name, why.msg);
    free(b->plan);
    b->plan = NULL;
  }
  b->capacity = pieces ? batch : split->n;
  return amd_tensor_alloc(&b->x, st);
}

int amd_batches_open(amd_batches *b, const amd_backend *be, int host_only, const amd_dataset *ds,
                     const amd_data_split *split, int64_t batch, const char *what, amd_status *st) {
  return open_batches(b, be, host_only, ds, split, batch, what, st);
}

int amd_batches_open_pieces(amd_batches *b, const amd_backend *be, const amd_dataset *ds, int64_t batch,
                            const char *what, amd_status *st) {
  return open_batches(b, be, 0, ds, NULL, batch, what, st);
}

int amd_batches_load(amd_batches *b, const amd_data_split *piece, amd_status *st) {
  if (!piece->u8 || piece->n > b->capacity)
    return amd_fail(st, "a piece of %lld samples for batches of %lld (uint8 pixels only)", (long long)piece->n,
                    (long long)b->capacity);
  b->split = piece;
  if (!b->be) return 0;
  const size_t bytes = (size_t)(piece->n * b->ds->c * b->ds->h * b->ds->w);
  return b->be->buf->mem_from_host(b->pixels, piece->u8, bytes, st);
}

int amd_batches_make(amd_batches *b, const int64_t *idx, int64_t n, const amd_augment *aug, uint64_t *rng,
                     int64_t *y, amd_status *st) {
  b->x.dims[0] = n;
  if (!b->be) {
    amd_dataset_batch(b->ds, b->split, idx, n, aug, rng, b->x.data, y);
    return 0;
  }
  amd_dataset_batch_plan(b->ds, b->split, idx, n, aug, rng, b->plan, y);
  return b->tk->data_batch(b->pixels, b->split->u8 != NULL, b->ds->c, b->ds->h, b->ds->w, b->norm, b->plan, n,
                           b->x.data, st);
}

void amd_batches_close(amd_batches *b) {
  if (b->be) {
    b->be->buf->free(&b->x);
    b->be->buf->mem_free(b->pixels);
  } else {
    amd_tensor_free(&b->x);
  }
  free(b->plan);
  memset(b, 0, sizeof *b);
}

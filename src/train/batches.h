/* Batches of a data split for a backend: the one place where training and
 * evaluation turn sample indices into an input tensor.
 *
 * Where the training kernels of the backend's device have data_batch
 * (kernels.h; the CUDA set), the split's pixels are
 * copied into backend memory once, at open; each batch is then a plan of the
 * random draws made on the host (amd_dataset_batch_plan, the same sequence as
 * amd_dataset_batch) and one kernel that writes x in backend memory, bit for
 * bit the host's batch. Otherwise (the CPU backend, more than 64 channels, a
 * failed upload, host_only, or a split of uncropped images for --augment rrc,
 * which the kernel does not crop) x is host memory filled by
 * amd_dataset_batch, and the executor uploads it. */
#ifndef AMD_BATCHES_H
#define AMD_BATCHES_H

#include "../data/dataset.h"
#include "../exec/backend.h"
#include "kernels.h"

typedef struct amd_batches {
  const amd_dataset *ds;
  const amd_data_split *split;
  const amd_backend *be; /* the backend that assembles batches, or NULL: the host */
  const amd_train_kernels *tk; /* its device's training kernels (be only) */
  void *pixels;          /* the split in backend memory (be only) */
  float norm[4 * 64];    /* per channel: scale, shift, inv, mean (amd_dataset_batch_norm) */
  amd_batch_sample *plan;
  amd_tensor x; /* [batch, C, H, W]: backend memory (be), else host */
  int64_t capacity; /* the samples b->pixels holds (be), or the split's */
  char note[512];   /* why the batches come from the host after all (a failed upload), or "" */
} amd_batches;

/* Up to batch samples of split per call. what names the caller in b->note,
 * written when the upload fails (the batches then come from the host). */
int amd_batches_open(amd_batches *b, const amd_backend *be, int host_only, const amd_dataset *ds,
                     const amd_data_split *split, int64_t batch, const char *what, amd_status *st);
/* Samples idx[0..n) (n <= batch) into b->x (dims[0] = n) and their labels
 * into y, augmented as amd_dataset_batch (aug and rng may be NULL). */
int amd_batches_make(amd_batches *b, const int64_t *idx, int64_t n, const amd_augment *aug, uint64_t *rng,
                     int64_t *y, amd_status *st);
void amd_batches_close(amd_batches *b);

/* For a split that arrives in pieces (a streamed image folder): opened for
 * pieces of up to batch uint8 samples, then amd_batches_load makes piece
 * (which must stay valid until the last amd_batches_make of it) the split
 * the next batches come from, its indices 0 .. piece->n - 1; on a device the
 * piece's pixels are copied into the device buffer. */
int amd_batches_open_pieces(amd_batches *b, const amd_backend *be, const amd_dataset *ds, int64_t batch,
                            const char *what, amd_status *st);
int amd_batches_load(amd_batches *b, const amd_data_split *piece, amd_status *st);

#endif

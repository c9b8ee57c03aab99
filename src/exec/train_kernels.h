/* The training kernels: the primitives a training step runs besides the
 * graph's nodes, on the memory of one device (a backend's, backend.h), as a
 * const table per device like the ops' tables. The CPU reference is
 * src/train/kernels_cpu.c, the CUDA set cuda/train_kernels.cu; the registry
 * src/train/kernels.h gives the set of a backend's device. Their plain types
 * are core/train_types.h.
 *
 * Every pointer to float data is in the device's memory; labels, the
 * per-sample results and the plan are host memory. */
#ifndef AMD_TRAIN_KERNELS_H
#define AMD_TRAIN_KERNELS_H

#include "../core/status.h"
#include "../core/train_types.h"

typedef struct amd_train_kernels {
  const char *name;
  int device; /* the device tag of the memory it works on (tensor.h) */
  /* Softmax cross-entropy of logits z [n, c] with host labels (loss.c's
   * definition): the per-sample results into rows, a host block of
   * amd_xent_bytes(n) (core/train_types.h), and when dz is non-NULL
   * d(mean loss)/dz * scale into it (not accumulated). Waits for the device. */
  int (*softmax_xent)(const float *z, const int64_t *labels, int64_t n, int64_t c, float smoothing,
                      float scale, float *dz, void *rows, amd_status *st);
  int (*all_finite)(const float *p, int64_t n, int *ok, amd_status *st); /* *ok = 1: every p[i] finite */
  int (*scale)(float *p, int64_t n, float f, amd_status *st);            /* p *= f */
  int (*add)(float *y, const float *x, int64_t n, amd_status *st);       /* y += x */
  /* One optimizer step exactly as amd_optim_step (optim.c) over n values;
   * state holds u->state_blocks * n floats. An optimizer kind outside
   * 0 .. AMD_OPT_COUNT - 1 is an error. guarded (only where the backend has
   * a stream, backend.h): nothing changes once the step guard is cleared. */
  int (*optim_step)(const amd_optim_update *u, float *p, const float *g, float *state, int64_t n, int guarded,
                    amd_status *st);
  /* Optional (NULL: the host assembles batches). x [n, c, h, w] in device
   * memory from the host plan (dataset.h amd_dataset_batch_plan), exactly as
   * amd_dataset_batch_fill: pixels is a copy of the split in device memory
   * (uint8 when is_u8, else float), norm the host's 4 floats per channel
   * (scale, shift, inv, mean: amd_dataset_batch_norm). */
  int (*data_batch)(const void *pixels, int is_u8, int64_t c, int64_t h, int64_t w, const float *norm,
                    const amd_batch_sample *plan, int64_t n, float *x, amd_status *st);
} amd_train_kernels;

#endif

/* The registry of the training kernels (exec/train_kernels.h): one set per
 * device, chosen for a backend by its device tag, like the ops' table. The
 * CPU reference (kernels_cpu.c) is always there; a device's set is added
 * where its backend is opened (the CLI adds the CUDA set next to the CUDA
 * backend), since the library of src/ does not link the device code.
 *
 * Also the host side of two kernels: the softmax cross-entropy's sums and
 * the optimizer step's constants, so that every set shares them. */
#ifndef AMD_TRAIN_KERNELS_REGISTRY_H
#define AMD_TRAIN_KERNELS_REGISTRY_H

#include "../exec/train_kernels.h"

extern const amd_train_kernels amd_train_kernels_cpu;

/* The set for device tag `device`, or NULL when none is registered. */
const amd_train_kernels *amd_train_kernels_for(int device);
/* Registers k for k->device (again: replaces it). An error when the table is
 * full. */
int amd_train_kernels_add(const amd_train_kernels *k, amd_status *st);

/* Softmax cross-entropy (loss.h) with k: the per-sample results summed on the
 * host in sample order, added to bs (may be NULL); the mean loss to *mean;
 * when dz is non-NULL d(mean loss)/dz * scale into it (not accumulated);
 * pred (host, may be NULL): the argmax per sample. */
int amd_train_softmax_xent(const amd_train_kernels *k, const float *z, const int64_t *labels, int64_t n,
                           int64_t c, float smoothing, float scale, float *dz, int64_t *pred,
                           amd_batch_stats *bs, double *mean, amd_status *st);
/* The kernels' description of one step of o at lr, 1-based step t (optim.h). */
void amd_optim_update_make(const amd_optim *o, double lr, int64_t t, amd_optim_update *u);

#endif

/* The CUDA side of the NCCL communicator, as C functions (no CUDA or NCCL
 * types), for src/train/dist_nccl.c, which holds the MPI side and the
 * amd_dist vtable (src/train/dist.h).
 *
 * One communicator per process, on the device the CUDA backend opened
 * (amd_cuda_backend_open first); collectives are queued on the backend's
 * stream, so they follow the backward kernels and precede the optimizer
 * without a host synchronisation. Built only with -Dnccl (AMD_HAVE_NCCL). */
#ifndef AMD_DIST_NCCL_H
#define AMD_DIST_NCCL_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stddef.h>
#include <stdint.h>

#include "../src/core/status.h"

#define AMD_NCCL_ID_BYTES 128 /* sizeof(ncclUniqueId) */

/* "2.28.9": the NCCL library this process runs with. */
const char *amd_nccl_version(char *buf, size_t n);
/* The identity of the backend's GPU: its UUID (16 bytes), CUDA index and PCI bus id. */
int amd_nccl_device(unsigned char *uuid, int *index, char *bus, size_t bus_len, amd_status *st);
/* A new unique id (rank 0 makes it; the others receive it). */
int amd_nccl_unique_id(unsigned char *id, amd_status *st);
/* Joins the communicator of `size` ranks named by id as `rank`; a sum that
 * takes longer than timeout_s seconds fails (below). */
int amd_nccl_open(const unsigned char *id, int rank, int size, double timeout_s, amd_status *st);
/* 1 when p points into device (or managed) memory, 0 for host memory. */
int amd_nccl_is_device_ptr(const void *p);
/* In-place sum over the ranks of n floats in device memory; returns when the
 * sum is complete. An NCCL error, or no completion within the time limit
 * (amd_nccl_open's timeout_s: AMD_NCCL_TIMEOUT_S, default 1800 s), aborts the communicator and fails. */
int amd_nccl_allreduce_f32(float *buf, int64_t n, amd_status *st);
/* The same in pieces that overlap the work queued after them: start queues
 * the sum of n floats on a second stream, behind everything queued on the
 * backend's stream so far, and returns at once; finish makes the backend's
 * stream wait for every started sum and waits for them on the host (as
 * amd_nccl_allreduce_f32 does: errors and the time limit abort). */
int amd_nccl_allreduce_f32_start(float *buf, int64_t n, amd_status *st);
int amd_nccl_allreduce_f32_finish(amd_status *st);
/* ncclCommAbort: ends this rank's part of every collective now (error paths). */
void amd_nccl_abort(void);
/* Waits for the queued work and destroys the communicator. */
void amd_nccl_close(void);

#ifdef __cplusplus
}
#endif

#endif

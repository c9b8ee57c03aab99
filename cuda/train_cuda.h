/* Shared by backend_cuda.cu and train_kernels.cu (not by host code): the
 * backend's host copies that the training kernels use, the device side of
 * the deferred training steps (train_kernels.cu) that the backend's stream
 * table (backend_cuda.cu) points to, and the arguments of k_optim, which a
 * captured step's graph replays with new coefficients. */
#ifndef AMD_TRAIN_CUDA_H
#define AMD_TRAIN_CUDA_H

#include "cuda_internal.h"

/* backend_cuda.cu: the buffers' mem_to_host (synchronises) and
 * mem_from_host (queued through pinned staging up to 8 MB). */
int amd_cu_to_host(void *dst, const void *src, size_t bytes, amd_status *st);
int amd_cu_from_host(void *dst, const void *src, size_t bytes, amd_status *st);

/* train_kernels.cu: amd_stream's step_begin ... guard_reset (backend.h). */
int amd_cu_step_begin(const int64_t *labels, int64_t n, int slot, amd_status *st);
int amd_cu_xent_defer(const float *z, int64_t n, int64_t c, float smoothing, float *dz, amd_status *st);
int amd_cu_step_end(const float *g, int64_t n, amd_status *st);
int amd_cu_step_finish(int slot, amd_status *st);
int amd_cu_step_collect(int slot, int64_t *n, const int64_t **labels, const void **rows, int *ok,
                        amd_status *st);
int amd_cu_guard_reset(amd_status *st);
void amd_cu_steps_close(void); /* at the backend's close */

/* The arguments of one k_optim launch, in its parameter order. */
enum { AMD_CU_OPTIM_ARGS = 12 };
struct amd_cu_optim_args {
  int kind, wd, mom, nesterov, fused;
  amd_optim_coeffs c;
  float *p;
  const float *g;
  float *s1, *s2;
  int64_t n;
  const int *guard;
};
/* 1 when the kernel node kp launches k_optim: its arguments are copied into
 * *args; 0 for any other kernel. */
int amd_cu_optim_node_read(const cudaKernelNodeParams *kp, amd_cu_optim_args *args);
/* The kernelParams of a k_optim launch with *args (pointers into it). */
void amd_cu_optim_node_argv(amd_cu_optim_args *args, void *argv[AMD_CU_OPTIM_ARGS]);

#endif

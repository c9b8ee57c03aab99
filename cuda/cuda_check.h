/* Error checks for CUDA and cuBLAS calls in cuda/ (host side).
 *
 * Every runtime and cuBLAS call goes through AMD_CUDA_CHECK / AMD_CUBLAS_CHECK,
 * which write the failing expression, file and line into the amd_status and
 * make the enclosing function return -1; every kernel launch is followed by
 * AMD_CUDA_CHECK_LAUNCH (cudaGetLastError, and a device synchronisation when
 * --debug-sync set amd_cuda_debug_sync, so that a faulting kernel is named
 * where it runs instead of at the next synchronising call). */
#ifndef AMD_CUDA_CHECK_H
#define AMD_CUDA_CHECK_H

#include <cublas_v2.h>
#include <cuda_runtime.h>

extern "C" {
#include "../src/core/status.h"
}

/* Set by --debug-sync: synchronise after each kernel launch. */
extern "C" int amd_cuda_debug_sync;

#define AMD_CUDA_CHECK(expr, st)                                                                    \
  do {                                                                                              \
    cudaError_t amd_err_ = (expr);                                                                  \
    if (amd_err_ != cudaSuccess)                                                                    \
      return amd_fail((st), "CUDA error %s (%s) in %s at %s:%d", cudaGetErrorName(amd_err_),         \
                      cudaGetErrorString(amd_err_), #expr, __FILE__, __LINE__);                     \
  } while (0)

#define AMD_CUBLAS_CHECK(expr, st)                                                                  \
  do {                                                                                              \
    cublasStatus_t amd_err_ = (expr);                                                               \
    if (amd_err_ != CUBLAS_STATUS_SUCCESS)                                                          \
      return amd_fail((st), "cuBLAS error %s in %s at %s:%d", cublasGetStatusName(amd_err_), #expr, \
                      __FILE__, __LINE__);                                                          \
  } while (0)

#define AMD_CUDA_CHECK_LAUNCH(what, st)                                                             \
  do {                                                                                              \
    AMD_CUDA_CHECK(cudaGetLastError(), st);                                                         \
    if (amd_cuda_debug_sync) AMD_CUDA_CHECK(cudaDeviceSynchronize(), st);                           \
    (void)(what);                                                                                   \
  } while (0)

#endif

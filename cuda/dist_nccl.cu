/* The CUDA side of the NCCL communicator (see dist_nccl.h; the MPI side and
 * the amd_dist vtable are in src/train/dist_nccl.c).
 *
 * One ncclComm_t per process, on the CUDA backend's device. A sum is queued
 * on the backend's stream (amd_cu.stream), so it is ordered after the
 * backward kernels that wrote the gradients and before the optimizer kernel
 * that reads them; then the host waits for an event recorded behind it. The
 * wait polls ncclCommGetAsyncError and has a time limit: a peer that fails
 * or vanishes while this rank sits in the collective's kernel would
 * otherwise keep the kernel (and the next host synchronisation) waiting
 * forever. On either, ncclCommAbort ends this rank's part of the collective
 * and the caller ends the job (amd_dist_abort -> MPI_Abort). Every NCCL call
 * goes through AMD_NCCL_CHECK (nccl_check.h).
 *
 * Buckets (AMD_DIST_BUCKET_MB): each sum goes on a second stream (nc.side)
 * that first waits for an event recorded on the backend's stream when the
 * bucket's last gradient kernel has been queued, so the sums run while the
 * rest of the backward pass does; at the end the backend's stream waits for
 * the side stream (the optimizer kernel reads the sums) and the host waits
 * as above. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_internal.h"
#include "dist_nccl.h"
#include "nccl_check.h"

static_assert(sizeof(ncclUniqueId) == AMD_NCCL_ID_BYTES, "AMD_NCCL_ID_BYTES must be sizeof(ncclUniqueId)");

static struct {
  int open;
  ncclComm_t comm;
  cudaEvent_t done; /* recorded behind each collective */
  double timeout_s;
  cudaStream_t side;  /* bucketed sums, beside the backend's stream */
  cudaEvent_t queued; /* the backend's stream up to a bucket's start */
  int pending;        /* buckets started since the last finish */
} nc;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

extern "C" const char *amd_nccl_version(char *buf, size_t n) {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) v = 0;
  /* since NCCL 2.9 the code is major * 10000 + minor * 100 + patch */
  snprintf(buf, n, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
  return buf;
}

extern "C" int amd_nccl_device(unsigned char *uuid, int *index, char *bus, size_t bus_len, amd_status *st) {
  if (!amd_cu.open) return amd_fail(st, "NCCL: the CUDA backend is not open");
  cudaDeviceProp prop;
  AMD_CUDA_CHECK(cudaGetDeviceProperties(&prop, amd_cu.device), st);
  memcpy(uuid, prop.uuid.bytes, 16);
  *index = amd_cu.device;
  AMD_CUDA_CHECK(cudaDeviceGetPCIBusId(bus, (int)bus_len, amd_cu.device), st);
  return 0;
}

extern "C" int amd_nccl_unique_id(unsigned char *id, amd_status *st) {
  ncclUniqueId u;
  AMD_NCCL_CHECK(ncclGetUniqueId(&u), st);
  memcpy(id, &u, sizeof u);
  return 0;
}

extern "C" int amd_nccl_open(const unsigned char *id, int rank, int size, double timeout_s, amd_status *st) {
  if (!amd_cu.open) return amd_fail(st, "NCCL: the CUDA backend is not open");
  if (nc.open) return amd_fail(st, "NCCL: the communicator is open already");
  nc.timeout_s = timeout_s;
  AMD_CUDA_CHECK(cudaSetDevice(amd_cu.device), st);
  ncclUniqueId u;
  memcpy(&u, id, sizeof u);
  AMD_NCCL_CHECK(ncclCommInitRank(&nc.comm, size, u, rank), st);
  cudaError_t e = cudaEventCreateWithFlags(&nc.done, cudaEventDisableTiming);
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&nc.queued, cudaEventDisableTiming);
  if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&nc.side, cudaStreamNonBlocking);
  if (e != cudaSuccess) {
    ncclCommDestroy(nc.comm);
    AMD_CUDA_CHECK(e, st);
  }
  nc.pending = 0;
  nc.open = 1;
  return 0;
}

extern "C" int amd_nccl_is_device_ptr(const void *p) {
  cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError(); /* not a pointer CUDA knows: host memory */
    return 0;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

extern "C" void amd_nccl_abort(void) {
  if (!nc.open) return;
  nc.open = 0;
  ncclCommAbort(nc.comm);
  cudaEventDestroy(nc.done);
  cudaEventDestroy(nc.queued);
  cudaStreamDestroy(nc.side);
}

/* Waits for the event behind collective `what`: done, or an NCCL error / the
 * time limit, which abort the communicator. */
static int wait_done(const char *what, amd_status *st) {
  double t0 = now_s();
  for (long polls = 0;; polls++) {
    cudaError_t e = cudaEventQuery(nc.done);
    if (e == cudaSuccess) return 0;
    if (e != cudaErrorNotReady) {
      amd_nccl_abort();
      AMD_CUDA_CHECK(e, st);
    }
    ncclResult_t async = ncclSuccess;
    ncclResult_t r = ncclCommGetAsyncError(nc.comm, &async);
    if (r != ncclSuccess || (async != ncclSuccess && async != ncclInProgress)) {
      amd_nccl_abort();
      return amd_fail(st, "%s: NCCL reports %s (another rank failed or the link broke); communicator aborted",
                      what, ncclGetErrorString(r != ncclSuccess ? r : async));
    }
    double waited = now_s() - t0;
    if (waited > nc.timeout_s) {
      amd_nccl_abort();
      return amd_fail(st,
                      "%s did not complete in %.0f s (AMD_NCCL_TIMEOUT_S): another rank is stuck or gone; "
                      "communicator aborted",
                      what, waited);
    }
    /* spin briefly (a step's sum takes micro- to milliseconds), then sleep */
    if (polls < 2000) {
      sched_yield();
    } else {
      struct timespec nap = {0, 50000};
      nanosleep(&nap, NULL);
    }
  }
}

extern "C" int amd_nccl_allreduce_f32(float *buf, int64_t n, amd_status *st) {
  if (!nc.open) return amd_fail(st, "NCCL: no communicator (aborted after an earlier error?)");
  if (n <= 0) return 0;
  AMD_NCCL_CHECK(ncclAllReduce(buf, buf, (size_t)n, ncclFloat32, ncclSum, nc.comm, amd_cu.stream), st);
  AMD_CUDA_CHECK(cudaEventRecord(nc.done, amd_cu.stream), st);
  return wait_done("ncclAllReduce", st);
}

extern "C" int amd_nccl_allreduce_f32_start(float *buf, int64_t n, amd_status *st) {
  if (!nc.open) return amd_fail(st, "NCCL: no communicator (aborted after an earlier error?)");
  if (n <= 0) return 0;
  AMD_CUDA_CHECK(cudaEventRecord(nc.queued, amd_cu.stream), st);
  AMD_CUDA_CHECK(cudaStreamWaitEvent(nc.side, nc.queued, 0), st);
  AMD_NCCL_CHECK(ncclAllReduce(buf, buf, (size_t)n, ncclFloat32, ncclSum, nc.comm, nc.side), st);
  nc.pending = 1;
  return 0;
}

extern "C" int amd_nccl_allreduce_f32_finish(amd_status *st) {
  if (!nc.open) return amd_fail(st, "NCCL: no communicator (aborted after an earlier error?)");
  if (!nc.pending) return 0;
  nc.pending = 0;
  AMD_CUDA_CHECK(cudaEventRecord(nc.done, nc.side), st);
  AMD_CUDA_CHECK(cudaStreamWaitEvent(amd_cu.stream, nc.done, 0), st);
  return wait_done("ncclAllReduce of the gradient buckets", st);
}

extern "C" void amd_nccl_close(void) {
  if (!nc.open) return;
  nc.open = 0;
  cudaStreamSynchronize(amd_cu.stream);
  cudaStreamSynchronize(nc.side);
  ncclCommDestroy(nc.comm);
  cudaEventDestroy(nc.done);
  cudaEventDestroy(nc.queued);
  cudaStreamDestroy(nc.side);
}

/* The backends by name: "cpu", "cuda", "cuda:N" (backends.h). */
#include "backends.h"

#include <stdlib.h>
#include <string.h>

#ifdef AMD_HAVE_CUDA
#include "../../cuda/backend_cuda.h"
#endif

int amd_backend_open(const char *spec, int debug_sync, int local_rank, const amd_backend **be, amd_status *st) {
  *be = &amd_backend_cpu;
  if (spec && strcmp(spec, "cpu") == 0) return 0;
  int index = 0, named = 0;
  if (spec) {
    const char *rest = NULL;
    if (strcmp(spec, "cuda") == 0)
      rest = "";
    else if (strncmp(spec, "cuda:", 5) == 0)
      rest = spec + 5;
    if (!rest) return amd_fail(st, "--device %s: expected cpu, cuda or cuda:N", spec);
    if (*rest) {
      char *end;
      long v = strtol(rest, &end, 10);
      if (*end || v < 0 || v > 1024) return amd_fail(st, "--device %s: N must be a GPU index", spec);
      index = (int)v;
      named = 1;
    }
  }
#ifdef AMD_HAVE_CUDA
  char why[256] = "";
  int count = amd_cuda_device_count(why, sizeof why);
  if (count <= 0) {
    if (!spec) return 0; /* no GPU: the CPU by default */
    return amd_fail(st, "--device %s: no CUDA device is usable (%s)", spec, why);
  }
  if (!named && local_rank > 0) index = local_rank % count;
  if (index >= count)
    return amd_fail(st, "--device %s: there %s only %d CUDA device%s", spec, count == 1 ? "is" : "are", count,
                    count == 1 ? "" : "s");
  return amd_cuda_backend_open(index, debug_sync, be, st);
#else
  (void)debug_sync, (void)index, (void)named, (void)local_rank;
  if (!spec) return 0;
  return amd_fail(st, "--device %s: this build has no CUDA backend (rebuild where nvcc is found)", spec);
#endif
}

const amd_train_kernels *amd_backend_train_kernels(const amd_backend *be) {
#ifdef AMD_HAVE_CUDA
  if (be == &amd_backend_cuda) return &amd_train_kernels_cuda;
#endif
  (void)be;
  return NULL;
}

int amd_backend_gpu_count(void) {
#ifdef AMD_HAVE_CUDA
  char why[256];
  int n = amd_cuda_device_count(why, sizeof why);
  return n > 0 ? n : 0;
#else
  return 0;
#endif
}

void amd_backend_gemm_exact(int exact) {
#ifdef AMD_HAVE_CUDA
  amd_cuda_gemm_exact(exact);
#else
  (void)exact;
#endif
}

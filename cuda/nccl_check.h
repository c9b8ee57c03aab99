/* Error check for NCCL calls in cuda/ (host side), the twin of cuda_check.h:
 * AMD_NCCL_CHECK writes NCCL's error name, the failing expression, file and
 * line (and NCCL's own last message when it has one) into the amd_status and
 * makes the enclosing function return -1. */
#ifndef AMD_NCCL_CHECK_H
#define AMD_NCCL_CHECK_H

#include <nccl.h>

extern "C" {
#include "../src/core/status.h"
}

#define AMD_NCCL_CHECK(expr, st)                                                                             \
  do {                                                                                                       \
    ncclResult_t amd_nerr_ = (expr);                                                                         \
    if (amd_nerr_ != ncclSuccess) {                                                                          \
      const char *amd_nlast_ = ncclGetLastError(NULL);                                                       \
      return amd_fail((st), "NCCL error %s in %s at %s:%d%s%s", ncclGetErrorString(amd_nerr_), #expr,        \
                      __FILE__, __LINE__, amd_nlast_ && *amd_nlast_ ? ": " : "",                             \
                      amd_nlast_ ? amd_nlast_ : "");                                                         \
    }                                                                                                        \
  } while (0)

#endif

/* Error reporting for the load / build / run paths.
 *
 * Functions that can fail on bad input return 0 on success and -1 on failure,
 * after writing one human-readable line (with context: file, node, op) into an
 * amd_status that the caller passes down. Nothing prints or exits below the CLI.
 * Invariants that only a bug can break use AMD_ASSERT, which is always on. */
#ifndef AMD_STATUS_H
#define AMD_STATUS_H

#include <stdio.h>
#include <stdlib.h>

typedef struct amd_status {
  char msg[1024];
} amd_status;

/* Writes the message (printf-style) into st and returns -1, so that error
 * paths read `return amd_fail(st, "...", ...);`. st may be NULL. */
int amd_fail(amd_status *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prefixes an existing message with context, e.g. the node name. Returns -1. */
int amd_fail_prefix(amd_status *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define AMD_ASSERT(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      fprintf(stderr, "amdnn-onnx: internal error: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      abort();                                                                           \
    }                                                                                    \
  } while (0)

#endif

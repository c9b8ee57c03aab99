/* AMD_ALLOC_TRACE=FILE: a line per allocation and free of the memory that
 * tensors and backend buffers take, for tools/alloc_replay.py, which replays
 * the lines through allocation policies and reports the peak each one would
 * hold (docs/gpu.md#memory):
 *
 *   a host BYTES ID       BYTES of host memory at ID (the pointer, in hex):
 *                         amd_tensor_alloc and the CPU backend's raw buffers
 *   a device BYTES ID     BYTES of device memory at ID: the CUDA backend's
 *                         tensors and buffers (arena or block cache)
 *   f ID                  the memory at ID freed
 *   w SLOT BYTES          the CUDA backend's grow-only workspace SLOT holds
 *                         BYTES now
 *
 * "%p" in FILE becomes the process id (for several ranks). Off unless
 * amd_alloc_trace_open is given a path; then every call takes one lock. */
#ifndef AMD_ALLOC_TRACE_H
#define AMD_ALLOC_TRACE_H

#include <stddef.h>

#include "status.h"

/* Starts writing the trace to path (NULL or "": stays off). An error when the
 * file cannot be created; the trace is then off. */
int amd_alloc_trace_open(const char *path, amd_status *st);
void amd_alloc_trace_alloc(int device, size_t bytes, const void *p);
void amd_alloc_trace_free(const void *p);
void amd_alloc_trace_workspace(int slot, size_t bytes);

#endif

/* The backends by name, for the sessions and multipliers of the public API:
 * the CPU, always there, and the CUDA backend of builds that have it. Here,
 * at the top of the library, because it is the one place that binds the
 * CUDA backend by name (it includes cuda/, which includes exec/), compiled
 * with the CUDA backend's flags (AMD_HAVE_CUDA) in the public library's
 * target (src/meson.build). */
#ifndef AMD_BACKENDS_H
#define AMD_BACKENDS_H

#include "../exec/backend.h"
#include "../exec/train_kernels.h"

/* The backend for spec: "cpu", "cuda" or "cuda:N"; NULL picks cuda:0 when
 * this build has the CUDA backend and a GPU is present, else the CPU. Asking
 * for cuda without one (or in a build without CUDA) is an error that says
 * which. One of several ranks on a node (local_rank > 0): "cuda" or NULL
 * pick GPU (local_rank mod GPU count), so that a node's ranks spread over its
 * GPUs; "cuda:N" is taken as it is. debug_sync: synchronise after every GPU
 * kernel. */
int amd_backend_open(const char *spec, int debug_sync, int local_rank, const amd_backend **be, amd_status *st);
/* The training kernels of a device backend (NULL for the CPU's, which the
 * training code always has: src/train/kernels.h). */
const amd_train_kernels *amd_backend_train_kernels(const amd_backend *be);
/* GPUs usable by this build (0 without the CUDA backend or a GPU). */
int amd_backend_gpu_count(void);
/* The GPU's GEMM tier of am16 and mbm14 (exact = 1: the CPU's bits), now and
 * when the CUDA backend opens; nothing without it. */
void amd_backend_gemm_exact(int exact);

#endif

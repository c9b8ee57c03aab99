/* The CUDA backend's C interface (host code in src/ sees only this).
 *
 * amd_backend_cuda is the backend table of src/exec/backend.h: float tensors
 * in device memory (AMD_DEVICE_CUDA), every other dtype on the host; native
 * kernels for the ops the exported CNNs use, the host fallback for the rest;
 * a stream (deferred training steps, CUDA graphs). amd_train_kernels_cuda is
 * the training kernel set of its device (src/exec/train_kernels.h: loss,
 * finite check, fused optimizer, batch assembly on the device), to register
 * with the training code's registry (kernels.h). One process uses one GPU:
 * amd_cuda_backend_open selects it, creates the stream, the mode-GEMM context
 * and the caching allocator. Its compute->supports() answers without a GPU
 * (for `info`). */
#ifndef AMD_CUDA_BACKEND_H
#define AMD_CUDA_BACKEND_H

#ifdef __cplusplus
extern "C" {
#endif

#include "../src/exec/backend.h"
#include "../src/exec/train_kernels.h"

extern const amd_backend amd_backend_cuda;
extern const amd_train_kernels amd_train_kernels_cuda;

/* How many CUDA devices are usable; 0 (with the reason in why) when none or
 * no driver. */
int amd_cuda_device_count(char *why, size_t n);
/* Opens device `index` (once per process; a second call with the same index
 * returns the same backend). debug_sync: synchronise after every kernel. */
int amd_cuda_backend_open(int index, int debug_sync, const amd_backend **be, amd_status *st);
/* 1 when the backend has its own kernels for the op of index op_idx
 * (amd_op_idx, op.h) for some nodes (its supports() then decides per node);
 * 0 when every node of that op takes the host fallback. The GPU op test
 * fails when an op answers 1 here and it has no case there. */
int amd_cuda_has_kernel(int op_idx);
/* on = 1: native outputs start as NaN instead of unset, so that a kernel that
 * leaves an element unwritten shows (AMD_CUDA_POISON_OUTPUTS=1, tests). */
void amd_cuda_poison_outputs(int on);
/* exact = 1: am16 and mbm14 GEMMs take the exact tier instead of the fast
 * one (--gemm exact; cuda/mode_gemm.h), now and when the backend opens. */
void amd_cuda_gemm_exact(int exact);
/* Frees the cached device memory and the context (at exit; optional). */
void amd_cuda_backend_close(void);
/* Bytes the allocator and the workspaces hold from the driver now and at
 * most so far (the process's GPU memory besides the CUDA context and cuBLAS's
 * own), the number of times they took more (cudaMalloc calls, the arena's
 * growths), and which allocator serves the tensors ("arena" or "block cache"). */
void amd_cuda_alloc_stats(size_t *held, size_t *peak, long *mallocs, const char **allocator);
/* blocks = 1: the cache of cudaMalloc blocks by rounded size instead of the
 * arena (AMD_CUDA_ALLOCATOR=blocks), for the backend opened next. */
void amd_cuda_allocator_blocks(int blocks);
/* The bytes that one chunk of images of a CUDA Conv may hold in its im2col
 * matrix and reordered output together (AMD_CONV_WORKSPACE_MB; default
 * AMD_CONV_WORKSPACE_DEFAULT): fewer images per chunk, less scratch, more
 * and shorter GEMMs. Every Conv after the call. With the arena the scratch
 * is held only while its node runs, so training's peak rarely sees it
 * (ResNet-50 CIFAR at batch 128: the same 3,428 MiB at 512, 128 and 64;
 * docs/gpu.md#where-the-memory-goes). */
#define AMD_CONV_WORKSPACE_DEFAULT ((size_t)512 << 20)
void amd_cuda_conv_workspace(size_t bytes);
/* The three settings above as the environment gives them (src/core/env.h:
 * AMD_CUDA_POISON_OUTPUTS, AMD_CUDA_ALLOCATOR, AMD_CONV_WORKSPACE_MB), for
 * the backend opened next: the library's sessions and the op test. */
struct amd_env;
void amd_cuda_settings_from_env(const struct amd_env *env);

#ifdef __cplusplus
}
#endif

#endif

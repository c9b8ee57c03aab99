/* Settings that come from the environment rather than the command line: the
 * communicator's knobs, the CPU GEMM's instruction set for benchmarks, the
 * allocation trace, and the fault hooks of the tests. amd_env_read (env.c) is
 * the one place that calls getenv; the programs call it once and hand the
 * struct, or the part of it a subsystem needs, to that subsystem. A struct from amd_env_defaults means
 * "nothing set", which is what library callers without an environment (the
 * unit tests) pass. */
#ifndef AMD_ENV_H
#define AMD_ENV_H

#include <stdint.h>

/* Failures made on purpose, for the fault-injection tests. */
typedef struct amd_fault_hooks {
  /* AMD_FAULT_RANK=R:S[:kill]: rank R fails (or kills itself) at training step S; -1: never */
  int64_t fail_rank, fail_step;
  int fail_kill;
  /* AMD_CUDA_POISON_OUTPUTS=1: the CUDA backend starts native outputs as NaN
   * instead of leaving them unset, so that an unwritten element shows */
  int cuda_poison_outputs;
  /* AMD_FAULT_PAUSE_AFTER_STEP=N: train stops itself (SIGSTOP) right after the
   * checkpoint of step N, so that a test can break the folder at a known
   * point, then SIGCONT; -1: never */
  int64_t pause_after_step;
  /* AMD_FAULT_WRITE_BYTES=N: a checkpoint write fails (ENOSPC) once it has
   * written N bytes; the text as given (checkpoint.c checks it); NULL: unset */
  const char *ckpt_write_bytes;
} amd_fault_hooks;

typedef struct amd_env {
  /* the communicator (src/train/dist.c) */
  const char *dist;           /* AMD_DIST: "mpi", "nccl" or "none"; NULL: decided from the launcher */
  long launcher_size;         /* ranks a launcher announced (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_SIZE;
                                 1 when only PMI_RANK / PMIX_RANK is set); 0: not launched */
  const char *dist_bucket_mb; /* AMD_DIST_BUCKET_MB, as given (dist.c checks it); NULL: unset */
  int dist_check;             /* AMD_DIST_CHECK set and not "0" */
  int dist_all_output;        /* AMD_DIST_ALL_OUTPUT set and not "0" */
  int omp_threads_set;        /* OMP_NUM_THREADS is set (ranks then keep OpenMP's own thread count) */
  double nccl_timeout_s;      /* AMD_NCCL_TIMEOUT_S when > 0, else 1800 */
  const char *gemm_isa;       /* AMD_GEMM_ISA: the CPU GEMM's kernels, for benchmarks (gemm.h) */
  const char *alloc_trace;    /* AMD_ALLOC_TRACE: the allocation trace's file (alloc_trace.h); NULL: none */
  int cuda_block_cache;       /* AMD_CUDA_ALLOCATOR=blocks: the CUDA backend's block cache, not its arena */
  double conv_workspace_mb;   /* AMD_CONV_WORKSPACE_MB when > 0: a CUDA Conv chunk's im2col + output bytes; else 0 */
  amd_fault_hooks faults;
} amd_env;

/* Nothing set: no communicator request, no launcher, no faults. */
amd_env amd_env_defaults(void);
/* The environment of this process. */
amd_env amd_env_read(void);

#endif

/* Data-parallel training: one process per rank, gradients averaged between them.
 *
 * amd_dist is a small communicator: rank, size and a vtable of collectives.
 * Three implementations:
 *  - a single process (size 1; every collective is a no-op);
 *  - MPI (dist_mpi.c, built when meson finds MPI; AMD_HAVE_MPI): CPU ranks,
 *    every collective on host memory;
 *  - NCCL (dist_nccl.c + cuda/dist_nccl.cu, built when meson finds CUDA, MPI
 *    and NCCL; AMD_HAVE_NCCL): GPU ranks, one GPU each. MPI still starts the
 *    ranks and does the host-side collectives; allreduce_f32 on device memory
 *    goes through NCCL on the CUDA backend's stream (host buffers through MPI).
 * amd_dist_init starts MPI (or nothing); amd_dist_use_device, once the
 * backend is open, switches to NCCL when the device is a GPU and there are
 * several ranks (or AMD_DIST=nccl). allreduce_f32 works on the blocks where
 * the backend keeps them (t->bgrads: host memory on the CPU, device memory
 * on a GPU); allreduce_f64 and broadcast work on small host buffers
 * (statistics, the checkpoint state at start-up).
 *
 * Conventions of a step with R ranks (see amd_dist_step_grads):
 *  - the global batch is R x --batch samples, cut from the epoch's shared
 *    permutation; rank r takes the contiguous share [B*r/R, B*(r+1)/R) of the
 *    global batch of B samples (B < R x --batch only for the epoch's last one);
 *  - each rank's loss gradient is weighted by b_r / B, so the SUM over ranks
 *    of the gradient blocks is the gradient of the mean loss over the global
 *    batch (with equal shares: the average of the ranks' gradients);
 *  - loss and accuracy sums, the stop decision and the BatchNormalization
 *    running statistics (averaged, unless --sync-bn already made them equal)
 *    are reduced too, so every rank holds the same parameters, optimizer
 *    state and statistics after every step, and rank 0 alone writes files.
 * With one rank every function here leaves the single-process run exactly as
 * it was (same calls, same arithmetic).
 *
 * Shares in turn (train --accumulate N): each process computes N shares of
 * the global batch one after another, as ranks rank*N ... rank*N+N-1 of
 * size*N would, and steps once. Every convention above holds for those
 * size*N shares: a share's own BatchNormalization statistics and
 * augmentation and dropout streams, its gradient weighted by its share of
 * the global batch, the running statistics averaged over the shares. The
 * gradient blocks are summed in share order (for two shares the one sum
 * two ranks make), so `--accumulate 2` on one GPU gives the model that
 * `mpirun -np 2` gives on two, byte for byte. The caller sets d->part before
 * it assembles and computes each share. */
#ifndef AMD_DIST_H
#define AMD_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "../core/env.h"
#include "../core/status.h"

struct amd_trainer;
struct amd_tensor;
struct amd_dataset;
struct amd_data_split;
struct amd_batch_stats;
struct amd_backend;

typedef struct amd_dist amd_dist;

typedef struct amd_dist_ops {
  const char *name;
  /* In-place sums over all ranks; every rank gets the same result. */
  int (*allreduce_f32)(amd_dist *d, float *buf, int64_t n, amd_status *st);
  /* The same in pieces (AMD_DIST_BUCKET_MB; NULL where not offered): start
   * queues a sum behind the work queued so far and may return before it is
   * done; finish waits for every started one, and work queued after it sees
   * the sums. Every rank must start the same pieces in the same order. */
  int (*allreduce_f32_start)(amd_dist *d, float *buf, int64_t n, amd_status *st);
  int (*allreduce_f32_finish)(amd_dist *d, amd_status *st);
  int (*allreduce_f64)(amd_dist *d, double *buf, int64_t n, amd_status *st);
  /* Copies root's bytes to every rank. */
  int (*broadcast)(amd_dist *d, void *buf, size_t bytes, int root, amd_status *st);
  int (*barrier)(amd_dist *d, amd_status *st);
  /* Ends every rank of the job now with exit code `code` (does not return). */
  void (*abort)(amd_dist *d, int code);
  void (*finalize)(amd_dist *d);
} amd_dist_ops;

/* AMD_DIST: which communicator to use (auto: from the launcher and the device). */
enum { AMD_DIST_AUTO, AMD_DIST_NONE, AMD_DIST_MPI, AMD_DIST_NCCL };

struct amd_dist {
  int rank, size;
  int local_rank, local_size; /* on this node (for the GPU and the thread count) */
  const amd_dist_ops *ops;
  void *impl;
  int requested;          /* AMD_DIST_AUTO ... AMD_DIST_NCCL */
  int reduce_alone;       /* one rank that still runs its sums (AMD_DIST=nccl under mpirun -np 1: tests) */
  int parts;              /* shares of the global batch this process computes in turn (--accumulate; 1) */
  int part;               /* the share being computed, 0 .. parts - 1 */
  int sync_bn;            /* BatchNormalization statistics over the global batch */
  int check_every_step;   /* AMD_DIST_CHECK=1: compare parameter checksums before each step */
  amd_fault_hooks faults; /* AMD_FAULT_RANK=R:S[:kill] (tests) */
  double nccl_timeout_s;  /* AMD_NCCL_TIMEOUT_S: the longest wait for an NCCL sum */
  /* AMD_DIST_BUCKET_MB: the gradient block summed in buckets of about this
   * many floats, each started in the backward walk once no later node writes
   * it (0: one sum after the walk) */
  int64_t bucket_floats;
  struct amd_dist_bucket *buckets; /* in the order they are started */
  int n_buckets, next_bucket;
  const struct amd_trainer *bucket_plan_for;
  /* BN statistics packed for one reduction, in scratch_be's memory; with
   * parts: n_scratch more floats after them, the share being added */
  float *scratch;
  int64_t n_scratch;
  const struct amd_backend *scratch_be;
  /* with parts: the gradients of the process's shares before the current one, summed, in part_grads_be's memory */
  float *part_grads;
  int64_t n_part_grads;
  const struct amd_backend *part_grads_be;
  double part_sums[4]; /* with parts: their loss, sample, top-1 and top-5 sums */
};

/* Starts the communicator: MPI when the process was launched by mpirun /
 * srun (or AMD_DIST=mpi or nccl), a single process otherwise (or with
 * AMD_DIST=none). A launch by mpirun of a build without MPI is an error (the
 * copies would train independently and overwrite each other's files), as is
 * AMD_DIST=nccl in a build without NCCL. Ranks above 0 stop printing to
 * stdout (AMD_DIST_ALL_OUTPUT=1 keeps it). env: the process's environment
 * (core/env.h: AMD_DIST, the launcher's variables, AMD_DIST_*, faults). */
int amd_dist_init(amd_dist *d, const amd_env *env, amd_status *st);
/* After the backend be is open (on this rank's GPU: see amd_cli_backend_rank):
 * on a GPU with several ranks, or with AMD_DIST=nccl, opens NCCL on it (an
 * error in a build without NCCL, with AMD_DIST=mpi, or when two ranks share
 * a GPU); AMD_DIST=nccl on the CPU is an error; otherwise nothing changes. */
int amd_dist_use_device(amd_dist *d, const struct amd_backend *be, amd_status *st);
/* Waits for every rank, then shuts the communicator down. */
void amd_dist_finalize(amd_dist *d);
/* After a failure of this rank (which the caller has reported): with more
 * than one rank, ends the whole job (MPI_Abort) so that no rank waits
 * forever in a collective. With one rank it only returns. */
void amd_dist_abort(amd_dist *d);

/* How many shares a global batch is cut into: ranks x parts. */
int amd_dist_shares(const amd_dist *d);

/* The current share's part of a global batch of b samples (share rank *
 * parts + part of amd_dist_shares): offset and count. */
void amd_dist_share(const amd_dist *d, int64_t b, int64_t *offset, int64_t *count);

/* This step's random state for the current share, from the state all shares
 * use: with one share *shared itself (the consumer advances it as before);
 * with several a state mixed with the share's number, and *shared moves on
 * by one draw once the process's last share has taken its own. */
uint64_t amd_dist_rng_split(const amd_dist *d, uint64_t *shared);

/* One data-parallel gradient computation: forward + loss + backward on this
 * rank's n_local samples of a global batch of n_global (x, labels hold the
 * local ones), the loss gradient weighted by n_local / n_global, then the
 * gradient block and the loss / accuracy sums summed over the ranks. *loss is
 * the mean loss over the global batch, *bs the global sums. With parts, a
 * call per share (d->part): the shares before the last only add to the
 * process's sums (*loss and *bs untouched); the last share's call leaves the
 * sums of all shares of all ranks, as above. `step` is the
 * global optimizer step (fault injection, checks). With one rank: exactly
 * amd_trainer_step_grads (with reduce_alone followed by the one-rank sum of
 * the gradient block, which changes no bit). With AMD_DIST_BUCKET_MB=M
 * (and a communicator that offers it: NCCL, and MPI without overlap) the
 * block is summed in buckets of about M MB of consecutive parameters, each
 * started during the backward walk as soon as every node that writes its
 * gradients has queued its backward, so that on a GPU the sums overlap the
 * rest of the backward pass; the optimizer waits for all of them. */
int amd_dist_step_grads(amd_dist *d, struct amd_trainer *t, const struct amd_tensor *x, const int64_t *labels,
                        int64_t n_local, int64_t n_global, float smoothing, float loss_scale, int64_t step,
                        double *loss, struct amd_batch_stats *bs, amd_status *st);

/* After amd_trainer_update_stats: averages the BatchNormalization running
 * statistics over the shares (nothing with one share or with --sync-bn). */
int amd_dist_sync_stats(amd_dist *d, struct amd_trainer *t, amd_status *st);

/* Turns on synchronised BatchNormalization statistics for t's training steps. */
void amd_dist_sync_bn(amd_dist *d, struct amd_trainer *t);

/* amd_trainer_eval_split with the n samples spread over the ranks and the
 * sums reduced (every rank gets them). */
int amd_dist_eval_split(amd_dist *d, struct amd_trainer *t, const struct amd_dataset *ds,
                        const struct amd_data_split *split, const int64_t *idx, int64_t n, int64_t batch,
                        struct amd_batch_stats *bs, amd_status *st);

/* Logical OR of `flag` (an int >= 0; the maximum is returned) over the ranks. */
int amd_dist_max_int(amd_dist *d, int flag, int *out, amd_status *st);

/* Broadcasts n buffers (pointer, size pairs) from rank 0. */
int amd_dist_broadcast_all(amd_dist *d, void *const *bufs, const size_t *sizes, int n, amd_status *st);

/* FNV-1a 64 over the host copies of the parameter block and the BN statistics of t. */
uint64_t amd_dist_checksum(const struct amd_trainer *t);
/* Compares the checksums of all ranks (on a device backend after copying
 * the parameters and statistics to the host); an error naming the first rank
 * that differs from rank 0. *sum receives this rank's checksum. */
int amd_dist_check_identical(amd_dist *d, struct amd_trainer *t, uint64_t *sum, amd_status *st);

#endif

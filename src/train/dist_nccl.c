/* The NCCL implementation of amd_dist (dist.h): one GPU per rank, built when
 * meson finds CUDA, MPI and NCCL (AMD_HAVE_NCCL).
 *
 * MPI starts the ranks and stays underneath (dist_mpi.c): it tells each rank
 * who it is, checks that no two ranks drive the same GPU (MPI_Allgather of
 * the devices' UUIDs), carries NCCL's unique id from rank 0 to the others
 * (MPI_Bcast), and keeps doing the small host-side collectives
 * (allreduce_f64, broadcast, barrier) and the abort. NCCL (cuda/dist_nccl.cu)
 * sums the float buffers that live in device memory (the gradient block,
 * the packed BatchNormalization statistics) on the CUDA backend's stream; a
 * host buffer handed to allreduce_f32 (cudaPointerGetAttributes tells) goes
 * to MPI instead. Buckets of the gradient block (AMD_DIST_BUCKET_MB) run on a
 * second stream while the backward pass goes on (dist_nccl.cu). The abort aborts the NCCL communicator
 * (ncclCommAbort) before MPI_Abort ends the job. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../cuda/dist_nccl.h"
#include "dist.h"

extern const amd_dist_ops amd_dist_mpi_ops; /* dist_mpi.c */
int amd_dist_nccl_open(amd_dist *d, amd_status *st);

static int nccl_allreduce_f32(amd_dist *d, float *buf, int64_t n, amd_status *st) {
  if (!amd_nccl_is_device_ptr(buf)) return amd_dist_mpi_ops.allreduce_f32(d, buf, n, st);
  return amd_nccl_allreduce_f32(buf, n, st);
}

/* Buckets: NCCL on a second stream that waits for the work queued so far; a
 * host bucket (not the case in training) is summed by MPI at once. */
static int nccl_allreduce_f32_start(amd_dist *d, float *buf, int64_t n, amd_status *st) {
  if (!amd_nccl_is_device_ptr(buf)) return amd_dist_mpi_ops.allreduce_f32(d, buf, n, st);
  return amd_nccl_allreduce_f32_start(buf, n, st);
}

static int nccl_allreduce_f32_finish(amd_dist *d, amd_status *st) {
  (void)d;
  return amd_nccl_allreduce_f32_finish(st);
}

static int nccl_allreduce_f64(amd_dist *d, double *buf, int64_t n, amd_status *st) {
  return amd_dist_mpi_ops.allreduce_f64(d, buf, n, st);
}

static int nccl_broadcast(amd_dist *d, void *buf, size_t bytes, int root, amd_status *st) {
  return amd_dist_mpi_ops.broadcast(d, buf, bytes, root, st);
}

static int nccl_barrier(amd_dist *d, amd_status *st) { return amd_dist_mpi_ops.barrier(d, st); }

static void nccl_abort(amd_dist *d, int code) {
  amd_nccl_abort();
  amd_dist_mpi_ops.abort(d, code);
}

static void nccl_finalize(amd_dist *d) {
  amd_nccl_close();
  amd_dist_mpi_ops.finalize(d);
}

static const amd_dist_ops nccl_ops = {
    .name = "NCCL",
    .allreduce_f32 = nccl_allreduce_f32,
    .allreduce_f32_start = nccl_allreduce_f32_start,
    .allreduce_f32_finish = nccl_allreduce_f32_finish,
    .allreduce_f64 = nccl_allreduce_f64,
    .broadcast = nccl_broadcast,
    .barrier = nccl_barrier,
    .abort = nccl_abort,
    .finalize = nccl_finalize,
};

/* What each rank tells the others about its GPU. */
typedef struct gpu_id {
  unsigned char uuid[16];
  int index;
  char bus[32];
  char host[64];
} gpu_id;

int amd_dist_nccl_open(amd_dist *d, amd_status *st) {
  if (d->ops != &amd_dist_mpi_ops)
    return amd_fail(st, "NCCL needs MPI to start the ranks (launch with mpirun, or set AMD_DIST=nccl)");
  gpu_id mine;
  memset(&mine, 0, sizeof mine);
  if (amd_nccl_device(mine.uuid, &mine.index, mine.bus, sizeof mine.bus, st)) return -1;
  if (gethostname(mine.host, sizeof mine.host - 1)) snprintf(mine.host, sizeof mine.host, "?");
  gpu_id *all = calloc((size_t)d->size, sizeof *all);
  if (!all) return amd_fail(st, "out of memory");
  int rc = MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) {
    free(all);
    return amd_fail(st, "MPI_Allgather of the GPUs failed (error %d)", rc);
  }
  /* every rank sees the same table, so every rank fails alike */
  for (int i = 0; i < d->size; i++)
    for (int j = i + 1; j < d->size; j++)
      if (memcmp(all[i].uuid, all[j].uuid, sizeof mine.uuid) == 0) {
        amd_fail(st,
                 "ranks %d and %d both drive GPU %s (cuda:%d of rank %d) on %s: NCCL needs a GPU per rank; "
                 "start at most as many ranks per node as it has GPUs, and leave out --device cuda:N so that "
                 "each rank takes GPU (local rank mod GPU count)",
                 i, j, all[i].bus, all[i].index, i, all[i].host);
        free(all);
        return -1;
      }
  free(all);
  unsigned char id[AMD_NCCL_ID_BYTES];
  memset(id, 0, sizeof id);
  if (d->rank == 0 && amd_nccl_unique_id(id, st)) return -1; /* the failure ends the job (MPI_Abort) */
  rc = MPI_Bcast(id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) return amd_fail(st, "MPI_Bcast of the NCCL id failed (error %d)", rc);
  if (amd_nccl_open(id, d->rank, d->size, d->nccl_timeout_s, st)) return -1;
  d->ops = &nccl_ops;
  return 0;
}

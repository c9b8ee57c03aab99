/* The MPI implementation of amd_dist (dist.h), built when meson finds MPI.
 *
 * One rank per process in MPI_COMM_WORLD, launched by mpirun (Open MPI),
 * mpiexec (MPICH) or srun. Errors of MPI calls come back as amd_status
 * messages (MPI_ERRORS_RETURN) so that the caller can name the rank and end
 * the job with MPI_Abort; a rank that dies is noticed by the launcher, which
 * ends the others. Buffers longer than INT_MAX elements go in pieces.
 * allreduce_f32 works on host memory only; GPU ranks use dist_nccl.c, which
 * builds on this table. */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>

#include "dist.h"

int amd_dist_mpi_open(amd_dist *d, amd_status *st);
/* The table, also for dist_nccl.c, which hands the host-side collectives to it. */
extern const amd_dist_ops amd_dist_mpi_ops;

static int mpi_check(int rc, const char *what, amd_status *st) {
  if (rc == MPI_SUCCESS) return 0;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "error %d", rc);
  return amd_fail(st, "%s failed: %s", what, msg);
}

#define AMD_MPI_PIECE ((int64_t)1 << 30)

static int mpi_allreduce_f32(amd_dist *d, float *buf, int64_t n, amd_status *st) {
  (void)d;
  for (int64_t at = 0; at < n; at += AMD_MPI_PIECE) {
    int k = (int)(n - at < AMD_MPI_PIECE ? n - at : AMD_MPI_PIECE);
    if (mpi_check(MPI_Allreduce(MPI_IN_PLACE, buf + at, k, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
                  "MPI_Allreduce", st))
      return -1;
  }
  return 0;
}

/* Buckets (AMD_DIST_BUCKET_MB): the host's backward has written the bucket
 * when it starts, so each is summed at once (no overlap: the point on CPU
 * ranks is only that they give the same result). */
static int mpi_allreduce_f32_start(amd_dist *d, float *buf, int64_t n, amd_status *st) {
  return mpi_allreduce_f32(d, buf, n, st);
}

static int mpi_allreduce_f32_finish(amd_dist *d, amd_status *st) {
  (void)d, (void)st;
  return 0;
}

static int mpi_allreduce_f64(amd_dist *d, double *buf, int64_t n, amd_status *st) {
  (void)d;
  for (int64_t at = 0; at < n; at += AMD_MPI_PIECE) {
    int k = (int)(n - at < AMD_MPI_PIECE ? n - at : AMD_MPI_PIECE);
    if (mpi_check(MPI_Allreduce(MPI_IN_PLACE, buf + at, k, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
                  "MPI_Allreduce", st))
      return -1;
  }
  return 0;
}

static int mpi_broadcast(amd_dist *d, void *buf, size_t bytes, int root, amd_status *st) {
  (void)d;
  for (size_t at = 0; at < bytes; at += (size_t)AMD_MPI_PIECE) {
    int k = (int)(bytes - at < (size_t)AMD_MPI_PIECE ? bytes - at : (size_t)AMD_MPI_PIECE);
    if (mpi_check(MPI_Bcast((char *)buf + at, k, MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast", st)) return -1;
  }
  return 0;
}

static int mpi_barrier(amd_dist *d, amd_status *st) {
  (void)d;
  return mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier", st);
}

static void mpi_abort(amd_dist *d, int code) {
  (void)d;
  fflush(stdout);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
}

static void mpi_finalize(amd_dist *d) {
  (void)d;
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
}

const amd_dist_ops amd_dist_mpi_ops = {
    .name = "MPI",
    .allreduce_f32 = mpi_allreduce_f32,
    .allreduce_f32_start = mpi_allreduce_f32_start,
    .allreduce_f32_finish = mpi_allreduce_f32_finish,
    .allreduce_f64 = mpi_allreduce_f64,
    .broadcast = mpi_broadcast,
    .barrier = mpi_barrier,
    .abort = mpi_abort,
    .finalize = mpi_finalize,
};

int amd_dist_mpi_open(amd_dist *d, amd_status *st) {
  int ready = 0;
  MPI_Initialized(&ready);
  if (!ready && mpi_check(MPI_Init(NULL, NULL), "MPI_Init", st)) return -1;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (mpi_check(MPI_Comm_rank(MPI_COMM_WORLD, &d->rank), "MPI_Comm_rank", st)) return -1;
  if (mpi_check(MPI_Comm_size(MPI_COMM_WORLD, &d->size), "MPI_Comm_size", st)) return -1;
  MPI_Comm node;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, d->rank, MPI_INFO_NULL, &node) ==
      MPI_SUCCESS) {
    MPI_Comm_size(node, &d->local_size);
    MPI_Comm_rank(node, &d->local_rank);
    MPI_Comm_free(&node);
  }
  d->ops = &amd_dist_mpi_ops;
  return 0;
}

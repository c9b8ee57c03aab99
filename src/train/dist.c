/* Data-parallel training: the communicator, the single-process implementation
 * and the steps built on the vtable (see dist.h for the conventions).
 *
 * Nothing here changes a one-rank run: every function returns at once, or
 * calls the trainer exactly as the single-process loop does, when size == 1. */
#include "dist.h"

#include <limits.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "../data/dataset.h"
#include "../exec/backend.h"
#include "../report/profile.h"
#include "kernels.h"
#include "trainer.h"

#ifdef AMD_HAVE_MPI
int amd_dist_mpi_open(amd_dist *d, amd_status *st); /* dist_mpi.c */
#endif
#ifdef AMD_HAVE_NCCL
int amd_dist_nccl_open(amd_dist *d, amd_status *st); /* dist_nccl.c */
#endif

/* ---- one process ---------------------------------------------------------- */

static int single_allreduce_f32(amd_dist *d, float *buf, int64_t n, amd_status *st) {
  (void)d, (void)buf, (void)n, (void)st;
  return 0;
}
static int single_allreduce_f64(amd_dist *d, double *buf, int64_t n, amd_status *st) {
  (void)d, (void)buf, (void)n, (void)st;
  return 0;
}
static int single_broadcast(amd_dist *d, void *buf, size_t bytes, int root, amd_status *st) {
  (void)d, (void)buf, (void)bytes, (void)root, (void)st;
  return 0;
}
static int single_barrier(amd_dist *d, amd_status *st) {
  (void)d, (void)st;
  return 0;
}
static void single_abort(amd_dist *d, int code) {
  (void)d;
  fflush(stdout);
  exit(code);
}
static void single_finalize(amd_dist *d) { (void)d; }

static const amd_dist_ops single_ops = {
    .name = "single process",
    .allreduce_f32 = single_allreduce_f32,
    .allreduce_f64 = single_allreduce_f64,
    .broadcast = single_broadcast,
    .barrier = single_barrier,
    .abort = single_abort,
    .finalize = single_finalize,
};

/* ---- set-up ---------------------------------------------------------------- */

/* Several ranks on one node share its cores: unless OMP_NUM_THREADS says
 * otherwise, each rank gets the cores it is bound to, or its part of them. */
static void share_cores(const amd_dist *d, int omp_threads_set) {
#ifdef _OPENMP
  if (d->local_size <= 1 || omp_threads_set) return;
  cpu_set_t set;
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  int mine = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : (int)online;
  int threads = mine < online ? mine : (int)(online / d->local_size);
  omp_set_num_threads(threads > 0 ? threads : 1);
#else
  (void)d, (void)omp_threads_set;
#endif
}

int amd_dist_init(amd_dist *d, const amd_env *env, amd_status *st) {
  memset(d, 0, sizeof *d);
  d->size = d->local_size = d->parts = 1;
  d->ops = &single_ops;
  const char *want = env->dist;
  long launched = env->launcher_size;
  if (want) {
    if (strcmp(want, "none") == 0)
      d->requested = AMD_DIST_NONE;
    else if (strcmp(want, "mpi") == 0)
      d->requested = AMD_DIST_MPI;
    else if (strcmp(want, "nccl") == 0)
      d->requested = AMD_DIST_NCCL;
    else
      return amd_fail(st, "AMD_DIST='%s': expected 'mpi', 'nccl' or 'none'", want);
  }
#ifndef AMD_HAVE_NCCL
  if (d->requested == AMD_DIST_NCCL)
    return amd_fail(st, "AMD_DIST=nccl, but this build has no NCCL (it needs CUDA, MPI and nccl.h + libnccl; "
                        "reconfigure with -Dnccl=enabled to see what is missing)");
#endif
  int use_mpi = want ? d->requested == AMD_DIST_MPI || d->requested == AMD_DIST_NCCL : launched > 0;
  if (use_mpi) {
#ifdef AMD_HAVE_MPI
    if (amd_dist_mpi_open(d, st)) return -1;
#else
    if (want)
      return amd_fail(st, "AMD_DIST=%s, but this build has no MPI (install libopenmpi-dev and rebuild)",
                      want);
    if (launched > 1)
      return amd_fail(st,
                      "launched as one of %ld ranks, but this build has no MPI (install libopenmpi-dev and "
                      "rebuild): the copies would train independently",
                      launched);
#endif
  }
  d->faults = env->faults;
  d->nccl_timeout_s = env->nccl_timeout_s;
  const char *bucket = env->dist_bucket_mb;
  if (bucket && *bucket) {
    char *end;
    double mb = strtod(bucket, &end);
    if (*end || !(mb >= 0) || mb > 1e6)
      return amd_fail(st, "AMD_DIST_BUCKET_MB='%s': expected megabytes", bucket);
    d->bucket_floats = (int64_t)(mb * 1048576.0 / sizeof(float));
    if (mb > 0 && d->bucket_floats < 1) d->bucket_floats = 1;
  }
  d->check_every_step = env->dist_check;
  if (d->size > 1) {
    share_cores(d, env->omp_threads_set);
    if (d->rank > 0 && !env->dist_all_output) {
      fflush(stdout);
      if (!freopen("/dev/null", "w", stdout)) return amd_fail(st, "rank %d: cannot silence stdout", d->rank);
    }
  }
  return 0;
}

int amd_dist_use_device(amd_dist *d, const amd_backend *be, amd_status *st) {
  int gpu = be->device != AMD_DEVICE_CPU;
  if (!gpu) {
    if (d->requested == AMD_DIST_NCCL)
      return amd_fail(st, "AMD_DIST=nccl: NCCL sums GPU memory; this run is on %s (use --device cuda)",
                      be->name);
    return 0;
  }
  if (d->requested == AMD_DIST_NONE || (d->size == 1 && d->requested != AMD_DIST_NCCL)) return 0;
  if (d->requested == AMD_DIST_MPI)
    return amd_fail(st,
                    "%d ranks on %s with AMD_DIST=mpi: the MPI all-reduce sums host memory; leave AMD_DIST "
                    "unset (NCCL) or use --device cpu",
                    d->size, be->name);
#ifdef AMD_HAVE_NCCL
  if (amd_dist_nccl_open(d, st)) return -1;
  d->reduce_alone = d->size == 1;
  return 0;
#else
  return amd_fail(
      st,
      "%d ranks on %s: training on several GPUs needs the NCCL all-reduce, which this build does "
      "not have (it needs nccl.h and libnccl next to CUDA and MPI: reconfigure with -Dnccl=enabled "
      "to see what is missing); under mpirun use --device cpu",
      d->size, be->name);
#endif
}

/* Frees the BN scratch and the shares' gradient sum in the memory they came from. */
static void free_scratch(amd_dist *d) {
  if (d->scratch && d->scratch_be) d->scratch_be->buf->mem_free(d->scratch);
  if (d->part_grads && d->part_grads_be) d->part_grads_be->buf->mem_free(d->part_grads);
  d->scratch = d->part_grads = NULL;
  d->n_scratch = d->n_part_grads = 0;
  d->scratch_be = d->part_grads_be = NULL;
}

void amd_dist_finalize(amd_dist *d) {
  if (!d->ops) return;
  fflush(stdout);
  free_scratch(d);
  free(d->buckets);
  d->buckets = NULL;
  d->ops->finalize(d);
  d->ops = NULL;
}

void amd_dist_abort(amd_dist *d) {
  if (!d->ops || d->size == 1) return;
  fflush(stdout);
  fflush(stderr);
  d->ops->abort(d, 1);
}

int amd_dist_shares(const amd_dist *d) { return d->size * d->parts; }

/* The current share's number among amd_dist_shares: this rank's shares are consecutive. */
static int share_index(const amd_dist *d) { return d->rank * d->parts + d->part; }

void amd_dist_share(const amd_dist *d, int64_t b, int64_t *offset, int64_t *count) {
  const int64_t n = amd_dist_shares(d), k = share_index(d);
  int64_t lo = b * k / n, hi = b * (k + 1) / n;
  *offset = lo;
  *count = hi - lo;
}

uint64_t amd_dist_rng_split(const amd_dist *d, uint64_t *shared) {
  if (amd_dist_shares(d) == 1) return *shared;
  uint64_t mixed = *shared ^ (0xd1b54a32d192ed03ull * (uint64_t)(share_index(d) + 1));
  if (d->part == d->parts - 1) amd_rng_next(shared);
  return amd_rng_next(&mixed);
}

/* ---- collectives built on the vtable ----------------------------------------- */

int amd_dist_max_int(amd_dist *d, int flag, int *out, amd_status *st) {
  if (d->size == 1) {
    *out = flag;
    return 0;
  }
  double *v = calloc((size_t)d->size, sizeof *v);
  if (!v) return amd_fail(st, "out of memory");
  v[d->rank] = flag;
  int rc = d->ops->allreduce_f64(d, v, d->size, st);
  int m = 0;
  for (int i = 0; rc == 0 && i < d->size; i++)
    if (v[i] > m) m = (int)v[i];
  free(v);
  *out = m;
  return rc;
}

int amd_dist_broadcast_all(amd_dist *d, void *const *bufs, const size_t *sizes, int n, amd_status *st) {
  for (int i = 0; d->size > 1 && i < n; i++)
    if (d->ops->broadcast(d, bufs[i], sizes[i], 0, st)) return -1;
  return 0;
}

uint64_t amd_dist_checksum(const amd_trainer *t) {
  uint64_t h = 1469598103934665603ull;
  const unsigned char *p = (const unsigned char *)t->params;
  for (size_t i = 0; i < (size_t)t->n_floats * sizeof(float); i++) h = (h ^ p[i]) * 1099511628211ull;
  for (int s = 0; s < t->n_stats; s++) {
    const amd_tensor *x = &t->g->values[t->stats[s][1]].init;
    const unsigned char *q = x->data;
    for (size_t i = 0; q && i < amd_tensor_nbytes(x); i++) h = (h ^ q[i]) * 1099511628211ull;
  }
  return h;
}

int amd_dist_check_identical(amd_dist *d, amd_trainer *t, uint64_t *sum, amd_status *st) {
  if (d->size == 1) {
    if (sum) *sum = amd_dist_checksum(t);
    return 0;
  }
  /* a device backend: the host copies first (gradients and all: a check, not the hot path) */
  if (t->be->device != AMD_DEVICE_CPU && amd_trainer_sync_host(t, NULL, 0, st)) return -1;
  uint64_t mine = amd_dist_checksum(t), root = mine;
  if (sum) *sum = mine;
  if (d->ops->broadcast(d, &root, sizeof root, 0, st)) return -1;
  int differ;
  if (amd_dist_max_int(d, mine != root ? d->size - d->rank : 0, &differ, st)) return -1;
  if (differ)
    return amd_fail(st, "rank %d holds other parameters than rank 0 (checksum differs: the ranks diverged)",
                    d->size - differ);
  return 0;
}

/* ---- training ------------------------------------------------------------------ */

/* ---- the gradient sum in buckets (AMD_DIST_BUCKET_MB) ---- */

/* A piece of the gradient block: [off, off + n); `ready`: the lowest node
 * that writes a gradient in it, so that the piece is final once the backward
 * walk has passed every node >= ready. */
struct amd_dist_bucket {
  int64_t off, n;
  int ready;
};

/* Buckets in start order: ready descending (the order in which the walk
 * completes them), then offset descending. The same graph gives the same
 * order on every rank. */
static int bucket_order(const void *a, const void *b) {
  const struct amd_dist_bucket *x = a, *y = b;
  if (x->ready != y->ready) return x->ready > y->ready ? -1 : 1;
  return x->off > y->off ? -1 : x->off < y->off;
}

/* Cuts t's gradient block into buckets of consecutive parameters (at least
 * one each) of about d->bucket_floats. A parameter's gradient is written by
 * the nodes that read the parameter (ops alias a gradient only downstream of
 * where they read it), and the walk visits nodes in reverse order, so the
 * lowest reader is the last writer. */
static int plan_buckets(amd_dist *d, const amd_trainer *t, amd_status *st) {
  if (d->buckets && d->bucket_plan_for == t) return 0;
  free(d->buckets);
  d->buckets = NULL;
  d->n_buckets = 0;
  const amd_graph *g = t->g;
  int *param_of = malloc((size_t)(g->n_values > 0 ? g->n_values : 1) * sizeof *param_of);
  int *first = malloc((size_t)t->n_params * sizeof *first);
  d->buckets = calloc((size_t)t->n_params, sizeof *d->buckets);
  if (!param_of || !first || !d->buckets) {
    free(param_of);
    free(first);
    return amd_fail(st, "out of memory");
  }
  for (int v = 0; v < g->n_values; v++) param_of[v] = -1;
  for (int p = 0; p < t->n_params; p++) {
    param_of[t->param_value[p]] = p;
    first[p] = g->n_nodes; /* read by no node: final from the start */
  }
  for (int i = g->n_nodes - 1; i >= 0; i--)
    for (int k = 0; k < g->nodes[i].n_in; k++) {
      int v = g->nodes[i].in[k];
      if (v >= 0 && param_of[v] >= 0) first[param_of[v]] = i;
    }
  /* parameters lie in the block in index order (trainer_params.c); consecutive ones share a bucket */
  for (int p = 0; p < t->n_params;) {
    struct amd_dist_bucket *b = &d->buckets[d->n_buckets++];
    b->off = t->param_offset[p];
    b->ready = INT_MAX;
    do {
      if (first[p] < b->ready) b->ready = first[p];
      p++;
    } while (p < t->n_params && t->param_offset[p] - b->off < d->bucket_floats);
    b->n = (p < t->n_params ? t->param_offset[p] : t->n_floats) - b->off;
  }
  free(param_of);
  free(first);
  qsort(d->buckets, (size_t)d->n_buckets, sizeof *d->buckets, bucket_order);
  d->bucket_plan_for = t;
  return 0;
}

/* trainer's backward_progress: starts, in plan order, every bucket that no
 * node <= i writes. */
static int start_buckets(void *user, int i, amd_status *st) {
  amd_dist *d = user;
  const amd_trainer *t = d->bucket_plan_for;
  while (d->next_bucket < d->n_buckets && d->buckets[d->next_bucket].ready > i) {
    const struct amd_dist_bucket *b = &d->buckets[d->next_bucket++];
    if (d->ops->allreduce_f32_start(d, t->bgrads + b->off, b->n, st))
      return amd_fail_prefix(st, "all-reduce of gradient bucket [%lld, %lld)", (long long)b->off,
                             (long long)(b->off + b->n));
  }
  return 0;
}

/* ---- BN statistics and shares in turn ---- */

/* How many floats t's BN running statistics hold. */
static int64_t stats_count(amd_trainer *t) {
  int64_t n = 0;
  for (int s = 0; s < t->n_stats; s++) n += amd_tensor_numel(amd_trainer_stat(t, s));
  return n;
}

/* d->scratch for n floats of statistics in be's memory (2n with parts). */
static int stats_scratch(amd_dist *d, const amd_backend *be, int64_t n, amd_status *st) {
  const int64_t want = d->parts > 1 ? 2 * n : n;
  if (want <= d->n_scratch && d->scratch_be == be) return 0;
  if (d->scratch && d->scratch_be) d->scratch_be->buf->mem_free(d->scratch);
  d->scratch = NULL;
  d->n_scratch = 0;
  if (be->buf->mem_alloc((void **)&d->scratch, (size_t)want * sizeof(float), st)) return -1;
  d->scratch_be = be;
  d->n_scratch = want;
  return 0;
}

/* Copies t's running statistics, one after another, into dst (memory of t's
 * backend), or back from it (to_stats). computed: the ones the last training
 * forward pass computed (amd_trainer_stat_computed) instead of the ones in
 * the model. */
static int pack_stats(amd_trainer *t, float *dst, int computed, int to_stats, amd_status *st) {
  const amd_backend *be = t->be;
  float *p = dst;
  for (int s = 0; s < t->n_stats; s++) {
    amd_tensor *x = amd_trainer_stat(t, s);
    const amd_tensor *from = computed ? amd_trainer_stat_computed(t, s) : NULL;
    if (!from) from = x;
    size_t bytes = amd_tensor_nbytes(x);
    int rc;
    if (to_stats)
      rc = x->device == be->device ? be->buf->mem_copy(x->data, p, bytes, st)
                                   : be->buf->mem_to_host(x->data, p, bytes, st);
    else
      rc = from->device == be->device ? be->buf->mem_copy(p, from->data, bytes, st)
                                      : be->buf->mem_from_host(p, from->data, bytes, st);
    if (rc) return -1;
    p += amd_tensor_numel(x);
  }
  return 0;
}

/* --accumulate, after the backward pass of share d->part: its gradients and
 * running statistics join those of the process's shares before it (the
 * first share's are copied). After the last share the gradient block holds
 * g_last + (g_0 + ... + g_{N-2}) (for two shares the one sum two ranks
 * make) and d->scratch the sum of the shares' running statistics, which
 * amd_dist_sync_stats turns into their mean. computed == 0: a share without
 * samples (zero gradients) leaves the statistics as they were. */
static int add_share(amd_dist *d, amd_trainer *t, int computed, amd_status *st) {
  const amd_backend *be = t->be;
  const amd_train_kernels *k = amd_train_kernels_for(be->device);
  const int first = d->part == 0, last = d->part == d->parts - 1;
  const int64_t n = t->n_floats;
  if (!d->part_grads || d->n_part_grads != n || d->part_grads_be != be) {
    if (d->part_grads && d->part_grads_be) d->part_grads_be->buf->mem_free(d->part_grads);
    d->part_grads = NULL;
    if (be->buf->mem_alloc((void **)&d->part_grads, (size_t)n * sizeof(float), st)) return -1;
    d->n_part_grads = n;
    d->part_grads_be = be;
  }
  int rc = last    ? k->add(t->bgrads, d->part_grads, n, st)
           : first ? be->buf->mem_copy(d->part_grads, t->bgrads, (size_t)n * sizeof(float), st)
                   : k->add(d->part_grads, t->bgrads, n, st);
  if (rc || t->n_stats == 0) return rc;
  const int64_t ns = stats_count(t);
  if (stats_scratch(d, be, ns, st)) return -1;
  float *sum = d->scratch, *share = d->scratch + ns;
  if (pack_stats(t, first ? sum : share, computed, 0, st)) return -1;
  return first ? 0 : k->add(sum, share, ns, st);
}

/* The gradients of one step, summed over the ranks: in buckets during the
 * walk when asked for and offered, else in one piece after it. n_local == 0:
 * this rank adds zeros (and starts the same buckets as the others). */
static int grads_summed(amd_dist *d, amd_trainer *t, const amd_tensor *x, const int64_t *labels,
                        int64_t n_local, float smoothing, float scale, int64_t step, double *loss,
                        amd_batch_stats *bs, amd_status *st) {
  int buckets = d->parts == 1 && d->bucket_floats > 0 && d->ops->allreduce_f32_start && d->ops->allreduce_f32_finish;
  if (buckets) {
    if (plan_buckets(d, t, st)) return -1;
    d->next_bucket = 0;
    t->backward_progress = start_buckets;
    t->progress_user = d;
  }
  int rc = 0;
  if (n_local > 0)
    rc = amd_trainer_step_grads(t, x, labels, smoothing, scale, loss, bs, st);
  else
    rc = t->be->buf->mem_zero(t->bgrads, (size_t)t->n_floats * sizeof(float), st);
  t->backward_progress = NULL;
  t->progress_user = NULL;
  if (rc) return -1;
  if (d->parts > 1) { /* --accumulate: this share joins the ones before; the ranks' sum waits for the last */
    if (add_share(d, t, n_local > 0, st)) return -1;
    if (d->part < d->parts - 1) return 0;
  }
  double t0 = AMD_PROF_T0; /* the wait for the slowest rank counts here too */
  /* the block where the backend keeps it: host memory (MPI) or the GPU's (NCCL) */
  if (buckets)
    rc = start_buckets(d, -1, st) || d->ops->allreduce_f32_finish(d, st) ? -1 : 0;
  else
    rc = d->ops->allreduce_f32(d, t->bgrads, t->n_floats, st);
  if (amd_prof_on) amd_prof_part_add(AMD_PROF_ALLREDUCE, amd_prof_clock() - t0);
  if (rc) return amd_fail_prefix(st, "all-reduce of the gradients at step %lld", (long long)step + 1);
  return 0;
}

int amd_dist_step_grads(amd_dist *d, amd_trainer *t, const amd_tensor *x, const int64_t *labels,
                        int64_t n_local, int64_t n_global, float smoothing, float loss_scale, int64_t step,
                        double *loss, amd_batch_stats *bs, amd_status *st) {
  if (amd_dist_shares(d) == 1 && !d->reduce_alone)
    return amd_trainer_step_grads(t, x, labels, smoothing, loss_scale, loss, bs, st);
  if (amd_dist_shares(d) == 1) { /* the one-rank sums (tests): the same gradients, loss and sums */
    return grads_summed(d, t, x, labels, n_local, smoothing, loss_scale, step, loss, bs, st);
  }
  if (d->part == 0 && d->faults.fail_rank == d->rank && step + 1 >= d->faults.fail_step) {
    if (d->faults.fail_kill) raise(SIGKILL);
    return amd_fail(st, "injected failure (AMD_FAULT_RANK) at step %lld", (long long)step + 1);
  }
  if (d->part == 0 && d->size > 1 && d->check_every_step && amd_dist_check_identical(d, t, NULL, st))
    return amd_fail_prefix(st, "before step %lld", (long long)step + 1);
  if (d->sync_bn && n_local == 0)
    return amd_fail(st, "--sync-bn: this rank has no sample of a global batch of %lld", (long long)n_global);
  /* dropout: a stream per rank for this step; all ranks move the shared one on alike */
  uint64_t shared = t->ctx.rng;
  t->ctx.rng = amd_dist_rng_split(d, &shared);
  amd_batch_stats local = {0};
  double local_loss = 0;
  float w = (float)((double)n_local / (double)n_global);
  if (grads_summed(d, t, x, labels, n_local, smoothing, loss_scale * w, step, &local_loss, &local, st))
    return -1;
  t->ctx.rng = shared;
  double sums[4] = {local.loss_sum, (double)local.n, (double)local.top1, (double)local.top5};
  if (d->parts > 1) { /* the process's sums over its shares, reduced after the last */
    for (int i = 0; i < 4; i++) d->part_sums[i] = d->part == 0 ? sums[i] : d->part_sums[i] + sums[i];
    if (d->part < d->parts - 1) return 0;
    memcpy(sums, d->part_sums, sizeof sums);
  }
  double t0 = AMD_PROF_T0;
  if (d->ops->allreduce_f64(d, sums, 4, st)) return amd_fail_prefix(st, "all-reduce of the loss");
  if (amd_prof_on) amd_prof_part_add(AMD_PROF_ALLREDUCE, amd_prof_clock() - t0);
  bs->loss_sum += sums[0];
  bs->n += (int64_t)sums[1];
  bs->top1 += (int64_t)sums[2];
  bs->top5 += (int64_t)sums[3];
  *loss = sums[1] > 0 ? sums[0] / sums[1] : 0;
  return 0;
}

int amd_dist_sync_stats(amd_dist *d, amd_trainer *t, amd_status *st) {
  if ((amd_dist_shares(d) == 1 && !d->reduce_alone) || d->sync_bn || t->n_stats == 0) return 0;
  /* the statistics where the backend keeps them (the GPU's memory on a device
   * backend), packed into one scratch buffer in the same memory (with parts,
   * add_share left the sum of this process's shares there), summed over the
   * ranks, scaled by 1/shares and copied back */
  const amd_backend *be = t->be;
  const int64_t n = stats_count(t);
  if (d->parts == 1 && (stats_scratch(d, be, n, st) || pack_stats(t, d->scratch, 0, 0, st))) return -1;
  if (d->parts > 1 && (!d->scratch || d->scratch_be != be || d->n_scratch < 2 * n))
    return amd_fail(st, "amd_dist_sync_stats: no statistics of the shares (amd_dist_step_grads comes first)");
  if (d->ops->allreduce_f32(d, d->scratch, n, st))
    return amd_fail_prefix(st, "all-reduce of the BN statistics");
  /* the trainer's backend has training kernels (amd_trainer_set_backend) */
  if (amd_train_kernels_for(be->device)->scale(d->scratch, n, 1.0f / (float)amd_dist_shares(d), st)) return -1;
  return pack_stats(t, d->scratch, 0, 1, st);
}

static int bn_reduce(void *user, double *buf, int64_t n, amd_status *st) {
  amd_dist *d = user;
  return d->ops->allreduce_f64(d, buf, n, st);
}

void amd_dist_sync_bn(amd_dist *d, amd_trainer *t) {
  if (d->size == 1 && !d->reduce_alone) return;
  d->sync_bn = 1;
  t->ctx.sync_stats = bn_reduce;
  t->ctx.sync_user = d;
}

int amd_dist_eval_split(amd_dist *d, amd_trainer *t, const amd_dataset *ds, const amd_data_split *split,
                        const int64_t *idx, int64_t n, int64_t batch, amd_batch_stats *bs, amd_status *st) {
  if (d->size == 1) return amd_trainer_eval_split(t, ds, split, idx, n, batch, bs, NULL, 0, st);
  /* the ranks' parts of the n samples (evaluation has no shares in turn) */
  int64_t lo = n * d->rank / d->size, cnt = n * (d->rank + 1) / d->size - lo;
  int64_t *own = NULL;
  if (!idx && cnt > 0) {
    own = malloc((size_t)cnt * sizeof *own);
    if (!own) return amd_fail(st, "out of memory");
    for (int64_t i = 0; i < cnt; i++) own[i] = lo + i;
  }
  amd_batch_stats local = {0};
  int rc = cnt > 0
               ? amd_trainer_eval_split(t, ds, split, idx ? idx + lo : own, cnt, batch, &local, NULL, 0, st)
               : 0;
  free(own);
  if (rc) return -1;
  double sums[4] = {local.loss_sum, (double)local.n, (double)local.top1, (double)local.top5};
  if (d->ops->allreduce_f64(d, sums, 4, st)) return amd_fail_prefix(st, "all-reduce of the evaluation");
  bs->loss_sum += sums[0];
  bs->n += (int64_t)sums[1];
  bs->top1 += (int64_t)sums[2];
  bs->top5 += (int64_t)sums[3];
  return 0;
}

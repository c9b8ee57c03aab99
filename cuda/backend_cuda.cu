/* The CUDA backend table (backend_cuda.h): device selection, the caching
 * allocator, copies, node dispatch, and the training primitives on the
 * device (softmax cross-entropy, finite check, scaling, the fused optimizer).
 *
 * Memory: float tensors are device memory from a caching allocator (blocks
 * kept by rounded size and reused best-fit, so a training step after the
 * first makes no cudaMalloc); alloc zeroes with cudaMemsetAsync. Other dtypes are host
 * memory (amd_tensor_alloc), because the ops' infer functions read them.
 * Everything is queued on one stream; copies to the host synchronise it,
 * uploads up to 8 MB do not (pinned staging, see cu_from_host), nor do the
 * loss and the finite check of a deferred training step (xent_defer). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

extern "C" {
#include "../src/data/dataset.h"
#include "../src/train/loss.h"
#include "../src/train/optim.h"
}

amd_cuda_state amd_cu;
static char cu_name[160] = "cuda";

/* ================================================================ caching allocator */

struct cu_block {
  void *p;
  size_t size;
  int used;
};
static cu_block *blocks;
static int n_blocks, cap_blocks;
static size_t held_bytes, peak_bytes;
static long n_mallocs;

/* Sizes are rounded so that similar requests share blocks: 512 B steps up to
 * 1 MB, then steps of 1/16 of the power of two below. */
static size_t round_size(size_t b) {
  if (b <= (1u << 20)) return (b + 511) & ~(size_t)511;
  size_t p = 1;
  while (p * 2 <= b) p *= 2;
  size_t step = p / 16;
  return (b + step - 1) / step * step;
}

static void release_unused(void) {
  int k = 0;
  for (int i = 0; i < n_blocks; i++) {
    if (!blocks[i].used) {
      cudaFree(blocks[i].p);
      held_bytes -= blocks[i].size;
    } else {
      blocks[k++] = blocks[i];
    }
  }
  n_blocks = k;
}

/* cudaMalloc of sz bytes, counted in the held and peak bytes; when the GPU is
 * full, the cache's free blocks are given back and it tries once more. */
static int device_malloc(void **d, size_t sz, amd_status *st) {
  *d = NULL;
  if (amd_cu.capturing) return amd_fail(st, "a new allocation (%zu bytes) in a captured step", sz);
  cudaError_t e = cudaMalloc(d, sz);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    cudaStreamSynchronize(amd_cu.stream);
    release_unused();
    e = cudaMalloc(d, sz);
  }
  if (e != cudaSuccess) {
    cudaGetLastError();
    return amd_fail(st, "CUDA error %s allocating %zu bytes on the GPU (%zu held)", cudaGetErrorName(e), sz,
                    held_bytes);
  }
  n_mallocs++;
  held_bytes += sz;
  if (held_bytes > peak_bytes) peak_bytes = held_bytes;
  return 0;
}

int amd_cu_malloc(void **p, size_t bytes, amd_status *st) {
  size_t sz = round_size(bytes ? bytes : 1);
  /* the smallest free block that fits, if it wastes less than a quarter (a
   * training step frees and asks again for many sizes: exact matches only
   * left blocks of other sizes idle while new ones were made) */
  int best = -1;
  for (int i = 0; i < n_blocks; i++)
    if (!blocks[i].used && blocks[i].size >= sz && blocks[i].size - sz <= sz / 4 &&
        (best < 0 || blocks[i].size < blocks[best].size)) {
      best = i;
      if (blocks[i].size == sz) break;
    }
  if (best >= 0) {
    blocks[best].used = 1;
    *p = blocks[best].p;
    return 0;
  }
  if (n_blocks == cap_blocks) {
    int nc = cap_blocks ? cap_blocks * 2 : 256;
    cu_block *nb = (cu_block *)realloc(blocks, (size_t)nc * sizeof *nb);
    if (!nb) return amd_fail(st, "out of memory");
    blocks = nb, cap_blocks = nc;
  }
  void *d;
  if (device_malloc(&d, sz, st)) return -1;
  blocks[n_blocks++] = cu_block{d, sz, 1};
  *p = d;
  return 0;
}

void amd_cu_free(void *p) {
  if (!p) return;
  for (int i = n_blocks - 1; i >= 0; i--)
    if (blocks[i].p == p) {
      blocks[i].used = 0;
      return;
    }
}

static struct {
  void *p;
  size_t size;
} workspaces[AMD_CU_WS_COUNT];

int amd_cu_workspace(int slot, size_t bytes, void **p, amd_status *st) {
  if (workspaces[slot].size < bytes) {
    if (workspaces[slot].p) { /* the old one may still be in use by queued kernels */
      AMD_CUDA_CHECK(cudaStreamSynchronize(amd_cu.stream), st);
      cudaFree(workspaces[slot].p);
      held_bytes -= workspaces[slot].size;
      workspaces[slot].p = NULL, workspaces[slot].size = 0;
    }
    size_t sz = round_size(bytes);
    void *d;
    if (device_malloc(&d, sz, st)) return -1;
    workspaces[slot].p = d, workspaces[slot].size = sz;
  }
  *p = workspaces[slot].p;
  return 0;
}

extern "C" void amd_cuda_alloc_stats(size_t *held, size_t *peak, long *mallocs) {
  *held = held_bytes;
  *peak = peak_bytes;
  *mallocs = n_mallocs;
}

/* ================================================================ the table's memory functions */

/* Device memory for a float tensor (other dtypes: host memory, zeroed),
 * filled with the byte fill (-1: left as it is). */
static int alloc_filled(amd_tensor *t, int fill, amd_status *st) {
  if (t->dtype != AMD_FLOAT) return amd_tensor_alloc(t, st);
  for (int i = 0; i < t->rank; i++)
    if (t->dims[i] < 0) return amd_fail(st, "negative dimension %lld", (long long)t->dims[i]);
  size_t bytes = amd_tensor_nbytes(t);
  if ((double)bytes > (double)AMD_MAX_TENSOR_BYTES)
    return amd_fail(st, "tensor too large (over %lld bytes)", (long long)AMD_MAX_TENSOR_BYTES);
  if (amd_cu_malloc(&t->data, bytes, st)) return -1;
  t->device = AMD_DEVICE_CUDA;
  if (bytes && fill >= 0) AMD_CUDA_CHECK(cudaMemsetAsync(t->data, fill, bytes, amd_cu.stream), st);
  return 0;
}

static int cu_alloc(amd_tensor *t, amd_status *st) { return alloc_filled(t, 0, st); }

/* Outputs of native nodes are written in full by their forward. Tests set
 * AMD_CUDA_POISON_OUTPUTS=1 to fill them with NaN instead, so that an
 * element a kernel leaves unwritten shows. */
static int cu_alloc_out(amd_tensor *t, amd_status *st) {
  return alloc_filled(t, amd_cu.poison_outputs ? 0xFF : -1, st);
}

static void cu_free(amd_tensor *t) {
  if (t->device == AMD_DEVICE_CPU)
    amd_tensor_free(t);
  else
    amd_cu_free(t->data);
  t->data = NULL;
}

static int cu_mem_alloc(void **p, size_t bytes, amd_status *st) {
  if (amd_cu_malloc(p, bytes, st)) return -1;
  if (bytes) AMD_CUDA_CHECK(cudaMemsetAsync(*p, 0, bytes, amd_cu.stream), st);
  return 0;
}

static int cu_to_host(void *dst, const void *src, size_t bytes, amd_status *st) {
  if (!bytes) return 0;
  if (amd_cu.capturing) return amd_fail(st, "a copy to the host in a captured step");
  AMD_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, amd_cu.stream), st);
  AMD_CUDA_CHECK(cudaStreamSynchronize(amd_cu.stream), st);
  return 0;
}

/* Uploads go through a ring of pinned staging slots, so that a training
 * step's batch and labels queue without waiting for the stream: the caller's
 * buffer is copied into a slot at once (it may be reused on return), and a
 * slot is written again only after the event of its last copy. An upload
 * larger than a slot goes direct and waits. */
enum { STAGE_SLOTS = 4 };
static const size_t stage_slot_bytes = (size_t)8 << 20;
static struct {
  char *p; /* STAGE_SLOTS slots, or NULL before the first upload */
  cudaEvent_t done[STAGE_SLOTS];
  int next;
} staging;

static int staging_open(amd_status *st) {
  AMD_CUDA_CHECK(cudaHostAlloc((void **)&staging.p, STAGE_SLOTS * stage_slot_bytes, cudaHostAllocDefault),
                 st);
  for (int i = 0; i < STAGE_SLOTS; i++) {
    cudaError_t e = cudaEventCreateWithFlags(&staging.done[i], cudaEventDisableTiming);
    if (e != cudaSuccess) {
      while (i-- > 0) cudaEventDestroy(staging.done[i]);
      cudaFreeHost(staging.p);
      staging.p = NULL;
      return amd_fail(st, "CUDA error %s creating the upload events", cudaGetErrorName(e));
    }
  }
  staging.next = 0;
  return 0;
}

static void staging_close(void) {
  if (!staging.p) return;
  for (int i = 0; i < STAGE_SLOTS; i++) cudaEventDestroy(staging.done[i]);
  cudaFreeHost(staging.p);
  memset(&staging, 0, sizeof staging);
}

static int cu_from_host(void *dst, const void *src, size_t bytes, amd_status *st) {
  if (!bytes) return 0;
  /* a captured copy would read the staging buffer when replayed, not src */
  if (amd_cu.capturing) return amd_fail(st, "a copy from the host in a captured step");
  if (bytes > stage_slot_bytes) {
    AMD_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, amd_cu.stream), st);
    /* the host buffer may be reused at once (the caller's batch): wait for it */
    AMD_CUDA_CHECK(cudaStreamSynchronize(amd_cu.stream), st);
    return 0;
  }
  if (!staging.p && staging_open(st)) return -1;
  const int k = staging.next;
  staging.next = (k + 1) % STAGE_SLOTS;
  char *slot = staging.p + (size_t)k * stage_slot_bytes;
  AMD_CUDA_CHECK(cudaEventSynchronize(staging.done[k]), st); /* its previous copy has been read */
  memcpy(slot, src, bytes);
  AMD_CUDA_CHECK(cudaMemcpyAsync(dst, slot, bytes, cudaMemcpyHostToDevice, amd_cu.stream), st);
  AMD_CUDA_CHECK(cudaEventRecord(staging.done[k], amd_cu.stream), st);
  return 0;
}

static int cu_copy(void *dst, const void *src, size_t bytes, amd_status *st) {
  if (bytes) AMD_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, amd_cu.stream), st);
  return 0;
}

static int cu_zero(void *p, size_t bytes, amd_status *st) {
  if (bytes) AMD_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, amd_cu.stream), st);
  return 0;
}

/* ================================================================ nodes */

static int cu_native(const amd_node *n, const amd_tensor *const *in) { return amd_cu_node_ok(n, in); }

static unsigned cu_bwd_overwrite(const amd_node *n, const amd_tensor *const *in) {
  const amd_cu_op *e = amd_cu_node_ok(n, in) ? amd_cu_find_op(n) : NULL;
  return e ? e->bwd_overwrite : 0;
}

static unsigned cu_host_inputs(const amd_node *n) {
  const amd_cu_op *e = amd_cu_find_op(n);
  return e ? e->host_inputs : 0;
}

static int cu_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                      amd_status *st) {
  const amd_cu_op *e = amd_cu_find_op(n);
  if (!e) return amd_fail(st, "op %s has no CUDA kernel", n->op->name);
  return e->forward(n, ctx, in, out, st);
}

static int cu_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                       const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  const amd_cu_op *e = amd_cu_find_op(n);
  if (!e) return amd_fail(st, "op %s has no CUDA kernel", n->op->name);
  return e->backward(n, ctx, in, out, dout, din, st);
}

/* ================================================================ training primitives */

/* One thread per sample: loss.c's algorithm (double sums); per sample the
 * loss, the argmax and the number of logits strictly above the label's.
 * guard (may be NULL): cleared where a loss is not finite. */
__global__ void k_xent(const float *z, const int64_t *labels, int64_t n, int64_t c, float smoothing,
                       float scale, float *dz, double *loss, int64_t *arg_out, int64_t *above_out,
                       int *guard) {
  AMD_CU_LOOP(i, n) {
    const float *zr = z + i * c;
    int64_t y = labels[i];
    double mx = zr[0];
    int64_t arg = 0;
    for (int64_t j = 1; j < c; j++)
      if (zr[j] > mx || isnan(zr[j])) mx = zr[j], arg = j;
    double sum = 0, sum_logp = 0;
    for (int64_t j = 0; j < c; j++) sum += exp((double)zr[j] - mx);
    double log_sum = log(sum);
    for (int64_t j = 0; j < c; j++) sum_logp += (double)zr[j] - mx - log_sum;
    double logp_y = (double)zr[y] - mx - log_sum;
    loss[i] = -(1.0 - smoothing) * logp_y - smoothing / (double)c * sum_logp;
    if (guard && !isfinite(loss[i])) *guard = 0;
    if (dz)
      for (int64_t j = 0; j < c; j++) {
        double p = exp((double)zr[j] - mx - log_sum);
        double q = (j == y ? 1.0 - smoothing : 0.0) + smoothing / (double)c;
        float d = (float)((p - q) / (double)n);
        dz[i * c + j] = scale != 1.0f ? d * scale : d;
      }
    int64_t above = 0;
    for (int64_t j = 0; j < c; j++) above += zr[j] > zr[y];
    arg_out[i] = arg;
    above_out[i] = above;
  }
}

/* Per-sample results of k_xent, as they lie in device memory after the
 * labels and as they are copied to the host: argmax, rank, loss. */
static size_t xent_result_bytes(int64_t n) { return (size_t)n * (2 * sizeof(int64_t) + sizeof(double)); }

/* Uploads the labels and launches k_xent into a new device buffer [labels |
 * results] (*buf, the caller frees it). */
static int xent_launch(const float *z, const int64_t *labels, int64_t n, int64_t c, float smoothing,
                       float scale, float *dz, void **buf, amd_status *st) {
  if (amd_cu_malloc(buf, (size_t)n * sizeof(int64_t) + xent_result_bytes(n), st)) return -1;
  int64_t *dlab = (int64_t *)*buf, *darg = dlab + n, *dabove = darg + n;
  double *dloss = (double *)(dabove + n);
  if (cu_from_host(dlab, labels, (size_t)n * sizeof(int64_t), st)) return -1;
  k_xent<<<amd_cu_blocks(n, 128), 128, 0, amd_cu.stream>>>(z, dlab, n, c, smoothing, scale, dz, dloss, darg,
                                                           dabove, NULL);
  AMD_CUDA_CHECK_LAUNCH("k_xent", st);
  return 0;
}

/* The host's part of softmax_xent from the results copied back: the sums in
 * sample order (loss.c's), the statistics and the predictions. */
static double xent_sums(const char *results, const int64_t *labels, int64_t n, int64_t *pred,
                        amd_batch_stats *bs) {
  const int64_t *harg = (const int64_t *)results, *habove = harg + n;
  const double *hloss = (const double *)(habove + n);
  double total = 0;
  for (int64_t i = 0; i < n; i++) {
    total += hloss[i];
    if (bs) {
      bs->top1 += harg[i] == labels[i];
      bs->top5 += habove[i] < 5;
    }
    if (pred) pred[i] = harg[i];
  }
  if (bs) {
    bs->loss_sum += total;
    bs->n += n;
  }
  return total / (double)n;
}

static int cu_softmax_xent(const float *z, const int64_t *labels, int64_t n, int64_t c, float smoothing,
                           float scale, float *dz, int64_t *pred, amd_batch_stats *bs, double *mean,
                           amd_status *st) {
  if (n <= 0) {
    *mean = 0;
    return 0;
  }
  void *buf = NULL;
  char *host = (char *)malloc(xent_result_bytes(n));
  int rc =
      !host ? amd_fail(st, "out of memory") : xent_launch(z, labels, n, c, smoothing, scale, dz, &buf, st);
  if (rc == 0) rc = cu_to_host(host, (int64_t *)buf + n, xent_result_bytes(n), st);
  if (rc == 0) *mean = xent_sums(host, labels, n, pred, bs);
  free(host);
  amd_cu_free(buf);
  return rc;
}

/* Training steps that do not wait (backend.h, step_begin ... step_collect):
 * per slot a pinned host record that the step's results and the guard are
 * copied into, the labels it is scored against, and the event after its last
 * copy; on the device the labels and per-sample results of the step being
 * run, at fixed addresses (a CUDA graph of the step reads and writes them). */
static struct {
  int *guard;      /* device: 1 until a deferred step's loss or gradient is not finite */
  int64_t *dlab;   /* device: cap labels, then cap x (argmax, rank, loss) results */
  char *pinned;    /* AMD_STEP_SLOTS records of slot_bytes: results, then the guard */
  int64_t *labels; /* AMD_STEP_SLOTS x cap */
  size_t slot_bytes;
  int64_t cap; /* samples per slot */
  int64_t n[AMD_STEP_SLOTS];
  cudaEvent_t done[AMD_STEP_SLOTS];
  int events;
} steps;

static void steps_close(void) {
  cudaFree(steps.guard);
  cudaFree(steps.dlab);
  cudaFreeHost(steps.pinned);
  free(steps.labels);
  for (int i = 0; i < steps.events; i++) cudaEventDestroy(steps.done[i]);
  memset(&steps, 0, sizeof steps);
}

__global__ void k_set_guard(int *guard) { *guard = 1; }

static int cu_guard_reset(amd_status *st) {
  if (!steps.guard) AMD_CUDA_CHECK(cudaMalloc((void **)&steps.guard, sizeof(int)), st);
  for (; steps.events < AMD_STEP_SLOTS; steps.events++)
    AMD_CUDA_CHECK(cudaEventCreateWithFlags(&steps.done[steps.events], cudaEventDisableTiming), st);
  k_set_guard<<<1, 1, 0, amd_cu.stream>>>(steps.guard);
  AMD_CUDA_CHECK_LAUNCH("k_set_guard", st);
  return 0;
}

/* Room for n samples per slot. Growing waits for the steps in flight and
 * moves their records (a slot's record does not depend on the capacity). */
static int steps_reserve(int64_t n, amd_status *st) {
  if (n <= steps.cap) return 0;
  const size_t bytes = (xent_result_bytes(n) + sizeof(int) + 15) & ~(size_t)15;
  int64_t *labels = (int64_t *)malloc((size_t)AMD_STEP_SLOTS * (size_t)n * sizeof(int64_t)), *dlab = NULL;
  char *pinned = NULL;
  if (!labels) return amd_fail(st, "out of memory");
  cudaError_t e = cudaStreamSynchronize(amd_cu.stream);
  if (e == cudaSuccess) e = cudaHostAlloc((void **)&pinned, AMD_STEP_SLOTS * bytes, cudaHostAllocDefault);
  if (e == cudaSuccess) e = cudaMalloc((void **)&dlab, (size_t)n * sizeof(int64_t) + xent_result_bytes(n));
  if (e != cudaSuccess) {
    free(labels);
    cudaFreeHost(pinned);
    return amd_fail(st, "CUDA error %s making room for the loss of %lld samples", cudaGetErrorName(e),
                    (long long)n);
  }
  for (int i = 0; steps.cap && i < AMD_STEP_SLOTS; i++) {
    memcpy(pinned + (size_t)i * bytes, steps.pinned + (size_t)i * steps.slot_bytes, steps.slot_bytes);
    memcpy(labels + (size_t)i * n, steps.labels + (size_t)i * steps.cap, (size_t)steps.cap * sizeof(int64_t));
  }
  cudaFreeHost(steps.pinned);
  cudaFree(steps.dlab);
  free(steps.labels);
  steps.pinned = pinned;
  steps.labels = labels;
  steps.dlab = dlab;
  steps.slot_bytes = bytes;
  steps.cap = n;
  return 0;
}

static int cu_step_begin(const int64_t *labels, int64_t n, int slot, amd_status *st) {
  if (!steps.guard || slot < 0 || slot >= AMD_STEP_SLOTS)
    return amd_fail(st, "step_begin: no guard_reset before, or slot %d out of range", slot);
  if (steps_reserve(n, st)) return -1;
  /* the slot's previous step has been collected: its record is free */
  memcpy(steps.labels + (size_t)slot * steps.cap, labels, (size_t)n * sizeof(int64_t));
  steps.n[slot] = n;
  return cu_from_host(steps.dlab, labels, (size_t)n * sizeof(int64_t), st);
}

static int cu_xent_defer(const float *z, int64_t n, int64_t c, float smoothing, float *dz, amd_status *st) {
  if (n <= 0) return 0;
  if (n > steps.cap)
    return amd_fail(st, "xent_defer: %lld samples, step_begin made room for %lld", (long long)n,
                    (long long)steps.cap);
  int64_t *dlab = steps.dlab, *darg = dlab + steps.cap, *dabove = darg + n;
  k_xent<<<amd_cu_blocks(n, 128), 128, 0, amd_cu.stream>>>(z, dlab, n, c, smoothing, 1.0f, dz,
                                                           (double *)(dabove + n), darg, dabove, steps.guard);
  AMD_CUDA_CHECK_LAUNCH("k_xent", st);
  return 0;
}

__global__ void k_finite(const float *p, int64_t n, int *ok) {
  AMD_CU_LOOP(i, n) if (!isfinite(p[i])) *ok = 0;
}

static int cu_step_end(const float *g, int64_t n, amd_status *st) {
  if (n <= 0) return 0;
  k_finite<<<amd_cu_blocks(n), 256, 0, amd_cu.stream>>>(g, n, steps.guard);
  AMD_CUDA_CHECK_LAUNCH("k_finite", st);
  return 0;
}

static int cu_step_finish(int slot, amd_status *st) {
  char *rec = steps.pinned + (size_t)slot * steps.slot_bytes;
  const size_t res = xent_result_bytes(steps.n[slot]);
  if (res)
    AMD_CUDA_CHECK(cudaMemcpyAsync(rec, steps.dlab + steps.cap, res, cudaMemcpyDeviceToHost, amd_cu.stream),
                   st);
  AMD_CUDA_CHECK(cudaMemcpyAsync(rec + res, steps.guard, sizeof(int), cudaMemcpyDeviceToHost, amd_cu.stream),
                 st);
  AMD_CUDA_CHECK(cudaEventRecord(steps.done[slot], amd_cu.stream), st);
  return 0;
}

static int cu_step_collect(int slot, amd_batch_stats *bs, double *mean, int *ok, amd_status *st) {
  AMD_CUDA_CHECK(cudaEventSynchronize(steps.done[slot]), st);
  const char *rec = steps.pinned + (size_t)slot * steps.slot_bytes;
  const int64_t n = steps.n[slot];
  *mean = n > 0 ? xent_sums(rec, steps.labels + (size_t)slot * steps.cap, n, NULL, bs) : 0;
  memcpy(ok, rec + xent_result_bytes(n), sizeof(int));
  return 0;
}

static int cu_all_finite(const float *p, int64_t n, int *ok, amd_status *st) {
  void *flag = NULL;
  if (amd_cu_malloc(&flag, sizeof(int), st)) return -1;
  int one = 1, rc = 0;
  if (cudaMemcpyAsync(flag, &one, sizeof one, cudaMemcpyHostToDevice, amd_cu.stream) != cudaSuccess)
    rc = amd_fail(st, "CUDA copy failed");
  if (rc == 0 && n > 0) {
    k_finite<<<amd_cu_blocks(n), 256, 0, amd_cu.stream>>>(p, n, (int *)flag);
    if (cudaGetLastError() != cudaSuccess) rc = amd_fail(st, "CUDA error launching k_finite");
  }
  if (rc == 0) rc = cu_to_host(ok, flag, sizeof(int), st);
  amd_cu_free(flag);
  return rc;
}

__global__ void k_scale(float *p, int64_t n, float f) { AMD_CU_LOOP(i, n) p[i] *= f; }

static int cu_scale(float *p, int64_t n, float f, amd_status *st) {
  if (n <= 0) return 0;
  k_scale<<<amd_cu_blocks(n), 256, 0, amd_cu.stream>>>(p, n, f);
  AMD_CUDA_CHECK_LAUNCH("k_scale", st);
  return 0;
}

__global__ void k_add(float *y, const float *x, int64_t n) { AMD_CU_LOOP(i, n) y[i] += x[i]; }

static int cu_add(float *y, const float *x, int64_t n, amd_status *st) {
  if (n <= 0) return 0;
  k_add<<<amd_cu_blocks(n), 256, 0, amd_cu.stream>>>(y, x, n);
  AMD_CUDA_CHECK_LAUNCH("k_add", st);
  return 0;
}

/* optim.c's fma(): a fused multiply-add where the CPU build has FMA, else
 * (float)((double)a * b + c) (the product is exact in double). */
__device__ __forceinline__ float opt_fma(int fused, float a, float b, float c) {
  return fused ? fmaf(a, b, c) : (float)__dadd_rn(__dmul_rn((double)a, (double)b), (double)c);
}

/* The fused optimizer: optim.c's loops (SGD / Adam / AdamW / RMSprop with
 * their options) in one kernel; the flags are uniform across threads. */
__global__ void k_optim(int kind, int wd, int mom, int nesterov, int fused, amd_optim_coeffs c, float *p,
                        const float *g, float *s1, float *s2, int64_t n, const int *guard) {
  if (guard && !*guard) return; /* a deferred step's loss or gradient was not finite */
  AMD_CU_LOOP(i, n) {
    float d = g[i];
    switch (kind) {
    case AMD_OPT_SGD: {
      if (wd) d = opt_fma(fused, c.weight_decay, p[i], d);
      if (mom) {
        const float b = __fadd_rn(__fmul_rn(s1[i], c.momentum), d);
        s1[i] = b;
        d = nesterov ? opt_fma(fused, c.momentum, b, d) : b;
      }
      p[i] = opt_fma(fused, c.neg_lr, d, p[i]);
      break;
    }
    case AMD_OPT_ADAM:
    case AMD_OPT_ADAMW: {
      float x = p[i];
      if (kind == AMD_OPT_ADAMW) x = __fmul_rn(x, c.decay);
      if (wd) d = opt_fma(fused, c.weight_decay, x, d);
      const float m = opt_fma(fused, c.one_minus_beta1, d, __fmul_rn(s1[i], c.beta1));
      const float v = opt_fma(fused, __fmul_rn(c.one_minus_beta2, d), d, __fmul_rn(s2[i], c.beta2));
      s1[i] = m;
      s2[i] = v;
      const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(v), c.bc2_sqrt), c.eps);
      p[i] = __fadd_rn(x, __fdiv_rn(__fmul_rn(c.neg_step_size, m), denom));
      break;
    }
    case AMD_OPT_RMSPROP: {
      if (wd) d = opt_fma(fused, c.weight_decay, p[i], d);
      const float sq = opt_fma(fused, __fmul_rn(c.one_minus_alpha, d), d, __fmul_rn(s1[i], c.alpha));
      s1[i] = sq;
      const float avg = __fadd_rn(__fsqrt_rn(sq), c.eps);
      if (mom) {
        const float b = __fadd_rn(__fmul_rn(s2[i], c.momentum), __fdiv_rn(d, avg));
        s2[i] = b;
        p[i] = opt_fma(fused, c.neg_lr, b, p[i]);
      } else {
        p[i] = __fadd_rn(p[i], __fdiv_rn(__fmul_rn(c.neg_lr, d), avg));
      }
      break;
    }
    default:
      /* cu_optim_step refuses any other kind before launch: a launch that
       * gets here (a corrupt graph node) fails loudly instead of updating */
      __trap();
    }
  }
}

static int cu_optim_step(const amd_optim *o, double lr, int64_t t, float *p, const float *g, float *state,
                         int64_t n, int guarded, amd_status *st) {
  if (!amd_optim_known(o)) return amd_fail(st, "optim_step: unknown optimizer kind %d (no step taken)", (int)o->kind);
  if (n <= 0) return 0;
  if (guarded && !steps.guard) return amd_fail(st, "optim_step: guarded without guard_reset");
  amd_optim_coeffs c;
  amd_optim_get_coeffs(o, lr, t, &c);
  int wd = o->weight_decay != 0, mom = 0, nesterov = 0;
  float *s1 = state, *s2 = state ? state + n : NULL;
  switch (o->kind) {
  case AMD_OPT_SGD:
    mom = o->momentum != 0;
    nesterov = mom && o->nesterov;
    break;
  case AMD_OPT_ADAMW:
    wd = 0; /* decoupled: in c.decay */
    break;
  case AMD_OPT_RMSPROP:
    mom = o->momentum > 0;
    break;
  default: /* refused above; k_optim has no fallback either */
    return amd_fail(st, "optim_step: unknown optimizer kind %d (no step taken)", (int)o->kind);
  }
  if (amd_optim_state_blocks(o) > 0 && !state) return amd_fail(st, "optimizer state missing");
  k_optim<<<amd_cu_blocks(n), 256, 0, amd_cu.stream>>>((int)o->kind, wd, mom, nesterov, amd_optim_fused_fma,
                                                       c, p, g, s1, s2, n, guarded ? steps.guard : NULL);
  AMD_CUDA_CHECK_LAUNCH("k_optim", st);
  return 0;
}

/* ================================================================ CUDA graphs of a training step */

/* A captured step and, to replay it with another learning rate and step
 * number, its k_optim node with the node's arguments (the coefficients are
 * kernel arguments: they are replaced before each launch). */
struct cu_graph {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  cudaGraphNode_t optim; /* NULL: the step has no optimizer node */
  struct {
    int kind, wd, mom, nesterov, fused;
    amd_optim_coeffs c;
    float *p;
    const float *g;
    float *s1, *s2;
    int64_t n;
    const int *guard;
  } args;
  cudaKernelNodeParams kp;
};

static void cu_graph_free(void *h) {
  cu_graph *g = (cu_graph *)h;
  if (!g) return;
  if (g->exec) cudaGraphExecDestroy(g->exec);
  if (g->graph) cudaGraphDestroy(g->graph);
  free(g);
}

static int cu_graph_begin(amd_status *st) {
  /* thread-local: a call that is not allowed while capturing (a cudaMalloc,
   * a synchronising copy) fails and ends the capture, instead of running */
  AMD_CUDA_CHECK(cudaStreamBeginCapture(amd_cu.stream, cudaStreamCaptureModeThreadLocal), st);
  amd_cu.capturing = 1;
  return 0;
}

static int cu_graph_end(void **out, amd_status *st) {
  *out = NULL;
  amd_cu.capturing = 0;
  cu_graph *g = (cu_graph *)calloc(1, sizeof *g);
  cudaError_t e = cudaStreamEndCapture(amd_cu.stream, g ? &g->graph : NULL);
  if (!g) return amd_fail(st, "out of memory");
  if (e == cudaSuccess) e = cudaGraphInstantiate(&g->exec, g->graph, 0);
  size_t nn = 0;
  if (e == cudaSuccess) e = cudaGraphGetNodes(g->graph, NULL, &nn);
  cudaGraphNode_t *nodes = (cudaGraphNode_t *)calloc(nn ? nn : 1, sizeof *nodes);
  if (e == cudaSuccess && nodes) e = cudaGraphGetNodes(g->graph, nodes, &nn);
  for (size_t i = 0; e == cudaSuccess && nodes && i < nn; i++) {
    cudaGraphNodeType type;
    cudaKernelNodeParams kp;
    /* cuBLAS's kernels are driver-API nodes, whose runtime parameters cannot
     * be read: not ours (and the error must not stay as the last one) */
    if (cudaGraphNodeGetType(nodes[i], &type) != cudaSuccess || type != cudaGraphNodeTypeKernel ||
        cudaGraphKernelNodeGetParams(nodes[i], &kp) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    if (kp.func != (void *)k_optim) continue;
    if (g->optim) {
      e = cudaErrorNotSupported; /* two optimizer steps in one step: not ours */
      break;
    }
    g->optim = nodes[i];
    g->kp = kp;
    void **a = kp.kernelParams;
    memcpy(&g->args.kind, a[0], sizeof(int));
    memcpy(&g->args.wd, a[1], sizeof(int));
    memcpy(&g->args.mom, a[2], sizeof(int));
    memcpy(&g->args.nesterov, a[3], sizeof(int));
    memcpy(&g->args.fused, a[4], sizeof(int));
    memcpy(&g->args.c, a[5], sizeof g->args.c);
    memcpy(&g->args.p, a[6], sizeof g->args.p);
    memcpy(&g->args.g, a[7], sizeof g->args.g);
    memcpy(&g->args.s1, a[8], sizeof g->args.s1);
    memcpy(&g->args.s2, a[9], sizeof g->args.s2);
    memcpy(&g->args.n, a[10], sizeof g->args.n);
    memcpy(&g->args.guard, a[11], sizeof g->args.guard);
  }
  free(nodes);
  if (e != cudaSuccess) {
    cudaGetLastError(); /* the failed capture's error is not sticky: clear it */
    cu_graph_free(g);
    return amd_fail(st, "%s", cudaGetErrorString(e));
  }
  *out = g;
  return 0;
}

static int cu_graph_launch(void *h, const amd_optim *o, double lr, int64_t t, amd_status *st) {
  cu_graph *g = (cu_graph *)h;
  if (g->optim && (!amd_optim_known(o) || (int)o->kind != g->args.kind))
    return amd_fail(st, "graph_launch: optimizer kind %d, the graph was captured with kind %d", (int)o->kind,
                    g->args.kind);
  if (g->optim) {
    amd_optim_get_coeffs(o, lr, t, &g->args.c);
    void *a[12] = {&g->args.kind,  &g->args.wd, &g->args.mom, &g->args.nesterov,
                   &g->args.fused, &g->args.c,  &g->args.p,   (void *)&g->args.g,
                   &g->args.s1,    &g->args.s2, &g->args.n,   (void *)&g->args.guard};
    cudaKernelNodeParams kp = g->kp;
    kp.kernelParams = a;
    kp.extra = NULL;
    AMD_CUDA_CHECK(cudaGraphExecKernelNodeSetParams(g->exec, g->optim, &kp), st);
  }
  AMD_CUDA_CHECK(cudaGraphLaunch(g->exec, amd_cu.stream), st);
  return 0;
}

/* ================================================================ batches on the device */

/* One thread per element of x: dataset.c's fill_sample for the planned
 * sample (the same fp32 operations, unfused). */
__global__ void k_data_batch(const uint8_t *u8, const float *f32, int64_t C, int64_t H, int64_t W,
                             const float *norm, const amd_batch_sample *plan, int64_t n, float *x) {
  const int64_t HW = H * W, CHW = C * HW;
  AMD_CU_LOOP(e, n * CHW) {
    const int64_t b = e / CHW, r = e % CHW, c = r / HW, i = (r % HW) / W, j = r % W;
    const amd_batch_sample p = plan[b];
    const float *nc = norm + 4 * c; /* scale, shift, inv, mean */
    float v;
    if (i >= p.cut_y0 && i < p.cut_y1 && j >= p.cut_x0 && j < p.cut_x1) {
      v = 0.0f;
    } else {
      const int64_t si = i + p.dy, sj = (p.mirror ? W - 1 - j : j) + p.dx;
      if (si < 0 || si >= H || sj < 0 || sj >= W)
        v = nc[1];
      else if (u8)
        v = __fadd_rn(__fmul_rn((float)u8[p.src * CHW + c * HW + si * W + sj], nc[0]), nc[1]);
      else
        v = __fmul_rn(__fsub_rn(f32[p.src * CHW + c * HW + si * W + sj], nc[3]), nc[2]);
    }
    x[e] = v;
  }
}

static int cu_data_batch(const void *pixels, int is_u8, int64_t c, int64_t h, int64_t w, const float *norm,
                         const amd_batch_sample *plan, int64_t n, float *x, amd_status *st) {
  if (n <= 0) return 0;
  /* the plan and the channel constants in one upload (queued: pinned staging) */
  const size_t plan_bytes = (size_t)n * sizeof *plan, bytes = plan_bytes + (size_t)c * 4 * sizeof(float);
  char *host = (char *)malloc(bytes);
  if (!host) return amd_fail(st, "out of memory");
  memcpy(host, plan, plan_bytes);
  memcpy(host + plan_bytes, norm, bytes - plan_bytes);
  void *dev = NULL;
  int rc = amd_cu_malloc(&dev, bytes, st);
  if (rc == 0) rc = cu_from_host(dev, host, bytes, st);
  free(host);
  if (rc == 0) {
    const amd_batch_sample *dplan = (const amd_batch_sample *)dev;
    const float *dnorm = (const float *)((const char *)dev + plan_bytes);
    k_data_batch<<<amd_cu_blocks(n * c * h * w), 256, 0, amd_cu.stream>>>(
        is_u8 ? (const uint8_t *)pixels : NULL, is_u8 ? NULL : (const float *)pixels, c, h, w, dnorm, dplan,
        n, x);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) rc = amd_fail(st, "CUDA error %s launching k_data_batch", cudaGetErrorName(e));
  }
  amd_cu_free(dev); /* later users of the block are queued after the kernel */
  return rc;
}

/* ================================================================ the table, device selection */

extern "C" const amd_backend amd_backend_cuda = {
    /* name */ cu_name,
    /* device */ AMD_DEVICE_CUDA,
    /* native */ cu_native,
    /* host_inputs */ cu_host_inputs,
    /* alloc */ cu_alloc,
    /* alloc_out */ cu_alloc_out,
    /* free */ cu_free,
    /* forward */ cu_forward,
    /* backward */ cu_backward,
    /* bwd_overwrite */ cu_bwd_overwrite,
    /* mem_alloc */ cu_mem_alloc,
    /* mem_free */ amd_cu_free,
    /* mem_to_host */ cu_to_host,
    /* mem_from_host */ cu_from_host,
    /* mem_copy */ cu_copy,
    /* mem_zero */ cu_zero,
    /* softmax_xent */ cu_softmax_xent,
    /* all_finite */ cu_all_finite,
    /* scale */ cu_scale,
    /* add */ cu_add,
    /* optim_step */ cu_optim_step,
    /* step_begin */ cu_step_begin,
    /* xent_defer */ cu_xent_defer,
    /* step_end */ cu_step_end,
    /* step_finish */ cu_step_finish,
    /* step_collect */ cu_step_collect,
    /* guard_reset */ cu_guard_reset,
    /* graph_begin */ cu_graph_begin,
    /* graph_end */ cu_graph_end,
    /* graph_launch */ cu_graph_launch,
    /* graph_free */ cu_graph_free,
    /* data_batch */ cu_data_batch,
};

extern "C" int amd_cuda_device_count(char *why, size_t n) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();
    snprintf(why, n, "%s", cudaGetErrorString(e));
    return 0;
  }
  if (count == 0) snprintf(why, n, "the driver reports no device");
  return count;
}

/* --profile's clock on the GPU: an event recorded on the stream and waited
 * for, timed against a reference event (re-based every second, so that the
 * float milliseconds of cudaEventElapsedTime keep their resolution). A reading
 * is the GPU's time when everything queued before it has run. */
static struct {
  cudaEvent_t ref, now;
  double base; /* seconds up to ref */
  int ready;
} prof_clock;

static double cu_prof_clock(void) {
  if (!prof_clock.ready) {
    if (cudaEventCreate(&prof_clock.ref) != cudaSuccess || cudaEventCreate(&prof_clock.now) != cudaSuccess ||
        cudaEventRecord(prof_clock.ref, amd_cu.stream) != cudaSuccess)
      return prof_clock.base;
    prof_clock.ready = 1;
  }
  float ms = 0;
  if (cudaEventRecord(prof_clock.now, amd_cu.stream) != cudaSuccess ||
      cudaEventSynchronize(prof_clock.now) != cudaSuccess ||
      cudaEventElapsedTime(&ms, prof_clock.ref, prof_clock.now) != cudaSuccess)
    return prof_clock.base;
  double t = prof_clock.base + ms / 1000.0;
  if (ms > 1000.0f) { /* the reading becomes the new reference */
    cudaEvent_t e = prof_clock.ref;
    prof_clock.ref = prof_clock.now;
    prof_clock.now = e;
    prof_clock.base = t;
  }
  return t;
}

extern "C" int amd_cuda_backend_open(int index, int debug_sync, const amd_backend **be, amd_status *st) {
  amd_cuda_debug_sync = debug_sync;
  if (amd_cu.open) {
    if (amd_cu.device != index)
      return amd_fail(st, "the CUDA backend is open on device %d already", amd_cu.device);
    *be = &amd_backend_cuda;
    return 0;
  }
  AMD_CUDA_CHECK(cudaSetDevice(index), st);
  AMD_CUDA_CHECK(cudaStreamCreateWithFlags(&amd_cu.stream, cudaStreamNonBlocking), st);
  if (amd_cuda_gemm_create(&amd_cu.gemm, amd_cu.stream, st)) return -1;
  cudaDeviceProp prop;
  AMD_CUDA_CHECK(cudaGetDeviceProperties(&prop, index), st);
  snprintf(cu_name, sizeof cu_name, "cuda:%d (%.100s)", index, prop.name);
  amd_cu.device = index;
  amd_cu.open = 1;
  const char *poison = getenv("AMD_CUDA_POISON_OUTPUTS");
  amd_cu.poison_outputs = poison && !strcmp(poison, "1");
  amd_prof_set_device_clock(cu_prof_clock);
  *be = &amd_backend_cuda;
  return 0;
}

extern "C" void amd_cuda_backend_close(void) {
  if (!amd_cu.open) return;
  amd_prof_set_device_clock(NULL);
  if (prof_clock.ready) {
    cudaEventDestroy(prof_clock.ref);
    cudaEventDestroy(prof_clock.now);
    prof_clock.ready = 0;
  }
  cudaStreamSynchronize(amd_cu.stream);
  staging_close();
  steps_close();
  for (int i = 0; i < n_blocks; i++) cudaFree(blocks[i].p);
  for (int i = 0; i < AMD_CU_WS_COUNT; i++) cudaFree(workspaces[i].p);
  memset(workspaces, 0, sizeof workspaces);
  free(blocks);
  blocks = NULL;
  n_blocks = cap_blocks = 0;
  held_bytes = peak_bytes = 0;
  amd_cuda_gemm_destroy(amd_cu.gemm);
  cudaStreamDestroy(amd_cu.stream);
  memset(&amd_cu, 0, sizeof amd_cu);
}

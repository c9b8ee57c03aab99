/* The CUDA training kernels (src/exec/train_kernels.h): softmax
 * cross-entropy, finite check, scaling, addition, the fused optimizer and
 * batch assembly on the device, each the CPU reference's arithmetic
 * (kernels_cpu.c, loss.c, optim.c, dataset.c of the host code); and the
 * device side of the training steps that do not wait for their loss (the
 * CUDA stream's step_begin ... guard_reset, backend.h), which share the step
 * guard with the optimizer. Moved out of backend_cuda.cu unchanged: every
 * kernel's arithmetic and launch configuration are those it had there. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/core/xent_row.h"
#include "train_cuda.h"

/* ================================================================ softmax cross-entropy */

/* One thread per sample: amd_xent_row (core/xent_row.h), the CPU's own code; per sample the
 * loss, the argmax and the number of logits strictly above the label's.
 * guard (may be NULL): cleared where a loss is not finite. */
__global__ void k_xent(const float *z, const int64_t *labels, int64_t n, int64_t c, float smoothing,
                       float scale, float *dz, double *loss, int64_t *arg_out, int64_t *above_out,
                       int *guard) {
  AMD_CU_LOOP(i, n) {
    loss[i] = amd_xent_row(z + i * c, labels[i], n, c, smoothing, scale, dz ? dz + i * c : NULL, &arg_out[i],
                           &above_out[i]);
    if (guard && !isfinite(loss[i])) *guard = 0;
  }
}

/* The same per sample, a warp each, for rows of XENT_WARP_MIN to
 * XENT_WARP_MAX logits (ImageNet's 1000): amd_xent_row's arithmetic in its
 * order, bit for bit, with its exp calls spread over the lanes. Lane 0 runs
 * the loops whose order matters (the maximum and argmax, the two sums, in
 * j order over the row and the exponentials in shared memory); the lanes
 * compute the exponentials and the gradient, which are independent per
 * element, and count the logits above the label's (an integer sum). One
 * thread a sample took 276 us for ResNet-50's 256 x 1000 logits on an H200,
 * mostly in 2 x 1000 serial double-precision exp calls. */
enum { XENT_WARP_MIN = 128, XENT_WARP_MAX = 1024, XENT_WARPS = 4 };
__global__ void __launch_bounds__(32 * XENT_WARPS)
    k_xent_warp(const float *z, const int64_t *labels, int64_t n, int64_t c, float smoothing, float scale, float *dz,
                double *loss, int64_t *arg_out, int64_t *above_out, int *guard) {
  __shared__ double ex[XENT_WARPS][XENT_WARP_MAX];
  __shared__ double row_mx[XENT_WARPS], row_log_sum[XENT_WARPS];
  const int lane = threadIdx.x & 31, wi = threadIdx.x >> 5;
  double *e = ex[wi];
  for (int64_t i = (int64_t)blockIdx.x * XENT_WARPS + wi; i < n; i += (int64_t)gridDim.x * XENT_WARPS) {
    const float *zi = z + i * c;
    const int64_t y = labels[i];
    if (lane == 0) {
      double mx = zi[0];
      int64_t arg = 0;
      for (int64_t j = 1; j < c; j++)
        if (zi[j] > mx || isnan(zi[j])) mx = zi[j], arg = j;
      row_mx[wi] = mx;
      arg_out[i] = arg;
    }
    __syncwarp();
    const double mx = row_mx[wi];
    for (int64_t j = lane; j < c; j += 32) e[j] = exp((double)zi[j] - mx);
    __syncwarp();
    if (lane == 0) {
      double sum = 0, sum_logp = 0;
      for (int64_t j = 0; j < c; j++) sum += e[j];
      const double log_sum = log(sum);
      for (int64_t j = 0; j < c; j++) sum_logp += (double)zi[j] - mx - log_sum;
      const double logp_y = (double)zi[y] - mx - log_sum;
      loss[i] = -(1.0 - smoothing) * logp_y - smoothing / (double)c * sum_logp;
      row_log_sum[wi] = log_sum;
      if (guard && !isfinite(loss[i])) *guard = 0;
    }
    __syncwarp();
    const double log_sum = row_log_sum[wi];
    if (dz)
      for (int64_t j = lane; j < c; j += 32) {
        const double p = exp((double)zi[j] - mx - log_sum);
        const double q = (j == y ? 1.0 - smoothing : 0.0) + smoothing / (double)c;
        const float d = (float)((p - q) / (double)n);
        dz[i * c + j] = scale != 1.0f ? d * scale : d;
      }
    int above = 0;
    for (int64_t j = lane; j < c; j += 32) above += zi[j] > zi[y];
    for (int o = 16; o > 0; o >>= 1) above += __shfl_xor_sync(0xffffffffu, above, o);
    if (lane == 0) above_out[i] = above;
    __syncwarp(); /* e and the row values are rewritten by the warp's next sample */
  }
}

/* k_xent or, for rows of XENT_WARP_MIN .. XENT_WARP_MAX logits, k_xent_warp: the same results. */
static int xent_kernel(const float *z, const int64_t *labels, int64_t n, int64_t c, float smoothing, float scale,
                       float *dz, double *loss, int64_t *arg_out, int64_t *above_out, int *guard, amd_status *st) {
  if (c >= XENT_WARP_MIN && c <= XENT_WARP_MAX)
    k_xent_warp<<<amd_cu_blocks((n + XENT_WARPS - 1) / XENT_WARPS, 1), 32 * XENT_WARPS, 0, amd_cu.stream>>>(
        z, labels, n, c, smoothing, scale, dz, loss, arg_out, above_out, guard);
  else
    k_xent<<<amd_cu_blocks(n, 128), 128, 0, amd_cu.stream>>>(z, labels, n, c, smoothing, scale, dz, loss, arg_out,
                                                              above_out, guard);
  AMD_CUDA_CHECK_LAUNCH("k_xent", st);
  return 0;
}

/* Uploads the labels and launches xent_kernel into a new device buffer [labels |
 * results] (*buf, the caller frees it); the results lie as amd_xent_bytes
 * (core/train_types.h) lays them out: argmax, rank, loss. */
static int xent_launch(const float *z, const int64_t *labels, int64_t n, int64_t c, float smoothing,
                       float scale, float *dz, void **buf, amd_status *st) {
  if (amd_cu_malloc(buf, (size_t)n * sizeof(int64_t) + amd_xent_bytes(n), st)) return -1;
  int64_t *dlab = (int64_t *)*buf, *darg = dlab + n, *dabove = darg + n;
  double *dloss = (double *)(dabove + n);
  if (amd_cu_from_host(dlab, labels, (size_t)n * sizeof(int64_t), st)) return -1;
  return xent_kernel(z, dlab, n, c, smoothing, scale, dz, dloss, darg, dabove, NULL, st);
}

/* The training kernels' softmax_xent: the per-sample results copied into
 * rows (the host sums them: loss.c amd_xent_tally). */
static int cu_softmax_xent(const float *z, const int64_t *labels, int64_t n, int64_t c, float smoothing,
                           float scale, float *dz, void *rows, amd_status *st) {
  if (n <= 0) return 0;
  void *buf = NULL;
  int rc = xent_launch(z, labels, n, c, smoothing, scale, dz, &buf, st);
  if (rc == 0) rc = amd_cu_to_host(rows, (int64_t *)buf + n, amd_xent_bytes(n), st);
  amd_cu_free(buf);
  return rc;
}

/* ================================================================ deferred steps */

/* Training steps that do not wait (backend.h amd_stream, step_begin ...
 * step_collect; the stream table is backend_cuda.cu's):
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

void amd_cu_steps_close(void) {
  cudaFree(steps.guard);
  cudaFree(steps.dlab);
  cudaFreeHost(steps.pinned);
  free(steps.labels);
  for (int i = 0; i < steps.events; i++) cudaEventDestroy(steps.done[i]);
  memset(&steps, 0, sizeof steps);
}

__global__ void k_set_guard(int *guard) { *guard = 1; }

int amd_cu_guard_reset(amd_status *st) {
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
  const size_t bytes = (amd_xent_bytes(n) + sizeof(int) + 15) & ~(size_t)15;
  int64_t *labels = (int64_t *)malloc((size_t)AMD_STEP_SLOTS * (size_t)n * sizeof(int64_t)), *dlab = NULL;
  char *pinned = NULL;
  if (!labels) return amd_fail(st, "out of memory");
  cudaError_t e = cudaStreamSynchronize(amd_cu.stream);
  if (e == cudaSuccess) e = cudaHostAlloc((void **)&pinned, AMD_STEP_SLOTS * bytes, cudaHostAllocDefault);
  if (e == cudaSuccess) e = cudaMalloc((void **)&dlab, (size_t)n * sizeof(int64_t) + amd_xent_bytes(n));
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

int amd_cu_step_begin(const int64_t *labels, int64_t n, int slot, amd_status *st) {
  if (!steps.guard || slot < 0 || slot >= AMD_STEP_SLOTS)
    return amd_fail(st, "step_begin: no guard_reset before, or slot %d out of range", slot);
  if (steps_reserve(n, st)) return -1;
  /* the slot's previous step has been collected: its record is free */
  memcpy(steps.labels + (size_t)slot * steps.cap, labels, (size_t)n * sizeof(int64_t));
  steps.n[slot] = n;
  return amd_cu_from_host(steps.dlab, labels, (size_t)n * sizeof(int64_t), st);
}

int amd_cu_xent_defer(const float *z, int64_t n, int64_t c, float smoothing, float *dz, amd_status *st) {
  if (n <= 0) return 0;
  if (n > steps.cap)
    return amd_fail(st, "xent_defer: %lld samples, step_begin made room for %lld", (long long)n,
                    (long long)steps.cap);
  int64_t *dlab = steps.dlab, *darg = dlab + steps.cap, *dabove = darg + n;
  return xent_kernel(z, dlab, n, c, smoothing, 1.0f, dz, (double *)(dabove + n), darg, dabove, steps.guard, st);
}

__global__ void k_finite(const float *p, int64_t n, int *ok) {
  AMD_CU_LOOP(i, n) if (!isfinite(p[i])) *ok = 0;
}

int amd_cu_step_end(const float *g, int64_t n, amd_status *st) {
  if (n <= 0) return 0;
  k_finite<<<amd_cu_blocks(n), 256, 0, amd_cu.stream>>>(g, n, steps.guard);
  AMD_CUDA_CHECK_LAUNCH("k_finite", st);
  return 0;
}

int amd_cu_step_finish(int slot, amd_status *st) {
  char *rec = steps.pinned + (size_t)slot * steps.slot_bytes;
  const size_t res = amd_xent_bytes(steps.n[slot]);
  if (res)
    AMD_CUDA_CHECK(cudaMemcpyAsync(rec, steps.dlab + steps.cap, res, cudaMemcpyDeviceToHost, amd_cu.stream),
                   st);
  AMD_CUDA_CHECK(cudaMemcpyAsync(rec + res, steps.guard, sizeof(int), cudaMemcpyDeviceToHost, amd_cu.stream),
                 st);
  AMD_CUDA_CHECK(cudaEventRecord(steps.done[slot], amd_cu.stream), st);
  return 0;
}

int amd_cu_step_collect(int slot, int64_t *n, const int64_t **labels, const void **rows, int *ok,
                        amd_status *st) {
  AMD_CUDA_CHECK(cudaEventSynchronize(steps.done[slot]), st);
  const char *rec = steps.pinned + (size_t)slot * steps.slot_bytes;
  *n = steps.n[slot];
  *labels = steps.labels + (size_t)slot * steps.cap;
  *rows = rec;
  memcpy(ok, rec + amd_xent_bytes(*n), sizeof(int));
  return 0;
}

/* ================================================================ the other training kernels */

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
  if (rc == 0) rc = amd_cu_to_host(ok, flag, sizeof(int), st);
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

/* The fused optimizer: optim.c's loops (SGD / Adam / AdamW / RMSprop / Lion with
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
    case AMD_OPT_LION: { /* optim.c's lion_loop */
      const float x = __fmul_rn(p[i], c.decay);
      const float u = opt_fma(fused, c.one_minus_beta1, d, __fmul_rn(s1[i], c.beta1));
      const float sgn = u > 0 ? 1.0f : u < 0 ? -1.0f : 0.0f;
      p[i] = opt_fma(fused, c.neg_lr, sgn, x);
      s1[i] = opt_fma(fused, c.one_minus_beta2, d, __fmul_rn(s1[i], c.beta2));
      break;
    }
    default:
      /* cu_optim_step refuses any other kind before launch: a launch that
       * gets here (a corrupt graph node) fails loudly instead of updating */
      __trap();
    }
  }
}

static int cu_optim_step(const amd_optim_update *u, float *p, const float *g, float *state, int64_t n,
                         int guarded, amd_status *st) {
  const amd_optim *o = u->o;
  if ((unsigned)o->kind >= AMD_OPT_COUNT)
    return amd_fail(st, "optim_step: unknown optimizer kind %d (no step taken)", (int)o->kind);
  if (n <= 0) return 0;
  if (guarded && !steps.guard) return amd_fail(st, "optim_step: guarded without guard_reset");
  const amd_optim_coeffs c = u->c;
  int wd = o->weight_decay != 0, mom = 0, nesterov = 0;
  float *s1 = state, *s2 = state ? state + n : NULL;
  switch (o->kind) {
  case AMD_OPT_SGD:
    mom = o->momentum != 0;
    nesterov = mom && o->nesterov;
    break;
  case AMD_OPT_ADAMW:
  case AMD_OPT_LION:
    wd = 0; /* decoupled: in c.decay */
    break;
  case AMD_OPT_RMSPROP:
    mom = o->momentum > 0;
    break;
  default:
    break;
  }
  if (u->state_blocks > 0 && !state) return amd_fail(st, "optimizer state missing");
  k_optim<<<amd_cu_blocks(n), 256, 0, amd_cu.stream>>>((int)o->kind, wd, mom, nesterov, u->fused_fma, c, p, g,
                                                       s1, s2, n, guarded ? steps.guard : NULL);
  AMD_CUDA_CHECK_LAUNCH("k_optim", st);
  return 0;
}

/* ================================================================ k_optim in a captured graph */

int amd_cu_optim_node_read(const cudaKernelNodeParams *kp, amd_cu_optim_args *args) {
  if (kp->func != (void *)k_optim) return 0;
  void **a = kp->kernelParams;
  memcpy(&args->kind, a[0], sizeof(int));
  memcpy(&args->wd, a[1], sizeof(int));
  memcpy(&args->mom, a[2], sizeof(int));
  memcpy(&args->nesterov, a[3], sizeof(int));
  memcpy(&args->fused, a[4], sizeof(int));
  memcpy(&args->c, a[5], sizeof args->c);
  memcpy(&args->p, a[6], sizeof args->p);
  memcpy(&args->g, a[7], sizeof args->g);
  memcpy(&args->s1, a[8], sizeof args->s1);
  memcpy(&args->s2, a[9], sizeof args->s2);
  memcpy(&args->n, a[10], sizeof args->n);
  memcpy(&args->guard, a[11], sizeof args->guard);
  return 1;
}

void amd_cu_optim_node_argv(amd_cu_optim_args *args, void *argv[AMD_CU_OPTIM_ARGS]) {
  void *a[AMD_CU_OPTIM_ARGS] = {&args->kind,  &args->wd, &args->mom, &args->nesterov,
                                &args->fused, &args->c,  &args->p,   (void *)&args->g,
                                &args->s1,    &args->s2, &args->n,   (void *)&args->guard};
  memcpy(argv, a, sizeof a);
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
  if (rc == 0) rc = amd_cu_from_host(dev, host, bytes, st);
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

/* ================================================================ the set */

extern "C" const amd_train_kernels amd_train_kernels_cuda = {
    /* name */ "cuda",
    /* device */ AMD_DEVICE_CUDA,
    /* softmax_xent */ cu_softmax_xent,
    /* all_finite */ cu_all_finite,
    /* scale */ cu_scale,
    /* add */ cu_add,
    /* optim_step */ cu_optim_step,
    /* data_batch */ cu_data_batch,
};

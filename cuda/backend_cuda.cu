/* The CUDA backend table (backend_cuda.h): device selection, the caching
 * allocator, copies (amd_buffers), node dispatch (amd_compute: thin adapters
 * to ops_cuda.cu's table) and the stream (amd_stream: the deferred steps of
 * train_kernels.cu, CUDA graphs of a step). The training kernels are
 * train_kernels.cu's.
 *
 * Memory: float tensors are device memory from one arena of device addresses
 * mapped as it grows (blocks split and merged; where the driver cannot, a
 * cache of cudaMalloc blocks by rounded size): a training step after the
 * first takes no new memory; alloc zeroes with cudaMemsetAsync. Other dtypes are host
 * memory (amd_tensor_alloc), because the ops' infer functions read them.
 * Everything is queued on one stream; copies to the host synchronise it,
 * uploads up to 8 MB do not (pinned staging, see amd_cu_from_host), nor do the
 * loss and the finite check of a deferred training step (xent_defer). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train_cuda.h"

#include <cuda.h> /* the CUmem types; the functions come from the driver at run time (arena_open) */

extern "C" {
#include "../src/core/alloc_trace.h"
#include "../src/core/env.h"
#include "../src/core/range_alloc.h"
}

amd_cuda_state amd_cu;
static char cu_name[160] = "cuda";

/* ================================================================ device memory: the block cache, the arena */

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

/* ---- the arena: one range of device addresses, reserved once for the GPU's
 * whole memory and mapped to memory as its end grows (the driver's virtual
 * memory management); its blocks are src/core/range_alloc.c's, split and
 * merged, so a freed block serves any smaller request and neighbours join
 * (docs/gpu.md#where-the-memory-goes: within 1% of the live peak where the
 * block cache above held 11% more). Mapped memory stays mapped until close,
 * as the cache's blocks stay, so a step after the first maps nothing. Where
 * the driver has no virtual memory management, or AMD_CUDA_ALLOCATOR=blocks,
 * the block cache serves every request instead. */
static int arena_wanted = 1; /* amd_cuda_allocator_blocks(0) */
static struct {
  int on;
  CUdeviceptr base;
  size_t reserved, mapped, gran;
  CUmemAllocationProp prop;
  CUmemAccessDesc access;
  CUmemGenericAllocationHandle *handles; /* one per growth, in address order */
  size_t *handle_bytes;
  int n_handles, cap_handles;
  amd_ranges ranges;
  decltype(&cuMemGetAllocationGranularity) granularity;
  decltype(&cuMemAddressReserve) reserve;
  decltype(&cuMemAddressFree) address_free;
  decltype(&cuMemCreate) create;
  decltype(&cuMemRelease) release;
  decltype(&cuMemMap) map;
  decltype(&cuMemUnmap) unmap;
  decltype(&cuMemSetAccess) set_access;
} arena;

/* A driver function (CUDA 12's forms) through the runtime, which loads the
 * driver: no link against libcuda, so the binary runs where there is none. */
template <class F> static bool driver_fn(const char *name, F *fn) {
  void *p = NULL;
  cudaDriverEntryPointQueryResult q;
  if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess || !p) {
    cudaGetLastError();
    return false;
  }
  *fn = (F)p;
  return true;
}

/* Reserves the addresses on device dev; leaves arena.on 0 (the block cache)
 * where anything is missing. */
static void arena_open(int dev) {
  memset(&arena, 0, sizeof arena);
  if (!arena_wanted) return;
  decltype(&cuDeviceGet) device_get;
  decltype(&cuDeviceGetAttribute) device_attr;
  CUdevice cd;
  int vmm = 0;
  if (!driver_fn("cuDeviceGet", &device_get) || !driver_fn("cuDeviceGetAttribute", &device_attr) ||
      device_get(&cd, dev) != CUDA_SUCCESS ||
      device_attr(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, cd) != CUDA_SUCCESS || !vmm)
    return;
  if (!driver_fn("cuMemGetAllocationGranularity", &arena.granularity) ||
      !driver_fn("cuMemAddressReserve", &arena.reserve) || !driver_fn("cuMemAddressFree", &arena.address_free) ||
      !driver_fn("cuMemCreate", &arena.create) || !driver_fn("cuMemRelease", &arena.release) ||
      !driver_fn("cuMemMap", &arena.map) || !driver_fn("cuMemUnmap", &arena.unmap) ||
      !driver_fn("cuMemSetAccess", &arena.set_access))
    return;
  arena.prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  arena.prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  arena.prop.location.id = dev;
  arena.access.location = arena.prop.location;
  arena.access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  size_t free_b = 0, total = 0;
  if (arena.granularity(&arena.gran, &arena.prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) != CUDA_SUCCESS ||
      !arena.gran || cudaMemGetInfo(&free_b, &total) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  arena.reserved = (total + arena.gran - 1) / arena.gran * arena.gran;
  if (arena.reserve(&arena.base, arena.reserved, 0, 0, 0) != CUDA_SUCCESS) return;
  amd_ranges_init(&arena.ranges, 512);
  arena.on = 1;
}

/* Maps memory under the arena up to end (a multiple of the granularity more). */
static int arena_grow(size_t end, amd_status *st) {
  if (end <= arena.mapped) return 0;
  if (amd_cu.capturing) return amd_fail(st, "a new allocation (%zu bytes) in a captured step", end - arena.mapped);
  const size_t piece = (end - arena.mapped + arena.gran - 1) / arena.gran * arena.gran;
  cudaSetDevice(amd_cu.device); /* the driver calls need the device's context current on this thread */
  if (arena.n_handles == arena.cap_handles) {
    const int nc = arena.cap_handles ? 2 * arena.cap_handles : 64;
    CUmemGenericAllocationHandle *h = (CUmemGenericAllocationHandle *)realloc(arena.handles, nc * sizeof *h);
    if (h) arena.handles = h;
    size_t *b = (size_t *)realloc(arena.handle_bytes, nc * sizeof *b);
    if (b) arena.handle_bytes = b;
    if (!h || !b) return amd_fail(st, "out of memory");
    arena.cap_handles = nc;
  }
  CUmemGenericAllocationHandle h;
  CUresult e = arena.create(&h, piece, &arena.prop, 0);
  if (e == CUDA_ERROR_OUT_OF_MEMORY) { /* the block cache's and the workspaces' neighbours may hold some */
    cudaStreamSynchronize(amd_cu.stream);
    release_unused();
    e = arena.create(&h, piece, &arena.prop, 0);
  }
  if (e != CUDA_SUCCESS)
    return amd_fail(st, "CUDA driver error %d mapping %zu more bytes of GPU memory (%zu held)", (int)e, piece,
                    held_bytes);
  const CUdeviceptr at = arena.base + arena.mapped;
  if ((e = arena.map(at, piece, 0, h, 0)) != CUDA_SUCCESS || (e = arena.set_access(at, piece, &arena.access, 1))) {
    arena.unmap(at, piece); /* (an error when nothing was mapped: nothing to undo) */
    arena.release(h);
    return amd_fail(st, "CUDA driver error %d mapping %zu bytes of GPU memory at the arena's end", (int)e, piece);
  }
  arena.handles[arena.n_handles] = h;
  arena.handle_bytes[arena.n_handles++] = piece;
  arena.mapped += piece;
  n_mallocs++;
  held_bytes += piece;
  if (held_bytes > peak_bytes) peak_bytes = held_bytes;
  return 0;
}

static int arena_malloc(void **p, size_t bytes, amd_status *st) {
  size_t off;
  const int rc = amd_ranges_take(&arena.ranges, bytes, arena.reserved, &off);
  if (rc < 0) return amd_fail(st, "out of memory");
  if (rc > 0)
    return amd_fail(st, "%zu bytes do not fit the GPU's %zu (%zu in use)", bytes, arena.reserved, arena.ranges.end);
  if (arena_grow(arena.ranges.end, st)) {
    amd_ranges_give(&arena.ranges, off);
    return -1;
  }
  *p = (void *)(arena.base + off);
  amd_alloc_trace_alloc(1, bytes, *p);
  return 0;
}

static void arena_close(void) {
  if (!arena.on) return;
  size_t at = 0;
  for (int i = 0; i < arena.n_handles; i++) { /* each growth was mapped on its own: unmapped so */
    arena.unmap(arena.base + at, arena.handle_bytes[i]);
    arena.release(arena.handles[i]);
    at += arena.handle_bytes[i];
  }
  arena.address_free(arena.base, arena.reserved);
  held_bytes -= arena.mapped;
  free(arena.handles);
  free(arena.handle_bytes);
  amd_ranges_destroy(&arena.ranges);
  memset(&arena, 0, sizeof arena);
}

extern "C" void amd_cuda_allocator_blocks(int blocks) { arena_wanted = !blocks; }

extern "C" void amd_cuda_settings_from_env(const amd_env *env) {
  amd_cuda_poison_outputs(env->faults.cuda_poison_outputs);
  amd_cuda_allocator_blocks(env->cuda_block_cache);
  if (env->conv_workspace_mb > 0) amd_cuda_conv_workspace((size_t)(env->conv_workspace_mb * 1048576.0));
}

int amd_cu_malloc(void **p, size_t bytes, amd_status *st) {
  if (arena.on) return arena_malloc(p, bytes, st);
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
    amd_alloc_trace_alloc(1, bytes, *p);
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
  amd_alloc_trace_alloc(1, bytes, d);
  return 0;
}

void amd_cu_free(void *p) {
  if (!p) return;
  amd_alloc_trace_free(p);
  const CUdeviceptr d = (CUdeviceptr)p;
  if (arena.on && d >= arena.base && d < arena.base + arena.reserved) {
    amd_ranges_give(&arena.ranges, (size_t)(d - arena.base));
    return;
  }
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

int amd_cu_scratch(int slot, size_t bytes, void **p, amd_status *st) {
  *p = NULL;
  if (arena.on) return amd_cu_malloc(p, bytes, st);
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
    amd_alloc_trace_workspace(slot, bytes);
  }
  *p = workspaces[slot].p;
  return 0;
}

void amd_cu_scratch_done(void *p) {
  if (p && arena.on) amd_cu_free(p);
}

extern "C" void amd_cuda_alloc_stats(size_t *held, size_t *peak, long *mallocs, const char **allocator) {
  *held = held_bytes;
  *peak = peak_bytes;
  *mallocs = n_mallocs;
  *allocator = arena.on ? "arena" : "block cache";
}

/* ================================================================ buffers */

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

int amd_cu_to_host(void *dst, const void *src, size_t bytes, amd_status *st) {
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

int amd_cu_from_host(void *dst, const void *src, size_t bytes, amd_status *st) {
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

/* ================================================================ compute */

static int cu_supports(const amd_node *n, const amd_tensor *const *in) { return amd_cu_node_ok(n, in); }

static unsigned cu_bwd_overwrite(const amd_node *n, const amd_tensor *const *in) {
  const amd_cu_op *e = amd_cu_node_ok(n, in) ? amd_cu_find_op(n) : NULL;
  return e ? e->bwd_overwrite : 0;
}

static unsigned cu_host_inputs(const amd_node *n) {
  const amd_cu_op *e = amd_cu_find_op(n);
  return !e ? 0 : e->host_inputs_of ? e->host_inputs_of(n) : e->host_inputs;
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

/* ================================================================ CUDA graphs of a training step */

/* A captured step and, to replay it with another learning rate and step
 * number, its k_optim node with the node's arguments (the coefficients are
 * kernel arguments: they are replaced before each launch). */
struct cu_graph {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  cudaGraphNode_t optim; /* NULL: the step has no optimizer node */
  amd_cu_optim_args args;
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
    amd_cu_optim_args args;
    if (!amd_cu_optim_node_read(&kp, &args)) continue;
    if (g->optim) {
      e = cudaErrorNotSupported; /* two optimizer steps in one step: not ours */
      break;
    }
    g->optim = nodes[i];
    g->kp = kp;
    g->args = args;
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

static int cu_graph_launch(void *h, const amd_optim_coeffs *c, amd_status *st) {
  cu_graph *g = (cu_graph *)h;
  if (g->optim) {
    g->args.c = *c;
    void *a[AMD_CU_OPTIM_ARGS];
    amd_cu_optim_node_argv(&g->args, a);
    cudaKernelNodeParams kp = g->kp;
    kp.kernelParams = a;
    kp.extra = NULL;
    AMD_CUDA_CHECK(cudaGraphExecKernelNodeSetParams(g->exec, g->optim, &kp), st);
  }
  AMD_CUDA_CHECK(cudaGraphLaunch(g->exec, amd_cu.stream), st);
  return 0;
}

/* ================================================================ the table, device selection */

static const amd_buffers cu_buffers = {
    /* alloc */ cu_alloc,
    /* alloc_out */ cu_alloc_out,
    /* free */ cu_free,
    /* mem_alloc */ cu_mem_alloc,
    /* mem_free */ amd_cu_free,
    /* mem_to_host */ amd_cu_to_host,
    /* mem_from_host */ amd_cu_from_host,
    /* mem_copy */ cu_copy,
    /* mem_zero */ cu_zero,
};

static const amd_compute cu_compute = {
    /* supports */ cu_supports,
    /* host_inputs */ cu_host_inputs,
    /* forward */ cu_forward,
    /* backward */ cu_backward,
    /* bwd_overwrite */ cu_bwd_overwrite,
};

static const amd_stream cu_stream = {
    /* step_begin */ amd_cu_step_begin,
    /* xent_defer */ amd_cu_xent_defer,
    /* step_end */ amd_cu_step_end,
    /* step_finish */ amd_cu_step_finish,
    /* step_collect */ amd_cu_step_collect,
    /* guard_reset */ amd_cu_guard_reset,
    /* graph_begin */ cu_graph_begin,
    /* graph_end */ cu_graph_end,
    /* graph_launch */ cu_graph_launch,
    /* graph_free */ cu_graph_free,
};

extern "C" const amd_backend amd_backend_cuda = {
    /* name */ cu_name,
    /* device */ AMD_DEVICE_CUDA,
    /* buf */ &cu_buffers,
    /* compute */ &cu_compute,
    /* stream */ &cu_stream,
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

/* amd_cuda_poison_outputs' setting, applied when the backend opens */
static int poison_outputs;

extern "C" void amd_cuda_poison_outputs(int on) {
  poison_outputs = on;
  amd_cu.poison_outputs = on;
}

/* amd_cuda_gemm_exact's setting, applied when the backend opens */
static int gemm_exact;

extern "C" void amd_cuda_gemm_exact(int exact) {
  gemm_exact = exact;
  if (amd_cu.gemm) amd_cuda_gemm_set_tier(amd_cu.gemm, exact ? AMD_GEMM_TIER_EXACT : AMD_GEMM_TIER_FAST);
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
  amd_cuda_gemm_exact(gemm_exact);
  cudaDeviceProp prop;
  AMD_CUDA_CHECK(cudaGetDeviceProperties(&prop, index), st);
  snprintf(cu_name, sizeof cu_name, "cuda:%d (%.100s)", index, prop.name);
  amd_cu.device = index;
  amd_cu.open = 1;
  arena_open(index);
  amd_cu.poison_outputs = poison_outputs;
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
  q8f_close();
  staging_close();
  amd_cu_steps_close();
  arena_close();
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

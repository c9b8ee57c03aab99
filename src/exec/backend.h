/* Backends: where tensors live and which code runs each node.
 *
 * A backend is a name, a device tag and const tables of functions, one per
 * concern. The executor (exec.c) and the trainer (trainer.c) run every node
 * through it and never look at a device:
 *  - buf (amd_buffers): tensors and raw memory of the backend.
 *    alloc / free: a tensor for t's shape, zeroed. A backend puts float
 *    tensors where its kernels read them (the CUDA backend: device memory,
 *    tensor.device = AMD_DEVICE_CUDA) and every other dtype on the host,
 *    because the ops' infer functions read shape and index tensors there.
 *    mem_*: raw bytes and the copies between host and backend memory; for
 *    the CPU backend every direction is a memcpy.
 *  - compute (amd_compute): the nodes. supports(n, in): 1 when the backend
 *    runs the node with its own kernels (forward / backward below); 0 when
 *    the node takes the HOST FALLBACK: amd_backend_forward_node /
 *    amd_backend_backward_node download its inputs, run the op's CPU
 *    functions and upload the results. in may be NULL: the answer for float
 *    inputs (what `info` reports). host_inputs(n): inputs (bit k) that a
 *    supported node reads on the host (small scalars such as Clip's min /
 *    max); the executor stages them. Backward functions ACCUMULATE (+=) into
 *    din as op.h requires.
 *  - stream (amd_stream, optional): training steps that do not wait for
 *    their loss, and their capture into a replayable graph.
 * The training primitives (loss, finite check, scaling, optimizer, batch
 * assembly) are not the backend's: they are the training kernels of its
 * device (train_kernels.h; src/train/kernels.h finds them). */
#ifndef AMD_BACKEND_H
#define AMD_BACKEND_H

#include "../core/train_types.h"
#include "../ops/op.h"

#define AMD_STEP_SLOTS 2 /* training steps in flight (step_begin) */

typedef struct amd_buffers {
  int (*alloc)(amd_tensor *t, amd_status *st); /* zeroed memory for t's shape */
  /* Optional (NULL: alloc): memory for an output of a supported node, which
   * its forward writes in full, so it is not zeroed first. */
  int (*alloc_out)(amd_tensor *t, amd_status *st);
  void (*free)(amd_tensor *t);
  /* raw memory of the backend (bytes) */
  int (*mem_alloc)(void **p, size_t bytes, amd_status *st); /* zeroed */
  void (*mem_free)(void *p);
  int (*mem_to_host)(void *dst, const void *src, size_t bytes, amd_status *st);
  int (*mem_from_host)(void *dst, const void *src, size_t bytes, amd_status *st);
  int (*mem_copy)(void *dst, const void *src, size_t bytes, amd_status *st); /* within the backend */
  int (*mem_zero)(void *p, size_t bytes, amd_status *st);
} amd_buffers;

typedef struct amd_compute {
  int (*supports)(const amd_node *n, const amd_tensor *const *in);
  unsigned (*host_inputs)(const amd_node *n); /* optional (NULL: none) */
  int (*forward)(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                 amd_status *st);
  int (*backward)(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                  const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st);
  /* Optional (NULL: none): the inputs k of a supported node whose din[k] its
   * backward writes in full, so that it may write over unzeroed memory
   * (ctx->bwd_overwrite) instead of adding to a zeroed buffer. */
  unsigned (*bwd_overwrite)(const amd_node *n, const amd_tensor *const *in);
} amd_compute;

/* Steps that do not wait, so that the host queues the next one while the
 * device works: step_begin gives the step's n labels and its slot (0 ..
 * AMD_STEP_SLOTS - 1, one per step in flight); xent_defer is the training
 * kernels' softmax_xent on them (scale 1, dz required) whose results stay on
 * the device; step_end(g, n) checks the n gradients g: where one of them or
 * one of the losses is not finite it clears the step guard, which the
 * training kernels' optim_step(guarded) honours in that step and every later
 * one until guard_reset; step_finish(slot) sends the results and the guard
 * to the slot; step_collect(slot) waits for them and gives the step's n, its
 * labels, its per-sample results (rows: amd_xent_bytes(n), train_types.h)
 * and *ok (every loss and gradient finite); they stay valid until the slot's
 * next step_begin. Between step_begin and step_finish the step makes no
 * copy to or from the host.
 * Optional within it (graph_begin NULL: none): the device work of such a
 * step (between step_begin and step_finish) captured into a graph and
 * replayed. graph_begin starts capturing; graph_end stops and makes the graph
 * (an error where the step did something a graph cannot hold: a copy from or
 * to the host, a new allocation; the capture is then over and nothing of it
 * ran); graph_launch runs it again with the optimizer's coefficients c of
 * this step (amd_optim_get_coeffs); graph_free. */
typedef struct amd_stream {
  int (*step_begin)(const int64_t *labels, int64_t n, int slot, amd_status *st);
  int (*xent_defer)(const float *z, int64_t n, int64_t c, float smoothing, float *dz, amd_status *st);
  int (*step_end)(const float *g, int64_t n, amd_status *st);
  int (*step_finish)(int slot, amd_status *st);
  int (*step_collect)(int slot, int64_t *n, const int64_t **labels, const void **rows, int *ok,
                      amd_status *st);
  int (*guard_reset)(amd_status *st);
  int (*graph_begin)(amd_status *st);
  int (*graph_end)(void **graph, amd_status *st);
  int (*graph_launch)(void *graph, const amd_optim_coeffs *c, amd_status *st);
  void (*graph_free)(void *graph);
} amd_stream;

typedef struct amd_backend {
  const char *name;
  int device; /* the device tag of the float tensors it allocates */
  const amd_buffers *buf;
  const amd_compute *compute;
  const amd_stream *stream; /* NULL: every training step waits for its loss */
} amd_backend;

extern const amd_backend amd_backend_cpu;

/* Runs a node's forward through be: a supported node with be->compute's
 * forward (the inputs of its host_inputs staged on the host), any other with the op's CPU
 * forward on host copies, its float outputs then moved into backend memory.
 * Also runs the op's infer and allocates out[] (freed on error). */
int amd_backend_forward_node(const amd_backend *be, const amd_node *n, amd_ctx *ctx,
                             const amd_tensor *const *in, amd_tensor *out, int shapes_only, amd_status *st);
/* Backward of a node through be (supported, or the op's CPU backward on host
 * copies with din downloaded, accumulated into and uploaded back). */
int amd_backend_backward_node(const amd_backend *be, const amd_node *n, amd_ctx *ctx,
                              const amd_tensor *const *in, const amd_tensor *out,
                              const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st);
/* A host copy of t (dst owns new host memory; t on the host is copied too). */
int amd_backend_download(const amd_backend *be, const amd_tensor *t, amd_tensor *dst, amd_status *st);
/* A backend copy of host tensor t allocated with be->buf->alloc. */
int amd_backend_upload(const amd_backend *be, const amd_tensor *t, amd_tensor *dst, amd_status *st);

#endif

/* Backends: where tensors live and which code runs each node.
 *
 * A backend is a const table of functions. The executor (exec.c) and the
 * trainer (trainer.c) run every node through it and never look at a device:
 *  - alloc / free: a tensor for t's shape, zeroed. A backend puts float
 *    tensors where its kernels read them (the CUDA backend: device memory,
 *    tensor.device = AMD_DEVICE_CUDA) and every other dtype on the host,
 *    because the ops' infer functions read shape and index tensors there.
 *  - native(n, in): 1 when the backend runs the node with its own kernels
 *    (forward / backward below); 0 when the node takes the HOST FALLBACK:
 *    amd_backend_forward_node / amd_backend_backward_node download its
 *    inputs, run the op's CPU functions and upload the results. in may be
 *    NULL: the answer for float inputs (what `info` reports).
 *  - host_inputs(n): inputs (bit k) that a native node reads on the host
 *    (small scalars such as Clip's min / max); the executor stages them.
 *  - raw memory (mem_*): copies between host and backend memory; for the CPU
 *    backend every direction is a memcpy.
 *  - the training primitives (softmax_xent ... optim_step) work on backend
 *    memory, so that a training step never copies parameters or gradients
 *    to the host; the CPU backend runs the host code of src/train/.
 * Backward functions ACCUMULATE (+=) into din as op.h requires. */
#ifndef AMD_BACKEND_H
#define AMD_BACKEND_H

#include "../ops/op.h"

struct amd_optim;
struct amd_batch_stats;
struct amd_batch_sample;

#define AMD_STEP_SLOTS 2 /* training steps in flight (step_begin) */

typedef struct amd_backend {
  const char *name;
  int device; /* the device tag of the float tensors it allocates */
  int (*native)(const amd_node *n, const amd_tensor *const *in);
  unsigned (*host_inputs)(const amd_node *n);
  int (*alloc)(amd_tensor *t, amd_status *st); /* zeroed memory for t's shape */
  /* Optional (NULL: alloc): memory for an output of a native node, which its
   * forward writes in full, so it is not zeroed first. */
  int (*alloc_out)(amd_tensor *t, amd_status *st);
  void (*free)(amd_tensor *t);
  int (*forward)(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                 amd_status *st);
  int (*backward)(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                  const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st);
  /* Optional (NULL: none): the inputs k of a native node whose din[k] its
   * backward writes in full, so that it may write over unzeroed memory
   * (ctx->bwd_overwrite) instead of adding to a zeroed buffer. */
  unsigned (*bwd_overwrite)(const amd_node *n, const amd_tensor *const *in);
  /* raw memory of the backend (bytes) */
  int (*mem_alloc)(void **p, size_t bytes, amd_status *st); /* zeroed */
  void (*mem_free)(void *p);
  int (*mem_to_host)(void *dst, const void *src, size_t bytes, amd_status *st);
  int (*mem_from_host)(void *dst, const void *src, size_t bytes, amd_status *st);
  int (*mem_copy)(void *dst, const void *src, size_t bytes, amd_status *st); /* within the backend */
  int (*mem_zero)(void *p, size_t bytes, amd_status *st);
  /* training primitives on backend memory */
  /* Softmax cross-entropy of logits z [n, c] with host labels (loss.h's
   * definition and sums): adds to bs (may be NULL), writes the mean loss to
   * *mean, and when dz is non-NULL d(mean loss)/dz * scale into it (not
   * accumulated). pred (host, may be NULL): the argmax per sample. */
  int (*softmax_xent)(const float *z, const int64_t *labels, int64_t n, int64_t c, float smoothing,
                      float scale, float *dz, int64_t *pred, struct amd_batch_stats *bs, double *mean,
                      amd_status *st);
  int (*all_finite)(const float *p, int64_t n, int *ok, amd_status *st);
  int (*scale)(float *p, int64_t n, float f, amd_status *st);
  int (*add)(float *y, const float *x, int64_t n, amd_status *st); /* y += x */
  /* One optimizer step exactly as amd_optim_step (optim.c); guarded (only
   * where step_end exists): nothing changes once the step guard is cleared. */
  int (*optim_step)(const struct amd_optim *o, double lr, int64_t t, float *p, const float *g, float *state,
                    int64_t n, int guarded, amd_status *st);
  /* Optional (NULL: every training step waits for its loss). Steps that do
   * not wait, so that the host queues the next one while the device works:
   * step_begin gives the step's n labels and its slot (0 .. AMD_STEP_SLOTS -
   * 1, one per step in flight); xent_defer is softmax_xent on them (scale 1,
   * dz required) whose sums stay on the device; step_end(g, n) checks the n
   * gradients g: where one of them or one of the losses is not finite it
   * clears the step guard, which optim_step(guarded) honours in that step and
   * every later one until guard_reset; step_finish(slot) sends the sums and
   * the guard to the slot; step_collect(slot) waits for them and gives what
   * softmax_xent and all_finite would have (bs, *mean, *ok). Between
   * step_begin and step_finish the step makes no copy to or from the host. */
  int (*step_begin)(const int64_t *labels, int64_t n, int slot, amd_status *st);
  int (*xent_defer)(const float *z, int64_t n, int64_t c, float smoothing, float *dz, amd_status *st);
  int (*step_end)(const float *g, int64_t n, amd_status *st);
  int (*step_finish)(int slot, amd_status *st);
  int (*step_collect)(int slot, struct amd_batch_stats *bs, double *mean, int *ok, amd_status *st);
  int (*guard_reset)(amd_status *st);
  /* Optional (NULL: none): the device work of such a step (between
   * step_begin and step_finish) captured into a graph and replayed.
   * graph_begin starts capturing; graph_end stops and makes the graph
   * (an error where the step did something a graph cannot hold: a copy from
   * or to the host, a new allocation; the capture is then over and nothing
   * of it ran); graph_launch runs it again with the optimizer's coefficients
   * of lr and step t; graph_free. */
  int (*graph_begin)(amd_status *st);
  int (*graph_end)(void **graph, amd_status *st);
  int (*graph_launch)(void *graph, const struct amd_optim *o, double lr, int64_t t, amd_status *st);
  void (*graph_free)(void *graph);
  /* Optional (NULL: the host assembles batches). x [n, c, h, w] in backend
   * memory from the host plan (dataset.h amd_dataset_batch_plan), exactly as
   * amd_dataset_batch_fill: pixels is a copy of the split in backend memory
   * (uint8 when is_u8, else float), norm the host's 4 floats per channel
   * (scale, shift, inv, mean: amd_dataset_batch_norm). */
  int (*data_batch)(const void *pixels, int is_u8, int64_t c, int64_t h, int64_t w, const float *norm,
                    const struct amd_batch_sample *plan, int64_t n, float *x, amd_status *st);
} amd_backend;

extern const amd_backend amd_backend_cpu;

/* Runs a node's forward through be: a native node with be->forward (the
 * inputs of be->host_inputs staged on the host), any other with the op's CPU
 * forward on host copies, its float outputs then moved into backend memory.
 * Also runs the op's infer and allocates out[] (freed on error). */
int amd_backend_forward_node(const amd_backend *be, const amd_node *n, amd_ctx *ctx,
                             const amd_tensor *const *in, amd_tensor *out, int shapes_only, amd_status *st);
/* Backward of a node through be (native, or the op's CPU backward on host
 * copies with din downloaded, accumulated into and uploaded back). */
int amd_backend_backward_node(const amd_backend *be, const amd_node *n, amd_ctx *ctx,
                              const amd_tensor *const *in, const amd_tensor *out,
                              const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st);
/* A host copy of t (dst owns new host memory; t on the host is copied too). */
int amd_backend_download(const amd_backend *be, const amd_tensor *t, amd_tensor *dst, amd_status *st);
/* A backend copy of host tensor t allocated with be->alloc. */
int amd_backend_upload(const amd_backend *be, const amd_tensor *t, amd_tensor *dst, amd_status *st);

#endif

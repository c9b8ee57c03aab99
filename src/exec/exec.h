/* The forward executor: runs the graph node by node in topological order on
 * a backend (backend.h: the CPU, or the CUDA backend with its host fallback).
 *
 * For each node: check that its op supports the input dtypes (the op's infer
 * does), infer output shapes from the actual inputs (symbolic dims such as the
 * batch are bound here, on every call), allocate the outputs, run forward,
 * free each intermediate after its last reader.
 *
 * A run is bound to one backend (amd_run_set_backend; the CPU by default).
 * On a backend with its own memory the run keeps a backend copy of every float
 * initializer (inits[v]) and of the caller's float inputs; the graph's host
 * initializers stay the reference for writing the model back. */
#ifndef AMD_EXEC_H
#define AMD_EXEC_H

#include "../core/graph.h"
#include "../ops/op.h"

/* The state of one pass over the graph: a runtime tensor per value. */
struct amd_backend;

typedef struct amd_run {
  const amd_graph *g;
  const struct amd_backend *be; /* where the tensors live (never NULL after init) */
  amd_tensor *inits;      /* per value: the initializer as this backend sees it */
  unsigned char *init_owned; /* inits[v] was allocated by the run (a backend copy) */
  amd_tensor *in_dev;     /* per graph input: the backend copy of the caller's tensor */
  amd_tensor *vals;       /* per value; initializers and caller inputs are borrowed */
  unsigned char *owned;   /* vals[i] was allocated by this run */
  int *readers;           /* remaining readers during a pass */
  unsigned char *bwd_reads; /* per value: the backward pass reads its data (set by a keep = 1 pass) */
  int keep_all;             /* keep = 1 keeps every intermediate (tests compare with it) */
  uint64_t *node_rng;     /* ctx->rng before each node's forward (Dropout's backward) */
  int pinned;             /* a value kept even when keep = 0 (-1: none), e.g. the logits */
  /* Shape-derived nodes (exec.c, "static nodes"): per node, 1 when every
   * output is a function of the graph inputs' shapes alone; their outputs are
   * kept from the first pass (inits[], init_owned 4) and reused while the
   * inputs have the shapes of that pass (static_dims). */
  unsigned char *node_static;
  int static_filled;
  int64_t *static_dims;   /* per graph input: rank, then AMD_MAX_RANK dims */
  /* Fusion (exec.c): per node, the Relu node and the Add node that may run
   * inside it (-1: none); per node, 1 when an earlier node did it this pass. */
  int *relu_into, *add_into;
  unsigned char *fused_done;
} amd_run;

int amd_run_init(amd_run *r, const amd_graph *g, amd_status *st);
/* Binds the run to a backend: frees the last pass and the old backend's
 * initializer copies, and makes a backend copy of every float initializer
 * that is not already given by amd_run_set_init. */
int amd_run_set_backend(amd_run *r, const struct amd_backend *be, amd_status *st);
/* Points initializer v at t (backend memory, not owned by the run), e.g. a
 * parameter inside the trainer's device block; call before amd_run_set_backend. */
void amd_run_set_init(amd_run *r, int v, const amd_tensor *t);
/* Runs every node on r->be (ctx->backend is ignored). keep = 1 keeps every
 * intermediate that some op's backward reads (the others keep their shape but
 * lose their data after their last reader); keep = 0
 * frees each after its last reader (graph outputs stay). The previous pass's
 * tensors are freed first. */
int amd_run_forward(amd_run *r, amd_ctx *ctx, const amd_tensor *inputs, int keep, amd_status *st);
/* Frees the data of value v, keeping its shape, when the last pass allocated
 * it (an intermediate): for a backward walk done with it. Graph outputs, the
 * pinned value and every value of a keep_all run stay. */
void amd_run_release(amd_run *r, int v);
/* Drops the static nodes' kept outputs (exec.c): the next pass keeps its
 * own. For a pass whose shapes are not the ones that follow (a probe with a
 * batch of 1); not while a captured CUDA graph may read them. */
void amd_run_forget_static(amd_run *r);
/* Frees the tensors of the last pass (ctx is not used). */
void amd_run_clear(amd_run *r, const amd_ctx *ctx);
void amd_run_free(amd_run *r);

/* On ctx->backend (NULL: the CPU). inputs[i] feeds g->inputs[i]; its dtype and rank must match the declared
 * ones, and each fixed (non-symbolic) declared dim must match. On success
 * outputs[k] (n = g->n_outputs) hold newly allocated host tensors that the
 * caller frees. */
int amd_exec_forward(const amd_graph *g, amd_ctx *ctx, const amd_tensor *inputs, amd_tensor *outputs,
                     amd_status *st);

#endif

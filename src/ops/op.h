/* Operator descriptors: one const amd_op per ONNX operator, defined in the
 * op-family files of this folder and listed in registry.c.
 *
 * Life of a node: the loader finds the descriptor by op_type, binds the node to
 * the highest since-version <= the model's opset (node->since), and calls
 * `parse` once to turn the node's attributes (core/attr.h: plain values the
 * loader converted from the NodeProto; no op sees protobuf) into the op's own
 * struct (node->attrs, one malloc'd block). At run time the executor calls `infer` to
 * set each output's dtype and shape (input data is readable on the host: shape
 * tensors such as Reshape's second input are always host tensors), allocates
 * the outputs, then calls `forward`.
 *
 * Conventions for op implementations:
 * - in[k] is NULL for an omitted optional input (k < node->n_in).
 * - infer sets out[k].dtype / rank / dims only; forward fills out[k].data,
 *   which the executor allocated (zeroed) from those shapes.
 * - Errors on bad input (wrong rank, unsupported dtype, bad attribute) return
 *   amd_fail(st, ...) with a plain message; the executor adds the node name. */
#ifndef AMD_OP_H
#define AMD_OP_H

#include "../core/attr.h"
#include "../core/graph.h"
#include "../core/status.h"
#include "../core/tensor.h"

/* What a forward pass needs beyond the node: training flag, random state. */
typedef struct amd_ctx {
  /* training = 1: BatchNormalization uses batch statistics, Dropout drops;
   * inference = 1: running statistics, no dropout, whatever the model says;
   * neither: the model's own ONNX semantics (`run`, the conformance tests). */
  int training;
  int inference;
  uint64_t rng;           /* state for Dropout masks (splitmix64) */
  /* Executor options (ops do not read these): shapes_only runs forward only for
   * nodes with a non-float output (the shape computations), leaving float
   * tensors zero; on_node, when set, is called after each node. */
  const struct amd_backend *backend; /* NULL: the CPU backend */
  int shapes_only;
  void (*on_node)(void *user, const amd_node *n, const amd_tensor *const *in, const amd_tensor *out);
  void *user;
  /* Synchronised BatchNormalization (train --sync-bn on several ranks): when
   * set, BN in training mode sums its per-channel sums over all ranks with it
   * (in place; every rank gets the same sums). NULL: this process's batch. */
  int (*sync_stats)(void *sync_user, double *buf, int64_t n, amd_status *st);
  void *sync_user;
  /* Backends' backward functions: the inputs k whose din[k] holds unzeroed
   * memory that the backward writes over instead of adding to (set by the
   * trainer only where the backend's bwd_overwrite allows it; CPU ops never
   * see a bit set). */
  unsigned bwd_overwrite;
  /* Set by the executor (exec.c, "Add and Relu fused into their producer")
   * around one forward, in a pass without backward, for float data:
   * add_in (ops with fuses_add): output 0 is read only by an Add whose other
   * operand, add_in, has output 0's shape; the op writes the Add's result
   * (add_in + y when add_in_first, else y + add_in, y what it would have
   * written), which becomes the Add's output;
   * relu_out (ops with fuses_relu, or with add_in set): then applies the
   * Relu that alone reads that result, v < 0 ? 0 : v, which becomes the
   * Relu's output. Other ops never see them set. */
  const amd_tensor *add_in;
  int add_in_first;
  int relu_out;
} amd_ctx;

/* Relu's forward on a float (NaN and -0 pass): the Relu op's, and the one
 * ctx->relu_out asks for, so that a fused Relu gives the Relu node's bits. */
static inline float amd_relu_f(float v) { return v < 0 ? 0.0f : v; }
static inline void amd_relu_inplace(float *p, int64_t n) {
  for (int64_t i = 0; i < n; i++) p[i] = amd_relu_f(p[i]);
}

/* Op indices, in op_list.h's order: amd_ops[AMD_OP_IDX_<Name>] is
 * &amd_op_<Name>, whose idx field holds the same value (registry.c checks the
 * count, tests/loader the positions). Dispatch compares indices, not names. */
#define AMD_OP(N) AMD_OP_IDX_##N,
typedef enum amd_op_idx {
#include "op_list.h"
  AMD_OP_COUNT
} amd_op_idx;
#undef AMD_OP

typedef struct amd_op {
  const char *name;       /* ONNX op_type (default domain) */
  int idx;                /* AMD_OP_IDX_<name>: the position in amd_ops[] */
  int since[8];           /* ascending since-versions, 0-terminated */
  int (*parse)(amd_node *n, const amd_attr_list *p, amd_status *st); /* NULL: no attributes */
  int (*infer)(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st);
  int (*forward)(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                 amd_status *st);
  int is_gemm;            /* runs on the multiplier GEMM (Conv, Gemm, MatMul) */
  /* Training: given dout[k], the gradient of the loss with respect to output k
   * (NULL when none flows back to it), ACCUMULATE (+=) into din[k] the gradient
   * with respect to input k, for each k with din[k] != NULL (the autograd
   * engine passes NULL for inputs that need none, and zeroes the buffers once
   * per step). in and out are the tensors of the forward pass with the same
   * ctx (ctx->rng as it was before this node's forward). GEMM ops use
   * node->mult for both backward GEMMs. NULL: the op cannot be trained through. */
  int (*backward)(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                  const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st);
  unsigned nondiff_inputs; /* bit k set: input k never gets a gradient (shapes, indices, running stats) */
  /* Bit k set: backward never reads the DATA of input k / output k (only its
   * dtype and shape), so training may free it once the forward pass is done
   * with it (exec.c). 0, the default, keeps everything. */
  unsigned bwd_unread_in, bwd_unread_out;
  /* Bit k set: infer and forward read only the dtype and shape of input k
   * (Shape), so a host fallback need not download its data. */
  unsigned fwd_unread_in;
  /* 1: forward (on the CPU and on every backend that has it natively) honours
   * ctx->relu_out / ctx->add_in (and then ctx->relu_out). */
  int fuses_relu, fuses_add;
} amd_op;

/* Whether op's backward reads the data of input k / output k (its
 * bwd_unread_* bit clear; past bit 31 there is no bit: read). What training
 * keeps after the forward pass (exec.c) and frees during the backward walk
 * (trainer_grads.c). */
static inline int amd_op_bwd_reads_in(const amd_op *op, int k) {
  return k >= 32 || !((op->bwd_unread_in >> k) & 1u);
}
static inline int amd_op_bwd_reads_out(const amd_op *op, int k) {
  return k >= 32 || !((op->bwd_unread_out >> k) & 1u);
}

/* The table of every op (registry.c), indexed by amd_op_idx. */
extern const amd_op *const amd_ops[];
extern const int amd_op_count; /* AMD_OP_COUNT */
const amd_op *amd_op_find(const char *name);

/* ---- attribute access (attr.c) ---- */
const amd_attr *amd_attr_find(const amd_attr_list *p, const char *name);
int64_t amd_attr_int(const amd_attr_list *p, const char *name, int64_t def);
float amd_attr_float(const amd_attr_list *p, const char *name, float def);
/* Copies the string into buf (NUL-terminated, truncated to n-1); returns buf,
 * or def when absent. */
const char *amd_attr_string(const amd_attr_list *p, const char *name, const char *def, char *buf,
                            size_t n);
/* Copies up to max ints; returns how many the attribute has (-1 if absent).
 * More than max is an error reported by returning -2. */
int amd_attr_ints(const amd_attr_list *p, const char *name, int64_t *out, int max);
int amd_attr_floats(const amd_attr_list *p, const char *name, float *out, int max);
/* The attribute's tensor converted to an amd_tensor (caller frees), or 1 if absent. */
int amd_attr_tensor(const amd_attr_list *p, const char *name, amd_tensor *out, amd_status *st);

/* The auto_pad attribute of Conv and the pools. */
enum { AMD_PAD_NOTSET, AMD_PAD_SAME_UPPER, AMD_PAD_SAME_LOWER, AMD_PAD_VALID };
int amd_attr_auto_pad(const amd_attr_list *p, int *out, amd_status *st);

/* Allocates the node's zeroed attrs block of the given size. Returns the
 * block or NULL (with st set). */
void *amd_attrs_new(amd_node *n, size_t size, amd_status *st);

/* An Einsum node's equation, spaces removed (einsum.c; for the loader's
 * Einsum -> MatMul pass, src/onnx/einsum_matmul.c). */
const char *amd_einsum_equation(const amd_node *n);

/* ---- shared helpers for op files (op_util.c) ---- */
/* Normalises a possibly negative axis against rank; -1 (with st set) when out of range. */
int amd_axis(int64_t axis, int rank, amd_status *st);
/* numpy broadcasting of two shapes into out (rank and dims). */
int amd_broadcast_shape(const amd_tensor *a, const amd_tensor *b, amd_tensor *out, amd_status *st);
/* Strides (in elements) of t broadcast to out's shape: 0 on broadcast axes;
 * strides has out->rank entries. */
void amd_broadcast_strides(const amd_tensor *t, const amd_tensor *out, int64_t *strides);
/* Requires a float tensor (message names the op input). */
int amd_require_float(const amd_tensor *t, const char *what, amd_status *st);

#endif

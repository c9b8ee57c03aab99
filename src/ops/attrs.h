/* The parsed attribute structs of the ops (node->attrs) and the geometry
 * helpers that turn them into sizes, shared by the CPU op files (src/ops/) and
 * the backends that run the same nodes with their own kernels (cuda/).
 *
 * Each struct is filled once by its op's parse function at load time; the
 * geometry functions resolve it against the actual input shapes and are the
 * one definition of output sizes, windows and padding for every backend. */
#ifndef AMD_OPS_ATTRS_H
#define AMD_OPS_ATTRS_H

#ifdef __cplusplus
extern "C" {
#endif

#include "op.h"

#define AMD_SP (AMD_MAX_RANK - 2) /* at most this many spatial dimensions */

/* ---- Conv (conv.c) ---- */
typedef struct amd_conv_attrs {
  int auto_pad;
  int64_t group;
  int n_kernel, n_strides, n_dilations, n_pads; /* -1: attribute absent */
  int64_t kernel_shape[AMD_SP];
  int64_t strides[AMD_SP];
  int64_t dilations[AMD_SP];
  int64_t pads[2 * AMD_SP];
} amd_conv_attrs;

/* Everything a pass needs, resolved against the actual input shapes. */
typedef struct amd_conv_geom {
  int nsp;                        /* spatial dimensions */
  int64_t n, c, m, group, cg, mg; /* batch, channels in/out, per group */
  int64_t in[AMD_SP], k[AMD_SP], out[AMD_SP], stride[AMD_SP], dil[AMD_SP], pad0[AMD_SP];
  int64_t isize, osize, kvol; /* prod(in), prod(out), prod(k) */
} amd_conv_geom;

int amd_conv_geometry(const amd_conv_attrs *a, const amd_tensor *x, const amd_tensor *w, amd_conv_geom *g,
                      amd_status *st);

/* ---- Gemm (matmul.c) ---- */
typedef struct amd_gemm_attrs {
  float alpha, beta;
  int trans_a, trans_b;
} amd_gemm_attrs;

/* MatMul: the batch shape (broadcast of the leading dimensions) and the matrix sizes. */
typedef struct amd_mm_shape {
  int64_t M, N, K;
  amd_tensor batch_a, batch_b, batch; /* shapes only */
} amd_mm_shape;
int amd_mm_shapes(const amd_tensor *A, const amd_tensor *B, amd_mm_shape *s, amd_status *st);
/* The batch odometer of a broadcast MatMul: from batch entry idx (matrix offsets *oa, *ob into A and B;
 * sa, sb their strides from amd_broadcast_strides) to the next one in row-major order. */
static inline void amd_mm_batch_next(const amd_mm_shape *s, const int64_t *sa, const int64_t *sb, int64_t *idx,
                                     int64_t *oa, int64_t *ob) {
  for (int d = s->batch.rank - 1; d >= 0; d--) {
    idx[d]++;
    *oa += sa[d];
    *ob += sb[d];
    if (idx[d] < s->batch.dims[d]) break;
    *oa -= sa[d] * idx[d];
    *ob -= sb[d] * idx[d];
    idx[d] = 0;
  }
}

/* Row r of a row-major odometer over dims[0..nd) (the last dim fastest), for
 * a worker that starts midway: sets idx and returns the offset
 * sum idx[d] * str[d]. */
static inline int64_t amd_odometer_at(int nd, const int64_t *dims, const int64_t *str, int64_t r,
                                      int64_t *idx) {
  int64_t off = 0;
  for (int d = nd - 1; d >= 0; d--) {
    idx[d] = r % dims[d];
    r /= dims[d];
    off += idx[d] * str[d];
  }
  return off;
}

/* ---- BatchNormalization (norm.c) ---- */
typedef struct amd_bn_attrs {
  double epsilon;
  double momentum;
  int training_mode; /* opset >= 14 attribute */
  int spatial;       /* opset <= 7 attribute (default 1) */
} amd_bn_attrs;

/* 1: normalise with the batch's statistics (the single place that decides). */
int amd_bn_use_batch_stats(const amd_node *n, const amd_ctx *ctx);

/* ---- LayerNormalization (layernorm.c) ---- */
typedef struct amd_ln_attrs {
  int64_t axis;  /* first normalised axis (may be negative) */
  double epsilon;
  int stash_type; /* 1: Mean and InvStdDev are float (the only one accepted) */
} amd_ln_attrs;

/* The [rows, cols] view of X that LayerNormalization runs over (rows: the
 * product of the dims before the axis, cols: of those from it on), after
 * checking X, Scale and B (dtypes, Scale and B broadcasting to the normalised
 * shape). *full (may be NULL): 1 when Scale and B (if given) each hold cols
 * elements, so column j reads element j. */
int amd_ln_view(const amd_node *n, const amd_tensor *const *in, int64_t *rows, int64_t *cols, int *full,
                amd_status *st);

/* ---- pools (pool.c) ---- */
enum { AMD_POOL_MAX, AMD_POOL_AVG };
typedef struct amd_pool_attrs {
  int kind; /* AMD_POOL_MAX / AMD_POOL_AVG */
  int nk;   /* spatial rank, from kernel_shape */
  int64_t kernel[AMD_SP];
  int64_t strides[AMD_SP];
  int64_t dilations[AMD_SP];
  int64_t pads[2 * AMD_SP]; /* begins then ends */
  int auto_pad;
  int ceil_mode;
  int count_include_pad;
  int storage_order;
} amd_pool_attrs;

typedef struct amd_pool_geom {
  int nk;
  int64_t in[AMD_SP], out[AMD_SP];
  int64_t k[AMD_SP], s[AMD_SP], d[AMD_SP];
  int64_t pb[AMD_SP], pe[AMD_SP];
  int64_t planes, in_plane, out_plane;
} amd_pool_geom;

int amd_pool_geometry(const amd_pool_attrs *a, const amd_tensor *x, amd_pool_geom *g, amd_status *st);

/* ---- activations (activation.c) ---- */
typedef struct amd_act_attrs {
  float alpha;    /* LeakyRelu; HardSigmoid and HardSwish (the slope) */
  float beta;     /* HardSigmoid and HardSwish (the offset) */
  int tanh_approx; /* Gelu: approximate = "tanh" */
  int half_first;  /* Gelu (exact form), set by the loader only (src/onnx/rewrite.c): (x 0.5) (erf(x / sqrt 2)
                    * + 1),  the order of the chain it replaced, instead of (x (erf(x / sqrt 2) + 1)) 0.5 */
  float min, max; /* Clip before opset 11 */
} amd_act_attrs;

/* ---- activations and unary math (unary.c) ---- */
typedef struct amd_unary_attrs {
  float alpha;                /* Elu, Celu, ThresholdedRelu, Selu (with gamma) */
  float gamma;                /* Selu */
  float lambd, bias;          /* Shrink */
  int detect_pos, detect_neg; /* IsInf */
} amd_unary_attrs;

/* ---- Add, Sub, Mul, Div (elementwise.c) ---- */
typedef struct amd_ew_attrs {
  int legacy;    /* node binds to opset < 7 */
  int broadcast; /* legacy broadcast attribute */
  int has_axis;
  int64_t axis; /* legacy axis attribute */
} amd_ew_attrs;

/* The B operand as numpy broadcasting sees it (the legacy forms place B's
 * dims inside a rank-of-A shape of ones); data is b's. */
int amd_ew_operand_b(const amd_node *n, const amd_tensor *a, const amd_tensor *b, amd_tensor *bv,
                     amd_status *st);

/* ---- Softmax, LogSoftmax (softmax.c) ---- */
typedef struct amd_sm_attrs {
  int64_t axis;
} amd_sm_attrs;

/* The [outer, len, inner] view of x that the softmax runs over. */
int amd_sm_view(const amd_node *n, const amd_tensor *x, int64_t *outer, int64_t *len, int64_t *inner,
                amd_status *st);

/* ---- CumSum (softmax.c) ---- */
typedef struct amd_cumsum_attrs {
  int exclusive, reverse;
} amd_cumsum_attrs;

/* The [outer, len, inner] view of in[0] around the axis that input 1 (an
 * int32 / int64 scalar on the host) names. */
int amd_cumsum_view(const amd_tensor *const *in, int64_t *outer, int64_t *len, int64_t *inner,
                    amd_status *st);

/* ---- LRN (lrn.c) ---- */
typedef struct amd_lrn_attrs {
  double alpha, beta, bias;
  int64_t size;
} amd_lrn_attrs;

/* ---- the reductions ReduceMean ... ReduceSumSquare (reduce.c) ---- */
typedef struct amd_red_attrs {
  int keepdims;
  int noop_with_empty_axes;
  int axes_from_input; /* this version takes axes as input 1 */
  int n_axes;          /* -1: attribute absent */
  int64_t axes[AMD_MAX_RANK];
} amd_red_attrs;

/* Which dims are reduced (mask[d] = 1). Returns 1 when the node is a no-op
 * (empty axes with noop_with_empty_axes), 0 otherwise, -1 on error. */
int amd_red_mask(const amd_node *n, const amd_tensor *const *in, int *mask, amd_status *st);

/* ---- InstanceNormalization, MeanVarianceNormalization, LpNormalization (instnorm.c) ---- */
typedef struct amd_grp_attrs {
  double epsilon; /* InstanceNormalization */
  int n_axes;     /* MeanVarianceNormalization */
  int64_t axes[AMD_MAX_RANK];
  int64_t axis; /* LpNormalization */
  int p;
} amd_grp_attrs;

/* mask[d] = 1 for the dims a group spans (checks the rank and the axes). */
int amd_grp_mask(const amd_node *n, const amd_tensor *x, int *mask, amd_status *st);

/* ---- NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss (loss.c) ---- */
enum { AMD_LOSS_NONE, AMD_LOSS_SUM, AMD_LOSS_MEAN };
typedef struct amd_loss_attrs {
  int reduction;
  int has_ii;
  int64_t ignore_index;
} amd_loss_attrs;

/* The input as [n, c, d] (d: the product of the trailing axes), after
 * checking input, target and weight. */
typedef struct amd_loss_geom {
  int64_t n, c, d;
} amd_loss_geom;
int amd_loss_check(const amd_node *n, const amd_tensor *const *in, amd_loss_geom *g, amd_status *st);
/* Each of the n * d positions' class cls[p] (-1: ignored) and weight wt[p]
 * (the weight input, on the host, or 1), and their sum *wsum; a target out of
 * range fails. */
int amd_loss_targets(const amd_node *n, const amd_tensor *const *in, const amd_loss_geom *g, int64_t *cls,
                     double *wt, double *wsum, amd_status *st);

/* ---- shape ops (shape.c) ---- */
/* A single int64 axis attribute (Flatten, Concat, Gather). */
typedef struct amd_axis_attrs {
  int64_t axis;
} amd_axis_attrs;

typedef struct amd_dropout_attrs {
  float ratio;     /* opset < 12: the attribute; later the optional input 1 */
  int ratio_const; /* opset >= 12: input 1 is a constant scalar (a Constant node's or an
                    * initializer), read into ratio at load (onnx/load.c), so that a GPU
                    * step need not copy it back from device memory */
} amd_dropout_attrs;

/* The tensor of a Constant node (constant.c); NULL for another op. */
const amd_tensor *amd_constant_tensor(const amd_node *n);

/* The ratio and whether this pass drops (reads input 2, and input 1 unless
 * ratio_const, on the host). */
void amd_dropout_mode(const amd_node *n, const amd_ctx *ctx, const amd_tensor *const *in, double *ratio,
                      int *training);

/* ---- Slice, Split (slice.c); Expand, Tile (expand.c) ---- */
/* A strided view of a contiguous tensor x: element (i_0, .., i_{rank-1}) of
 * the view is x[base + sum_j i_j * str[j]] (strides in elements, 0 on
 * broadcast axes, negative for negative steps). Its elements in row-major
 * order are the op's output. Tile's view has two axes per input axis. */
#define AMD_VIEW_RANK (2 * AMD_MAX_RANK)
typedef struct amd_view {
  int rank;
  int64_t base;
  int64_t dims[AMD_VIEW_RANK], str[AMD_VIEW_RANK];
} amd_view;

/* Drops the axes of size 1 and merges neighbours a, a+1 where str[a] ==
 * str[a+1] * dims[a+1] (the same elements in the same order, fewer axes);
 * returns the new rank. Leaves an empty view (a 0 in dims) as it is. */
int amd_dims_simplify(int rank, int64_t *dims, int64_t *str);

/* Slice: the output as a view of in[0] (its dims are the output's shape),
 * from the attributes (opset 1) or inputs 1..4 (read on the host). */
int amd_slice_view(const amd_node *n, const amd_tensor *const *in, amd_view *v, amd_status *st);
/* Split: output k as a view of in[0] (split sizes from the attribute, input
 * 1 on the host, num_outputs or equal parts). */
int amd_split_view(const amd_node *n, const amd_tensor *const *in, int k, amd_view *v, amd_status *st);
/* Transpose (shape.c): the output as a view of x (a permutation of its axes). */
int amd_transpose_view(const amd_node *n, const amd_tensor *x, amd_view *v, amd_status *st);

/* Expand and Tile (x broadcast or repeated into y): forward gathers the view
 * fwd of x; backward sums, for each element of x, the elements of dY at
 * offset sum_a c_a * xstr[a] (c: the element's coordinates over xdims) plus
 * every offset of the broadcast positions (rdims, rstr; rcount of them, in
 * row-major order, which is the order of dY). Axes simplified. */
typedef struct amd_bcast_geom {
  amd_view fwd;
  int xrank, rrank;
  int64_t xdims[AMD_MAX_RANK], xstr[AMD_MAX_RANK];
  int64_t rdims[AMD_VIEW_RANK], rstr[AMD_VIEW_RANK];
  int64_t rcount;
} amd_bcast_geom;
/* From the shapes of x and y = Expand(x) / Tile(x) (as infer set them). */
void amd_expand_geometry(const amd_tensor *x, const amd_tensor *y, amd_bcast_geom *g);
void amd_tile_geometry(const amd_tensor *x, const amd_tensor *y, amd_bcast_geom *g);

#ifdef __cplusplus
}
#endif

#endif

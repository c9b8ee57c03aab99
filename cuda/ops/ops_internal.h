/* Shared by the files of cuda/ops/ (not by the rest of cuda/): the native CUDA
 * forward and backward kernels of the ops the exported CNNs use.
 *
 * cuda/ops/<family>.cu mirrors src/ops/<family>.c: each op uses the same
 * attribute structs from src/ops/attrs.h, the same geometry functions, the
 * same formulas and, where cheap, the same summation order and precision
 * (double sums where the CPU sums in double). Backward functions ACCUMULATE
 * (+=) into din, as op.h requires. dispatch.cu maps an op index to its
 * family's entry points (amd_cu_find_op, amd_cu_node_ok); op_util.cu holds
 * the kernels that several families launch.
 *
 * nvcc compiles each .cu on its own (no relocatable device code), so device
 * helpers that several files use are defined here, inline. */
#ifndef AMD_CUDA_OPS_INTERNAL_H
#define AMD_CUDA_OPS_INTERNAL_H

#include <float.h>
#include <math.h>
#include <string.h>

#include <type_traits>

#include "../cuda_internal.h"
/* splitmix64 (the draws of Dropout and the random ops, the same as the CPU's:
 * amd_splitmix_at) and the random ops' attributes */
#include "../../src/ops/random.h"

#define FWD_ARGS const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out, amd_status *st
#define BWD_ARGS                                                                                             \
  const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,                       \
      const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st

static inline float *F(const amd_tensor *t) { return t ? (float *)t->data : NULL; }

/* A scratch buffer from the caching allocator, released at scope end. */
struct scratch {
  void *p = NULL;
  ~scratch() {
    if (p) amd_cu_free(p);
  }
  int get(size_t bytes, amd_status *st) { return amd_cu_malloc(&p, bytes ? bytes : 4, st); }
  float *f() { return (float *)p; }
  double *d() { return (double *)p; }
};

/* V consecutive floats as one load or store: float4 (16 bytes) or float */
template <int V> using vecf = typename std::conditional<V == 4, float4, float>::type;
__device__ __forceinline__ float vec_add(float v, float b) { return v + b; }
__device__ __forceinline__ float4 vec_add(float4 v, float b) {
  return make_float4(v.x + b, v.y + b, v.z + b, v.w + b);
}
__device__ __forceinline__ float4 vec_add(float4 v, float4 b) {
  return make_float4(v.x + b.x, v.y + b.y, v.z + b.z, v.w + b.w);
}
/* Relu's forward (NaN and -0 pass), for a Relu fused into its producer (ctx->relu_out) */
__device__ __forceinline__ float vec_relu(float v) { return v < 0 ? 0.0f : v; }
__device__ __forceinline__ float4 vec_relu(float4 v) {
  return make_float4(vec_relu(v.x), vec_relu(v.y), vec_relu(v.z), vec_relu(v.w));
}

static inline bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* A backward's gradient buffers: accumulated into (+=), or where the trainer
 * allows it (ctx->bwd_overwrite, amd_cu_op.bwd_overwrite) written over their
 * unzeroed memory; then an element is 0 + v, the same bits as adding to a
 * zeroed buffer. acc_of: whether din[k] is added to. */
static inline bool acc_of(const amd_ctx *ctx, int k) { return !(ctx && ((ctx->bwd_overwrite >> k) & 1u)); }

/* d[i] += s[i] for n floats, or (!acc) d[i] = 0 + s[i] (op_util.cu) */
int add_into(float *d, const float *s, int64_t n, amd_status *st, bool acc = true);
/* A row-major R x C matrix x summed in double over its rows, d[c] += scale *
 * (float)sum (column sums: a bias over rows), or over its columns, d[r] +=
 * scale * (float)sum (row sums); in a fixed order, so runs repeat exactly
 * (op_util.cu) */
int col_sum_into(const float *x, int64_t R, int64_t C, float scale, float *d, amd_status *st);
int row_sum_into(const float *x, int64_t R, int64_t C, float scale, float *d, amd_status *st);
/* The second step of column sums: d[c] = (acc ? d[c] : 0) + scale * (float)
 * the sum of part[k][c] over k < slices, in a fixed order */
int col_partials_total(const double *part, int64_t slices, int64_t C, float scale, bool acc, float *d,
                       amd_status *st);

/* Index arithmetic in I: int when every index fits (the common case; 64-bit
 * division is several times slower on the GPU), int64_t otherwise. */
#define AMD_CU_LOOP_I(I, i, n)                                                                               \
  for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < (I)(n); i += (I)gridDim.x * (I)blockDim.x)
static inline bool fits32(int64_t n) { return n < ((int64_t)1 << 31) - ((int64_t)1 << 24); }

/* ---- per-channel sums (BatchNormalization; Conv's bias gradient) ---- */

/* Per-channel sums over an NCHW tensor, [batch][ch][sp], in two launches so
 * that the whole GPU works on them (one block per channel left most of the
 * SMs idle for the wide early layers): k_chan_partial gives each
 * (channel, slice) block a contiguous slice of the channel's batch x sp
 * elements and writes its sums in double; the caller's finalize kernel adds
 * a channel's slices in slice order. The slicing depends only on the shape,
 * so the sums are reproducible (no atomics).
 *
 * Sums, with the shift K = the channel's first element, or shift[c] when
 * given (so that a mean far from zero costs no precision in the variance;
 * ranks that add their sums share a shift):
 *   part[.., 0] = sum (x - K)      part[.., 1] = sum (x - K)^2
 *   part[.., 2] = sum dy           part[.., 3] = sum dy (x - K)
 * x or dy may be NULL: their sums are then not computed (left 0). */
enum { CHAN_SUMS = 4, CHAN_THREADS = 256 };

struct chan_slicing {
  int64_t batch, ch, sp, cnt; /* cnt = batch * sp elements per channel */
  int slices;
  const float *shift; /* per channel (device), or NULL: each channel's first element */
};

/* the shift K of channel c */
__device__ __forceinline__ double chan_shift(const chan_slicing &s, const float *x, int64_t c) {
  return s.shift ? (double)s.shift[c] : (x ? (double)x[c * s.sp] : 0.0);
}

static inline chan_slicing chan_slices(int64_t batch, int64_t ch, int64_t sp) {
  chan_slicing s;
  s.batch = batch, s.ch = ch, s.sp = sp, s.cnt = batch * sp, s.shift = NULL;
  /* about 8 resident blocks per SM on 132 SMs, and at least 2048 elements a block */
  int64_t want = (1056 + ch - 1) / ch, most = (s.cnt + 2047) / 2048;
  if (want > most) want = most;
  if (want > 256) want = 256;
  s.slices = want < 1 ? 1 : (int)want;
  return s;
}

/* Launches k_chan_partial into part (ch * slices * CHAN_SUMS doubles; op_util.cu). */
int chan_partial(const chan_slicing &s, const float *x, const float *dy, double *part, amd_status *st);

/* A channel's sums: its slices added in order. */
__device__ __forceinline__ void chan_total(const double *part, int64_t c, int slices, double t[CHAN_SUMS]) {
  for (int k = 0; k < CHAN_SUMS; k++) t[k] = 0;
  for (int sl = 0; sl < slices; sl++)
    for (int k = 0; k < CHAN_SUMS; k++) t[k] += part[(c * slices + sl) * CHAN_SUMS + k];
}

/* out[c] += the sum of v[batch][c][sp] over batch and sp (a bias gradient; op_util.cu). */
int channel_sum_into(int64_t batch, int64_t ch, int64_t sp, const float *v, float *out, amd_status *st);

/* the product of d[from..to) */
static inline int64_t prod(const int64_t *d, int from, int to) {
  int64_t p = 1;
  for (int i = from; i < to; i++) p *= d[i];
  return p;
}

/* ---- the families' entry points (dispatch.cu's table): forward and backward
 * with the signatures of amd_backend.forward / backward; supported: whether
 * the kernels handle a node beyond float data inputs (amd_cu_supports_fn) ---- */

/* conv.cu */
int conv_forward(FWD_ARGS);
int conv_backward(BWD_ARGS);
int conv_supported(const amd_node *n, const amd_tensor *const *in);
/* matmul.cu */
int gemm_forward(FWD_ARGS);
int gemm_backward(BWD_ARGS);
int matmul_forward(FWD_ARGS);
int matmul_backward(BWD_ARGS);
/* norm.cu */
int bn_forward(FWD_ARGS);
int bn_backward(BWD_ARGS);
int bn_supported(const amd_node *n, const amd_tensor *const *in);
/* layernorm.cu */
int layernorm_forward(FWD_ARGS);
int layernorm_backward(BWD_ARGS);
int layernorm_supported(const amd_node *n, const amd_tensor *const *in);
/* activation.cu: Relu, LeakyRelu, Sigmoid, HardSigmoid, HardSwish, Tanh, Clip, Erf, Gelu, Exp, Log, Sqrt, Neg, Abs,
 * Reciprocal and unary.c's float ops */
int act_forward(FWD_ARGS);
int act_backward(BWD_ARGS);
/* pool.cu: MaxPool and AveragePool (pool_), the global pools (global_) */
int pool_forward(FWD_ARGS);
int pool_backward(BWD_ARGS);
int pool_supported(const amd_node *n, const amd_tensor *const *in);
int global_forward(FWD_ARGS);
int global_backward(BWD_ARGS);
/* elementwise.cu: Add, Sub, Mul, Div, Pow, Min, Max, Sum and Mean (the last four: two inputs, minmax_supported),
 * PRelu */
int ew_forward(FWD_ARGS);
int ew_backward(BWD_ARGS);
int minmax_supported(const amd_node *n, const amd_tensor *const *in);
/* logic.cu: Where (the condition read on the host) */
int where_forward(FWD_ARGS);
int where_backward(BWD_ARGS);
/* softmax.cu: Softmax, LogSoftmax; CumSum (the axis on the host) */
int sm_forward(FWD_ARGS);
int sm_backward(BWD_ARGS);
int cumsum_forward(FWD_ARGS);
int cumsum_backward(BWD_ARGS);
/* shape.cu: the copies (Flatten, Reshape, Identity, Squeeze, Unsqueeze), Concat, Dropout,
 * Transpose, Gather (float data; the indices read on the host) */
int copy_forward(FWD_ARGS);
int copy_backward(BWD_ARGS);
int concat_forward(FWD_ARGS);
int concat_backward(BWD_ARGS);
int pad_forward(FWD_ARGS);
int pad_backward(BWD_ARGS);
int pad_supported(const amd_node *n, const amd_tensor *const *in);
int dropout_forward(FWD_ARGS);
int dropout_backward(BWD_ARGS);
int dropout_supported(const amd_node *n, const amd_tensor *const *in);
unsigned dropout_host_inputs(const amd_node *n);
int transpose_forward(FWD_ARGS);
int transpose_backward(BWD_ARGS);
int gather_forward(FWD_ARGS);
int gather_backward(BWD_ARGS);
/* random.cu: RandomUniform, RandomNormal, RandomUniformLike, RandomNormalLike, Bernoulli (float outputs) */
int random_forward(FWD_ARGS);
int random_backward(BWD_ARGS);
int random_supported(const amd_node *n, const amd_tensor *const *in);
/* reduce.cu: ReduceMean, ReduceSum, ReduceMax, ReduceMin, ReduceSumSquare, ReduceL2, ReduceLogSumExp,
 * ReduceL1, ReduceLogSum, ReduceProd over adjacent axes */
int red_forward(FWD_ARGS);
int red_backward(BWD_ARGS);
int red_supported(const amd_node *n, const amd_tensor *const *in);
/* instnorm.cu: InstanceNormalization (in_); MeanVarianceNormalization and LpNormalization (grp_) */
int in_forward(FWD_ARGS);
int in_backward(BWD_ARGS);
int in_supported(const amd_node *n, const amd_tensor *const *in);
int grp_forward(FWD_ARGS);
int grp_backward(BWD_ARGS);
/* lrn.cu: LRN */
int lrn_forward(FWD_ARGS);
int lrn_backward(BWD_ARGS);
int lrn_supported(const amd_node *n, const amd_tensor *const *in);
/* loss.cu: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss (target and weight on the host) */
int loss_forward(FWD_ARGS);
int loss_backward(BWD_ARGS);
/* slice.cu: Slice, Split, and Expand and Tile (bcast_) */
int slice_forward(FWD_ARGS);
int slice_backward(BWD_ARGS);
int split_forward(FWD_ARGS);
int split_backward(BWD_ARGS);
/* y = the view v of x (xcount elements); scatter: dx[view] += dy instead
 * (the view's offsets must be distinct). Transpose uses it too. */
int view_launch(const amd_view &v, int64_t xcount, const float *src, float *dst, bool scatter, amd_status *st);
int bcast_forward(FWD_ARGS);
int bcast_backward(BWD_ARGS);
/* index.cu: GatherND and GatherElements (gathernd_; indices on the host), ScatterElements, Scatter and
 * ScatterND (scatter_; float data and updates, indices on the host), Trilu (k on the host), DepthToSpace
 * and SpaceToDepth (space_) */
int gathernd_forward(FWD_ARGS);
int gathernd_backward(BWD_ARGS);
int scatter_forward(FWD_ARGS);
int scatter_backward(BWD_ARGS);
int trilu_forward(FWD_ARGS);
int trilu_backward(BWD_ARGS);
int space_forward(FWD_ARGS);
int space_backward(BWD_ARGS);
/* q8f.cu: the internal ops Conv[q8f], Gemm[q8f], MatMul[q8f] of the 8-bit table modes (idx -1: found by
 * their descriptor; NULL for any other op) */
const amd_cu_op *q8f_find_op(const amd_op *op);

#endif

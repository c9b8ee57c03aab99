/* The CUDA backend's native ops by op index (amd_op_idx): each op's forward,
 * backward and supported functions from its family file (cuda/ops/<family>.cu
 * mirrors src/ops/<family>.c), the inputs it reads on the host and the input
 * gradients its backward writes over. */
#include "ops_internal.h"

/* The native ops by op index (amd_op_idx); an entry without forward is a
 * host fallback. Fields: forward, backward, host_inputs, bwd_overwrite (the
 * inputs whose gradient the backward can write over, see acc_of), supports,
 * host_inputs_of (where the inputs read on the host depend on the node). */
struct cu_op_table {
  amd_cu_op at[AMD_OP_COUNT];
};

static constexpr cu_op_table cu_op_table_make() {
  cu_op_table t{};
  t.at[AMD_OP_IDX_Conv] = {conv_forward, conv_backward, 0, 0x1u, conv_supported, NULL};
  t.at[AMD_OP_IDX_Gemm] = {gemm_forward, gemm_backward, 0, 0, NULL, NULL};
  t.at[AMD_OP_IDX_MatMul] = {matmul_forward, matmul_backward, 0, 0, NULL, NULL};
  t.at[AMD_OP_IDX_BatchNormalization] = {bn_forward, bn_backward, 0, 0x1u, bn_supported, NULL};
  t.at[AMD_OP_IDX_LayerNormalization] = {layernorm_forward, layernorm_backward, 0, 0x7u, layernorm_supported, NULL};
  t.at[AMD_OP_IDX_InstanceNormalization] = {in_forward, in_backward, 0, 0, in_supported, NULL};
  t.at[AMD_OP_IDX_MeanVarianceNormalization] = {grp_forward, grp_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_LpNormalization] = {grp_forward, grp_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_LRN] = {lrn_forward, lrn_backward, 0, 0x1u, lrn_supported, NULL};
  t.at[AMD_OP_IDX_Relu] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_LeakyRelu] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Sigmoid] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_HardSigmoid] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_HardSwish] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Tanh] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Erf] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Gelu] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Exp] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Log] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Sqrt] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Neg] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Abs] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Reciprocal] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Clip] = {act_forward, act_backward, 0x6u, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Elu] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Selu] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Celu] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Softplus] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Softsign] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_ThresholdedRelu] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Mish] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Shrink] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Ceil] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Floor] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Round] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Sign] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Sin] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Cos] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Tan] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Asin] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Acos] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Atan] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Sinh] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Cosh] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Asinh] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Acosh] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Atanh] = {act_forward, act_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_MaxPool] = {pool_forward, pool_backward, 0, 0, pool_supported, NULL};
  t.at[AMD_OP_IDX_AveragePool] = {pool_forward, pool_backward, 0, 0, pool_supported, NULL};
  t.at[AMD_OP_IDX_GlobalAveragePool] = {global_forward, global_backward, 0, 0, NULL, NULL};
  t.at[AMD_OP_IDX_GlobalMaxPool] = {global_forward, global_backward, 0, 0, NULL, NULL};
  t.at[AMD_OP_IDX_Add] = {ew_forward, ew_backward, 0, 0x3u, NULL, NULL};
  t.at[AMD_OP_IDX_Sub] = {ew_forward, ew_backward, 0, 0x3u, NULL, NULL};
  t.at[AMD_OP_IDX_Mul] = {ew_forward, ew_backward, 0, 0x3u, NULL, NULL};
  t.at[AMD_OP_IDX_Div] = {ew_forward, ew_backward, 0, 0x3u, NULL, NULL};
  t.at[AMD_OP_IDX_Pow] = {ew_forward, ew_backward, 0, 0x3u, NULL, NULL};
  t.at[AMD_OP_IDX_Min] = {ew_forward, ew_backward, 0, 0x3u, minmax_supported, NULL};
  t.at[AMD_OP_IDX_Max] = {ew_forward, ew_backward, 0, 0x3u, minmax_supported, NULL};
  t.at[AMD_OP_IDX_Sum] = {ew_forward, ew_backward, 0, 0x3u, minmax_supported, NULL};
  t.at[AMD_OP_IDX_Mean] = {ew_forward, ew_backward, 0, 0x3u, minmax_supported, NULL};
  t.at[AMD_OP_IDX_PRelu] = {ew_forward, ew_backward, 0, 0x3u, NULL, NULL};
  t.at[AMD_OP_IDX_Where] = {where_forward, where_backward, 0x1u, 0x6u, NULL, NULL};
  t.at[AMD_OP_IDX_Flatten] = {copy_forward, copy_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Reshape] = {copy_forward, copy_backward, 0x2u, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Identity] = {copy_forward, copy_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Squeeze] = {copy_forward, copy_backward, 0x2u, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Unsqueeze] = {copy_forward, copy_backward, 0x2u, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Concat] = {concat_forward, concat_backward, 0, 0, NULL, NULL};
  t.at[AMD_OP_IDX_Transpose] = {transpose_forward, transpose_backward, 0, 0, NULL, NULL};
  t.at[AMD_OP_IDX_Gather] = {gather_forward, gather_backward, 0x2u, 0, NULL, NULL};
  t.at[AMD_OP_IDX_GatherND] = {gathernd_forward, gathernd_backward, 0x2u, 0, NULL, NULL};
  t.at[AMD_OP_IDX_GatherElements] = {gathernd_forward, gathernd_backward, 0x2u, 0, NULL, NULL};
  t.at[AMD_OP_IDX_ScatterElements] = {scatter_forward, scatter_backward, 0x2u, 0, NULL, NULL};
  t.at[AMD_OP_IDX_Scatter] = {scatter_forward, scatter_backward, 0x2u, 0, NULL, NULL};
  t.at[AMD_OP_IDX_ScatterND] = {scatter_forward, scatter_backward, 0x2u, 0, NULL, NULL};
  t.at[AMD_OP_IDX_Trilu] = {trilu_forward, trilu_backward, 0x2u, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_DepthToSpace] = {space_forward, space_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_SpaceToDepth] = {space_forward, space_backward, 0, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Softmax] = {sm_forward, sm_backward, 0, 0, NULL, NULL};
  t.at[AMD_OP_IDX_LogSoftmax] = {sm_forward, sm_backward, 0, 0, NULL, NULL};
  t.at[AMD_OP_IDX_CumSum] = {cumsum_forward, cumsum_backward, 0x2u, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_NegativeLogLikelihoodLoss] = {loss_forward, loss_backward, 0x6u, 0, NULL, NULL};
  t.at[AMD_OP_IDX_SoftmaxCrossEntropyLoss] = {loss_forward, loss_backward, 0x6u, 0, NULL, NULL};
  t.at[AMD_OP_IDX_Pad] = {pad_forward, pad_backward, 0xEu, 0x1u, pad_supported, NULL};
  t.at[AMD_OP_IDX_Dropout] = {dropout_forward, dropout_backward, 0x6u, 0, dropout_supported,
                              dropout_host_inputs};
  t.at[AMD_OP_IDX_RandomUniform] = {random_forward, random_backward, 0, 0, random_supported, NULL};
  t.at[AMD_OP_IDX_RandomNormal] = {random_forward, random_backward, 0, 0, random_supported, NULL};
  t.at[AMD_OP_IDX_RandomUniformLike] = {random_forward, random_backward, 0, 0, random_supported, NULL};
  t.at[AMD_OP_IDX_RandomNormalLike] = {random_forward, random_backward, 0, 0, random_supported, NULL};
  t.at[AMD_OP_IDX_Bernoulli] = {random_forward, random_backward, 0, 0, random_supported, NULL};
  t.at[AMD_OP_IDX_ReduceMean] = {red_forward, red_backward, 0x2u, 0, red_supported, NULL};
  t.at[AMD_OP_IDX_ReduceSum] = {red_forward, red_backward, 0x2u, 0, red_supported, NULL};
  t.at[AMD_OP_IDX_ReduceMax] = {red_forward, red_backward, 0x2u, 0, red_supported, NULL};
  t.at[AMD_OP_IDX_ReduceSumSquare] = {red_forward, red_backward, 0x2u, 0, red_supported, NULL};
  t.at[AMD_OP_IDX_ReduceL2] = {red_forward, red_backward, 0x2u, 0, red_supported, NULL};
  t.at[AMD_OP_IDX_ReduceMin] = {red_forward, red_backward, 0x2u, 0, red_supported, NULL};
  t.at[AMD_OP_IDX_ReduceLogSumExp] = {red_forward, red_backward, 0x2u, 0, red_supported, NULL};
  t.at[AMD_OP_IDX_ReduceL1] = {red_forward, red_backward, 0x2u, 0, red_supported, NULL};
  t.at[AMD_OP_IDX_ReduceLogSum] = {red_forward, red_backward, 0x2u, 0, red_supported, NULL};
  t.at[AMD_OP_IDX_ReduceProd] = {red_forward, red_backward, 0x2u, 0, red_supported, NULL};
  t.at[AMD_OP_IDX_Slice] = {slice_forward, slice_backward, 0x1eu, 0, NULL, NULL};
  t.at[AMD_OP_IDX_Split] = {split_forward, split_backward, 0x2u, 0, NULL, NULL};
  t.at[AMD_OP_IDX_Expand] = {bcast_forward, bcast_backward, 0x2u, 0x1u, NULL, NULL};
  t.at[AMD_OP_IDX_Tile] = {bcast_forward, bcast_backward, 0x2u, 0x1u, NULL, NULL};
  return t;
}

static constexpr cu_op_table cu_ops = cu_op_table_make();

const amd_cu_op *amd_cu_find_op(const amd_node *n) {
  const int i = n->op->idx;
  if (i < 0) return q8f_find_op(n->op); /* internal ops: the q8 modes' float nodes (q8f.cu) */
  if ( i >= AMD_OP_COUNT || !cu_ops.at[i].forward) return NULL;
  return &cu_ops.at[i];
}

extern "C" int amd_cuda_has_kernel(int op_idx) {
  return op_idx >= 0 && op_idx < AMD_OP_COUNT && cu_ops.at[op_idx].forward != NULL;
}

static int is_f32(const amd_tensor *t) { return !t || t->dtype == AMD_FLOAT; }

int amd_cu_node_ok(const amd_node *n, const amd_tensor *const *in) {
  const amd_cu_op *e = amd_cu_find_op(n);
  if (!e) return 0;
  /* every data input float (the host-staged ones are read on the host) */
  if (in)
    for (int k = 0; k < n->n_in; k++)
      if (!((e->host_inputs >> k) & 1) && !is_f32(in[k])) return 0;
  return !e->supports || e->supports(n, in);
}

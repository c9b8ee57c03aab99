/* Every op the project implements, as X-macro entries AMD_OP(OnnxName). The
 * order gives each op its index: AMD_OP_IDX_<OnnxName> (op.h), its position in
 * amd_ops[] (registry.c) and its descriptor's idx; dispatch compares indices.
 * Each entry is defined as `const amd_op amd_op_<OnnxName>` in one op-family file
 * (the CUDA kernels of a family, where there are some, in cuda/ops/<family>.cu):
 *   conv.c: Conv                      matmul.c: Gemm MatMul
 *   norm.c: BatchNormalization        lrn.c: LRN
 *   layernorm.c: LayerNormalization
 *   pool.c: MaxPool AveragePool GlobalAveragePool GlobalMaxPool
 *   activation.c: Relu ... Reciprocal elementwise.c: Add Sub Mul Div
 *   reduce.c: ReduceMean ReduceSum ReduceMax   softmax.c: Softmax LogSoftmax
 *   shape.c: Flatten ... Dropout   constant.c: Constant Cast   pad.c: Pad */
AMD_OP(Conv)
AMD_OP(Gemm)
AMD_OP(MatMul)
AMD_OP(BatchNormalization)
AMD_OP(LayerNormalization)
AMD_OP(LRN)
AMD_OP(MaxPool)
AMD_OP(AveragePool)
AMD_OP(GlobalAveragePool)
AMD_OP(GlobalMaxPool)
AMD_OP(Relu)
AMD_OP(LeakyRelu)
AMD_OP(PRelu)
AMD_OP(Sigmoid)
AMD_OP(HardSigmoid)
AMD_OP(HardSwish)
AMD_OP(Gelu)
AMD_OP(Erf)
AMD_OP(Tanh)
AMD_OP(Clip)
AMD_OP(Exp)
AMD_OP(Log)
AMD_OP(Sqrt)
AMD_OP(Neg)
AMD_OP(Abs)
AMD_OP(Reciprocal)
AMD_OP(Add)
AMD_OP(Sub)
AMD_OP(Mul)
AMD_OP(Div)
AMD_OP(ReduceMean)
AMD_OP(ReduceSum)
AMD_OP(ReduceMax)
AMD_OP(Softmax)
AMD_OP(LogSoftmax)
AMD_OP(Flatten)
AMD_OP(Reshape)
AMD_OP(Transpose)
AMD_OP(Squeeze)
AMD_OP(Unsqueeze)
AMD_OP(Concat)
AMD_OP(Shape)
AMD_OP(Gather)
AMD_OP(Identity)
AMD_OP(Constant)
AMD_OP(Cast)
AMD_OP(Dropout)
AMD_OP(Pad)

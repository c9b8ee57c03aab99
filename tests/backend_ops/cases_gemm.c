/* Cases of the GEMM ops (Conv, Gemm, MatMul): each in acc32, am16 and am16
 * on the exact tier (forward and both backward GEMMs); tolerance 2e-4, the
 * sums run in another order. Then the fused forms of passes without
 * backward (ctx->relu_out, ctx->add_in; src/exec/exec.c): a Relu fused into
 * Conv and Add, an Add (and its Relu) into Conv, forward only in acc32,
 * against the CPU doing the same: the im2col path's output reordering
 * (16-byte and 4-byte), the pointwise path's pass over its output (bias,
 * Add, Relu, or some of them), Add's same-shape and broadcast kernels. */
#include "harness.h"

#define GEMM .tol = 2e-4, .modes = HC_GEMM_MODES
#define FUSED .inference = 1, .relu_out = 1, .tol = 2e-4

/* clang-format off */
static const hc_case cases[] = {
    /* Conv */
    {.op = "Conv", .opset = 13, .note = "3x3 pad 1, bias",
     .in = {F32("2,3,9,9", -1, 1), F32("4,3,3,3", -1, 1), F32("4", -1, 1)},
     .attr = {A_INTS("pads", "1,1,1,1")}, .grad = 7, GEMM},
    {.op = "Conv", .opset = 13,
     .note = "3x3 pad 1, bias, 16x16: 16-byte copies of the output, im2col rows over several blocks",
     .in = {F32("20,4,16,16", -1, 1), F32("8,4,3,3", -1, 1), F32("8", -1, 1)},
     .attr = {A_INTS("pads", "1,1,1,1")}, .grad = 7, GEMM},
    {.op = "Conv", .opset = 13, .note = "stride 2,1, dilation 2,1, asymmetric pads, group 2",
     .in = {F32("3,4,11,10", -1, 1), F32("6,2,3,2", -1, 1)},
     .attr = {A_INTS("strides", "2,1"), A_INTS("dilations", "2,1"), A_INTS("pads", "1,0,2,1"),
              A_INT("group", 2)}, .grad = 3, GEMM},
    {.op = "Conv", .opset = 13, .note = "depthwise 3x3 stride 2 pad 1, bias",
     .in = {F32("2,5,8,8", -1, 1), F32("5,1,3,3", -1, 1), F32("5", -1, 1)},
     .attr = {A_INTS("strides", "2,2"), A_INTS("pads", "1,1,1,1"), A_INT("group", 5)}, .grad = 7, GEMM},
    {.op = "Conv", .opset = 13, .note = "3x3 stride 2 pad 1 on 9x9 (the data gradient's stride-2 3x3 form)",
     .in = {F32("2,3,9,9", -1, 1), F32("4,3,3,3", -1, 1)},
     .attr = {A_INTS("strides", "2,2"), A_INTS("pads", "1,1,1,1")}, .grad = 3, GEMM},
    {.op = "Conv", .opset = 13, .note = "1x1", .in = {F32("2,8,5,5", -1, 1), F32("16,8,1,1", -1, 1)},
     .grad = 3, GEMM},
    {.op = "Conv", .opset = 13, .note = "1x1 stride 2 on 9x8 (a downsampling shortcut: the stride-2 1x1 form)",
     .in = {F32("2,6,9,8", -1, 1), F32("10,6,1,1", -1, 1)}, .attr = {A_INTS("strides", "2,2")}, .grad = 3,
     GEMM},
    {.op = "Conv", .opset = 13, .note = "1x1 pointwise path (one GEMM per image), bias: 16-byte adds",
     .in = {F32("3,8,24,24", -1, 1), F32("12,8,1,1", -1, 1), F32("12", -1, 1)}, .grad = 7, GEMM},
    {.op = "Conv", .opset = 13, .note = "1x1 pointwise path, an odd number of positions",
     .in = {F32("2,5,23,23", -1, 1), F32("7,5,1,1", -1, 1)}, .grad = 3, GEMM},
    {.op = "Conv", .opset = 13, .note = "Conv-1d (host fallback)",
     .in = {F32("2,3,10", -1, 1), F32("4,3,3", -1, 1)}, .grad = 3, .native = HC_HOST, .tol = 1e-6},
    /* Gemm */
    {.op = "Gemm", .opset = 13, .note = "transB, bias row",
     .in = {F32("6,20", -1, 1), F32("7,20", -1, 1), F32("7", -1, 1)}, .attr = {A_INT("transB", 1)}, .grad = 7,
     GEMM},
    {.op = "Gemm", .opset = 13, .note = "transA, alpha, beta, full C",
     .in = {F32("9,5", -1, 1), F32("9,4", -1, 1), F32("5,4", -1, 1)},
     .attr = {A_INT("transA", 1), A_FLOAT("alpha", 0.5f), A_FLOAT("beta", 2.0f)}, .grad = 7, GEMM},
    {.op = "Gemm", .opset = 13, .note = "bias row over 300 rows (the bias gradient's column sums in slices)",
     .in = {F32("300,9", -1, 1), F32("9,70", -1, 1), F32("70", -1, 1)}, .grad = 7, GEMM},
    {.op = "Gemm", .opset = 13, .note = "scalar C",
     .in = {F32("300,9", -1, 1), F32("9,70", -1, 1), F32("1", -1, 1)}, .grad = 7, GEMM},
    {.op = "Gemm", .opset = 13, .note = "column C [M,1]",
     .in = {F32("4,6", -1, 1), F32("6,3", -1, 1), F32("4,1", -1, 1)}, .grad = 7, GEMM},
    /* MatMul */
    {.op = "MatMul", .opset = 13, .note = "batched A, shared B",
     .in = {F32("3,4,6", -1, 1), F32("6,5", -1, 1)}, .grad = 3, GEMM},
    {.op = "MatMul", .opset = 13, .note = "broadcast batch",
     .in = {F32("2,1,3,4", -1, 1), F32("3,4,5", -1, 1)}, .grad = 3, GEMM},
    {.op = "MatMul", .opset = 13,
     .note = "attention: both operands carry the batch (one strided batched GEMM)",
     .in = {F32("2,3,5,8", -1, 1), F32("2,3,8,7", -1, 1)}, .grad = 3, GEMM},
    {.op = "MatMul", .opset = 13, .note = "shared A, batched B (stride 0; dA summed over the batch)",
     .in = {F32("4,6", -1, 1), F32("5,6,3", -1, 1)}, .grad = 3, GEMM},
    /* fused (forward only, acc32) */
    {.op = "Conv", .opset = 13, .note = "3x3 pad 1, bias, 16x16, Relu fused",
     .in = {F32("20,4,16,16", -1, 1), F32("8,4,3,3", -1, 1), F32("8", -1, 1)},
     .attr = {A_INTS("pads", "1,1,1,1")}, FUSED},
    {.op = "Conv", .opset = 13, .note = "3x3 on 5x5, no bias, Relu fused",
     .in = {F32("2,3,5,5", -1, 1), F32("4,3,3,3", -1, 1)}, FUSED},
    {.op = "Conv", .opset = 13, .note = "1x1 pointwise 24x24, bias, Relu fused",
     .in = {F32("3,8,24,24", -1, 1), F32("12,8,1,1", -1, 1), F32("12", -1, 1)}, FUSED},
    {.op = "Conv", .opset = 13, .note = "1x1 pointwise 23x23, no bias, Relu fused",
     .in = {F32("2,5,23,23", -1, 1), F32("7,5,1,1", -1, 1)}, FUSED},
    {.op = "Add", .opset = 14, .note = "same shape, Relu fused",
     .in = {F32("4,6,8,8", -1, 1), F32("4,6,8,8", -1, 1)}, .inference = 1, .relu_out = 1, .tol = 1e-6},
    {.op = "Add", .opset = 14, .note = "[N,C,H,W] + [1,C,1,1], Relu fused",
     .in = {F32("4,6,8,8", -1, 1), F32("1,6,1,1", -1, 1)}, .inference = 1, .relu_out = 1, .tol = 1e-6},
    {.op = "Conv", .opset = 13, .note = "3x3, bias + residual, Relu fused",
     .in = {F32("6,4,8,8", -1, 1), F32("8,4,3,3", -1, 1), F32("8", -1, 1)}, .add_in = "6,8,6,6", FUSED},
    {.op = "Conv", .opset = 13, .note = "1x1 pointwise 24x24 + residual, Relu fused",
     .in = {F32("3,8,24,24", -1, 1), F32("12,8,1,1", -1, 1)}, .add_in = "3,12,24,24", FUSED},
    {.op = "Conv", .opset = 13, .note = "3x3, bias + residual",
     .in = {F32("6,4,8,8", -1, 1), F32("8,4,3,3", -1, 1), F32("8", -1, 1)}, .add_in = "6,8,6,6",
     .inference = 1, .tol = 2e-4},
    {.op = "Conv", .opset = 13, .note = "1x1 pointwise 24x24 + residual",
     .in = {F32("3,8,24,24", -1, 1), F32("12,8,1,1", -1, 1)}, .add_in = "3,12,24,24", .inference = 1,
     .tol = 2e-4},
};
/* clang-format on */

const hc_family hc_family_gemm = {"gemm", cases, (int)(sizeof cases / sizeof cases[0])};

/* Cases of the normalisations (BatchNormalization, LayerNormalization,
 * InstanceNormalization, MeanVarianceNormalization, LpNormalization, LRN),
 * Softmax / LogSoftmax and the losses (NegativeLogLikelihoodLoss,
 * SoftmaxCrossEntropyLoss), with a bad attribute, shape or index per op that
 * must fail on the backend as on the CPU. */
#include "harness.h"

/* BatchNormalization's x, scale, B, mean, var */
#define BN_IN(x_, c_)                                                                                        \
  { F32(x_, -2, 2), F32(c_, 0.5, 1.5), F32(c_, -1, 1), F32(c_, -0.2, 0.2), F32(c_, 0.5, 2) }
#define BN_WIDE_IN                                                                                           \
  { F32("64,20,9,9", 3, 5), F32("20", 0.5, 1.5), F32("20", -1, 1), F32("20", -0.2, 0.2), F32("20", 0.5, 2) }
/* the losses' inputs: scores [6,5], targets, weights; [2,5,3,4] with targets [2,3,4] */
#define SCORES F32("6,5", -3, 3), I64(NULL, "0,4,2,3,2,1")
#define SCORES4 F32("2,5,3,4", -3, 3), IRAND("2,3,4", 0, 5), F32("5", 0.5, 2)
#define LOSSES "SoftmaxCrossEntropyLoss|NegativeLogLikelihoodLoss"

/* clang-format off */
static const hc_case cases[] = {
    /* BatchNormalization: training (running statistics out) and inference, Relu fused (forward only) */
    {.op = "BatchNormalization", .opset = 15, .note = "training", .in = BN_IN("4,3,6,6", "3"),
     .attr = {A_FLOAT("momentum", 0.9f)}, .n_out = 3, .grad = 7, .tol = 1e-5},
    {.op = "BatchNormalization", .opset = 15, .note = "inference", .in = BN_IN("4,3,6,6", "3"),
     .attr = {A_FLOAT("momentum", 0.9f)}, .grad = 7, .inference = 1, .tol = 1e-5},
    {.op = "BatchNormalization", .opset = 9, .note = "training, 5 outputs", .in = BN_IN("4,3,6,6", "3"),
     .attr = {A_FLOAT("momentum", 0.9f)}, .n_out = 5, .grad = 7, .tol = 1e-5},
    {.op = "BatchNormalization", .opset = 15, .note = "inference, Relu fused", .in = BN_IN("4,3,6,6", "3"),
     .attr = {A_FLOAT("momentum", 0.9f)}, .inference = 1, .relu_out = 1, .tol = 1e-5},
    {.op = "BatchNormalization", .opset = 15, .note = "training, Relu fused", .in = BN_IN("4,3,6,6", "3"),
     .attr = {A_FLOAT("momentum", 0.9f)}, .n_out = 3, .relu_out = 1, .tol = 1e-5},
    {.op = "BatchNormalization", .opset = 15,
     .note = "training, each channel's sums split over blocks, odd spatial size, mean far from zero",
     .in = BN_WIDE_IN, .attr = {A_FLOAT("momentum", 0.9f)}, .n_out = 3, .grad = 7, .tol = 1e-5},
    {.op = "BatchNormalization", .opset = 15, .note = "inference, split sums", .in = BN_WIDE_IN,
     .attr = {A_FLOAT("momentum", 0.9f)}, .grad = 7, .inference = 1, .tol = 1e-5},
    /* LayerNormalization: every per-row layout (a warp per row up to 256 columns, a block with the row in
       registers up to 4096, the row read twice beyond), with and without B, Mean and InvStdDev out, rows far
       from zero, dScale / dB over several slices; a broadcast Scale takes the host fallback */
    {.op = "LayerNormalization", .opset = 17, .note = "axis -1, 96 columns (a warp per row), 3 outputs",
     .in = {F32("4,7,96", -2, 2), F32("96", 0.5, 1.5), F32("96", -1, 1)}, .n_out = 3, .grad = 7, .tol = 1e-6},
    {.op = "LayerNormalization", .opset = 17, .note = "axis -1, no B",
     .in = {F32("4,7,96", -2, 2), F32("96", 0.5, 1.5)}, .grad = 3, .tol = 1e-6},
    {.op = "LayerNormalization", .opset = 17, .note = "axis 1 (two dims, 768 columns), x in [3, 5)",
     .in = {F32("16,24,32", 3, 5), F32("24,32", 0.5, 1.5), F32("24,32", -1, 1)}, .attr = {A_INT("axis", 1)},
     .n_out = 3, .grad = 7, .tol = 1e-6},
    {.op = "LayerNormalization", .opset = 17, .note = "axis 1 (two dims, 2304 columns), no B",
     .in = {F32("6,48,48", -2, 2), F32("48,48", 0.5, 1.5)}, .attr = {A_INT("axis", 1)}, .grad = 3,
     .tol = 1e-6},
    {.op = "LayerNormalization", .opset = 17, .note = "axis 1 (9216 columns: the row read twice)",
     .in = {F32("3,96,96", -2, 2), F32("96,96", 0.5, 1.5), F32("96,96", -1, 1)}, .attr = {A_INT("axis", 1)},
     .n_out = 3, .grad = 7, .tol = 1e-6},
    {.op = "LayerNormalization", .opset = 17, .note = "512 rows at 100 (sliced dScale, dB)",
     .in = {F32("512,96", 100, 101), F32("96", 0.5, 1.5), F32("96", -1, 1)}, .grad = 7, .tol = 1e-6},
    {.op = "LayerNormalization", .opset = 17, .note = "Scale [1,32] broadcast (host fallback)",
     .in = {F32("16,24,32", 3, 5), F32("1,32", 0.5, 1.5), F32("24,32", -1, 1)}, .attr = {A_INT("axis", 1)},
     .grad = 7, .native = HC_HOST, .tol = 1e-6},
    /* InstanceNormalization: [4,3,6,6], and [2,5,1000] (many threads per plane, mean far from zero) */
    {.op = "InstanceNormalization", .opset = 6, .note = "[4,3,6,6]",
     .in = {F32("4,3,6,6", -2, 2), F32("3", 0.5, 1.5), F32("3", -1, 1)}, .attr = {A_FLOAT("epsilon", 1e-3f)},
     .grad = 7, .tol = 1e-5},
    {.op = "InstanceNormalization", .opset = 22, .note = "[2,5,1000], x in [3, 5)",
     .in = {F32("2,5,1000", 3, 5), F32("5", 0.5, 1.5), F32("5", -1, 1)}, .grad = 7, .tol = 1e-5},
    /* MeanVarianceNormalization over its default axes [0,2,3], a middle axis, two apart, the last */
    {.op = "MeanVarianceNormalization", .opset = 13, .note = "default axes [0,2,3]",
     .in = {F32("2,3,4,5", 1, 3)}, .grad = 1, .tol = 1e-5},
    {.op = "MeanVarianceNormalization", .opset = 13, .note = "axes [1]", .in = {F32("2,3,4,5", 1, 3)},
     .attr = {A_INTS("axes", "1")}, .grad = 1, .tol = 1e-5},
    {.op = "MeanVarianceNormalization", .opset = 9, .note = "axes [0,3]", .in = {F32("2,3,4,5", 1, 3)},
     .attr = {A_INTS("axes", "0,3")}, .grad = 1, .tol = 1e-5},
    {.op = "MeanVarianceNormalization", .opset = 13, .note = "axes [-1]", .in = {F32("2,3,4,5", 1, 3)},
     .attr = {A_INTS("axes", "-1")}, .grad = 1, .tol = 1e-5},
    {.op = "MeanVarianceNormalization", .opset = 13, .note = "axes [5] of rank 4",
     .in = {F32("2,3,4,5", 1, 3)}, .attr = {A_INTS("axes", "5")}, .expect = HC_FAILS_FORWARD,
     .native = HC_EITHER},
    /* LpNormalization p = 1 and 2 along the last axis and a middle one, with an all-zero group (norm 0) */
    {.op = "LpNormalization", .opset = 22, .note = "p 2 axis -1, a zero row",
     .in = {{.kind = HC_F32, .shape = "3,4,5", .lo = -2, .hi = 2, .poke = "0:0,1:0,2:0,3:0,4:0"}},
     .attr = {A_INT("p", 2)}, .grad = 1, .tol = 1e-5},
    {.op = "LpNormalization", .opset = 1, .note = "p 1 axis 1",
     .in = {{.kind = HC_F32, .shape = "3,4,5", .lo = -2, .hi = 2, .poke = "0:0,1:0,2:0,3:0,4:0"}},
     .attr = {A_INT("p", 1), A_INT("axis", 1)}, .grad = 1, .tol = 1e-5},
    {.op = "LpNormalization", .opset = 22, .note = "p 1 axis -1, a zero row",
     .in = {{.kind = HC_F32, .shape = "3,4,5", .lo = -2, .hi = 2, .poke = "0:0,1:0,2:0,3:0,4:0"}},
     .attr = {A_INT("p", 1)}, .grad = 1, .tol = 1e-5},
    {.op = "LpNormalization", .opset = 22, .note = "p 3", .in = {F32("3,4,5", -2, 2)},
     .attr = {A_INT("p", 3)}, .expect = HC_FAILS_LOAD, .native = HC_EITHER},
    /* LRN: odd and even sizes (the window one further up), a rank-3 input, beta 0.5 and through pow() */
    {.op = "LRN", .opset = 13, .note = "size 3", .in = {F32("4,3,6,6", -2, 2)}, .attr = {A_INT("size", 3)},
     .grad = 1, .tol = 1e-6},
    {.op = "LRN", .opset = 13, .note = "size 4 (even), beta 0.5, bias 2, [2,7,10]",
     .in = {F32("2,7,10", -2, 2)},
     .attr = {A_INT("size", 4), A_FLOAT("alpha", 0.02f), A_FLOAT("beta", 0.5f), A_FLOAT("bias", 2.0f)},
     .grad = 1, .tol = 1e-6},
    {.op = "LRN", .opset = 1, .note = "size 5, beta 0.6 (pow), [3,8,5,5]", .in = {F32("3,8,5,5", -2, 2)},
     .attr = {A_INT("size", 5), A_FLOAT("beta", 0.6f)}, .grad = 1, .tol = 1e-6},
    {.op = "LRN", .opset = 13, .note = "size 0", .in = {F32("3,8,5,5", -2, 2)}, .attr = {A_INT("size", 0)},
     .expect = HC_FAILS_LOAD, .native = HC_EITHER},
    /* Softmax, LogSoftmax */
    {.op = "Softmax|LogSoftmax", .opset = 13, .note = "axis -1", .in = {F32("8,10", -3, 3)}, .grad = 1,
     .tol = 1e-5},
    {.op = "Softmax", .opset = 13, .note = "axis 1 (inner 4)", .in = {F32("2,5,4", -3, 3)},
     .attr = {A_INT("axis", 1)}, .grad = 1, .tol = 1e-5},
    {.op = "LogSoftmax", .opset = 11, .note = "axis 1 (coerced 2-D)", .in = {F32("2,5,4", -3, 3)},
     .attr = {A_INT("axis", 1)}, .grad = 1, .tol = 1e-5},
    /* the losses: every reduction, ignore_index, a weight (on the host), [N,C] and [N,C,d1,d2] */
    {.op = LOSSES, .opset = 13, .note = "[6,5]", .in = {SCORES}, .attr = {A_STR("reduction", "none")},
     .grad = 1, .tol = 1e-6},
    {.op = LOSSES, .opset = 13, .note = "[6,5]", .in = {SCORES}, .attr = {A_STR("reduction", "sum")},
     .grad = 1, .tol = 1e-6},
    {.op = LOSSES, .opset = 13, .note = "[6,5]", .in = {SCORES}, .attr = {A_STR("reduction", "mean")},
     .grad = 1, .tol = 1e-6},
    {.op = LOSSES, .opset = 13, .note = "[6,5], weight, ignore_index 2", .in = {SCORES, F32("5", 0.5, 2)},
     .attr = {A_STR("reduction", "none"), A_INT("ignore_index", 2)}, .grad = 1, .tol = 1e-6},
    {.op = LOSSES, .opset = 13, .note = "[6,5], weight, ignore_index 2", .in = {SCORES, F32("5", 0.5, 2)},
     .attr = {A_STR("reduction", "sum"), A_INT("ignore_index", 2)}, .grad = 1, .tol = 1e-6},
    {.op = LOSSES, .opset = 13, .note = "[6,5], weight, ignore_index 2", .in = {SCORES, F32("5", 0.5, 2)},
     .attr = {A_STR("reduction", "mean"), A_INT("ignore_index", 2)}, .grad = 1, .tol = 1e-6},
    {.op = LOSSES, .opset = 12, .note = "[2,5,3,4], weight", .in = {SCORES4},
     .attr = {A_STR("reduction", "none")}, .grad = 1, .tol = 1e-6},
    {.op = LOSSES, .opset = 12, .note = "[2,5,3,4], weight", .in = {SCORES4},
     .attr = {A_STR("reduction", "sum")}, .grad = 1, .tol = 1e-6},
    {.op = LOSSES, .opset = 12, .note = "[2,5,3,4], weight", .in = {SCORES4},
     .attr = {A_STR("reduction", "mean")}, .grad = 1, .tol = 1e-6},
    {.op = "SoftmaxCrossEntropyLoss", .opset = 13, .note = "mean, log_prob out (dY on both)",
     .in = {SCORES, F32("5", 0.5, 2)}, .attr = {A_STR("reduction", "mean")}, .n_out = 2, .grad = 1,
     .dy_all = 1, .tol = 1e-6},
    {.op = "SoftmaxCrossEntropyLoss", .opset = 13,
     .note = "[2,5,3,4], none, ignore_index 2, log_prob out (dY on both)", .in = {SCORES4},
     .attr = {A_STR("reduction", "none"), A_INT("ignore_index", 2)}, .n_out = 2, .grad = 1, .dy_all = 1,
     .tol = 1e-6},
    {.op = LOSSES, .opset = 13, .note = "target 7 of 5 classes",
     .in = {F32("6,5", -3, 3), I64(NULL, "0,4,7,3,2,1")}, .attr = {A_STR("reduction", "mean")},
     .expect = HC_FAILS_FORWARD},
    {.op = "NegativeLogLikelihoodLoss", .opset = 13, .note = "reduction avg", .in = {SCORES},
     .attr = {A_STR("reduction", "avg")}, .expect = HC_FAILS_LOAD, .native = HC_EITHER},
};
/* clang-format on */

const hc_family hc_family_norm = {"norm", cases, (int)(sizeof cases / sizeof cases[0])};

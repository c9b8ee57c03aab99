/* Cases of the one-input maps: the activations and the unary math (each over
 * its domain), Clip, Dropout (the same counter-based masks: compared
 * exactly) and the random ops (the same draws on both, exactly, and the same
 * rng after; a double or bool output runs on the host). */
#include "harness.h"

#include "core/tensor.h"

#define X F32("4,3,6,6", -2, 2)
#define WIDE F32("7,33", -3, 3)
#define UNIT F32("7,33", -0.9, 0.9)

/* clang-format off */
static const hc_case cases[] = {
    {.op = "Relu", .opset = 14, .in = {X}, .grad = 1, .tol = 1e-6},
    {.op = "Relu", .opset = 14, .note = "odd size (the one-element forms of the vectorised kernels)",
     .in = {F32("3,5,7,1", -2, 2)}, .grad = 1, .tol = 1e-6},
    {.op = "Sigmoid", .opset = 13, .in = {X}, .grad = 1, .tol = 1e-5},
    {.op = "HardSigmoid", .opset = 6, .note = "over its three pieces", .in = {F32("4,3,6,6", -5, 5)},
     .attr = {A_FLOAT("alpha", 0.25f), A_FLOAT("beta", 0.4f)}, .grad = 1, .tol = 1e-6},
    {.op = "HardSwish", .opset = 14, .note = "over its three pieces", .in = {F32("4,3,6,6", -5, 5)},
     .grad = 1, .tol = 1e-6},
    {.op = "Tanh", .opset = 13, .in = {X}, .grad = 1, .tol = 1e-5},
    {.op = "Erf", .opset = 13, .in = {X}, .grad = 1, .tol = 1e-6},
    {.op = "Exp", .opset = 13, .in = {F32("6,41", -3, 3)}, .grad = 1, .tol = 1e-6},
    {.op = "Neg|Abs", .opset = 13, .in = {F32("6,41", -3, 3)}, .grad = 1},
    {.op = "Log|Sqrt|Reciprocal", .opset = 13, .note = "positive inputs", .in = {F32("6,41", 0.2, 4)},
     .grad = 1, .tol = 1e-6},
    {.op = "Gelu", .opset = 20, .in = {X}, .grad = 1, .tol = 1e-6},
    {.op = "Gelu", .opset = 20, .note = "tanh", .in = {X}, .attr = {A_STR("approximate", "tanh")}, .grad = 1,
     .tol = 1e-6},
    {.op = "LeakyRelu", .opset = 16, .in = {X}, .attr = {A_FLOAT("alpha", 0.1f)}, .grad = 1, .tol = 1e-6},
    {.op = "Clip", .opset = 6, .note = "attributes", .in = {X},
     .attr = {A_FLOAT("min", -0.5f), A_FLOAT("max", 1.0f)}, .grad = 1, .tol = 1e-6},
    {.op = "Clip", .opset = 13, .note = "min / max inputs, staged on the host",
     .in = {X, SCALAR(-0.7), SCALAR(0.9)}, .grad = 1, .tol = 1e-6},
    /* unary.c's float ops on the activation kernels */
    {.op = "Elu", .opset = 6, .in = {WIDE}, .attr = {A_FLOAT("alpha", 0.7f)}, .grad = 1, .tol = 1e-5},
    {.op = "Selu", .opset = 6, .in = {WIDE}, .attr = {A_FLOAT("alpha", 1.5f), A_FLOAT("gamma", 1.2f)},
     .grad = 1, .tol = 1e-5},
    {.op = "Celu", .opset = 12, .in = {WIDE}, .attr = {A_FLOAT("alpha", 0.7f)}, .grad = 1, .tol = 1e-5},
    {.op = "Softplus|Softsign", .opset = 1, .in = {WIDE}, .grad = 1, .tol = 1e-5},
    {.op = "ThresholdedRelu", .opset = 10, .in = {WIDE}, .attr = {A_FLOAT("alpha", 0.7f)}, .grad = 1,
     .tol = 1e-6},
    {.op = "Mish", .opset = 18, .in = {WIDE}, .grad = 1, .tol = 1e-5},
    {.op = "Shrink", .opset = 9, .in = {WIDE}, .attr = {A_FLOAT("lambd", 0.6f), A_FLOAT("bias", 0.25f)},
     .grad = 1, .tol = 1e-6},
    {.op = "Ceil|Floor|Sign", .opset = 13, .note = "zero gradient", .in = {WIDE}, .grad = 1},
    {.op = "Round", .opset = 11, .note = "zero gradient", .in = {WIDE}, .grad = 1},
    {.op = "Sin|Cos|Atan", .opset = 7, .in = {WIDE}, .grad = 1, .tol = 1e-5},
    {.op = "Tan", .opset = 7, .in = {F32("7,33", -1.2, 1.2)}, .grad = 1, .tol = 1e-5},
    {.op = "Asin|Acos", .opset = 7, .in = {UNIT}, .grad = 1, .tol = 1e-5},
    {.op = "Sinh|Cosh|Asinh", .opset = 9, .in = {WIDE}, .grad = 1, .tol = 1e-5},
    {.op = "Acosh", .opset = 9, .in = {F32("7,33", 1.2, 3)}, .grad = 1, .tol = 1e-5},
    {.op = "Atanh", .opset = 9, .in = {UNIT}, .grad = 1, .tol = 1e-5},
    /* Dropout: the ratio staged on the host */
    {.op = "Dropout", .opset = 13, .note = "training", .in = {X, SCALAR(0.3)}, .grad = 1},
    {.op = "Dropout", .opset = 13, .note = "inference", .in = {X, SCALAR(0.3)}, .grad = 1, .inference = 1},
    /* the random ops: no gradient (their backward adds nothing to the pre-filled buffers) */
    {.op = "RandomUniformLike", .opset = 22, .in = {X}, .attr = {A_FLOAT("low", -1), A_FLOAT("high", 2)},
     .grad = 1, .nondiff_grad = 1},
    {.op = "RandomNormalLike", .opset = 1, .note = "inference ctx", .in = {X},
     .attr = {A_FLOAT("mean", 0.5f), A_FLOAT("scale", 2)}, .grad = 1, .nondiff_grad = 1, .inference = 1},
    {.op = "RandomUniform", .opset = 1, .note = "[3,5,7]",
     .attr = {A_FLOAT("low", -1), A_FLOAT("high", 2), A_INTS("shape", "3,5,7")}},
    {.op = "RandomNormal", .opset = 22, .note = "[1000,100]",
     .attr = {A_FLOAT("mean", 0.5f), A_FLOAT("scale", 2), A_INTS("shape", "1000,100")}},
    {.op = "Bernoulli", .opset = 15, .note = "p in [-0.1, 1.1]", .in = {F32("4,3,6,6", -0.1, 1.1)}, .grad = 1,
     .nondiff_grad = 1},
    {.op = "RandomUniformLike", .opset = 1, .note = "dtype double (host fallback)", .in = {X},
     .attr = {A_INT("dtype", AMD_DOUBLE)}, .native = HC_HOST},
    {.op = "Bernoulli", .opset = 22, .note = "dtype bool (host fallback)", .in = {F32("4,3,6,6", -0.1, 1.1)},
     .attr = {A_INT("dtype", AMD_BOOL)}, .native = HC_HOST},
};
/* clang-format on */

const hc_family hc_family_unary = {"unary", cases, (int)(sizeof cases / sizeof cases[0])};

/* PLACEHOLDER: to be implemented. */
#include "op.h"

const amd_op amd_op_Relu = {.name = "Relu", .since = {1}};
const amd_op amd_op_LeakyRelu = {.name = "LeakyRelu", .since = {1}};
const amd_op amd_op_PRelu = {.name = "PRelu", .since = {1}};
const amd_op amd_op_Sigmoid = {.name = "Sigmoid", .since = {1}};
const amd_op amd_op_Tanh = {.name = "Tanh", .since = {1}};
const amd_op amd_op_Clip = {.name = "Clip", .since = {1}};
const amd_op amd_op_Exp = {.name = "Exp", .since = {1}};
const amd_op amd_op_Log = {.name = "Log", .since = {1}};
const amd_op amd_op_Sqrt = {.name = "Sqrt", .since = {1}};
const amd_op amd_op_Neg = {.name = "Neg", .since = {1}};
const amd_op amd_op_Abs = {.name = "Abs", .since = {1}};
const amd_op amd_op_Reciprocal = {.name = "Reciprocal", .since = {1}};

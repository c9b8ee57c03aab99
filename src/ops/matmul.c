/* PLACEHOLDER: to be implemented. */
#include "op.h"

const amd_op amd_op_Gemm = {.name = "Gemm", .since = {1}};
const amd_op amd_op_MatMul = {.name = "MatMul", .since = {1}};

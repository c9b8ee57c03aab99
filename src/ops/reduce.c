/* PLACEHOLDER: to be implemented. */
#include "op.h"

const amd_op amd_op_ReduceMean = {.name = "ReduceMean", .since = {1}};
const amd_op amd_op_ReduceSum = {.name = "ReduceSum", .since = {1}};
const amd_op amd_op_ReduceMax = {.name = "ReduceMax", .since = {1}};

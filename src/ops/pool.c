/* PLACEHOLDER: to be implemented. */
#include "op.h"

const amd_op amd_op_MaxPool = {.name = "MaxPool", .since = {1}};
const amd_op amd_op_AveragePool = {.name = "AveragePool", .since = {1}};
const amd_op amd_op_GlobalAveragePool = {.name = "GlobalAveragePool", .since = {1}};
const amd_op amd_op_GlobalMaxPool = {.name = "GlobalMaxPool", .since = {1}};

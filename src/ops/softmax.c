/* PLACEHOLDER: to be implemented. */
#include "op.h"

const amd_op amd_op_Softmax = {.name = "Softmax", .since = {1}};
const amd_op amd_op_LogSoftmax = {.name = "LogSoftmax", .since = {1}};

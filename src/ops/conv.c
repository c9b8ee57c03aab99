/* PLACEHOLDER: to be implemented. */
#include "op.h"

const amd_op amd_op_Conv = {.name = "Conv", .since = {1}};

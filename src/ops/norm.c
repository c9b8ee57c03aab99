/* PLACEHOLDER: to be implemented. */
#include "op.h"

const amd_op amd_op_BatchNormalization = {.name = "BatchNormalization", .since = {1}};

/* PLACEHOLDER: to be implemented. */
#include "op.h"

const amd_op amd_op_Flatten = {.name = "Flatten", .since = {1}};
const amd_op amd_op_Reshape = {.name = "Reshape", .since = {1}};
const amd_op amd_op_Transpose = {.name = "Transpose", .since = {1}};
const amd_op amd_op_Squeeze = {.name = "Squeeze", .since = {1}};
const amd_op amd_op_Unsqueeze = {.name = "Unsqueeze", .since = {1}};
const amd_op amd_op_Concat = {.name = "Concat", .since = {1}};
const amd_op amd_op_Shape = {.name = "Shape", .since = {1}};
const amd_op amd_op_Gather = {.name = "Gather", .since = {1}};
const amd_op amd_op_Identity = {.name = "Identity", .since = {1}};
const amd_op amd_op_Constant = {.name = "Constant", .since = {1}};
const amd_op amd_op_Cast = {.name = "Cast", .since = {1}};
const amd_op amd_op_Dropout = {.name = "Dropout", .since = {1}};
const amd_op amd_op_Pad = {.name = "Pad", .since = {1}};

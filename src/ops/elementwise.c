/* PLACEHOLDER: to be implemented. */
#include "op.h"

const amd_op amd_op_Add = {.name = "Add", .since = {1}};
const amd_op amd_op_Sub = {.name = "Sub", .since = {1}};
const amd_op amd_op_Mul = {.name = "Mul", .since = {1}};
const amd_op amd_op_Div = {.name = "Div", .since = {1}};

/* The table of every op descriptor (op_list.h names them), indexed by amd_op_idx. */
#include <string.h>

#include "op.h"

#define AMD_OP(N) extern const amd_op amd_op_##N;
#include "op_list.h"
#undef AMD_OP

#define AMD_OP(N) &amd_op_##N,
const amd_op *const amd_ops[] = {
#include "op_list.h"
};
#undef AMD_OP

/* AMD_OP_COUNT (op.h) comes from the same list: the table has one entry per index. */
_Static_assert(sizeof amd_ops / sizeof amd_ops[0] == AMD_OP_COUNT, "op table out of sync with op_list.h");
const int amd_op_count = AMD_OP_COUNT;

const amd_op *amd_op_find(const char *name) {
  for (int i = 0; i < AMD_OP_COUNT; i++)
    if (strcmp(amd_ops[i]->name, name) == 0) return amd_ops[i];
  return NULL;
}

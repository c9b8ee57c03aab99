/* Helpers shared by the op-family files: axes, numpy broadcasting, checks. */
#include "op.h"

int amd_axis(int64_t axis, int rank, amd_status *st) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= (rank > 0 ? rank : 1))
    return amd_fail(st, "axis %lld out of range for rank %d", (long long)axis, rank);
  return (int)a;
}

int amd_broadcast_shape(const amd_tensor *a, const amd_tensor *b, amd_tensor *out, amd_status *st) {
  int rank = a->rank > b->rank ? a->rank : b->rank;
  out->rank = rank;
  for (int i = 0; i < rank; i++) {
    int ia = i - (rank - a->rank), ib = i - (rank - b->rank);
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      char sa[128], sb[128];
      return amd_fail(st, "shapes %s and %s do not broadcast", amd_shape_str(a, sa, sizeof sa),
                      amd_shape_str(b, sb, sizeof sb));
    }
    out->dims[i] = da == 1 ? db : da;
  }
  return 0;
}

void amd_broadcast_strides(const amd_tensor *t, const amd_tensor *out, int64_t *strides) {
  int64_t s = 1;
  for (int i = out->rank - 1; i >= 0; i--) {
    int it = i - (out->rank - t->rank);
    if (it < 0) {
      strides[i] = 0;
      continue;
    }
    strides[i] = t->dims[it] == 1 ? 0 : s;
    s *= t->dims[it];
  }
}

int amd_require_float(const amd_tensor *t, const char *what, amd_status *st) {
  if (t->dtype != AMD_FLOAT)
    return amd_fail(st, "%s has dtype %s (only float is supported)", what, amd_dtype_name(t->dtype));
  return 0;
}

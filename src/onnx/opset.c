/* The opset policy (opset.h): ONNX's versions of each op, and the newer
 * versions that agree with an implemented one for float32 data. */
#include "opset.h"

#include <stdio.h>

/* Every since-version ONNX defines for each op, by op index (0-terminated);
 * the header also defines AMD_ONNX_NEWEST_OPSET. */
static const int onnx_versions[AMD_OP_COUNT][16] = {
#define AMD_ONNX_OP(name, ...) [AMD_OP_IDX_##name] = {__VA_ARGS__},
#include "onnx_versions.h"
#undef AMD_ONNX_OP
};

/* ONNX versions [from, to] of an op that bind to the implemented version
 * `as`, and why that is right. Each row was checked against the schemas'
 * differences (tools/onnx_versions.py --diff) and the operator's changelog:
 * only rows whose changes leave float32 (and, for shape ops, int64 and bool)
 * data untouched belong here. */
typedef struct {
  int op, from, to, as;
  const char *why;
} equivalent_version;

static const equivalent_version equivalents[] = {
    {AMD_OP_IDX_Conv, 22, 22, 11, "22 adds bfloat16"},
    {AMD_OP_IDX_Einsum, 28, 28, 12, "28 adds bfloat16"},
    {AMD_OP_IDX_MaxPool, 22, 22, 12,
     "22 adds bfloat16 and states that ceil_mode windows starting in the right padding are dropped, "
     "which every version here does"},
    {AMD_OP_IDX_AveragePool, 22, 22, 19, "22 adds bfloat16 and states the ceil_mode rule MaxPool 22 states"},
    {AMD_OP_IDX_GlobalAveragePool, 22, 22, 1, "22 adds bfloat16"},
    {AMD_OP_IDX_GlobalMaxPool, 22, 22, 1, "22 adds bfloat16"},
    {AMD_OP_IDX_Dropout, 22, 22, 13, "22 adds float8 and bfloat16 types"},
    {AMD_OP_IDX_Flatten, 21, 25, 13, "21-25 add float8, int4, float4, float8e8m0 and int2 types"},
    {AMD_OP_IDX_Reshape, 19, 25, 14, "19-25 add float8, int4, float4, float8e8m0 and int2 types"},
    {AMD_OP_IDX_Transpose, 21, 25, 13, "21-25 add float8, int4, float4, float8e8m0 and int2 types"},
    {AMD_OP_IDX_Squeeze, 21, 25, 13, "21-25 add float8, int4, float4, float8e8m0 and int2 types"},
    {AMD_OP_IDX_Unsqueeze, 21, 25, 13, "21-25 add float8, int4, float4, float8e8m0 and int2 types"},
    {AMD_OP_IDX_Shape, 19, 25, 15, "19-25 add float8, int4, float4, float8e8m0 and int2 types"},
    {AMD_OP_IDX_Identity, 19, 25, 16, "19-25 add float8, int4, float4, float8e8m0 and int2 types"},
    {AMD_OP_IDX_Constant, 19, 25, 13, "19-25 add float8, int4, float4, float8e8m0 and int2 types"},
    {AMD_OP_IDX_Cast, 19, 28, 13,
     "19-28 add float8, int4, float4, int2 and float6 types; their saturate and round_mode attributes "
     "apply only to those types, which Cast refuses"},
    {AMD_OP_IDX_Equal, 19, 19, 13, "19 adds string"},
    {AMD_OP_IDX_Range, 27, 27, 11,
     "27 adds float16 and bfloat16 and, for them, stash_type (the precision of the accumulation); float and "
     "integer ranges are unchanged"},
    {AMD_OP_IDX_Pad, 21, 25, 19, "21-25 add float8, int4, float4, float8e8m0 and int2 types"},
    {AMD_OP_IDX_NegativeLogLikelihoodLoss, 22, 22, 13, "22 adds bfloat16"},
    {AMD_OP_IDX_OneHot, 28, 28, 11, "28 adds bfloat16 values"},
    {AMD_OP_IDX_DepthToSpace, 28, 28, 13, "28 has 13's schema and text (released with SpaceToDepth 28's mode)"},
    {AMD_OP_IDX_TopK, 24, 24, 11, "24 adds bfloat16"},
    {AMD_OP_IDX_Elu, 22, 22, 6, "22 adds bfloat16"},
    {AMD_OP_IDX_Selu, 22, 22, 6, "22 adds bfloat16"},
    {AMD_OP_IDX_Celu, 28, 28, 12, "28 adds double, float16 and bfloat16"},
    {AMD_OP_IDX_Softplus, 22, 22, 1, "22 adds bfloat16"},
    {AMD_OP_IDX_Softsign, 22, 22, 1, "22 adds bfloat16"},
    {AMD_OP_IDX_ThresholdedRelu, 22, 22, 10, "22 adds bfloat16"},
    {AMD_OP_IDX_Mish, 22, 22, 18, "22 adds bfloat16"},
    {AMD_OP_IDX_Ceil, 13, 13, 6,
     "13 adds bfloat16 and states that integral values, zeros, NaN and infinities are returned unchanged, as "
     "ceil does"},
    {AMD_OP_IDX_Floor, 13, 13, 6,
     "13 adds bfloat16 and states that integral values, zeros, NaN and infinities are returned unchanged, as "
     "floor does"},
    {AMD_OP_IDX_Round, 22, 22, 11, "22 adds bfloat16"},
    {AMD_OP_IDX_Sign, 13, 13, 9, "13 adds bfloat16"},
    {AMD_OP_IDX_Sin, 22, 22, 7, "22 adds bfloat16"},
    {AMD_OP_IDX_Cos, 22, 22, 7, "22 adds bfloat16"},
    {AMD_OP_IDX_Tan, 22, 22, 7, "22 adds bfloat16"},
    {AMD_OP_IDX_Asin, 22, 22, 7, "22 adds bfloat16"},
    {AMD_OP_IDX_Acos, 22, 22, 7, "22 adds bfloat16"},
    {AMD_OP_IDX_Atan, 22, 22, 7, "22 adds bfloat16"},
    {AMD_OP_IDX_Sinh, 22, 22, 9, "22 adds bfloat16"},
    {AMD_OP_IDX_Cosh, 22, 22, 9, "22 adds bfloat16"},
    {AMD_OP_IDX_Asinh, 22, 22, 9, "22 adds bfloat16"},
    {AMD_OP_IDX_Acosh, 22, 22, 9, "22 adds bfloat16"},
    {AMD_OP_IDX_Atanh, 22, 22, 9, "22 adds bfloat16"},
    {AMD_OP_IDX_IsNaN, 13, 20, 9, "13 and 20 add bfloat16 and float8 types"},
    {AMD_OP_IDX_IsInf, 20, 20, 10, "20 adds float16, bfloat16 and float8 types"},
    {AMD_OP_IDX_Mod, 13, 13, 10, "13 adds bfloat16"},
    {AMD_OP_IDX_Sum, 13, 13, 8, "13 adds bfloat16"},
    {AMD_OP_IDX_Mean, 13, 13, 8, "13 adds bfloat16"},
    {AMD_OP_IDX_CastLike, 19, 25, 15,
     "19-25 add float8, int4, float4, float8e8m0 and int2 types; their saturate and round_mode attributes "
     "apply only to those types, which CastLike refuses"},
    {AMD_OP_IDX_Size, 13, 25, 1, "13-25 add bfloat16, float8, int4, float4, float8e8m0 and int2 input types"},
    {AMD_OP_IDX_EyeLike, 22, 22, 9, "22 adds bfloat16"},
    {AMD_OP_IDX_ReduceLogSum, 28, 28, 18, "28 drops the integer types, which 18 here still accepts"},
    {AMD_OP_IDX_ReduceLogSumExp, 28, 28, 18, "28 drops the integer types, which 18 here still accepts"},
    {AMD_OP_IDX_QuantizeLinear, 24, 28, 23,
     "24-28 add float8e8m0 scales and int2, uint2 and float6 outputs; only float scales and int8 and uint8 "
     "outputs are implemented, other types fail with a message"},
    {AMD_OP_IDX_DequantizeLinear, 24, 28, 23,
     "24-28 add float8e8m0 scales and int2, uint2 and float6 inputs; only float scales and int8, uint8 and "
     "int32 inputs are implemented, other types fail with a message"},
    {AMD_OP_IDX_QLinearMatMul, 21, 21, 10,
     "21 adds float16 and bfloat16 scales and float8 codes; only float scales and int8 and uint8 codes are "
     "implemented, other types fail with a message"},
};

int amd_onnx_newest_opset(void) { return AMD_ONNX_NEWEST_OPSET; }

const int *amd_onnx_versions(const amd_op *op) { return onnx_versions[op->idx]; }

static int implements(const amd_op *op, int version) {
  for (int i = 0; i < 8 && op->since[i]; i++)
    if (op->since[i] == version) return 1;
  return 0;
}

int amd_opset_equivalent(const amd_op *op, int version, const char **why) {
  for (size_t i = 0; i < sizeof equivalents / sizeof equivalents[0]; i++) {
    const equivalent_version *e = &equivalents[i];
    if (e->op == op->idx && version >= e->from && version <= e->to) {
      if (why) *why = e->why;
      return e->as;
    }
  }
  return 0;
}

/* "1, 6, 13" */
static const char *list_versions(const int *v, int max, char *buf, size_t n) {
  size_t len = 0;
  buf[0] = 0;
  for (int i = 0; i < max && v[i] && len < n; i++)
    len += (size_t)snprintf(buf + len, n - len, "%s%d", i ? ", " : "", v[i]);
  return buf;
}

int amd_opset_bind_version(const amd_op *op, int opset, amd_status *st) {
  const int *known = amd_onnx_versions(op);
  if (!known[0])
    return amd_fail(st, "op '%s' has no row in src/onnx/onnx_versions.h (run tools/onnx_versions.py)",
                    op->name);
  if (opset > AMD_ONNX_NEWEST_OPSET)
    return amd_fail(st,
                    "opset %d is newer than opset %d, the newest whose operator versions amdnn-onnx knows; "
                    "export the model at opset %d or lower",
                    opset, AMD_ONNX_NEWEST_OPSET, AMD_ONNX_NEWEST_OPSET);
  int version = 0;
  for (int i = 0; i < 16 && known[i]; i++)
    if (known[i] <= opset) version = known[i];
  if (!version)
    return amd_fail(st, "op '%s' does not exist at opset %d (its first version is %d)", op->name, opset,
                    known[0]);
  if (implements(op, version)) return version;
  int as = amd_opset_equivalent(op, version, NULL);
  if (as && implements(op, as)) return as;
  char ours[64];
  return amd_fail(st,
                  "op '%s' has version %d at opset %d, which amdnn-onnx does not implement (it implements "
                  "versions %s); export the model at an opset where '%s' has one of those versions",
                  op->name, version, opset, list_versions(op->since, 8, ours, sizeof ours), op->name);
}

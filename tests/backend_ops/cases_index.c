/* Cases of the index ops (indices on the host): Gather, GatherND (repeated
 * tuples: the scatter-add of the backward in tuple order, the CPU's bits),
 * GatherElements (repeated and negative indices, gradients added in index
 * order), ScatterElements (each reduction), Scatter-9, ScatterND (slices and
 * single elements, repeated, applied in index order as the CPU does;
 * backward for none and add), CumSum (axis as an int64 scalar or an int32
 * [1], exclusive, reverse). Out-of-range indices and reductions without a
 * backward must fail on the backend as on the CPU. Compared exactly, but
 * CumSum (1e-6). */
#include "harness.h"

#define DATA F32("4,5,6", -1, 1)
#define SE_IN                                                                                                \
  { DATA, IRAND("4,3,6", -5, 5), F32("4,3,6", -1, 1) }
#define SND_IN                                                                                               \
  { DATA, I64("5,2", "0,1,3,-1,0,1,2,2,-4,1"), F32("5,6", -1, 1) }
#define CUMSUM_X F32("3,4,5", -1, 1)
#define CUMSUM(op_, opset_, axis_, e_, r_)                                                                   \
  {                                                                                                          \
    .op = op_, .opset = opset_, .note = "exclusive " #e_ ", reverse " #r_, .in = {CUMSUM_X, axis_},          \
    .attr = {A_INT("exclusive", e_), A_INT("reverse", r_)}, .grad = 1, .tol = 1e-6                           \
  }

/* clang-format off */
static const hc_case cases[] = {
    /* Gather: the class token (a scalar index on axis 1), repeated / negative indices on axis 0 */
    {.op = "Gather", .opset = 13, .note = "class token", .in = {F32("4,5,6", -1, 1), I64("", "0")},
     .attr = {A_INT("axis", 1)}, .grad = 1},
    {.op = "Gather", .opset = 13, .note = "repeated indices",
     .in = {F32("5,3", -1, 1), I64(NULL, "2,-1,2,0,2")}, .grad = 1},
    /* GatherND */
    {.op = "GatherND", .opset = 12, .note = "batch_dims 1, repeated tuples",
     .in = {F32("3,5,4", -1, 1), I64("3,4,1", "0,4,-1,0,2,2,3,2,1,1,1,-5")}, .attr = {A_INT("batch_dims", 1)},
     .grad = 1},
    {.op = "GatherND", .opset = 13, .note = "k = 2, repeated tuples",
     .in = {F32("3,5,4", -1, 1), I64("4,2", "2,1,-1,-1,2,1,0,4")}, .grad = 1},
    /* GatherElements: along a middle axis, the last (indices smaller than data on the other axes), axis 0 */
    {.op = "GatherElements", .opset = 13, .note = "axis 1, repeated and negative indices",
     .in = {DATA, IRAND("4,3,6", -5, 5)}, .attr = {A_INT("axis", 1)}, .grad = 1},
    {.op = "GatherElements", .opset = 11, .note = "axis -1, indices [2,5,3]",
     .in = {DATA, IRAND("2,5,3", -6, 6)}, .attr = {A_INT("axis", -1)}, .grad = 1},
    {.op = "GatherElements", .opset = 13, .note = "axis 0, indices [6,5,6]",
     .in = {DATA, IRAND("6,5,6", -4, 4)}, .grad = 1},
    {.op = "GatherElements", .opset = 13, .note = "index 5 on an axis of 5",
     .in = {DATA, {.kind = HC_IRAND, .shape = "4,3,6", .lo = -5, .hi = 5, .poke = "7:5"}},
     .attr = {A_INT("axis", 1)}, .expect = HC_FAILS_FORWARD},
    /* ScatterElements, Scatter */
    {.op = "ScatterElements", .opset = 18, .note = "axis 1", .in = SE_IN,
     .attr = {A_INT("axis", 1), A_STR("reduction", "none")}, .grad = 5},
    {.op = "ScatterElements", .opset = 18, .note = "axis 1", .in = SE_IN,
     .attr = {A_INT("axis", 1), A_STR("reduction", "add")}, .grad = 5},
    {.op = "ScatterElements", .opset = 18, .note = "axis 1", .in = SE_IN,
     .attr = {A_INT("axis", 1), A_STR("reduction", "mul")}},
    {.op = "ScatterElements", .opset = 18, .note = "axis 1", .in = SE_IN,
     .attr = {A_INT("axis", 1), A_STR("reduction", "max")}},
    {.op = "ScatterElements", .opset = 18, .note = "axis 1", .in = SE_IN,
     .attr = {A_INT("axis", 1), A_STR("reduction", "min")}},
    {.op = "ScatterElements", .opset = 11, .note = "axis 1", .in = SE_IN, .attr = {A_INT("axis", 1)},
     .grad = 5},
    {.op = "Scatter", .opset = 9, .note = "axis 0", .in = {DATA, IRAND("3,5,6", -4, 4), F32("3,5,6", -1, 1)},
     .grad = 5},
    {.op = "ScatterElements", .opset = 13, .note = "index -6 on an axis of 5",
     .in = {DATA, {.kind = HC_IRAND, .shape = "4,3,6", .lo = -5, .hi = 5, .poke = "11:-6"},
            F32("4,3,6", -1, 1)}, .attr = {A_INT("axis", 1)}, .expect = HC_FAILS_FORWARD},
    {.op = "ScatterElements", .opset = 16, .note = "reduction mul: no backward", .in = SE_IN,
     .attr = {A_INT("axis", 1), A_STR("reduction", "mul")}, .grad = 5, .expect = HC_FAILS_BACKWARD},
    {.op = "ScatterElements", .opset = 18, .note = "reduction foo", .in = SE_IN,
     .attr = {A_STR("reduction", "foo")}, .expect = HC_FAILS_LOAD, .native = HC_EITHER},
    /* ScatterND: k = 2 (slices of 6), the tuples (0,1), (3,-1), (0,1), (2,2), (-4,1): three to one slice */
    {.op = "ScatterND", .opset = 11, .note = "k 1, slices of [6,6]",
     .in = {F32("4,3,6,6", -2, 2), I64("2,1", "3,1"), F32("2,3,6,6", -1, 1)}, .grad = 5},
    {.op = "ScatterND", .opset = 18, .note = "k 2, repeated tuples", .in = SND_IN,
     .attr = {A_STR("reduction", "none")}, .grad = 5},
    {.op = "ScatterND", .opset = 18, .note = "k 2, repeated tuples", .in = SND_IN,
     .attr = {A_STR("reduction", "add")}, .grad = 5},
    {.op = "ScatterND", .opset = 18, .note = "k 2, repeated tuples", .in = SND_IN,
     .attr = {A_STR("reduction", "mul")}},
    {.op = "ScatterND", .opset = 18, .note = "k 2, repeated tuples", .in = SND_IN,
     .attr = {A_STR("reduction", "max")}},
    {.op = "ScatterND", .opset = 18, .note = "k 2, repeated tuples", .in = SND_IN,
     .attr = {A_STR("reduction", "min")}},
    {.op = "ScatterND", .opset = 13, .note = "k 3 (elements), repeated",
     .in = {DATA, I64("4,3", "1,2,3,0,0,0,1,2,3,3,4,5"), F32("4", -1, 1)}, .grad = 5},
    {.op = "ScatterND", .opset = 13, .note = "index 4 on an axis of 4",
     .in = {DATA, I64("5,2", "0,1,4,0,0,1,2,2,-4,1"), F32("5,6", -1, 1)}, .expect = HC_FAILS_FORWARD},
    {.op = "ScatterND", .opset = 18, .note = "reduction max: no backward", .in = SND_IN,
     .attr = {A_STR("reduction", "max")}, .grad = 5, .expect = HC_FAILS_BACKWARD},
    {.op = "ScatterND", .opset = 16, .note = "reduction max (from 18)", .in = SND_IN,
     .attr = {A_STR("reduction", "max")}, .expect = HC_FAILS_LOAD, .native = HC_EITHER},
    /* CumSum */
    CUMSUM("CumSum", 14, I64("", "1"), 0, 0),
    CUMSUM("CumSum", 14, I64("", "1"), 0, 1),
    CUMSUM("CumSum", 14, I64("", "1"), 1, 0),
    CUMSUM("CumSum", 14, I64("", "1"), 1, 1),
    CUMSUM("CumSum", 11, I32("1", "-1"), 0, 0),
    CUMSUM("CumSum", 11, I32("1", "-1"), 0, 1),
    CUMSUM("CumSum", 11, I32("1", "-1"), 1, 0),
    CUMSUM("CumSum", 11, I32("1", "-1"), 1, 1),
    {.op = "CumSum", .opset = 14, .note = "axis 0", .in = {CUMSUM_X, I64("", "0")}, .grad = 1, .tol = 1e-6},
    {.op = "CumSum", .opset = 14, .note = "axis 3 of a rank-3 input", .in = {CUMSUM_X, I64("", "3")},
     .expect = HC_FAILS_FORWARD, .native = HC_EITHER},
    {.op = "CumSum", .opset = 14, .note = "exclusive 2", .in = {CUMSUM_X, I64("", "1")},
     .attr = {A_INT("exclusive", 2)}, .expect = HC_FAILS_LOAD, .native = HC_EITHER},
};
/* clang-format on */

const hc_family hc_family_index = {"index", cases, (int)(sizeof cases / sizeof cases[0])};

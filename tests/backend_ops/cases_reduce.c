/* Cases of the reductions (natively wherever the reduced axes are adjacent:
 * all axes, axes 2,3 without keepdims, opset 18's axes input [-1], a middle
 * axis; two axes apart on the host) and the pools (overlapping windows,
 * ceil mode, count_include_pad, windows that do not overlap: the backward's
 * one-thread-per-window path; MaxPool's gradient compared exactly; MaxPool's
 * forward through each of the CUDA backend's unrolled, run-time and dilated
 * kernels). */
#include "harness.h"

#define X F32("4,3,6,6", -2, 2)
/* magnitudes near 1, signs mixed, and in the axes-2,3 view one zero in row 0, two in row 1: ReduceProd's
   gradient with zeros */
#define XQ                                                                                                   \
  { .kind = HC_F32, .shape = "4,3,6,6", .lo = 0.8, .hi = 1.25, .flip = 0.3, .poke = "5:0,40:0,41:0" }
/* the five reductions of a family: ops_ at opset_ over input x_ */
#define REDUCTIONS(ops_, opset_, x_)                                                                         \
  {.op = ops_, .opset = opset_, .note = "all axes", .in = {x_}, .grad = 1, .tol = 1e-6},                     \
      {.op = ops_,                                                                                           \
       .opset = opset_,                                                                                      \
       .note = "axes 2,3, keepdims 0",                                                                       \
       .in = {x_},                                                                                           \
       .attr = {A_INTS("axes", "2,3"), A_INT("keepdims", 0)},                                                \
       .grad = 1,                                                                                            \
       .tol = 1e-6},                                                                                         \
      {.op = ops_,                                                                                           \
       .opset = 18,                                                                                          \
       .note = "axes input [-1]",                                                                            \
       .in = {x_, I64(NULL, "-1")},                                                                          \
       .grad = 1,                                                                                            \
       .tol = 1e-6},                                                                                         \
      {.op = ops_,                                                                                           \
       .opset = opset_,                                                                                      \
       .note = "axis 1 (at stride 36)",                                                                      \
       .in = {x_},                                                                                           \
       .attr = {A_INTS("axes", "1")},                                                                        \
       .grad = 1,                                                                                            \
       .tol = 1e-6},                                                                                         \
  {                                                                                                          \
    .op = ops_, .opset = opset_, .note = "axes 1,3 (host fallback)", .in = {x_},                             \
    .attr = {A_INTS("axes", "1,3")}, .grad = 1, .native = HC_HOST, .tol = 1e-6                               \
  }

/* clang-format off */
static const hc_case cases[] = {
    {.op = "ReduceMean", .opset = 13, .note = "all axes", .in = {X}, .grad = 1, .tol = 1e-6},
    {.op = "ReduceMean", .opset = 13, .note = "axes 2,3, keepdims 0", .in = {X},
     .attr = {A_INTS("axes", "2,3"), A_INT("keepdims", 0)}, .grad = 1, .tol = 1e-6},
    {.op = "ReduceMean", .opset = 13, .note = "axis 1 (at stride 36)", .in = {X},
     .attr = {A_INTS("axes", "1")}, .grad = 1, .tol = 1e-6},
    {.op = "ReduceMean", .opset = 13, .note = "axes 0,1, keepdims 0", .in = {X},
     .attr = {A_INTS("axes", "0,1"), A_INT("keepdims", 0)}, .grad = 1, .tol = 1e-6},
    {.op = "ReduceMean", .opset = 13, .note = "axes 1,3 (host fallback)", .in = {X},
     .attr = {A_INTS("axes", "1,3")}, .grad = 1, .native = HC_HOST, .tol = 1e-6},
    REDUCTIONS("ReduceSum", 11, X),
    REDUCTIONS("ReduceMax|ReduceSumSquare|ReduceL2|ReduceMin|ReduceLogSumExp", 13, X),
    REDUCTIONS("ReduceL1", 13, X),
    REDUCTIONS("ReduceLogSum", 13, F32("4,3,6,6", 0.1, 2)),
    REDUCTIONS("ReduceProd", 13, XQ),
    {.op = "ReduceProd", .opset = 13, .note = "axis 4 of a rank-4 input", .in = {XQ},
     .attr = {A_INTS("axes", "4")}, .expect = HC_FAILS_FORWARD, .native = HC_EITHER},
    /* pools */
    {.op = "MaxPool", .opset = 12, .note = "3x3 stride 2 pad 1", .in = {X},
     .attr = {A_INTS("kernel_shape", "3,3"), A_INTS("strides", "2,2"), A_INTS("pads", "1,1,1,1")}, .grad = 1},
    {.op = "AveragePool", .opset = 11, .note = "3x3 stride 2 pad 1", .in = {X},
     .attr = {A_INTS("kernel_shape", "3,3"), A_INTS("strides", "2,2"), A_INTS("pads", "1,1,1,1")}, .grad = 1,
     .tol = 1e-6},
    {.op = "AveragePool", .opset = 11, .note = "2x2, ceil, count_include_pad", .in = {X},
     .attr = {A_INTS("kernel_shape", "2,2"), A_INTS("pads", "0,1,1,0"), A_INT("ceil_mode", 1),
              A_INT("count_include_pad", 1)}, .grad = 1, .tol = 1e-6},
    {.op = "MaxPool", .opset = 12, .note = "2x2, ceil", .in = {X},
     .attr = {A_INTS("kernel_shape", "2,2"), A_INTS("pads", "0,1,1,0"), A_INT("ceil_mode", 1)}, .grad = 1},
    {.op = "MaxPool", .opset = 12, .note = "2x2 stride 2 (windows apart)", .in = {X},
     .attr = {A_INTS("kernel_shape", "2,2"), A_INTS("strides", "2,2")}, .grad = 1},
    {.op = "MaxPool", .opset = 12, .note = "2x2 stride 2, pads, ceil", .in = {X},
     .attr = {A_INTS("kernel_shape", "2,2"), A_INTS("strides", "2,2"), A_INTS("pads", "0,1,1,0"),
              A_INT("ceil_mode", 1)}, .grad = 1},
    {.op = "MaxPool", .opset = 12, .note = "2x2 stride 3", .in = {X},
     .attr = {A_INTS("kernel_shape", "2,2"), A_INTS("strides", "3,3")}, .grad = 1},
    {.op = "MaxPool", .opset = 12, .note = "3x3 stride 2 pad 1 on 9x7, ceil: windows past the end",
     .in = {F32("3,5,9,7", -2, 2)},
     .attr = {A_INTS("kernel_shape", "3,3"), A_INTS("strides", "2,2"), A_INTS("pads", "1,1,1,1"),
              A_INT("ceil_mode", 1)}, .grad = 1},
    {.op = "MaxPool", .opset = 12, .note = "3x2 stride 1,2 pad 1,0 (kernel and strides at run time)", .in = {X},
     .attr = {A_INTS("kernel_shape", "3,2"), A_INTS("strides", "1,2"), A_INTS("pads", "1,0,1,0")}, .grad = 1},
    {.op = "MaxPool", .opset = 12, .note = "2x2 dilation 2 (the general kernel)", .in = {X},
     .attr = {A_INTS("kernel_shape", "2,2"), A_INTS("dilations", "2,2")}, .grad = 1},
    {.op = "GlobalAveragePool", .opset = 1, .in = {X}, .grad = 1, .tol = 1e-6},
    {.op = "GlobalMaxPool", .opset = 1, .in = {X}, .grad = 1},
};
/* clang-format on */

const hc_family hc_family_reduce = {"reduce", cases, (int)(sizeof cases / sizeof cases[0])};

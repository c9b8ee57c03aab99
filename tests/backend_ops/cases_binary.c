/* Cases of the broadcast elementwise ops: Add, Sub, Mul, Div (and the
 * broadcast operand's gradient as column sums, row sums, one row, few long
 * rows, both operands broadcast), Pow, Min, Max, Sum, Mean, Where, PRelu. */
#include "harness.h"

#define X F32("4,3,6,6", -2, 2)
#define POS(shape_) F32(shape_, 0.5, 2)

/* clang-format off */
static const hc_case cases[] = {
    {.op = "Add|Sub|Mul|Div", .opset = 14, .note = "same shape", .in = {X, POS("4,3,6,6")}, .grad = 3,
     .tol = 1e-6},
    {.op = "Add|Sub|Mul|Div", .opset = 14, .note = "[N,C,H,W] op [1,C,1,1]", .in = {X, POS("1,3,1,1")},
     .grad = 3, .tol = 1e-6},
    {.op = "Add|Sub|Mul|Div", .opset = 14, .note = "[W] op [N,C,H,W]", .in = {POS("6"), X}, .grad = 3,
     .tol = 1e-6},
    /* the broadcast operand's gradient */
    {.op = "Add|Mul", .opset = 14, .note = "column sums: a bias over 300 rows (several slices)",
     .in = {F32("300,70", -1, 1), POS("70")}, .grad = 3, .tol = 1e-6},
    {.op = "Add|Mul", .opset = 14, .note = "column sums: a position embedding",
     .in = {F32("5,65,12", -1, 1), POS("1,65,12")}, .grad = 3, .tol = 1e-6},
    {.op = "Add|Mul", .opset = 14, .note = "row sums: a per-channel scale (squeeze-and-excitation)",
     .in = {F32("4,6,5,7", -1, 1), POS("4,6,1,1")}, .grad = 3, .tol = 1e-6},
    {.op = "Add|Mul", .opset = 14, .note = "one row", .in = {POS("1"), F32("4,6,5,7", -1, 1)}, .grad = 3,
     .tol = 1e-6},
    {.op = "Add|Mul", .opset = 14, .note = "an attention scale: one row, sliced",
     .in = {F32("8,3,65,64", -1, 1), F32("", 0.5, 2)}, .grad = 3, .tol = 1e-6},
    {.op = "Add|Mul", .opset = 14, .note = "three rows, sliced", .in = {POS("3,1"), F32("3,40000", -1, 1)},
     .grad = 3, .tol = 1e-6},
    {.op = "Add|Mul", .opset = 14, .note = "both broadcast: rows and columns",
     .in = {F32("6,5,1", -1, 1), POS("1,1,7")}, .grad = 3, .tol = 1e-6},
    {.op = "Add|Mul", .opset = 14, .note = "both broadcast, a run in the middle (the general kernels)",
     .in = {F32("6,1,7", -1, 1), POS("5,1")}, .grad = 3, .tol = 1e-6},
    {.op = "Mul", .opset = 14, .note = "same shape, odd size", .in = {F32("3,5,7,1", -2, 2), POS("3,5,7,1")},
     .grad = 3, .tol = 1e-6},
    /* Pow: positive bases (tol 1e-5: CUDA's powf is within a few ulp, not correctly rounded) */
    {.op = "Pow", .opset = 15, .note = "same shape", .in = {POS("4,3,6,6"), X}, .grad = 3, .tol = 1e-5},
    {.op = "Pow", .opset = 15, .note = "[N,C,H,W] ^ [1,C,1,1]", .in = {POS("4,3,6,6"), F32("1,3,1,1", -2, 2)},
     .grad = 3, .tol = 1e-5},
    {.op = "Pow", .opset = 13, .note = "^ 2 (LayerNorm's square, any sign)", .in = {X, SCALAR(2)}, .grad = 1,
     .tol = 1e-6},
    {.op = "Pow", .opset = 15, .note = "[W] ^ [N,C,H,W]", .in = {POS("6"), X}, .grad = 3, .tol = 1e-5},
    {.op = "Pow", .opset = 15, .note = "^ int64 [W] (host fallback)",
     .in = {POS("4,3,6,6"), I64(NULL, "2,3,-1,0,1,2")}, .grad = 1, .native = HC_HOST, .tol = 1e-6},
    /* Min, Max */
    {.op = "Min|Max", .opset = 13, .note = "same shape", .in = {X, X}, .grad = 3, .tol = 1e-6},
    {.op = "Min|Max", .opset = 6, .note = "same shape", .in = {X, X}, .grad = 3, .tol = 1e-6},
    {.op = "Min|Max", .opset = 13, .note = "[N,C,H,W] [1,C,1,1]", .in = {X, F32("1,3,1,1", -2, 2)}, .grad = 3,
     .tol = 1e-6},
    {.op = "Min|Max", .opset = 13, .note = "[W] [N,C,H,W]", .in = {F32("6", -2, 2), X}, .grad = 3,
     .tol = 1e-6},
    {.op = "Min|Max", .opset = 13, .note = "ties: one tensor twice (the first gets dY)", .in = {X, SAME(0)},
     .grad = 3},
    {.op = "Min|Max", .opset = 13, .note = "of three (host fallback)",
     .in = {X, F32("1,3,1,1", -2, 2), F32("6", -2, 2)}, .grad = 7, .native = HC_HOST, .tol = 1e-6},
    /* Sum, Mean: two inputs on the elementwise kernels, three on the host */
    {.op = "Sum|Mean", .opset = 13, .note = "equal shapes", .in = {F32("4,5,6", -2, 2), F32("4,5,6", -2, 2)},
     .grad = 3, .tol = 1e-6},
    {.op = "Sum|Mean", .opset = 13, .note = "broadcast", .in = {F32("4,5,6", -2, 2), F32("5,1", -2, 2)},
     .grad = 3, .tol = 1e-6},
    {.op = "Mean", .opset = 13, .note = "of three (host fallback)",
     .in = {F32("4,5,6", -2, 2), F32("5,1", -2, 2), F32("4,5,6", -2, 2)}, .grad = 7, .native = HC_HOST,
     .tol = 1e-6},
    /* Where: the bool condition on the host, X and Y broadcast with it */
    {.op = "Where", .opset = 16, .note = "same shape", .in = {BOOLS("4,3,6,6"), X, X}, .grad = 6,
     .tol = 1e-6},
    {.op = "Where", .opset = 16, .note = "cond [N,1,H,W], X [N,C,H,W], Y [1,C,1,1]",
     .in = {BOOLS("4,1,6,6"), X, F32("1,3,1,1", -2, 2)}, .grad = 6, .tol = 1e-6},
    {.op = "Where", .opset = 9, .note = "cond [N,1,H,W], X scalar, Y [N,C,H,W] (masked fill)",
     .in = {BOOLS("4,1,6,6"), SCALAR(-1e4), X}, .grad = 6, .tol = 1e-6},
    /* PRelu: the slope per channel (as PyTorch exports it), a scalar, X's shape, a row, [4,1,6,1] (the
       generic broadcast reduction of dSlope) */
    {.op = "PRelu", .opset = 16, .note = "slope [3,1,1] (per channel)", .in = {X, F32("3,1,1", 0.05, 0.5)},
     .grad = 3, .tol = 1e-6},
    {.op = "PRelu", .opset = 9, .note = "slope [3,1,1]", .in = {X, F32("3,1,1", 0.05, 0.5)}, .grad = 3,
     .tol = 1e-6},
    {.op = "PRelu", .opset = 16, .note = "slope [1] (scalar)", .in = {X, F32("1", 0.05, 0.5)}, .grad = 3,
     .tol = 1e-6},
    {.op = "PRelu", .opset = 16, .note = "slope of X's shape", .in = {X, F32("4,3,6,6", -0.5, 0.5)},
     .grad = 3, .tol = 1e-6},
    {.op = "PRelu", .opset = 16, .note = "slope [6] (a row)", .in = {X, F32("6", 0.1, 1)}, .grad = 3,
     .tol = 1e-6},
    {.op = "PRelu", .opset = 16, .note = "slope [4,1,6,1]", .in = {X, F32("4,1,6,1", 0.1, 1)}, .grad = 3,
     .tol = 1e-6},
    {.op = "PRelu", .opset = 16, .note = "slope [5] against X [4,3,6,6]", .in = {X, F32("5", 0.1, 1)},
     .expect = HC_FAILS_FORWARD, .native = HC_EITHER},
};
/* clang-format on */

const hc_family hc_family_binary = {"binary", cases, (int)(sizeof cases / sizeof cases[0])};

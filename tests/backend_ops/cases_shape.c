/* Cases of the shape ops (copies and strided views): Flatten, Identity,
 * Reshape, Squeeze, Unsqueeze, Concat, Slice, Split, Expand, Tile,
 * Transpose (one element a thread, 32 x 32 tiles, four elements a thread),
 * DepthToSpace, SpaceToDepth, Trilu, Pad (each mode; pads and value on the
 * host; negative pads crop; the copies of reflect / edge / wrap added back
 * in the CPU's order; pads over 16 in those modes on the host). Shape,
 * index and pad inputs stay on the host. Compared exactly. */
#include "harness.h"

#define X F32("4,3,6,6", -2, 2)
#define PX F32("2,3,5,6", -1, 1)
#define PADS_1 "0,0,1,2,0,0,3,1"
#define PADS_CROP "0,1,-1,2,0,-1,2,-2"

/* clang-format off */
static const hc_case cases[] = {
    {.op = "Flatten", .opset = 13, .in = {X}, .grad = 1},
    {.op = "Identity", .opset = 16, .in = {X}, .grad = 1},
    {.op = "Reshape", .opset = 14, .note = "shape on the host", .in = {X, I64(NULL, "4,-1,6")}, .grad = 1},
    {.op = "Unsqueeze", .opset = 13, .in = {X, I64(NULL, "0")}, .grad = 1},
    {.op = "Squeeze", .opset = 13, .in = {F32("4,1,6,6", -1, 1), I64(NULL, "1")}, .grad = 1},
    {.op = "Concat", .opset = 13, .note = "axis 1", .in = {X, F32("4,2,6,6", -1, 1), F32("4,5,6,6", -1, 1)},
     .attr = {A_INT("axis", 1)}, .grad = 7},
    {.op = "Slice", .opset = 13, .note = "steps -2, -1, 2",
     .in = {X, I64(NULL, "-1,5,0"), I64(NULL, "-9223372036854775808,0,100"), I64(NULL, "0,2,3"),
            I64(NULL, "-2,-1,2")}, .grad = 1},
    {.op = "Split", .opset = 18, .note = "num_outputs 3 over 7 (3, 3, 1)", .in = {F32("4,7,3,2", -1, 1)},
     .attr = {A_INT("axis", 1), A_INT("num_outputs", 3)}, .n_out = 3, .grad = 1},
    {.op = "Split", .opset = 13, .note = "split 2, 5 (host input)",
     .in = {F32("4,7,3,2", -1, 1), I64(NULL, "2,5")}, .attr = {A_INT("axis", 1)}, .n_out = 2, .grad = 1},
    {.op = "Expand", .opset = 13, .note = "[1,3,1,6] to [4,1,5,6]",
     .in = {F32("1,3,1,6", -1, 1), I64(NULL, "4,1,5,6")}, .grad = 1, .tol = 1e-6},
    {.op = "Tile", .opset = 13, .note = "[2,3,2,3] by 2, 1, 3, 2",
     .in = {F32("2,3,2,3", -1, 1), I64(NULL, "2,1,3,2")}, .grad = 1, .tol = 1e-6},
    /* Transpose */
    {.op = "Transpose", .opset = 13, .note = "NCHW to NHWC", .in = {X}, .attr = {A_INTS("perm", "0,2,3,1")},
     .grad = 1},
    {.op = "Transpose", .opset = 13, .note = "rank 5: attention's [B,N,3,H,d] to [3,B,H,N,d]",
     .in = {F32("2,5,3,2,4", -1, 1)}, .attr = {A_INTS("perm", "2,0,3,1,4")}, .grad = 1},
    {.op = "Transpose", .opset = 13, .note = "last two axes (tiled, partial tiles): K^T of attention",
     .in = {F32("3,40,37", -1, 1)}, .attr = {A_INTS("perm", "0,2,1")}, .grad = 1},
    {.op = "Transpose", .opset = 13, .note = "NCHW to NHWC (tiled)", .in = {F32("2,20,6,7", -1, 1)},
     .attr = {A_INTS("perm", "0,2,3,1")}, .grad = 1},
    {.op = "Transpose", .opset = 13, .note = "attention's head split, d = 8 (four elements a thread)",
     .in = {F32("3,5,4,8", -1, 1)}, .attr = {A_INTS("perm", "0,2,1,3")}, .grad = 1},
    /* DepthToSpace, SpaceToDepth, Trilu (k on the host) */
    {.op = "DepthToSpace", .opset = 13, .note = "DCR", .in = {F32("2,12,3,2", -1, 1)},
     .attr = {A_INT("blocksize", 2)}, .grad = 1},
    {.op = "DepthToSpace", .opset = 13, .note = "CRD", .in = {F32("2,12,3,2", -1, 1)},
     .attr = {A_INT("blocksize", 2), A_STR("mode", "CRD")}, .grad = 1},
    {.op = "SpaceToDepth", .opset = 13, .in = {F32("2,3,4,6", -1, 1)}, .attr = {A_INT("blocksize", 2)},
     .grad = 1},
    {.op = "SpaceToDepth", .opset = 28, .note = "with a mode attribute", .in = {F32("2,3,4,6", -1, 1)},
     .attr = {A_INT("blocksize", 2), A_STR("mode", "CRD")}, .grad = 1},
    {.op = "Trilu", .opset = 14, .note = "lower, k = -1", .in = {X, I64(NULL, "-1")},
     .attr = {A_INT("upper", 0)}, .grad = 1},
    {.op = "Trilu", .opset = 14, .note = "upper, k = 2", .in = {X, I64(NULL, "2")}, .grad = 1},
    {.op = "Trilu", .opset = 14, .note = "upper, no k", .in = {X}, .grad = 1},
    /* Pad */
    {.op = "Pad", .opset = 19, .note = "value", .in = {PX, I64(NULL, PADS_1), SCALAR(0.75)},
     .attr = {A_STR("mode", "constant")}, .grad = 1},
    {.op = "Pad", .opset = 19, .in = {PX, I64(NULL, PADS_1)}, .attr = {A_STR("mode", "reflect")}, .grad = 1},
    {.op = "Pad", .opset = 19, .in = {PX, I64(NULL, PADS_1)}, .attr = {A_STR("mode", "edge")}, .grad = 1},
    {.op = "Pad", .opset = 19, .in = {PX, I64(NULL, PADS_1)}, .attr = {A_STR("mode", "wrap")}, .grad = 1},
    {.op = "Pad", .opset = 19, .note = "crop", .in = {PX, I64(NULL, PADS_CROP)},
     .attr = {A_STR("mode", "constant")}, .grad = 1},
    {.op = "Pad", .opset = 19, .note = "crop", .in = {PX, I64(NULL, PADS_CROP)},
     .attr = {A_STR("mode", "reflect")}, .grad = 1},
    {.op = "Pad", .opset = 19, .note = "crop", .in = {PX, I64(NULL, PADS_CROP)},
     .attr = {A_STR("mode", "edge")}, .grad = 1},
    {.op = "Pad", .opset = 19, .note = "crop", .in = {PX, I64(NULL, PADS_CROP)},
     .attr = {A_STR("mode", "wrap")}, .grad = 1},
    {.op = "Pad", .opset = 18, .note = "axes", .in = {PX, I64(NULL, "3,2,4,5"), OMIT, I64(NULL, "-2,3")},
     .attr = {A_STR("mode", "constant")}, .grad = 1},
    {.op = "Pad", .opset = 18, .note = "axes", .in = {PX, I64(NULL, "3,2,4,5"), OMIT, I64(NULL, "-2,3")},
     .attr = {A_STR("mode", "reflect")}, .grad = 1},
    {.op = "Pad", .opset = 18, .note = "axes", .in = {PX, I64(NULL, "3,2,4,5"), OMIT, I64(NULL, "-2,3")},
     .attr = {A_STR("mode", "edge")}, .grad = 1},
    {.op = "Pad", .opset = 18, .note = "axes", .in = {PX, I64(NULL, "3,2,4,5"), OMIT, I64(NULL, "-2,3")},
     .attr = {A_STR("mode", "wrap")}, .grad = 1},
    {.op = "Pad", .opset = 13, .note = "pad 20", .in = {PX, I64(NULL, "0,0,20,0,0,0,0,0")},
     .attr = {A_STR("mode", "constant")}, .grad = 1},
    {.op = "Pad", .opset = 13, .note = "pad 20 (host fallback)", .in = {PX, I64(NULL, "0,0,20,0,0,0,0,0")},
     .attr = {A_STR("mode", "reflect")}, .grad = 1, .native = HC_HOST},
    {.op = "Pad", .opset = 13, .note = "pad 20 (host fallback)", .in = {PX, I64(NULL, "0,0,20,0,0,0,0,0")},
     .attr = {A_STR("mode", "edge")}, .grad = 1, .native = HC_HOST},
    {.op = "Pad", .opset = 13, .note = "pad 20 (host fallback)", .in = {PX, I64(NULL, "0,0,20,0,0,0,0,0")},
     .attr = {A_STR("mode", "wrap")}, .grad = 1, .native = HC_HOST},
    {.op = "Pad", .opset = 2, .note = "constant, attributes", .in = {PX},
     .attr = {A_INTS("pads", PADS_1), A_FLOAT("value", -2)}, .grad = 1},
};
/* clang-format on */

const hc_family hc_family_shape = {"shape", cases, (int)(sizeof cases / sizeof cases[0])};

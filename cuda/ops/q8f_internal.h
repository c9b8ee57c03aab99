/* What the two halves of the q8f ops' CUDA kernels share: q8f.cu (the
 * calibration state, the forward, the straight-through backward) and
 * q8f_table.cu (the table-derived backward, --q8-grad table). */
#ifndef AMD_CUDA_OPS_Q8F_INTERNAL_H
#define AMD_CUDA_OPS_Q8F_INTERNAL_H

#include "ops_internal.h"

#include "../q8_gemm.h"
#include "../q8_grad.h"

extern "C" {
#include "../../src/ops/q8_grad.h"
#include "../../src/ops/q8f.h"
#include "../../src/ops/quant.h"
}

/* A node's calibration state on the device, with the data parameters made from it. */
struct q8f_dev {
  double lo, hi;
  int calls;
  int32_t zp;
  float scale;
  int32_t pad;
};

struct q8f_entry {
  const void *attrs;  /* the node's attribute block (the key) */
  amd_q8f_state seen; /* the host state when last uploaded or read back */
  int pending;        /* a captured call may have moved the device state: read it back */
  q8f_dev *dev;
};

/* A Conv's geometry for the code kernels (k_q8f_im2col, k_q8f_col2im_add): one group g0, nb images. */
struct q8f_conv {
  int64_t nb, c, cg, g0, h, w, kh, kw, oh, ow, sh, sw, dh, dw, ph, pw, kdim, osz, L, ld;
};

static inline int64_t round16(int64_t k) { return (k + 15) / 16 * 16; }

/* What every q8f forward shares: the node's state brought up to date with this call's data x, the weight's
 * scales and zero points (nch channels, inner) and codes in the TN layout (rows or not, see k_q8f_wquant_rows
 * and _cols). frozen (the table-derived backward): no calibration, only the data's scale and zero point made
 * again from the range (the CPU's `frozen` copy of the attributes). */
struct q8f_run {
  q8f_entry *e;
  const int32_t *table; /* the mode's table as the GEMM's first operand sees it */
  int sgn, calibrating;
  int32_t qmin, qmax;
  uint32_t x;     /* XOR of the stored codes (0x80: AMD_Q8_U8X) */
  amd_q8_fmt fmt; /* of both operands' codes */
  scratch ws, wz, wq, wsum, part, bins;
  int64_t ldw;
  const uint32_t *wsums; /* the weight's rows' sums of codes (wsum), or NULL where not made */
};

int q8f_begin(const amd_node *n, const amd_tensor *x, const amd_tensor *w, int64_t nch, int64_t inner, int rows,
              int64_t K, int64_t N, int transposed_table, int frozen, q8f_run &r, amd_status *st);
/* Conv: the codes of p's images (xs, nx codes in all) unfolded into col, their rows' sums into sums. */
int q8f_im2col(const q8f_conv &p, const uint8_t *xs, int64_t nx, const q8f_run &r, uint8_t *col, uint32_t *sums,
               amd_status *st);
/* The data's codes into dst (rows of K codes at leading dimension ld). */
int xquant(int64_t nx, int64_t K, int64_t ld, const float *x, const q8f_run &r, uint8_t *dst, amd_status *st);
/* The table-derived backward's context (made on first use). */
amd_cuda_q8g_ctx *q8_grad_ctx(amd_status *st);

enum { Q8F_CONV, Q8F_GEMM, Q8F_MATMUL };
/* The table's terms of node n's gradients (q8f_table.cu; nothing in the straight-through mode), added to
 * dx (x's gradient before the clipping) and to din[1] (the weight's). */
int q8f_table_backward(int kind, const amd_node *n, const amd_tensor *const *in, const amd_tensor *const *dout,
                       float *dx, amd_tensor *const *din, amd_status *st);

#endif

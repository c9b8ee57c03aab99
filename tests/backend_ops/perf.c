/* -m perf: each case timed on the CPU and on the backend under test, a
 * benchmark, not a test. Per side: `warm` runs, a wait for the backend's
 * queue, `runs` runs, a wait; the forward (outputs made and freed each run,
 * as the executor does) and, where the case has a gradient, the backward
 * (accumulating into the same buffers each run). Printed per case: ms per
 * run, for the GEMM ops the forward's multiply-adds per second, and the
 * backend's speed-up over the CPU. */
#include <string.h>
#include <time.h>

#include "exec_case.h"

enum { WARM = 2 };

static void *scratch; /* 4 bytes of backend memory: reading them back waits for its queue */

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void wait_for(const amd_backend *be) {
  float h;
  amd_status st = {{0}};
  if (be->device == AMD_DEVICE_CPU || !scratch) return;
  AMD_ASSERT(be->buf->mem_to_host(&h, scratch, sizeof h, &st) == 0);
}

void hc_perf_begin(const hc_opts *o, hb_target *t) {
  amd_status st = {{0}};
  if (t->be->device != AMD_DEVICE_CPU) AMD_ASSERT(t->be->buf->mem_alloc(&scratch, sizeof(float), &st) == 0);
  printf("-m perf, %s against the cpu: %d runs after %d warm-up runs, ms per run; GMAC/s: the forward's "
         "multiply-adds (GEMM ops); x: the cpu's time over %s's\n",
         t->entry->name, o->runs, WARM, t->entry->name);
  printf("%-8s %12s %12s %12s %9s %9s\n", "backend", "fwd ms", "fwd GMAC/s", "bwd ms", "fwd x", "bwd x");
}

void hc_perf_end(hb_target *t) {
  if (scratch) t->be->buf->mem_free(scratch);
  scratch = NULL;
}

/* The forward's multiply-adds of a GEMM op (0 for the others). */
static double gemm_macs(const amd_node *n, amd_tensor *const *in, const amd_tensor *out) {
  const double y = (double)amd_tensor_numel(&out[0]);
  if (n->op->idx == AMD_OP_IDX_Conv) return y * (double)amd_tensor_numel(in[1]) / (double)in[1]->dims[0];
  if (n->op->idx == AMD_OP_IDX_Gemm) return y * (double)amd_tensor_numel(in[0]) / (double)out[0].dims[0];
  if (n->op->idx == AMD_OP_IDX_MatMul) return y * (double)in[0]->dims[in[0]->rank - 1];
  return 0;
}

/* ms per forward through be; -1 on an error (st). */
static double time_forward(const amd_backend *be, const amd_node *n, const amd_ctx *ctx0,
                           amd_tensor *const *in, int runs, amd_status *st) {
  double t0 = 0;
  for (int i = 0; i < WARM + runs; i++) {
    if (i == WARM) wait_for(be), t0 = now_ms();
    amd_ctx ctx = *ctx0;
    amd_tensor out[HC_MAX_OUT] = {{0}};
    if (amd_backend_forward_node(be, n, &ctx, (const amd_tensor *const *)in, out, 0, st)) return -1;
    hc_free_outs(be, out, n->n_out);
  }
  wait_for(be);
  return (now_ms() - t0) / runs;
}

static double time_backward(const amd_backend *be, const amd_node *n, const amd_ctx *ctx0,
                            amd_tensor *const *in, const amd_tensor *out, const amd_tensor **dout,
                            amd_tensor **din, int runs, amd_status *st) {
  double t0 = 0;
  for (int i = 0; i < WARM + runs; i++) {
    if (i == WARM) wait_for(be), t0 = now_ms();
    amd_ctx ctx = *ctx0;
    if (amd_backend_backward_node(be, n, &ctx, (const amd_tensor *const *)in, out, dout, din, st)) return -1;
  }
  wait_for(be);
  return (now_ms() - t0) / runs;
}

static void print_row(const char *be, double fwd, double macs, double bwd, double fwd_cpu, double bwd_cpu) {
  char gmacs[32] = "", bw[32] = "", fx[32] = "", bx[32] = "";
  if (macs > 0 && fwd > 0) snprintf(gmacs, sizeof gmacs, "%.2f", macs / (fwd * 1e6));
  if (bwd >= 0) snprintf(bw, sizeof bw, "%.4f", bwd);
  if (fwd_cpu > 0 && fwd > 0) snprintf(fx, sizeof fx, "%.1f", fwd_cpu / fwd);
  if (bwd_cpu > 0 && bwd > 0) snprintf(bx, sizeof bx, "%.1f", bwd_cpu / bwd);
  printf("%-8s %12.4f %12s %12s %9s %9s\n", be, fwd, gmacs, bw, fx, bx);
}

void hc_perf_case(const hc_opts *o, hb_target *t, const hc_run *r, unsigned mode_bit) {
  const hc_case *c = r->c;
  hc_exec x;
  amd_status st = {{0}};
  if (mode_bit == HC_M_AM16_EXACT) t->entry->set_exact_tier(1);
  printf("%s%s%s\n", r->label, mode_bit ? " | " : "", mode_bit ? hc_mode_name(mode_bit) : "");
  amd_tensor cout[HC_MAX_OUT], gout[HC_MAX_OUT], dy[HC_MAX_OUT], ddy[HC_MAX_OUT], cg[HC_MAX_IN],
      gg[HC_MAX_IN];
  memset(cout, 0, sizeof cout), memset(gout, 0, sizeof gout), memset(dy, 0, sizeof dy);
  memset(ddy, 0, sizeof ddy), memset(cg, 0, sizeof cg), memset(gg, 0, sizeof gg);
  if (hc_exec_open(&x, o, t, r, "perf", mode_bit) || hc_forward_both(&x, cout, gout)) {
    printf("  not timed: %s%s", x.node ? "" : x.bind_st.msg, x.notes);
    if (!x.node) printf("\n");
    hc_exec_close(&x);
    if (mode_bit == HC_M_AM16_EXACT) t->entry->set_exact_tier(0);
    return;
  }
  const int n_out = x.node->n_out, grad = c->grad && x.node->op->backward;
  const double macs = gemm_macs(x.node, x.in, cout);
  double fwd[2], bwd[2] = {-1, -1};
  fwd[0] = time_forward(&amd_backend_cpu, x.node, &x.cctx, x.in, o->runs, &st);
  fwd[1] = fwd[0] < 0 ? -1 : time_forward(t->be, x.node, &x.gctx, x.dev, o->runs, &st);
  if (grad && fwd[1] >= 0) {
    const amd_tensor *cdo[HC_MAX_OUT] = {0}, *gdo[HC_MAX_OUT] = {0};
    amd_tensor *cdin[HC_MAX_IN] = {0}, *gdin[HC_MAX_IN] = {0};
    hc_make_dy(&x, cout, n_out, c->dy_all, dy, ddy, cdo, gdo);
    hc_grad_buffers(&x, -0.5, 0.5, cg, gg, cdin, gdin);
    bwd[0] = time_backward(&amd_backend_cpu, x.node, &x.cctx, x.in, cout, cdo, cdin, o->runs, &st);
    if (bwd[0] >= 0) bwd[1] = time_backward(t->be, x.node, &x.gctx, x.dev, gout, gdo, gdin, o->runs, &st);
  }
  if (fwd[1] < 0 || (grad && bwd[1] < 0)) {
    printf("  not timed: %s\n", st.msg);
  } else {
    print_row("cpu", fwd[0], macs, bwd[0], 0, 0);
    print_row(t->entry->name, fwd[1], macs, bwd[1], fwd[0], bwd[0]);
  }
  hc_free_grads(&x, cg, gg);
  hc_free_dy(&x, dy, ddy, n_out);
  hc_free_outs(&amd_backend_cpu, cout, n_out);
  hc_free_outs(t->be, gout, n_out);
  hc_exec_close(&x);
  if (mode_bit == HC_M_AM16_EXACT) t->entry->set_exact_tier(0);
}

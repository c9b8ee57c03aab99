/* The runners of -m forward and -m grad: one case on the CPU and on the
 * backend under test.
 *
 * forward: both forwards from the same inputs and context (ctx.rng 777;
 * the fused Relu / residual where the case has them), every float output
 * compared, and the rng after the forward equal (the random ops and Dropout
 * draw the same numbers on both).
 * grad: both forwards, then both backwards with a random dY (into output 0,
 * or every float output with dy_all) into gradient buffers pre-filled with
 * the same random values (backward accumulates), every gradient of `grad`
 * compared; then, where the backend says its backward may write over its
 * buffers (compute->bwd_overwrite), again with the backend's buffers full of
 * NaN (the trainer's fresh buffers) and the CPU adding to zeros.
 * A case that must fail: refused at bind, or both forwards (or both
 * backwards) fail, the backend with a message. In every case the backend's
 * own kernels, or its host fallback, must take the node as the case says. */
#include <math.h>
#include <string.h>

#include "exec_case.h"

const char *hc_mode_name(unsigned mode_bit) {
  switch (mode_bit) {
  case HC_M_ACC32:
    return "acc32";
  case HC_M_AM16:
    return "am16";
  case HC_M_AM16_EXACT:
    return "am16 exact tier";
  default:
    return "?";
  }
}

void hc_free_outs(const amd_backend *be, amd_tensor *out, int n) {
  for (int o = 0; o < n; o++)
    if (out[o].data) be->buf->free(&out[o]);
}

void hc_grad_buffers(hc_exec *x, double lo, double hi, amd_tensor *cg, amd_tensor *gg, amd_tensor **cdin,
                     amd_tensor **gdin) {
  amd_status st = {{0}};
  for (int k = 0; k < x->n_in; k++) {
    if (!((x->run->c->grad >> k) & 1) || !x->in[k]) continue;
    cg[k] = hc_draw(x->in[k], lo, hi);
    AMD_ASSERT(amd_backend_upload(x->t->be, &cg[k], &gg[k], &st) == 0);
    cdin[k] = &cg[k];
    gdin[k] = &gg[k];
  }
}

void hc_free_grads(hc_exec *x, amd_tensor *cg, amd_tensor *gg) {
  for (int k = 0; k < HC_MAX_IN; k++) {
    amd_tensor_free(&cg[k]);
    if (gg[k].data) x->t->be->buf->free(&gg[k]);
  }
}

/* dY: random in [-1, 1) for output 0 (and with dy_all every float output), on the host (cdo) and the backend.
 */
void hc_make_dy(hc_exec *x, const amd_tensor *cout, int n_out, int all, amd_tensor *dy, amd_tensor *ddy,
                const amd_tensor **cdo, const amd_tensor **gdo) {
  amd_status st = {{0}};
  for (int o = 0; o < n_out; o++) {
    if (o > 0 && !(all && cout[o].dtype == AMD_FLOAT)) continue;
    dy[o] = hc_draw(&cout[o], -1, 1);
    AMD_ASSERT(amd_backend_upload(x->t->be, &dy[o], &ddy[o], &st) == 0);
    cdo[o] = &dy[o];
    gdo[o] = &ddy[o];
  }
}

void hc_free_dy(hc_exec *x, amd_tensor *dy, amd_tensor *ddy, int n_out) {
  for (int o = 0; o < n_out; o++) {
    amd_tensor_free(&dy[o]);
    if (ddy[o].data) x->t->be->buf->free(&ddy[o]);
  }
}

/* Both forwards with the case's contexts; 0, or -1 (noted, outputs freed). */
int hc_forward_both(hc_exec *x, amd_tensor *cout, amd_tensor *gout) {
  const int n_out = x->node->n_out;
  amd_status st = {{0}};
  if (amd_backend_forward_node(&amd_backend_cpu, x->node, &x->cctx, (const amd_tensor *const *)x->in, cout, 0,
                               &st)) {
    hc_note(x, "cpu forward: %s", st.msg);
    return -1;
  }
  if (amd_backend_forward_node(x->t->be, x->node, &x->gctx, (const amd_tensor *const *)x->dev, gout, 0,
                               &st)) {
    hc_note(x, "%s forward: %s", x->t->entry->name, st.msg);
    hc_free_outs(&amd_backend_cpu, cout, n_out);
    return -1;
  }
  return 0;
}

static void check_native(hc_exec *x) {
  const int want = x->run->c->native;
  if (!x->t->entry->checks_native || want == HC_EITHER || x->native == (want == HC_NATIVE)) return;
  hc_note(x, "%s runs it on %s, the case expects %s", x->t->entry->name,
          x->native ? "its own kernels" : "the host fallback",
          want == HC_NATIVE ? "its kernels" : "the host");
  x->ok = 0;
}

static void forward_check(hc_exec *x) {
  const hc_case *c = x->run->c;
  const int n_out = x->node->n_out;
  amd_tensor cout[HC_MAX_OUT], gout[HC_MAX_OUT];
  memset(cout, 0, sizeof cout);
  memset(gout, 0, sizeof gout);
  if (hc_forward_both(x, cout, gout)) {
    x->ok = 0;
    return;
  }
  for (int o = 0; o < n_out; o++)
    if (cout[o].dtype == AMD_FLOAT) x->ok &= hc_compare(x, "output", o, &cout[o], &gout[o], c->tol);
  if (x->cctx.rng != x->gctx.rng) {
    hc_note(x, "rng after the forward: cpu %016llx, %s %016llx", (unsigned long long)x->cctx.rng,
            x->t->entry->name, (unsigned long long)x->gctx.rng);
    x->ok = 0;
  }
  hc_free_outs(&amd_backend_cpu, cout, n_out);
  hc_free_outs(x->t->be, gout, n_out);
}

/* The second backward: the backend's buffers of the inputs in ow full of NaN (the others zero), which its
 * backward writes over (ctx.bwd_overwrite); the CPU's zero. */
static void overwrite_check(hc_exec *x, unsigned ow, const amd_tensor *cout, const amd_tensor *gout,
                            const amd_tensor **cdo, const amd_tensor **gdo, amd_tensor *cg, amd_tensor *gg,
                            amd_tensor **cdin, amd_tensor **gdin) {
  amd_status st = {{0}};
  for (int k = 0; k < x->n_in; k++) {
    if (!cdin[k]) continue;
    amd_tensor_free(&cg[k]);
    x->t->be->buf->free(&gg[k]);
    amd_tensor h = {0};
    amd_tensor_set_shape(&cg[k], AMD_FLOAT, x->in[k]->rank, x->in[k]->dims);
    amd_tensor_set_shape(&h, AMD_FLOAT, x->in[k]->rank, x->in[k]->dims);
    AMD_ASSERT(amd_tensor_alloc(&cg[k], &st) == 0 && amd_tensor_alloc(&h, &st) == 0); /* zeros */
    for (int64_t e = 0; ((ow >> k) & 1) && e < amd_tensor_numel(&h); e++) ((float *)h.data)[e] = NAN;
    AMD_ASSERT(amd_backend_upload(x->t->be, &h, &gg[k], &st) == 0);
    amd_tensor_free(&h);
  }
  x->cctx.rng = x->gctx.rng = 777;
  x->gctx.bwd_overwrite = ow;
  int rc = amd_backend_backward_node(&amd_backend_cpu, x->node, &x->cctx, (const amd_tensor *const *)x->in,
                                     cout, cdo, cdin, &st);
  if (rc == 0)
    rc = amd_backend_backward_node(x->t->be, x->node, &x->gctx, (const amd_tensor *const *)x->dev, gout, gdo,
                                   gdin, &st);
  x->gctx.bwd_overwrite = 0;
  if (rc) {
    hc_note(x, "backward writing over the gradient buffers: %s", st.msg);
    x->ok = 0;
  }
  for (int k = 0; rc == 0 && k < x->n_in; k++)
    if (cdin[k])
      x->ok &= hc_compare(x, (ow >> k) & 1 ? "gradient (written over NaN) of input" : "gradient of input", k,
                          &cg[k], &gg[k], x->run->c->tol);
}

static void grad_check(hc_exec *x) {
  const hc_case *c = x->run->c;
  const int n_out = x->node->n_out;
  amd_tensor cout[HC_MAX_OUT], gout[HC_MAX_OUT], dy[HC_MAX_OUT], ddy[HC_MAX_OUT], cg[HC_MAX_IN],
      gg[HC_MAX_IN];
  const amd_tensor *cdo[HC_MAX_OUT] = {0}, *gdo[HC_MAX_OUT] = {0};
  amd_tensor *cdin[HC_MAX_IN] = {0}, *gdin[HC_MAX_IN] = {0};
  memset(cout, 0, sizeof cout), memset(gout, 0, sizeof gout), memset(dy, 0, sizeof dy);
  memset(ddy, 0, sizeof ddy), memset(cg, 0, sizeof cg), memset(gg, 0, sizeof gg);
  if (hc_forward_both(x, cout, gout)) {
    x->ok = 0;
    return;
  }
  hc_make_dy(x, cout, n_out, c->dy_all, dy, ddy, cdo, gdo);
  hc_grad_buffers(x, -0.5, 0.5, cg, gg, cdin, gdin);
  x->cctx.rng = x->gctx.rng = 777;
  amd_status st = {{0}};
  int rc = amd_backend_backward_node(&amd_backend_cpu, x->node, &x->cctx, (const amd_tensor *const *)x->in,
                                     cout, cdo, cdin, &st);
  if (rc) hc_note(x, "cpu backward: %s", st.msg);
  if (rc == 0 && (rc = amd_backend_backward_node(x->t->be, x->node, &x->gctx,
                                                 (const amd_tensor *const *)x->dev, gout, gdo, gdin, &st)))
    hc_note(x, "%s backward: %s", x->t->entry->name, st.msg);
  if (rc) x->ok = 0;
  for (int k = 0; rc == 0 && k < x->n_in; k++)
    if (cdin[k]) x->ok &= hc_compare(x, "gradient of input", k, &cg[k], &gg[k], c->tol);
  const amd_compute *cp = x->t->be->compute;
  const unsigned ow = cp->bwd_overwrite ? cp->bwd_overwrite(x->node, (const amd_tensor *const *)x->dev) : 0;
  if (rc == 0 && (ow & c->grad)) overwrite_check(x, ow & c->grad, cout, gout, cdo, gdo, cg, gg, cdin, gdin);
  hc_free_grads(x, cg, gg);
  hc_free_dy(x, dy, ddy, n_out);
  hc_free_outs(&amd_backend_cpu, cout, n_out);
  hc_free_outs(x->t->be, gout, n_out);
}

/* A case that must fail at load, in the forward or in the backward, on both. */
static void fail_check(hc_exec *x, int bind_rc) {
  const hc_case *c = x->run->c;
  const char *be = x->t->entry->name;
  if (c->expect == HC_FAILS_LOAD || bind_rc) {
    x->ok = c->expect == HC_FAILS_LOAD && bind_rc != 0 && x->bind_st.msg[0];
    hc_note(x, "%s at load: %s", bind_rc ? "refused" : "not refused", bind_rc ? x->bind_st.msg : "(loaded)");
    return;
  }
  check_native(x);
  const int n_out = x->node->n_out;
  amd_tensor cout[HC_MAX_OUT], gout[HC_MAX_OUT];
  memset(cout, 0, sizeof cout), memset(gout, 0, sizeof gout);
  amd_status sc = {{0}}, sg = {{0}};
  amd_ctx cctx = {.training = 1, .rng = 777}, gctx = cctx;
  const int fc = amd_backend_forward_node(&amd_backend_cpu, x->node, &cctx, (const amd_tensor *const *)x->in,
                                          cout, 0, &sc);
  const int fg =
      amd_backend_forward_node(x->t->be, x->node, &gctx, (const amd_tensor *const *)x->dev, gout, 0, &sg);
  if (c->expect == HC_FAILS_FORWARD) {
    x->ok &= fc != 0 && fg != 0 && sg.msg[0];
  } else if (fc || fg) {
    x->ok = 0;
  } else {
    amd_tensor dy[HC_MAX_OUT], ddy[HC_MAX_OUT], cg[HC_MAX_IN], gg[HC_MAX_IN];
    const amd_tensor *cdo[HC_MAX_OUT] = {0}, *gdo[HC_MAX_OUT] = {0};
    amd_tensor *cdin[HC_MAX_IN] = {0}, *gdin[HC_MAX_IN] = {0};
    memset(dy, 0, sizeof dy), memset(ddy, 0, sizeof ddy), memset(cg, 0, sizeof cg), memset(gg, 0, sizeof gg);
    hc_make_dy(x, cout, n_out, 0, dy, ddy, cdo, gdo);
    hc_grad_buffers(x, 0, 0, cg, gg, cdin, gdin);
    const int bc = amd_backend_backward_node(&amd_backend_cpu, x->node, &cctx,
                                             (const amd_tensor *const *)x->in, cout, cdo, cdin, &sc);
    const int bg = amd_backend_backward_node(x->t->be, x->node, &gctx, (const amd_tensor *const *)x->dev,
                                             gout, gdo, gdin, &sg);
    x->ok &= bc != 0 && bg != 0 && sg.msg[0];
    hc_free_grads(x, cg, gg);
    hc_free_dy(x, dy, ddy, n_out);
  }
  hc_note(x, "must fail in the %s (%s): cpu \"%s\", %s \"%s\"",
          c->expect == HC_FAILS_FORWARD ? "forward" : "backward", x->native ? "native" : "host fallback",
          sc.msg, be, sg.msg);
  if (!fc) hc_free_outs(&amd_backend_cpu, cout, n_out);
  if (!fg) hc_free_outs(x->t->be, gout, n_out);
}

void hc_run_case(const hc_opts *o, hb_target *t, const hc_run *r, unsigned mode_bit, hc_tally *tally) {
  hc_exec x;
  const int exact = mode_bit == HC_M_AM16_EXACT;
  if (exact) t->entry->set_exact_tier(1);
  const int bind_rc = hc_exec_open(&x, o, t, r, o->mode == HC_MODE_GRAD ? "grad" : "forward", mode_bit);
  if (r->c->expect != HC_RUNS) {
    fail_check(&x, bind_rc);
  } else if (bind_rc) {
    hc_note(&x, "bind: %s", x.bind_st.msg);
    x.ok = 0;
  } else {
    check_native(&x);
    if (o->mode == HC_MODE_GRAD)
      grad_check(&x);
    else
      forward_check(&x);
  }
  hc_finish(&x, tally);
  hc_exec_close(&x);
  if (exact) t->entry->set_exact_tier(0);
}

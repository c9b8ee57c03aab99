/* The checks that are no op case: the training kernels of the backend under
 * test (src/exec/train_kernels.h) against the CPU reference set on random
 * inputs, and its stream's deferred steps. -o selects them by name
 * ("train.optim") or all at once ("train"); they run in -m forward.
 *
 *  train.softmax_xent  with and without smoothing and loss scale, a NaN logit, a
 *                      tie for the largest logit; 10 and 1000 classes (the CUDA
 *                      backend's thread-a-sample and warp-a-sample kernels)
 *  train.elementwise   all_finite (finite, Inf, NaN), scale and add (exactly), n = 0
 *  train.optim         every optimizer of the list with its options over three
 *                      steps, and an unknown optimizer id refused by both sets
 *  train.deferred      the stream's deferred steps: loss, its sums, the finite
 *                      flag as the CPU's, a cleared step guard stopping the
 *                      guarded optimizer step until guard_reset
 *  train.batches       data_batch against the host's batches (crop, flip,
 *                      cutout), uint8 and float splits, exactly
 *
 * Tolerance: max |got - ref| <= tol * max(1, max |ref|), 1e-9 for the mean
 * loss, 1e-6 for dz and the optimizers' parameters and state. */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "data/dataset.h"
#include "harness.h"
#include "train/batches.h"
#include "train/kernels.h"
#include "train/loss.h"
#include "train/optim.h"

typedef struct sp {
  const amd_backend *be;
  const amd_train_kernels *cpu, *dev;
  const char *name; /* the backend's */
  uint64_t rng;
  hc_tally *tally;
} sp;

static sp sp_open(const hb_target *t, const hc_opts *o, hc_tally *tally, const char *check) {
  sp s = {.be = t->be,
          .cpu = amd_train_kernels_for(AMD_DEVICE_CPU),
          .dev = t->tk,
          .name = t->entry->name,
          .tally = tally};
  uint64_t h = 0xcbf29ce484222325ull ^ (o->seed * 0x9e3779b97f4a7c15ull);
  for (const char *p = check; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
  s.rng = h ? h : 1;
  AMD_ASSERT(s.cpu);
  return s;
}

static double uniform(sp *s) { /* [0, 1) */
  s->rng ^= s->rng << 13, s->rng ^= s->rng >> 7, s->rng ^= s->rng << 17;
  return (double)(s->rng >> 11) / 9007199254740992.0;
}

static void count(sp *s, int ok) { ok ? s->tally->passed++ : s->tally->failed++; }

/* A backend copy of n host floats (NULL: n zeros). */
static float *dev_floats(sp *s, const float *h, int64_t n) {
  amd_status st = {{0}};
  void *d = NULL;
  AMD_ASSERT(s->be->buf->mem_alloc(&d, (size_t)n * sizeof(float), &st) == 0);
  if (h) AMD_ASSERT(s->be->buf->mem_from_host(d, h, (size_t)n * sizeof(float), &st) == 0);
  return d;
}

static float *host_of(sp *s, const float *d, int64_t n) {
  amd_status st = {{0}};
  float *h = malloc((size_t)(n ? n : 1) * sizeof(float));
  AMD_ASSERT(h && s->be->buf->mem_to_host(h, d, (size_t)n * sizeof(float), &st) == 0);
  return h;
}

static float *rand_floats(sp *s, int64_t n, double lo, double hi) {
  float *p = malloc((size_t)(n ? n : 1) * sizeof(float));
  AMD_ASSERT(p);
  for (int64_t i = 0; i < n; i++) p[i] = (float)(lo + (hi - lo) * uniform(s));
  return p;
}

/* max |got - ref| <= tol * max(1, max |ref|) over n floats (got in backend memory when dev, else on the
 * host); prints the line, returns 1 if within. */
static int compare_floats(sp *s, const char *label, const char *what, const float *ref, const float *got,
                          int dev, int64_t n, double tol) {
  float *h = dev ? host_of(s, got, n) : (float *)got;
  double md = 0, mx = 1;
  int64_t at = 0;
  for (int64_t i = 0; i < n; i++) {
    double a = ref[i], b = h[i], d = fabs(a - b);
    if (isnan(a) != isnan(b)) d = INFINITY;
    if (!isnan(md) && (d > md || isnan(d))) md = d, at = i;
    mx = fmax(mx, fabs(a));
  }
  const int ok = md <= tol * mx;
  hc_report(ok, "%s %s: %s max |diff| %.3g (tol %.3g)%s", s->name, label, what, md, tol * mx,
            ok ? "" : " at");
  if (!ok)
    printf("     element %lld: cpu %.9g, %s %.9g\n", (long long)at, (double)ref[at], s->name, (double)h[at]);
  if (dev) free(h);
  return ok;
}

enum { XENT_NAN = 1, XENT_TIE = 2 };
static void softmax_xent(sp *s, int64_t n, int64_t c, float smoothing, float scale, int special) {
  char label[160];
  const int with_nan = special == XENT_NAN;
  snprintf(label, sizeof label, "train.softmax_xent n %lld c %lld smoothing %g scale %g%s", (long long)n,
           (long long)c, smoothing, scale,
           with_nan ? " (a NaN logit)" : special == XENT_TIE ? " (two equal largest logits)" : "");
  amd_status st = {{0}};
  float *z = rand_floats(s, n * c, -4, 4);
  if (with_nan) z[c + 1] = NAN;
  if (special == XENT_TIE) z[c + 3] = z[c + 7] = 9.0f; /* row 1's argmax: the first of the two */
  int64_t *y = malloc((size_t)n * sizeof *y), *pc = malloc((size_t)n * sizeof *pc),
          *pg = malloc((size_t)n * sizeof *pg);
  for (int64_t i = 0; i < n; i++) y[i] = (int64_t)(uniform(s) * (double)c);
  float *dzc = malloc((size_t)(n * c) * sizeof(float)), *dz = dev_floats(s, NULL, n * c),
        *zd = dev_floats(s, z, n * c);
  amd_batch_stats bc = {0}, bg = {0};
  double mc = 0, mg = 0;
  int ok = amd_train_softmax_xent(s->cpu, z, y, n, c, smoothing, scale, dzc, pc, &bc, &mc, &st) == 0;
  ok = ok && amd_train_softmax_xent(s->dev, zd, y, n, c, smoothing, scale, dz, pg, &bg, &mg, &st) == 0;
  if (!ok) hc_report(0, "%s %s: %s", s->name, label, st.msg);
  if (ok) {
    const double d = fabs(mc - mg);
    int same_pred = bc.top1 == bg.top1 && bc.top5 == bg.top5 && bc.n == bg.n;
    for (int64_t i = 0; i < n; i++) same_pred &= pc[i] == pg[i];
    ok = isnan(mc) == isnan(mg) && (isnan(mc) || d <= 1e-9 * fmax(1, fabs(mc))) && same_pred;
    hc_report(ok, "%s %s: mean loss %.17g vs %.17g, top1 %lld/%lld top5 %lld/%lld, predictions %s", s->name,
              label, mc, mg, (long long)bc.top1, (long long)bg.top1, (long long)bc.top5, (long long)bg.top5,
              same_pred ? "equal" : "differ");
    if (!with_nan) ok &= compare_floats(s, label, "dz", dzc, dz, 1, n * c, 1e-6);
  }
  count(s, ok);
  s->be->buf->mem_free(dz);
  s->be->buf->mem_free(zd);
  free(z), free(y), free(pc), free(pg), free(dzc);
}

static void check_softmax_xent(const hb_target *t, const hc_opts *o, hc_tally *tally) {
  sp s = sp_open(t, o, tally, "train.softmax_xent");
  softmax_xent(&s, 37, 10, 0, 1, 0);
  softmax_xent(&s, 37, 10, 0.1f, 1, 0);
  softmax_xent(&s, 5, 1000, 0.1f, 256, 0);
  softmax_xent(&s, 9, 1000, 0, 1, 0);
  softmax_xent(&s, 8, 10, 0, 1, XENT_NAN);
  softmax_xent(&s, 8, 1000, 0, 1, XENT_NAN);
  softmax_xent(&s, 8, 10, 0, 1, XENT_TIE);
  softmax_xent(&s, 8, 1000, 0.1f, 1, XENT_TIE);
}

static void check_elementwise(const hb_target *t, const hc_opts *o, hc_tally *tally) {
  sp s = sp_open(t, o, tally, "train.elementwise");
  amd_status st = {{0}};
  const int64_t n = 100003;
  float *x = rand_floats(&s, n, -3, 3), *y = rand_floats(&s, n, -3, 3);
  float *d = dev_floats(&s, x, n), *e = dev_floats(&s, y, n);
  static const char *const cases[3] = {"finite", "an Inf", "a NaN"};
  const float bad[3] = {0, INFINITY, NAN};
  int ok = 1;
  for (int k = 0; k < 3; k++) { /* all_finite: finite, then one Inf, then one NaN */
    if (k > 0) {
      x[n / 2 + k] = bad[k];
      AMD_ASSERT(s.be->buf->mem_from_host(d, x, (size_t)n * sizeof(float), &st) == 0);
    }
    int fc = -1, fg = -1;
    const int rc = s.cpu->all_finite(x, n, &fc, &st) | s.dev->all_finite(d, n, &fg, &st);
    const int good = rc == 0 && fc == (k == 0) && fg == (k == 0);
    hc_report(good, "%s train.elementwise all_finite, %s: cpu %d, %s %d", s.name, cases[k], fc, s.name, fg);
    ok &= good;
  }
  count(&s, ok);
  x[n / 2 + 1] = x[n / 2 + 2] = 0.5f;
  AMD_ASSERT(s.be->buf->mem_from_host(d, x, (size_t)n * sizeof(float), &st) == 0);
  /* scale and add: one rounded float operation each, so exactly the CPU's */
  float *ref = malloc((size_t)n * sizeof(float));
  memcpy(ref, x, (size_t)n * sizeof(float));
  ok = s.cpu->scale(ref, n, 0.37f, &st) == 0 && s.dev->scale(d, n, 0.37f, &st) == 0;
  count(&s, ok && compare_floats(&s, "train.elementwise scale", "p * 0.37", ref, d, 1, n, 0));
  ok = s.cpu->add(ref, y, n, &st) == 0 && s.dev->add(d, e, n, &st) == 0;
  count(&s, ok && compare_floats(&s, "train.elementwise add", "y + x", ref, d, 1, n, 0));
  ok = s.dev->scale(d, 0, 2.0f, &st) == 0 && s.dev->add(d, e, 0, &st) == 0; /* n = 0: nothing */
  count(&s,
        ok && compare_floats(&s, "train.elementwise scale / add of 0 values", "unchanged", ref, d, 1, n, 0));
  s.be->buf->mem_free(d);
  s.be->buf->mem_free(e);
  free(ref), free(x), free(y);
}

/* Three steps of optimizer o on the CPU and the backend from the same parameters, gradients and zero state.
 */
static void optim_case(sp *s, const char *label, const amd_optim *o) {
  amd_status st = {{0}};
  const int64_t n = 4099;
  const int blocks = amd_optim_state_blocks(o);
  float *p = rand_floats(s, n, -1, 1), *state = calloc((size_t)(2 * n), sizeof(float));
  float *dp = dev_floats(s, p, n), *ds = dev_floats(s, NULL, 2 * n), *dg = dev_floats(s, NULL, n);
  int ok = 1;
  for (int64_t t = 1; ok && t <= 3; t++) {
    float *g = rand_floats(s, n, -0.5, 0.5);
    AMD_ASSERT(s->be->buf->mem_from_host(dg, g, (size_t)n * sizeof(float), &st) == 0);
    amd_optim_update u;
    amd_optim_update_make(o, 0.01 * (double)t, t, &u);
    ok = s->cpu->optim_step(&u, p, g, state, n, 0, &st) == 0 &&
         s->dev->optim_step(&u, dp, dg, ds, n, 0, &st) == 0;
    if (!ok) hc_report(0, "%s %s: step %lld: %s", s->name, label, (long long)t, st.msg);
    free(g);
  }
  if (ok) {
    ok &= compare_floats(s, label, "parameters after 3 steps", p, dp, 1, n, 1e-6);
    if (blocks) ok &= compare_floats(s, label, "state after 3 steps", state, ds, 1, blocks * n, 1e-6);
  }
  count(s, ok);
  s->be->buf->mem_free(dp), s->be->buf->mem_free(ds), s->be->buf->mem_free(dg);
  free(p), free(state);
}

/* An optimizer id outside the list: an error on both, not a silent other optimizer; nothing changed. */
static void optim_unknown(sp *s) {
  amd_status st = {{0}}, sc = {{0}}, sg = {{0}};
  amd_optim bad;
  AMD_ASSERT(amd_optim_init("sgd", &bad, &st) == 0);
  bad.kind = (amd_opt_kind)AMD_OPT_COUNT;
  const int64_t n = 64;
  float *p = rand_floats(s, n, -1, 1), *g = rand_floats(s, n, -1, 1),
        *state = calloc((size_t)(2 * n), sizeof(float));
  float *dp = dev_floats(s, p, n), *dg = dev_floats(s, g, n), *ds = dev_floats(s, NULL, 2 * n);
  amd_optim_update u;
  amd_optim_update_make(&bad, 0.01, 1, &u);
  const int rc = s->cpu->optim_step(&u, p, g, state, n, 0, &sc),
            rg = s->dev->optim_step(&u, dp, dg, ds, n, 0, &sg);
  const int ok = rc != 0 && rg != 0 &&
                 compare_floats(s, "train.optim unknown id", "parameters unchanged", p, dp, 1, n, 0);
  hc_report(ok, "%s train.optim unknown id %d: cpu \"%s\", %s \"%s\"", s->name, (int)bad.kind, sc.msg,
            s->name, sg.msg);
  count(s, ok);
  s->be->buf->mem_free(dp), s->be->buf->mem_free(dg), s->be->buf->mem_free(ds);
  free(p), free(g), free(state);
}

static void check_optim(const hb_target *t, const hc_opts *opts, hc_tally *tally) {
  sp s = sp_open(t, opts, tally, "train.optim");
  amd_status st = {{0}};
  for (int k = 0; k < AMD_OPT_COUNT; k++) { /* every optimizer of the list */
    const amd_optim named = {.kind = (amd_opt_kind)k};
    amd_optim o;
    AMD_ASSERT(amd_optim_init(amd_optim_name(&named), &o, &st) == 0 && (int)o.kind == k);
    for (int variant = 0; variant < 4; variant++) {
      amd_optim v = o;
      const char *what = "defaults";
      if (variant == 1) v.weight_decay = 0.05, what = "weight decay";
      if (variant == 2 && (k == AMD_OPT_SGD || k == AMD_OPT_RMSPROP)) v.momentum = 0.9, what = "momentum";
      if (variant == 3 && k == AMD_OPT_SGD)
        v.momentum = 0.9, v.nesterov = 1, v.weight_decay = 0.01, what = "nesterov";
      if (variant == 3 && k == AMD_OPT_RMSPROP)
        v.momentum = 0.5, v.weight_decay = 0.01, what = "momentum + decay";
      if (variant >= 2 && k != AMD_OPT_SGD && k != AMD_OPT_RMSPROP) continue;
      AMD_ASSERT(amd_optim_check(&v, &st) == 0);
      char label[128];
      snprintf(label, sizeof label, "train.optim %s (%s)", amd_optim_name(&v), what);
      optim_case(&s, label, &v);
    }
  }
  optim_unknown(&s);
}

/* The data of the deferred steps: logits, labels, gradients and parameters, on the host and the
 * backend (z, dz, g, p), and the CPU's loss, sums and dz. */
typedef struct deferred {
  int64_t n, c, np;
  float *z, *g, *p, *dzc;
  int64_t *y;
  float *dev[4];
  double mc;
  amd_batch_stats bc;
} deferred;

/* One deferred step (round 1: with a NaN gradient, which clears the guard); returns 1 when it matched. */
static int deferred_round(sp *s, deferred *d, int round) {
  const amd_stream *sm = s->be->stream;
  amd_status st = {{0}};
  float *dzd = d->dev[0], *dz = d->dev[1], *dg = d->dev[2], *dp = d->dev[3];
  const int slot = round % AMD_STEP_SLOTS;
  amd_optim o;
  AMD_ASSERT(amd_optim_init("sgd", &o, &st) == 0);
  amd_optim_update u;
  amd_optim_update_make(&o, 0.1, 1, &u);
  if (round == 1) {
    d->g[d->np - 1] = NAN;
    AMD_ASSERT(s->be->buf->mem_from_host(dg, d->g, (size_t)d->np * sizeof(float), &st) == 0);
  }
  float *before = host_of(s, dp, d->np);
  int64_t m = 0;
  const int64_t *lab = NULL;
  const void *rows = NULL;
  int fin = -1;
  int ok = sm->guard_reset(&st) == 0 && sm->step_begin(d->y, d->n, slot, &st) == 0 &&
           sm->xent_defer(dzd, d->n, d->c, 0.1f, dz, &st) == 0 && sm->step_end(dg, d->np, &st) == 0 &&
           s->dev->optim_step(&u, dp, dg, NULL, d->np, 1, &st) == 0 && sm->step_finish(slot, &st) == 0 &&
           sm->step_collect(slot, &m, &lab, &rows, &fin, &st) == 0;
  const char *label = round ? "train.deferred step, a NaN gradient" : "train.deferred step";
  if (!ok) hc_report(0, "%s %s: %s", s->name, label, st.msg);
  if (ok) {
    amd_batch_stats bg = {0};
    const double mg = amd_xent_tally(rows, lab, m, NULL, &bg);
    ok = m == d->n && fabs(d->mc - mg) <= 1e-9 * fmax(1, fabs(d->mc)) && d->bc.top1 == bg.top1 &&
         d->bc.top5 == bg.top5 && fin == !round;
    hc_report(ok, "%s %s: mean loss %.17g vs %.17g, finite %d", s->name, label, d->mc, mg, fin);
    ok &= compare_floats(s, label, "dz", d->dzc, dz, 1, d->n * d->c, 1e-6);
    if (round == 1) { /* the guarded step changed nothing */
      ok &= compare_floats(s, label, "parameters unchanged (guard cleared)", before, dp, 1, d->np, 0);
    } else {
      float *ref = malloc((size_t)d->np * sizeof(float));
      memcpy(ref, before, (size_t)d->np * sizeof(float));
      AMD_ASSERT(s->cpu->optim_step(&u, ref, d->g, NULL, d->np, 0, &st) == 0);
      ok &= compare_floats(s, label, "parameters after the guarded step", ref, dp, 1, d->np, 1e-6);
      free(ref);
    }
  }
  free(before);
  return ok;
}

static void check_deferred(const hb_target *t, const hc_opts *o, hc_tally *tally) {
  sp s = sp_open(t, o, tally, "train.deferred");
  const amd_stream *sm = s.be->stream;
  if (!sm || !sm->step_begin) {
    hc_report(0, "%s train.deferred: the backend has no stream", s.name);
    count(&s, 0);
    return;
  }
  amd_status st = {{0}};
  deferred d = {.n = 50, .c = 10, .np = 777};
  d.z = rand_floats(&s, d.n * d.c, -3, 3), d.g = rand_floats(&s, d.np, -1, 1),
  d.p = rand_floats(&s, d.np, -1, 1);
  d.y = malloc((size_t)d.n * sizeof *d.y);
  for (int64_t i = 0; i < d.n; i++) d.y[i] = (int64_t)(uniform(&s) * (double)d.c);
  d.dzc = malloc((size_t)(d.n * d.c) * sizeof(float));
  AMD_ASSERT(amd_train_softmax_xent(s.cpu, d.z, d.y, d.n, d.c, 0.1f, 1.0f, d.dzc, NULL, &d.bc, &d.mc, &st) ==
             0);
  d.dev[0] = dev_floats(&s, d.z, d.n * d.c), d.dev[1] = dev_floats(&s, NULL, d.n * d.c);
  d.dev[2] = dev_floats(&s, d.g, d.np), d.dev[3] = dev_floats(&s, d.p, d.np);
  for (int round = 0; round < 2; round++) count(&s, deferred_round(&s, &d, round));
  AMD_ASSERT(sm->guard_reset(&st) == 0);
  for (int k = 0; k < 4; k++) s.be->buf->mem_free(d.dev[k]);
  free(d.z), free(d.g), free(d.p), free(d.y), free(d.dzc);
}

/* Batches assembled by the backend's data_batch against the host's, through batches.h (the same plan, the
 * same random draws). */
static void batches(sp *s, int f32) {
  amd_status st = {{0}};
  const int64_t n = 13, C = 3, H = 9, W = 8, batch = 6, chw = C * H * W;
  float mean[3] = {0.4f, 0.5f, 0.3f}, std[3] = {0.2f, 0.25f, 0.3f};
  amd_dataset ds = {
      .format = AMD_DATA_NONE, .c = C, .h = H, .w = W, .n_classes = 4, .mean = mean, .std = std};
  ds.train.n = n;
  ds.train.labels = malloc((size_t)n * sizeof(int64_t));
  if (f32)
    ds.train.f32 = rand_floats(s, n * chw, -1, 2);
  else
    ds.train.u8 = malloc((size_t)(n * chw));
  for (int64_t i = 0; i < n; i++) ds.train.labels[i] = i % 4;
  for (int64_t i = 0; !f32 && i < n * chw; i++) ds.train.u8[i] = (uint8_t)(uniform(s) * 256);
  amd_batches bd, bh;
  const char *label = f32 ? "train.batches float split (crop, flip, cutout)"
                          : "train.batches uint8 split (crop, "
                            "flip, cutout)";
  int ok = amd_batches_open(&bd, s->be, 0, &ds, &ds.train, batch, "test", &st) == 0;
  ok = ok && amd_batches_open(&bh, s->be, 1, &ds, &ds.train, batch, "test", &st) == 0;
  if (ok && !bd.be) {
    hc_report(0, "%s %s: batches not assembled on the backend", s->name, label);
    ok = 0;
  }
  const amd_augment aug = {.pad_crop = 2, .hflip = 1, .cutout = 3};
  uint64_t rd = 42, rh = 42;
  int64_t idx[6] = {12, 0, 5, 7, 3, 9}, yd[6], yh[6];
  for (int round = 0; ok && round < 3; round++) {
    const int64_t k = round == 2 ? 4 : batch; /* a short last batch */
    ok = amd_batches_make(&bd, idx, k, &aug, &rd, yd, &st) == 0 &&
         amd_batches_make(&bh, idx, k, &aug, &rh, yh, &st) == 0;
    for (int64_t i = 0; ok && i < k; i++) ok = yd[i] == yh[i];
    ok = ok && rd == rh && compare_floats(s, label, "x", bh.x.data, bd.x.data, 1, k * chw, 0);
    idx[round] = (idx[round] + 1) % n;
  }
  if (!ok && st.msg[0]) hc_report(0, "%s %s: %s", s->name, label, st.msg);
  count(s, ok);
  amd_batches_close(&bd);
  amd_batches_close(&bh);
  free(ds.train.labels), free(ds.train.u8), free(ds.train.f32);
}

static void check_batches(const hb_target *t, const hc_opts *o, hc_tally *tally) {
  sp s = sp_open(t, o, tally, "train.batches");
  batches(&s, 0);
  batches(&s, 1);
}

const hc_special hc_specials[] = {
    {"train.softmax_xent", check_softmax_xent},
    {"train.elementwise", check_elementwise},
    {"train.optim", check_optim},
    {"train.deferred", check_deferred},
    {"train.batches", check_batches},
};
const int hc_n_specials = (int)(sizeof hc_specials / sizeof hc_specials[0]);

/* Optimizers and learning-rate schedules (src/train/optim.c) against PyTorch.
 *
 * (a) each optimizer, 5 steps on 10 parameters with fixed gradients, against
 *     torch.optim (optim_golden.h, written by optim_golden.py), relative
 *     tolerance 1e-6; a perturbed momentum must fail the same comparison;
 *     a long block (vectorised loop + tail) equals element-by-element steps;
 * (b) schedules against torch.optim.lr_scheduler (OneCycleLR, MultiStepLR,
 *     CosineAnnealingLR, LinearLR + cosine), constant/step warm-up by formula;
 * (c) malformed schedule specs and optimizer settings are rejected;
 * (d) a step of an unknown optimizer kind is an error that changes nothing
 *     (amd_optim_step and the CPU backend's optim_step), not another optimizer.
 * Prints the largest relative difference of each case; exits 1 on failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/kernels.h"
#include "train/optim.h"

#include "../test_check.h"
#include "optim_golden.h"

#define RTOL 1e-6
#define LR_RTOL 1e-12 /* schedules: both sides in double */

static double rel_err(double got, double want) {
  const double d = fabs(got - want);
  if (d == 0) return 0;
  const double scale = fabs(want) > 1e-30 ? fabs(want) : 1e-30;
  return d / scale;
}

static amd_optim optim_of(const golden_optim *c) {
  amd_optim o;
  amd_status st;
  int rc = amd_optim_init(c->kind == AMD_OPT_SGD     ? "sgd"
                          : c->kind == AMD_OPT_ADAM  ? "adam"
                          : c->kind == AMD_OPT_ADAMW ? "adamw"
                                                     : "rmsprop",
                          &o, &st);
  AMD_ASSERT(rc == 0 && o.kind == c->kind);
  o.momentum = c->momentum;
  o.nesterov = c->nesterov;
  o.beta1 = c->beta1;
  o.beta2 = c->beta2;
  o.eps = c->eps;
  o.alpha = c->alpha;
  o.weight_decay = c->weight_decay;
  return o;
}

/* Runs the golden steps with optimizer o; returns the largest relative error. */
static double run_golden(const golden_optim *c, const amd_optim *o) {
  float p[GOLDEN_N], state[2 * GOLDEN_N];
  memcpy(p, c->p0, sizeof p);
  memset(state, 0, sizeof state);
  double worst = 0;
  for (int t = 0; t < GOLDEN_STEPS; t++) {
    amd_optim_step(o, c->lr, t + 1, p, c->g[t], state, GOLDEN_N);
    for (int i = 0; i < GOLDEN_N; i++) {
      double e = rel_err(p[i], c->p[t][i]);
      if (!(e <= worst)) worst = e; /* NaN sticks */
    }
  }
  return worst;
}

static void test_optim_golden(void) {
  double overall = 0;
  for (size_t k = 0; k < sizeof golden_optims / sizeof golden_optims[0]; k++) {
    const golden_optim *c = &golden_optims[k];
    amd_optim o = optim_of(c);
    amd_status st;
    CHECK(amd_optim_check(&o, &st) == 0, "%s: check: %s", c->name, st.msg);
    CHECK(amd_optim_state_blocks(&o) <= 2, "%s: state blocks", c->name);
    double worst = run_golden(c, &o);
    printf("optim %-20s max rel diff vs PyTorch %.3g\n", c->name, worst);
    CHECK(worst <= RTOL, "%s: max relative difference %.3g > %g", c->name, worst, RTOL);
    if (worst > overall) overall = worst;

    /* the comparison must see a wrong hyper-parameter */
    amd_optim bad = o;
    if (o.momentum != 0)
      bad.momentum = o.momentum * 0.99;
    else if (o.kind == AMD_OPT_ADAM || o.kind == AMD_OPT_ADAMW)
      bad.beta2 = 0.99 * o.beta2;
    else if (o.kind == AMD_OPT_RMSPROP)
      bad.alpha = 0.999;
    else
      bad.weight_decay = 1e-3;
    double bad_worst = run_golden(c, &bad);
    CHECK(bad_worst > RTOL, "%s: perturbed hyper-parameter went unnoticed (%.3g)", c->name, bad_worst);
  }
  printf("optim all cases: max rel diff vs PyTorch %.3g (tolerance %g)\n", overall, RTOL);
}

/* The vectorised loop body and its scalar tail give the same bits as steps
 * taken one element at a time. */
static void test_block_equals_elementwise(void) {
  enum { N = 1003 };
  float *p = malloc(sizeof(float) * N), *q = malloc(sizeof(float) * N), *g = malloc(sizeof(float) * N);
  float *sp = calloc(2 * N, sizeof(float)), *sq = calloc(2 * N, sizeof(float));
  AMD_ASSERT(p && q && g && sp && sq);
  for (size_t k = 0; k < sizeof golden_optims / sizeof golden_optims[0]; k++) {
    amd_optim o = optim_of(&golden_optims[k]);
    unsigned r = 12345u;
    for (int i = 0; i < N; i++) {
      r = r * 1103515245u + 12345u;
      p[i] = q[i] = (float)((int)(r >> 8 & 0xffff) - 32768) / 8192.0f;
    }
    memset(sp, 0, sizeof(float) * 2 * N);
    memset(sq, 0, sizeof(float) * 2 * N);
    int same = 1;
    for (int t = 1; t <= 4; t++) {
      for (int i = 0; i < N; i++) {
        r = r * 1103515245u + 12345u;
        g[i] = (float)((int)(r >> 8 & 0xffff) - 32768) / 16384.0f;
      }
      amd_optim_step(&o, 0.01, t, p, g, sp, N);
      float st1[2];
      for (int i = 0; i < N; i++) {
        st1[0] = sq[i];
        st1[1] = sq[N + i];
        amd_optim_step(&o, 0.01, t, &q[i], &g[i], st1, 1);
        sq[i] = st1[0];
        sq[N + i] = st1[1];
      }
      same &= memcmp(p, q, sizeof(float) * N) == 0;
    }
    CHECK(same, "%s: block step differs from element-wise steps", golden_optims[k].name);
  }
  free(p), free(q), free(g), free(sp), free(sq);
}

static void test_optim_api(void) {
  amd_optim o;
  amd_status st;
  CHECK(amd_optim_init("sgd", &o, &st) == 0 && o.momentum == 0 && o.weight_decay == 0, "sgd defaults");
  CHECK(amd_optim_state_blocks(&o) == 0, "sgd without momentum keeps no state");
  o.momentum = 0.9;
  CHECK(amd_optim_state_blocks(&o) == 1, "sgd with momentum keeps a buffer");
  o.momentum = 0;
  o.nesterov = 1;
  CHECK(amd_optim_check(&o, &st) < 0, "nesterov without momentum accepted");
  CHECK(amd_optim_init("adam", &o, &st) == 0 && o.beta1 == 0.9 && o.beta2 == 0.999 && o.eps == 1e-8 &&
            amd_optim_state_blocks(&o) == 2,
        "adam defaults");
  o.beta2 = 1.0;
  CHECK(amd_optim_check(&o, &st) < 0, "beta2 = 1 accepted");
  CHECK(amd_optim_init("adamw", &o, &st) == 0 && o.weight_decay == 0.01, "adamw defaults");
  CHECK(amd_optim_init("rmsprop", &o, &st) == 0 && o.alpha == 0.99 && o.eps == 1e-8 &&
            amd_optim_state_blocks(&o) == 1,
        "rmsprop defaults");
  o.momentum = 0.5;
  CHECK(amd_optim_state_blocks(&o) == 2, "rmsprop with momentum keeps two blocks");
  o.weight_decay = -1;
  CHECK(amd_optim_check(&o, &st) < 0, "negative weight decay accepted");
  o.weight_decay = NAN;
  CHECK(amd_optim_check(&o, &st) < 0, "NaN weight decay accepted");
  CHECK(amd_optim_init("lamb", &o, &st) < 0 && strstr(st.msg, "sgd, adam, adamw, rmsprop, lion"),
        "unknown optimizer: %s", st.msg);
  CHECK(strcmp(amd_optim_name(&(amd_optim){.kind = AMD_OPT_ADAMW}), "adamw") == 0, "name");
}

/* Lion (not in PyTorch): three steps with decoupled weight decay against the
 * update written out in double from its paper (Chen et al. 2023, Algorithm
 * 2): c = b1 m + (1 - b1) g; p = p (1 - lr wd) - lr sign(c);
 * m = b2 m + (1 - b2) g. A zero c leaves p to the decay alone. */
static void test_lion(void) {
  amd_optim o;
  amd_status st = {{0}};
  CHECK(amd_optim_init("lion", &o, &st) == 0 && o.kind == AMD_OPT_LION && o.beta1 == 0.9 && o.beta2 == 0.99 &&
            amd_optim_state_blocks(&o) == 1 && strcmp(amd_optim_name(&o), "lion") == 0,
        "lion defaults");
  o.weight_decay = 0.1;
  CHECK(amd_optim_check(&o, &st) == 0, "lion check: %s", st.msg);
  enum { N = 5 };
  const double lr = 0.01;
  float p[N] = {1, -2, 0.5f, 3, 0}, m[N] = {0};
  double pd[N], md[N] = {0};
  for (int i = 0; i < N; i++) pd[i] = p[i];
  double worst = 0;
  for (int t = 1; t <= 3; t++) {
    /* g[2] = 0 at the first step (c = 0: no sign, decay only); g[4] turns
     * positive while m stays negative enough that sign(c) != sign(g) */
    float g[N] = {0.5f, -0.25f, t == 1 ? 0.0f : 0.125f, 1.5f * (float)t, t == 1 ? -0.75f : 0.05f};
    CHECK(amd_optim_step(&o, lr, t, p, g, m, N) == 0, "lion step %d", t);
    for (int i = 0; i < N; i++) {
      const double c = 0.9 * md[i] + 0.1 * g[i], s = c > 0 ? 1 : c < 0 ? -1 : 0;
      pd[i] = pd[i] * (1 - lr * 0.1) - lr * s;
      md[i] = 0.99 * md[i] + 0.01 * g[i];
      worst = fmax(worst, fmax(fabs(pd[i] - p[i]), fabs(md[i] - m[i])));
    }
  }
  CHECK(worst < 1e-6, "lion: largest difference from the double reference %.3g", worst);
  if (worst < 1e-6)
    printf("ok   lion: 3 steps with decoupled decay, largest difference from the double reference %.2g\n", worst);
}

static void test_unknown_kind(void) {
  amd_optim o;
  amd_status st = {{0}};
  CHECK(amd_optim_init("rmsprop", &o, &st) == 0, "rmsprop");
  o.kind = (amd_opt_kind)7;
  float p[4] = {1, 2, 3, 4}, g[4] = {0.5f, 0.5f, 0.5f, 0.5f}, state[8] = {0};
  CHECK(!amd_optim_known(&o), "kind 7 known");
  CHECK(amd_optim_check(&o, &st) < 0, "kind 7 passes the check");
  CHECK(amd_optim_step(&o, 0.1, 1, p, g, state, 4) < 0, "a step of kind 7 succeeded");
  amd_optim_update u;
  amd_optim_update_make(&o, 0.1, 1, &u);
  CHECK(amd_train_kernels_cpu.optim_step(&u, p, g, state, 4, 0, &st) < 0 &&
            strstr(st.msg, "unknown optimizer kind 7"),
        "the CPU training kernels' step of kind 7: '%s'", st.msg);
  int same = 1;
  for (int i = 0; i < 4; i++) same &= p[i] == (float)(i + 1) && state[i] == 0 && state[4 + i] == 0;
  CHECK(same, "a step of kind 7 changed the parameters or the state");
  o.kind = AMD_OPT_RMSPROP;
  CHECK(amd_optim_known(&o) && amd_optim_step(&o, 0.1, 1, p, g, state, 4) == 0 && p[0] != 1.0f, "rmsprop step");
}

static void test_schedule_golden(void) {
  for (size_t k = 0; k < sizeof golden_scheds / sizeof golden_scheds[0]; k++) {
    const golden_sched *c = &golden_scheds[k];
    amd_schedule s;
    amd_status st;
    if (amd_schedule_parse(c->spec, c->base_lr, c->warmup_epochs, &s, &st) < 0) {
      CHECK(0, "%s: parse: %s", c->name, st.msg);
      continue;
    }
    double worst = 0;
    for (int64_t step = 0; step < c->total_steps; step++) {
      const int64_t i = c->per_epoch ? step / c->steps_per_epoch : step;
      AMD_ASSERT(i < c->n);
      double e = rel_err(amd_schedule_lr(&s, step, c->steps_per_epoch, c->total_steps), c->lr[i]);
      if (!(e <= worst)) worst = e;
    }
    printf("schedule %-16s max rel diff vs PyTorch %.3g\n", c->name, worst);
    CHECK(worst <= LR_RTOL, "%s: max relative difference %.3g > %g", c->name, worst, LR_RTOL);
  }
}

static void test_schedule_formula(void) {
  amd_schedule s;
  amd_status st;
  /* constant with 3 warm-up epochs of 5 steps */
  CHECK(amd_schedule_parse("constant", 0.1, 3, &s, &st) == 0, "constant: %s", st.msg);
  double worst = 0;
  for (int64_t step = 0; step < 40; step++) {
    double want = step < 15 ? 0.1 * (double)(step + 1) / 15.0 : 0.1;
    double e = rel_err(amd_schedule_lr(&s, step, 5, 40), want);
    if (!(e <= worst)) worst = e;
  }
  printf("schedule %-16s max rel diff vs formula %.3g\n", "constant_warmup", worst);
  CHECK(worst <= RTOL, "constant warm-up: %.3g", worst);
  CHECK(amd_schedule_parse("constant", 0.1, 0, &s, &st) == 0 && amd_schedule_lr(&s, 7, 5, 40) == 0.1,
        "constant without warm-up");
  /* step with warm-up: the warm-up factor scales the stepped rate; milestones are absolute epochs */
  CHECK(amd_schedule_parse("step:1,3:0.5", 0.2, 2, &s, &st) == 0, "step: %s", st.msg);
  CHECK(s.n_milestones == 2 && s.milestones[0] == 1 && s.milestones[1] == 3 && s.gamma == 0.5, "step parse");
  worst = 0;
  for (int64_t step = 0; step < 20; step++) {
    int64_t epoch = step / 4;
    double want = 0.2 * (epoch >= 1 ? 0.5 : 1) * (epoch >= 3 ? 0.5 : 1);
    if (step < 8) want = want * (double)(step + 1) / 8.0;
    double e = rel_err(amd_schedule_lr(&s, step, 4, 20), want);
    if (!(e <= worst)) worst = e;
  }
  printf("schedule %-16s max rel diff vs formula %.3g\n", "step_warmup", worst);
  CHECK(worst <= RTOL, "step warm-up: %.3g", worst);
  /* onecycle ends at max_lr / 25 / 1e4 and starts at max_lr / 25 */
  CHECK(amd_schedule_parse("onecycle", 0.5, 0, &s, &st) == 0 && s.pct_start == 0.3, "onecycle parse");
  CHECK(rel_err(amd_schedule_lr(&s, 0, 10, 50), 0.5 / 25) <= RTOL, "onecycle start");
  CHECK(rel_err(amd_schedule_lr(&s, 49, 10, 50), 0.5 / 25 / 1e4) <= RTOL, "onecycle end");
  CHECK(amd_schedule_parse("cosine:1e-5", 0.5, 0, &s, &st) == 0 && s.min_lr == 1e-5, "cosine parse");
  CHECK(amd_schedule_parse("onecycle:0.4", 0.5, 0, &s, &st) == 0 && s.pct_start == 0.4, "onecycle:0.4 parse");
  /* triangle:0.23:0.2:0.07 against airbench94's LambdaLR factor, written its way: up over int(0.23 x total)
   * steps from 0.2 to 1, then down to 0.07 */
  CHECK(amd_schedule_parse("triangle:0.23:0.2:0.07", 1.5, 0, &s, &st) == 0, "triangle: %s", st.msg);
  worst = 0;
  const int64_t total = 485;
  const int64_t warm = (int64_t)(total * 0.23);
  for (int64_t step = 0; step < total; step++) {
    double f, want;
    if (step < warm) {
      f = (double)step / warm;
      want = 1.5 * (0.2 * (1 - f) + 1.0 * f);
    } else {
      f = (double)(step - warm) / (total - warm);
      want = 1.5 * (1.0 * (1 - f) + 0.07 * f);
    }
    double e = rel_err(amd_schedule_lr(&s, step, 49, total), want);
    if (!(e <= worst)) worst = e;
  }
  printf("schedule %-16s max rel diff vs formula %.3g\n", "triangle", worst);
  CHECK(worst <= RTOL, "triangle: %.3g", worst);
  CHECK(amd_schedule_parse("triangle", 0.5, 0, &s, &st) == 0 && s.pct_start == 0.25 && s.start_factor == 0 &&
            s.end_factor == 0,
        "triangle defaults");
  CHECK(amd_schedule_lr(&s, 0, 10, 100) == 0 && rel_err(amd_schedule_lr(&s, 25, 10, 100), 0.5) <= RTOL &&
            rel_err(amd_schedule_lr(&s, 99, 10, 100), 0.5 / 75) <= RTOL,
        "triangle: 0 at the start, the peak at step 25, 1/75 of it at the last step");
  CHECK(amd_schedule_parse("triangle:0.3", 0.5, 2, &s, &st) == -1 && strstr(st.msg, "warm-up"),
        "triangle with --warmup refused: %s", st.msg);
}

static void test_schedule_bad(void) {
  static const char *const bad[] = {
      "",
      "foo",
      "Constant",
      "constant:1",
      "constant:",
      "step",
      "step:",
      "step:3,",
      "step:,3",
      "step:3,,4",
      "step:3,2",
      "step:3,3",
      "step:0",
      "step:a",
      "step:-1",
      "step:1.5",
      "step:3:0",
      "step:3:-1",
      "step:3:x",
      "step:3:",
      "step:3:0.1:2",
      "cosine:",
      "cosine:-1",
      "cosine:abc",
      "cosine:inf",
      "cosine:1e-3x",
      "triangle:",
      "triangle:1",
      "triangle:-0.1",
      "triangle:0.2:-1",
      "triangle:0.2:0.1:x",
      "triangle:0.2:0.1:0.1:0",
      "triangle:0.2::0.1",
      "onecycle:",
      "onecycle:0",
      "onecycle:1",
      "onecycle:1.5",
      "onecycle:nan",
      "cosine :1",
      "step: 3",
      "step:1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17",
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    amd_schedule s;
    amd_status st = {{0}};
    int rc = amd_schedule_parse(bad[k], 0.1, 0, &s, &st);
    CHECK(rc < 0, "bad spec '%s' accepted", bad[k]);
    CHECK(rc == 0 ||
              (strstr(st.msg, "constant, step:E1,E2,...[:GAMMA], cosine[:MIN_LR], onecycle[:PCT_START]") &&
               !strchr(st.msg, '\n')),
          "'%s': message is not one line listing the forms: %s", bad[k], st.msg);
  }
  amd_schedule s;
  amd_status st;
  CHECK(amd_schedule_parse("onecycle", 0.1, 1, &s, &st) < 0, "onecycle with warm-up accepted");
  CHECK(amd_schedule_parse("step:1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16", 0.1, 0, &s, &st) == 0 &&
            s.n_milestones == 16,
        "16 milestones rejected: %s", st.msg);
  CHECK(amd_schedule_parse("constant", 0.0, 0, &s, &st) < 0, "zero learning rate accepted");
  CHECK(amd_schedule_parse("constant", 0.1, -1, &s, &st) < 0, "negative warm-up accepted");
  printf("schedule bad specs: %zu rejected\n", sizeof bad / sizeof bad[0]);
}

int main(void) {
  test_optim_golden();
  test_block_equals_elementwise();
  test_optim_api();
  test_lion();
  test_unknown_kind();
  test_schedule_golden();
  test_schedule_formula();
  test_schedule_bad();
  return check_summary();
}

/* Optimizers and learning-rate schedules: see optim.h.
 *
 * Each optimizer is one pass over the flat parameter block with the kind and
 * the options (weight decay, momentum, Nesterov) chosen outside the loop: a
 * loop body is instantiated per combination from one always-inline function
 * with constant flags, so the loops carry no branches and vectorise.
 *
 * Float arithmetic follows PyTorch 1.13's single-tensor code and ATen's CPU
 * kernels operation for operation. Scalars are Python doubles rounded to
 * float where ATen rounds them. ATen's AVX2 kernels (and its CUDA kernels)
 * fuse a.add(b, alpha=s) into fma(s, b, a) and addcmul(a, b, c, value=s)
 * into fma(s*b, c, a), while addcdiv is a + (s*b)/c unfused; fma() below
 * marks the fused ones (measured against torch 1.13 on this machine: bit
 * for bit on every element). Every other operation is one rounded float
 * operation, so build without FMA contraction (-ffp-contract=off, GCC's
 * default in ISO C mode):
 *   SGD      d = g [fma(wd, p, g)];  buf = buf*momentum + d (buf starts at 0,
 *            so the first step gives buf = d as PyTorch's clone does);
 *            d = nesterov ? fma(momentum, buf, d) : buf;  p = fma(-lr, d, p)
 *   Adam     d = g [fma(wd, p, g)];  m = fma(1-b1, d, m*b1);
 *            v = fma((1-b2)*d, d, v*b2);
 *            p = p + (-lr/(1-b1^t) * m) / (sqrt(v)/sqrt(1-b2^t) + eps)
 *   AdamW    p = p*(1 - lr*wd), then Adam without the coupled decay
 *   RMSprop  d = g [fma(wd, p, g)];  s = fma((1-alpha)*d, d, s*alpha);
 *            a = sqrt(s) + eps;
 *            momentum: buf = buf*momentum + d/a, p = fma(-lr, buf, p)
 *            else:     p = p + ((-lr)*d)/a
 * Where the target has no FMA instruction (__FMA__ undefined), fma(a, b, c)
 * is (float)((double)a*b + c): the product is exact in double, the sum is
 * rounded twice, which differs from a true fma in about one case in 2^29,
 * and it vectorises, unlike a call to libm's fmaf. */
#include "optim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The loops vectorise at -O3 only with -fno-math-errno (otherwise GCC keeps
 * a scalar sqrtf call for errno; the argument is never negative here): the
 * build should pass it project-wide (GCC's optimize attribute and pragma do
 * not reach sqrtf in GCC 12). */
#define AMD_OPTIM_LOOP __attribute__((always_inline)) static inline

#ifdef __FMA__
#define FMA(a, b, c) fmaf((a), (b), (c))
#else
#define FMA(a, b, c) ((float)((double)(a) * (double)(b) + (double)(c)))
#endif

#ifdef __FMA__
const int amd_optim_fused_fma = 1;
#else
const int amd_optim_fused_fma = 0;
#endif

static const double AMD_PI = 3.14159265358979323846; /* math.pi */

static const char *const opt_names[AMD_OPT_COUNT] = {"sgd", "adam", "adamw", "rmsprop", "lion"};

int amd_optim_init(const char *name, amd_optim *o, amd_status *st) {
  memset(o, 0, sizeof *o);
  o->beta1 = 0.9;
  o->beta2 = 0.999;
  o->eps = 1e-8;
  o->alpha = 0.99;
  for (int k = 0; k < AMD_OPT_COUNT; k++)
    if (name && strcmp(name, opt_names[k]) == 0) {
      o->kind = (amd_opt_kind)k;
      if (o->kind == AMD_OPT_ADAMW) o->weight_decay = 0.01; /* torch.optim.AdamW's default */
      if (o->kind == AMD_OPT_LION) o->beta2 = 0.99;         /* Lion's paper: betas (0.9, 0.99) */
      return 0;
    }
  return amd_fail(st, "unknown optimizer '%s' (choices: sgd, adam, adamw, rmsprop, lion)",
                  name ? name : "(null)");
}

const char *amd_optim_name(const amd_optim *o) {
  return (unsigned)o->kind < AMD_OPT_COUNT ? opt_names[o->kind] : "?";
}

int amd_optim_state_blocks(const amd_optim *o) {
  switch (o->kind) {
  case AMD_OPT_SGD:
    return o->momentum != 0 ? 1 : 0;
  case AMD_OPT_ADAM:
  case AMD_OPT_ADAMW:
    return 2;
  case AMD_OPT_RMSPROP:
    return o->momentum > 0 ? 2 : 1;
  case AMD_OPT_LION:
    return 1;
  }
  return 0;
}

int amd_optim_check(const amd_optim *o, amd_status *st) {
  const char *name = amd_optim_name(o);
  if (!amd_optim_known(o)) return amd_fail(st, "invalid optimizer kind %d", (int)o->kind);
  /* !(x >= 0) also rejects NaN */
  if (!(o->momentum >= 0) || !isfinite(o->momentum))
    return amd_fail(st, "%s: invalid momentum %g (must be >= 0)", name, o->momentum);
  if (!(o->weight_decay >= 0) || !isfinite(o->weight_decay))
    return amd_fail(st, "%s: invalid weight decay %g (must be >= 0)", name, o->weight_decay);
  if (!(o->eps >= 0) || !isfinite(o->eps))
    return amd_fail(st, "%s: invalid eps %g (must be >= 0)", name, o->eps);
  if (o->nesterov && (o->kind != AMD_OPT_SGD || !(o->momentum > 0)))
    return amd_fail(st, "%s: Nesterov momentum needs SGD with momentum > 0", name);
  if ((o->kind == AMD_OPT_ADAM || o->kind == AMD_OPT_ADAMW || o->kind == AMD_OPT_LION) &&
      (!(o->beta1 >= 0 && o->beta1 < 1) || !(o->beta2 >= 0 && o->beta2 < 1)))
    return amd_fail(st, "%s: invalid betas (%g, %g) (each in [0, 1))", name, o->beta1, o->beta2);
  if (o->kind == AMD_OPT_RMSPROP && (!(o->alpha >= 0) || !isfinite(o->alpha)))
    return amd_fail(st, "%s: invalid alpha %g (must be >= 0)", name, o->alpha);
  if (o->kind != AMD_OPT_SGD && o->kind != AMD_OPT_RMSPROP && o->momentum != 0)
    return amd_fail(st, "%s: takes no momentum (use betas)", name);
  return 0;
}

void amd_optim_get_coeffs(const amd_optim *o, double lr, int64_t t, amd_optim_coeffs *c) {
  memset(c, 0, sizeof *c);
  const double dlr = lr;
  c->neg_lr = (float)-dlr;
  c->weight_decay = (float)o->weight_decay;
  c->momentum = (float)o->momentum;
  c->eps = (float)o->eps;
  c->decay = 1.0f;
  switch (o->kind) {
  case AMD_OPT_SGD:
    break;
  case AMD_OPT_ADAMW:
    c->decay = (float)(1 - dlr * o->weight_decay);
    c->weight_decay = 0; /* decoupled */
    /* fall through */
  case AMD_OPT_ADAM: {
    const double step = (double)(t < 1 ? 1 : t);
    const double bc1 = 1 - pow(o->beta1, step), bc2 = 1 - pow(o->beta2, step);
    c->beta1 = (float)o->beta1;
    c->one_minus_beta1 = (float)(1 - o->beta1);
    c->beta2 = (float)o->beta2;
    c->one_minus_beta2 = (float)(1 - o->beta2);
    c->neg_step_size = (float)-(dlr / bc1);
    c->bc2_sqrt = (float)sqrt(bc2);
    break;
  }
  case AMD_OPT_RMSPROP:
    c->alpha = (float)o->alpha;
    c->one_minus_alpha = (float)(1 - o->alpha);
    break;
  case AMD_OPT_LION: /* decoupled decay as AdamW's; no bias correction */
    c->decay = (float)(1 - dlr * o->weight_decay);
    c->weight_decay = 0;
    c->beta1 = (float)o->beta1;
    c->one_minus_beta1 = (float)(1 - o->beta1);
    c->beta2 = (float)o->beta2;
    c->one_minus_beta2 = (float)(1 - o->beta2);
    break;
  }
}

/* ---- the loops (flags are compile-time constants at each call) ---- */

AMD_OPTIM_LOOP void sgd_loop(const amd_optim_coeffs *c, float *restrict p, const float *restrict g,
                             float *restrict buf, int64_t n, const int wd, const int mom,
                             const int nesterov) {
  const float neg_lr = c->neg_lr, w = c->weight_decay, m = c->momentum;
  for (int64_t i = 0; i < n; i++) {
    float d = g[i];
    if (wd) d = FMA(w, p[i], d);
    if (mom) {
      const float b = buf[i] * m + d;
      buf[i] = b;
      d = nesterov ? FMA(m, b, d) : b;
    }
    p[i] = FMA(neg_lr, d, p[i]);
  }
}

AMD_OPTIM_LOOP void adam_loop(const amd_optim_coeffs *c, float *restrict p, const float *restrict g,
                              float *restrict m1, float *restrict v2, int64_t n, const int wd,
                              const int decoupled) {
  const float w = c->weight_decay, b1 = c->beta1, omb1 = c->one_minus_beta1, b2 = c->beta2,
              omb2 = c->one_minus_beta2, nss = c->neg_step_size, bc2s = c->bc2_sqrt, eps = c->eps,
              decay = c->decay;
  for (int64_t i = 0; i < n; i++) {
    float x = p[i];
    if (decoupled) x = x * decay;
    float d = g[i];
    if (wd) d = FMA(w, x, d);
    const float m = FMA(omb1, d, m1[i] * b1);
    const float v = FMA(omb2 * d, d, v2[i] * b2);
    m1[i] = m;
    v2[i] = v;
    const float denom = sqrtf(v) / bc2s + eps;
    p[i] = x + (nss * m) / denom;
  }
}

AMD_OPTIM_LOOP void rmsprop_loop(const amd_optim_coeffs *c, float *restrict p, const float *restrict g,
                                 float *restrict sq, float *restrict buf, int64_t n, const int wd,
                                 const int mom) {
  const float neg_lr = c->neg_lr, w = c->weight_decay, m = c->momentum, a = c->alpha,
              oma = c->one_minus_alpha, eps = c->eps;
  for (int64_t i = 0; i < n; i++) {
    float d = g[i];
    if (wd) d = FMA(w, p[i], d);
    const float s = FMA(oma * d, d, sq[i] * a);
    sq[i] = s;
    const float avg = sqrtf(s) + eps;
    if (mom) {
      const float b = buf[i] * m + d / avg;
      buf[i] = b;
      p[i] = FMA(neg_lr, b, p[i]);
    } else {
      p[i] = p[i] + (neg_lr * d) / avg;
    }
  }
}

/* Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms"):
 * the update is the sign of beta1 m + (1 - beta1) g, the state m then moves
 * with beta2; weight decay decoupled as AdamW's. */
AMD_OPTIM_LOOP void lion_loop(const amd_optim_coeffs *c, float *restrict p, const float *restrict g,
                              float *restrict m1, int64_t n) {
  const float neg_lr = c->neg_lr, b1 = c->beta1, omb1 = c->one_minus_beta1, b2 = c->beta2,
              omb2 = c->one_minus_beta2, decay = c->decay;
  for (int64_t i = 0; i < n; i++) {
    const float x = p[i] * decay, d = g[i];
    const float u = FMA(omb1, d, m1[i] * b1);
    const float sgn = u > 0 ? 1.0f : u < 0 ? -1.0f : 0.0f;
    p[i] = FMA(neg_lr, sgn, x);
    m1[i] = FMA(omb2, d, m1[i] * b2);
  }
}

int amd_optim_known(const amd_optim *o) {
  switch (o->kind) {
  case AMD_OPT_SGD:
  case AMD_OPT_ADAM:
  case AMD_OPT_ADAMW:
  case AMD_OPT_RMSPROP:
  case AMD_OPT_LION:
    return 1;
  }
  return 0;
}

int amd_optim_step(const amd_optim *o, double lr, int64_t t, float *p, const float *g, float *state,
                   int64_t n) {
  if (!amd_optim_known(o)) return -1; /* no default: an unknown kind changes nothing */
  amd_optim_coeffs c;
  amd_optim_get_coeffs(o, lr, t, &c);
  const int wd = o->weight_decay != 0;
  switch (o->kind) {
  case AMD_OPT_SGD:
    if (o->momentum == 0) {
      if (wd)
        sgd_loop(&c, p, g, NULL, n, 1, 0, 0);
      else
        sgd_loop(&c, p, g, NULL, n, 0, 0, 0);
    } else if (o->nesterov) {
      if (wd)
        sgd_loop(&c, p, g, state, n, 1, 1, 1);
      else
        sgd_loop(&c, p, g, state, n, 0, 1, 1);
    } else {
      if (wd)
        sgd_loop(&c, p, g, state, n, 1, 1, 0);
      else
        sgd_loop(&c, p, g, state, n, 0, 1, 0);
    }
    break;
  case AMD_OPT_ADAM:
    if (wd)
      adam_loop(&c, p, g, state, state + n, n, 1, 0);
    else
      adam_loop(&c, p, g, state, state + n, n, 0, 0);
    break;
  case AMD_OPT_ADAMW:
    adam_loop(&c, p, g, state, state + n, n, 0, 1);
    break;
  case AMD_OPT_RMSPROP:
    if (o->momentum > 0) {
      if (wd)
        rmsprop_loop(&c, p, g, state, state + n, n, 1, 1);
      else
        rmsprop_loop(&c, p, g, state, state + n, n, 0, 1);
    } else {
      if (wd)
        rmsprop_loop(&c, p, g, state, NULL, n, 1, 0);
      else
        rmsprop_loop(&c, p, g, state, NULL, n, 0, 0);
    }
    break;
  case AMD_OPT_LION:
    lion_loop(&c, p, g, state, n);
    break;
  }
  return 0;
}

/* ---- schedules ---- */

const char *amd_schedule_help(void) {
  return "constant                  the base learning rate throughout\n"
         "step:E1,E2,...[:GAMMA]    multiply by GAMMA (default 0.1) at each milestone epoch E1 < E2 < ...\n"
         "cosine[:MIN_LR]           cosine annealing per step from the base rate to MIN_LR (default 0)\n"
         "                          over the steps after the warm-up\n"
         "onecycle[:PCT_START]      PyTorch OneCycleLR (cos), max_lr = base rate, div_factor 25,\n"
         "                          final_div_factor 1e4, PCT_START in (0, 1) (default 0.3); no --warmup\n"
         "triangle[:PCT[:START[:END]]]  linear per step from START x the base rate up to the base rate over\n"
         "                          the first PCT of the steps (default 0.25; START default 0), then\n"
         "                          linearly down to END x the base rate (default 0); no --warmup\n"
         "constant, step and cosine start with a linear warm-up over the warm-up epochs:\n"
         "lr * (step + 1) / warmup_steps.\n";
}

static int sched_bad(amd_status *st, const char *spec, const char *why) {
  return amd_fail(st,
                  "bad learning-rate schedule '%s': %s (accepted forms: constant, step:E1,E2,...[:GAMMA], "
                  "cosine[:MIN_LR], onecycle[:PCT_START], triangle[:PCT[:START[:END]]])",
                  spec, why);
}

/* A finite double filling [s, end), or -1. */
static int parse_double(const char *s, const char *end, double *out) {
  char buf[64];
  size_t len = (size_t)(end - s);
  if (len == 0 || len >= sizeof buf) return -1;
  memcpy(buf, s, len);
  buf[len] = 0;
  char *e;
  double v = strtod(buf, &e);
  if (*e || !isfinite(v) || buf[0] == ' ' || buf[0] == '\t') return -1;
  *out = v;
  return 0;
}

int amd_schedule_parse(const char *spec, double lr, int64_t warmup_epochs, amd_schedule *s, amd_status *st) {
  memset(s, 0, sizeof *s);
  s->base_lr = lr;
  s->warmup_epochs = warmup_epochs;
  s->gamma = 0.1;
  s->min_lr = 0;
  s->pct_start = 0.3;
  s->div_factor = 25;
  s->final_div_factor = 1e4;
  if (!spec) return sched_bad(st, "(null)", "no schedule");
  if (!(lr > 0) || !isfinite(lr)) return amd_fail(st, "learning rate %g must be positive", lr);
  if (warmup_epochs < 0) return amd_fail(st, "warm-up epochs %lld must be >= 0", (long long)warmup_epochs);
  const char *colon = strchr(spec, ':');
  const size_t nlen = colon ? (size_t)(colon - spec) : strlen(spec);
  const char *arg = colon ? colon + 1 : NULL;
  const char *end = spec + strlen(spec);
#define IS(word) (nlen == strlen(word) && strncmp(spec, word, nlen) == 0)
  if (IS("constant")) {
    s->kind = AMD_SCHED_CONSTANT;
    if (arg) return sched_bad(st, spec, "constant takes no argument");
  } else if (IS("cosine")) {
    s->kind = AMD_SCHED_COSINE;
    if (arg && (parse_double(arg, end, &s->min_lr) < 0 || s->min_lr < 0))
      return sched_bad(st, spec, "MIN_LR must be a number >= 0");
  } else if (IS("onecycle")) {
    s->kind = AMD_SCHED_ONECYCLE;
    if (arg && (parse_double(arg, end, &s->pct_start) < 0 || !(s->pct_start > 0 && s->pct_start < 1)))
      return sched_bad(st, spec, "PCT_START must be a number in (0, 1)");
    if (warmup_epochs > 0)
      return sched_bad(st, spec, "onecycle has its own warm-up (PCT_START): leave the warm-up epochs at 0");
  } else if (IS("triangle")) {
    s->kind = AMD_SCHED_TRIANGLE;
    s->pct_start = 0.25, s->start_factor = 0, s->end_factor = 0;
    double *fields[3] = {&s->pct_start, &s->start_factor, &s->end_factor};
    const char *q = arg;
    for (int f = 0; q && f < 3; f++) {
      const char *c2 = strchr(q, ':');
      if (f == 2 && c2) return sched_bad(st, spec, "triangle takes at most PCT:START:END");
      if (parse_double(q, c2 ? c2 : end, fields[f]) < 0)
        return sched_bad(st, spec, "PCT, START and END must be numbers");
      q = c2 ? c2 + 1 : NULL;
    }
    if (!(s->pct_start >= 0 && s->pct_start < 1)) return sched_bad(st, spec, "PCT must be in [0, 1)");
    if (!(s->start_factor >= 0 && s->end_factor >= 0))
      return sched_bad(st, spec, "START and END must be >= 0");
    if (warmup_epochs > 0)
      return sched_bad(st, spec, "triangle has its own warm-up (PCT): leave the warm-up epochs at 0");
  } else if (IS("step")) {
    s->kind = AMD_SCHED_STEP;
    if (!arg || !*arg) return sched_bad(st, spec, "step needs milestone epochs");
    const char *g = strchr(arg, ':');
    const char *mend = g ? g : end;
    if (g && (parse_double(g + 1, end, &s->gamma) < 0 || !(s->gamma > 0)))
      return sched_bad(st, spec, "GAMMA must be a number > 0");
    const char *q = arg;
    while (q < mend) {
      const char *comma = memchr(q, ',', (size_t)(mend - q));
      const char *e = comma ? comma : mend;
      if (e == q) return sched_bad(st, spec, "empty milestone");
      int64_t v = 0;
      for (const char *r = q; r < e; r++) {
        if (*r < '0' || *r > '9') return sched_bad(st, spec, "milestones must be whole epochs");
        if (v > (INT64_MAX - 9) / 10) return sched_bad(st, spec, "milestone too large");
        v = v * 10 + (*r - '0');
      }
      if (v < 1) return sched_bad(st, spec, "milestones must be >= 1");
      if (s->n_milestones > 0 && v <= s->milestones[s->n_milestones - 1])
        return sched_bad(st, spec, "milestones must increase");
      if (s->n_milestones == (int)(sizeof s->milestones / sizeof s->milestones[0]))
        return sched_bad(st, spec, "at most 16 milestones");
      s->milestones[s->n_milestones++] = v;
      if (!comma) break;
      q = comma + 1;
      if (q == mend) return sched_bad(st, spec, "empty milestone");
    }
  } else {
    return sched_bad(st, spec, "unknown schedule");
  }
#undef IS
  return 0;
}

int amd_lookahead_parse(const char *spec, int64_t *k, double *d, amd_status *st) {
  const char *colon = spec ? strchr(spec, ':') : NULL;
  const char *end = spec ? spec + strlen(spec) : NULL;
  double kk;
  if (!spec || parse_double(spec, colon ? colon : end, &kk) < 0 || kk != floor(kk) || kk < 1 || kk > 1e9)
    return amd_fail(st, "--lookahead: '%s' is not K[:D] with K a whole number of steps >= 1",
                    spec ? spec : "");
  *k = (int64_t)kk;
  *d = pow(0.95, kk);
  if (colon && (parse_double(colon + 1, end, d) < 0 || !(*d >= 0 && *d < 1)))
    return amd_fail(st, "--lookahead: '%s': D must be a number in [0, 1)", spec);
  return 0;
}

/* torch.optim.lr_scheduler.OneCycleLR.get_lr (three_phase=False, cos). */
static double onecycle_lr(const amd_schedule *s, int64_t step, int64_t total_steps) {
  const double max_lr = s->base_lr, initial_lr = max_lr / s->div_factor,
               min_lr = initial_lr / s->final_div_factor;
  if (step > total_steps - 1) step = total_steps - 1; /* PyTorch raises past the end */
  const double ends[2] = {(double)(s->pct_start * (double)total_steps) - 1, (double)(total_steps - 1)};
  const double starts_lr[2] = {initial_lr, max_lr}, ends_lr[2] = {max_lr, min_lr};
  double start_step = 0;
  for (int i = 0; i < 2; i++) {
    if ((double)step <= ends[i] || i == 1) {
      const double span = ends[i] - start_step;
      const double pct = span > 0 ? ((double)step - start_step) / span : 1.0; /* PyTorch: ZeroDivisionError */
      const double cos_out = cos(AMD_PI * pct) + 1;
      return ends_lr[i] + (starts_lr[i] - ends_lr[i]) / 2.0 * cos_out;
    }
    start_step = ends[i];
  }
  return min_lr;
}

double amd_schedule_lr(const amd_schedule *s, int64_t step, int64_t steps_per_epoch, int64_t total_steps) {
  if (steps_per_epoch < 1) steps_per_epoch = 1;
  if (total_steps < 1) total_steps = 1;
  if (step < 0) step = 0;
  if (s->kind == AMD_SCHED_ONECYCLE) return onecycle_lr(s, step, total_steps);
  if (s->kind == AMD_SCHED_TRIANGLE) {
    /* up over the first floor(PCT x steps) steps, then down over the rest (airbench94's schedule:
     * triangle:0.23:0.2:0.07) */
    const int64_t up = (int64_t)(s->pct_start * (double)total_steps);
    if (step < up) return s->base_lr * (s->start_factor + (1 - s->start_factor) * (double)step / (double)up);
    const double down = (double)(step - up) / (double)(total_steps - up);
    return s->base_lr * (1 + (s->end_factor - 1) * (down < 1 ? down : 1));
  }
  const int64_t warmup_steps = s->warmup_epochs * steps_per_epoch;
  double lr = s->base_lr;
  switch (s->kind) {
  case AMD_SCHED_CONSTANT:
  case AMD_SCHED_ONECYCLE:
  case AMD_SCHED_TRIANGLE:
    break;
  case AMD_SCHED_STEP: {
    /* MultiStepLR's chained form: one multiplication per milestone passed */
    const int64_t epoch = step / steps_per_epoch;
    for (int i = 0; i < s->n_milestones && s->milestones[i] <= epoch; i++) lr *= s->gamma;
    break;
  }
  case AMD_SCHED_COSINE: {
    const int64_t t_max = total_steps - warmup_steps;
    const int64_t t = step - warmup_steps;
    if (t_max > 0 && t > 0) {
      const double tc = (double)(t < t_max ? t : t_max);
      lr = s->min_lr + (s->base_lr - s->min_lr) * (1 + cos(AMD_PI * tc / (double)t_max)) / 2;
    }
    break;
  }
  }
  if (step < warmup_steps) lr = lr * (double)(step + 1) / (double)warmup_steps;
  return lr;
}

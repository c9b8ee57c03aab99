/* test_backend_ops: every backend against the CPU, op by op, from one list
 * of cases (harness.h), in the manner of ggml's test-backend-ops.
 *
 *   -m forward  (default) outputs compared; the cases that must fail at
 *               load or in the forward; the training kernels (train.*);
 *               and, without -o, a failure for every op the backend has
 *               kernels for that no case runs on them
 *   -m grad     the gradients of each case's differentiable inputs for a
 *               random dY; the cases whose backward must fail
 *   -m perf     ms per run on the CPU and the backend (a benchmark)
 *
 * Without -b every backend of the build but the CPU is tested; where none
 * can run (no GPU, or a build without CUDA) it prints SKIP and why and
 * exits 77. `-b cpu` runs the list on the CPU itself (what that checks:
 * backend_cpu.c). --probe only says whether a backend can run (0, or 77),
 * for the scripts of the GPU suite. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "exec_case.h"

static const hc_family *const families[] = {&hc_family_gemm,   &hc_family_norm,  &hc_family_unary,
                                            &hc_family_binary, &hc_family_shape, &hc_family_index,
                                            &hc_family_reduce};
enum { N_FAMILIES = (int)(sizeof families / sizeof families[0]) };

void hc_report(int ok, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs(ok ? "ok   " : "FAIL ", stdout);
  vprintf(fmt, ap);
  putchar('\n');
  va_end(ap);
}

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: test_backend_ops [-m forward|grad|perf] [-o OP[,OP...]]... [-b BACKEND] [-s SEED] [-n RUNS] "
      "[-v]\n"
      "       test_backend_ops --list | --probe\n"
      "Runs the op cases on every backend but the CPU (or on BACKEND) and compares them with the CPU.\n"
      "  -m forward  outputs compared (the default), the cases that must fail at load or in the forward,\n"
      "              the training kernels (train.*), every op with kernels run by some case (without -o)\n"
      "  -m grad     the gradients of the differentiable inputs for a random dY; backwards that must fail\n"
      "  -m perf     ms per run on the CPU and the backend, GMAC/s of the GEMM ops (not a test)\n"
      "  -o OP       only the cases of op type OP (repeatable, or a comma list); train, train.NAME: those\n"
      "              checks of the training kernels\n"
      "  -b NAME     only that backend (cpu: the list on the CPU itself)\n"
      "  -s SEED     the seed of the inputs (default 1): each case draws from it and its label\n"
      "  -n RUNS     -m perf: timed runs after 2 warm-up runs (default 10)\n"
      "  -v          a line for every comparison, not only the failing ones (--list: each case's fields)\n"
      "  --list      the cases, then per op how many\n"
      "  --probe     exit 0 when a backend other than the CPU can run here, else 77\n"
      "Exit status: 0 passed, 1 failed, 2 bad usage, 77 nothing to test here (SKIP).\n");
}

static int add_ops(hc_opts *o, char *list) {
  for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (o->n_ops == (int)(sizeof o->ops / sizeof o->ops[0])) return -1;
    o->ops[o->n_ops++] = tok;
  }
  return 0;
}

static int mode_of(const char *v) {
  if (!strcmp(v, "forward")) return HC_MODE_FORWARD;
  if (!strcmp(v, "grad")) return HC_MODE_GRAD;
  if (!strcmp(v, "perf")) return HC_MODE_PERF;
  return -1;
}

/* 0: run; 1: --help done; 2: bad usage (said on stderr). */
static int parse_args(int argc, char **argv, hc_opts *o, int *list, int *probe) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    char *end = NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) return usage(stdout), 1;
    if (!strcmp(a, "--list")) {
      *list = 1;
      continue;
    }
    if (!strcmp(a, "--probe")) {
      *probe = 1;
      continue;
    }
    if (!strcmp(a, "-v")) {
      o->verbose = 1;
      continue;
    }
    if (a[0] != '-' || !a[1] || a[2] || !strchr("mobsn", a[1]))
      return fprintf(stderr, "test_backend_ops: unknown option %s (--help)\n", a), 2;
    if (i + 1 == argc) return fprintf(stderr, "test_backend_ops: %s needs a value\n", a), 2;
    char *v = argv[++i];
    if (a[1] == 'm' && (o->mode = mode_of(v)) < 0)
      return fprintf(stderr, "test_backend_ops: -m forward, grad or perf, not %s\n", v), 2;
    if (a[1] == 'o' && add_ops(o, v)) return fprintf(stderr, "test_backend_ops: too many -o names\n"), 2;
    if (a[1] == 'b') o->backend = v;
    if (a[1] == 's') {
      o->seed = strtoull(v, &end, 0);
      if (!*v || *end) return fprintf(stderr, "test_backend_ops: -s takes a number, not %s\n", v), 2;
    }
    if (a[1] == 'n') {
      o->runs = (int)strtol(v, &end, 10);
      if (!*v || *end || o->runs < 1)
        return fprintf(stderr, "test_backend_ops: -n takes a count, not %s\n", v), 2;
    }
  }
  return 0;
}

/* Every case of every family, one per op of its list, checked. */
static hc_run *build_runs(int *n_runs) {
  int n = 0;
  hc_run probe;
  for (int f = 0; f < N_FAMILIES; f++)
    for (int i = 0; i < families[f]->n; i++) {
      int k = 0;
      while (hc_expand(&families[f]->cases[i], k, &probe)) k++;
      if (k == 0) {
        printf("FAIL the case list: %s case %d: op \"%s\" names no op\n", families[f]->name, i,
               families[f]->cases[i].op ? families[f]->cases[i].op : "");
        exit(1);
      }
      n += k;
    }
  hc_run *runs = calloc((size_t)n, sizeof *runs);
  AMD_ASSERT(runs);
  n = 0;
  for (int f = 0; f < N_FAMILIES; f++)
    for (int i = 0; i < families[f]->n; i++)
      for (int k = 0; hc_expand(&families[f]->cases[i], k, &runs[n]); k++) {
        char why[256];
        if (hc_check_case(&runs[n], why, sizeof why)) {
          printf("FAIL the case list: %s case %d: %s: %s\n", families[f]->name, i, runs[n].label, why);
          exit(1);
        }
        n++;
      }
  *n_runs = n;
  return runs;
}

static int op_selected(const hc_opts *o, const char *op) {
  for (int i = 0; i < o->n_ops; i++)
    if (!strcasecmp(o->ops[i], op)) return 1;
  return o->n_ops == 0;
}

/* "train.optim" is selected by -o train.optim and by -o train */
static int special_selected(const hc_opts *o, const char *name) {
  const size_t group = strcspn(name, ".");
  for (int i = 0; i < o->n_ops; i++)
    if (!strcasecmp(o->ops[i], name) || (strlen(o->ops[i]) == group && !strncasecmp(o->ops[i], name, group)))
      return 1;
  return o->n_ops == 0;
}

/* Whether the case runs in the mode: forward all but the backwards that must fail; grad the cases with a
 * gradient of an op with a backward, and those backwards; perf the cases that run. */
static int in_mode(const hc_run *r, int mode) {
  const hc_case *c = r->c;
  if (mode == HC_MODE_PERF) return c->expect == HC_RUNS;
  if (mode == HC_MODE_GRAD)
    return c->expect == HC_FAILS_BACKWARD ||
           (c->expect == HC_RUNS && c->grad && amd_op_find(r->op)->backward);
  return c->expect != HC_FAILS_BACKWARD;
}

static int n_modes(const hc_case *c) {
  int n = 0;
  for (unsigned m = c->modes; m; m &= m - 1) n++;
  return n ? n : 1;
}

/* Every -o name is an op of some case or a check's name or group. */
static int check_op_names(const hc_opts *o, const hc_run *runs, int n) {
  for (int i = 0; i < o->n_ops; i++) {
    hc_opts one = {.ops = {o->ops[i]}, .n_ops = 1};
    int found = 0;
    for (int r = 0; r < n && !found; r++) found = op_selected(&one, runs[r].op);
    for (int s = 0; s < hc_n_specials && !found; s++) found = special_selected(&one, hc_specials[s].name);
    if (!found) return fprintf(stderr, "test_backend_ops: -o %s: no case has that op\n", o->ops[i]), -1;
  }
  return 0;
}

static const char *expect_name(hc_expect e) {
  static const char *const names[] = {"runs", "fails at load", "fails in the forward",
                                      "fails in the backward"};
  return names[e];
}

/* --list: every case (in the order they run), then per op the cases, the runs over the multiplier modes,
 * those with a gradient and those that must fail. */
static void print_list(const hc_opts *o, const hc_run *runs, int n) {
  int per_op[AMD_OP_COUNT][4];
  memset(per_op, 0, sizeof per_op);
  for (int r = 0; r < n; r++) {
    const hc_case *c = runs[r].c;
    if (!op_selected(o, runs[r].op)) continue;
    printf("%-22s %-5s %s", expect_name(c->expect), c->grad ? "grad" : "", runs[r].label);
    for (unsigned m = 1; m <= HC_M_AM16_EXACT; m <<= 1)
      if (c->modes & m) printf(" | %s", hc_mode_name(m));
    if (o->verbose) {
      int n_in = 0;
      while (n_in < HC_MAX_IN && c->in[n_in].kind != HC_END) n_in++;
      printf("\n    inputs %d, outputs %d, grad 0x%x%s, %s, %s, tol %g%s%s%s", n_in, c->n_out ? c->n_out : 1,
             c->grad, c->dy_all ? " (dY on every output)" : "", c->inference ? "inference" : "training",
             c->native == HC_NATIVE ? "native"
             : c->native == HC_HOST ? "host fallback"
                                    : "native or host",
             c->tol, c->relu_out ? ", Relu fused" : "", c->add_in ? ", Add fused" : "",
             c->nondiff_grad ? ", grad of nondifferentiable inputs" : "");
    }
    printf("\n");
    int *k = per_op[amd_op_find(runs[r].op)->idx];
    k[0]++, k[1] += n_modes(c), k[2] += c->grad && c->expect == HC_RUNS, k[3] += c->expect != HC_RUNS;
  }
  printf("\n%-28s %6s %6s %6s %6s\n", "op", "cases", "runs", "grad", "fail");
  int tot[4] = {0};
  for (int i = 0; i < AMD_OP_COUNT; i++) {
    if (!per_op[i][0]) continue;
    printf("%-28s %6d %6d %6d %6d\n", amd_ops[i]->name, per_op[i][0], per_op[i][1], per_op[i][2],
           per_op[i][3]);
    for (int j = 0; j < 4; j++) tot[j] += per_op[i][j];
  }
  printf("%-28s %6d %6d %6d %6d\n", "total", tot[0], tot[1], tot[2], tot[3]);
  for (int s = 0; s < hc_n_specials; s++)
    if (special_selected(o, hc_specials[s].name)) printf("check %s\n", hc_specials[s].name);
}

static void run_target(const hc_opts *o, hb_target *t, const hc_run *runs, int n, hc_tally *tally) {
  if (o->mode == HC_MODE_PERF) hc_perf_begin(o, t);
  for (int r = 0; r < n; r++) {
    const hc_case *c = runs[r].c;
    if (!op_selected(o, runs[r].op) || !in_mode(&runs[r], o->mode)) continue;
    unsigned modes[HC_MODE_COUNT + 1];
    int nm = 0;
    if (!c->modes) modes[nm++] = 0; /* no multiplier: acc32 */
    for (unsigned m = HC_M_ACC32; m <= HC_M_AM16_EXACT; m <<= 1)
      if ((c->modes & m) && (m != HC_M_AM16_EXACT || t->entry->set_exact_tier)) modes[nm++] = m;
    for (int k = 0; k < nm; k++) {
      if (o->mode == HC_MODE_PERF)
        hc_perf_case(o, t, &runs[r], modes[k]);
      else
        hc_run_case(o, t, &runs[r], modes[k], tally);
    }
  }
  if (o->mode == HC_MODE_PERF) {
    hc_perf_end(t);
    return;
  }
  for (int s = 0; o->mode == HC_MODE_FORWARD && s < hc_n_specials; s++) {
    if (!special_selected(o, hc_specials[s].name) || t->be->device == AMD_DEVICE_CPU) continue;
    if (!t->tk) {
      hc_report(0, "%s %s: the backend has no training kernels", t->entry->name, hc_specials[s].name);
      tally->failed++;
      continue;
    }
    hc_specials[s].run(t, o, tally);
  }
  /* no kernel untested: every op the backend has kernels for ran on them in some case */
  for (int i = 0; o->mode == HC_MODE_FORWARD && !o->n_ops && t->entry->has_kernel && i < AMD_OP_COUNT; i++) {
    if (!t->entry->has_kernel(i) || t->covered[i]) continue;
    hc_report(0, "%s: the backend has kernels for %s, and no case of this harness runs them", t->entry->name,
              amd_ops[i]->name);
    tally->failed++;
  }
}

/* 0 when some backend other than the CPU can run here, else 77 (SKIP and why). */
static int probe(void) {
  char why[512] = "this build has no backend but the CPU";
  for (int b = 0; hb_backends[b]; b++)
    if (hb_backends[b] != &hb_backend_cpu && hb_backends[b]->available(why, sizeof why)) return 0;
  printf("SKIP: %s\n", why);
  return 77;
}

int main(int argc, char **argv) {
  hc_opts o = {.mode = HC_MODE_FORWARD, .seed = 1, .runs = 10};
  int list = 0, probe_only = 0, n = 0;
  const int rc = parse_args(argc, argv, &o, &list, &probe_only);
  if (rc) return rc == 1 ? 0 : 2;
  if (probe_only) return probe();
  hc_run *runs = build_runs(&n);
  if (check_op_names(&o, runs, n)) return free(runs), 2;
  if (list) return print_list(&o, runs, n), free(runs), 0;
  const hb_backend *chosen[8];
  int n_chosen = 0;
  for (int b = 0; hb_backends[b] && n_chosen < 8; b++)
    if (o.backend ? !strcmp(o.backend, hb_backends[b]->name) : hb_backends[b] != &hb_backend_cpu)
      chosen[n_chosen++] = hb_backends[b];
  if (o.backend && !n_chosen)
    return fprintf(stderr, "test_backend_ops: no backend %s in this build\n", o.backend), 2;
  if (!n_chosen)
    return printf("SKIP: this build has no backend but the CPU (-b cpu: the cases on the CPU)\n"), 77;
  hc_tally tally = {0, 0};
  int tested = 0;
  for (int b = 0; b < n_chosen; b++) {
    hb_target *t = calloc(1, sizeof *t);
    char why[512] = "";
    amd_status st = {{0}};
    AMD_ASSERT(t);
    t->entry = chosen[b];
    const int orc = chosen[b]->open(&t->be, &t->tk, why, sizeof why, &st);
    if (orc == 77) printf("SKIP: %s\n", why);
    if (orc && orc != 77) hc_report(0, "%s: %s", chosen[b]->name, st.msg), tally.failed++;
    if (orc == 0) {
      printf("%s, mode %s, seed %llu (-s)\n", chosen[b]->name,
             o.mode == HC_MODE_GRAD   ? "grad"
             : o.mode == HC_MODE_PERF ? "perf"
                                      : "forward",
             (unsigned long long)o.seed);
      run_target(&o, t, runs, n, &tally);
      chosen[b]->close();
      tested++;
    }
    free(t);
  }
  hc_mult_free();
  free(runs);
  if (!tested && !tally.failed) return 77;
  if (o.mode != HC_MODE_PERF) printf("%d passed, %d failed\n", tally.passed, tally.failed);
  return tally.failed ? 1 : 0;
}

/* The --profile accumulator and its report (see profile.h). */
#include "profile.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

int amd_prof_on;

#define MAX_OPS 64

static struct {
  double stage_s[AMD_PROF_STAGE_COUNT], stage_macs[AMD_PROF_STAGE_COUNT];
  double part_s[AMD_PROF_PART_COUNT];
  struct {
    const char *name;
    int is_gemm;
    double s[2];
  } ops[MAX_OPS];
  int n_ops;
} prof;

static const char *const stage_names[AMD_PROF_STAGE_COUNT] = {
    "forward im2col",          "forward GEMM",          "backward-data GEMM", "backward-data col2im",
    "backward-weights im2col", "backward-weights GEMM",
};
static const char *const part_names[AMD_PROF_PART_COUNT] = {"data", "loss", "optimizer", "gradient all-reduce"};

static double (*device_clock)(void);

void amd_prof_set_device_clock(double (*clock)(void)) { device_clock = clock; }

double amd_prof_clock(void) {
  if (device_clock) return device_clock();
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void amd_prof_start(void) {
  memset(&prof, 0, sizeof prof);
  amd_prof_on = 1;
}

void amd_prof_stage_add(amd_prof_stage s, double seconds, double macs) {
  prof.stage_s[s] += seconds;
  prof.stage_macs[s] += macs;
}

void amd_prof_part_add(amd_prof_part p, double seconds) { prof.part_s[p] += seconds; }

void amd_prof_op_add(const char *op_type, int is_gemm, int backward, double seconds) {
  int i = 0;
  while (i < prof.n_ops && strcmp(prof.ops[i].name, op_type) != 0) i++;
  if (i == prof.n_ops) {
    if (prof.n_ops == MAX_OPS) return; /* more op types than any CNN has: the rest shows as unrecorded */
    prof.ops[i].name = op_type;
    prof.ops[i].is_gemm = is_gemm;
    prof.n_ops++;
  }
  prof.ops[i].s[backward ? 1 : 0] += seconds;
}

typedef struct {
  FILE *table, *tsv;
  double wall;
} sink;

static void row(const sink *k, const char *what, double s, double macs) {
  double share = k->wall > 0 ? 100.0 * s / k->wall : 0;
  if (k->table) {
    if (macs > 0)
      fprintf(k->table, "  %-42s %10.3f %6.1f%% %10.2f %10.2f\n", what, s, share, macs * 1e-9,
              s > 0 ? macs * 1e-9 / s : 0);
    else
      fprintf(k->table, "  %-42s %10.3f %6.1f%% %10s %10s\n", what, s, share, "-", "-");
  }
  if (k->tsv)
    fprintf(k->tsv, "%s\t%.6f\t%.4f\t%.0f\t%.0f\n", what, s, share / 100.0, macs, s > 0 ? macs / s : 0);
}

int amd_prof_report(FILE *out, const char *tsv_path, double wall_seconds, int64_t steps, amd_status *st) {
  amd_prof_on = 0;
  char tmp[4096];
  sink k = {out, NULL, wall_seconds};
  if (tsv_path) {
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", tsv_path) >= sizeof tmp)
      return amd_fail(st, "--profile %s: path too long", tsv_path);
    k.tsv = fopen(tmp, "w");
    if (!k.tsv) return amd_fail(st, "--profile %s: cannot write %s", tsv_path, tmp);
    fprintf(k.tsv, "what\tseconds\tshare\tmacs\tmacs_per_s\n");
  }
  if (out) {
    fprintf(out, "profile: %lld batches, %.3f s (%s)\n", (long long)steps, wall_seconds,
            device_clock ? "stages and ops: GPU time from CUDA events" : "host clocks");
    fprintf(out, "  %-42s %10s %7s %10s %10s\n", "stage", "seconds", "share", "GMAC", "GMAC/s");
  }
  double staged = 0, recorded = 0, gemm_ops = 0;
  for (int s = 0; s < AMD_PROF_STAGE_COUNT; s++) {
    row(&k, stage_names[s], prof.stage_s[s], prof.stage_macs[s]);
    staged += prof.stage_s[s];
  }
  for (int i = 0; i < prof.n_ops; i++)
    if (prof.ops[i].is_gemm) gemm_ops += prof.ops[i].s[0] + prof.ops[i].s[1];
  /* The GEMM nodes' own time outside their stages: bias, bias gradient, buffers. */
  double gemm_rest = gemm_ops > staged ? gemm_ops - staged : 0;
  row(&k, "other work of Conv/Gemm/MatMul", gemm_rest, 0);
  recorded = staged + gemm_rest;
  char name[128];
  for (int dir = 0; dir < 2; dir++)
    for (int i = 0; i < prof.n_ops; i++) {
      if (prof.ops[i].is_gemm || (dir == 1 && prof.ops[i].s[1] == 0)) continue;
      snprintf(name, sizeof name, "%s %s", prof.ops[i].name, dir ? "backward" : "forward");
      row(&k, name, prof.ops[i].s[dir], 0);
      recorded += prof.ops[i].s[dir];
    }
  for (int p = 0; p < AMD_PROF_PART_COUNT; p++) {
    if (prof.part_s[p] == 0) continue;
    row(&k, part_names[p], prof.part_s[p], 0);
    recorded += prof.part_s[p];
  }
  row(&k, "unrecorded (bookkeeping, allocation)", wall_seconds > recorded ? wall_seconds - recorded : 0, 0);
  double macs = 0;
  for (int s = 0; s < AMD_PROF_STAGE_COUNT; s++) macs += prof.stage_macs[s];
  row(&k, "total", wall_seconds, macs);
  if (k.tsv) {
    int bad = ferror(k.tsv);
    bad |= fclose(k.tsv);
    if (bad || rename(tmp, tsv_path) != 0) {
      unlink(tmp);
      return amd_fail(st, "--profile %s: write failed", tsv_path);
    }
  }
  return 0;
}

int amd_prof_report_text(char **text, const char *tsv_path, double wall_seconds, int64_t steps, amd_status *st) {
  size_t len = 0;
  *text = NULL;
  FILE *mem = open_memstream(text, &len);
  if (!mem) return amd_fail(st, "out of memory");
  int rc = amd_prof_report(mem, tsv_path, wall_seconds, steps, st);
  if (fclose(mem) != 0 && rc == 0) rc = amd_fail(st, "out of memory");
  if (rc) {
    free(*text);
    *text = NULL;
    return -1;
  }
  if (len && (*text)[len - 1] == '\n') (*text)[len - 1] = 0;
  return 0;
}

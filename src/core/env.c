/* The one place that reads the environment (see env.h). */
#include "env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

amd_env amd_env_defaults(void) {
  amd_env e;
  memset(&e, 0, sizeof e);
  e.nccl_timeout_s = 1800.0;
  e.faults.fail_rank = e.faults.fail_step = -1;
  e.faults.pause_after_step = -1;
  return e;
}

/* Set, and not "0". */
static int flag(const char *name) {
  const char *v = getenv(name);
  return v && strcmp(v, "0") != 0;
}

static long launcher_size(void) {
  static const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
  for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
    const char *v = getenv(vars[i]);
    if (v && *v) return strtol(v, NULL, 10);
  }
  return getenv("PMIX_RANK") || getenv("PMI_RANK") ? 1 : 0;
}

amd_env amd_env_read(void) {
  amd_env e = amd_env_defaults();
  e.dist = getenv("AMD_DIST");
  e.launcher_size = launcher_size();
  e.dist_bucket_mb = getenv("AMD_DIST_BUCKET_MB");
  e.dist_check = flag("AMD_DIST_CHECK");
  e.dist_all_output = flag("AMD_DIST_ALL_OUTPUT");
  e.omp_threads_set = getenv("OMP_NUM_THREADS") != NULL;
  const char *lim = getenv("AMD_NCCL_TIMEOUT_S");
  if (lim && atof(lim) > 0) e.nccl_timeout_s = atof(lim);
  e.gemm_isa = getenv("AMD_GEMM_ISA");
  e.alloc_trace = getenv("AMD_ALLOC_TRACE");
  const char *alloc = getenv("AMD_CUDA_ALLOCATOR");
  e.cuda_block_cache = alloc && strcmp(alloc, "blocks") == 0;
  const char *ws = getenv("AMD_CONV_WORKSPACE_MB");
  const double ws_mb = ws ? atof(ws) : 0.0;
  if (ws_mb > 0) e.conv_workspace_mb = ws_mb;
  const char *poison = getenv("AMD_CUDA_POISON_OUTPUTS");
  e.faults.cuda_poison_outputs = poison && strcmp(poison, "1") == 0;
  e.faults.ckpt_write_bytes = getenv("AMD_FAULT_WRITE_BYTES");
  const char *pause = getenv("AMD_FAULT_PAUSE_AFTER_STEP");
  if (pause && *pause) e.faults.pause_after_step = atoll(pause);
  const char *f = getenv("AMD_FAULT_RANK");
  long long r, s;
  char kind[16] = "";
  if (f && sscanf(f, "%lld:%lld:%15s", &r, &s, kind) >= 2) {
    e.faults.fail_rank = r;
    e.faults.fail_step = s;
    e.faults.fail_kill = strcmp(kind, "kill") == 0;
  }
  return e;
}

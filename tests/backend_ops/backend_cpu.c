/* The CPU backend as a backend under test: the case list against the CPU
 * itself (-b cpu). It checks what needs no other device: every case binds
 * and runs on the CPU, each case that must fail fails there at its stage
 * with a message, and two runs of an op give the same values (the CPU ops
 * do not depend on uninitialised memory or on the number of threads). Its
 * native / host expectation is the other backends' and is not checked. */
#include "harness.h"
#include "train/kernels.h"

static int cpu_available(char *why, size_t n) {
  (void)why, (void)n;
  return 1;
}

static int cpu_open(const amd_backend **be, const amd_train_kernels **tk, char *why, size_t n,
                    amd_status *st) {
  (void)why, (void)n, (void)st;
  *be = &amd_backend_cpu;
  *tk = amd_train_kernels_for(AMD_DEVICE_CPU);
  return 0;
}

static void cpu_close(void) {}

const hb_backend hb_backend_cpu = {
    .name = "cpu",
    .available = cpu_available,
    .open = cpu_open,
    .close = cpu_close,
    .has_kernel = NULL,
    .set_exact_tier = NULL,
    .checks_native = 0,
};

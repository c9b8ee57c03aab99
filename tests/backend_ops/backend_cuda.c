/* The CUDA backend as a backend under test (built with CUDA only), and the
 * backends of such a build. Opening it registers its training kernels,
 * selects device 0 and, with AMD_CUDA_POISON_OUTPUTS=1 (the suite's
 * poisoned runs), starts every native output as NaN so that an element a
 * kernel leaves unwritten shows; AMD_CONV_WORKSPACE_MB (the chunked runs)
 * sets how many images a Conv takes at a time (amd_cuda_settings_from_env:
 * the environment's CUDA settings as a session takes them). Its GEMM tiers: the fast one by default,
 * the exact one for the mode "am16 exact tier". */
#include "../../cuda/backend_cuda.h"
#include "core/env.h"
#include "harness.h"
#include "train/kernels.h"

static int cuda_available(char *why, size_t n) {
  char reason[256] = "";
  if (amd_cuda_device_count(reason, sizeof reason) > 0) return 1;
  snprintf(why, n, "no CUDA device (%s)", reason);
  return 0;
}

static int cuda_open(const amd_backend **be, const amd_train_kernels **tk, char *why, size_t n,
                     amd_status *st) {
  if (!cuda_available(why, n)) return 77;
  const amd_env env = amd_env_read();
  amd_cuda_settings_from_env(&env);
  if (amd_cuda_backend_open(0, 0, be, st)) return -1;
  if (amd_train_kernels_add(&amd_train_kernels_cuda, st)) return -1;
  *tk = amd_train_kernels_for((*be)->device);
  return 0;
}

static void cuda_close(void) { amd_cuda_backend_close(); }

static void cuda_exact_tier(int on) { amd_cuda_gemm_exact(on); }

const hb_backend hb_backend_cuda = {
    .name = "cuda",
    .available = cuda_available,
    .open = cuda_open,
    .close = cuda_close,
    .has_kernel = amd_cuda_has_kernel,
    .set_exact_tier = cuda_exact_tier,
    .checks_native = 1,
};

const hb_backend *const hb_backends[] = {&hb_backend_cpu, &hb_backend_cuda, NULL};

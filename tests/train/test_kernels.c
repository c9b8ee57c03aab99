/* The training kernels on the CPU (src/train/kernels.c, kernels_cpu.c,
 * loss.c): the registry (the CPU set is there, a set is found by its device,
 * added and replaced), the softmax cross-entropy through a kernel set (the
 * known value of uniform logits, the sums and predictions, the gradient rows
 * summing to 0, the loss scale, the per-sample rows equal to the tally), the
 * CPU optimizer step equal to amd_optim_step bit for bit for every optimizer
 * of the list, an unknown optimizer id refused, and the CPU backend's tables
 * (no stream). The CUDA set is compared with these in tests/gpu. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test_check.h"
#include "exec/backend.h"
#include "train/kernels.h"
#include "train/loss.h"
#include "train/optim.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;
static float uniform(float lo, float hi) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return lo + (hi - lo) * (float)((double)(rng >> 11) / 9007199254740992.0);
}

static void registry(void) {
  const amd_train_kernels *cpu = amd_train_kernels_for(AMD_DEVICE_CPU);
  CHECK(cpu == &amd_train_kernels_cpu, "the CPU set is not registered for the CPU");
  CHECK(cpu && cpu->data_batch == NULL, "the CPU set assembles batches on the host itself");
  CHECK(amd_train_kernels_for(77) == NULL, "a set for an unknown device");
  amd_status st = {{0}};
  amd_train_kernels a = amd_train_kernels_cpu, b = amd_train_kernels_cpu;
  a.device = b.device = 77;
  a.name = "a", b.name = "b";
  CHECK(amd_train_kernels_add(&a, &st) == 0 && amd_train_kernels_for(77) == &a, "add: %s", st.msg);
  CHECK(amd_train_kernels_add(&b, &st) == 0 && amd_train_kernels_for(77) == &b, "replace: %s", st.msg);
  CHECK(amd_train_kernels_for(AMD_DEVICE_CPU) == &amd_train_kernels_cpu, "the CPU set replaced");
  CHECK(amd_backend_cpu.buf && amd_backend_cpu.compute && !amd_backend_cpu.stream,
        "the CPU backend: buffers and compute, no stream");
}

static void softmax_xent(void) {
  const amd_train_kernels *k = &amd_train_kernels_cpu;
  amd_status st = {{0}};
  enum { N = 6, C = 7 };
  float z[N * C], dz[N * C], dz2[N * C];
  int64_t y[N], pred[N];
  { /* uniform logits: loss log(C) for every sample, argmax 0, the label's rank 0 */
    for (int i = 0; i < N * C; i++) z[i] = 0.25f;
    for (int i = 0; i < N; i++) y[i] = i % C;
    amd_batch_stats bs = {0};
    double mean = -1;
    CHECK(amd_train_softmax_xent(k, z, y, N, C, 0, 1, dz, pred, &bs, &mean, &st) == 0, "%s", st.msg);
    CHECK(fabs(mean - log((double)C)) < 1e-12, "uniform logits: mean %.17g, want log(%d)", mean, C);
    CHECK(bs.n == N && bs.top5 == N && fabs(bs.loss_sum - N * log((double)C)) < 1e-12, "uniform sums");
    int64_t top1 = 0;
    for (int i = 0; i < N; i++) {
      top1 += y[i] == 0;
      CHECK(pred[i] == 0, "argmax of equal logits is the first");
    }
    CHECK(bs.top1 == top1, "top1 %lld, want %lld", (long long)bs.top1, (long long)top1);
  }
  for (int i = 0; i < N * C; i++) z[i] = uniform(-3, 3);
  for (int i = 0; i < N; i++) y[i] = (int64_t)(uniform(0, 1) * C) % C;
  for (int smooth = 0; smooth < 2; smooth++) {
    const float eps = smooth ? 0.1f : 0;
    amd_batch_stats bs = {0}, bs2 = {0};
    double mean = 0, mean2 = 0;
    CHECK(amd_train_softmax_xent(k, z, y, N, C, eps, 1, dz, pred, &bs, &mean, &st) == 0, "%s", st.msg);
    CHECK(amd_train_softmax_xent(k, z, y, N, C, eps, 8, dz2, NULL, &bs2, &mean2, &st) == 0, "%s", st.msg);
    CHECK(mean == mean2 && bs.loss_sum == bs2.loss_sum && bs.top1 == bs2.top1,
          "the loss scale changes the loss");
    for (int i = 0; i < N; i++) {
      double row = 0;
      for (int j = 0; j < C; j++) {
        row += dz[i * C + j];
        CHECK(dz2[i * C + j] == dz[i * C + j] * 8.0f, "scaled gradient [%d, %d]", i, j);
      }
      CHECK(fabs(row) < 1e-6, "gradient row %d sums to %g", i, row);
    }
    /* the rows and their tally are the whole definition */
    void *rows = malloc(amd_xent_bytes(N));
    float dz3[N * C];
    amd_softmax_xent_rows(z, y, N, C, eps, 1, dz3, rows);
    amd_batch_stats bs3 = {0};
    int64_t pred3[N];
    const double mean3 = amd_xent_tally(rows, y, N, pred3, &bs3);
    CHECK(mean3 == mean && bs3.top5 == bs.top5 && !memcmp(pred3, pred, sizeof pred3) &&
              !memcmp(dz3, dz, sizeof dz3),
          "rows + tally differ from the kernel set's loss");
    const amd_xent_rows r = amd_xent_rows_of(rows, N);
    double total = 0;
    for (int i = 0; i < N; i++) total += r.loss[i];
    CHECK(total / N == mean, "per-sample losses sum to %.17g, mean %.17g", total / N, mean);
    free(rows);
  }
  { /* no samples: mean 0, nothing added */
    amd_batch_stats bs = {0};
    double mean = -1;
    CHECK(amd_train_softmax_xent(k, z, y, 0, C, 0, 1, NULL, NULL, &bs, &mean, &st) == 0 && mean == 0 &&
              bs.n == 0,
          "empty batch");
  }
}

static void optimizers(void) {
  const amd_train_kernels *k = &amd_train_kernels_cpu;
  amd_status st = {{0}};
  enum { N = 37 };
  for (int kind = 0; kind < AMD_OPT_COUNT; kind++) {
    const amd_optim named = {.kind = (amd_opt_kind)kind};
    amd_optim o;
    CHECK(amd_optim_init(amd_optim_name(&named), &o, &st) == 0 && (int)o.kind == kind, "%s", st.msg);
    if (kind == AMD_OPT_SGD || kind == AMD_OPT_RMSPROP) o.momentum = 0.9;
    o.weight_decay = 0.01;
    float p[N], q[N], g[N], s1[2 * N] = {0}, s2[2 * N] = {0};
    for (int i = 0; i < N; i++) p[i] = q[i] = uniform(-1, 1);
    for (int64_t t = 1; t <= 3; t++) {
      for (int i = 0; i < N; i++) g[i] = uniform(-1, 1);
      amd_optim_update u;
      amd_optim_update_make(&o, 0.01, t, &u);
      CHECK(u.state_blocks == amd_optim_state_blocks(&o) && u.fused_fma == amd_optim_fused_fma,
            "update fields");
      CHECK(k->optim_step(&u, p, g, s1, N, 0, &st) == 0, "%s", st.msg);
      amd_optim_step(&o, 0.01, t, q, g, s2, N);
    }
    CHECK(!memcmp(p, q, sizeof p) && !memcmp(s1, s2, sizeof s1),
          "%s: the kernel set differs from amd_optim_step", amd_optim_name(&o));
  }
  amd_optim bad;
  CHECK(amd_optim_init("adam", &bad, &st) == 0, "%s", st.msg);
  bad.kind = (amd_opt_kind)AMD_OPT_COUNT;
  float p[4] = {1, 2, 3, 4}, g[4] = {1, 1, 1, 1}, s[8] = {0};
  amd_optim_update u;
  amd_optim_update_make(&bad, 0.1, 1, &u);
  st.msg[0] = 0;
  CHECK(k->optim_step(&u, p, g, s, 4, 0, &st) != 0 && strstr(st.msg, "unknown optimizer"),
        "an unknown optimizer id is accepted (%s)", st.msg);
  CHECK(p[0] == 1 && p[3] == 4, "an unknown optimizer changed the parameters");
}

static void elementwise(void) {
  const amd_train_kernels *k = &amd_train_kernels_cpu;
  amd_status st = {{0}};
  float x[5] = {1, -2, 3, 0.5f, 4}, y[5] = {1, 1, 1, 1, 1};
  int ok = -1;
  CHECK(k->all_finite(x, 5, &ok, &st) == 0 && ok == 1, "finite values");
  x[2] = INFINITY;
  CHECK(k->all_finite(x, 5, &ok, &st) == 0 && ok == 0, "an Inf");
  x[2] = NAN;
  CHECK(k->all_finite(x, 5, &ok, &st) == 0 && ok == 0, "a NaN");
  x[2] = 3;
  CHECK(k->scale(x, 5, 0.5f, &st) == 0 && x[1] == -1 && x[4] == 2, "scale");
  CHECK(k->add(y, x, 5, &st) == 0 && y[1] == 0 && y[4] == 3, "add");
}

int main(void) {
  registry();
  softmax_xent();
  optimizers();
  elementwise();
  return check_summary();
}

/* CUDA kernels of the random ops (src/ops/random.c): RandomUniform,
 * RandomNormal, RandomUniformLike, RandomNormalLike and Bernoulli with a
 * float output (a double or integer output runs on the host). Element i is
 * amd_random_f32 of src/ops/random.h, the function the CPU calls, from the
 * counter form of the stream at ctx->rng (draw i, or draws 2i and 2i + 1 for
 * a normal output): the same bits as the CPU. ctx->rng then moves past the
 * draws as on the CPU. The *Like ops never read their input (only its shape);
 * no gradient flows back (the backward adds nothing). */
#include "ops_internal.h"

__global__ void k_random(int dist, int64_t cnt, uint64_t s0, double a, double b, const float *p, float *y) {
  AMD_CU_LOOP(i, cnt) y[i] = amd_random_f32(dist, a, b, s0, i, p ? (double)p[i] : 0.0);
}

int random_forward(FWD_ARGS) {
  const amd_random_attrs *a = (const amd_random_attrs *)n->attrs;
  if (!ctx) return amd_fail(st, "%s needs a random state (no context)", n->op->name);
  const int64_t cnt = amd_tensor_numel(&out[0]);
  const float *p = a->dist == AMD_RAND_BERNOULLI ? F(in[0]) : NULL;
  if (cnt) {
    k_random<<<amd_cu_blocks(cnt), 256, 0, amd_cu.stream>>>(a->dist, cnt, ctx->rng, a->a, a->b, p,
                                                            F(&out[0]));
    AMD_CUDA_CHECK_LAUNCH("k_random", st);
  }
  ctx->rng = amd_splitmix_skip(ctx->rng, amd_random_draws(a->dist, cnt));
  return 0;
}

int random_backward(BWD_ARGS) {
  (void)n, (void)ctx, (void)in, (void)out, (void)dout, (void)din, (void)st;
  return 0;
}

/* a float output: the dtype attribute, or without one the input's (which
 * amd_cu_node_ok has already required to be float) */
int random_supported(const amd_node *n, const amd_tensor *const *in) {
  (void)in;
  const amd_random_attrs *a = (const amd_random_attrs *)n->attrs;
  return a->dtype == 0 || a->dtype == AMD_FLOAT;
}

/* amd_trainer_reinit (trainer.h): the parameters re-initialised as PyTorch's
 * layers initialise them, from a seed (`train --reinit`). */
#include <math.h>

#include "../ops/op.h"
#include "trainer.h"

/* splitmix64 -> uniform in [-b, b) */
static float uniform_pm(uint64_t *s, double b) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (float)(((double)(z >> 11) / 9007199254740992.0 * 2.0 - 1.0) * b);
}

static void fill(amd_tensor *x, double b, float value, uint64_t *s) {
  float *p = x->data;
  for (int64_t i = 0; i < amd_tensor_numel(x); i++) p[i] = b > 0 ? uniform_pm(s, b) : value;
}

int amd_trainer_reinit(amd_trainer *t, uint64_t seed) {
  amd_graph *g = t->g;
  uint64_t s = seed * 0x2545f4914f6cdd1dull + 0x632be59bd9b4e019ull;
  int count = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    const amd_node *n = &g->nodes[i];
    amd_value *w = n->n_in > 1 && n->in[1] >= 0 ? &g->values[n->in[1]] : NULL;
    if (n->op->is_gemm && w && w->is_initializer && w->init.dtype == AMD_FLOAT && w->init.rank >= 2) {
      /* fan_in: Conv W [M, C/g, k...]; Gemm B [K, N] or [N, K] with transB; MatMul B [K, N] */
      int64_t fan_in = 1;
      if (n->op->idx == AMD_OP_IDX_Conv) {
        for (int d = 1; d < w->init.rank; d++) fan_in *= w->init.dims[d];
      } else {
        fan_in = w->init.dims[w->init.rank - 2]; /* MatMul B [..., K, N] */
        if (n->op->idx == AMD_OP_IDX_Gemm) {
          /* the layout from the shapes: the bias has the output width N; without a
           * bias assume PyTorch's Linear export, B = W [N, K] with transB = 1 */
          const amd_value *b = n->n_in > 2 && n->in[2] >= 0 ? &g->values[n->in[2]] : NULL;
          int64_t n_out = b && b->is_initializer ? amd_tensor_numel(&b->init) : -1;
          fan_in = n_out < 0 || n_out == w->init.dims[0] ? w->init.dims[1] : w->init.dims[0];
        }
      }
      double bound = 1.0 / sqrt((double)(fan_in > 0 ? fan_in : 1));
      fill(&w->init, bound, 0, &s);
      count++;
      amd_value *b = n->n_in > 2 && n->in[2] >= 0 ? &g->values[n->in[2]] : NULL;
      if ((n->op->idx == AMD_OP_IDX_Conv || n->op->idx == AMD_OP_IDX_Gemm) && b && b->is_initializer &&
          b->init.dtype == AMD_FLOAT) {
        fill(&b->init, bound, 0, &s);
        count++;
      }
    } else if (n->op->idx == AMD_OP_IDX_BatchNormalization && n->n_in >= 5) {
      static const float value[5] = {0, 1, 0, 0, 1};
      for (int k = 1; k < 5; k++) {
        amd_value *v = n->in[k] >= 0 ? &g->values[n->in[k]] : NULL;
        if (v && v->is_initializer && v->init.dtype == AMD_FLOAT) {
          fill(&v->init, 0, value[k], &s);
          count++;
        }
      }
    } else if (n->op->idx == AMD_OP_IDX_LayerNormalization) {
      for (int k = 1; k < 3 && k < n->n_in; k++) { /* Scale 1, B 0 (nn.LayerNorm's defaults) */
        amd_value *v = n->in[k] >= 0 ? &g->values[n->in[k]] : NULL;
        if (v && v->is_initializer && v->init.dtype == AMD_FLOAT) {
          fill(&v->init, 0, k == 1 ? 1.0f : 0.0f, &s);
          count++;
        }
      }
    }
  }
  return count;
}

/* The registry of the training kernels and their shared host code: see
 * kernels.h. */
#include "kernels.h"

#include <stdlib.h>
#include <string.h>

#include "../core/tensor.h"
#include "loss.h"
#include "optim.h"

enum { MAX_SETS = 8 };
static const amd_train_kernels *sets[MAX_SETS] = {&amd_train_kernels_cpu};
static int n_sets = 1;

const amd_train_kernels *amd_train_kernels_for(int device) {
  for (int i = 0; i < n_sets; i++)
    if (sets[i]->device == device) return sets[i];
  return NULL;
}

int amd_train_kernels_add(const amd_train_kernels *k, amd_status *st) {
  for (int i = 0; i < n_sets; i++)
    if (sets[i]->device == k->device) {
      sets[i] = k;
      return 0;
    }
  if (n_sets == MAX_SETS) return amd_fail(st, "too many training kernel sets (adding %s)", k->name);
  sets[n_sets++] = k;
  return 0;
}

int amd_train_softmax_xent(const amd_train_kernels *k, const float *z, const int64_t *labels, int64_t n,
                           int64_t c, float smoothing, float scale, float *dz, int64_t *pred,
                           amd_batch_stats *bs, double *mean, amd_status *st) {
  if (n <= 0) {
    *mean = 0;
    return 0;
  }
  void *rows = malloc(amd_xent_bytes(n));
  if (!rows) return amd_fail(st, "out of memory");
  const int rc = k->softmax_xent(z, labels, n, c, smoothing, scale, dz, rows, st);
  if (rc == 0) *mean = amd_xent_tally(rows, labels, n, pred, bs);
  free(rows);
  return rc;
}

void amd_optim_update_make(const amd_optim *o, double lr, int64_t t, amd_optim_update *u) {
  memset(u, 0, sizeof *u);
  u->o = o;
  u->lr = lr;
  u->t = t;
  amd_optim_get_coeffs(o, lr, t, &u->c);
  u->state_blocks = amd_optim_state_blocks(o);
  u->fused_fma = amd_optim_fused_fma;
}

/* Lookahead (trainer.h amd_trainer_lookahead): a slow copy of the weights
 * and BatchNormalization statistics that the fast ones are pulled back to
 * every few steps. The slow copy lives in the optimizer state's memory, after
 * the optimizer's own blocks, so that checkpoints, resumes and the ranks'
 * shared start carry it with the rest of the state. */
#include "trainer_internal.h"

#include "../exec/backend.h"

int64_t amd_trainer_lookahead_floats(const amd_trainer *t) {
  int64_t n = t->n_floats;
  for (int i = 0; i < t->n_stats; i++) n += amd_tensor_numel(&t->g->values[t->stats[i][1]].init);
  return n;
}

/* One tensor of n floats: w the fast values, s their slow copy. */
static int lookahead_one(const amd_trainer *t, amd_lookahead_op op, float decay, float *w, float *s,
                         int64_t n, amd_status *st) {
  const amd_train_kernels *k = amd_tr_kernels(t);
  const size_t bytes = (size_t)n * sizeof(float);
  switch (op) {
  case AMD_LOOKAHEAD_START:
    return t->be->buf->mem_copy(s, w, bytes, st);
  case AMD_LOOKAHEAD_PULL: /* s = decay s + (1 - decay) w, then w = s */
    return k->scale(s, n, decay, st) || k->scale(w, n, 1.0f - decay, st) || k->add(s, w, n, st) ||
                   t->be->buf->mem_copy(w, s, bytes, st)
               ? -1
               : 0;
  case AMD_LOOKAHEAD_END:
    return t->be->buf->mem_copy(w, s, bytes, st);
  }
  return amd_fail(st, "unknown lookahead operation %d", (int)op);
}

int amd_trainer_lookahead(amd_trainer *t, amd_lookahead_op op, float decay, float *opt_state, int64_t n_opt,
                          int64_t offset, amd_status *st) {
  float *state;
  if (offset + amd_trainer_lookahead_floats(t) > n_opt)
    return amd_fail(st, "lookahead: the optimizer state (%lld floats) holds no slow copy at %lld",
                    (long long)n_opt, (long long)offset);
  if (amd_tr_opt_state(t, opt_state, n_opt, &state, st)) return -1;
  float *slow = state + offset;
  if (lookahead_one(t, op, decay, t->bparams, slow, t->n_floats, st)) return -1;
  slow += t->n_floats;
  for (int i = 0; i < t->n_stats; i++) {
    amd_tensor *s = amd_tr_stat_tensor(t, t->stats[i][1]);
    const int64_t n = amd_tensor_numel(s);
    if (lookahead_one(t, op, decay, s->data, slow, n, st)) return -1;
    slow += n;
  }
  return 0;
}

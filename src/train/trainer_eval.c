/* Evaluation (see trainer.h): the inference-mode forward (running
 * statistics, no dropout) and the loss of one batch, with test-time
 * augmentation (t->tta: the mean of the logits of the batch and of its
 * mirror, and with t->tta_shift of shifted copies of both); a split or a
 * stream of pieces in batches made where the backend can (batches.h), scored
 * into the sums and a confusion matrix; the model's number of outputs from a
 * probe of one sample. Nothing here changes a parameter. */
#include "trainer_internal.h"

#include "../data/dataset.h"
#include "../exec/backend.h"
#include "../ops/q8f.h"
#include "../ops/quant.h"
#include "../report/profile.h"
#include "batches.h"

#include <stdlib.h>
#include <string.h>

/* The inference-mode forward of x; *z: the logits [n, c] in backend memory. */
static int eval_forward(amd_trainer *t, const amd_tensor *x, const amd_tensor **z, int64_t *n, int64_t *c,
                        amd_status *st) {
  amd_ctx ctx = t->ctx;
  ctx.training = 0;
  ctx.inference = 1;
  if (amd_run_forward(&t->run, &ctx, x, 0, st)) return -1;
  *z = &t->run.vals[t->logits_value];
  return amd_tr_logits_shape(*z, n, c, st);
}

static int eval_loss(amd_trainer *t, const float *z, const int64_t *labels, int64_t n, int64_t c,
                     amd_batch_stats *bs, int64_t *pred, amd_status *st) {
  if (amd_tr_check_labels(labels, n, c, st)) return -1;
  double mean, t0 = AMD_PROF_T0;
  if (amd_train_softmax_xent(amd_tr_kernels(t), z, labels, n, c, 0, 1.0f, NULL, pred, bs, &mean, st))
    return -1;
  if (amd_prof_on) amd_prof_part_add(AMD_PROF_LOSS, amd_prof_clock() - t0);
  return 0;
}

int amd_trainer_eval(amd_trainer *t, const amd_tensor *x, const int64_t *labels, amd_batch_stats *bs,
                     int64_t *pred, amd_status *st) {
  const amd_tensor *z;
  int64_t n = 0, c = 0;
  if (eval_forward(t, x, &z, &n, &c, st)) return -1;
  return eval_loss(t, z->data, labels, n, c, bs, pred, st);
}

/* One view of a batch for test-time augmentation: the images shifted by
 * (dy, dx) (padding outside, as crop:P), mirrored or not, and its logits'
 * weight in the mean. */
typedef struct tta_view {
  int dy, dx, mirror;
  float weight;
} tta_view;

/* The views of t->tta: the batch and its mirror (1/2 each); with tta_shift
 * N also both shifted N pixels down-right and up-left (output (i, j) reads
 * (i - N, j - N), then (i + N, j + N)), each mirrored or not: the unshifted
 * pair 1/4 each and the four shifted views 1/8 each. Every weight is a power
 * of two, so the plain pair's mean is bit for bit (z1 + z2) / 2. */
static int tta_views(const amd_trainer *t, tta_view *v) {
  int n = 0;
  const int N = t->tta_shift;
  const float pair = N ? 0.25f : 0.5f;
  v[n++] = (tta_view){0, 0, 0, pair};
  v[n++] = (tta_view){0, 0, 1, pair};
  for (int s = -1; N && s <= 1; s += 2) {
    v[n++] = (tta_view){s * N, s * N, 0, 0.125f};
    v[n++] = (tta_view){s * N, s * N, 1, 0.125f};
  }
  return n;
}

/* amd_trainer_eval of samples ids[0..k) with test-time augmentation: each
 * view of tta_views made into b, its logits weighted and summed in *sum
 * (backend memory for `batch` samples, allocated by the first call). */
static int eval_views(amd_trainer *t, amd_batches *b, const int64_t *ids, int64_t k, int64_t batch,
                      int64_t *y, void **sum, amd_batch_stats *bs, int64_t *pred, amd_status *st) {
  const amd_train_kernels *kern = amd_tr_kernels(t);
  tta_view views[6];
  const int n_views = tta_views(t, views);
  int64_t n = 0, c = 0;
  for (int v = 0; v < n_views; v++) {
    const amd_augment view = {.mirror_all = views[v].mirror, .shift_y = views[v].dy, .shift_x = views[v].dx};
    const amd_tensor *z;
    if (amd_batches_make(b, ids, k, &view, NULL, y, st) || eval_forward(t, &b->x, &z, &n, &c, st)) return -1;
    if (!*sum && t->be->buf->mem_alloc(sum, (size_t)(batch * c) * sizeof(float), st)) return -1;
    float *s = *sum, *zv = z->data; /* (the logits are the run's: free to scale until the next forward) */
    if (v == 0) {
      if (t->be->buf->mem_copy(s, zv, (size_t)(n * c) * sizeof(float), st) ||
          kern->scale(s, n * c, views[v].weight, st))
        return -1;
    } else if (kern->scale(zv, n * c, views[v].weight, st) || kern->add(s, zv, n * c, st)) {
      return -1;
    }
  }
  return eval_loss(t, *sum, y, n, c, bs, pred, st);
}

/* The working memory of an evaluation over batches of up to `batch`. */
typedef struct eval_work {
  amd_batches b;
  int64_t batch, *ids, *y, *pred;
  void *sum; /* t->tta: the summed logits of a batch */
} eval_work;

static int eval_work_open(eval_work *w, amd_trainer *t, const amd_dataset *ds, const amd_data_split *split,
                          int64_t batch, amd_status *st) {
  memset(w, 0, sizeof *w);
  w->batch = batch;
  w->ids = malloc((size_t)batch * sizeof *w->ids);
  w->y = malloc((size_t)batch * sizeof *w->y);
  w->pred = malloc((size_t)batch * sizeof *w->pred);
  if (!w->ids || !w->y || !w->pred) {
    free(w->ids);
    free(w->y);
    free(w->pred);
    memset(w, 0, sizeof *w);
    return amd_fail(st, "out of memory");
  }
  int rc = split ? amd_batches_open(&w->b, t->be, 0, ds, split, batch, "evaluation", st)
                 : amd_batches_open_pieces(&w->b, t->be, ds, batch, "evaluation", st);
  if (rc) {
    free(w->ids);
    free(w->y);
    free(w->pred);
    memset(w, 0, sizeof *w);
  }
  return rc;
}

static void eval_work_close(eval_work *w, amd_trainer *t) {
  if (w->sum) t->be->buf->mem_free(w->sum);
  if (w->ids) amd_batches_close(&w->b);
  free(w->ids);
  free(w->y);
  free(w->pred);
  memset(w, 0, sizeof *w);
}

/* Samples w->ids[0..k) of w->b's split: scored into bs and the confusion matrix. */
static int eval_ids(amd_trainer *t, eval_work *w, int64_t k, amd_batch_stats *bs, int64_t *confusion,
                    int64_t n_classes, amd_status *st) {
  int rc;
  if (t->tta) {
    rc = eval_views(t, &w->b, w->ids, k, w->batch, w->y, &w->sum, bs, w->pred, st);
  } else {
    rc = amd_batches_make(&w->b, w->ids, k, NULL, NULL, w->y, st);
    if (rc == 0) rc = amd_trainer_eval(t, &w->b.x, w->y, bs, w->pred, st);
  }
  for (int64_t i = 0; rc == 0 && confusion && i < k; i++)
    if (w->y[i] < n_classes && w->pred[i] < n_classes) confusion[w->y[i] * n_classes + w->pred[i]]++;
  return rc;
}

int amd_trainer_eval_split(amd_trainer *t, const amd_dataset *ds, const amd_data_split *split,
                           const int64_t *idx, int64_t n, int64_t batch, amd_batch_stats *bs,
                           int64_t *confusion, int64_t n_classes, amd_status *st) {
  eval_work w;
  int rc = eval_work_open(&w, t, ds, split, batch, st);
  for (int64_t start = 0; rc == 0 && start < n; start += batch) {
    int64_t k = n - start < batch ? n - start : batch;
    for (int64_t i = 0; i < k; i++) w.ids[i] = idx ? idx[start + i] : start + i;
    rc = eval_ids(t, &w, k, bs, confusion, n_classes, st);
  }
  eval_work_close(&w, t);
  return rc;
}

int amd_trainer_eval_pieces(amd_trainer *t, const amd_dataset *ds, int64_t batch,
                            int (*next)(void *user, amd_data_split *piece, amd_status *st), void *user,
                            amd_batch_stats *bs, int64_t *confusion, int64_t n_classes, amd_status *st) {
  eval_work w;
  int rc = eval_work_open(&w, t, ds, NULL, batch, st);
  for (;;) {
    amd_data_split piece;
    if (rc || (rc = next(user, &piece, st)) != 0 || piece.n == 0) break;
    if ((rc = amd_batches_load(&w.b, &piece, st)) != 0) break;
    for (int64_t i = 0; i < piece.n; i++) w.ids[i] = i;
    rc = eval_ids(t, &w, piece.n, bs, confusion, n_classes, st);
  }
  eval_work_close(&w, t);
  return rc;
}

int amd_trainer_n_outputs(amd_trainer *t, const amd_dataset *ds, int64_t *n_out, amd_status *st) {
  amd_tensor x = {.dtype = AMD_FLOAT, .rank = 4, .dims = {1, ds->c, ds->h, ds->w}};
  if (amd_tensor_alloc(&x, st)) return -1;
  /* the probe's zero image is no calibration batch of the q8 nodes quantized on the fly: their states are put
   * back after it (the GPU backend uploads a state changed on the host at the node's next call) */
  const amd_graph *g = t->g;
  amd_q8f_state *q8 = malloc(sizeof *q8 * (size_t)(g->n_nodes > 0 ? g->n_nodes : 1));
  if (!q8) {
    amd_tensor_free(&x);
    return amd_fail(st, "out of memory");
  }
  for (int i = 0; i < g->n_nodes; i++)
    if (amd_q8_float_is(&g->nodes[i])) amd_q8f_get_state(&g->nodes[i], &q8[i]);
  amd_ctx ctx = t->ctx;
  ctx.training = 0;
  ctx.inference = 1;
  int rc = amd_run_forward(&t->run, &ctx, &x, 0, st);
  int64_t n = 0, c = 0;
  if (rc == 0) rc = amd_tr_logits_shape(&t->run.vals[t->logits_value], &n, &c, st);
  amd_run_forget_static(&t->run); /* kept for a batch of 1: the real batches keep their own */
  for (int i = 0; i < g->n_nodes; i++)
    if (amd_q8_float_is(&g->nodes[i])) amd_q8f_set_state(&g->nodes[i], &q8[i]);
  free(q8);
  amd_tensor_free(&x);
  *n_out = c;
  return rc;
}

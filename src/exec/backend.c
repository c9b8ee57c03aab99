/* Running one node through a backend: native kernels or the host fallback
 * (see backend.h). Backend-independent: it only moves tensors with the
 * backend's buffer functions (mem_*) and calls the op's own CPU code.
 *
 * Host fallback, forward: every input that lives in backend memory is
 * downloaded into a temporary host tensor (except those whose data the op
 * never reads: op.h fwd_unread_in), the op's infer and forward run on
 * host tensors, and each float output is uploaded (the backend's placement
 * rule); the temporaries are freed. Backward: the same for in / out / dout,
 * and each din is downloaded, accumulated into by the CPU backward (+=) and
 * uploaded back into its buffer. */
#include "backend.h"

#include <string.h>

enum { MAX_IN = 64, MAX_OUT = 16 };

int amd_backend_download(const amd_backend *be, const amd_tensor *t, amd_tensor *dst, amd_status *st) {
  amd_tensor_set_shape(dst, t->dtype, t->rank, t->dims);
  if (amd_tensor_alloc(dst, st)) return -1;
  size_t bytes = amd_tensor_nbytes(t);
  if (!bytes) return 0;
  if (t->device == AMD_DEVICE_CPU) {
    memcpy(dst->data, t->data, bytes);
    return 0;
  }
  if (be->buf->mem_to_host(dst->data, t->data, bytes, st)) {
    amd_tensor_free(dst);
    return -1;
  }
  return 0;
}

int amd_backend_upload(const amd_backend *be, const amd_tensor *t, amd_tensor *dst, amd_status *st) {
  amd_tensor_set_shape(dst, t->dtype, t->rank, t->dims);
  if (be->buf->alloc(dst, st)) return -1;
  size_t bytes = amd_tensor_nbytes(t);
  if (!bytes) return 0;
  int rc = dst->device == AMD_DEVICE_CPU ? (memcpy(dst->data, t->data, bytes), 0)
                                         : be->buf->mem_from_host(dst->data, t->data, bytes, st);
  if (rc) be->buf->free(dst);
  return rc;
}

/* Host views of the tensors in src[0..n): those in backend memory with bit k
 * of mask set are downloaded into tmp[k] (owned[k] = 1), the others are used
 * as they are. */
static int stage(const amd_backend *be, int n, const amd_tensor *const *src, unsigned long long mask,
                 amd_tensor *tmp, unsigned char *owned, const amd_tensor **view, amd_status *st) {
  for (int k = 0; k < n; k++) {
    owned[k] = 0;
    view[k] = src[k];
    /* no data: a value training freed because backward does not read it (op.h bwd_unread_*) */
    if (!src[k] || !src[k]->data || src[k]->device == AMD_DEVICE_CPU || !((mask >> k) & 1)) continue;
    if (amd_backend_download(be, src[k], &tmp[k], st)) return -1;
    owned[k] = 1;
    view[k] = &tmp[k];
  }
  return 0;
}

static void unstage(int n, amd_tensor *tmp, unsigned char *owned) {
  for (int k = 0; k < n; k++)
    if (owned[k]) amd_tensor_free(&tmp[k]);
}

int amd_backend_forward_node(const amd_backend *be, const amd_node *n, amd_ctx *ctx,
                             const amd_tensor *const *in, amd_tensor *out, int shapes_only, amd_status *st) {
  if (n->n_in > MAX_IN || n->n_out > MAX_OUT)
    return amd_fail(st, "node '%s' (%s) has too many inputs or outputs", n->name, n->op->name);
  int native = be->compute->supports(n, in);
  /* the fallback downloads the inputs whose data the op reads */
  unsigned long long mask = native ? (be->compute->host_inputs ? be->compute->host_inputs(n) : 0)
                                   : ~(unsigned long long)n->op->fwd_unread_in;
  amd_tensor tmp[MAX_IN];
  unsigned char owned[MAX_IN];
  const amd_tensor *view[MAX_IN];
  memset(view, 0, sizeof view);
  int rc = stage(be, n->n_in, in, mask, tmp, owned, view, st);
  if (rc == 0) rc = n->op->infer(n, view, out, st);
  int n_alloc = 0;
  /* a native forward writes its outputs in full (not when only shapes are wanted) */
  int (*alloc_out)(amd_tensor *, amd_status *) =
      be->buf->alloc_out && !shapes_only ? be->buf->alloc_out : be->buf->alloc;
  for (int o = 0; rc == 0 && o < n->n_out; o++, n_alloc++)
    rc = native ? alloc_out(&out[o], st) : amd_tensor_alloc(&out[o], st);
  int run_it = !shapes_only;
  for (int o = 0; shapes_only && o < n->n_out; o++) run_it |= out[o].dtype != AMD_FLOAT;
  if (rc == 0 && run_it)
    rc = native ? be->compute->forward(n, ctx, view, out, st) : n->op->forward(n, ctx, view, out, st);
  /* the fallback's float outputs move to the backend */
  for (int o = 0; rc == 0 && !native && be->device != AMD_DEVICE_CPU && o < n->n_out; o++) {
    if (out[o].dtype != AMD_FLOAT) continue;
    amd_tensor d;
    if (amd_backend_upload(be, &out[o], &d, st)) {
      rc = -1;
      break;
    }
    amd_tensor_free(&out[o]);
    out[o] = d;
  }
  if (rc)
    for (int o = 0; o < n_alloc; o++) {
      if (!out[o].data) continue;
      if (out[o].device == AMD_DEVICE_CPU)
        amd_tensor_free(&out[o]);
      else
        be->buf->free(&out[o]);
    }
  unstage(n->n_in, tmp, owned);
  return rc;
}

int amd_backend_backward_node(const amd_backend *be, const amd_node *n, amd_ctx *ctx,
                              const amd_tensor *const *in, const amd_tensor *out,
                              const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  if (n->n_in > MAX_IN || n->n_out > MAX_OUT)
    return amd_fail(st, "node '%s' (%s) has too many inputs or outputs", n->name, n->op->name);
  if (be->compute->supports(n, in)) {
    unsigned long long mask = be->compute->host_inputs ? be->compute->host_inputs(n) : 0;
    amd_tensor tmp[MAX_IN];
    unsigned char owned[MAX_IN];
    const amd_tensor *view[MAX_IN];
    memset(view, 0, sizeof view);
    int rc = stage(be, n->n_in, in, mask, tmp, owned, view, st);
    if (rc == 0) rc = be->compute->backward(n, ctx, view, out, dout, din, st);
    unstage(n->n_in, tmp, owned);
    return rc;
  }
  /* host fallback */
  amd_tensor tin[MAX_IN], tout[MAX_OUT], tdout[MAX_OUT], tdin[MAX_IN];
  unsigned char own_in[MAX_IN], own_dout[MAX_OUT], own_din[MAX_IN] = {0};
  const amd_tensor *vin[MAX_IN], *vdout[MAX_OUT], *outp[MAX_OUT];
  amd_tensor hout[MAX_OUT], *vdin[MAX_IN];
  unsigned char own_out[MAX_OUT];
  const amd_tensor *vout[MAX_OUT];
  memset(vin, 0, sizeof vin);
  memset(vdin, 0, sizeof vdin);
  for (int o = 0; o < n->n_out; o++) outp[o] = &out[o];
  int rc = stage(be, n->n_in, in, ~0ull, tin, own_in, vin, st);
  int staged_out = 0, staged_dout = 0;
  if (rc == 0) rc = stage(be, n->n_out, outp, ~0ull, tout, own_out, vout, st), staged_out = 1;
  if (rc == 0) rc = stage(be, n->n_out, dout, ~0ull, tdout, own_dout, vdout, st), staged_dout = 1;
  for (int o = 0; o < n->n_out; o++) hout[o] = vout[o] && staged_out ? *vout[o] : out[o];
  for (int k = 0; rc == 0 && k < n->n_in; k++) {
    vdin[k] = din[k];
    if (!din[k] || din[k]->device == AMD_DEVICE_CPU) continue;
    if (amd_backend_download(be, din[k], &tdin[k], st))
      rc = -1;
    else
      own_din[k] = 1, vdin[k] = &tdin[k];
  }
  if (rc == 0) rc = n->op->backward(n, ctx, vin, hout, vdout, vdin, st);
  for (int k = 0; rc == 0 && k < n->n_in; k++)
    if (own_din[k]) rc = be->buf->mem_from_host(din[k]->data, tdin[k].data, amd_tensor_nbytes(&tdin[k]), st);
  for (int k = 0; k < n->n_in; k++)
    if (own_din[k]) amd_tensor_free(&tdin[k]);
  unstage(n->n_in, tin, own_in);
  if (staged_out) unstage(n->n_out, tout, own_out);
  if (staged_dout) unstage(n->n_out, tdout, own_dout);
  return rc;
}

/* Sessions (include/amdnn.h): a model loaded once with its multiplier
 * settings, the device opened on first use; what the model is made of; one
 * run, one gradient, writing it back. Evaluation, sweeps, training and
 * benchmarks are in their own files. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/alloc_trace.h"
#include "../core/env.h"
#include "backends.h"
#include "../gemm/gemm.h"
#include "../exec/exec.h"
#include "../exec/mode_apply.h"
#include "../onnx/load.h"
#include "../onnx/tensor_proto.h"
#include "../onnx/write.h"
#include "../ops/op.h"
#include "../train/kernels.h"
#include "../train/trainer.h"
#include "api.h"
#ifdef AMD_HAVE_CUDA
#include "../../cuda/backend_cuda.h"
#endif

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

/* The process's environment (core/env.h), read once: what the library takes
 * before any work (AMD_GEMM_ISA, AMD_ALLOC_TRACE, the CUDA backend's). */
static void read_env(void) {
  const amd_env env = amd_env_read();
  amd_gemm_force_isa(env.gemm_isa);
  amd_status st = {{0}};
  if (amd_alloc_trace_open(env.alloc_trace, &st)) /* before any session: no status to return it in */
    fprintf(stderr, "amdnn-onnx: %s; no allocation trace\n", st.msg);
#ifdef AMD_HAVE_CUDA
  amd_cuda_settings_from_env(&env);
#endif
}

void api_init(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, read_env);
}

int api_session_load(const amdnn_session *s, amd_graph **g, amd_mode_set *modes, amd_status *st) {
  if (amd_graph_load(s->path, 0, g, st)) return -1;
  if (amd_mode_apply(*g, s->mode, s->mode_map, s->backward, modes, st)) return -1;
  if (amd_q8_grad_apply(*g, s->q8_grad, st) || amd_q8_calib_apply(*g, s->q8_calib, st)) return -1;
  return 0;
}

/* Loads the model and applies the session's multiplier settings. */
static int load_model(amdnn_session *s, amd_status *st) { return api_session_load(s, &s->g, &s->modes, st); }

amdnn_status *amdnn_session_open(const char *model_path, const amdnn_options *opts, amdnn_session **out) {
  if (!out) return api_error(AMDNN_ERR_ARGUMENT, "amdnn_session_open: out is NULL");
  *out = NULL;
  if (!model_path) return api_error(AMDNN_ERR_ARGUMENT, "amdnn_session_open: no model path");
  amdnn_status *bad = api_opts_check(opts, AMDNN_FOR_SESSION, "amdnn_session_open");
  if (bad) return bad;
  api_init();
  amdnn_session *s = calloc(1, sizeof *s);
  if (!s) return api_error(AMDNN_ERR_NO_MEMORY, "out of memory");
  const char *mode = api_opt(opts, "mode");
  s->path = strdup(model_path);
  s->mode = strdup(mode ? mode : "acc32");
  s->mode_map = dup_or_null(api_opt(opts, "mode-map"));
  s->backward = dup_or_null(api_opt(opts, "backward-mode"));
  s->q8_grad = dup_or_null(api_opt(opts, "q8-grad"));
  s->q8_calib = dup_or_null(api_opt(opts, "q8-calib"));
  s->device = dup_or_null(api_opt(opts, "device"));
  s->debug_sync = api_opt_flag(opts, "debug-sync");
  const char *gemm = api_opt(opts, "gemm");
  s->gemm_exact = gemm && !strcmp(gemm, "exact");
  amd_status st = {{0}};
  if (!s->path || !s->mode) {
    amdnn_session_close(s);
    return api_error(AMDNN_ERR_NO_MEMORY, "out of memory");
  }
  if (load_model(s, &st)) {
    amdnn_session_close(s);
    return api_from(&st, AMDNN_ERR_FAILED);
  }
  *out = s;
  return NULL;
}

void amdnn_session_close(amdnn_session *s) {
  if (!s) return;
  amd_graph_free(s->g);
  amd_mode_set_free(&s->modes);
  free(s->path), free(s->mode), free(s->mode_map), free(s->backward), free(s->q8_grad), free(s->q8_calib);
  free(s->device);
  free(s->shapes);
  free(s->device_summary);
  free(s);
}

int api_session_reload(amdnn_session *s, amd_status *st) {
  amd_graph_free(s->g);
  amd_mode_set_free(&s->modes);
  s->g = NULL;
  return load_model(s, st);
}

int api_session_backend(amdnn_session *s, int local_rank, const amd_backend **be, amd_status *st) {
  amd_backend_gemm_exact(s->gemm_exact); /* per process: set again for this session's calls */
  if (!s->be || local_rank > 0) {
    if (amd_backend_open(s->device, s->debug_sync, local_rank, &s->be, st)) return -1;
    const amd_train_kernels *k = amd_backend_train_kernels(s->be);
    if (k && amd_train_kernels_add(k, st)) return -1;
    snprintf(s->device_name, sizeof s->device_name, "%s", s->be->name);
  }
  *be = s->be;
  return 0;
}

amdnn_status *amdnn_session_device(amdnn_session *s, const char **name) {
  if (!s || !name) return api_error(AMDNN_ERR_ARGUMENT, "amdnn_session_device: session or name is NULL");
  amd_status st = {{0}};
  const amd_backend *be;
  if (api_session_backend(s, 0, &be, &st)) return api_from(&st, AMDNN_ERR_FAILED);
  *name = s->device_name;
  return NULL;
}

int amdnn_cuda_device_count(void) { return amd_backend_gpu_count(); }

/* ------------------------------------------------------------------ info */

/* Multiply-accumulates of a GEMM node from its actual input and output shapes. */
static int64_t node_macs(const amd_node *n, const amd_tensor *const *in, const amd_tensor *out) {
  if (!n->op->is_gemm || !in[0] || !in[1]) return 0;
  const char *op = n->op->name;
  if (strcmp(op, "Conv") == 0) {
    /* each output element: (C_in / group) * prod(kernel) products; W is [M, C/group, k...] */
    int64_t per = 1;
    for (int d = 1; d < in[1]->rank; d++) per *= in[1]->dims[d];
    return amd_tensor_numel(&out[0]) * per;
  }
  /* Gemm and MatMul: output elements times the reduced dimension K */
  const amd_tensor *a = in[0];
  int64_t k = a->rank ? a->dims[a->rank - 1] : 1;
  if (strcmp(op, "Gemm") == 0 && a->rank == 2 && amd_tensor_numel(out) > 0) {
    /* transA: K is the first dim; recover K from the element counts */
    int64_t m = out[0].dims[0];
    k = m ? amd_tensor_numel(a) / m : 0;
  }
  return amd_tensor_numel(&out[0]) * k;
}

typedef struct shape_pass {
  const amd_graph *g;
  api_node_shape *nodes;
} shape_pass;

static void on_shape_node(void *user, const amd_node *n, const amd_tensor *const *in, const amd_tensor *out) {
  shape_pass *p = user;
  api_node_shape *ni = &p->nodes[n - p->g->nodes];
  ni->known = 1;
  amd_shape_str(&out[0], ni->shape, sizeof ni->shape);
  ni->macs = node_macs(n, in, out);
}

int api_shape_pass(const amd_graph *g, api_node_shape *nodes, amd_status *st) {
  shape_pass pass = {g, nodes};
  amd_tensor *inputs = calloc((size_t)g->n_inputs + 1, sizeof *inputs);
  amd_tensor *outputs = calloc((size_t)g->n_outputs + 1, sizeof *outputs);
  int rc = inputs && outputs ? 0 : amd_fail(st, "out of memory");
  for (int i = 0; rc == 0 && i < g->n_inputs; i++) {
    const amd_value *v = &g->values[g->inputs[i]];
    int64_t dims[AMD_MAX_RANK];
    for (int d = 0; d < v->rank; d++) dims[d] = v->dims[d] >= 0 ? v->dims[d] : 1;
    amd_tensor_set_shape(&inputs[i], v->dtype == AMD_UNDEFINED ? AMD_FLOAT : v->dtype, v->rank < 0 ? 0 : v->rank,
                         dims);
    if (amd_tensor_alloc(&inputs[i], st)) rc = -1;
  }
  amd_ctx ctx = {.shapes_only = 1, .on_node = on_shape_node, .user = &pass};
  int ran = rc == 0 && amd_exec_forward(g, &ctx, inputs, outputs, st) == 0;
  if (rc == 0 && !ran) rc = -1;
  for (int i = 0; inputs && i < g->n_inputs; i++) amd_tensor_free(&inputs[i]);
  for (int i = 0; outputs && ran && i < g->n_outputs; i++) amd_tensor_free(&outputs[i]);
  free(inputs);
  free(outputs);
  return rc;
}

void api_memory_note(const amdnn_callbacks *cb, const amd_backend *be) {
#ifdef AMD_HAVE_CUDA
  if (be != &amd_backend_cuda) return;
  size_t held, peak;
  long mallocs;
  const char *allocator;
  amd_cuda_alloc_stats(&held, &peak, &mallocs, &allocator);
  /* the block cache holds Conv's scratch in two workspaces of its own; the arena lends it for each node */
  const int arena = strcmp(allocator, "arena") == 0;
  api_message(cb, AMDNN_MSG_NOTE, "GPU memory: peak %.1f MiB held by the %s%s (%ld device allocations)",
              (double)peak / 1048576.0, allocator, arena ? "" : " and the Conv workspaces", mallocs);
#else
  (void)cb, (void)be;
#endif
}

int api_check_writable(const char *path, const char *what, amd_status *st) {
  char probe[4096];
  int k = snprintf(probe, sizeof probe, "%s.probe.%ld", path, (long)getpid());
  if (k < 0 || (size_t)k >= sizeof probe) return amd_fail(st, "cannot write %s '%s': path too long", what, path);
  int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return amd_fail(st, "cannot write %s '%s': %s", what, path, strerror(errno));
  close(fd);
  unlink(probe);
  return 0;
}

int api_check_folder(const char *dir, amd_status *st) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) return amd_fail(st, "cannot create '%s': %s", dir, strerror(errno));
  struct stat sb;
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) return amd_fail(st, "'%s' is not a folder", dir);
  char probe[4096];
  snprintf(probe, sizeof probe, "%s/x", dir);
  return api_check_writable(probe, "into the checkpoint folder", st);
}

#ifdef AMD_HAVE_CUDA
/* "N of M nodes native; host fallback: name (Op) xK, ..." on the CUDA backend. */
static char *fallback_summary(const amd_graph *g) {
  int per_op[AMD_OP_COUNT] = {0}, native = 0, internal = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    const amd_node *nd = &g->nodes[i];
    if (amd_backend_cuda.compute->supports(nd, NULL))
      native++;
    else if (nd->op->idx < 0 || nd->op->idx >= AMD_OP_COUNT)
      internal++; /* an internal op (the q8 modes' nodes, exec/mode_apply.c) */
    else
      per_op[nd->op->idx]++;
  }
  size_t n = 1400;
  char *buf = malloc(n);
  if (!buf) return NULL;
  size_t k = (size_t)snprintf(buf, n, "%d of %d nodes native; host fallback:", native, g->n_nodes);
  if (native == g->n_nodes && k < n) snprintf(buf + k, n - k, " none");
  int first = 1;
  for (int o = 0; o < AMD_OP_COUNT && k < n; o++)
    if (per_op[o]) {
      k += (size_t)snprintf(buf + k, n - k, "%s %s x%d", first ? "" : ",", amd_ops[o]->name, per_op[o]);
      first = 0;
    }
  if (internal && k < n) snprintf(buf + k, n - k, "%s 8-bit table nodes x%d", first ? "" : ",", internal);
  return buf;
}
#endif

amdnn_status *amdnn_session_info(amdnn_session *s, const amdnn_model_info **info) {
  if (!s || !info) return api_error(AMDNN_ERR_ARGUMENT, "amdnn_session_info: session or info is NULL");
  const amd_graph *g = s->g;
  if (!s->shapes) {
    s->shapes = calloc((size_t)g->n_nodes + 1, sizeof *s->shapes);
    if (!s->shapes) return api_error(AMDNN_ERR_NO_MEMORY, "out of memory");
    amd_status st = {{0}};
    amdnn_model_info *m = &s->info;
    memset(m, 0, sizeof *m);
    m->shapes_known = api_shape_pass(g, s->shapes, &st) == 0;
    snprintf(s->shape_note, sizeof s->shape_note, "%s", m->shapes_known ? "" : st.msg);
    m->path = s->path, m->producer = g->producer, m->ir_version = g->ir_version, m->opset = g->opset;
    m->n_inputs = g->n_inputs, m->n_outputs = g->n_outputs, m->n_nodes = g->n_nodes;
    for (int i = 0; i < g->n_values; i++)
      if (g->values[i].is_initializer && g->values[i].init.dtype == AMD_FLOAT) {
        m->parameters += amd_tensor_numel(&g->values[i].init);
        m->n_float_initializers++;
      }
    for (int i = 0; i < g->n_nodes; i++) {
      m->n_gemm_nodes += g->nodes[i].op->is_gemm;
      m->macs += s->shapes[i].macs;
    }
    m->shape_note = s->shape_note;
#ifdef AMD_HAVE_CUDA
    s->device_summary = fallback_summary(g);
#endif
    m->device_summary = s->device_summary;
  }
  *info = &s->info;
  return NULL;
}

static void value_info(const amd_value *v, amdnn_value_info *out) {
  memset(out, 0, sizeof *out);
  out->name = v->name;
  out->dtype = v->dtype;
  out->rank = v->rank;
  for (int d = 0; d < v->rank && d < AMDNN_MAX_RANK; d++) {
    out->dims[d] = v->dims[d];
    out->dim_names[d] = v->dim_param[d] && v->dim_param[d][0] ? v->dim_param[d] : NULL;
  }
}

amdnn_status *amdnn_session_input(amdnn_session *s, int i, amdnn_value_info *out) {
  if (!s || !out || i < 0 || i >= s->g->n_inputs)
    return api_error(AMDNN_ERR_ARGUMENT, "amdnn_session_input: no input %d", i);
  value_info(&s->g->values[s->g->inputs[i]], out);
  return NULL;
}

amdnn_status *amdnn_session_output(amdnn_session *s, int i, amdnn_value_info *out) {
  if (!s || !out || i < 0 || i >= s->g->n_outputs)
    return api_error(AMDNN_ERR_ARGUMENT, "amdnn_session_output: no output %d", i);
  value_info(&s->g->values[s->g->outputs[i]], out);
  return NULL;
}

amdnn_status *amdnn_session_node(amdnn_session *s, int i, amdnn_node_info *out) {
  if (!s || !out || i < 0 || i >= s->g->n_nodes)
    return api_error(AMDNN_ERR_ARGUMENT, "amdnn_session_node: no node %d", i);
  const amdnn_model_info *info;
  amdnn_status *bad = amdnn_session_info(s, &info); /* the shapes */
  if (bad) return bad;
  const amd_node *n = &s->g->nodes[i];
  const api_node_shape *sh = &s->shapes[i];
  memset(out, 0, sizeof *out);
  out->name = n->name;
  out->op_type = n->op->name;
  snprintf(out->shape, sizeof out->shape, "%s", sh->known ? sh->shape : "?");
  out->macs = sh->known ? sh->macs : 0;
  out->on_multiplier = n->op->is_gemm;
  if (n->op->is_gemm) {
    out->forward_mode = amd_mode_of(n->mult);
    out->backward_mode = amd_mode_of(n->bwd_mult);
  } else if (n->mult && n->mult->q8) { /* an integer op or a QDQ node in an 8-bit table mode */
    out->forward_mode = n->mult->name;
  }
  return NULL;
}

/* --------------------------------------------------------------- tensors */

int64_t amdnn_tensor_numel(const amdnn_tensor *t) {
  int64_t n = 1;
  for (int d = 0; t && d < t->rank; d++) n *= t->dims[d];
  return n;
}

size_t amdnn_dtype_size(int dtype) { return amd_dtype_size((amd_dtype)dtype); }

const char *amdnn_dtype_name(int dtype) { return amd_dtype_name((amd_dtype)dtype); }

void amdnn_tensors_free(amdnn_tensor *t, int n) {
  for (int i = 0; t && i < n; i++) {
    free((char *)t[i].name);
    free(t[i].data);
  }
  free(t);
}

/* A view of a caller's tensor (checked: rank, dims, a dtype the library knows). */
static int view_of(const amdnn_tensor *in, amd_tensor *t, amd_status *st) {
  memset(t, 0, sizeof *t);
  if (in->rank < 0 || in->rank > AMDNN_MAX_RANK) return amd_fail(st, "rank %d (0..%d)", in->rank, AMDNN_MAX_RANK);
  for (int d = 0; d < in->rank; d++)
    if (in->dims[d] < 0) return amd_fail(st, "dimension %d is %lld", d, (long long)in->dims[d]);
  if (!amd_dtype_size((amd_dtype)in->dtype)) return amd_fail(st, "dtype %d is not one the library computes with", in->dtype);
  amd_tensor_set_shape(t, (amd_dtype)in->dtype, in->rank, in->dims);
  if (!in->data && amd_tensor_numel(t) > 0) return amd_fail(st, "no data");
  t->data = in->data;
  return 0;
}

/* A result: a copy of host tensor t (moved: t's data is taken over) named name. */
static int result_of(amd_tensor *t, const char *name, amdnn_tensor *out, amd_status *st) {
  memset(out, 0, sizeof *out);
  out->name = strdup(name ? name : "");
  if (!out->name) return amd_fail(st, "out of memory");
  out->dtype = t->dtype;
  out->rank = t->rank;
  for (int d = 0; d < t->rank; d++) out->dims[d] = t->dims[d];
  out->data = t->data;
  t->data = NULL;
  return 0;
}

amdnn_status *amdnn_tensor_read(const char *path, amdnn_tensor **out) {
  if (!path || !out) return api_error(AMDNN_ERR_ARGUMENT, "amdnn_tensor_read: path or out is NULL");
  *out = calloc(1, sizeof **out);
  if (!*out) return api_error(AMDNN_ERR_NO_MEMORY, "out of memory");
  amd_status st = {{0}};
  amd_tensor t = {0};
  char *name = NULL;
  int rc = amd_tensor_read_file(path, &t, &name, &st);
  if (rc == 0) rc = result_of(&t, name, *out, &st);
  free(name);
  amd_tensor_free(&t);
  if (rc) {
    amdnn_tensors_free(*out, 1);
    *out = NULL;
    return api_from(&st, AMDNN_ERR_FAILED);
  }
  return NULL;
}

amdnn_status *amdnn_tensor_write(const char *path, const amdnn_tensor *t) {
  if (!path || !t) return api_error(AMDNN_ERR_ARGUMENT, "amdnn_tensor_write: path or tensor is NULL");
  amd_status st = {{0}};
  amd_tensor v;
  if (view_of(t, &v, &st)) return api_error(AMDNN_ERR_ARGUMENT, "amdnn_tensor_write: %s", st.msg);
  if (amd_tensor_write_file(path, &v, t->name ? t->name : "", &st)) return api_from(&st, AMDNN_ERR_FAILED);
  return NULL;
}

/* ---------------------------------------------------------- run and grad */

/* The model's inputs in graph order from the caller's (by name, or in order). */
static int order_inputs(const amd_graph *g, const amdnn_tensor *in, int n, amd_tensor *ordered, amd_status *st) {
  unsigned char *have = calloc((size_t)g->n_inputs + 1, 1);
  if (!have) return amd_fail(st, "out of memory");
  int rc = 0;
  if (n != g->n_inputs)
    rc = amd_fail(st, "the model has %d input%s, %d given", g->n_inputs, g->n_inputs == 1 ? "" : "s", n);
  for (int k = 0; rc == 0 && k < n; k++) {
    int slot = k;
    if (in[k].name) {
      slot = -1;
      for (int i = 0; i < g->n_inputs; i++)
        if (!strcmp(g->values[g->inputs[i]].name, in[k].name)) slot = i;
      if (slot < 0) rc = amd_fail(st, "the model has no input named '%s'", in[k].name);
    }
    if (rc == 0 && have[slot]) rc = amd_fail(st, "input '%s' given twice", g->values[g->inputs[slot]].name);
    if (rc == 0 && view_of(&in[k], &ordered[slot], st))
      rc = amd_fail_prefix(st, "input '%s'", g->values[g->inputs[slot]].name);
    if (rc == 0) have[slot] = 1;
  }
  free(have);
  return rc;
}

amdnn_status *amdnn_session_run(amdnn_session *s, const amdnn_tensor *inputs, int n_inputs, amdnn_tensor **outputs,
                                int *n_outputs) {
  if (!s || !outputs || !n_outputs || (n_inputs > 0 && !inputs))
    return api_error(AMDNN_ERR_ARGUMENT, "amdnn_session_run: a NULL argument");
  *outputs = NULL, *n_outputs = 0;
  const amd_graph *g = s->g;
  amd_status st = {{0}};
  amd_tensor *in = calloc((size_t)g->n_inputs + 1, sizeof *in);
  amd_tensor *res = calloc((size_t)g->n_outputs + 1, sizeof *res);
  amdnn_tensor *out = calloc((size_t)g->n_outputs + 1, sizeof *out);
  amdnn_status *bad = NULL;
  int ran = 0;
  if (!in || !res || !out) {
    bad = api_error(AMDNN_ERR_NO_MEMORY, "out of memory");
  } else if (order_inputs(g, inputs, n_inputs, in, &st)) {
    bad = api_from(&st, AMDNN_ERR_ARGUMENT);
  } else {
    amd_ctx ctx = {0};
    if (api_session_backend(s, 0, &ctx.backend, &st) || amd_exec_forward(g, &ctx, in, res, &st))
      bad = api_from(&st, AMDNN_ERR_FAILED);
    else
      ran = 1;
  }
  for (int k = 0; ran && !bad && k < g->n_outputs; k++)
    if (result_of(&res[k], g->values[g->outputs[k]].name, &out[k], &st)) bad = api_from(&st, AMDNN_ERR_FAILED);
  for (int k = 0; ran && k < g->n_outputs; k++) amd_tensor_free(&res[k]);
  free(in);
  free(res);
  if (bad) {
    amdnn_tensors_free(out, out ? g->n_outputs : 0);
    return bad;
  }
  *outputs = out;
  *n_outputs = g->n_outputs;
  return NULL;
}

/* Labels as int64 [N] (from int64 or int32, [N] or [N, 1]). */
static int labels_of(const amdnn_tensor *y, int64_t n, int64_t **out, amd_status *st) {
  amd_tensor t;
  if (view_of(y, &t, st)) return amd_fail_prefix(st, "labels");
  if ((t.dtype != AMD_INT64 && t.dtype != AMD_INT32) || amd_tensor_numel(&t) != n ||
      (t.rank != 1 && !(t.rank == 2 && t.dims[1] == 1)))
    return amd_fail(st, "labels must be int64 or int32 [%lld]", (long long)n);
  int64_t *l = malloc((size_t)(n ? n : 1) * sizeof *l);
  if (!l) return amd_fail(st, "out of memory");
  for (int64_t i = 0; i < n; i++) l[i] = amd_tensor_get_i64(&t, i);
  *out = l;
  return 0;
}

amdnn_status *amdnn_session_grad(amdnn_session *s, const amdnn_tensor *x, const amdnn_tensor *labels,
                                 const amdnn_options *opts, const amdnn_callbacks *cb, double *loss,
                                 amdnn_tensor **grads, int *n_grads) {
  if (!s || !x || !labels || !loss || !grads || !n_grads)
    return api_error(AMDNN_ERR_ARGUMENT, "amdnn_session_grad: a NULL argument");
  *grads = NULL, *n_grads = 0;
  amdnn_status *bad = api_opts_check(opts, AMDNN_FOR_GRAD, "grad");
  if (bad) return bad;
  amd_status st = {{0}};
  amd_tensor xt;
  int64_t *y = NULL;
  if (view_of(x, &xt, &st) || (xt.rank < 1 && amd_fail(&st, "the input needs a batch dimension")))
    return api_error(AMDNN_ERR_ARGUMENT, "input: %s", st.msg);
  if (labels_of(labels, xt.dims[0], &y, &st)) return api_from(&st, AMDNN_ERR_ARGUMENT);
  amd_trainer t = {0};
  const amd_backend *be;
  amdnn_tensor *out = NULL;
  int rc = amd_trainer_init(&t, s->g, NULL, &st);
  if (rc == 0 && t.warning[0]) api_message(cb, AMDNN_MSG_WARNING, "%s", t.warning);
  if (rc == 0) rc = api_session_backend(s, 0, &be, &st) || amd_trainer_set_backend(&t, be, &st);
  if (rc == 0)
    rc = amd_trainer_step_grads(&t, &xt, y, (float)api_opt_f64(opts, "label-smoothing", 0), 1.0f, loss, NULL, &st);
  if (rc == 0) rc = amd_trainer_sync_host(&t, NULL, 0, &st);
  if (rc == 0 && !(out = calloc((size_t)t.n_params + 1, sizeof *out))) rc = amd_fail(&st, "out of memory");
  for (int p = 0; rc == 0 && p < t.n_params; p++) {
    const amd_value *v = &s->g->values[t.param_value[p]];
    amd_tensor gt = v->init;
    gt.data = NULL;
    if (amd_tensor_alloc(&gt, &st)) {
      rc = -1;
      break;
    }
    memcpy(gt.data, t.grads + t.param_offset[p], amd_tensor_nbytes(&gt));
    rc = result_of(&gt, v->name, &out[p], &st);
    amd_tensor_free(&gt);
  }
  const int n = t.n_params;
  amd_trainer_free(&t);
  free(y);
  if (rc) {
    amdnn_tensors_free(out, out ? n : 0);
    return api_from(&st, AMDNN_ERR_FAILED);
  }
  *grads = out;
  *n_grads = n;
  return NULL;
}

/* ----------------------------------------------------------------- save */

amdnn_status *amdnn_session_save(amdnn_session *s, const char *path) {
  if (!s || !path) return api_error(AMDNN_ERR_ARGUMENT, "amdnn_session_save: session or path is NULL");
  amd_status st = {{0}};
  if (amd_graph_attach_proto(s->g, &st) || amd_graph_write(s->g, path, 1, &st))
    return api_from(&st, AMDNN_ERR_FAILED);
  return NULL;
}

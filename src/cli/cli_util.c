/* Small helpers shared by the commands: see cli_util.h. */
#include "cli_util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../core/env.h"
#include "../data/dataset.h"
#include "../data/image_stream.h"
#include "../exec/backend.h"
#include "../exec/exec.h"
#include "../exec/mode_apply.h"
#include "../ops/op.h"
#include "../gemm/gemm.h"
#include "../train/kernels.h"
#include "../train/trainer.h"
#ifdef AMD_HAVE_CUDA
#include "../../cuda/backend_cuda.h"
#endif

const amd_env *amd_cli_env(void) {
  static amd_env env;
  static int read;
  if (!read) {
    env = amd_env_read();
    read = 1;
    amd_gemm_force_isa(env.gemm_isa);
#ifdef AMD_HAVE_CUDA
    amd_cuda_poison_outputs(env.faults.cuda_poison_outputs);
#endif
  }
  return &env;
}

const char *amd_safe_name(const char *name, char *buf, size_t n) {
  size_t j = 0;
  for (; name[j] && j < n - 1; j++) {
    char c = name[j];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
             c == '_' || c == '-';
    buf[j] = ok ? c : '_';
  }
  buf[j] = 0;
  return buf;
}

int amd_make_dir(const char *path, char *err, size_t err_len) {
  if (mkdir(path, 0777) != 0 && errno != EEXIST) {
    snprintf(err, err_len, "cannot create '%s': %s", path, strerror(errno));
    return -1;
  }
  struct stat sb;
  if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
    snprintf(err, err_len, "'%s' is not a folder", path);
    return -1;
  }
  return 0;
}

int amd_parse_i64(const char *s, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < 0) return -1;
  *out = v;
  return 0;
}

int amd_parse_float(const char *s, float *out) {
  char *end;
  errno = 0;
  float v = strtof(s, &end);
  if (errno || end == s || *end || !isfinite(v)) return -1;
  *out = v;
  return 0;
}

int amd_cli_gemm_tier(const char *prog, const char *value) {
  const int exact = !strcmp(value, "exact");
  if (!exact && strcmp(value, "fast")) {
    fprintf(stderr, "%s: --gemm %s: expected fast or exact\n", prog, value);
    return 2;
  }
#ifdef AMD_HAVE_CUDA
  amd_cuda_gemm_exact(exact);
#endif
  return 0;
}

int amd_cli_backend(const char *spec, int debug_sync, const amd_backend **be, amd_status *st) {
  return amd_cli_backend_rank(spec, debug_sync, 0, be, st);
}

int amd_cli_backend_rank(const char *spec, int debug_sync, int local_rank, const amd_backend **be,
                         amd_status *st) {
  *be = &amd_backend_cpu;
  if (spec && strcmp(spec, "cpu") == 0) return 0;
  int index = 0, named = 0;
  if (spec) {
    const char *rest = NULL;
    if (strcmp(spec, "cuda") == 0)
      rest = "";
    else if (strncmp(spec, "cuda:", 5) == 0)
      rest = spec + 5;
    if (!rest) return amd_fail(st, "--device %s: expected cpu, cuda or cuda:N", spec);
    if (*rest) {
      char *end;
      long v = strtol(rest, &end, 10);
      if (*end || v < 0 || v > 1024) return amd_fail(st, "--device %s: N must be a GPU index", spec);
      index = (int)v;
      named = 1;
    }
  }
#ifdef AMD_HAVE_CUDA
  char why[256] = "";
  int count = amd_cuda_device_count(why, sizeof why);
  if (count <= 0) {
    if (!spec) return 0; /* no GPU: the CPU by default */
    return amd_fail(st, "--device %s: no CUDA device is usable (%s)", spec, why);
  }
  if (!named && local_rank > 0) index = local_rank % count;
  if (index >= count)
    return amd_fail(st, "--device %s: there %s only %d CUDA device%s", spec, count == 1 ? "is" : "are", count,
                    count == 1 ? "" : "s");
  if (amd_cuda_backend_open(index, debug_sync, be, st)) return -1;
  return amd_train_kernels_add(&amd_train_kernels_cuda, st); /* its device's training kernels */
#else
  (void)debug_sync;
  (void)index;
  (void)named;
  (void)local_rank;
  if (!spec) return 0;
  return amd_fail(st, "--device %s: this build has no CUDA backend (rebuild where nvcc is found)", spec);
#endif
}

const char *amd_cli_fallback_summary(const amd_graph *g, const amd_backend *be, char *buf, size_t n) {
  /* nodes on the host, counted per op type (in op_list.h's order) */
  int per_op[AMD_OP_COUNT] = {0}, native = 0, internal = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    const amd_node *nd = &g->nodes[i];
    if (be->compute->supports(nd, NULL))
      native++;
    else if (nd->op->idx < 0 || nd->op->idx >= AMD_OP_COUNT)
      internal++; /* an internal op (the q8 modes' nodes, exec/mode_apply.c) */
    else
      per_op[nd->op->idx]++;
  }
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

int amd_cli_check_writable(const char *path, const char *what, amd_status *st) {
  char probe[4096];
  int k = snprintf(probe, sizeof probe, "%s.probe.%ld", path, (long)getpid());
  if (k < 0 || (size_t)k >= sizeof probe) return amd_fail(st, "cannot write %s '%s': path too long", what, path);
  int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return amd_fail(st, "cannot write %s '%s': %s", what, path, strerror(errno));
  close(fd);
  unlink(probe);
  return 0;
}

void amd_cli_device_memory_note(const char *cmd, const amd_backend *be) {
#ifdef AMD_HAVE_CUDA
  if (be != &amd_backend_cuda) return;
  size_t held, peak;
  long mallocs;
  amd_cuda_alloc_stats(&held, &peak, &mallocs);
  fprintf(stderr,
          "amdnn-onnx %s: GPU memory: peak %.1f MiB held by the caching allocator (%ld cudaMalloc calls)\n",
          cmd, (double)peak / 1048576.0, mallocs);
#else
  (void)cmd, (void)be;
#endif
}

void amd_cli_backend_note(const char *cmd, const amd_graph *g, const amd_backend *be) {
  if (be->device == AMD_DEVICE_CPU) return;
  char buf[1400];
  fprintf(stderr, "amdnn-onnx %s: device %s: %s\n", cmd, be->name,
          amd_cli_fallback_summary(g, be, buf, sizeof buf));
}

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
  amd_cli_node_shape *nodes;
} shape_pass;

static void on_shape_node(void *user, const amd_node *n, const amd_tensor *const *in, const amd_tensor *out) {
  shape_pass *p = user;
  amd_cli_node_shape *ni = &p->nodes[n - p->g->nodes];
  ni->known = 1;
  amd_shape_str(&out[0], ni->shape, sizeof ni->shape);
  ni->macs = node_macs(n, in, out);
}

int amd_cli_shape_pass(const amd_graph *g, amd_cli_node_shape *nodes, amd_status *st) {
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

int64_t *amd_cli_limit_index(const amd_dataset *ds, const amd_data_split *s, int64_t limit) {
  if (ds->format != AMD_DATA_IMAGES || ds->partial || limit <= 0 || limit >= s->n) return NULL;
  int64_t *idx = malloc((size_t)limit * sizeof *idx);
  for (int64_t j = 0; idx && j < limit; j++) idx[j] = amd_spread_index(j, limit, s->n);
  return idx;
}

void amd_cli_image_progress(void *user, const char *stage, int64_t done, int64_t total) {
  fprintf(stderr, "%s: images: %s, %lld of %lld files\n", (const char *)user, stage, (long long)done,
          (long long)total);
}

static double cli_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int amd_cli_eval_setup(const char *cmd, amd_graph *g, const char *data, amd_image_opts *img, int split_test,
                       int64_t limit, int64_t batch, amd_image_stream **stream, const char *device, int debug_sync,
                       int tta, amd_dataset *ds, amd_trainer *t, amd_status *st) {
  img->only_split = split_test ? 1 : 2; /* the other split is not decoded (images:) */
  img->max_samples = limit;
  img->progress = amd_cli_image_progress, img->progress_user = (void *)cmd;
  char desc[512];
  const double t0 = cli_now_s();
  if (stream && !strncmp(data, "images:", 7) && img->norm != AMD_NORM_DATASET) {
    if (amd_image_stream_open(data, img, batch, 0, ds, stream, st)) return -1;
  } else {
    if (amd_dataset_load_opts(data, img, ds, st)) return -1;
    const double secs = cli_now_s() - t0;
    fprintf(stderr, "%s: %s; loaded in %.2f s (%.0f samples/s)\n", cmd, amd_dataset_describe(ds, desc, sizeof desc),
            secs, (double)(ds->train.n + (ds->test_is_train ? 0 : ds->test.n)) / (secs > 0 ? secs : 1e-9));
  }
  /* (a stream's note is complete at its end: the caller prints it then) */
  if (ds->note[0] && !(stream && *stream)) fprintf(stderr, "%s: warning: %s\n", cmd, ds->note);
  const amd_backend *be;
  if (amd_cli_eval_trainer(g, device, debug_sync, tta, t, &be, st)) return -1;
  if (stream && *stream) {
    /* on the CPU the model's threads need every core: decoding between batches */
    const int overlap = be->device != AMD_DEVICE_CPU;
    amd_image_stream_set_overlap(*stream, overlap);
    amd_image_stream_stats ss;
    amd_image_stream_stats_get(*stream, &ss);
    fprintf(stderr, "%s: %s; headers read in %.2f s, decoding streamed on %d threads %s\n", cmd,
            amd_dataset_describe(ds, desc, sizeof desc), ss.header_s, ss.workers,
            overlap ? "while the model runs" : "between the model's batches (CPU)");
  }
  amd_cli_backend_note(strncmp(cmd, "amdnn-onnx ", 11) ? cmd : cmd + 11, g, be);
  return amd_cli_check_outputs(t, ds, st);
}

int amd_cli_eval_trainer(amd_graph *g, const char *device, int debug_sync, int tta, amd_trainer *t,
                         const amd_backend **be, amd_status *st) {
  const amd_trainer_opts eval_opts = {.inference_only = 1}; /* quantized models too */
  if (amd_trainer_init(t, g, &eval_opts, st)) return -1;
  /* (--profile on a GPU times with CUDA events on the stream: report/profile.h) */
  if (amd_cli_backend(device, debug_sync, be, st) || amd_trainer_set_backend(t, *be, st)) return -1;
  t->tta = tta;
  return 0;
}

int amd_cli_check_outputs(amd_trainer *t, const amd_dataset *ds, amd_status *st) {
  int64_t n_out;
  if (amd_trainer_n_outputs(t, ds, &n_out, st)) return -1;
  if (ds->n_classes > n_out)
    return amd_fail(st, "the data set has %lld classes but the model has %lld outputs", (long long)ds->n_classes,
                    (long long)n_out);
  return 0;
}

int amd_cli_check_q8_calib(const char *prog, const char *calib) {
  double pct;
  amd_status st;
  if (!amd_q8_calib_parse(calib, &pct, &st)) return 0;
  fprintf(stderr, "%s: %s\n", prog, st.msg);
  return 2;
}

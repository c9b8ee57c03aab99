/* Graph IR -> ONNX file: see write.h.
 *
 * The ModelProto kept by the loader is never modified. The model that is
 * packed is a shallow copy of it (ModelProto and GraphProto structs copied by
 * value) whose pointer arrays (initializers, nodes, outputs, value_info) are
 * replaced by new arrays; only the messages that change (every initializer,
 * the BatchNormalization / Dropout nodes and attributes that for_inference
 * rewrites) are copied, everything else is shared with g->proto. All new
 * memory comes from one pool freed at the end, never through protobuf-c's
 * free functions. The packed bytes stream straight into the temporary file
 * (protobuf-c's pack_to_buffer), so no second copy of the weights is made. */
#include "write.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx.pb-c.h"

/* ------------------------------------------------------------------ pool */

typedef struct pool {
  void **blocks;
  size_t n, cap;
} pool;

/* Zeroed block of n * size bytes owned by pl; NULL (and st set) when out of memory. */
static void *pool_calloc(pool *pl, size_t n, size_t size, amd_status *st) {
  if (pl->n == pl->cap) {
    size_t ncap = pl->cap ? pl->cap * 2 : 16;
    void **nb = realloc(pl->blocks, ncap * sizeof *nb);
    if (!nb) {
      amd_fail(st, "out of memory");
      return NULL;
    }
    pl->blocks = nb;
    pl->cap = ncap;
  }
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) {
    amd_fail(st, "out of memory");
    return NULL;
  }
  pl->blocks[pl->n++] = p;
  return p;
}

static void pool_free(pool *pl) {
  for (size_t i = pl->n; i > 0; i--) free(pl->blocks[i - 1]);
  free(pl->blocks);
}

static const char *str_or_empty(const char *s) { return s ? s : ""; }

/* ---------------------------------------------------------- initializers */

/* Replaces gp->initializer by copies that carry the graph's current data. */
static int replace_initializers(const amd_graph *g, Onnx__GraphProto *gp, pool *pl, amd_status *st) {
  size_t n = gp->n_initializer;
  Onnx__TensorProto *copies = pool_calloc(pl, n, sizeof *copies, st);
  Onnx__TensorProto **arr = pool_calloc(pl, n, sizeof *arr, st);
  if (!copies || !arr) return -1;
  for (size_t i = 0; i < n; i++) {
    const Onnx__TensorProto *tp = gp->initializer[i];
    const char *name = str_or_empty(tp->name);
    int v = amd_graph_find_value(g, name);
    if (v < 0 || !g->values[v].is_initializer)
      return amd_fail(st, "initializer '%s' of the model is not an initializer of the graph", name);
    const amd_tensor *t = &g->values[v].init;
    int same = tp->has_data_type && tp->data_type == (int32_t)t->dtype && tp->n_dims == (size_t)t->rank;
    for (size_t d = 0; same && d < tp->n_dims; d++) same = tp->dims[d] == t->dims[d];
    if (!same) {
      char s[128];
      return amd_fail(st, "initializer '%s' is %s with %zu dims in the model but %s %s in the graph", name,
                      amd_dtype_name(tp->has_data_type ? (amd_dtype)tp->data_type : AMD_UNDEFINED),
                      tp->n_dims, amd_dtype_name(t->dtype), amd_shape_str(t, s, sizeof s));
    }
    if (t->device != AMD_DEVICE_CPU)
      return amd_fail(st, "initializer '%s' is on device %d (copy the parameters to the host first)", name,
                      t->device);
    size_t nbytes = amd_tensor_nbytes(t);
    if (nbytes && !t->data) return amd_fail(st, "initializer '%s' has no data", name);
    Onnx__TensorProto *c = &copies[i];
    *c = *tp; /* keeps name, dims, data_type, doc_string, unknown fields */
    c->n_float_data = 0, c->float_data = NULL;
    c->n_int32_data = 0, c->int32_data = NULL;
    c->n_string_data = 0, c->string_data = NULL;
    c->n_int64_data = 0, c->int64_data = NULL;
    c->n_double_data = 0, c->double_data = NULL;
    c->n_uint64_data = 0, c->uint64_data = NULL;
    c->n_external_data = 0, c->external_data = NULL;
    c->has_data_location = 0, c->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT;
    c->has_raw_data = 1;
    c->raw_data.len = nbytes;
    c->raw_data.data = t->data; /* little-endian host, as the loader assumes */
    arr[i] = c;
  }
  gp->initializer = arr;
  return 0;
}

/* ------------------------------------------------------------- inference */

/* Sets integer attribute `name` of node c (already a private copy) to value,
 * copying the attribute array and the attribute; adds it when missing and
 * add_if_missing is set. */
static int set_int_attr(Onnx__NodeProto *c, const char *name, int64_t value, int add_if_missing, pool *pl,
                        amd_status *st) {
  size_t k = 0;
  while (k < c->n_attribute && strcmp(str_or_empty(c->attribute[k]->name), name) != 0) k++;
  int found = k < c->n_attribute;
  if (!found && !add_if_missing) return 0;
  size_t n = c->n_attribute + (found ? 0 : 1);
  Onnx__AttributeProto **arr = pool_calloc(pl, n, sizeof *arr, st);
  Onnx__AttributeProto *a = pool_calloc(pl, 1, sizeof *a, st);
  if (!arr || !a) return -1;
  for (size_t i = 0; i < c->n_attribute; i++) arr[i] = c->attribute[i];
  if (found)
    *a = *c->attribute[k];
  else
    onnx__attribute_proto__init(a), a->name = (char *)name;
  a->has_type = 1;
  a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
  a->has_i = 1;
  a->i = value;
  arr[k] = a;
  c->attribute = arr;
  c->n_attribute = n;
  return 0;
}

static int is_default_domain(const char *d) { return !d || !d[0] || strcmp(d, "ai.onnx") == 0; }

static int name_in(const char *name, const char *const *names, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(name, names[i]) == 0) return 1;
  return 0;
}

/* Keeps the entries of a ValueInfoProto array whose name was not dropped. */
static int filter_value_infos(Onnx__ValueInfoProto ***arr, size_t *n, const char *const *dropped,
                              size_t n_dropped, pool *pl, amd_status *st) {
  Onnx__ValueInfoProto **kept = pool_calloc(pl, *n, sizeof *kept, st);
  if (!kept) return -1;
  size_t m = 0;
  for (size_t i = 0; i < *n; i++)
    if (!name_in(str_or_empty((*arr)[i]->name), dropped, n_dropped)) kept[m++] = (*arr)[i];
  *arr = kept;
  *n = m;
  return 0;
}

static int read_by_any_node(const Onnx__GraphProto *gp, const char *name) {
  for (size_t i = 0; i < gp->n_node; i++)
    for (size_t k = 0; k < gp->node[i]->n_input; k++)
      if (strcmp(str_or_empty(gp->node[i]->input[k]), name) == 0) return 1;
  return 0;
}

/* Rewrites training-mode BatchNormalization and Dropout nodes of gp (a copy
 * of the kept GraphProto) as inference nodes. */
static int to_inference(const Onnx__ModelProto *mp, Onnx__GraphProto *gp, pool *pl, amd_status *st) {
  int64_t opset = -1;
  for (size_t i = 0; i < mp->n_opset_import; i++)
    if (is_default_domain(mp->opset_import[i]->domain)) opset = mp->opset_import[i]->version;
  if (opset < 0) return amd_fail(st, "the model imports no opset of the default ONNX domain");

  size_t n_outputs_total = 0;
  for (size_t i = 0; i < gp->n_node; i++) n_outputs_total += gp->node[i]->n_output;
  const char **dropped = pool_calloc(pl, n_outputs_total, sizeof *dropped, st);
  const char **dropped_by = pool_calloc(pl, n_outputs_total, sizeof *dropped_by, st);
  const char **unread = pool_calloc(pl, gp->n_node, sizeof *unread, st); /* Dropout training_mode inputs */
  Onnx__NodeProto **nodes = pool_calloc(pl, gp->n_node, sizeof *nodes, st);
  if (!dropped || !dropped_by || !unread || !nodes) return -1;
  size_t n_dropped = 0, n_unread = 0;

  for (size_t i = 0; i < gp->n_node; i++) {
    Onnx__NodeProto *p = gp->node[i];
    nodes[i] = p;
    if (!is_default_domain(p->domain)) continue;
    const char *op = str_or_empty(p->op_type);
    int is_bn = strcmp(op, "BatchNormalization") == 0, is_dropout = strcmp(op, "Dropout") == 0;
    if (!is_bn && !is_dropout) continue;
    Onnx__NodeProto *c = pool_calloc(pl, 1, sizeof *c, st);
    if (!c) return -1;
    *c = *p; /* input/output arrays stay shared: only their counts shrink */
    if (is_bn) {
      for (size_t o = 1; o < p->n_output; o++) {
        const char *out = str_or_empty(p->output[o]);
        if (!out[0]) continue;
        dropped[n_dropped] = out;
        dropped_by[n_dropped++] = p->name && p->name[0] ? p->name : op;
      }
      if (c->n_output > 1) c->n_output = 1;
      if (opset >= 14 && set_int_attr(c, "training_mode", 0, 0, pl, st)) return -1;
      if (opset < 7 && set_int_attr(c, "is_test", 1, 1, pl, st)) return -1;
    } else {
      /* Dropout-12+: (data, ratio, training_mode); training_mode defaults to false */
      if (opset >= 12 && c->n_input > 2) {
        if (str_or_empty(c->input[2])[0]) unread[n_unread++] = c->input[2];
        c->n_input = 2;
      }
      while (c->n_input > 1 && !str_or_empty(c->input[c->n_input - 1])[0]) c->n_input--;
      if (opset < 7 && set_int_attr(c, "is_test", 1, 1, pl, st)) return -1;
    }
    nodes[i] = c;
  }
  gp->node = nodes;

  for (size_t i = 0; i < gp->n_node; i++)
    for (size_t k = 0; k < gp->node[i]->n_input; k++) {
      const char *in = str_or_empty(gp->node[i]->input[k]);
      for (size_t d = 0; d < n_dropped; d++)
        if (strcmp(in, dropped[d]) == 0)
          return amd_fail(st,
                          "node '%s' (%s) reads '%s', a training-mode output of BatchNormalization '%s' "
                          "that the inference model drops",
                          str_or_empty(gp->node[i]->name), str_or_empty(gp->node[i]->op_type), in,
                          dropped_by[d]);
    }
  if (filter_value_infos(&gp->output, &gp->n_output, dropped, n_dropped, pl, st) ||
      filter_value_infos(&gp->value_info, &gp->n_value_info, dropped, n_dropped, pl, st))
    return -1;
  if (gp->n_output == 0)
    return amd_fail(st, "every graph output is a training-mode BatchNormalization output; the inference "
                        "model would have none");

  /* A training_mode initializer that nothing reads any more goes too
   * (onnxruntime warns about unused initializers). */
  const char **gone = pool_calloc(pl, n_unread, sizeof *gone, st);
  if (!gone) return -1;
  size_t n_gone = 0;
  for (size_t u = 0; u < n_unread; u++) {
    const char *name = unread[u];
    int is_init = 0, is_output = 0;
    for (size_t i = 0; i < gp->n_initializer; i++)
      is_init |= strcmp(str_or_empty(gp->initializer[i]->name), name) == 0;
    for (size_t i = 0; i < gp->n_output; i++)
      is_output |= strcmp(str_or_empty(gp->output[i]->name), name) == 0;
    if (is_init && !is_output && !read_by_any_node(gp, name) && !name_in(name, gone, n_gone))
      gone[n_gone++] = name;
  }
  if (n_gone == 0) return 0;
  Onnx__TensorProto **kept = pool_calloc(pl, gp->n_initializer, sizeof *kept, st);
  if (!kept) return -1;
  size_t m = 0;
  for (size_t i = 0; i < gp->n_initializer; i++)
    if (!name_in(str_or_empty(gp->initializer[i]->name), gone, n_gone)) kept[m++] = gp->initializer[i];
  gp->initializer = kept;
  gp->n_initializer = m;
  /* IR < 4 lists initializers among the graph inputs */
  return filter_value_infos(&gp->input, &gp->n_input, gone, n_gone, pl, st) ||
                 filter_value_infos(&gp->value_info, &gp->n_value_info, gone, n_gone, pl, st)
             ? -1
             : 0;
}

/* ----------------------------------------------------------------- file */

/* A ProtobufCBuffer that streams into a file descriptor through 64 KiB. */
typedef struct fd_buffer {
  ProtobufCBuffer base;
  int fd;
  int err;        /* first errno, 0 while all is well */
  size_t written; /* bytes handed to write() successfully */
  size_t used;
  uint8_t buf[1 << 16];
} fd_buffer;

static void write_all(fd_buffer *b, const uint8_t *data, size_t len) {
  while (len && !b->err) {
    ssize_t w = write(b->fd, data, len);
    if (w < 0) {
      if (errno == EINTR) continue;
      b->err = errno;
    } else if (w == 0) {
      b->err = EIO;
    } else {
      data += w;
      len -= (size_t)w;
      b->written += (size_t)w;
    }
  }
}

static void fd_flush(fd_buffer *b) {
  write_all(b, b->buf, b->used);
  b->used = 0;
}

static void fd_append(ProtobufCBuffer *base, size_t len, const uint8_t *data) {
  fd_buffer *b = (fd_buffer *)base;
  if (b->err) return;
  if (b->used + len > sizeof b->buf) fd_flush(b);
  if (len >= sizeof b->buf)
    write_all(b, data, len);
  else {
    memcpy(b->buf + b->used, data, len);
    b->used += len;
  }
}

/* fsync of the folder that holds path, so that the rename is durable.
 * Best effort: some file systems refuse fsync on folders. */
static void sync_folder(const char *path) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash == dir)
    dir[1] = 0;
  else if (slash)
    *slash = 0;
  else
    snprintf(dir, sizeof dir, ".");
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
}

static int write_atomic(const Onnx__ModelProto *m, const char *path, amd_status *st) {
  size_t len = onnx__model_proto__get_packed_size(m);
  if (len > (size_t)INT32_MAX)
    return amd_fail(st, "the model is %zu bytes, over protobuf's 2 GiB limit (external data is not written)",
                    len);
  char tmp[4096 + 64];
  int fd = -1, err = 0;
  for (int k = 0; k < 100 && fd < 0; k++) {
    int w = snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%d", path, (long)getpid(), k);
    if (w < 0 || (size_t)w >= sizeof tmp) return amd_fail(st, "the path is too long");
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    err = errno;
    if (fd < 0 && err != EEXIST) break;
  }
  if (fd < 0) return amd_fail(st, "cannot create the temporary file '%s': %s", tmp, strerror(err));

  fd_buffer *b = malloc(sizeof *b);
  if (!b) {
    close(fd);
    unlink(tmp);
    return amd_fail(st, "out of memory");
  }
  memset(b, 0, offsetof(fd_buffer, buf));
  b->base.append = fd_append;
  b->fd = fd;
  onnx__model_proto__pack_to_buffer(m, &b->base);
  fd_flush(b);
  err = b->err;
  if (!err && b->written != len) err = EIO;
  free(b);
  const char *step = "write";
  if (!err && fsync(fd) != 0) err = errno, step = "fsync";
  if (close(fd) != 0 && !err) err = errno, step = "close";
  if (!err && rename(tmp, path) != 0) err = errno, step = "rename the temporary file onto";
  if (err) {
    unlink(tmp);
    return amd_fail(st, "cannot %s it: %s", step, strerror(err));
  }
  sync_folder(path);
  return 0;
}

/* ----------------------------------------------------------------- entry */

int amd_graph_write(const amd_graph *g, const char *path, int for_inference, amd_status *st) {
  if (!path || !path[0]) return amd_fail(st, "cannot write the model: no output path given");
  if (!g || !g->proto || !g->proto->graph)
    return amd_fail(
        st, "cannot write '%s': the graph does not hold its ModelProto (load it with keep_proto = 1)", path);
  pool pl = {0};
  Onnx__ModelProto model = *g->proto;
  Onnx__GraphProto graph = *g->proto->graph;
  model.graph = &graph;
  int rc = replace_initializers(g, &graph, &pl, st);
  if (rc == 0 && for_inference) rc = to_inference(g->proto, &graph, &pl, st);
  if (rc == 0) rc = write_atomic(&model, path, st);
  pool_free(&pl);
  if (rc) return amd_fail_prefix(st, "cannot write '%s'", path);
  return 0;
}

/* Writer tests (src/onnx/write.c): trained parameters written back into the
 * ModelProto and read again bit for bit; the inference rewrite of
 * BatchNormalization and Dropout; atomic writes that leave nothing behind on
 * failure; the in-memory ModelProto left as loaded.
 *
 * usage: test_write MODELS_DIR                  run the tests
 *        test_write MODELS_DIR --resnet8 OUT    only write the modified resnet8
 *                                               inference model to OUT (for
 *                                               the onnxruntime check) */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../test_check.h"
#include "onnx/load.h"
#include "onnx/tensor_proto.h"
#include "onnx/write.h"
#include "ops/op.h"

static char tmpdir[256];

/* ------------------------------------------------------------ helpers */

static uint8_t *pack_model(const Onnx__ModelProto *m, size_t *len) {
  *len = onnx__model_proto__get_packed_size(m);
  uint8_t *buf = malloc(*len + 1);
  AMD_ASSERT(buf);
  onnx__model_proto__pack(m, buf);
  return buf;
}

static uint8_t *slurp(const char *path, size_t *len) {
  uint8_t *data = NULL;
  amd_status st = {{0}};
  if (amd_read_file(path, (size_t)1 << 30, &data, len, &st)) return NULL;
  return data;
}

/* The deterministic "training step": w = w * scale + shift on every float initializer. */
static int modify_floats(amd_graph *g, float scale, float shift) {
  int n = 0;
  for (int v = 0; v < g->n_values; v++) {
    amd_tensor *t = &g->values[v].init;
    if (!g->values[v].is_initializer || t->dtype != AMD_FLOAT) continue;
    float *w = t->data;
    for (int64_t i = 0; i < amd_tensor_numel(t); i++) w[i] = w[i] * scale + shift;
    n++;
  }
  return n;
}

/* Every initializer of `want` but `skip` (may be NULL) is in `got` with the
 * same dtype, dims and bytes, and `got` has no others. */
static void check_same_initializers(const amd_graph *want, const amd_graph *got, const char *skip,
                                    const char *what) {
  int n_want = 0, n_got = 0, bad = 0;
  for (int v = 0; v < got->n_values; v++) n_got += got->values[v].is_initializer;
  for (int v = 0; v < want->n_values; v++) {
    const amd_value *a = &want->values[v];
    if (!a->is_initializer || (skip && strcmp(a->name, skip) == 0)) continue;
    n_want++;
    int u = amd_graph_find_value(got, a->name);
    if (u < 0 || !got->values[u].is_initializer) {
      CHECK(0, "%s: initializer '%s' is missing", what, a->name);
      continue;
    }
    const amd_tensor *x = &a->init, *y = &got->values[u].init;
    if (x->dtype != y->dtype || !amd_same_shape(x, y) ||
        memcmp(x->data, y->data, amd_tensor_nbytes(x)) != 0) {
      if (bad++ < 5) CHECK(0, "%s: initializer '%s' differs", what, a->name);
    }
  }
  CHECK(bad == 0, "%s: %d initializers differ", what, bad);
  CHECK(n_want == n_got, "%s: %d initializers written, %d expected", what, n_got, n_want);
}

static int count_op_outputs(const amd_graph *g, const char *op, int *max_out) {
  int n = 0;
  *max_out = 0;
  for (int i = 0; i < g->n_nodes; i++)
    if (strcmp(g->nodes[i].op->name, op) == 0) {
      n++;
      if (g->nodes[i].n_out > *max_out) *max_out = g->nodes[i].n_out;
    }
  return n;
}

/* Every initializer of a written file is stored as raw_data only. */
static void check_raw_only(const char *path) {
  amd_status st = {{0}};
  amd_graph *g = NULL;
  if (amd_graph_load(path, 1, &g, &st)) {
    CHECK(0, "reload %s: %s", path, st.msg);
    return;
  }
  const Onnx__GraphProto *gp = g->proto->graph;
  int bad = 0;
  for (size_t i = 0; i < gp->n_initializer; i++) {
    const Onnx__TensorProto *t = gp->initializer[i];
    if (!t->has_raw_data || t->n_float_data || t->n_int32_data || t->n_int64_data || t->n_double_data ||
        t->n_uint64_data || t->n_external_data ||
        (t->has_data_location && t->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT))
      bad++;
  }
  CHECK(bad == 0, "%s: %d initializers not stored as plain raw_data", path, bad);
  amd_graph_free(g);
}

/* Files in tmpdir whose name contains ".tmp." (leftover temporary files). */
static int count_temp_files(void) {
  DIR *d = opendir(tmpdir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (strstr(e->d_name, ".tmp.")) n++;
  if (d) closedir(d);
  return n;
}

/* ------------------------------------------------- the exported models */

static void test_model(const char *models, const char *name) {
  char path[1024], out_train[1024], out_inf[1024], out_inf2[1024];
  snprintf(path, sizeof path, "%s/%s.onnx", models, name);
  snprintf(out_train, sizeof out_train, "%s/%s.trained.onnx", tmpdir, name);
  snprintf(out_inf, sizeof out_inf, "%s/%s.inference.onnx", tmpdir, name);
  snprintf(out_inf2, sizeof out_inf2, "%s/%s.inference2.onnx", tmpdir, name);
  amd_status st = {{0}};
  amd_graph *g = NULL, *r = NULL;
  if (amd_graph_load(path, 1, &g, &st)) {
    CHECK(0, "load %s: %s", path, st.msg);
    return;
  }
  size_t len0, len1;
  uint8_t *before = pack_model(g->proto, &len0);
  int n_mod = modify_floats(g, 1.5f, 0.01f);
  CHECK(n_mod > 0, "%s: no float initializers to modify", name);
  int bn_max_out, n_bn = count_op_outputs(g, "BatchNormalization", &bn_max_out);

  int rc = amd_graph_write(g, out_train, 0, &st);
  CHECK(rc == 0, "%s: write (training): %s", name, st.msg);
  rc = amd_graph_write(g, out_inf, 1, &st);
  CHECK(rc == 0, "%s: write (inference): %s", name, st.msg);
  rc = amd_graph_write(g, out_inf2, 1, &st);
  CHECK(rc == 0, "%s: write (inference, again): %s", name, st.msg);
  rc = amd_graph_write(g, out_inf2, 1, &st); /* over an existing file */
  CHECK(rc == 0, "%s: write (inference, over the file): %s", name, st.msg);

  /* g->proto is as loaded; writing is deterministic */
  uint8_t *after = pack_model(g->proto, &len1);
  CHECK(len0 == len1 && memcmp(before, after, len0) == 0, "%s: amd_graph_write changed g->proto", name);
  free(before);
  free(after);
  size_t la, lb;
  uint8_t *fa = slurp(out_inf, &la), *fb = slurp(out_inf2, &lb);
  CHECK(fa && fb && la == lb && memcmp(fa, fb, la) == 0, "%s: two writes of the same graph differ", name);
  free(fa);
  free(fb);
  struct stat sb;
  mode_t mask = umask(022);
  umask(mask);
  CHECK(stat(out_inf, &sb) == 0 && (sb.st_mode & 0777) == (0666 & ~mask),
        "%s: written file has mode %o, expected %o", name, (unsigned)(sb.st_mode & 0777),
        (unsigned)(0666 & ~mask));

  const char *outs[2] = {out_train, out_inf};
  for (int k = 0; k < 2; k++) {
    if (amd_graph_load(outs[k], 1, &r, &st)) {
      CHECK(0, "reload %s: %s", outs[k], st.msg);
      continue;
    }
    check_same_initializers(g, r, NULL, outs[k]);
    CHECK(r->n_nodes == g->n_nodes, "%s: %d nodes, expected %d", outs[k], r->n_nodes, g->n_nodes);
    CHECK(r->n_outputs == g->n_outputs, "%s: %d outputs, expected %d", outs[k], r->n_outputs, g->n_outputs);
    int max_out, n = count_op_outputs(r, "BatchNormalization", &max_out);
    CHECK(n == n_bn, "%s: %d BatchNormalization nodes, expected %d", outs[k], n, n_bn);
    if (k == 0)
      CHECK(max_out == bn_max_out, "%s: BN has %d outputs, expected %d", outs[k], max_out, bn_max_out);
    else
      CHECK(n == 0 || max_out == 1, "%s: inference BN has %d outputs", outs[k], max_out);
    amd_graph_free(r);
    check_raw_only(outs[k]);
  }
  printf("ok   %s: %d float initializers modified, %d BN nodes, written and reloaded\n", name, n_mod, n_bn);
  amd_graph_free(g);
  unlink(out_train);
  unlink(out_inf);
  unlink(out_inf2);
}

/* ----------------------------------------- a synthetic opset-14 model */

/* X -> BatchNormalization(training_mode=1; Y, running_mean, running_var)
 *   -> Dropout(Y, ratio, training_mode=true) -> Z.
 * Graph outputs Z and running_mean; value_info for running_var. Initializers
 * in every storage: scale as float_data, bias as external data, mean and var
 * as raw_data, ratio as float_data, training_mode (bool) as int32_data.
 * With consumer = 1, an Identity node also reads running_var. */
typedef struct synth {
  Onnx__ModelProto model;
  Onnx__GraphProto graph;
  Onnx__OperatorSetIdProto opset, *opsets[1];
  Onnx__NodeProto nodes[3], *node_ptrs[3];
  Onnx__AttributeProto attrs[2], *attr_ptrs[2];
  Onnx__TensorProto inits[6], *init_ptrs[6];
  Onnx__StringStringEntryProto ext[1], *ext_ptrs[1];
  Onnx__ValueInfoProto vi[4], *in_ptrs[1], *out_ptrs[2], *vi_ptrs[1];
  Onnx__TypeProto types[4];
  Onnx__TypeProto__Tensor ttypes[4];
} synth;

static const char *bn_in[] = {"X", "scale", "bias", "mean", "var"};
static const char *bn_out[] = {"Y", "running_mean", "running_var"};
static const char *do_in[] = {"Y", "ratio", "training_mode"};
static const char *do_out[] = {"Z"};
static const char *id_in[] = {"running_var"};
static const char *id_out[] = {"W"};
static int64_t dims_c[1] = {3};
static float scale_v[3] = {1.0f, 0.5f, 2.0f}, bias_v[3] = {0.1f, -0.2f, 0.3f}, mean_v[3] = {0.f, 1.f, 2.f},
             var_v[3] = {1.f, 2.f, 3.f}, ratio_v[1] = {0.25f};
static int32_t tm_v[1] = {1};

static void s_value(Onnx__ValueInfoProto *v, Onnx__TypeProto *t, Onnx__TypeProto__Tensor *tt,
                    const char *name) {
  onnx__value_info_proto__init(v);
  onnx__type_proto__init(t);
  onnx__type_proto__tensor__init(tt);
  v->name = (char *)name;
  v->type = t;
  t->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  t->tensor_type = tt;
  tt->has_elem_type = 1;
  tt->elem_type = AMD_FLOAT;
}

static Onnx__TensorProto *s_init(synth *s, const char *name, int dtype, int rank) {
  size_t i = s->graph.n_initializer++;
  Onnx__TensorProto *t = &s->inits[i];
  onnx__tensor_proto__init(t);
  t->name = (char *)name;
  t->has_data_type = 1;
  t->data_type = dtype;
  t->n_dims = (size_t)rank;
  t->dims = dims_c;
  s->init_ptrs[i] = t;
  return t;
}

static Onnx__NodeProto *s_node(synth *s, const char *op, const char **in, size_t n_in, const char **out,
                               size_t n_out) {
  size_t i = s->graph.n_node++;
  Onnx__NodeProto *n = &s->nodes[i];
  onnx__node_proto__init(n);
  n->op_type = (char *)op;
  n->name = (char *)op;
  n->input = (char **)in;
  n->n_input = n_in;
  n->output = (char **)out;
  n->n_output = n_out;
  s->node_ptrs[i] = n;
  return n;
}

static void synth_build(synth *s, int consumer) {
  memset(s, 0, sizeof *s);
  onnx__model_proto__init(&s->model);
  onnx__graph_proto__init(&s->graph);
  onnx__operator_set_id_proto__init(&s->opset);
  s->model.has_ir_version = 1;
  s->model.ir_version = 8;
  s->opset.has_version = 1;
  s->opset.version = 14;
  s->opsets[0] = &s->opset;
  s->model.n_opset_import = 1;
  s->model.opset_import = s->opsets;
  s->model.graph = &s->graph;
  s->graph.name = (char *)"synth";
  s->graph.node = s->node_ptrs;
  s->graph.initializer = s->init_ptrs;

  Onnx__NodeProto *bn = s_node(s, "BatchNormalization", bn_in, 5, bn_out, 3);
  for (int k = 0; k < 2; k++) {
    onnx__attribute_proto__init(&s->attrs[k]);
    s->attrs[k].has_type = 1;
    s->attr_ptrs[k] = &s->attrs[k];
  }
  s->attrs[0].name = (char *)"epsilon";
  s->attrs[0].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
  s->attrs[0].has_f = 1;
  s->attrs[0].f = 1e-5f;
  s->attrs[1].name = (char *)"training_mode";
  s->attrs[1].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
  s->attrs[1].has_i = 1;
  s->attrs[1].i = 1;
  bn->n_attribute = 2;
  bn->attribute = s->attr_ptrs;
  s_node(s, "Dropout", do_in, 3, do_out, 1);
  if (consumer) s_node(s, "Identity", id_in, 1, id_out, 1);

  Onnx__TensorProto *t = s_init(s, "scale", AMD_FLOAT, 1);
  t->n_float_data = 3, t->float_data = scale_v;
  t = s_init(s, "bias", AMD_FLOAT, 1);
  onnx__string_string_entry_proto__init(&s->ext[0]);
  s->ext[0].key = (char *)"location";
  s->ext[0].value = (char *)"synth.bin";
  s->ext_ptrs[0] = &s->ext[0];
  t->n_external_data = 1, t->external_data = s->ext_ptrs;
  t->has_data_location = 1, t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  t = s_init(s, "mean", AMD_FLOAT, 1);
  t->has_raw_data = 1, t->raw_data.len = sizeof mean_v, t->raw_data.data = (uint8_t *)mean_v;
  t = s_init(s, "var", AMD_FLOAT, 1);
  t->has_raw_data = 1, t->raw_data.len = sizeof var_v, t->raw_data.data = (uint8_t *)var_v;
  t = s_init(s, "ratio", AMD_FLOAT, 0);
  t->n_float_data = 1, t->float_data = ratio_v;
  t = s_init(s, "training_mode", AMD_BOOL, 0);
  t->n_int32_data = 1, t->int32_data = tm_v;

  s_value(&s->vi[0], &s->types[0], &s->ttypes[0], "X");
  s_value(&s->vi[1], &s->types[1], &s->ttypes[1], "Z");
  s_value(&s->vi[2], &s->types[2], &s->ttypes[2], consumer ? "W" : "running_mean");
  s_value(&s->vi[3], &s->types[3], &s->ttypes[3], "running_var");
  s->in_ptrs[0] = &s->vi[0];
  s->out_ptrs[0] = &s->vi[1];
  s->out_ptrs[1] = &s->vi[2];
  s->vi_ptrs[0] = &s->vi[3];
  s->graph.n_input = 1, s->graph.input = s->in_ptrs;
  s->graph.n_output = 2, s->graph.output = s->out_ptrs;
  s->graph.n_value_info = 1, s->graph.value_info = s->vi_ptrs;
}

/* Writes the synthetic model (and its external data) into tmpdir, loads it
 * with keep_proto. */
static amd_graph *synth_load(int consumer, const char *file) {
  synth s;
  synth_build(&s, consumer);
  char path[512];
  snprintf(path, sizeof path, "%s/synth.bin", tmpdir);
  FILE *f = fopen(path, "wb");
  AMD_ASSERT(f && fwrite(bias_v, sizeof bias_v, 1, f) == 1 && fclose(f) == 0);
  size_t len;
  uint8_t *buf = pack_model(&s.model, &len);
  snprintf(path, sizeof path, "%s/%s", tmpdir, file);
  f = fopen(path, "wb");
  AMD_ASSERT(f && fwrite(buf, len, 1, f) == 1 && fclose(f) == 0);
  free(buf);
  amd_status st = {{0}};
  amd_graph *g = NULL;
  if (amd_graph_load(path, 1, &g, &st)) CHECK(0, "load synthetic model: %s", st.msg);
  unlink(path);
  return g;
}

static const Onnx__NodeProto *find_node(const Onnx__GraphProto *gp, const char *op) {
  for (size_t i = 0; i < gp->n_node; i++)
    if (strcmp(gp->node[i]->op_type, op) == 0) return gp->node[i];
  return NULL;
}

static int64_t attr_int(const Onnx__NodeProto *n, const char *name, int64_t def) {
  for (size_t i = 0; i < n->n_attribute; i++)
    if (strcmp(n->attribute[i]->name, name) == 0) return n->attribute[i]->i;
  return def;
}

static void test_synthetic(void) {
  amd_graph *g = synth_load(0, "synth.onnx");
  if (!g) return;
  modify_floats(g, 1.5f, 0.01f);
  size_t len0, len1;
  uint8_t *before = pack_model(g->proto, &len0);
  char out[512], out_train[512];
  snprintf(out, sizeof out, "%s/synth.inference.onnx", tmpdir);
  snprintf(out_train, sizeof out_train, "%s/synth.trained.onnx", tmpdir);
  amd_status st = {{0}};
  CHECK(amd_graph_write(g, out, 1, &st) == 0, "synthetic: write (inference): %s", st.msg);
  CHECK(amd_graph_write(g, out_train, 0, &st) == 0, "synthetic: write (training): %s", st.msg);
  uint8_t *after = pack_model(g->proto, &len1);
  CHECK(len0 == len1 && memcmp(before, after, len0) == 0, "synthetic: amd_graph_write changed g->proto");
  free(before);
  free(after);
  /* the external data file goes away: the written models must not need it */
  char bin[512];
  snprintf(bin, sizeof bin, "%s/synth.bin", tmpdir);
  unlink(bin);

  amd_graph *r = NULL;
  if (amd_graph_load(out, 1, &r, &st)) {
    CHECK(0, "synthetic: reload: %s", st.msg);
  } else {
    /* the training_mode initializer is read by nobody any more: it goes */
    check_same_initializers(g, r, "training_mode", "synthetic inference");
    CHECK(amd_graph_find_value(r, "training_mode") < 0, "synthetic: unused training_mode initializer kept");
    const Onnx__GraphProto *gp = r->proto->graph;
    const Onnx__NodeProto *bn = find_node(gp, "BatchNormalization"), *dr = find_node(gp, "Dropout");
    CHECK(bn && bn->n_output == 1, "synthetic: BN keeps %zu outputs, expected 1", bn ? bn->n_output : 0);
    CHECK(bn && attr_int(bn, "training_mode", -1) == 0, "synthetic: BN training_mode is not 0");
    CHECK(bn && attr_int(bn, "epsilon", -1) == 0 && bn->n_attribute == 2, "synthetic: BN attributes changed");
    CHECK(dr && dr->n_input == 2 && strcmp(dr->input[1], "ratio") == 0,
          "synthetic: Dropout has %zu inputs, expected (Y, ratio)", dr ? dr->n_input : 0);
    CHECK(gp->n_output == 1 && strcmp(gp->output[0]->name, "Z") == 0,
          "synthetic: graph outputs not reduced to Z (%zu outputs)", gp->n_output);
    CHECK(gp->n_value_info == 0, "synthetic: value_info of a dropped output kept");
    CHECK(r->n_nodes == 2, "synthetic: %d nodes", r->n_nodes);
    amd_graph_free(r);
    check_raw_only(out);
  }
  if (amd_graph_load(out_train, 1, &r, &st)) {
    CHECK(0, "synthetic: reload training: %s", st.msg);
  } else {
    check_same_initializers(g, r, NULL, "synthetic training");
    const Onnx__GraphProto *gp = r->proto->graph;
    const Onnx__NodeProto *bn = find_node(gp, "BatchNormalization"), *dr = find_node(gp, "Dropout");
    CHECK(bn && bn->n_output == 3 && attr_int(bn, "training_mode", -1) == 1,
          "synthetic: training BN changed");
    CHECK(dr && dr->n_input == 3, "synthetic: training Dropout changed");
    CHECK(gp->n_output == 2 && gp->n_value_info == 1, "synthetic: training outputs changed");
    amd_graph_free(r);
    check_raw_only(out_train);
  }
  unlink(out);
  unlink(out_train);
  amd_graph_free(g);

  /* a node that reads a dropped output: clear error, no file */
  g = synth_load(1, "synth2.onnx");
  if (!g) return;
  snprintf(out, sizeof out, "%s/synth2.inference.onnx", tmpdir);
  int rc = amd_graph_write(g, out, 1, &st);
  CHECK(rc != 0 && strstr(st.msg, "running_var") && strstr(st.msg, "Identity") && strstr(st.msg, out),
        "synthetic: reading a dropped output: rc %d, message '%s'", rc, st.msg);
  CHECK(access(out, F_OK) != 0, "synthetic: a file was written despite the error");
  printf("ok   synthetic opset 14: %s\n", st.msg);
  amd_graph_free(g);
  unlink(bin);
  printf("ok   synthetic opset 14 BN + Dropout rewritten, all storages written as raw_data\n");
}

/* ----------------------------------------------------------- failures */

static void test_failures(const char *models) {
  char path[1024];
  snprintf(path, sizeof path, "%s/lenet5_train.onnx", models);
  amd_status st = {{0}};
  amd_graph *g = NULL;
  if (amd_graph_load(path, 1, &g, &st)) {
    CHECK(0, "load %s: %s", path, st.msg);
    return;
  }
  /* under a regular file */
  int rc = amd_graph_write(g, "/etc/passwd/x.onnx", 0, &st);
  CHECK(rc != 0 && strstr(st.msg, "/etc/passwd/x.onnx") && strstr(st.msg, "Not a directory"),
        "write under /etc/passwd: rc %d, message '%s'", rc, st.msg);
  printf("ok   %s\n", st.msg);
  char file[512], bad[600];
  snprintf(file, sizeof file, "%s/regular", tmpdir);
  FILE *f = fopen(file, "w");
  AMD_ASSERT(f && fclose(f) == 0);
  snprintf(bad, sizeof bad, "%s/x.onnx", file);
  rc = amd_graph_write(g, bad, 0, &st);
  CHECK(rc != 0 && strstr(st.msg, bad), "write under a regular file: rc %d, message '%s'", rc, st.msg);
  unlink(file);
  /* onto a folder: the temporary file is written, the rename fails, it must go */
  snprintf(bad, sizeof bad, "%s/folder.onnx", tmpdir);
  AMD_ASSERT(mkdir(bad, 0755) == 0);
  rc = amd_graph_write(g, bad, 0, &st);
  CHECK(rc != 0 && strstr(st.msg, bad) && strstr(st.msg, "rename"),
        "write onto a folder: rc %d, message '%s'", rc, st.msg);
  printf("ok   %s\n", st.msg);
  CHECK(count_temp_files() == 0, "a temporary file was left in %s", tmpdir);
  rmdir(bad);
  /* empty path */
  CHECK(amd_graph_write(g, "", 0, &st) != 0 && strstr(st.msg, "path"), "empty path: '%s'", st.msg);
  amd_graph_free(g);

  /* loaded without the ModelProto */
  if (amd_graph_load(path, 0, &g, &st)) {
    CHECK(0, "load %s: %s", path, st.msg);
    return;
  }
  snprintf(bad, sizeof bad, "%s/noproto.onnx", tmpdir);
  rc = amd_graph_write(g, bad, 0, &st);
  CHECK(rc != 0 && strstr(st.msg, "keep_proto") && access(bad, F_OK) != 0,
        "write without a kept proto: rc %d, message '%s'", rc, st.msg);
  printf("ok   %s\n", st.msg);
  amd_graph_free(g);
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv) {
  if (argc != 2 && !(argc == 4 && strcmp(argv[2], "--resnet8") == 0)) {
    fprintf(stderr, "usage: test_write MODELS_DIR [--resnet8 OUT.onnx]\n");
    return 2;
  }
  const char *models = argv[1];
  if (argc == 4) { /* the modified resnet8 inference model, for ort_check.py (a milder change than
                      1.5x, which compounds over the layers into logits of 1e5) */
    char path[1024];
    snprintf(path, sizeof path, "%s/resnet8_train.onnx", models);
    amd_status st = {{0}};
    amd_graph *g = NULL;
    if (amd_graph_load(path, 1, &g, &st) ||
        (modify_floats(g, 1.1f, 0.001f), amd_graph_write(g, argv[3], 1, &st))) {
      fprintf(stderr, "test_write: %s\n", st.msg);
      amd_graph_free(g);
      return 1;
    }
    amd_graph_free(g);
    return 0;
  }
  snprintf(tmpdir, sizeof tmpdir, "/tmp/amd_test_write.XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  test_model(models, "lenet5_train");
  test_model(models, "resnet8_train");
  test_synthetic();
  test_failures(models);
  CHECK(count_temp_files() == 0, "temporary files left in %s", tmpdir);
  if (rmdir(tmpdir) != 0) CHECK(0, "files left in %s", tmpdir);
  return check_summary();
}

/* Loader tests: every dtype from raw_data and the typed fields, external data
 * (and symbolic links that lead it out of the model's folder),
 * and each kind of bad input ending in one clear error (never a crash).
 *
 * Models are built in memory with the protobuf-c structs, packed to bytes and
 * loaded through amd_graph_load_bytes or written to a temp folder and loaded
 * through amd_graph_load, the path the CLI takes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../test_check.h"
#include "exec/exec.h"
#include "onnx/load.h"
#include "onnx/opset.h"
#include "onnx/tensor_proto.h"
#include "ops/op.h"

static char tmpdir[256];

/* ---- a tiny model builder over the protobuf-c structs ---- */
typedef struct builder {
  Onnx__ModelProto model;
  Onnx__GraphProto graph;
  Onnx__OperatorSetIdProto opset, *opsets[1];
  Onnx__NodeProto nodes[8], *node_ptrs[8];
  char *node_in[8][4], *node_out[8][4];
  Onnx__TensorProto inits[8], *init_ptrs[8];
  Onnx__ValueInfoProto vi[4], *in_ptrs[2], *out_ptrs[2];
  Onnx__TypeProto types[4];
  Onnx__TypeProto__Tensor ttypes[4];
  Onnx__TensorShapeProto shapes[4];
  Onnx__TensorShapeProto__Dimension dims[4][4], *dim_ptrs[4][4];
} builder;

static void b_init(builder *b, int opset) {
  memset(b, 0, sizeof *b);
  onnx__model_proto__init(&b->model);
  onnx__graph_proto__init(&b->graph);
  onnx__operator_set_id_proto__init(&b->opset);
  b->model.has_ir_version = 1;
  b->model.ir_version = 8;
  b->opset.has_version = 1;
  b->opset.version = opset;
  b->opsets[0] = &b->opset;
  b->model.n_opset_import = opset > 0 ? 1 : 0;
  b->model.opset_import = b->opsets;
  b->model.graph = &b->graph;
  b->graph.node = b->node_ptrs;
  b->graph.initializer = b->init_ptrs;
  b->graph.input = b->in_ptrs;
  b->graph.output = b->out_ptrs;
}

static void b_node(builder *b, const char *op, const char *in0, const char *in1, const char *out0) {
  int i = (int)b->graph.n_node++;
  Onnx__NodeProto *n = &b->nodes[i];
  onnx__node_proto__init(n);
  n->op_type = (char *)op;
  n->input = b->node_in[i];
  n->output = b->node_out[i];
  if (in0) b->node_in[i][n->n_input++] = (char *)in0;
  if (in1) b->node_in[i][n->n_input++] = (char *)in1;
  b->node_out[i][n->n_output++] = (char *)out0;
  b->node_ptrs[i] = n;
}

/* A float tensor value (input or output) of the given rank; dim -1 = symbolic "batch". */
static void b_value(builder *b, int is_input, const char *name, int rank, const int64_t *d) {
  int k = (int)(b->graph.n_input + b->graph.n_output);
  Onnx__ValueInfoProto *v = &b->vi[k];
  onnx__value_info_proto__init(v);
  onnx__type_proto__init(&b->types[k]);
  onnx__type_proto__tensor__init(&b->ttypes[k]);
  onnx__tensor_shape_proto__init(&b->shapes[k]);
  v->name = (char *)name;
  v->type = &b->types[k];
  b->types[k].value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  b->types[k].tensor_type = &b->ttypes[k];
  b->ttypes[k].has_elem_type = 1;
  b->ttypes[k].elem_type = AMD_FLOAT;
  b->ttypes[k].shape = &b->shapes[k];
  b->shapes[k].n_dim = (size_t)rank;
  b->shapes[k].dim = b->dim_ptrs[k];
  for (int i = 0; i < rank; i++) {
    Onnx__TensorShapeProto__Dimension *dm = &b->dims[k][i];
    onnx__tensor_shape_proto__dimension__init(dm);
    if (d[i] < 0) {
      dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
      dm->dim_param = (char *)"batch";
    } else {
      dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
      dm->dim_value = d[i];
    }
    b->dim_ptrs[k][i] = dm;
  }
  if (is_input) b->in_ptrs[b->graph.n_input++] = v;
  else b->out_ptrs[b->graph.n_output++] = v;
}

static Onnx__TensorProto *b_init_tensor(builder *b, const char *name, int dtype, int rank, int64_t *dims) {
  int i = (int)b->graph.n_initializer++;
  Onnx__TensorProto *t = &b->inits[i];
  onnx__tensor_proto__init(t);
  t->name = (char *)name;
  t->has_data_type = 1;
  t->data_type = dtype;
  t->n_dims = (size_t)rank;
  t->dims = dims;
  b->init_ptrs[i] = t;
  return t;
}

static uint8_t *b_pack(builder *b, size_t *len) {
  *len = onnx__model_proto__get_packed_size(&b->model);
  uint8_t *buf = malloc(*len + 1);
  onnx__model_proto__pack(&b->model, buf);
  return buf;
}

/* Loads the builder's model from bytes; returns the graph or NULL with st set. */
static amd_graph *b_load(builder *b, amd_status *st) {
  size_t len;
  uint8_t *buf = b_pack(b, &len);
  amd_graph *g = NULL;
  amd_graph_load_bytes(buf, len, tmpdir, 0, &g, st);
  free(buf);
  return g;
}

/* Builds x -> Relu -> y with x [batch,3]. */
static void relu_model(builder *b) {
  static const int64_t d[2] = {-1, 3};
  b_init(b, 13);
  b_node(b, "Relu", "x", NULL, "y");
  b_value(b, 1, "x", 2, d);
  b_value(b, 0, "y", 2, d);
}

static void expect_error(amd_graph *g, const amd_status *st, const char *needle, const char *what) {
  CHECK(g == NULL, "%s: loaded, expected an error", what);
  CHECK(strstr(st->msg, needle) != NULL, "%s: message '%s' lacks '%s'", what, st->msg, needle);
  printf("  %-32s -> %s\n", what, st->msg);
  amd_graph_free(g);
}

static void test_bad_models(void) {
  builder b;
  amd_status st = {{0}};

  relu_model(&b);
  b.node_in[0][0] = (char *)"nobody";
  expect_error(b_load(&b, &st), &st, "'nobody', which no node", "dangling input");

  relu_model(&b);
  b.nodes[0].op_type = (char *)"FooBar";
  expect_error(b_load(&b, &st), &st, "'FooBar' (opset 13)", "unknown op");

  relu_model(&b);
  b.nodes[0].domain = (char *)"com.example";
  expect_error(b_load(&b, &st), &st, "domain 'com.example'", "unknown domain");

  /* a cycle: y = Relu(z), z = Relu(y), output y */
  b_init(&b, 13);
  b_node(&b, "Relu", "z", NULL, "y");
  b_node(&b, "Relu", "y", NULL, "z");
  static const int64_t d3[1] = {3};
  b_value(&b, 1, "x", 1, d3);
  b_value(&b, 0, "y", 1, d3);
  expect_error(b_load(&b, &st), &st, "cycle", "cycle");

  relu_model(&b);
  b.nodes[0].output[0] = (char *)"x";
  expect_error(b_load(&b, &st), &st, "already a graph input", "output overwrites an input");

  relu_model(&b);
  b.model.n_opset_import = 0;
  expect_error(b_load(&b, &st), &st, "no opset", "no opset import");

  relu_model(&b);
  b.model.graph = NULL;
  expect_error(b_load(&b, &st), &st, "no graph", "no graph");

  /* unsupported dtype: a string initializer */
  relu_model(&b);
  static int64_t d1[1] = {1};
  b_init_tensor(&b, "s", AMD_STRING, 1, d1);
  expect_error(b_load(&b, &st), &st, "unsupported dtype string", "string initializer");

  /* raw_data with the wrong byte count */
  relu_model(&b);
  static int64_t d4[1] = {4};
  Onnx__TensorProto *t = b_init_tensor(&b, "w", AMD_FLOAT, 1, d4);
  static uint8_t raw[12];
  t->has_raw_data = 1;
  t->raw_data.len = sizeof raw;
  t->raw_data.data = raw;
  expect_error(b_load(&b, &st), &st, "raw_data has 12 bytes", "short raw_data");

  /* typed field count mismatch */
  relu_model(&b);
  t = b_init_tensor(&b, "w", AMD_FLOAT, 1, d4);
  static float three[3] = {1, 2, 3};
  t->n_float_data = 3;
  t->float_data = three;
  expect_error(b_load(&b, &st), &st, "3 values", "float_data count");

  /* a tensor claiming 2^60 elements */
  relu_model(&b);
  static int64_t huge[2] = {(int64_t)1 << 30, (int64_t)1 << 30};
  b_init_tensor(&b, "w", AMD_FLOAT, 2, huge);
  expect_error(b_load(&b, &st), &st, "too large", "huge tensor");

  /* external data escaping the model folder */
  relu_model(&b);
  t = b_init_tensor(&b, "w", AMD_FLOAT, 1, d4);
  Onnx__StringStringEntryProto loc, *locs[1] = {&loc};
  onnx__string_string_entry_proto__init(&loc);
  loc.key = (char *)"location";
  loc.value = (char *)"../secret.bin";
  t->has_data_location = 1;
  t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  t->n_external_data = 1;
  t->external_data = locs;
  expect_error(b_load(&b, &st), &st, "must be relative", "external data with ..");

  /* valid external data */
  char path[512];
  snprintf(path, sizeof path, "%s/w.bin", tmpdir);
  FILE *f = fopen(path, "wb");
  float vals[6] = {9, 9, 1.5f, -2, 3, 4}; /* the tensor starts at byte 8 */
  fwrite(vals, sizeof vals, 1, f);
  fclose(f);
  Onnx__StringStringEntryProto off, *locs2[2] = {&loc, &off};
  onnx__string_string_entry_proto__init(&off);
  loc.value = (char *)"w.bin";
  off.key = (char *)"offset";
  off.value = (char *)"8";
  t->n_external_data = 2;
  t->external_data = locs2;
  amd_graph *g = b_load(&b, &st);
  CHECK(g != NULL, "external data: %s", st.msg);
  if (g) {
    int v = amd_graph_find_value(g, "w");
    const float *w = g->values[v].init.data;
    CHECK(w[0] == 1.5f && w[1] == -2 && w[3] == 4, "external data values %g %g %g", w[0], w[1], w[3]);
    amd_graph_free(g);
  }
}

/* Writes n floats to path (folders on the way must exist). */
static void write_floats(const char *path, const float *v, size_t n) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL, "cannot write %s", path);
  if (!f) return;
  fwrite(v, sizeof *v, n, f);
  fclose(f);
}

/* Loads relu_model's graph with a float[4] initializer "w" stored as external
 * data at location, the model in folder dir (from bytes, with dir as the
 * model's folder, or written as dir/model.onnx and loaded from that file). */
static amd_graph *load_external_w(const char *dir, const char *location, int from_file, amd_status *st) {
  builder b;
  relu_model(&b);
  static int64_t d4[1] = {4};
  Onnx__TensorProto *t = b_init_tensor(&b, "w", AMD_FLOAT, 1, d4);
  Onnx__StringStringEntryProto loc, *locs[1] = {&loc};
  onnx__string_string_entry_proto__init(&loc);
  loc.key = (char *)"location";
  loc.value = (char *)location;
  t->has_data_location = 1;
  t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  t->n_external_data = 1;
  t->external_data = locs;
  size_t len;
  uint8_t *buf = b_pack(&b, &len);
  amd_graph *g = NULL;
  if (from_file) {
    char path[512];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    FILE *f = fopen(path, "wb");
    fwrite(buf, 1, len, f);
    fclose(f);
    amd_graph_load(path, 0, &g, st);
  } else {
    amd_graph_load_bytes(buf, len, dir, 0, &g, st);
  }
  free(buf);
  return g;
}

/* Checks that g loaded and that its "w" holds want[0..3]. */
static void expect_w(amd_graph *g, const amd_status *st, const float *want, const char *what) {
  CHECK(g != NULL, "%s: %s", what, st->msg);
  if (!g) return;
  const float *w = g->values[amd_graph_find_value(g, "w")].init.data;
  CHECK(memcmp(w, want, 4 * sizeof *w) == 0, "%s: w = %g %g %g %g, expected %g %g %g %g", what, w[0], w[1],
        w[2], w[3], want[0], want[1], want[2], want[3]);
  printf("  %-32s -> loaded, w = %g %g %g %g\n", what, w[0], w[1], w[2], w[3]);
  amd_graph_free(g);
}

/* External data whose location reads as inside the model's folder but
 * resolves, through a symbolic link (the file itself or a folder on the way),
 * to a file outside it is refused, naming the location and where it lands;
 * links that stay inside the folder load. Under tmpdir:
 *   m/            the model's folder: data.bin, sub/in.bin, and the links
 *   mx/w.bin      a sibling whose name starts with the folder's ("m" in "mx")
 *   secret.bin    outside, holding 4 floats that would load if allowed */
static void test_external_links(void) {
  amd_status st = {{0}};
  char m[300], mx[300], secret[300], path[600], real[4096];
  snprintf(m, sizeof m, "%s/m", tmpdir);
  snprintf(mx, sizeof mx, "%s/mx", tmpdir);
  snprintf(secret, sizeof secret, "%s/secret.bin", tmpdir);
  snprintf(path, sizeof path, "%s/sub", m);
  CHECK(mkdir(m, 0700) == 0 && mkdir(mx, 0700) == 0 && mkdir(path, 0700) == 0, "mkdir under %s", tmpdir);
  static const float secret_v[4] = {6, 6, 6, 6}, data_v[4] = {1.5f, -2, 3, 4}, in_v[4] = {-1, 0.25f, 8, 5},
                     mx_v[4] = {7, 7, 7, 7};
  write_floats(secret, secret_v, 4);
  snprintf(path, sizeof path, "%s/w.bin", mx);
  write_floats(path, mx_v, 4);
  snprintf(path, sizeof path, "%s/data.bin", m);
  write_floats(path, data_v, 4);
  snprintf(path, sizeof path, "%s/sub/in.bin", m);
  write_floats(path, in_v, 4);

  struct {
    const char *name, *target; /* the link m/name -> target ("%s" = tmpdir) */
  } links[] = {
      {"link.bin", "../secret.bin"},   /* the file, relative, leading out */
      {"abs.bin", "%s/secret.bin"},    /* the file, absolute, leading out */
      {"outdir", "%s"},                /* a folder on the way, leading out */
      {"sib.bin", "%s/mx/w.bin"},      /* to the sibling "mx": a prefix of the path is not the folder */
      {"in.bin", "data.bin"},          /* the file, staying inside */
      {"insub", "sub"},                /* a folder on the way, staying inside */
      {"back.bin", "sub/../data.bin"}, /* a link whose target has "..", staying inside */
  };
  for (size_t i = 0; i < sizeof links / sizeof *links; i++) {
    char target[600];
    snprintf(path, sizeof path, "%s/%s", m, links[i].name);
    snprintf(target, sizeof target, links[i].target, tmpdir);
    CHECK(symlink(target, path) == 0, "symlink %s -> %s", path, target);
  }

  /* refused: the message names the location and the real file it reaches */
  const char *bad[][2] = {{"link.bin", "secret.bin"},
                          {"abs.bin", "secret.bin"},
                          {"outdir/secret.bin", "secret.bin"},
                          {"sib.bin", "mx/w.bin"}};
  for (int i = 0; i < 4; i++) {
    snprintf(path, sizeof path, "%s/%s", tmpdir, bad[i][1]);
    CHECK(realpath(path, real) != NULL, "realpath %s", path);
    for (int from_file = 0; from_file < 2; from_file++) {
      amd_graph *g = load_external_w(m, bad[i][0], from_file, &st);
      char what[96], needle[4200];
      snprintf(what, sizeof what, "link out: %s%s", bad[i][0], from_file ? " (file)" : "");
      snprintf(needle, sizeof needle, "'%s' resolves to '%s', outside", bad[i][0], real);
      expect_error(g, &st, needle, what);
    }
  }

  /* accepted: links inside the folder, and the folder reached through a link */
  const char *good[3] = {"in.bin", "insub/in.bin", "back.bin"};
  const float *good_v[3] = {data_v, in_v, data_v};
  for (int i = 0; i < 3; i++)
    for (int from_file = 0; from_file < 2; from_file++) {
      char what[96];
      snprintf(what, sizeof what, "link in: %s%s", good[i], from_file ? " (file)" : "");
      expect_w(load_external_w(m, good[i], from_file, &st), &st, good_v[i], what);
    }
  char mlink[320];
  snprintf(mlink, sizeof mlink, "%s/mlink", tmpdir);
  CHECK(symlink("m", mlink) == 0, "symlink %s -> m", mlink);
  expect_w(load_external_w(mlink, "sub/in.bin", 0, &st), &st, in_v, "folder via link: sub/in.bin");
  /* the same model folder seen through the link still refuses what leads out */
  expect_error(load_external_w(mlink, "link.bin", 0, &st), &st, "outside the model's folder",
               "folder via link: link.bin");
}

/* Every dtype through raw_data and through its typed field. */
static void test_dtypes(void) {
  static const int dtypes[] = {AMD_FLOAT,  AMD_UINT8,  AMD_INT8,   AMD_UINT16, AMD_INT16, AMD_INT32, AMD_INT64,
                               AMD_BOOL,   AMD_FLOAT16, AMD_DOUBLE, AMD_UINT32, AMD_UINT64, AMD_BFLOAT16};
  static const double want[3] = {1, 0, 3};
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
    int dt = dtypes[i];
    for (int use_raw = 0; use_raw < 2; use_raw++) {
      builder b;
      amd_status st = {{0}};
      relu_model(&b);
      static int64_t d[1] = {3};
      Onnx__TensorProto *t = b_init_tensor(&b, "c", dt, 1, d);
      amd_tensor ref = {.dtype = (amd_dtype)dt, .rank = 1, .dims = {3}};
      amd_tensor_alloc(&ref, &st);
      for (int k = 0; k < 3; k++) amd_tensor_set_f64(&ref, k, want[k]);
      float f[3];
      int32_t i32[3];
      int64_t i64[3];
      double d64[3];
      uint64_t u64[3];
      if (use_raw) {
        t->has_raw_data = 1;
        t->raw_data.len = amd_tensor_nbytes(&ref);
        t->raw_data.data = ref.data;
      } else if (dt == AMD_FLOAT) {
        for (int k = 0; k < 3; k++) f[k] = (float)want[k];
        t->n_float_data = 3, t->float_data = f;
      } else if (dt == AMD_INT64) {
        for (int k = 0; k < 3; k++) i64[k] = (int64_t)want[k];
        t->n_int64_data = 3, t->int64_data = i64;
      } else if (dt == AMD_DOUBLE) {
        for (int k = 0; k < 3; k++) d64[k] = want[k];
        t->n_double_data = 3, t->double_data = d64;
      } else if (dt == AMD_UINT32 || dt == AMD_UINT64) {
        for (int k = 0; k < 3; k++) u64[k] = (uint64_t)want[k];
        t->n_uint64_data = 3, t->uint64_data = u64;
      } else {
        /* narrow ints, bool, float16 and bfloat16 (as bit patterns) in int32_data */
        for (int k = 0; k < 3; k++)
          i32[k] = (dt == AMD_FLOAT16 || dt == AMD_BFLOAT16) ? ((uint16_t *)ref.data)[k] : (int32_t)want[k];
        t->n_int32_data = 3, t->int32_data = i32;
      }
      amd_graph *g = b_load(&b, &st);
      CHECK(g != NULL, "dtype %s (%s): %s", amd_dtype_name(dt), use_raw ? "raw" : "typed", st.msg);
      if (g) {
        const amd_tensor *c = &g->values[amd_graph_find_value(g, "c")].init;
        CHECK((int)c->dtype == dt && c->rank == 1 && c->dims[0] == 3, "dtype %s shape", amd_dtype_name(dt));
        for (int k = 0; k < 3; k++)
          CHECK(amd_tensor_get_f64(c, k) == (dt == AMD_BOOL ? want[k] != 0 : want[k]), "dtype %s (%s) element %d = %g",
                amd_dtype_name(dt), use_raw ? "raw" : "typed", k, amd_tensor_get_f64(c, k));
        amd_graph_free(g);
      }
      amd_tensor_free(&ref);
    }
  }
}

/* Files: missing, empty, not a protobuf, truncated; inputs of the wrong rank or shape. */
static void test_files_and_inputs(void) {
  amd_status st = {{0}};
  amd_graph *g = NULL;
  char path[512];
  snprintf(path, sizeof path, "%s/missing.onnx", tmpdir);
  amd_graph_load(path, 0, &g, &st);
  expect_error(g, &st, "cannot open", "missing file");

  snprintf(path, sizeof path, "%s/empty.onnx", tmpdir);
  fclose(fopen(path, "wb"));
  g = NULL;
  amd_graph_load(path, 0, &g, &st);
  expect_error(g, &st, "is empty", "empty file");

  snprintf(path, sizeof path, "%s/text.onnx", tmpdir);
  FILE *f = fopen(path, "wb");
  fputs("this is a text file, not an ONNX model\n", f);
  fclose(f);
  g = NULL;
  amd_graph_load(path, 0, &g, &st);
  expect_error(g, &st, path, "text file");

  /* every truncation of a real model fails cleanly or loads a consistent graph */
  builder b;
  relu_model(&b);
  size_t len;
  uint8_t *buf = b_pack(&b, &len);
  int truncated_errors = 0;
  for (size_t cut = 1; cut < len; cut++) {
    g = NULL;
    if (amd_graph_load_bytes(buf, cut, NULL, 0, &g, &st) != 0) truncated_errors++;
    amd_graph_free(g);
  }
  CHECK(truncated_errors == (int)len - 1, "only %d of %zu truncations were rejected", truncated_errors, len - 1);
  printf("  %-32s -> %d of %zu rejected, e.g. %s\n", "truncated model", truncated_errors, len - 1, st.msg);
  free(buf);

  /* wrong rank and wrong fixed dim at run time; the symbolic batch binds freely */
  relu_model(&b);
  g = b_load(&b, &st);
  CHECK(g != NULL, "relu model: %s", st.msg);
  if (!g) return;
  amd_ctx ctx = {0};
  amd_tensor x = {.dtype = AMD_FLOAT, .rank = 3, .dims = {1, 3, 1}}, y[1];
  amd_tensor_alloc(&x, &st);
  CHECK(amd_exec_forward(g, &ctx, &x, y, &st) != 0 && strstr(st.msg, "rank 3"), "wrong rank: %s", st.msg);
  printf("  %-32s -> %s\n", "input of the wrong rank", st.msg);
  amd_tensor_free(&x);
  x = (amd_tensor){.dtype = AMD_FLOAT, .rank = 2, .dims = {2, 4}};
  amd_tensor_alloc(&x, &st);
  CHECK(amd_exec_forward(g, &ctx, &x, y, &st) != 0 && strstr(st.msg, "expects [batch,3] (dim 1)"), "wrong dim: %s", st.msg);
  printf("  %-32s -> %s\n", "input of the wrong shape", st.msg);
  amd_tensor_free(&x);
  x = (amd_tensor){.dtype = AMD_INT64, .rank = 2, .dims = {2, 3}};
  amd_tensor_alloc(&x, &st);
  CHECK(amd_exec_forward(g, &ctx, &x, y, &st) != 0 && strstr(st.msg, "dtype int64"), "wrong dtype: %s", st.msg);
  printf("  %-32s -> %s\n", "input of the wrong dtype", st.msg);
  amd_tensor_free(&x);
  x = (amd_tensor){.dtype = AMD_FLOAT, .rank = 2, .dims = {5, 3}};
  amd_tensor_alloc(&x, &st);
  float *xv = x.data;
  for (int i = 0; i < 15; i++) xv[i] = (float)(i - 7);
  int rc = amd_exec_forward(g, &ctx, &x, y, &st);
  CHECK(rc == 0, "batch 5: %s", st.msg);
  if (rc == 0) {
    CHECK(y[0].dims[0] == 5 && ((float *)y[0].data)[0] == 0 && ((float *)y[0].data)[14] == 7, "relu values");
    amd_tensor_free(&y[0]);
  }
  amd_tensor_free(&x);
  amd_graph_free(g);

  /* a batch fixed by the exporter: the message says how to run it or re-export it */
  static const int64_t fixed[2] = {4, 3};
  b_init(&b, 13);
  b_node(&b, "Relu", "x", NULL, "y");
  b_value(&b, 1, "x", 2, fixed);
  b_value(&b, 0, "y", 2, fixed);
  g = b_load(&b, &st);
  CHECK(g != NULL, "fixed-batch relu model: %s", st.msg);
  if (!g) return;
  x = (amd_tensor){.dtype = AMD_FLOAT, .rank = 2, .dims = {5, 3}};
  amd_tensor_alloc(&x, &st);
  CHECK(amd_exec_forward(g, &ctx, &x, y, &st) != 0 && strstr(st.msg, "fixed batch of 4") &&
            strstr(st.msg, "--batch 4") && strstr(st.msg, "dynamic_axes"),
        "fixed batch: %s", st.msg);
  printf("  %-32s -> %.90s...\n", "another batch than the export's", st.msg);
  amd_tensor_free(&x);
  amd_graph_free(g);
}

/* TensorProto files round-trip. */
static void test_tensor_files(void) {
  amd_status st = {{0}};
  amd_tensor t = {.dtype = AMD_FLOAT, .rank = 2, .dims = {2, 3}}, u;
  amd_tensor_alloc(&t, &st);
  for (int i = 0; i < 6; i++) ((float *)t.data)[i] = (float)i * 0.5f - 1;
  char path[512], *name = NULL;
  snprintf(path, sizeof path, "%s/t.pb", tmpdir);
  CHECK(amd_tensor_write_file(path, &t, "logits", &st) == 0, "write: %s", st.msg);
  CHECK(amd_tensor_read_file(path, &u, &name, &st) == 0, "read: %s", st.msg);
  CHECK(strcmp(name, "logits") == 0 && amd_same_shape(&t, &u) && memcmp(t.data, u.data, 24) == 0, "round trip");
  free(name);
  amd_tensor_free(&t);
  amd_tensor_free(&u);
}

/* Every descriptor's idx is its position in amd_ops[] (op_list.h's order), and
 * the table holds each name once. */
static void test_op_indices(void) {
  CHECK(amd_op_count == AMD_OP_COUNT, "amd_op_count %d, AMD_OP_COUNT %d", amd_op_count, (int)AMD_OP_COUNT);
  for (int i = 0; i < amd_op_count; i++) {
    CHECK(amd_ops[i]->idx == i, "amd_ops[%d] (%s) has idx %d", i, amd_ops[i]->name, amd_ops[i]->idx);
    CHECK(amd_op_find(amd_ops[i]->name) == amd_ops[i], "amd_op_find(\"%s\") is not amd_ops[%d]",
          amd_ops[i]->name, i);
  }
  CHECK(amd_ops[AMD_OP_IDX_Conv] == amd_op_find("Conv"), "AMD_OP_IDX_Conv");
  CHECK(amd_ops[AMD_OP_IDX_Pad] == amd_op_find("Pad"), "AMD_OP_IDX_Pad");
}

static int in_list(const int *v, int max, int x) {
  for (int i = 0; i < max && v[i]; i++)
    if (v[i] == x) return 1;
  return 0;
}

/* The opset policy (onnx/opset.h): every op has ONNX's versions, implements
 * only real ONNX versions, and binds each opset either to its own version
 * there, to a recorded equivalent, or not at all (and then says why). The
 * loader applies it to whole models: a Relu model at opset 14 binds Relu-14,
 * at opset 29 (newer than known) it is refused. */
static void test_opset_policy(void) {
  amd_status st = {{0}};
  int refused = 0;
  for (int i = 0; i < amd_op_count; i++) {
    const amd_op *op = amd_ops[i];
    const int *known = amd_onnx_versions(op);
    CHECK(known[0] != 0, "%s has no row in onnx_versions.h", op->name);
    for (int k = 0; k < 8 && op->since[k]; k++)
      CHECK(in_list(known, 16, op->since[k]), "%s lists version %d, which ONNX does not define", op->name,
            op->since[k]);
    for (int k = 0; k < 16 && known[k]; k++) {
      const char *why = NULL;
      int as = amd_opset_equivalent(op, known[k], &why);
      if (!as) continue;
      CHECK(!in_list(op->since, 8, known[k]), "%s-%d is implemented and also in the equivalents", op->name,
            known[k]);
      CHECK(in_list(op->since, 8, as) && as < known[k] && why && why[0],
            "%s-%d maps to %d, which is not an older implemented version", op->name, known[k], as);
    }
    for (int opset = 1; opset <= amd_onnx_newest_opset(); opset++) {
      memset(&st, 0, sizeof st);
      int v = amd_opset_bind_version(op, opset, &st);
      if (v > 0) {
        CHECK(in_list(op->since, 8, v) && v <= opset, "%s at opset %d binds to %d", op->name, opset, v);
      } else if (opset >= known[0]) {
        CHECK(strstr(st.msg, op->name) && strstr(st.msg, "implements"), "%s at opset %d: '%s'", op->name, opset,
              st.msg);
        if (!refused++ || opset == known[0]) printf("  refused: %s\n", st.msg);
      }
    }
  }
  printf("  opset policy: %d (op, opset) pairs refused over opsets 1-%d\n", refused, amd_onnx_newest_opset());
  memset(&st, 0, sizeof st);
  CHECK(amd_opset_bind_version(amd_ops[AMD_OP_IDX_Conv], 22, &st) == 11, "Conv at 22: %s", st.msg);
  CHECK(amd_opset_bind_version(amd_ops[AMD_OP_IDX_Relu], 14, &st) == 14, "Relu at 14: %s", st.msg);
  CHECK(amd_opset_bind_version(amd_ops[AMD_OP_IDX_Softmax], 12, &st) == 11, "Softmax at 12: %s", st.msg);
  CHECK(amd_opset_bind_version(amd_ops[AMD_OP_IDX_Relu], amd_onnx_newest_opset() + 1, &st) < 0 &&
            strstr(st.msg, "newer than opset"),
        "a newer opset than known: '%s'", st.msg);
  /* An op implementing only an older version: Conv as if it stopped at version 1. */
  amd_op conv_v1 = *amd_ops[AMD_OP_IDX_Conv];
  memset(conv_v1.since, 0, sizeof conv_v1.since);
  conv_v1.since[0] = 1;
  CHECK(amd_opset_bind_version(&conv_v1, 10, &st) == 1, "Conv-1 only, at opset 10: %s", st.msg);
  CHECK(amd_opset_bind_version(&conv_v1, 11, &st) < 0 && strstr(st.msg, "has version 11 at opset 11") &&
            strstr(st.msg, "implements versions 1)"),
        "Conv-1 only, at opset 11: '%s'", st.msg);
  builder b;
  relu_model(&b);
  b.opset.version = 14;
  amd_graph *g = b_load(&b, &st);
  CHECK(g && g->nodes[0].since == 14, "Relu model at opset 14: %s", g ? "bound elsewhere" : st.msg);
  amd_graph_free(g);
  relu_model(&b);
  b.opset.version = amd_onnx_newest_opset() + 1;
  expect_error(b_load(&b, &st), &st, "newer than opset", "opset newer than known");
}

int main(void) {
  test_op_indices();
  test_opset_policy();
  snprintf(tmpdir, sizeof tmpdir, "/tmp/amd-loader-XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  test_dtypes();
  test_bad_models();
  test_external_links();
  test_files_and_inputs();
  test_tensor_files();
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) printf("warning: could not remove %s\n", tmpdir);
  return check_summary();
}

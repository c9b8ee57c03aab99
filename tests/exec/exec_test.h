/* What the executor's tests share: the check counters, a model loaded with a
 * run bound to it, a random input of the model's shape. */
#ifndef AMD_EXEC_TEST_H
#define AMD_EXEC_TEST_H

#include <stdio.h>
#include <stdlib.h>

#include "../test_check.h"
#include "exec/exec.h"
#include "onnx/load.h"

/* Loads DIR/FILE into *g with a run r on the CPU; on failure counts it and returns -1. */
static int open_model(const char *dir, const char *file, amd_graph **g, amd_run *r) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  amd_status st = {0};
  if (amd_graph_load(path, 0, g, &st)) {
    printf("FAIL cannot load %s: %s\n", path, st.msg);
    failures++;
    return -1;
  }
  if (amd_run_init(r, *g, &st)) {
    printf("FAIL run init: %s\n", st.msg);
    failures++;
    amd_graph_free(*g);
    return -1;
  }
  return 0;
}

/* A float input of the graph's declared shape with batch `batch`, values in
 * [-scale, scale) from seed. */
static amd_tensor make_input(const amd_graph *g, int64_t batch, float scale, unsigned seed) {
  const amd_value *v = &g->values[g->inputs[0]];
  int64_t dims[AMD_MAX_RANK];
  for (int d = 0; d < v->rank; d++) dims[d] = d == 0 ? batch : v->dims[d];
  amd_tensor t = {0};
  amd_tensor_set_shape(&t, AMD_FLOAT, v->rank, dims);
  amd_status st = {0};
  if (amd_tensor_alloc(&t, &st)) {
    printf("out of memory\n");
    exit(1);
  }
  float *x = t.data;
  for (int64_t i = 0; i < amd_tensor_numel(&t); i++) {
    seed = seed * 1664525u + 1013904223u;
    x[i] = scale * ((float)(seed >> 8) / (float)(1u << 23) - 1.0f);
  }
  return t;
}

#endif

/* tensors:X.pb,Y.pb[,XTEST.pb,YTEST.pb] — TensorProto files: X float
 * [N,C,H,W] (kept as float, finite values only), Y int64 or int32 labels [N]
 * (or [N,1]), each >= 0. Without a test pair the test split is the train data
 * (same arrays, ds->test_is_train). No normalisation: mean 0, std 1. */
#include <math.h>
#include <string.h>

#include "../onnx/tensor_proto.h"
#include "dataset.h"
#include "reader_common.h"

/* Labels above this are surely not class indices (and would size the model's
 * output check absurdly). */
#define MAX_CLASSES ((int64_t)1 << 24)

static int load_pair(const char *xp, const char *yp, amd_data_split *s, int64_t *c, int64_t *h, int64_t *w,
                     int64_t *max_label, amd_status *st) {
  amd_tensor x = {0}, y = {0};
  char shp[128];
  if (amd_tensor_read_file(xp, &x, NULL, st)) return -1;
  int rc = 0;
  if (x.dtype != AMD_FLOAT) {
    rc = amd_fail(st, "%s: inputs must be float, not %s", xp, amd_dtype_name(x.dtype));
  } else if (x.rank != 4) {
    rc = amd_fail(st, "%s: inputs must be [N,C,H,W], not %s", xp, amd_shape_str(&x, shp, sizeof shp));
  } else if (x.dims[0] == 0 || x.dims[1] == 0 || x.dims[2] == 0 || x.dims[3] == 0) {
    rc = amd_fail(st, "%s: empty inputs %s", xp, amd_shape_str(&x, shp, sizeof shp));
  } else if (*c && (x.dims[1] != *c || x.dims[2] != *h || x.dims[3] != *w)) {
    rc = amd_fail(st, "%s: samples are %lldx%lldx%lld but the training samples are %lldx%lldx%lld", xp,
                  (long long)x.dims[1], (long long)x.dims[2], (long long)x.dims[3], (long long)*c,
                  (long long)*h, (long long)*w);
  }
  const int64_t n = x.dims[0];
  if (!rc) {
    const float *v = x.data;
    int64_t total = amd_tensor_numel(&x);
    for (int64_t i = 0; i < total; i++)
      if (!isfinite(v[i])) {
        rc = amd_fail(st, "%s: element %lld is not finite (%g)", xp, (long long)i, (double)v[i]);
        break;
      }
  }
  if (!rc) rc = amd_tensor_read_file(yp, &y, NULL, st);
  int64_t *labels = NULL;
  if (!rc) {
    if (y.dtype != AMD_INT64 && y.dtype != AMD_INT32) {
      rc = amd_fail(st, "%s: labels must be int64 or int32, not %s", yp, amd_dtype_name(y.dtype));
    } else if (!(y.rank == 1 || (y.rank == 2 && y.dims[1] == 1)) || y.dims[0] != n) {
      rc = amd_fail(st, "%s: labels must be [%lld] (one per input in %s), not %s", yp, (long long)n, xp,
                    amd_shape_str(&y, shp, sizeof shp));
    } else if (!(labels = malloc((size_t)n * sizeof *labels))) {
      rc = amd_fail(st, "out of memory");
    }
    for (int64_t i = 0; !rc && i < n; i++) {
      labels[i] = amd_tensor_get_i64(&y, i);
      if (labels[i] < 0 || labels[i] >= MAX_CLASSES)
        rc = amd_fail(st, "%s: label %lld is %lld (labels are class indices 0..%lld)", yp, (long long)i,
                      (long long)labels[i], (long long)MAX_CLASSES - 1);
      else if (labels[i] > *max_label)
        *max_label = labels[i];
    }
  }
  amd_tensor_free(&y);
  if (rc) {
    free(labels);
    amd_tensor_free(&x);
    return -1;
  }
  s->n = n;
  s->f32 = x.data; /* amd_tensor data is malloc'd: ownership moves to the split */
  s->labels = labels;
  *c = x.dims[1];
  *h = x.dims[2];
  *w = x.dims[3];
  return 0;
}

int amd_dataset_load_tensors(const char *x_path, const char *y_path, const char *x_test_path,
                             const char *y_test_path, amd_dataset *ds, amd_status *st) {
  memset(ds, 0, sizeof *ds);
  if (!x_path || !y_path || !!x_test_path != !!y_test_path)
    return amd_fail(st, "tensors: needs X.pb,Y.pb (and optionally XTEST.pb,YTEST.pb)");
  int64_t max_label = -1;
  int rc = load_pair(x_path, y_path, &ds->train, &ds->c, &ds->h, &ds->w, &max_label, st);
  if (!rc && x_test_path) {
    rc = load_pair(x_test_path, y_test_path, &ds->test, &ds->c, &ds->h, &ds->w, &max_label, st);
  } else if (!rc) {
    ds->test = ds->train;
    ds->test_is_train = 1;
  }
  if (!rc) {
    ds->n_classes = max_label + 1;
    rc = amd_data_set_stats(ds, 1, st);
  }
  if (rc) {
    amd_dataset_free(ds);
    return -1;
  }
  return 0;
}

int amd_dataset_load_tensor_spec(const char *arg, amd_dataset *ds, amd_status *st) {
  memset(ds, 0, sizeof *ds);
  char buf[AMD_DATA_PATH_MAX];
  if (snprintf(buf, sizeof buf, "%s", arg) >= (int)sizeof buf) return amd_fail(st, "data spec too long");
  char *parts[5] = {0};
  int np = 0;
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (np == 4) {
      np = 5;
      break;
    }
    parts[np++] = tok;
  }
  if (np != 2 && np != 4)
    return amd_fail(st,
                    "bad data spec 'tensors:%s' (expected tensors:X.pb,Y.pb or "
                    "tensors:X.pb,Y.pb,XTEST.pb,YTEST.pb)",
                    arg);
  return amd_dataset_load_tensors(parts[0], parts[1], parts[2], parts[3], ds, st);
}

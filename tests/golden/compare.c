/* Golden comparison: reads two TensorProto files (expected, from PyTorch via
 * tools/export_models.py; actual, from `amdnn-onnx run`) and checks that
 *
 *     max |actual - expected|  <=  rel_tol * max |expected|
 *
 * (rel_tol 1e-4 unless given). Prints the shapes, the largest difference, where
 * it is, and the tolerance. Exit status: 0 within tolerance, 1 over it, on a
 * shape or dtype-class mismatch, on a NaN that is not expected, or on an
 * unreadable file; 2 on bad usage.
 *
 * usage: compare EXPECTED.pb ACTUAL.pb [REL_TOL] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/tensor.h"
#include "onnx/tensor_proto.h"

static int is_numeric(amd_dtype t) { return amd_dtype_size(t) != 0 && t != AMD_STRING; }

int main(int argc, char **argv) {
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: %s EXPECTED.pb ACTUAL.pb [REL_TOL]\n", argv[0]);
    return 2;
  }
  double rel_tol = 1e-4;
  if (argc == 4) {
    char *end = NULL;
    rel_tol = strtod(argv[3], &end);
    if (end == argv[3] || *end != '\0' || !(rel_tol >= 0)) {
      fprintf(stderr, "compare: bad tolerance '%s'\n", argv[3]);
      return 2;
    }
  }

  amd_status st = {{0}};
  amd_tensor exp = {0}, act = {0};
  char *exp_name = NULL, *act_name = NULL;
  int rc = 1;
  if (amd_tensor_read_file(argv[1], &exp, &exp_name, &st) != 0) {
    fprintf(stderr, "compare: %s: %s\n", argv[1], st.msg);
    goto done;
  }
  if (amd_tensor_read_file(argv[2], &act, &act_name, &st) != 0) {
    fprintf(stderr, "compare: %s: %s\n", argv[2], st.msg);
    goto done;
  }

  char es[128], as[128];
  amd_shape_str(&exp, es, sizeof es);
  amd_shape_str(&act, as, sizeof as);
  printf("expected %s '%s' %s %s\n", argv[1], exp_name ? exp_name : "", amd_dtype_name(exp.dtype), es);
  printf("actual   %s '%s' %s %s\n", argv[2], act_name ? act_name : "", amd_dtype_name(act.dtype), as);
  if (!is_numeric(exp.dtype) || !is_numeric(act.dtype)) {
    printf("FAIL: non-numeric dtype\n");
    goto done;
  }
  if (!amd_same_shape(&exp, &act)) {
    printf("FAIL: shape mismatch: expected %s, got %s\n", es, as);
    goto done;
  }

  int64_t n = amd_tensor_numel(&exp);
  double max_abs = 0.0, max_diff = 0.0;
  int64_t worst = -1, nan_bad = 0, first_nan = -1;
  for (int64_t i = 0; i < n; i++) {
    double e = amd_tensor_get_f64(&exp, i);
    if (!isnan(e) && fabs(e) > max_abs) max_abs = fabs(e);
  }
  for (int64_t i = 0; i < n; i++) {
    double e = amd_tensor_get_f64(&exp, i), a = amd_tensor_get_f64(&act, i);
    if (isnan(e) || isnan(a)) {
      if (isnan(e) != isnan(a)) {
        if (first_nan < 0) first_nan = i;
        nan_bad++;
      }
      continue;
    }
    double d = fabs(a - e);
    if (isinf(e) && e == a) d = 0.0; /* matching infinities */
    if (d > max_diff || worst < 0) {
      max_diff = d;
      worst = i;
    }
  }
  double tol = rel_tol * max_abs;
  printf("max diff %g (tolerance %g = %g * max|expected| %g) over %lld elements\n", max_diff, tol, rel_tol,
         max_abs, (long long)n);
  if (worst >= 0)
    printf("worst at flat index %lld: expected %.9g, got %.9g\n", (long long)worst,
           amd_tensor_get_f64(&exp, worst), amd_tensor_get_f64(&act, worst));
  if (nan_bad) {
    printf("FAIL: %lld NaN mismatches (first at flat index %lld: expected %g, got %g)\n", (long long)nan_bad,
           (long long)first_nan, amd_tensor_get_f64(&exp, first_nan), amd_tensor_get_f64(&act, first_nan));
    goto done;
  }
  if (!(max_diff <= tol)) {
    printf("FAIL: max diff over tolerance\n");
    goto done;
  }
  printf("OK\n");
  rc = 0;

done:
  free(exp_name);
  free(act_name);
  amd_tensor_free(&exp);
  amd_tensor_free(&act);
  return rc;
}

/* Evaluates one model under two multiplier modes through the installed
 * library: the accuracy each mode gives and the difference.
 *
 *   cc eval_two_modes.c $(pkg-config --cflags --libs amdnn) -o eval_two_modes
 *   ./eval_two_modes MODEL.onnx DATA MODE_A MODE_B [LIMIT]
 *   ./eval_two_modes lenet5.onnx mnist:/usr/share/datasets/fashion-mnist acc32 am16 1000
 */
#include <stdio.h>
#include <stdlib.h>

#include <amdnn.h>

/* Prints the status's message and returns 1 when the call failed. */
static int failed(amdnn_status *st) {
  if (!st) return 0;
  fprintf(stderr, "eval_two_modes: %s\n", amdnn_status_message(st));
  amdnn_status_free(st);
  return 1;
}

/* Top-1 of the model under one mode, or -1. */
static double top1_under(const char *model, const char *mode, const amdnn_options *eval) {
  amdnn_options *opts = NULL;
  amdnn_session *s = NULL;
  amdnn_eval_result *r = NULL;
  double top1 = -1;
  if (!failed(amdnn_options_create(&opts)) && !failed(amdnn_options_set(opts, "mode", mode)) &&
      !failed(amdnn_options_set(opts, "device", "cpu")) && !failed(amdnn_session_open(model, opts, &s)) &&
      !failed(amdnn_session_evaluate(s, eval, NULL, &r)))
    top1 = (double)r->top1 / (double)r->n;
  amdnn_eval_result_free(r);
  amdnn_session_close(s);
  amdnn_options_free(opts);
  return top1;
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: eval_two_modes MODEL.onnx DATA MODE_A MODE_B [LIMIT]\n");
    return 2;
  }
  printf("amdnn %s (header %s)\n", amdnn_version(), AMDNN_VERSION);
  amdnn_options *eval = NULL;
  if (failed(amdnn_options_create(&eval)) || failed(amdnn_options_set(eval, "data", argv[2])) ||
      (argc > 5 && failed(amdnn_options_set(eval, "limit", argv[5])))) {
    amdnn_options_free(eval);
    return 2;
  }
  const double a = top1_under(argv[1], argv[3], eval), b = top1_under(argv[1], argv[4], eval);
  amdnn_options_free(eval);
  if (a < 0 || b < 0) return 1;
  printf("%-8s top-1 %.2f%%\n%-8s top-1 %.2f%%\ndifference %+.2f points\n", argv[3], 100 * a, argv[4], 100 * b,
         100 * (b - a));
  return 0;
}

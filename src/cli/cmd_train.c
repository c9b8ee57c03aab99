/* `amdnn-onnx train` (amdnn_session_train) and `amdnn-onnx bench`
 * (amdnn_session_bench): what the run reports is printed by the callbacks
 * (report.c). */
#include "cli.h"

int cli_train(const cli_command *cmd, cli_args *a) {
  (void)cmd;
  amdnn_session *s;
  int rc = cli_open(a, &s);
  if (rc) return rc;
  cli_reporter r;
  const amdnn_callbacks cb = cli_callbacks(&r, a);
  rc = cli_fail(a, amdnn_session_train(s, a->call, &cb));
  amdnn_session_close(s);
  return rc;
}

int cli_bench(const cli_command *cmd, cli_args *a) {
  (void)cmd;
  amdnn_session *s;
  int rc = cli_open(a, &s);
  if (rc) return rc;
  cli_reporter r;
  const amdnn_callbacks cb = cli_callbacks(&r, a);
  amdnn_bench_result res;
  rc = cli_fail(a, amdnn_session_bench(s, a->call, &cb, &res));
  amdnn_session_close(s);
  return rc;
}

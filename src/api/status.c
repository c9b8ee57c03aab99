/* amdnn_status: a code and a one-line message (include/amdnn.h). A status
 * that cannot be allocated is replaced by a static one that says so, so
 * that a failure is never reported as success. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

static amdnn_status no_memory = {AMDNN_ERR_NO_MEMORY, "out of memory (for the error message of a failed call)"};

amdnn_status *api_error(amdnn_code code, const char *fmt, ...) {
  amdnn_status *s = malloc(sizeof *s);
  if (!s) return &no_memory;
  s->code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->msg, sizeof s->msg, fmt, ap);
  va_end(ap);
  return s;
}

amdnn_status *api_from(const amd_status *st, amdnn_code code) {
  const char *m = st && st->msg[0] ? st->msg : "failed (no message)";
  if (strstr(m, "out of memory")) code = AMDNN_ERR_NO_MEMORY;
  return api_error(code, "%s", m);
}

amdnn_code amdnn_status_code(const amdnn_status *st) { return st ? st->code : AMDNN_OK; }

const char *amdnn_status_message(const amdnn_status *st) { return st ? st->msg : ""; }

void amdnn_status_free(amdnn_status *st) {
  if (st && st != &no_memory) free(st);
}

const char *amdnn_version(void) { return AMDNN_VERSION; }

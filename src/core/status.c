/* Error reporting: see status.h. */
#include "status.h"

#include <stdarg.h>
#include <string.h>

int amd_fail(amd_status *st, const char *fmt, ...) {
  if (!st) return -1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(st->msg, sizeof st->msg, fmt, ap);
  va_end(ap);
  return -1;
}

int amd_fail_prefix(amd_status *st, const char *fmt, ...) {
  if (!st) return -1;
  char prefix[256], old[sizeof st->msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  memcpy(old, st->msg, sizeof old);
  /* the message is cut at the buffer's end if context and message are too long */
  int n = snprintf(st->msg, sizeof st->msg, "%s: ", prefix);
  if (n > 0 && (size_t)n < sizeof st->msg) snprintf(st->msg + n, sizeof st->msg - (size_t)n, "%s", old);
  return -1;
}

/* Checks of calls of the public API (include/amdnn.h), for the tests that
 * use it (tests/api, tests/gpu): on top of tests/test_check.h. */
#ifndef AMDNN_TESTS_API_CHECK_H
#define AMDNN_TESTS_API_CHECK_H

#include <string.h>

#include "../test_check.h"
#include "amdnn.h"

/* The call succeeded (a failure prints its message). */
static inline int ok(amdnn_status *st, const char *what) {
  checks++;
  if (!st) return 1;
  failures++;
  printf("FAIL %s: %s\n", what, amdnn_status_message(st));
  amdnn_status_free(st);
  return 0;
}

/* The call failed with this code and a message containing want. */
static inline void fails_with(amdnn_status *st, amdnn_code code, const char *want, const char *what) {
  CHECK(st && amdnn_status_code(st) == code && strstr(amdnn_status_message(st), want), "%s: code %d, '%s'", what,
        (int)amdnn_status_code(st), amdnn_status_message(st));
  amdnn_status_free(st);
}

#endif

/* The check of the C unit tests: CHECK(cond, fmt, ...) counts a check and,
 * when cond is false, a failure, printing the file, line and message. A test
 * reports checks and failures at its end and exits non-zero on a failure. */
#ifndef AMD_TEST_CHECK_H
#define AMD_TEST_CHECK_H

#include <stdio.h>

static int failures = 0, checks = 0;

#define CHECK(cond, ...)                          \
  do {                                            \
    checks++;                                     \
    if (!(cond)) {                                \
      failures++;                                 \
      printf("FAIL %s:%d: ", __FILE__, __LINE__); \
      printf(__VA_ARGS__);                        \
      printf("\n");                               \
    }                                             \
  } while (0)

#endif

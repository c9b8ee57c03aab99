/* The check of the C unit tests: CHECK(cond, fmt, ...) counts a check and,
 * when cond is false, a failure, printing the file, line, condition and
 * message. A test reports checks and failures at its end (check_summary)
 * and exits non-zero on a failure. */
#ifndef AMD_TEST_CHECK_H
#define AMD_TEST_CHECK_H

#include <stdio.h>

static int failures = 0, checks = 0;

#define CHECK(cond, ...)                                                                                     \
  do {                                                                                                       \
    checks++;                                                                                                \
    if (!(cond)) {                                                                                           \
      failures++;                                                                                            \
      printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                                                 \
      printf(__VA_ARGS__);                                                                                   \
      printf("\n");                                                                                          \
    }                                                                                                        \
  } while (0)

/* Prints "N checks, M failed"; the exit status: 1 after a failure, else 0. */
static inline int check_summary(void) {
  printf("%d checks, %d failed\n", checks, failures);
  return failures ? 1 : 0;
}

#endif

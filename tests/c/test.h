/* A minimal test harness: CHECK records a failure and goes on; main returns
 * the failure count. Tests are plain functions listed in main. */
#ifndef LADLE_TEST_H
#define LADLE_TEST_H

#include <stdio.h>
#include <stdlib.h>

static int test_failures;
static int test_checks;

#define CHECK(cond)                                                         \
  do {                                                                      \
    test_checks++;                                                          \
    if (!(cond)) {                                                          \
      test_failures++;                                                      \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                       \
  } while (0)

/* A ladle call that must succeed; prints ladle_last_error() when it does not. */
#define CHECK_OK(call)                                                          \
  do {                                                                          \
    test_checks++;                                                              \
    ladle_status st_ = (call);                                                  \
    if (st_ != LADLE_OK) {                                                      \
      test_failures++;                                                          \
      fprintf(stderr, "%s:%d: %s returned %s: %s\n", __FILE__, __LINE__, #call, \
              ladle_status_name(st_), ladle_last_error());                      \
    }                                                                           \
  } while (0)

#define RUN(test)                                             \
  do {                                                        \
    int before_ = test_failures;                              \
    test();                                                   \
    fprintf(stderr, "%s %s\n", test_failures == before_ ? "ok  " : "FAIL", #test); \
  } while (0)

#define TEST_MAIN_END()                                                        \
  do {                                                                         \
    fprintf(stderr, "%d checks, %d failed\n", test_checks, test_failures);     \
    return test_failures != 0;                                                 \
  } while (0)

#endif

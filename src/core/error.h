/* Error reporting inside libladle: the thread-local message behind
 * ladle_last_error() and the LADLE_CHECK family that fills it. */
#ifndef LADLE_CORE_ERROR_H
#define LADLE_CORE_ERROR_H

#include "ladle/ladle.h"

#define LADLE_ERROR_MAX 1024

#if defined(__GNUC__)
#define LADLE__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define LADLE__PRINTF(a, b)
#endif

/* Sets the calling thread's message to "func: <formatted>" and returns status. */
ladle_status ladle__set_error(ladle_status status, const char *func, const char *fmt, ...)
    LADLE__PRINTF(3, 4);

/* Prefixes the current message with "<formatted>: " (adds context such as the
 * sample's file name while an error travels up) and returns status. */
ladle_status ladle__wrap_error(ladle_status status, const char *fmt, ...) LADLE__PRINTF(2, 3);

/* Replaces the calling thread's message with `message` verbatim (used to carry
 * a worker thread's message to the caller's thread). */
void ladle__restore_error(const char *message);

/* Clears the calling thread's message. */
void ladle__clear_error(void);

/* Fail with a message naming the current function. */
#define LADLE_FAIL(status, ...) ladle__set_error((status), __func__, __VA_ARGS__)

/* In a function with a `ladle_status st` and a `done:` label: on a false
 * condition set the message and jump to the single exit. */
#define LADLE_CHECK(cond, status, ...)                  \
  do {                                                  \
    if (!(cond)) {                                      \
      st = ladle__set_error((status), __func__, __VA_ARGS__); \
      goto done;                                        \
    }                                                   \
  } while (0)

/* Propagate a failed ladle call: keep its message, jump to done. */
#define LADLE_TRY(call)               \
  do {                                \
    st = (call);                      \
    if (st != LADLE_OK) goto done;    \
  } while (0)

/* Allocation that fails with LADLE_ERROR_OUT_OF_MEMORY and jumps to done. */
#define LADLE_ALLOC(ptr, count)                                                  \
  do {                                                                           \
    size_t count_ = (size_t)(count);                                             \
    (ptr) = calloc(count_ > 0 ? count_ : 1, sizeof *(ptr));                      \
    LADLE_CHECK((ptr) != NULL, LADLE_ERROR_OUT_OF_MEMORY, "cannot allocate %zu bytes", \
                (size_t)(count) * sizeof *(ptr));                                \
  } while (0)

#endif

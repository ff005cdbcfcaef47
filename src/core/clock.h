/* A monotonic clock in nanoseconds, for the executor's statistics and the
 * decoders' waits. */
#ifndef LADLE_CORE_CLOCK_H
#define LADLE_CORE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t ladle__now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

#endif

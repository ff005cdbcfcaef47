/* The random inputs of the C tests: one Philox stream per test binary (`rng`,
 * which each test seeds with ladle__rng_init, so that a failure replays) and
 * the draws the tests share. */
#ifndef LADLE_TEST_RANDOM_H
#define LADLE_TEST_RANDOM_H

#include <stdint.h>

#include "core/rng.h"

static ladle__rng rng;

static inline uint32_t rnd(void) { return ladle__rng_u32(&rng); }
/* Uniform in [lo, hi], both included. */
static inline int rnd_int(int lo, int hi) { return lo + (int)ladle__rng_below(&rng, (uint64_t)(hi - lo + 1)); }
static inline double rnd_unit(void) { return ladle__rng_uniform(&rng); }
static inline double rnd_range(double lo, double hi) { return lo + (hi - lo) * ladle__rng_uniform(&rng); }
static inline float rnd_float(float lo, float hi) { return (float)(lo + (hi - lo) * ladle__rng_uniform(&rng)); }

#endif

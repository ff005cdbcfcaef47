/* Growable arrays: the one helper the graph, the executor and the GPU state
 * use for their lists. */
#ifndef LADLE_CORE_ARRAY_H
#define LADLE_CORE_ARRAY_H

#include <stdlib.h>

#include "core/error.h"

/* Makes *array (of elem-byte elements, capacity *cap) hold at least `need`,
 * doubling; fails with LADLE_ERROR_OUT_OF_MEMORY. */
static inline ladle_status ladle__grow_array(void **array, int *cap, int need, size_t elem) {
  if (need <= *cap) return LADLE_OK;
  int cap2 = *cap ? *cap * 2 : 16;
  while (cap2 < need) cap2 *= 2;
  void *a = realloc(*array, (size_t)cap2 * elem);
  if (!a) return LADLE_FAIL(LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  *array = a;
  *cap = cap2;
  return LADLE_OK;
}

#endif

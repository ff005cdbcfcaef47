/* What the segmentation family's operators share: reading a mask's element
 * of any type as a number. */
#ifndef LADLE_OPS_SEGMENTATION_COMMON_H
#define LADLE_OPS_SEGMENTATION_COMMON_H

#include <stdint.h>
#include <string.h>

#include "ops/kernels/half.h"
#include "ladle/ladle.h"

/* Element i of data (of dtype) as a double; integers of 64 bits beyond
 * 2^53 lose precision (masks hold labels far below). */
static inline double ladle__seg_elem(const void *data, ladle_dtype dtype, int64_t i) {
  switch (dtype) {
    case LADLE_UINT8: case LADLE_BOOL: return ((const uint8_t *)data)[i];
    case LADLE_INT8: return ((const int8_t *)data)[i];
    case LADLE_INT16: return ((const int16_t *)data)[i];
    case LADLE_UINT16: return ((const uint16_t *)data)[i];
    case LADLE_INT32: return ((const int32_t *)data)[i];
    case LADLE_UINT32: return ((const uint32_t *)data)[i];
    case LADLE_INT64: return (double)((const int64_t *)data)[i];
    case LADLE_UINT64: return (double)((const uint64_t *)data)[i];
    case LADLE_FLOAT16: return ladle__f16_to_f32(((const uint16_t *)data)[i]);
    case LADLE_FLOAT32: return ((const float *)data)[i];
    case LADLE_FLOAT64: return ((const double *)data)[i];
    default: return 0;
  }
}

/* Element i of an integer mask as an int64 label (uint64 above INT64_MAX wraps). */
static inline int64_t ladle__seg_label(const void *data, ladle_dtype dtype, int64_t i) {
  switch (dtype) {
    case LADLE_UINT8: case LADLE_BOOL: return ((const uint8_t *)data)[i];
    case LADLE_INT8: return ((const int8_t *)data)[i];
    case LADLE_INT16: return ((const int16_t *)data)[i];
    case LADLE_UINT16: return ((const uint16_t *)data)[i];
    case LADLE_INT32: return ((const int32_t *)data)[i];
    case LADLE_UINT32: return ((const uint32_t *)data)[i];
    case LADLE_INT64: return ((const int64_t *)data)[i];
    case LADLE_UINT64: return (int64_t)((const uint64_t *)data)[i];
    default: return 0;
  }
}

static inline int ladle__seg_is_integer(ladle_dtype d) {
  return d != LADLE_FLOAT16 && d != LADLE_FLOAT32 && d != LADLE_FLOAT64;
}

#endif

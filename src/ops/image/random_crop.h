/* The random crop window of random_resized_crop and image_random_crop
 * (the "Inception" crop): an area fraction and a log-uniform aspect ratio,
 * retried num_attempts times, then a centred crop as the fallback. */
#ifndef LADLE_OPS_RANDOM_CROP_H
#define LADLE_OPS_RANDOM_CROP_H

#include <math.h>

#include "core/rng.h"

typedef struct ladle__window {
  int x, y, w, h;
} ladle__window;

typedef struct ladle__random_crop_params {
  double area_lo, area_hi;     /* fraction of the image area */
  double aspect_lo, aspect_hi; /* width / height */
  int attempts;
} ladle__random_crop_params;

static inline ladle__window ladle__random_crop_window(ladle__rng *rng, int width, int height,
                                                      const ladle__random_crop_params *p) {
  double area = (double)width * height;
  double log_lo = log(p->aspect_lo), log_hi = log(p->aspect_hi);
  for (int i = 0; i < p->attempts; i++) {
    /* DALI's arithmetic: float area and ratio, sides rounded halves away. */
    float target = (float)ladle__rng_range(rng, p->area_lo, p->area_hi) * (float)area;
    float aspect = (float)exp(ladle__rng_range(rng, log_lo, log_hi));
    int w = (int)roundf(sqrtf(target * aspect)), h = (int)roundf(sqrtf(target / aspect));
    if (w >= 1 && h >= 1 && w <= width && h <= height) {
      int x = (int)ladle__rng_below(rng, (uint64_t)(width - w + 1));
      int y = (int)ladle__rng_below(rng, (uint64_t)(height - h + 1));
      return (ladle__window){x, y, w, h};
    }
  }
  /* Fallback: the whole image, trimmed to the nearest allowed aspect ratio,
   * truncated as DALI 2.4 truncates it (measured: 224 x 0.4 -> 89). DALI
   * places this window at random; ladle centres it (torchvision's rule). */
  int w = width, h = height;
  float aspect = (float)width / (float)height;
  if (aspect < (float)p->aspect_lo) h = (int)((float)width / (float)p->aspect_lo);
  else if (aspect > (float)p->aspect_hi) w = (int)((float)height * (float)p->aspect_hi);
  if (w < 1) w = 1;
  if (h < 1) h = 1;
  if (w > width) w = width;
  if (h > height) h = height;
  return (ladle__window){(width - w) / 2, (height - h) / 2, w, h};
}

#endif

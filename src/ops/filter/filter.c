/* Helpers the filter operators share (filter.h). */
#include <math.h>
#include <string.h>

#include "ops/filter/filter.h"

int ladle__layout_axis(const char *layout, char name) {
  const char *c = strchr(layout, name);
  return name && c ? (int)(c - layout) : -1;
}

int ladle__data_axes(const ladle__out_desc *in, int *axis) {
  int channel = ladle__layout_axis(in->layout, 'C');
  if (!in->layout[0] && in->ndim == 3) channel = 2;
  int count = 0;
  for (int d = 0; d < in->ndim; d++)
    if (d != channel) {
      if (axis) axis[count] = d;
      count++;
    }
  return count;
}

int ladle__reflect101(int64_t i, int64_t len) {
  if (len <= 1) return 0;
  int64_t period = 2 * len - 2;
  i %= period;
  if (i < 0) i += period;
  return (int)(i >= len ? period - i : i);
}

int ladle__gauss_weights(float *w, int window, float sigma) {
  int r = window / 2;
  float sum = 0, e = 1.0f / (2 * sigma * sigma);
  for (int k = -r; k <= r; k++) sum += w[k + r] = expf(-(float)(k * k) * e);
  for (int k = 0; k < window; k++) w[k] /= sum;
  return r;
}

/* Helpers the filter operators share (filter.h). */
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

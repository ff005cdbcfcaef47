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

ladle_status ladle__reduced_axes(ladle__node *n, int axes_arg, int names_arg, int *reduced) {
  const ladle__out_desc *in = &n->in[0];
  int by_axes = ladle__arg_given(n, axes_arg), by_names = ladle__arg_given(n, names_arg);
  if (by_axes && by_names)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "give 'axes' or 'axis_names', not both");
  for (int d = 0; d < in->ndim; d++) reduced[d] = !by_axes && !by_names;
  if (by_axes) {
    const ladle_value *v = ladle__arg_value(n, axes_arg);
    for (int k = 0; k < v->count; k++) {
      int64_t a = v->u.ints[k] < 0 ? v->u.ints[k] + in->ndim : v->u.ints[k];
      if (a < 0 || a >= in->ndim)
        return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'axes': axis %lld is out of range for %d-D input",
                             (long long)v->u.ints[k], in->ndim);
      reduced[a] = 1;
    }
  }
  if (by_names) {
    const char *names = ladle__arg_string(n, names_arg);
    for (const char *c = names; *c; c++) {
      int a = ladle__layout_axis(in->layout, *c);
      if (a < 0)
        return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'axis_names': '%c' is not in the layout \"%s\"",
                             *c, in->layout);
      reduced[a] = 1;
    }
  }
  return LADLE_OK;
}

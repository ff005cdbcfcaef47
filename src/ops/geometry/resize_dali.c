/* Filter tables planned the way DALI 2.4's CPU resampling computes them
 * (tabulated filter shapes, single-precision coordinates, the edge pixel
 * repeated at the borders, ties rounded up), in ladle's table format, so the
 * same CPU and CUDA kernels apply them. */
/* Every coordinate is computed in float, operation by operation, as DALI
 * does: never contract a multiply and an add. */
#include "core/no_fma.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "ops/geometry/resize_kernel.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
#ifndef M_SQRT2
#define M_SQRT2 1.41421356237309504880
#endif

/* ------------------------------------------------------------------------ */
/* Tabulated filters: a shape sampled at num points, read with linear        */
/* interpolation; `scale` table steps per input pixel, `anchor` its centre.  */
/* ------------------------------------------------------------------------ */

enum { TRI_N = 3, GAUSS_N = 65, LANCZOS_N = 2 * 3 * 32 + 1, CUBIC_N = 129 };

/* One element more than the shape, a 0 (never written): the tap past the
 * last point reads it (see tab_at). */
static float tri_table[TRI_N + 1], gauss_table[GAUSS_N + 1], lanczos_table[LANCZOS_N + 1], cubic_table[CUBIC_N + 1];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static float sinc_f(float x) { return x != 0.0f ? (float)(sin(x * M_PI) / (x * M_PI)) : 1.0f; }

static float cubic_window(float x) {
  x = fabsf(x);
  if (x >= 2.0f) return 0.0f;
  float x2 = x * x, x3 = x2 * x;
  if (x > 1.0f) return -0.5f * x3 + 2.5f * x2 - 4.0f * x + 2.0f;
  return 1.5f * x3 - 2.5f * x2 + 1.0f;
}

static void init_tables(void) {
  tri_table[0] = 0.0f, tri_table[1] = 1.0f, tri_table[2] = 0.0f;
  for (int i = 0; i < GAUSS_N; i++) {
    float x = 4 * (i - (GAUSS_N - 1) * 0.5f) / (GAUSS_N - 1);
    gauss_table[i] = expf(-x * x);
  }
  for (int i = 0; i < LANCZOS_N; i++) {
    float x = 2 * 3 * (i - (LANCZOS_N - 1) * 0.5f) / (LANCZOS_N - 1);
    lanczos_table[i] = fabsf(x) >= 3.0f ? 0.0f : sinc_f(x) * sinc_f(x / 3.0f);
  }
  for (int i = 0; i < CUBIC_N; i++) {
    float x = 4 * (i - (CUBIC_N - 1) * 0.5f) / (CUBIC_N - 1);
    cubic_table[i] = cubic_window(x);
  }
}

typedef struct tab_filter {
  const float *coeffs; /* NULL: nearest neighbour */
  int num;
  float anchor, scale;
} tab_filter;

/* A table stretched to cover `width` input pixels, by DALI's chain of
 * rescales (each in float, in DALI's order of operations, since the anchor's
 * last bit decides where a tap falls): a table starts spanning 2 pixels
 * (anchor 1); Lanczos3 and cubic are first rescaled to 6 and 4 pixels. */
static void rescale(tab_filter *f, float width) {
  float old = f->scale;
  f->scale = (f->num - 1) / width;
  f->anchor = f->anchor * old / f->scale;
}

static tab_filter stretched(const float *coeffs, int num, float width) {
  tab_filter f = {coeffs, num, 1.0f, (num - 1) * 0.5f};
  if (coeffs == lanczos_table) rescale(&f, 6.0f);
  if (coeffs == cubic_table) rescale(&f, 4.0f);
  rescale(&f, width);
  return f;
}

static int support_of(const tab_filter *f) { return f->coeffs ? (int)ceilf((f->num - 1) / f->scale) : 1; }

/* The shape at x (table steps), linearly interpolated; 0 outside (-1, num). */
static inline float tab_at(const tab_filter *f, float x) {
  if (!(x > -1) || !(x < f->num)) return 0.0f;
  if (x >= 0.0f) { /* floor is the truncation; coeffs[num] is the 0 past the end */
    int x0 = (int)x;
    float d = x - x0, f0 = f->coeffs[x0];
    return f0 + d * (f->coeffs[x0 + 1] - f0);
  }
  float d = x + 1.0f; /* x0 = -1: the point before the table is 0 (x - x0 is x + 1, one rounding as before) */
  return 0.0f + d * (f->coeffs[0] - 0.0f);
}

/* DALI's filter for `interp` resampling in_extent input pixels onto out_size. */
static tab_filter filter_for(ladle__interp interp, int antialias, float in_extent, int out_size) {
  int down = antialias && in_extent > out_size;
  float ratio = in_extent / out_size;
  switch (interp) {
    case LADLE__INTERP_LINEAR:
    case LADLE__INTERP_TRIANGULAR: {
      /* antialiased LINEAR downscaling is the triangular filter */
      if (interp == LADLE__INTERP_LINEAR && !down) return stretched(tri_table, TRI_N, 2.0f);
      float radius = down ? ratio : 1.0f; /* DALI 2.4: TRIANGULAR widens only when antialiased */
      return stretched(tri_table, TRI_N, fmaxf(1.0f, 2 * radius));
    }
    case LADLE__INTERP_GAUSSIAN: {
      float radius = in_extent > out_size && antialias ? ratio : 1.0f;
      float sigma = (float)(radius * 0.5f / M_SQRT2);
      return stretched(gauss_table, GAUSS_N, fmaxf(1.0f, (float)(4 * M_SQRT2) * sigma));
    }
    case LADLE__INTERP_CUBIC: {
      float radius = down ? 2 * ratio : 2.0f;
      return stretched(cubic_table, CUBIC_N, 2.0f * fmaxf(2.0f, radius));
    }
    case LADLE__INTERP_LANCZOS3: {
      float radius = down ? 3 * ratio : 3.0f;
      return stretched(lanczos_table, LANCZOS_N, 2.0f * fmaxf(3.0f, radius));
    }
    default: return (tab_filter){NULL, 0, 0, 0};
  }
}

/* ------------------------------------------------------------------------ */
/* One axis                                                                  */
/* ------------------------------------------------------------------------ */

static int reserve(void **p, size_t *cap, size_t bytes) {
  if (*cap >= bytes) return 1;
  free(*p);
  *p = malloc(bytes ? bytes : 1);
  *cap = *p ? bytes : 0;
  return *p != NULL;
}

#define RESERVE(ptr, cap, bytes)                                                     \
  LADLE_CHECK(reserve((void **)&(ptr), &(cap), (bytes)), LADLE_ERROR_OUT_OF_MEMORY, \
              "cannot allocate %zu bytes of filter tables", (size_t)(bytes))

/*
 * DALI's coefficients for one axis: origin and scale in input pixels
 * (relative to `base`, the first input pixel of the pass's input), indices
 * clamped to [clo, chi] (absolute) and the taps of a repeated edge pixel
 * summed into one. nn_step: nearest neighbour coordinates accumulated
 * (origin + scale/2, then + scale per pixel: DALI's vertical NN) rather than
 * origin + (i + 1/2) * scale.
 */
static ladle_status plan_axis(ladle__resize_axis *axis, int in_size, int base, float origin, float scale,
                              int out_size, const tab_filter *f, int clo, int chi, int nn_step) {
  ladle_status st = LADLE_OK;
  axis->out_size = out_size;
  axis->in_size = in_size;
  axis->round_up = LADLE__ROUND_UP;
  if (!f->coeffs) {
    axis->taps = 1;
    RESERVE(axis->start, axis->cap_start, sizeof *axis->start * (size_t)out_size);
    RESERVE(axis->weights, axis->cap_weights, sizeof *axis->weights * (size_t)out_size);
    float s = origin + 0.5f * scale;
    for (int i = 0; i < out_size; i++, s += scale) {
      float x = nn_step ? s : origin + (i + 0.5f) * scale;
      int v = (int)floorf(x) + base;
      axis->start[i] = v < clo ? clo : v > chi ? chi : v;
      axis->weights[i] = 1.0f;
    }
  } else {
    const int support = support_of(f);
    LADLE_CHECK(support >= 1 && support < (1 << 20), LADLE_ERROR_INVALID_ARGUMENT, "filter too wide (scale %g)",
                (double)scale);
    /* Scratch: `support` raw weights of one output pixel. */
    RESERVE(axis->work, axis->cap_work, (size_t)support * sizeof(float));
    float *c = axis->work;
    const float x0 = origin + (0.5f * scale - 0.5f - f->anchor); /* DALI: srcx_0 += ... */
    /* First the widest clamped filter (the table's row length), from the
     * first taps alone; then each pixel's weights, straight into its row. */
    int taps = 1;
    for (int i = 0; i < out_size; i++) {
      int a = (int)ceilf(i * scale + x0) + base, b = a + support - 1; /* absolute, inclusive */
      int ca = a < clo ? clo : a > chi ? chi : a, cb = b < clo ? clo : b > chi ? chi : b;
      if (cb - ca + 1 > taps) taps = cb - ca + 1;
    }
    axis->taps = taps;
    RESERVE(axis->start, axis->cap_start, sizeof *axis->start * (size_t)out_size);
    RESERVE(axis->weights, axis->cap_weights, sizeof *axis->weights * (size_t)out_size * taps);
    memset(axis->weights, 0, sizeof *axis->weights * (size_t)out_size * taps);
    for (int i = 0; i < out_size; i++) {
      float sx0f = i * scale + x0;
      int sx0 = (int)ceilf(sx0f);
      float f0 = sx0 - sx0f, sum = 0.0f;
      for (int k = 0; k < support; k++) {
        c[k] = tab_at(f, (f0 + k) * f->scale);
        sum += c[k];
      }
      const float div = sum != 0.0f ? sum : 1.0f; /* x / 1 is x */
      /* Clamp: the taps beyond an edge read the edge pixel. */
      int a = sx0 + base, ca = a < clo ? clo : a > chi ? chi : a;
      int s = ca + taps > in_size ? in_size - taps : ca;
      axis->start[i] = s;
      float *w = axis->weights + (size_t)i * taps;
      if (a >= clo && a + support - 1 <= chi) { /* no tap clamped */
        for (int k = 0; k < support; k++) w[a + k - s] += c[k] / div;
      } else {
        for (int k = 0; k < support; k++) {
          int x = a + k;
          x = x < clo ? clo : x > chi ? chi : x;
          w[x - s] += c[k] / div;
        }
      }
    }
  }
  axis->in_lo = axis->start[0];
  axis->in_hi = axis->start[0] + axis->taps;
  for (int i = 1; i < out_size; i++) {
    if (axis->start[i] < axis->in_lo) axis->in_lo = axis->start[i];
    if (axis->start[i] + axis->taps > axis->in_hi) axis->in_hi = axis->start[i] + axis->taps;
  }
done:
  return st;
}

ladle_status ladle__resize_plan_dali(ladle__resize_axis *ax, ladle__resize_axis *ay, int in_w, int in_h,
                                     const float roi_lo[2], const float roi_hi[2], int out_w, int out_h,
                                     ladle__interp min_filter, ladle__interp mag_filter, int antialias) {
  ladle_status st = LADLE_OK;
  LADLE_CHECK(in_w >= 1 && in_h >= 1 && out_w >= 1 && out_h >= 1, LADLE_ERROR_INVALID_ARGUMENT,
              "sizes must be >= 1 (input %dx%d, output %dx%d)", in_w, in_h, out_w, out_h);
  LADLE_CHECK(isfinite(roi_lo[0]) && isfinite(roi_lo[1]) && isfinite(roi_hi[0]) && isfinite(roi_hi[1]),
              LADLE_ERROR_INVALID_ARGUMENT, "bad source window");
  pthread_once(&tables_once, init_tables);
  {
    const int in[2] = {in_w, in_h}, out[2] = {out_w, out_h};
    tab_filter f[2];
    float origin[2], scale[2];
    int lo[2], hi[2], support[2];
    for (int d = 0; d < 2; d++) { /* d = 0: x, 1: y */
      float extent = fabsf(roi_hi[d] - roi_lo[d]);
      f[d] = filter_for(out[d] < extent ? min_filter : mag_filter, antialias, extent, out[d]);
      origin[d] = roi_lo[d];
      scale[d] = (roi_hi[d] - roi_lo[d]) / out[d];
      support[d] = support_of(&f[d]);
      float a = fminf(roi_lo[d], roi_hi[d]) - f[d].anchor, b = fmaxf(roi_lo[d], roi_hi[d]) - f[d].anchor + support[d];
      float fa = floorf(a), fb = ceilf(b);
      lo[d] = fa < 0 ? 0 : fa > in[d] ? in[d] : (int)fa;
      hi[d] = fb < 0 ? 0 : fb > in[d] ? in[d] : (int)fb;
    }
    /* DALI resamples first along the axis that costs less; the second pass
     * reads only the rows (columns) [lo, hi) of the first one's output, and
     * repeats its edges. A window wholly outside the image keeps its nearest
     * edge pixel. */
    int64_t ext_x = hi[0] - lo[0], ext_y = hi[1] - lo[1];
    int64_t size_vert = ext_x * out_h, size_horz = (int64_t)out_w * ext_y, area = (int64_t)out_w * out_h;
    int64_t vh = size_vert * support[1] + area * support[0], hv = size_horz * support[0] + area * support[1];
    int second = 3.0f * size_vert + vh < 3.0f * size_horz + hv ? 0 : 1; /* vertical first: x is second */
    for (int d = 0; d < 2; d++) {
      ladle__resize_axis *axis = d ? ay : ax;
      int clo = 0, chi = in[d] - 1, base = 0;
      float o = origin[d];
      if (d == second && hi[d] > lo[d]) {
        clo = lo[d], chi = hi[d] - 1, base = lo[d];
        o = origin[d] - lo[d];
      } else if (d == second) {
        clo = chi = lo[d] >= in[d] ? in[d] - 1 : 0;
      }
      st = plan_axis(axis, in[d], base, o, scale[d], out[d], &f[d], clo, chi, d == 1);
      if (st != LADLE_OK) goto done;
    }
    /* DALI's last pass rounds: horizontal (scalar), ties up; vertical,
     * vectorised over blocks of 16 elements of the row that round to even,
     * and a scalar tail that rounds up (measured on DALI 2.4). */
    ax->round_up = ay->round_up = second == 1 ? LADLE__ROUND_DALI_ROWS : LADLE__ROUND_UP;
  }
done:
  if (st != LADLE_OK) {
    ladle__resize_axis_free(ax);
    ladle__resize_axis_free(ay);
  }
  return st;
}

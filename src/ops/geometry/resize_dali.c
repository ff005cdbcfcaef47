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
#include "ops/geometry/resize_dali_filter.h"
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

static int table_of(const tab_filter *f) {
  return f->coeffs == tri_table       ? LADLE__RESIZE_TABLE_TRI
         : f->coeffs == gauss_table   ? LADLE__RESIZE_TABLE_GAUSS
         : f->coeffs == lanczos_table ? LADLE__RESIZE_TABLE_LANCZOS
         : f->coeffs == cubic_table   ? LADLE__RESIZE_TABLE_CUBIC
                                      : LADLE__RESIZE_TABLE_NN;
}

const float *ladle__resize_dali_table(int table, int *num) {
  pthread_once(&tables_once, init_tables);
  switch (table) {
    case LADLE__RESIZE_TABLE_TRI: *num = TRI_N; return tri_table;
    case LADLE__RESIZE_TABLE_GAUSS: *num = GAUSS_N; return gauss_table;
    case LADLE__RESIZE_TABLE_LANCZOS: *num = LANCZOS_N; return lanczos_table;
    case LADLE__RESIZE_TABLE_CUBIC: *num = CUBIC_N; return cubic_table;
    default: *num = 0; return NULL;
  }
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
 * DALI's geometry of one axis: origin and scale in input pixels (relative to
 * `base`, the first input pixel of the pass's input), indices clamped to
 * [clo, chi] (absolute). nn_step: nearest neighbour coordinates accumulated
 * (origin + scale/2, then + scale per pixel: DALI's vertical NN) rather than
 * origin + (i + 1/2) * scale.
 */
static ladle_status axis_geom(ladle__resize_dali_axis *a, int in_size, int base, float origin, float scale,
                              int out_size, const tab_filter *f, int clo, int chi, int nn_step) {
  ladle_status st = LADLE_OK;
  *a = (ladle__resize_dali_axis){in_size, out_size, table_of(f), support_of(f), base, clo, chi, nn_step,
                                 origin, scale, 0.0f, f->scale};
  if (f->coeffs) {
    LADLE_CHECK(a->support >= 1 && a->support < (1 << 20), LADLE_ERROR_INVALID_ARGUMENT,
                "filter too wide (scale %g)", (double)scale);
    a->x0 = origin + (0.5f * scale - 0.5f - f->anchor); /* DALI: srcx_0 += ... */
  }
done:
  return st;
}

int ladle__resize_dali_max_taps(const ladle__resize_dali_axis *a) {
  if (a->table == LADLE__RESIZE_TABLE_NN) return 1;
  const int span = a->chi - a->clo + 1;
  return a->support < span ? a->support : span;
}

/* The tables from the geometry (resize_dali_filter.h has the per-pixel formula). */
ladle_status ladle__resize_axis_from_dali(ladle__resize_axis *axis, const ladle__resize_dali_axis *a, int round_up) {
  ladle_status st = LADLE_OK;
  const int out_size = a->out_size;
  axis->out_size = out_size;
  axis->in_size = a->in_size;
  axis->round_up = round_up;
  if (a->table == LADLE__RESIZE_TABLE_NN) {
    axis->taps = 1;
    RESERVE(axis->start, axis->cap_start, sizeof *axis->start * (size_t)out_size);
    RESERVE(axis->weights, axis->cap_weights, sizeof *axis->weights * (size_t)out_size);
    float s = rzd_nn_first(a);
    for (int i = 0; i < out_size; i++, s += a->scale) {
      axis->start[i] = rzd_nn_start(a, i, s);
      axis->weights[i] = 1.0f;
    }
  } else {
    int num = 0;
    const float *t = ladle__resize_dali_table(a->table, &num);
    /* Scratch: `support` raw weights of one output pixel. */
    RESERVE(axis->work, axis->cap_work, (size_t)a->support * sizeof(float));
    /* First the widest clamped filter (the table's row length), from the
     * first taps alone; then each pixel's weights, straight into its row. */
    int taps = 1;
    for (int i = 0; i < out_size; i++) {
      int len = rzd_clamped_len(a, i);
      if (len > taps) taps = len;
    }
    axis->taps = taps;
    RESERVE(axis->start, axis->cap_start, sizeof *axis->start * (size_t)out_size);
    RESERVE(axis->weights, axis->cap_weights, sizeof *axis->weights * (size_t)out_size * taps);
    memset(axis->weights, 0, sizeof *axis->weights * (size_t)out_size * taps);
    for (int i = 0; i < out_size; i++)
      axis->start[i] = rzd_row(a, t, num, taps, i, axis->weights + (size_t)i * taps, axis->work);
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

ladle_status ladle__resize_geom_dali(ladle__resize_dali_geom *g, int in_w, int in_h, const float roi_lo[2],
                                     const float roi_hi[2], int out_w, int out_h, ladle__interp min_filter,
                                     ladle__interp mag_filter, int antialias) {
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
      int clo = 0, chi = in[d] - 1, base = 0;
      float o = origin[d];
      if (d == second && hi[d] > lo[d]) {
        clo = lo[d], chi = hi[d] - 1, base = lo[d];
        o = origin[d] - lo[d];
      } else if (d == second) {
        clo = chi = lo[d] >= in[d] ? in[d] - 1 : 0;
      }
      st = axis_geom(d ? &g->y : &g->x, in[d], base, o, scale[d], out[d], &f[d], clo, chi, d == 1);
      if (st != LADLE_OK) goto done;
    }
    /* DALI's last pass rounds: horizontal (scalar), ties up; vertical,
     * vectorised over blocks of 16 elements of the row that round to even,
     * and a scalar tail that rounds up (measured on DALI 2.4). */
    g->round_up = second == 1 ? LADLE__ROUND_DALI_ROWS : LADLE__ROUND_UP;
  }
done:
  return st;
}

ladle_status ladle__resize_plan_dali(ladle__resize_axis *ax, ladle__resize_axis *ay, int in_w, int in_h,
                                     const float roi_lo[2], const float roi_hi[2], int out_w, int out_h,
                                     ladle__interp min_filter, ladle__interp mag_filter, int antialias) {
  ladle__resize_dali_geom g;
  ladle_status st = ladle__resize_geom_dali(&g, in_w, in_h, roi_lo, roi_hi, out_w, out_h, min_filter, mag_filter,
                                            antialias);
  if (st == LADLE_OK) st = ladle__resize_axis_from_dali(ax, &g.x, g.round_up);
  if (st == LADLE_OK) st = ladle__resize_axis_from_dali(ay, &g.y, g.round_up);
  if (st != LADLE_OK) {
    ladle__resize_axis_free(ax);
    ladle__resize_axis_free(ay);
  }
  return st;
}

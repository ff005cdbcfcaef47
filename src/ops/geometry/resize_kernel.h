/* Separable image resampling (resize, and crop+resize in one pass) on the CPU:
 * filter-weight tables per axis, which the CUDA kernels upload and reuse, and
 * the reference HWC kernels that apply them. */
#ifndef LADLE_OPS_KERNELS_RESIZE_H
#define LADLE_OPS_KERNELS_RESIZE_H

#include <stddef.h>
#include <stdint.h>

#include "ladle/ladle.h"
#include "ops/geometry/normalize_kernel.h" /* ladle__cmn_params, for the fused kernel */

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ladle__interp {
  LADLE__INTERP_NN = 0,     /* nearest neighbour; never antialiased */
  LADLE__INTERP_LINEAR,     /* triangle, support 1 (bilinear); widened when antialiased */
  LADLE__INTERP_CUBIC,      /* Keys cubic, a = -0.5, support 2 (PIL's BICUBIC) */
  LADLE__INTERP_LANCZOS3,   /* sinc(x) * sinc(x/3), support 3 (PIL's LANCZOS) */
  LADLE__INTERP_TRIANGULAR, /* LINEAR, always antialiased (whatever `antialias` says) */
  LADLE__INTERP_GAUSSIAN    /* exp(-(2x/r)^2), r = max(1, scale) when antialiased */
} ladle__interp;

/*
 * The filter of one axis, as plain arrays (a GPU kernel uploads them as they are).
 *
 * Output pixel i is
 *     sum over k = 0 .. taps-1 of  weights[i*taps + k] * in[start[i] + k]
 * Every index read is inside the input: 0 <= start[i] and start[i] + taps <= in_size,
 * so a kernel never clamps. Where the filter of pixel i is shorter than `taps`
 * (near a border, or because `taps` is the widest filter of the axis), the
 * extra weights are 0. The weights of each pixel sum to 1 (within float rounding).
 *
 * Borders (the same rule as PIL's resampling): the filter is cut off where it
 * leaves the input, and the remaining weights are renormalised to sum to 1.
 * For LINEAR this equals replicating the border pixel; for CUBIC and LANCZOS3
 * it is PIL's behaviour, not a replicated border. An output pixel whose whole
 * filter falls outside the input (a source window far outside the image)
 * takes the nearest input pixel.
 *
 * The source window may extend past the region the caller thinks of as "the
 * crop": like PIL's `box` and DALI's `roi`, the filter reads the input pixels
 * around the window (up to the filter's support), not a copy of the window's
 * edge pixels.
 *
 * in_lo .. in_hi-1 is the span of input pixels that any output pixel reads
 * (min start, max start + taps).
 */
enum { LADLE__ROUND_EVEN = 0, LADLE__ROUND_UP = 1, LADLE__ROUND_DALI_ROWS = 2 };

/* The first element of an output row of n elements whose ties round up. */
#define ladle__resize_round_split(mode, n) \
  ((mode) == LADLE__ROUND_UP ? 0 : (mode) == LADLE__ROUND_DALI_ROWS ? (n) / 16 * 16 : (n))

typedef struct ladle__resize_axis {
  int out_size, taps;
  int32_t *start;  /* out_size entries */
  float *weights;  /* out_size * taps entries */
  int in_size;     /* the input size the table was planned for */
  int in_lo, in_hi;
  /* Rounding of uint8 outputs, read from the vertical axis (ay), by element
   * e = x * channels + c of an output row of n elements: those with
   * e >= ladle__resize_round_split(round_up, n) start their vertical sums at
   * 0.5 and are truncated (ties up, DALI's scalar code); the others start at
   * 0 and round half to even. round_up: LADLE__ROUND_EVEN (0, none),
   * LADLE__ROUND_UP (1, all), LADLE__ROUND_DALI_ROWS (2, all but the first
   * n / 16 * 16: DALI's vertical pass, vectorised in blocks of 16 elements
   * that round to even, its scalar tail rounding up). */
  int round_up;
  /* Owned memory, kept by ladle__resize_axis_replan for the next plan. */
  size_t cap_start, cap_weights, cap_work; /* bytes */
  void *work;
} ladle__resize_axis;

/*
 * Plans one axis. The source window [src_lo, src_lo + src_len), in input
 * pixels (fractional values allowed, the window may reach outside the input),
 * of an input of in_size pixels is mapped onto out_size output pixels.
 * Pixel centres are at +0.5: output pixel i samples around
 *     center = src_lo + (i + 0.5) * scale,   scale = src_len / out_size,
 * and input pixel x sits at x + 0.5.
 *
 * Filters (f is the filter, s its support, d = x + 0.5 - center):
 *   weight of input pixel x = f(d / fs), with fs = max(1, scale) when
 *   antialiasing (LINEAR/CUBIC/LANCZOS3/GAUSSIAN with antialias, TRIANGULAR
 *   always), else fs = 1. The pixels considered are, as in PIL,
 *       floor(center - R + 0.5) <= x < floor(center + R + 0.5),  R = s * fs
 *   (GAUSSIAN: R = floor(fs + 0.4) + 0.5, DALI's window), cut to [0, in_size).
 *   Weights are computed in double, divided by their sum, rounded to float,
 *   and the float rounding residual is added to the largest weight. Zero
 *   weights at both ends are trimmed before `taps` (the widest filter of the
 *   axis) is chosen; an identity resize has taps = 1 and weight 1.
 *   LINEAR without antialias is classic bilinear interpolation (2 taps);
 *   antialiased, it is PIL's BILINEAR (a 2x downscale is [1 3 3 1] / 8, not
 *   a 2x2 box). CUBIC and LANCZOS3 match PIL's BICUBIC and LANCZOS.
 *   NN: start[i] = clamp(floor(center), 0, in_size - 1), taps = 1 (DALI's NN).
 *
 * Requires in_size >= 1, out_size >= 1, src_len > 0 and finite src_lo;
 * otherwise fails with LADLE_ERROR_INVALID_ARGUMENT. Fails with
 * LADLE_ERROR_OUT_OF_MEMORY when the tables cannot be allocated. On failure
 * `axis` is left empty (safe to free). The tables are owned by `axis`; free
 * them with ladle__resize_axis_free.
 */
ladle_status ladle__resize_axis_plan(ladle__resize_axis *axis, int in_size, double src_lo,
                                     double src_len, int out_size, ladle__interp interp,
                                     int antialias);

/* The same, reusing the memory of `axis` (zeroed, or planned before) so that a
 * warm caller allocates nothing: it grows only when a plan needs more. */
ladle_status ladle__resize_axis_replan(ladle__resize_axis *axis, int in_size, double src_lo,
                                       double src_len, int out_size, ladle__interp interp,
                                       int antialias);

/*
 * Plans both axes as DALI 2.4's CPU resize does (its resampling_setup and
 * InitializeResamplingFilter, re-derived): the source window runs from
 * roi_lo to roi_hi (x then y, input pixels, float; lo > hi flips that axis)
 * onto out_w x out_h; the filter of an axis is min_filter where its output is
 * smaller than its window, else mag_filter. Filter shapes are DALI's tables
 * (triangle of 3 points, Gaussian of 65, Lanczos3 of 193, Keys cubic of 129)
 * read with linear interpolation and stretched by DALI's default radius:
 * LINEAR is bilinear, or the triangle of radius in/out when antialiased and
 * downscaling, and so is TRIANGULAR (DALI 2.4 no longer widens it without
 * antialias, measured); CUBIC/LANCZOS3 widen to 2 (3) x
 * in/out when antialiased. Coordinates and weights are single-precision,
 * computed operation by operation as DALI does; each pixel's weights are
 * divided by their float sum (no residual correction). Borders: a tap outside
 * the readable range reads the edge pixel (its weight is added to the edge
 * pixel's); the axis DALI resamples second reads only DALI's ROI of the
 * first pass, [floor(lo - anchor), ceil(hi - anchor + support)). NN:
 * floor(origin + (i + 1/2) * scale) across, accumulated steps down (DALI's
 * ResampleNN). DALI picks the cheaper order of passes (its cost formula);
 * ay->round_up follows its last pass: LADLE__ROUND_UP where that is
 * horizontal, LADLE__ROUND_DALI_ROWS where it is vertical. The result equals
 * DALI's CPU output bit for bit where DALI also resamples horizontally first
 * and no edge pixel is repeated; otherwise the float sums differ in order,
 * within one level for uint8 (measured on DALI 2.4).
 * Fails with LADLE_ERROR_INVALID_ARGUMENT for sizes < 1 or a non-finite
 * window, LADLE_ERROR_OUT_OF_MEMORY; the axes are reused as by _replan and
 * freed on failure.
 */
ladle_status ladle__resize_plan_dali(ladle__resize_axis *ax, ladle__resize_axis *ay, int in_w, int in_h,
                                     const float roi_lo[2], const float roi_hi[2], int out_w, int out_h,
                                     ladle__interp min_filter, ladle__interp mag_filter, int antialias);

/*
 * The same plan split in two: the geometry of each axis (a few numbers per
 * axis, computed here on the host in O(1)), and the tables built from it
 * pixel by pixel (ladle__resize_axis_from_dali on the CPU; on the GPU by
 * ladle__gpu_resample, from the same formula in resize_dali_filter.h, so the
 * tables are bit-identical). ladle__resize_plan_dali is the two in a row.
 * Coordinates of an axis are relative to pixel `base` of the input; a tap at
 * pixel x reads clamp(x, clo, chi).
 */
enum {
  LADLE__RESIZE_TABLE_NN = 0, /* no table: nearest neighbour */
  LADLE__RESIZE_TABLE_TRI, LADLE__RESIZE_TABLE_GAUSS, LADLE__RESIZE_TABLE_LANCZOS, LADLE__RESIZE_TABLE_CUBIC,
  LADLE__RESIZE_TABLE_COUNT
};

typedef struct ladle__resize_dali_axis {
  int in_size, out_size;
  int table;           /* LADLE__RESIZE_TABLE_* */
  int support;         /* filter length in input pixels, before clamping (NN: 1) */
  int base, clo, chi;  /* see above */
  int nn_step;         /* NN: coordinates accumulated step by step (DALI's vertical NN) */
  float origin, scale; /* pixel i samples around origin + (i + 1/2) * scale */
  float x0;            /* filters: pixel i's first tap is at ceil(i * scale + x0) */
  float tscale;        /* filters: table steps per input pixel */
} ladle__resize_dali_axis;

typedef struct ladle__resize_dali_geom {
  ladle__resize_dali_axis x, y;
  int round_up; /* both axes' round_up (LADLE__ROUND_*) */
} ladle__resize_dali_geom;

/* The geometry alone; the same arguments and failures as ladle__resize_plan_dali
 * (nothing is allocated). */
ladle_status ladle__resize_geom_dali(ladle__resize_dali_geom *g, int in_w, int in_h, const float roi_lo[2],
                                     const float roi_hi[2], int out_w, int out_h, ladle__interp min_filter,
                                     ladle__interp mag_filter, int antialias);

/* The tables of one axis from its geometry (reusing axis's memory as _replan
 * does); round_up is set from `round_up`. */
ladle_status ladle__resize_axis_from_dali(ladle__resize_axis *axis, const ladle__resize_dali_axis *a, int round_up);

/* An upper bound of the axis's taps (the tables' row length), for sizing. */
int ladle__resize_dali_max_taps(const ladle__resize_dali_axis *a);

/* DALI's filter shape `table` (LADLE__RESIZE_TABLE_TRI..CUBIC): *num points,
 * followed by one 0 (the array holds *num + 1 floats). */
const float *ladle__resize_dali_table(int table, int *num);

/* Frees the tables and zeroes the struct. NULL and an empty axis are allowed. */
void ladle__resize_axis_free(ladle__resize_axis *axis);

/*
 * Bytes of scratch memory ladle__resize_u8/f32 need for these axes and this
 * channel count (1..4). The same size serves both element types.
 */
size_t ladle__resize_scratch_size(const ladle__resize_axis *ax, const ladle__resize_axis *ay,
                                  int in_h, int channels);

/*
 * Separable resize of an HWC uint8 image with `channels` (1..4) channels,
 * rows in_stride bytes apart, into `out`: ay->out_size rows of
 * ax->out_size * channels bytes, packed. ax must have been planned for the
 * input's width and ay for in_h (not checked). `scratch` is
 * ladle__resize_scratch_size() bytes, any alignment; nothing is allocated
 * here, and the call is thread-safe given distinct scratch and output.
 * Input rows that no output pixel reads are not touched (a small source
 * window in a large image costs what the window costs).
 *
 * The arithmetic, which a GPU kernel reproduces bit for bit:
 *   1. horizontal pass, for every input row r that the vertical filter reads:
 *        t[r][i][c] = 0;  for k in 0..ax->taps-1:
 *          t[r][i][c] += ax->weights[i*taps+k] * (float)in[r][ax->start[i]+k][c]
 *   2. vertical pass:
 *        v[j][i][c] = 0;  for k in 0..ay->taps-1:
 *          v[j][i][c] += ay->weights[j*taps+k] * t[ay->start[j]+k][i][c]
 *   3. out[j][i][c] = ladle__f32_to_u8(v) (saturate to 0..255, round to
 *      nearest even); for the elements e = i * channels + c at or past
 *      ladle__resize_round_split(ay->round_up, ax->out_size * channels)
 *      (DALI's rounding) the sums v of step 2 start at 0.5 instead of 0 and
 *      out[j][i][c] = ladle__f32_to_u8_trunc(v) (saturate, truncate).
 * Every product and sum is a single float operation, rounded (no fused
 * multiply-add: resize.c turns contraction off for itself; a CUDA kernel uses
 * __fmul_rn/__fadd_rn). The intermediate t is float, not rounded to uint8:
 * PIL rounds and clips it, hence differences of 1 against PIL for LINEAR,
 * and more for CUBIC/LANCZOS3 on noisy images, where PIL clips overshoot.
 * Ties round to even (round_up = 0) or up (round_up = 1, DALI CPU's), as PIL does.
 */
void ladle__resize_u8(uint8_t *out, const uint8_t *in, int in_h, int in_stride, int channels,
                      const ladle__resize_axis *ax, const ladle__resize_axis *ay, void *scratch);

/* The same for float32 HWC input and output; step 3 is a plain copy (no
 * rounding, no clamping). in_stride_elems is the row stride in floats. */
void ladle__resize_f32(float *out, const float *in, int in_h, int in_stride_elems, int channels,
                       const ladle__resize_axis *ax, const ladle__resize_axis *ay, void *scratch);

#ifdef LADLE_HAVE_CUDA
/* ------------------------------------------------------------------------ */
/* On the GPU (resize_kernel.cu, fused.cu; ops/kernels/gpu_kernels.h has the */
/* rules every launcher follows)                                               */
/* ------------------------------------------------------------------------ */

/* One image to resize: an HWC image of `channels` (1..4) channels, rows
 * in_stride elements apart (>= in_w * channels), into `out`: ay->out_size rows
 * of ax->out_size * channels elements, packed. ax and ay are host tables planned
 * with ladle__resize_axis_plan for in_w and in_h (their in_size must match). */
/* Or, with geom set (ax and ay NULL), the DALI geometry of the sample
 * (ladle__resize_geom_dali for in_w and in_h): the launch then builds the
 * tables on the GPU, bit-identical to ladle__resize_axis_from_dali's (the
 * formula is shared: resize_dali_filter.h), and the host uploads only a few
 * numbers per sample instead of its tables. */
typedef struct ladle__gpu_resize_desc {
  const void *in;
  void *out;
  int in_h, in_w;
  int64_t in_stride;
  int channels;
  const ladle__resize_axis *ax, *ay;
  const ladle__resize_dali_geom *geom;
} ladle__gpu_resize_desc;

/* Bytes of host_params / dev_params for ladle__gpu_resize and ladle__gpu_fused
 * on these samples (their parameters plus every filter table; tables built on
 * the GPU live in dev_params too, but are not uploaded). */
size_t ladle__gpu_resize_param_bytes(const ladle__gpu_resize_desc *d, int n);

/*
 * ladle__resize_u8 (type LADLE_UINT8) or ladle__resize_f32 (LADLE_FLOAT32) on
 * every sample: the same tables, the same float operations in the same order,
 * so the output is bit-identical to the CPU reference's (the test asserts
 * exact equality for both types).
 *
 * How: one kernel, instantiated per element type and channel count; a block
 * computes a 32 x 32 tile of one sample's output (a thread: one column, 4
 * rows). It runs the horizontal pass for the input rows the tile needs (32
 * rows at a time) into shared memory, then each thread adds those rows'
 * contributions to its pixels' vertical sums, in tap order; the tile's filter
 * weights (up to 32 taps an axis) are read from shared memory. No device
 * scratch is needed. (ladle__gpu_fused keeps its own 32 x 8 tile kernel.)
 * Samples given by geometry first get their tables from a planning kernel
 * (one block per axis, a thread per output pixel) into dev_params.
 * Cost note: every input row between the tile's first and last filter tap is
 * filtered horizontally, also rows no output reads (NN or non-antialiased
 * downscales by large factors skip rows): correct, but slower there.
 */
ladle_status ladle__gpu_resize(const ladle__gpu_resize_desc *d, int n, ladle_dtype type, void *host_params,
                               void *dev_params, size_t param_bytes, void *stream);

/* ------------------------------------------------------------------------ */
/* Fused decode-side transform (fused.cu)                                     */
/* ------------------------------------------------------------------------ */

/*
 * crop + resize + mirror + normalize + cast + layout in one kernel, for uint8
 * HWC images (decoded, any size per sample). Sample i equals, bit for bit,
 *     ladle__resize_u8(R, in, ..., ax, ay)            (R: ay->out_size x ax->out_size)
 *     ladle__crop_mirror_normalize(out, R, ay->out_size, ax->out_size,
 *                                  ax->out_size * channels, &cmn[i])
 * i.e. the resize result is rounded to uint8 (ladle__f32_to_u8) before it is
 * normalized, exactly as the unfused operators do; the test asserts exact
 * equality with that composition for every output type.
 *
 * The crop of a random-resized-crop is the tables' source window (plan ax/ay
 * with src_lo/src_len = the window, in the decoded image's pixels); cmn[i]'s
 * own window (x0, y0, w, h) then selects from R, and is usually (0, 0,
 * ax->out_size, ay->out_size), or a centre crop for validation pipelines
 * ("resize shorter side, then crop"). Out-of-range pixels take cmn.fill.
 *
 * d[i].in must be uint8. cmn[i].channels must equal d[i].channels; dtype, chw
 * and pad_output must be the same for all samples (one output batch). The
 * parameter buffers are sized by ladle__gpu_resize_param_bytes(d, n).
 */
ladle_status ladle__gpu_fused(const ladle__gpu_resize_desc *d, const ladle__cmn_params *cmn, int n,
                              void *host_params, void *dev_params, size_t param_bytes, void *stream);

/* The shared launcher behind ladle__gpu_resize (cmn == NULL) and ladle__gpu_fused
 * (in_type LADLE_UINT8); `func` names the caller in messages. Internal to the
 * .cu files. */
ladle_status ladle__gpu_resample(const ladle__gpu_resize_desc *d, const ladle__cmn_params *cmn, int n,
                                 ladle_dtype in_type, void *host_params, void *dev_params, size_t param_bytes,
                                 void *stream, const char *func);
#endif

#ifdef __cplusplus
}
#endif

#endif

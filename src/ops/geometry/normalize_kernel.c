/* Crop / flip / crop_mirror_normalize / type conversion on HWC images: plain
 * loops over rows, with each output row split into the part read from the
 * input and the parts that fall outside it (filled). */
/* The arithmetic is specified operation by operation (a CUDA kernel must
 * reproduce it bit for bit): never fuse a multiply and an add, whatever the
 * target or -ffp-contract default (gcc's GNU modes fuse when FMA exists). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "ops/geometry/normalize_kernel.h"

#include <math.h>
#include <string.h>

#include "ops/kernels/half.h"

#define AI static inline __attribute__((always_inline))

static size_t elem_size(ladle_dtype t) {
  switch (t) {
    case LADLE_UINT8: return 1;
    case LADLE_FLOAT16: return 2;
    case LADLE_INT32:
    case LADLE_FLOAT32: return 4;
    case LADLE_INT64: return 8;
    default: return 0;
  }
}

/* ------------------------------------------------------------------------ */
/* Scalar conversions (the rules of ladle__convert)                           */
/* ------------------------------------------------------------------------ */

/* Round to nearest, ties to even. Floats of magnitude >= 2^23 are integers
 * already; below, adding 2^23 leaves no fraction bits and the addition rounds. */
static inline float round_even(float x) {
  float a = fabsf(x);
  if (!(a < 8388608.0f)) return x; /* large, inf or NaN */
  return copysignf((a + 8388608.0f) - 8388608.0f, x);
}

static inline int32_t f32_to_i32(float x) {
  float r = round_even(x);
  if (r != r) return 0;
  if (r >= 2147483648.0f) return INT32_MAX;
  if (r < -2147483648.0f) return INT32_MIN;
  return (int32_t)r;
}

static inline int64_t f32_to_i64(float x) {
  float r = round_even(x);
  if (r != r) return 0;
  if (r >= 9223372036854775808.0f) return INT64_MAX;
  if (r < -9223372036854775808.0f) return INT64_MIN;
  return (int64_t)r;
}

/* Stores float v as one element of type t at dst. */
static void store_f32(void *dst, ladle_dtype t, float v) {
  switch (t) {
    case LADLE_UINT8: *(uint8_t *)dst = ladle__f32_to_u8(v); break;
    case LADLE_FLOAT16: {
      uint16_t h = ladle__f32_to_f16(v);
      memcpy(dst, &h, 2);
      break;
    }
    case LADLE_INT32: {
      int32_t i = f32_to_i32(v);
      memcpy(dst, &i, 4);
      break;
    }
    case LADLE_INT64: {
      int64_t i = f32_to_i64(v);
      memcpy(dst, &i, 8);
      break;
    }
    default: memcpy(dst, &v, 4); break;
  }
}

/* ------------------------------------------------------------------------ */
/* Spans                                                                      */
/* ------------------------------------------------------------------------ */

/* The output columns [*a, *b) of a window (x0, w), read flipped or not, whose
 * source column lies inside [0, in_w). Outside it the output is filled. */
static void inside_span(int x0, int w, int in_w, int flip, int *a, int *b) {
  int64_t lo, hi; /* output columns with a source inside */
  if (!flip) {
    lo = -(int64_t)x0;
    hi = (int64_t)in_w - x0;
  } else { /* sx = x0 + w - 1 - x in [0, in_w)  <=>  x in (x0 + w - 1 - in_w, x0 + w - 1] */
    lo = (int64_t)x0 + w - in_w;
    hi = (int64_t)x0 + w;
  }
  if (lo < 0) lo = 0;
  if (hi > w) hi = w;
  if (hi < lo) hi = lo;
  *a = (int)lo;
  *b = (int)hi;
}

static int row_inside(int y0, int h, int in_h, int flip, int y, int *sy) {
  int64_t s = flip ? (int64_t)y0 + h - 1 - y : (int64_t)y0 + y;
  *sy = (int)s;
  return s >= 0 && s < in_h;
}

/* ------------------------------------------------------------------------ */
/* crop_mirror_normalize                                                      */
/* ------------------------------------------------------------------------ */

/*
 * One output row's inside part: n pixels read from src (advancing by `step`
 * bytes), each of the c channels looked up in its 256-entry table of es-byte
 * elements. CHW: channel ch goes to out + ch * plane_bytes, element x;
 * HWC: element x * oc + ch. c and es are constants at each call site, so the
 * copies are single moves.
 */
AI void span_chw(uint8_t *out, size_t plane_bytes, const uint8_t *src, ptrdiff_t step, int n,
                 int c, const uint8_t *lut, size_t es) {
  uint8_t *o[4];
  for (int ch = 0; ch < c; ch++) o[ch] = out + (size_t)ch * plane_bytes;
  for (int x = 0; x < n; x++, src += step) {
#pragma GCC unroll 4
    for (int ch = 0; ch < c; ch++)
      memcpy(o[ch] + (size_t)x * es, lut + ((size_t)ch * 256 + src[ch]) * es, es);
  }
}

AI void span_hwc(uint8_t *out, int oc, const uint8_t *src, ptrdiff_t step, int n, int c,
                 const uint8_t *lut, size_t es) {
  const size_t px = (size_t)oc * es;
  for (int x = 0; x < n; x++, src += step, out += px) {
#pragma GCC unroll 4
    for (int ch = 0; ch < c; ch++) memcpy(out + (size_t)ch * es, lut + ((size_t)ch * 256 + src[ch]) * es, es);
  }
}

#define SPAN_C(call, es)                          \
  switch (c) {                                    \
    case 1: call(1, es); break;                   \
    case 2: call(2, es); break;                   \
    case 3: call(3, es); break;                   \
    default: call(4, es); break;                  \
  }
#define SPAN_ES(call)                             \
  switch (es) {                                   \
    case 1: SPAN_C(call, 1); break;               \
    case 2: SPAN_C(call, 2); break;               \
    case 4: SPAN_C(call, 4); break;               \
    default: SPAN_C(call, 8); break;              \
  }

static void cmn_span(uint8_t *out, int chw, size_t plane_bytes, int oc, const uint8_t *src,
                     ptrdiff_t step, int n, int c, const uint8_t *lut, size_t es) {
#define CALL_CHW(cc, ee) span_chw(out, plane_bytes, src, step, n, cc, lut, ee)
#define CALL_HWC(cc, ee) span_hwc(out, oc, src, step, n, cc, lut, ee)
  if (chw) {
    SPAN_ES(CALL_CHW);
  } else {
    SPAN_ES(CALL_HWC);
  }
#undef CALL_CHW
#undef CALL_HWC
}

/* Output pixels [a, b) of a row set to the per-channel values in `val`. */
static void fill_span(uint8_t *out, size_t xs, size_t cs, int a, int b, int oc, const uint8_t *val,
                      size_t es) {
  for (int x = a; x < b; x++)
    for (int ch = 0; ch < oc; ch++)
      memcpy(out + ((size_t)x * xs + (size_t)ch * cs) * es, val + (size_t)ch * es, es);
}

void ladle__crop_mirror_normalize(void *out, const uint8_t *in, int in_h, int in_w, int in_stride,
                                  const ladle__cmn_params *p) {
  const int c = p->channels, oc = p->channels + (p->pad_output ? 1 : 0);
  const int w = p->w, h = p->h;
  const size_t es = elem_size(p->dtype);
  uint8_t lut[4 * 256 * 8];
  uint8_t fill[4 * 8];
  if (es == 0) return; /* not a dtype: a precondition the operator checks */

  memset(fill, 0, sizeof fill); /* the padding channel's fill is 0 */
  for (int ch = 0; ch < c; ch++) {
    const float mul = p->inv_std[ch] * p->scale;
    for (int v = 0; v < 256; v++)
      store_f32(lut + ((size_t)ch * 256 + v) * es, p->dtype, ((float)v - p->mean[ch]) * mul + p->shift);
    store_f32(fill + (size_t)ch * es, p->dtype, p->fill[ch]);
  }

  /* Element (x, c) of output row y is at row + (x * xs + c * cs) * es. */
  const size_t plane = (size_t)w * h;
  const size_t xs = p->chw ? 1 : (size_t)oc, cs = p->chw ? plane : 1;
  int a, b;
  inside_span(p->x0, w, in_w, p->mirror, &a, &b);
  const ptrdiff_t step = p->mirror ? -(ptrdiff_t)c : (ptrdiff_t)c;

  for (int y = 0; y < h; y++) {
    uint8_t *row = (uint8_t *)out + (p->chw ? (size_t)y * w : (size_t)y * w * oc) * es;
    int sy;
    if (!row_inside(p->y0, h, in_h, 0, y, &sy) || a == b) {
      fill_span(row, xs, cs, 0, w, oc, fill, es);
      continue;
    }
    fill_span(row, xs, cs, 0, a, oc, fill, es);
    fill_span(row, xs, cs, b, w, oc, fill, es);
    int sx = p->mirror ? p->x0 + w - 1 - a : p->x0 + a;
    const uint8_t *src = in + (size_t)sy * in_stride + (size_t)sx * c;
    cmn_span(row + (size_t)a * xs * es, p->chw, plane * es, oc, src, step, b - a, c, lut, es);
    if (oc > c) fill_span(row + (size_t)c * cs * es, xs, cs, a, b, 1, fill + (size_t)c * es, es);
  }
}

/* ------------------------------------------------------------------------ */
/* crop + flip                                                                */
/* ------------------------------------------------------------------------ */

/* n pixels of ps bytes copied right to left (src points at the last one). */
AI void copy_reversed(uint8_t *dst, const uint8_t *src, int n, size_t ps) {
  for (int x = 0; x < n; x++, dst += ps, src -= ps) memcpy(dst, src, ps);
}

void ladle__crop_flip_hwc(void *out, const void *in, int in_h, int in_w, int channels,
                          size_t elem_size, int x0, int y0, int w, int h, int flip_x, int flip_y,
                          uint8_t fill) {
  const size_t ps = (size_t)channels * elem_size, in_row = (size_t)in_w * ps, out_row = (size_t)w * ps;
  int a, b;
  inside_span(x0, w, in_w, flip_x, &a, &b);
  for (int y = 0; y < h; y++) {
    uint8_t *o = (uint8_t *)out + (size_t)y * out_row;
    int sy;
    if (!row_inside(y0, h, in_h, flip_y, y, &sy) || a == b) {
      memset(o, fill, out_row);
      continue;
    }
    memset(o, fill, (size_t)a * ps);
    memset(o + (size_t)b * ps, fill, (size_t)(w - b) * ps);
    const uint8_t *srow = (const uint8_t *)in + (size_t)sy * in_row;
    if (!flip_x) {
      memcpy(o + (size_t)a * ps, srow + (size_t)(x0 + a) * ps, (size_t)(b - a) * ps);
      continue;
    }
    const uint8_t *s = srow + (size_t)(x0 + w - 1 - a) * ps;
    uint8_t *d = o + (size_t)a * ps;
    switch (ps) { /* constant sizes turn the per-pixel memcpy into moves */
      case 1: copy_reversed(d, s, b - a, 1); break;
      case 2: copy_reversed(d, s, b - a, 2); break;
      case 3: copy_reversed(d, s, b - a, 3); break;
      case 4: copy_reversed(d, s, b - a, 4); break;
      case 6: copy_reversed(d, s, b - a, 6); break;
      case 8: copy_reversed(d, s, b - a, 8); break;
      case 12: copy_reversed(d, s, b - a, 12); break;
      case 16: copy_reversed(d, s, b - a, 16); break;
      default: copy_reversed(d, s, b - a, ps); break;
    }
  }
}

/* ------------------------------------------------------------------------ */
/* Type conversion                                                            */
/* ------------------------------------------------------------------------ */

static int is_float(ladle_dtype t) { return t == LADLE_FLOAT32 || t == LADLE_FLOAT16; }

/* Integers travel through int64 (every integer type fits), floats through
 * float (every half is a float): one load loop and one store loop per type,
 * over chunks that stay in L1. */
#define CHUNK 512

static void load_i64(int64_t *d, const void *in, ladle_dtype t, size_t n) {
  switch (t) {
    case LADLE_UINT8: for (size_t i = 0; i < n; i++) d[i] = ((const uint8_t *)in)[i]; break;
    case LADLE_INT32: for (size_t i = 0; i < n; i++) d[i] = ((const int32_t *)in)[i]; break;
    default: memcpy(d, in, n * sizeof *d); break;
  }
}

static void load_f32(float *d, const void *in, ladle_dtype t, size_t n) {
  if (t == LADLE_FLOAT16)
    for (size_t i = 0; i < n; i++) d[i] = ladle__f16_to_f32(((const uint16_t *)in)[i]);
  else
    memcpy(d, in, n * sizeof *d);
}

static void store_from_i64(void *out, ladle_dtype t, const int64_t *s, size_t n) {
  switch (t) {
    case LADLE_UINT8:
      for (size_t i = 0; i < n; i++)
        ((uint8_t *)out)[i] = (uint8_t)(s[i] < 0 ? 0 : s[i] > 255 ? 255 : s[i]);
      break;
    case LADLE_INT32:
      for (size_t i = 0; i < n; i++)
        ((int32_t *)out)[i] = (int32_t)(s[i] < INT32_MIN ? INT32_MIN : s[i] > INT32_MAX ? INT32_MAX : s[i]);
      break;
    case LADLE_INT64: memcpy(out, s, n * sizeof *s); break;
    case LADLE_FLOAT32: for (size_t i = 0; i < n; i++) ((float *)out)[i] = (float)s[i]; break;
    default: /* float16: exact via float, since |i| <= 2^24 is exact in float and more is inf */
      for (size_t i = 0; i < n; i++) ((uint16_t *)out)[i] = ladle__f32_to_f16((float)s[i]);
      break;
  }
}

static void store_from_f32(void *out, ladle_dtype t, const float *s, size_t n) {
  switch (t) {
    case LADLE_UINT8: for (size_t i = 0; i < n; i++) ((uint8_t *)out)[i] = ladle__f32_to_u8(s[i]); break;
    case LADLE_INT32: for (size_t i = 0; i < n; i++) ((int32_t *)out)[i] = f32_to_i32(s[i]); break;
    case LADLE_INT64: for (size_t i = 0; i < n; i++) ((int64_t *)out)[i] = f32_to_i64(s[i]); break;
    case LADLE_FLOAT32: memcpy(out, s, n * sizeof *s); break;
    default: for (size_t i = 0; i < n; i++) ((uint16_t *)out)[i] = ladle__f32_to_f16(s[i]); break;
  }
}

void ladle__convert(void *out, ladle_dtype out_type, const void *in, ladle_dtype in_type,
                    size_t n) {
  const size_t ies = elem_size(in_type), oes = elem_size(out_type);
  if (ies == 0 || oes == 0) return;
  if (in_type == out_type) {
    if (out != in) memcpy(out, in, n * ies);
    return;
  }
  union {
    int64_t i[CHUNK];
    float f[CHUNK];
  } buf;
  for (size_t done = 0; done < n; done += CHUNK) {
    size_t m = n - done < CHUNK ? n - done : CHUNK;
    const uint8_t *src = (const uint8_t *)in + done * ies;
    uint8_t *dst = (uint8_t *)out + done * oes;
    if (is_float(in_type)) {
      load_f32(buf.f, src, in_type, m);
      store_from_f32(dst, out_type, buf.f, m);
    } else {
      load_i64(buf.i, src, in_type, m);
      store_from_i64(dst, out_type, buf.i, m);
    }
  }
}

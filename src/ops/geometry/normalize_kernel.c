/* Crop / flip / crop_mirror_normalize / type conversion on HWC images: plain
 * loops over rows, with each output row split into the part read from the
 * input and the parts that fall outside it (filled). */
/* The arithmetic is specified operation by operation (a CUDA kernel must
 * reproduce it bit for bit): never fuse a multiply and an add, whatever the
 * target or -ffp-contract default (gcc's GNU modes fuse when FMA exists). */
#include "core/no_fma.h"

#include "ops/geometry/normalize_kernel.h"

#include <math.h>
#include <string.h>

#include "ops/kernels/dtype.h"
#include "ops/kernels/half.h"

#define AI static inline __attribute__((always_inline))

/* Stores float v as one element of type t at dst, which need not be aligned
 * (table entries): the conversion rules of ops/kernels/dtype.h. */
static void store_f32(void *dst, ladle_dtype t, float v) {
  union {
    uint64_t align;
    uint8_t bytes[8];
  } e;
  ladle__store_f32(e.bytes, 0, t, v);
  memcpy(dst, e.bytes, ladle__dtype_bytes(t));
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
  const size_t es = ladle__dtype_bytes(p->dtype);
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

/* Each input type loads into its carrier (ops/kernels/dtype.h), each output
 * type stores from it: one loop per type with the type a constant, so that
 * the compiler drops the per-element switch and can vectorize, over chunks
 * that stay in L1. */
#define CHUNK 512

#define LOAD_CASE(T) \
  case T: for (size_t i = 0; i < n; i++) d[i] = LOADER(in, i, T); break;
#define STORE_CASE(T) \
  case T: for (size_t i = 0; i < n; i++) STORER(out, i, T, s[i]); break;
#define INT_TYPES(X) X(LADLE_UINT8) X(LADLE_INT8) X(LADLE_INT16) X(LADLE_UINT16) X(LADLE_INT32) \
  X(LADLE_UINT32) X(LADLE_INT64) X(LADLE_BOOL)
#define ALL_TYPES(X) INT_TYPES(X) X(LADLE_UINT64) X(LADLE_FLOAT16) X(LADLE_FLOAT32) X(LADLE_FLOAT64)

static void load_f32_n(float *d, const void *in, ladle_dtype t, size_t n) {
#define LOADER ladle__load_f32
  switch (t) { LOAD_CASE(LADLE_FLOAT16) default: memcpy(d, in, n * sizeof *d); break; }
#undef LOADER
}

static void load_i64_n(int64_t *d, const void *in, ladle_dtype t, size_t n) {
#define LOADER ladle__load_i64
  switch (t) { INT_TYPES(LOAD_CASE) default: break; }
#undef LOADER
}

#define STORE_N(name, ctype, storer)                                            \
  static void name(void *out, ladle_dtype t, const ctype *s, size_t n) {        \
    switch (t) { ALL_TYPES(STORE_CASE) default: break; }                        \
  }
#define STORER ladle__store_f32
STORE_N(store_f32_n, float, ladle__store_f32)
#undef STORER
#define STORER ladle__store_f64
STORE_N(store_f64_n, double, ladle__store_f64)
#undef STORER
#define STORER ladle__store_i64
STORE_N(store_i64_n, int64_t, ladle__store_i64)
#undef STORER
#define STORER ladle__store_u64
STORE_N(store_u64_n, uint64_t, ladle__store_u64)
#undef STORER

void ladle__convert(void *out, ladle_dtype out_type, const void *in, ladle_dtype in_type,
                    size_t n) {
  const size_t ies = ladle__dtype_bytes(in_type), oes = ladle__dtype_bytes(out_type);
  if (ies == 0 || oes == 0) return;
  if (in_type == out_type) {
    if (out != in) memcpy(out, in, n * ies);
    return;
  }
  union {
    int64_t i[CHUNK];
    uint64_t u[CHUNK];
    double d[CHUNK];
    float f[CHUNK];
  } buf;
  for (size_t done = 0; done < n; done += CHUNK) {
    size_t m = n - done < CHUNK ? n - done : CHUNK;
    const uint8_t *src = (const uint8_t *)in + done * ies;
    uint8_t *dst = (uint8_t *)out + done * oes;
    switch (ladle__dtype_carrier(in_type)) {
      case LADLE__CARRY_F32:
        load_f32_n(buf.f, src, in_type, m);
        store_f32_n(dst, out_type, buf.f, m);
        break;
      case LADLE__CARRY_F64:
        memcpy(buf.d, src, m * sizeof *buf.d);
        store_f64_n(dst, out_type, buf.d, m);
        break;
      case LADLE__CARRY_U64:
        memcpy(buf.u, src, m * sizeof *buf.u);
        store_u64_n(dst, out_type, buf.u, m);
        break;
      default:
        load_i64_n(buf.i, src, in_type, m);
        store_i64_n(dst, out_type, buf.i, m);
        break;
    }
  }
}

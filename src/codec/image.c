/* The format-independent half of the image decoder: sniffing, the decode plan (roi,
 * orientation, DCT scale), colour conversion and oriented row writing. */
#include <stdio.h>
#include <string.h>

#include "codec/image_internal.h"
#include "core/error.h"

static const uint8_t png_signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
static const uint8_t jpeg_signature[3] = {0xff, 0xd8, 0xff};

int ladle__color_channels(ladle__color color) {
  switch (color) {
    case LADLE__COLOR_RGB:
    case LADLE__COLOR_BGR:
      return 3;
    case LADLE__COLOR_GRAY:
      return 1;
  }
  return 0;
}

const char *ladle__image_format_name(ladle__image_format format) {
  switch (format) {
    case LADLE__IMAGE_JPEG:
      return "JPEG";
    case LADLE__IMAGE_PNG:
      return "PNG";
    case LADLE__IMAGE_UNKNOWN:
      break;
  }
  return "unknown";
}

/* Whether data (size bytes, possibly fewer than the signature) starts like sig. */
static int starts_like(const uint8_t *data, size_t size, const uint8_t *sig, size_t sig_size) {
  size_t n = size < sig_size ? size : sig_size;
  return n > 0 && memcmp(data, sig, n) == 0;
}

ladle_status ladle__image_probe(const uint8_t *data, size_t size, const char *name,
                                ladle__image_info *info) {
  ladle_status st = LADLE_OK;
  if (!name) name = "<unnamed>";
  LADLE_CHECK(info != NULL && (data != NULL || size == 0), LADLE_ERROR_INVALID_ARGUMENT,
              "%s: NULL argument", name);
  LADLE_CHECK(size > 0, LADLE_ERROR_CORRUPT_DATA, "%s: empty file (0 bytes)", name);
  if (starts_like(data, size, png_signature, sizeof png_signature)) {
    LADLE_CHECK(size >= sizeof png_signature, LADLE_ERROR_CORRUPT_DATA,
                "%s: truncated PNG signature (%zu bytes)", name, size);
    return ladle__png_probe(data, size, name, info);
  }
  if (starts_like(data, size, jpeg_signature, sizeof jpeg_signature)) {
    LADLE_CHECK(size >= sizeof jpeg_signature, LADLE_ERROR_CORRUPT_DATA,
                "%s: truncated JPEG signature (%zu bytes)", name, size);
    return ladle__jpeg_probe(data, size, name, info);
  }
  {
    char hex[16] = "";
    size_t n = size < 4 ? size : 4, len = 0;
    for (size_t i = 0; i < n; i++)
      len += (size_t)snprintf(hex + len, sizeof hex - len, i ? " %02x" : "%02x", data[i]);
    LADLE_CHECK(0, LADLE_ERROR_UNSUPPORTED, "%s: not a JPEG or PNG image (starts with '%s')", name,
                hex);
  }
done:
  return st;
}

void ladle__decode_params_init(ladle__decode_params *p) {
  memset(p, 0, sizeof *p);
  p->color = LADLE__COLOR_RGB;
  p->apply_orientation = 1;
  p->max_pixels = LADLE__IMAGE_DEFAULT_MAX_PIXELS;
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Scales the full-resolution run [a, b) of an axis of n pixels to s/8 (see image.h). */
static void scale_run(int a, int b, int n, int s, int *first, int *count, int *scaled_n) {
  int64_t lo = (int64_t)a * s / 8, hi = ceil_div((int64_t)b * s, 8);
  *first = (int)lo;
  *count = (int)(hi - lo);
  *scaled_n = (int)ceil_div((int64_t)n * s, 8);
}

ladle_status ladle__image_plan_make(const ladle__image_info *info, const ladle__decode_params *p,
                                    const char *name, ladle__image_plan *plan) {
  ladle_status st = LADLE_OK;
  if (!name) name = "<unnamed>";
  LADLE_CHECK(info != NULL && p != NULL && plan != NULL, LADLE_ERROR_INVALID_ARGUMENT,
              "%s: NULL argument", name);
  LADLE_CHECK(info->format == LADLE__IMAGE_JPEG || info->format == LADLE__IMAGE_PNG,
              LADLE_ERROR_INVALID_ARGUMENT, "%s: info has no known format (%d)", name,
              (int)info->format);
  int sw_full = info->stored_width, sh_full = info->stored_height;
  LADLE_CHECK(sw_full > 0 && sh_full > 0 && info->orientation >= 1 && info->orientation <= 8,
              LADLE_ERROR_INVALID_ARGUMENT, "%s: invalid info (%dx%d, orientation %d)", name,
              sw_full, sh_full, info->orientation);
  int ch = ladle__color_channels(p->color);
  LADLE_CHECK(ch > 0, LADLE_ERROR_INVALID_ARGUMENT, "%s: invalid output colour %d", name,
              (int)p->color);
  int64_t pixels = (int64_t)sw_full * sh_full;
  LADLE_CHECK(p->max_pixels <= 0 || pixels <= p->max_pixels, LADLE_ERROR_LIMIT,
              "%s: %dx%d image has %lld pixels, above the cap of %lld", name, sw_full, sh_full,
              (long long)pixels, (long long)p->max_pixels);
  LADLE_CHECK(p->min_width >= 0 && p->min_height >= 0 && p->force_scale >= 0 && p->force_scale <= 8,
              LADLE_ERROR_INVALID_ARGUMENT, "%s: invalid min size %dx%d or force_scale %d", name,
              p->min_width, p->min_height, p->force_scale);

  memset(plan, 0, sizeof *plan);
  int o = p->apply_orientation ? info->orientation : 1;
  plan->flip_x = o == 2 || o == 3 || o == 7 || o == 8;
  plan->flip_y = o == 3 || o == 4 || o == 6 || o == 7;
  plan->transpose = o >= 5;
  plan->color = p->color;
  plan->out_ch = ch;
  int w = plan->transpose ? sh_full : sw_full, h = plan->transpose ? sw_full : sh_full;

  int rx = 0, ry = 0, rw = w, rh = h;
  if (p->has_roi) {
    rx = p->roi_x, ry = p->roi_y, rw = p->roi_w, rh = p->roi_h;
    LADLE_CHECK(
        rx >= 0 && ry >= 0 && rw >= 1 && rh >= 1 && (int64_t)rx + rw <= w && (int64_t)ry + rh <= h,
        LADLE_ERROR_INVALID_ARGUMENT,
        "%s: roi (x %d, y %d, w %d, h %d) is not inside the %dx%d image", name, rx, ry, rw, rh, w,
        h);
  }
  /* The roi in full-resolution stored coordinates. */
  int ax0 = plan->transpose ? ry : rx, ax1 = plan->transpose ? ry + rh : rx + rw;
  int ay0 = plan->transpose ? rx : ry, ay1 = plan->transpose ? rx + rw : ry + rh;
  if (plan->flip_x) {
    int t = sw_full - ax1;
    ax1 = sw_full - ax0;
    ax0 = t;
  }
  if (plan->flip_y) {
    int t = sh_full - ay1;
    ay1 = sh_full - ay0;
    ay0 = t;
  }

  int s = 8;
  if (info->format == LADLE__IMAGE_JPEG) {
    if (p->force_scale > 0) {
      s = p->force_scale;
    } else if ((p->min_width > 0 || p->min_height > 0) && rw >= 2 * (int64_t)p->min_width &&
               rh >= 2 * (int64_t)p->min_height) {
      for (s = 1; s < 8; s++) {
        int f, cx, cy, n;
        scale_run(ax0, ax1, sw_full, s, &f, &cx, &n);
        scale_run(ay0, ay1, sh_full, s, &f, &cy, &n);
        int dw = plan->transpose ? cy : cx, dh = plan->transpose ? cx : cy;
        if (dw >= p->min_width && dh >= p->min_height) break;
      }
    }
  }
  plan->scale = s;
  scale_run(ax0, ax1, sw_full, s, &plan->sx, &plan->sw, &plan->scaled_w);
  scale_run(ay0, ay1, sh_full, s, &plan->sy, &plan->sh, &plan->scaled_h);
  plan->out_w = plan->transpose ? plan->sh : plan->sw;
  plan->out_h = plan->transpose ? plan->sw : plan->sh;
done:
  return st;
}

ladle_status ladle__image_output_size(const ladle__image_info *info, const ladle__decode_params *p,
                                      const char *name, int *out_width, int *out_height,
                                      int *out_channels) {
  ladle_status st = LADLE_OK;
  ladle__image_plan plan;
  LADLE_TRY(ladle__image_plan_make(info, p, name, &plan));
  if (out_width) *out_width = plan.out_w;
  if (out_height) *out_height = plan.out_h;
  if (out_channels) *out_channels = plan.out_ch;
done:
  return st;
}

ladle_status ladle__image_output_geometry(const ladle__image_info *info,
                                          const ladle__decode_params *p, const char *name,
                                          ladle__image_geometry *g) {
  ladle_status st = LADLE_OK;
  ladle__image_plan plan;
  LADLE_TRY(ladle__image_plan_make(info, p, name, &plan));
  LADLE_CHECK(g != NULL, LADLE_ERROR_INVALID_ARGUMENT, "%s: NULL geometry", name);
  /* Recompute the full-resolution stored roi the plan started from. */
  int tr = plan.transpose;
  int rx = 0, ry = 0, rw = tr ? info->stored_height : info->stored_width;
  int rh = tr ? info->stored_width : info->stored_height;
  if (p->has_roi) rx = p->roi_x, ry = p->roi_y, rw = p->roi_w, rh = p->roi_h;
  double ax0 = tr ? ry : rx, aw = tr ? rh : rw, ay0 = tr ? rx : ry, ah = tr ? rw : rh;
  if (plan.flip_x) ax0 = info->stored_width - ax0 - aw;
  if (plan.flip_y) ay0 = info->stored_height - ay0 - ah;
  double k = plan.scale / 8.0;
  /* The roi inside the decoded stored region, then flipped and transposed like the pixels. */
  double lx0 = ax0 * k - plan.sx, lx1 = (ax0 + aw) * k - plan.sx;
  double ly0 = ay0 * k - plan.sy, ly1 = (ay0 + ah) * k - plan.sy;
  if (plan.flip_x) {
    double t = plan.sw - lx1;
    lx1 = plan.sw - lx0;
    lx0 = t;
  }
  if (plan.flip_y) {
    double t = plan.sh - ly1;
    ly1 = plan.sh - ly0;
    ly0 = t;
  }
  int px = plan.flip_x ? plan.scaled_w - plan.sx - plan.sw : plan.sx;
  int py = plan.flip_y ? plan.scaled_h - plan.sy - plan.sh : plan.sy;
  g->scale = plan.scale;
  g->scaled_width = tr ? plan.scaled_h : plan.scaled_w;
  g->scaled_height = tr ? plan.scaled_w : plan.scaled_h;
  g->x = tr ? py : px;
  g->y = tr ? px : py;
  g->width = plan.out_w;
  g->height = plan.out_h;
  g->channels = plan.out_ch;
  g->roi_x = tr ? ly0 : lx0;
  g->roi_y = tr ? lx0 : ly0;
  g->roi_w = tr ? ly1 - ly0 : lx1 - lx0;
  g->roi_h = tr ? lx1 - lx0 : ly1 - ly0;
done:
  return st;
}

ladle_status ladle__image_decode(const uint8_t *data, size_t size, const char *name,
                                 const ladle__image_info *info, const ladle__decode_params *p,
                                 uint8_t *out) {
  ladle_status st = LADLE_OK;
  ladle__image_plan plan;
  if (!name) name = "<unnamed>";
  LADLE_TRY(ladle__image_plan_make(info, p, name, &plan));
  LADLE_CHECK(data != NULL && out != NULL, LADLE_ERROR_INVALID_ARGUMENT, "%s: NULL argument", name);
  LADLE_CHECK(size > 0, LADLE_ERROR_CORRUPT_DATA, "%s: empty file (0 bytes)", name);
  if (info->format == LADLE__IMAGE_JPEG) {
    LADLE_CHECK(starts_like(data, size, jpeg_signature, sizeof jpeg_signature),
                LADLE_ERROR_INVALID_ARGUMENT, "%s: info says JPEG but the data is not", name);
    return ladle__jpeg_decode(data, size, name, info, &plan, out);
  }
  LADLE_CHECK(starts_like(data, size, png_signature, sizeof png_signature),
              LADLE_ERROR_INVALID_ARGUMENT, "%s: info says PNG but the data is not", name);
  return ladle__png_decode(data, size, name, info, &plan, out);
done:
  return st;
}

/* ------------------------------------------------------------------------ */
/* Rows                                                                      */
/* ------------------------------------------------------------------------ */

int ladle__pixels_channels(ladle__pixels kind) {
  switch (kind) {
    case LADLE__PIXELS_GRAY:
      return 1;
    case LADLE__PIXELS_RGB:
      return 3;
    case LADLE__PIXELS_CMYK:
    case LADLE__PIXELS_CMYK_INVERTED:
      return 4;
  }
  return 0;
}

/* BT.601 luma in 16-bit fixed point, the weights libjpeg uses for RGB -> gray. */
static inline uint8_t luma(unsigned r, unsigned g, unsigned b) {
  return (uint8_t)((19595 * r + 38470 * g + 7471 * b + 32768) >> 16);
}

/* round(v / 255) for 0 <= v <= 65535. */
static inline unsigned div255(unsigned v) { return (v + 128 + ((v + 128) >> 8)) >> 8; }

static inline void put3(uint8_t *d, ladle__color color, unsigned r, unsigned g, unsigned b) {
  if (color == LADLE__COLOR_GRAY) {
    d[0] = luma(r, g, b);
  } else if (color == LADLE__COLOR_BGR) {
    d[0] = (uint8_t)b, d[1] = (uint8_t)g, d[2] = (uint8_t)r;
  } else {
    d[0] = (uint8_t)r, d[1] = (uint8_t)g, d[2] = (uint8_t)b;
  }
}

void ladle__image_convert_row(uint8_t *dst, ladle__color color, const uint8_t *src,
                              ladle__pixels kind, int n) {
  int ch = ladle__color_channels(color);
  switch (kind) {
    case LADLE__PIXELS_GRAY:
      if (ch == 1) {
        memcpy(dst, src, (size_t)n);
      } else {
        for (int i = 0; i < n; i++) dst[3 * i] = dst[3 * i + 1] = dst[3 * i + 2] = src[i];
      }
      break;
    case LADLE__PIXELS_RGB:
      if (color == LADLE__COLOR_RGB) {
        memcpy(dst, src, (size_t)n * 3);
      } else {
        for (int i = 0; i < n; i++, src += 3, dst += ch) put3(dst, color, src[0], src[1], src[2]);
      }
      break;
    case LADLE__PIXELS_CMYK:
      /* R = (1 - C)(1 - K), with C and K the ink amounts. */
      for (int i = 0; i < n; i++, src += 4, dst += ch) {
        unsigned k = 255u - src[3];
        put3(dst, color, div255((255u - src[0]) * k), div255((255u - src[1]) * k),
             div255((255u - src[2]) * k));
      }
      break;
    case LADLE__PIXELS_CMYK_INVERTED:
      /* The stored values are already 255 - ink: R = C' K' / 255. */
      for (int i = 0; i < n; i++, src += 4, dst += ch)
        put3(dst, color, div255(src[0] * (unsigned)src[3]), div255(src[1] * (unsigned)src[3]),
             div255(src[2] * (unsigned)src[3]));
      break;
  }
}

void ladle__image_put_row(const ladle__image_plan *plan, uint8_t *out, int r, const uint8_t *src) {
  const int ch = plan->out_ch, n = plan->sw;
  const int rr = plan->flip_y ? plan->sh - 1 - r : r;
  const size_t stride = (size_t)plan->out_w * (size_t)ch;
  if (!plan->transpose) {
    uint8_t *dst = out + (size_t)rr * stride;
    if (!plan->flip_x) {
      memcpy(dst, src, (size_t)n * (size_t)ch);
    } else if (ch == 3) {
      for (int c = 0; c < n; c++) {
        const uint8_t *s = src + 3 * (size_t)(n - 1 - c);
        dst[3 * c] = s[0], dst[3 * c + 1] = s[1], dst[3 * c + 2] = s[2];
      }
    } else {
      for (int c = 0; c < n; c++) dst[c] = src[n - 1 - c];
    }
    return;
  }
  /* Transposed: stored row rr becomes output column rr, stored column c output row c. */
  uint8_t *dst = out + (size_t)rr * (size_t)ch;
  for (int c = 0; c < n; c++) {
    const uint8_t *s = src + (size_t)(plan->flip_x ? n - 1 - c : c) * (size_t)ch;
    uint8_t *d = dst + (size_t)c * stride;
    if (ch == 3) {
      d[0] = s[0], d[1] = s[1], d[2] = s[2];
    } else {
      d[0] = s[0];
    }
  }
}

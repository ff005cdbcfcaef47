/* What the format back ends (jpeg.c, png.c) share with image.c: the decode plan
 * (region, scale, orientation as flips and a transpose) and the row writers. */
#ifndef LADLE_CODEC_IMAGE_INTERNAL_H
#define LADLE_CODEC_IMAGE_INTERNAL_H

#include "codec/image.h"

/* A decode worked out from info + params. "Stored" coordinates are the file's, at the
 * decode scale; the output is the stored region [sx, sx+sw) x [sy, sy+sh), flipped and
 * transposed as below. */
typedef struct ladle__image_plan {
  int flip_x, flip_y;       /* mirror the stored region's columns / rows ... */
  int transpose;            /* ... then swap x and y (EXIF 5-8) */
  int scale;                /* decode at scale/8 (8: full resolution) */
  int scaled_w, scaled_h;   /* the whole stored image at that scale */
  int sx, sy, sw, sh;       /* the stored region to decode, at that scale */
  int out_w, out_h, out_ch; /* the output */
  ladle__color color;
} ladle__image_plan;

/* Validates info and params (pixel cap, roi) and fills the plan. */
ladle_status ladle__image_plan_make(const ladle__image_info *info, const ladle__decode_params *p,
                                    const char *name, ladle__image_plan *plan);

/* How decoded rows are laid out before conversion to the output colour. */
typedef enum ladle__pixels {
  LADLE__PIXELS_GRAY,         /* 1 byte */
  LADLE__PIXELS_RGB,          /* 3 bytes */
  LADLE__PIXELS_CMYK,         /* 4 bytes, ink amounts (255 = full ink) */
  LADLE__PIXELS_CMYK_INVERTED /* 4 bytes, 255 - ink, as Adobe/Photoshop store CMYK JPEGs */
} ladle__pixels;

int ladle__pixels_channels(ladle__pixels kind);

/* Converts n pixels from `kind` to the output colour. */
void ladle__image_convert_row(uint8_t *dst, ladle__color color, const uint8_t *src,
                              ladle__pixels kind, int n);

/* Writes row r (0 <= r < plan->sh) of the stored region, plan->sw pixels already in the
 * output colour, to where the plan's flips and transpose put it in `out`. */
void ladle__image_put_row(const ladle__image_plan *plan, uint8_t *out, int r, const uint8_t *src);

/* The EXIF orientation (1..8) in an APP1 payload that starts with "Exif\0\0"; 1 when
 * the block is not EXIF, malformed, or has no valid orientation tag. Bounds-checked. */
int ladle__exif_orientation(const uint8_t *data, size_t size);

/* The format back ends. `name` is never NULL here. */
ladle_status ladle__jpeg_probe(const uint8_t *data, size_t size, const char *name,
                               ladle__image_info *info);
ladle_status ladle__jpeg_decode(const uint8_t *data, size_t size, const char *name,
                                const ladle__image_info *info, const ladle__image_plan *plan,
                                uint8_t *out);
ladle_status ladle__png_probe(const uint8_t *data, size_t size, const char *name,
                              ladle__image_info *info);
ladle_status ladle__png_decode(const uint8_t *data, size_t size, const char *name,
                               const ladle__image_info *info, const ladle__image_plan *plan,
                               uint8_t *out);

#endif

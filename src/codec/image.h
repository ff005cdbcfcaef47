/* The CPU image decoder: format sniffing, header probing and decoding of JPEG
 * (libjpeg-turbo, libjpeg API) and PNG (libpng 1.6) into HWC uint8 buffers, with
 * EXIF orientation, region-of-interest decoding and reduced-scale JPEG decoding. */
#ifndef LADLE_CODEC_IMAGE_H
#define LADLE_CODEC_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "ladle/ladle.h"

/*
 * Conventions for every function below:
 *  - `data`/`size` is the whole encoded file; it is only read, never kept.
 *  - `name` (the file path or record name; NULL is taken as "<unnamed>") appears
 *    in every error message, after the function name:
 *      "ladle__image_decode: train/x.JPEG: JPEG data is corrupt: ...".
 *  - Errors: LADLE_ERROR_CORRUPT_DATA (empty, truncated or garbled data),
 *    LADLE_ERROR_UNSUPPORTED (not a JPEG or PNG; 12-bit or lossless JPEG ...),
 *    LADLE_ERROR_LIMIT (the pixel cap), LADLE_ERROR_INVALID_ARGUMENT (bad params,
 *    an roi outside the image, an `info` that does not match the data),
 *    LADLE_ERROR_OUT_OF_MEMORY.
 *  - Thread-safe: any number of threads may probe/decode different (or the same)
 *    buffers at once; nothing global is written.
 */

typedef enum ladle__image_format {
  LADLE__IMAGE_UNKNOWN = 0,
  LADLE__IMAGE_JPEG,
  LADLE__IMAGE_PNG
} ladle__image_format;

typedef enum ladle__color {
  LADLE__COLOR_RGB = 0,
  LADLE__COLOR_BGR = 1,
  LADLE__COLOR_GRAY = 2 /* luma Y = 0.299 R + 0.587 G + 0.114 B (JPEG: the Y channel) */
} ladle__color;

/* Channels of an output colour: 3, 3, 1 (0 for an invalid value). */
int ladle__color_channels(ladle__color color);

/* "JPEG", "PNG" or "unknown". Static. */
const char *ladle__image_format_name(ladle__image_format format);

typedef struct ladle__image_info {
  ladle__image_format format;
  int width, height;               /* as displayed: after the EXIF orientation is applied */
  int stored_width, stored_height; /* as coded in the file */
  int components;         /* in the file: 1 gray, 3 colour, 4 CMYK/YCCK (PNG: 1-4 incl. alpha;
                             palette counts 3) */
  int orientation;        /* EXIF orientation 1..8 (1 when absent, invalid, or for PNG) */
  int progressive;        /* JPEG only: progressive (SOF2/SOF10) */
  int chroma_subsampling; /* JPEG: 444, 422, 420, 440, 411, 0 gray, -1 other; PNG 0 */
} ladle__image_info;

/* Sniffs the format from the bytes (never the file name: a PNG named .JPEG is a PNG)
 * and parses the header only (JPEG: up to the first scan; PNG: up to the first IDAT).
 * Errors: LADLE_ERROR_CORRUPT_DATA for empty/truncated/garbled headers (also a buffer
 * shorter than a signature it starts like), LADLE_ERROR_UNSUPPORTED for a non-image
 * ("not a JPEG or PNG image (starts with 'xx xx xx xx')"). */
ladle_status ladle__image_probe(const uint8_t *data, size_t size, const char *name,
                                ladle__image_info *info);

/* The default cap: 512 million pixels (512e6). */
#define LADLE__IMAGE_DEFAULT_MAX_PIXELS ((int64_t)512 * 1000 * 1000)

typedef struct ladle__decode_params {
  ladle__color color;    /* output colour */
  int apply_orientation; /* 1 (default): apply EXIF orientation; 0: output the stored image */
  int64_t max_pixels;    /* refuse images with stored_width*stored_height above this
                            (LADLE_ERROR_LIMIT), before any allocation; <= 0: no cap */
  int has_roi;           /* 0: whole image */
  int roi_x, roi_y, roi_w, roi_h; /* region to keep, in displayed (oriented) coordinates; must lie
                                     inside the image, w and h >= 1 */
  int min_width, min_height; /* 0: output the region at full resolution. Else the decoder MAY decode
                                at a reduced DCT scale s/8 as long as the output stays at least
                                min_width x min_height (JPEG only; see "Scaling" below) */
  int force_scale;           /* 0 (default): scale chosen from min_width/min_height. 1..8: decode a
                                JPEG at exactly force_scale/8 (tests, benchmarks); PNG ignores it */
} ladle__decode_params;

/* RGB, orientation on, max_pixels = LADLE__IMAGE_DEFAULT_MAX_PIXELS, no roi, no scaling. */
void ladle__decode_params_init(ladle__decode_params *p);

/*
 * Scaling (JPEG only). With min_width > 0 or min_height > 0, and an roi (the whole
 * image without one) of at least 2*min_width x 2*min_height, the decode runs at the
 * smallest s/8, s in 1..8, whose output (computed as below) is at least
 * min_width x min_height; since s = 4 always qualifies, s ends up in 1..4. Otherwise
 * s = 8 (full resolution). Sizes at scale s, per stored axis (before orientation):
 *   - the whole image is ceil(n*s/8) pixels long (libjpeg's own rule);
 *   - the roi [a, b) (full-resolution stored coordinates) becomes the scaled pixels
 *     [floor(a*s/8), ceil(b*s/8)): the smallest run of scaled pixels covering it.
 *     Scaled pixel i covers full-resolution [8i/s, 8(i+1)/s), so the output may extend
 *     less than one scaled pixel beyond the requested roi on each side;
 *     ladle__image_output_geometry gives the exact requested roi inside the output.
 * The output is that scaled region, oriented (width and height swap for EXIF 5-8).
 */

/* The size the decode will produce for these params (deterministic, cheap: no decoding,
 * given `info` from ladle__image_probe). Checks the pixel cap and the roi. */
ladle_status ladle__image_output_size(const ladle__image_info *info, const ladle__decode_params *p,
                                      const char *name, int *out_width, int *out_height,
                                      int *out_channels);

/* Where the output lies, for callers that resize or crop it further. */
typedef struct ladle__image_geometry {
  int scale;                         /* the decode runs at scale/8 (8: full resolution) */
  int scaled_width, scaled_height;   /* the whole displayed image at that scale */
  int x, y, width, height;           /* the output is this region of the scaled displayed image */
  int channels;                      /* of the output */
  double roi_x, roi_y, roi_w, roi_h; /* the requested roi in output pixel coordinates: (0, 0,
                                        width, height) at scale 8, a sub-pixel-exact window
                                        inside the output when scaled */
} ladle__image_geometry;

ladle_status ladle__image_output_geometry(const ladle__image_info *info,
                                          const ladle__decode_params *p, const char *name,
                                          ladle__image_geometry *geometry);

/*
 * Decodes into out (out_height rows of out_width*out_channels bytes, HWC uint8, tightly
 * packed), the exact size that ladle__image_output_size reported for the same info and
 * params. `info` must come from ladle__image_probe on the same bytes (checked against
 * the header: LADLE_ERROR_INVALID_ARGUMENT if it does not match).
 *
 * Data that ends early or is garbled where the output needs it is an error
 * (LADLE_ERROR_CORRUPT_DATA), never a partly grey image: libjpeg's "premature end of
 * data segment", missing-restart-marker and bad-code warnings, a progressive JPEG
 * whose scans stop before every coefficient bit arrived, a PNG whose data stops. Data
 * the output does not need is not required: rows below an roi (JPEG, except
 * progressive/multi-scan files, which are read whole; PNG) are never read, and a
 * missing EOI/IEND after complete pixel data is fine, except in sequential multi-scan
 * and arithmetic-coded JPEGs, where running out cannot be told from a cut. Other
 * libjpeg warnings (extraneous bytes, bad ICC marker ...) are ignored, as PIL does.
 * On error `out` holds unspecified bytes.
 *
 * Memory: libjpeg/libpng allocate their own working state per call (libjpeg: about
 * one iMCU row of the image, the whole coefficient array for progressive or
 * multi-scan JPEGs; libpng: its row buffers and zlib state). Besides that this
 * function mallocs at most one scratch block per call: JPEG, one decoded row (plus
 * one converted row for CMYK), none when rows go straight into `out` (no roi columns
 * to cut, no CMYK, EXIF orientation 1 or 4); PNG, one row (none for whole-width rows
 * straight into `out`), or for interlaced PNGs (roi height + 1) stored rows of
 * width * (1 or 3) bytes (none for a whole image that needs no colour -> gray
 * conversion). Thread-safe.
 */
ladle_status ladle__image_decode(const uint8_t *data, size_t size, const char *name,
                                 const ladle__image_info *info, const ladle__decode_params *p,
                                 uint8_t *out);

#endif

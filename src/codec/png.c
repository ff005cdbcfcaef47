/* PNG probing and decoding through libpng 1.6: every colour type and bit depth,
 * interlaced or not, reduced to 8-bit gray or RGB (alpha dropped), then to the
 * output colour and region. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <png.h>

#include "codec/image_internal.h"
#include "core/error.h"

/* LADLE_CHECK for the work functions below, naming the entry point they serve
 * rather than themselves. */
#define WORK_CHECK(cond, status, ...)                                    \
  do {                                                                   \
    if (!(cond)) {                                                       \
      st = ladle__set_error((status), "ladle__png_decode", __VA_ARGS__); \
      goto done;                                                         \
    }                                                                    \
  } while (0)

typedef struct png_job {
  png_structp png;
  png_infop info;
  const uint8_t *data;
  size_t size, pos;
  int ran_out;         /* libpng asked for bytes past the end */
  ladle_status status; /* what the longjmp means */
  char message[256];
  uint8_t *scratch; /* freed by the caller, also after a longjmp */
} png_job;

/* libpng calls this for every error; returning would make it print and abort, so
 * jump back to run_guarded. */
static void on_png_error(png_structp png, png_const_charp msg) {
  png_job *job = png_get_error_ptr(png);
  snprintf(job->message, sizeof job->message, "%s", msg ? msg : "unknown error");
  job->status =
      strstr(job->message, "memory") ? LADLE_ERROR_OUT_OF_MEMORY : LADLE_ERROR_CORRUPT_DATA;
  png_longjmp(png, 1);
}

static void on_png_warning(png_structp png, png_const_charp msg) {
  (void)png;
  (void)msg;
}

static void on_png_read(png_structp png, png_bytep out, size_t n) {
  png_job *job = png_get_io_ptr(png);
  if (n > job->size - job->pos) {
    job->ran_out = 1;
    png_error(png, "unexpected end of data");
  }
  memcpy(out, job->data + job->pos, n);
  job->pos += n;
}

static ladle_status job_open(png_job *job, const uint8_t *data, size_t size, const char *func,
                             const char *name) {
  memset(job, 0, sizeof *job);
  job->data = data;
  job->size = size;
  job->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, job, on_png_error, on_png_warning);
  if (job->png) job->info = png_create_info_struct(job->png);
  if (!job->png || !job->info)
    return ladle__set_error(LADLE_ERROR_OUT_OF_MEMORY, func, "%s: cannot create the PNG decoder",
                            name);
  return LADLE_OK;
}

static void job_close(png_job *job) {
  if (job->png) png_destroy_read_struct(&job->png, job->info ? &job->info : NULL, NULL);
  free(job->scratch);
  job->scratch = NULL;
}

typedef ladle_status (*png_work)(png_job *job, void *arg);

/* Runs work under libpng's setjmp: 1 when libpng jumped out (job->message set),
 * else 0 and *st is what work returned. */
static int run_guarded(png_job *job, png_work work, void *arg, ladle_status *st) {
  if (setjmp(png_jmpbuf(job->png))) return 1;
  *st = work(job, arg);
  return 0;
}

static ladle_status jump_error(const png_job *job, const char *func, const char *name) {
  return ladle__set_error(
      job->status, func, "%s: %s PNG (libpng: %s)%s", name,
      job->status == LADLE_ERROR_OUT_OF_MEMORY ? "out of memory decoding" : "corrupt or truncated",
      job->message, job->ran_out ? "; the data ends early (truncated file?)" : "");
}

/* Reads up to the first IDAT; our pixel cap does the limiting, not libpng's. */
static void read_header(png_job *job) {
  png_set_user_limits(job->png, 0x7fffffff, 0x7fffffff);
  png_set_read_fn(job->png, job, on_png_read);
  png_read_info(job->png, job->info);
}

/* ------------------------------------------------------------------------ */
/* Probe                                                                     */
/* ------------------------------------------------------------------------ */

static ladle_status probe_work(png_job *job, void *arg) {
  ladle__image_info *info = arg;
  read_header(job);
  png_uint_32 w = 0, h = 0;
  int depth = 0, type = 0;
  png_get_IHDR(job->png, job->info, &w, &h, &depth, &type, NULL, NULL, NULL);
  memset(info, 0, sizeof *info);
  info->format = LADLE__IMAGE_PNG;
  info->width = info->stored_width = (int)w;
  info->height = info->stored_height = (int)h;
  info->components = type == PNG_COLOR_TYPE_GRAY         ? 1
                     : type == PNG_COLOR_TYPE_GRAY_ALPHA ? 2
                     : type == PNG_COLOR_TYPE_RGB_ALPHA  ? 4
                                                         : 3; /* RGB, palette */
  info->orientation = 1;
  return LADLE_OK;
}

ladle_status ladle__png_probe(const uint8_t *data, size_t size, const char *name,
                              ladle__image_info *info) {
  ladle_status st = LADLE_OK;
  png_job job;
  ladle__image_info found;
  st = job_open(&job, data, size, __func__, name);
  if (st == LADLE_OK) {
    if (run_guarded(&job, probe_work, &found, &st))
      st = jump_error(&job, __func__, name);
    else if (st == LADLE_OK)
      *info = found;
  }
  job_close(&job);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Decode                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct decode_args {
  const char *name;
  const ladle__image_info *info;
  const ladle__image_plan *plan;
  uint8_t *out;
} decode_args;

/* Palette indices -> RGB (or BGR). libpng's own expansion turns indices past
 * the palette into black and says so only in png_read_end, which we skip (the
 * rows after the region are never read): ours refuses them. Returns the first
 * such index, or -1. */
static int expand_palette(uint8_t *dst, const uint8_t *index, int n, const png_color *palette,
                          int entries, int bgr) {
  for (int i = 0; i < n; i++, dst += 3) {
    if (index[i] >= entries) return index[i];
    const png_color c = palette[index[i]];
    dst[0] = bgr ? c.blue : c.red;
    dst[1] = c.green;
    dst[2] = bgr ? c.red : c.blue;
  }
  return -1;
}

static ladle_status decode_work(png_job *job, void *arg) {
  ladle_status st = LADLE_OK;
  decode_args *a = arg;
  const ladle__image_plan *plan = a->plan;
  const char *name = a->name;
  png_structp png = job->png;
  read_header(job);
  png_uint_32 w = 0, h = 0;
  int depth = 0, type = 0;
  png_get_IHDR(png, job->info, &w, &h, &depth, &type, NULL, NULL, NULL);
  WORK_CHECK((int)w == a->info->stored_width && (int)h == a->info->stored_height,
             LADLE_ERROR_INVALID_ARGUMENT, "%s: info (%dx%d) does not match the PNG header (%ux%u)",
             name, a->info->stored_width, a->info->stored_height, (unsigned)w, (unsigned)h);

  /* Everything becomes 8-bit gray or RGB: 16-bit keeps its high byte, palettes and
   * low bit depths expand, alpha (and tRNS, never expanded) is dropped. libpng also
   * does gray -> RGB and RGB -> BGR; only colour -> gray is ours (BT.601 luma, as
   * for JPEG, rather than libpng's gamma-aware weights). */
  const int colour = (type & PNG_COLOR_MASK_COLOR) != 0;
  const int paletted = type == PNG_COLOR_TYPE_PALETTE; /* rows of indices, expanded by us */
  png_colorp palette = NULL;
  int entries = 0;
  if (paletted) {
    png_get_PLTE(png, job->info, &palette, &entries);
    png_set_packing(png); /* one byte per index */
  }
  if (depth == 16) png_set_strip_16(png);
  if (type == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  /* A palette with tRNS expands to RGBA: strip that alpha too. */
  if ((type & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, job->info, PNG_INFO_tRNS))
    png_set_strip_alpha(png);
  if (plan->color != LADLE__COLOR_GRAY) {
    if (!colour) png_set_gray_to_rgb(png);
    if (plan->color == LADLE__COLOR_BGR && !paletted) png_set_bgr(png);
  }
  const int passes = png_set_interlace_handling(png);
  png_read_update_info(png, job->info);
  const int ch = png_get_channels(png, job->info);
  const size_t row_bytes = png_get_rowbytes(png, job->info);
  WORK_CHECK((ch == 1 || ch == 3) && row_bytes == (size_t)w * (size_t)ch, LADLE_ERROR_INTERNAL,
             "%s: unexpected PNG rows after transforms (%d channels, %zu bytes)", name, ch,
             row_bytes);
  const int src_ch = paletted ? 3 : ch;       /* channels of a row as the plan takes it */
  const int convert = src_ch != plan->out_ch; /* colour PNG, gray output */
  const int bgr = plan->color == LADLE__COLOR_BGR;
  const size_t out_stride = (size_t)plan->out_w * (size_t)plan->out_ch;
  const size_t rgb_bytes = paletted ? (size_t)w * 3 : 0; /* one expanded row */
  const int direct = !paletted && !convert && !plan->flip_x && !plan->transpose && plan->sx == 0 &&
                     plan->sw == (int)w;
  const int y0 = plan->sy, y1 = plan->sy + plan->sh;

  if (passes == 1) {
    /* Row by row down to the region's last row; the rest is never inflated. */
    size_t bytes = row_bytes + rgb_bytes + (convert ? (size_t)plan->sw * (size_t)plan->out_ch : 0);
    if (!direct || y0 > 0) {
      job->scratch = malloc(bytes);
      WORK_CHECK(job->scratch != NULL, LADLE_ERROR_OUT_OF_MEMORY, "%s: cannot allocate %zu bytes",
                 name, bytes);
    }
    for (int y = 0; y < y1; y++) {
      int r = y - y0;
      png_bytep row = direct && r >= 0
                          ? a->out + (size_t)(plan->flip_y ? plan->sh - 1 - r : r) * out_stride
                          : job->scratch;
      png_read_row(png, row, NULL);
      if (direct || r < 0) continue;
      const uint8_t *line = job->scratch;
      if (paletted) {
        int bad = expand_palette(job->scratch + row_bytes, line, (int)w, palette, entries, bgr);
        WORK_CHECK(bad < 0, LADLE_ERROR_CORRUPT_DATA,
                   "%s: corrupt PNG: palette index %d in row %d past the palette's %d entries", name,
                   bad, y, entries);
        line = job->scratch + row_bytes;
      }
      const uint8_t *src = line + (size_t)plan->sx * (size_t)src_ch;
      if (convert) {
        uint8_t *converted = job->scratch + row_bytes + rgb_bytes;
        ladle__image_convert_row(converted, plan->color, src, LADLE__PIXELS_RGB, plan->sw);
        src = converted;
      }
      ladle__image_put_row(plan, a->out, r, src);
    }
    goto done;
  }

  /* Interlaced: each of the 7 passes touches every row, so the region's rows stay in
   * memory until the last pass (rows outside it share one throw-away row). */
  if (direct && y0 == 0 && plan->sh == (int)h && !plan->flip_y) {
    for (int pass = 0; pass < passes; pass++)
      for (int y = 0; y < (int)h; y++) png_read_row(png, a->out + (size_t)y * out_stride, NULL);
    goto done;
  }
  size_t bytes = row_bytes * ((size_t)plan->sh + 1) + rgb_bytes +
                 (convert ? (size_t)plan->sw * (size_t)plan->out_ch : 0);
  job->scratch = malloc(bytes);
  WORK_CHECK(job->scratch != NULL, LADLE_ERROR_OUT_OF_MEMORY, "%s: cannot allocate %zu bytes", name,
             bytes);
  uint8_t *trash = job->scratch + row_bytes * (size_t)plan->sh;
  uint8_t *rgb = trash + row_bytes;
  uint8_t *converted = rgb + rgb_bytes;
  for (int pass = 0; pass < passes; pass++)
    for (int y = 0; y < (int)h; y++)
      png_read_row(png, y >= y0 && y < y1 ? job->scratch + (size_t)(y - y0) * row_bytes : trash,
                   NULL);
  for (int r = 0; r < plan->sh; r++) {
    const uint8_t *line = job->scratch + (size_t)r * row_bytes;
    if (paletted) {
      int bad = expand_palette(rgb, line, (int)w, palette, entries, bgr);
      WORK_CHECK(bad < 0, LADLE_ERROR_CORRUPT_DATA,
                 "%s: corrupt PNG: palette index %d in row %d past the palette's %d entries", name,
                 bad, y0 + r, entries);
      line = rgb;
    }
    const uint8_t *src = line + (size_t)plan->sx * (size_t)src_ch;
    if (convert) {
      ladle__image_convert_row(converted, plan->color, src, LADLE__PIXELS_RGB, plan->sw);
      src = converted;
    }
    ladle__image_put_row(plan, a->out, r, src);
  }
done:
  return st;
}

ladle_status ladle__png_decode(const uint8_t *data, size_t size, const char *name,
                               const ladle__image_info *info, const ladle__image_plan *plan,
                               uint8_t *out) {
  ladle_status st = LADLE_OK;
  png_job job;
  decode_args a = {name, info, plan, out};
  st = job_open(&job, data, size, __func__, name);
  if (st == LADLE_OK && run_guarded(&job, decode_work, &a, &st))
    st = jump_error(&job, __func__, name);
  job_close(&job);
  return st;
}

/* JPEG probing and decoding through libjpeg-turbo's libjpeg API: EXIF orientation,
 * cropped (jpeg_crop_scanline) and skipped (jpeg_skip_scanlines) decoding, DCT
 * scaling, CMYK/YCCK, and truncation turned into errors instead of grey pixels. */
#include <setjmp.h>
#include <stdio.h> /* jpeglib.h needs FILE and size_t */
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

#include <jerror.h> /* after jpeglib.h: its message list depends on jconfig.h */

#include "codec/image_internal.h"
#include "core/error.h"

/* LADLE_CHECK for the work functions below, naming the entry point they serve
 * rather than themselves. */
#define WORK_CHECK(cond, status, ...)                                     \
  do {                                                                    \
    if (!(cond)) {                                                        \
      st = ladle__set_error((status), "ladle__jpeg_decode", __VA_ARGS__); \
      goto done;                                                          \
    }                                                                     \
  } while (0)

/* A hostile progressive file can have thousands of tiny scans, each a full pass over
 * the coefficient buffer; real encoders write about 10. */
#define SCAN_LIMIT 500

/* Columns decoded beyond each side of a crop: libjpeg's "fancy" chroma upsampling
 * treats the edges of a cropped row like image edges, so the outermost column on
 * each side can differ from a full decode (libjpeg.txt, "Partial image
 * decompression"); we decode a little more and keep the exact columns. */
#define CROP_MARGIN 2

/* One decode or probe: libjpeg's state and our hooks, reachable from the callbacks
 * through cinfo.client_data. Lives on the caller's stack. */
typedef struct jpeg_job {
  struct jpeg_decompress_struct cinfo;
  struct jpeg_error_mgr err;
  struct jpeg_source_mgr src;
  struct jpeg_progress_mgr progress;
  jmp_buf jump;
  int ran_out;         /* libjpeg asked for bytes past the end of the buffer */
  ladle_status status; /* what the longjmp means */
  char message[JMSG_LENGTH_MAX];
  uint8_t *scratch; /* freed by the caller, also after a longjmp */
} jpeg_job;

static ladle_status status_of(int code) {
  switch (code) {
    case JERR_OUT_OF_MEMORY:
      return LADLE_ERROR_OUT_OF_MEMORY;
#if JPEG_LIB_VERSION < 70 /* the libjpeg v6b API; v7/v8 emulation drops this code */
    case JERR_ARITH_NOTIMPL:
#endif
    case JERR_BAD_PRECISION:
    case JERR_CONVERSION_NOTIMPL:
    case JERR_FRACT_SAMPLE_NOTIMPL:
    case JERR_NOT_COMPILED:
    case JERR_NOTIMPL:
    case JERR_SOF_UNSUPPORTED:
      return LADLE_ERROR_UNSUPPORTED;
    case JERR_IMAGE_TOO_BIG:
      return LADLE_ERROR_LIMIT;
    case JERR_BAD_STATE:
    case JERR_BAD_CROP_SPEC:
    case JERR_WIDTH_OVERFLOW:
      return LADLE_ERROR_INTERNAL;
    default:
      return LADLE_ERROR_CORRUPT_DATA;
  }
}

static void on_error_exit(j_common_ptr c) {
  jpeg_job *job = c->client_data;
  (*c->err->format_message)(c, job->message);
  job->status = status_of(c->err->msg_code);
  longjmp(job->jump, 1);
}

/* Warnings are silent, except those that mean pixels were lost: the entropy data
 * ended (truncation, or a marker where data should be), a restart marker is
 * missing, or a code does not decode. libjpeg would fill the rest with grey. */
static void on_emit_message(j_common_ptr c, int level) {
  if (level >= 0) return; /* trace messages */
  c->err->num_warnings++;
  switch (c->err->msg_code) {
    case JWRN_HIT_MARKER:
    case JWRN_MUST_RESYNC:
    case JWRN_HUFF_BAD_CODE:
#if JPEG_LIB_VERSION >= 70 || defined(C_ARITH_CODING_SUPPORTED) || defined(D_ARITH_CODING_SUPPORTED)
    case JWRN_ARITH_BAD_CODE:
#endif
    {
      jpeg_job *job = c->client_data;
      (*c->err->format_message)(c, job->message);
      job->status = LADLE_ERROR_CORRUPT_DATA;
      longjmp(job->jump, 1);
    }
    default:
      break;
  }
}

static void on_output_message(j_common_ptr c) { (void)c; }

static void on_progress(j_common_ptr c) {
  if (!c->is_decompressor) return;
  j_decompress_ptr d = (j_decompress_ptr)c;
  if (d->input_scan_number > SCAN_LIMIT) {
    jpeg_job *job = c->client_data;
    snprintf(job->message, sizeof job->message, "more than %d scans", SCAN_LIMIT);
    job->status = LADLE_ERROR_LIMIT;
    longjmp(job->jump, 1);
  }
}

/* The memory source. Unlike jpeg_mem_src it does not warn when the data runs out
 * (we decide afterwards whether anything was lost); like it, it then supplies a fake
 * EOI so that libjpeg stops instead of waiting for more. */
static void src_init(j_decompress_ptr c) { (void)c; }
static void src_term(j_decompress_ptr c) { (void)c; }

static boolean src_fill(j_decompress_ptr c) {
  static const JOCTET eoi[2] = {0xff, JPEG_EOI};
  jpeg_job *job = c->client_data;
  job->ran_out = 1;
  c->src->next_input_byte = eoi;
  c->src->bytes_in_buffer = sizeof eoi;
  return TRUE;
}

static void src_skip(j_decompress_ptr c, long n) {
  if (n <= 0) return;
  if ((size_t)n > c->src->bytes_in_buffer) {
    src_fill(c);
    return;
  }
  c->src->next_input_byte += n;
  c->src->bytes_in_buffer -= (size_t)n;
}

static void job_init(jpeg_job *job) {
  memset(job, 0, sizeof *job);
  job->cinfo.err = jpeg_std_error(&job->err);
  job->err.error_exit = on_error_exit;
  job->err.emit_message = on_emit_message;
  job->err.output_message = on_output_message;
  job->cinfo.client_data = job;
  job->progress.progress_monitor = on_progress;
  job->status = LADLE_OK;
}

/* Creates the decompressor on data; must run under the job's setjmp. */
static void job_open(jpeg_job *job, const uint8_t *data, size_t size) {
  jpeg_create_decompress(&job->cinfo);
  job->src.init_source = src_init;
  job->src.fill_input_buffer = src_fill;
  job->src.skip_input_data = src_skip;
  job->src.resync_to_restart = jpeg_resync_to_restart;
  job->src.term_source = src_term;
  job->src.next_input_byte = data;
  job->src.bytes_in_buffer = size;
  job->cinfo.src = &job->src;
  job->cinfo.progress = &job->progress;
}

static void job_close(jpeg_job *job) {
  jpeg_destroy_decompress(&job->cinfo);
  free(job->scratch);
  job->scratch = NULL;
}

typedef ladle_status (*jpeg_work)(jpeg_job *job, void *arg);

/* Runs work under setjmp: returns 1 when libjpeg (or a hook) jumped out, with
 * job->status and job->message set; else 0 and *st is what work returned. Kept
 * apart so that no local of the working function lives across the longjmp. */
static int run_guarded(jpeg_job *job, jpeg_work work, void *arg, ladle_status *st) {
  if (setjmp(job->jump)) return 1;
  *st = work(job, arg);
  return 0;
}

/* The message after a longjmp, with the same prefix LADLE_FAIL gives. */
static ladle_status jump_error(const jpeg_job *job, const char *func, const char *name) {
  const char *what = job->status == LADLE_ERROR_UNSUPPORTED    ? "unsupported JPEG"
                     : job->status == LADLE_ERROR_LIMIT        ? "JPEG over a limit"
                     : job->status == LADLE_ERROR_CORRUPT_DATA ? "corrupt or truncated JPEG"
                                                               : "JPEG decoding failed";
  return ladle__set_error(job->status, func, "%s: %s (libjpeg: %s)%s", name, what, job->message,
                          job->ran_out ? "; the data ends early (truncated file?)" : "");
}

/* ------------------------------------------------------------------------ */
/* Probe                                                                     */
/* ------------------------------------------------------------------------ */

static int subsampling_of(j_decompress_ptr c) {
  int n = c->num_components;
  const jpeg_component_info *k = c->comp_info;
  if (n == 1) return 0;
  if (n < 3) return -1;
  if (k[1].h_samp_factor != k[2].h_samp_factor || k[1].v_samp_factor != k[2].v_samp_factor)
    return -1;
  if (n == 4 &&
      (k[3].h_samp_factor != k[0].h_samp_factor || k[3].v_samp_factor != k[0].v_samp_factor))
    return -1;
  if (k[0].h_samp_factor % k[1].h_samp_factor || k[0].v_samp_factor % k[1].v_samp_factor) return -1;
  int h = k[0].h_samp_factor / k[1].h_samp_factor, v = k[0].v_samp_factor / k[1].v_samp_factor;
  if (h == 1 && v == 1) return 444;
  if (h == 2 && v == 1) return 422;
  if (h == 2 && v == 2) return 420;
  if (h == 1 && v == 2) return 440;
  if (h == 4 && v == 1) return 411;
  return -1;
}

typedef struct probe_args {
  const uint8_t *data;
  size_t size;
  ladle__image_info *info;
} probe_args;

static ladle_status probe_work(jpeg_job *job, void *arg) {
  probe_args *a = arg;
  j_decompress_ptr c = &job->cinfo;
  job_open(job, a->data, a->size);
  jpeg_save_markers(c, JPEG_APP0 + 1, 0xffff);
  jpeg_read_header(c, TRUE);

  ladle__image_info *info = a->info;
  memset(info, 0, sizeof *info);
  info->format = LADLE__IMAGE_JPEG;
  info->stored_width = (int)c->image_width;
  info->stored_height = (int)c->image_height;
  info->components = c->num_components;
  info->progressive = c->progressive_mode ? 1 : 0;
  info->chroma_subsampling = subsampling_of(c);
  info->orientation = 1;
  for (jpeg_saved_marker_ptr m = c->marker_list; m; m = m->next) {
    if (m->marker == JPEG_APP0 + 1 && m->data_length >= 6 && memcmp(m->data, "Exif\0\0", 6) == 0) {
      info->orientation = ladle__exif_orientation(m->data, m->data_length);
      break;
    }
  }
  int swap = info->orientation >= 5;
  info->width = swap ? info->stored_height : info->stored_width;
  info->height = swap ? info->stored_width : info->stored_height;
  return LADLE_OK;
}

ladle_status ladle__jpeg_probe(const uint8_t *data, size_t size, const char *name,
                               ladle__image_info *info) {
  ladle_status st = LADLE_OK;
  jpeg_job job;
  ladle__image_info found;
  probe_args a = {data, size, &found};
  job_init(&job);
  if (run_guarded(&job, probe_work, &a, &st)) {
    st = jump_error(&job, __func__, name);
  } else if (st == LADLE_OK) {
    *info = found;
  }
  job_close(&job);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Decode                                                                    */
/* ------------------------------------------------------------------------ */

/* Whether every coefficient bit of a progressive image arrived (each coef_bits entry
 * is the Al still missing, -1 for never sent, 0 when complete). */
static int progressive_complete(j_decompress_ptr c) {
  if (!c->coef_bits) return 0;
  for (int ci = 0; ci < c->num_components; ci++)
    for (int k = 0; k < DCTSIZE2; k++)
      if (c->coef_bits[ci][k] != 0) return 0;
  return 1;
}

typedef struct decode_args {
  const uint8_t *data;
  size_t size;
  const char *name;
  const ladle__image_info *info;
  const ladle__image_plan *plan;
  uint8_t *out;
} decode_args;

static ladle_status decode_work(jpeg_job *job, void *arg) {
  ladle_status st = LADLE_OK;
  decode_args *a = arg;
  const ladle__image_plan *plan = a->plan;
  const char *name = a->name;
  j_decompress_ptr c = &job->cinfo;
  job_open(job, a->data, a->size);
  jpeg_read_header(c, TRUE);
  WORK_CHECK((int)c->image_width == a->info->stored_width &&
                 (int)c->image_height == a->info->stored_height,
             LADLE_ERROR_INVALID_ARGUMENT,
             "%s: info (%dx%d) does not match the JPEG header (%ux%u)", name, a->info->stored_width,
             a->info->stored_height, c->image_width, c->image_height);

  /* libjpeg converts YCbCr, RGB and gray straight to the output colour (gray output
   * from YCbCr is its Y channel: the chroma skips the IDCT). It has no CMYK -> RGB:
   * we take CMYK (YCCK turned into CMYK by libjpeg) and convert it ourselves.
   * Photoshop writes CMYK inverted (255 = no ink) and marks it with an Adobe APP14
   * marker, whose transform says CMYK (0) or YCCK (2); without that marker we take
   * the values as plain ink amounts. */
  int convert = c->jpeg_color_space == JCS_CMYK || c->jpeg_color_space == JCS_YCCK;
  ladle__pixels kind = LADLE__PIXELS_RGB;
  if (convert) {
    c->out_color_space = JCS_CMYK;
    kind = c->saw_Adobe_marker ? LADLE__PIXELS_CMYK_INVERTED : LADLE__PIXELS_CMYK;
  } else {
    c->out_color_space = plan->color == LADLE__COLOR_GRAY  ? JCS_GRAYSCALE
                         : plan->color == LADLE__COLOR_BGR ? JCS_EXT_BGR
                                                           : JCS_EXT_RGB;
  }
  c->scale_num = (unsigned)plan->scale;
  c->scale_denom = 8;
  c->dct_method = JDCT_ISLOW;
  c->do_fancy_upsampling = TRUE;
  jpeg_start_decompress(c);
  WORK_CHECK((int)c->output_width == plan->scaled_w && (int)c->output_height == plan->scaled_h,
             LADLE_ERROR_INTERNAL, "%s: libjpeg scales %dx%d by %d/8 to %ux%u, expected %dx%d",
             name, a->info->stored_width, a->info->stored_height, plan->scale, c->output_width,
             c->output_height, plan->scaled_w, plan->scaled_h);

  /* Multi-scan files were read whole by jpeg_start_decompress. Running out there is
   * harmless only if nothing but the EOI was missing; a missing scan leaves no other
   * trace (libjpeg just stops), so check that every coefficient bit arrived.
   * Sequential multi-scan files have no such record: running out is an error. So is
   * running out in an arithmetic-coded file, whose decoder (legally) pads a scan cut
   * short with zeros without a warning. */
  if (job->ran_out && jpeg_has_multiple_scans(c))
    WORK_CHECK(c->progressive_mode && !c->arith_code && progressive_complete(c),
               LADLE_ERROR_CORRUPT_DATA,
               "%s: truncated JPEG: the data ends before the last scan (%zu bytes)", name, a->size);

  JDIMENSION xoff = 0, cw = c->output_width;
  if (plan->sw < plan->scaled_w) {
    int lo = plan->sx - CROP_MARGIN < 0 ? 0 : plan->sx - CROP_MARGIN;
    int hi = plan->sx + plan->sw + CROP_MARGIN;
    if (hi > plan->scaled_w) hi = plan->scaled_w;
    xoff = (JDIMENSION)lo;
    cw = (JDIMENSION)(hi - lo);
    jpeg_crop_scanline(c, &xoff, &cw);
  }
  const int col = plan->sx - (int)xoff;
  const int in_ch = c->output_components;
  WORK_CHECK(
      col >= 0 && col + plan->sw <= (int)cw && (convert ? in_ch == 4 : in_ch == plan->out_ch),
      LADLE_ERROR_INTERNAL, "%s: unexpected libjpeg crop %u+%u or %d components", name, xoff, cw,
      in_ch);
  if (plan->sy > 0) {
    JDIMENSION skipped = jpeg_skip_scanlines(c, (JDIMENSION)plan->sy);
    WORK_CHECK(skipped == (JDIMENSION)plan->sy, LADLE_ERROR_INTERNAL,
               "%s: libjpeg skipped %u rows, not %d", name, skipped, plan->sy);
  }

  /* Rows go straight into `out` when they need no conversion, reversal, transpose
   * or column selection; otherwise through scratch. */
  const int direct =
      !convert && !plan->flip_x && !plan->transpose && col == 0 && (int)cw == plan->sw;
  const size_t out_stride = (size_t)plan->out_w * (size_t)plan->out_ch;
  const size_t row_bytes = (size_t)cw * (size_t)in_ch;
  uint8_t *converted = NULL;
  if (!direct) {
    size_t bytes = row_bytes + (convert ? (size_t)plan->sw * (size_t)plan->out_ch : 0);
    job->scratch = malloc(bytes);
    WORK_CHECK(job->scratch != NULL, LADLE_ERROR_OUT_OF_MEMORY, "%s: cannot allocate %zu bytes",
               name, bytes);
    converted = job->scratch + row_bytes;
  }
  for (int r = 0; r < plan->sh; r++) {
    JSAMPROW row =
        direct ? a->out + (size_t)(plan->flip_y ? plan->sh - 1 - r : r) * out_stride : job->scratch;
    WORK_CHECK(jpeg_read_scanlines(c, &row, 1) == 1, LADLE_ERROR_CORRUPT_DATA,
               "%s: JPEG decoder stopped at row %d", name, plan->sy + r);
    if (direct) continue;
    const uint8_t *src = job->scratch + (size_t)col * (size_t)in_ch;
    if (convert) {
      ladle__image_convert_row(converted, plan->color, src, kind, plan->sw);
      src = converted;
    }
    ladle__image_put_row(plan, a->out, r, src);
  }
  WORK_CHECK(!(job->ran_out && c->arith_code), LADLE_ERROR_CORRUPT_DATA,
             "%s: truncated arithmetic-coded JPEG (%zu bytes)", name, a->size);
  /* Rows below the region are never decoded; job_close aborts the decompressor. */
done:
  return st;
}

ladle_status ladle__jpeg_decode(const uint8_t *data, size_t size, const char *name,
                                const ladle__image_info *info, const ladle__image_plan *plan,
                                uint8_t *out) {
  ladle_status st = LADLE_OK;
  jpeg_job job;
  decode_args a = {data, size, name, info, plan, out};
  job_init(&job);
  if (run_guarded(&job, decode_work, &a, &st)) st = jump_error(&job, __func__, name);
  job_close(&job);
  return st;
}

/* jpeg_compression_distortion: each HWC RGB uint8 image encoded as a JPEG of
 * `quality` (libjpeg: baseline, 4:2:0 chroma subsampling, standard tables
 * scaled by quality) and decoded back (codec/image.h: ISLOW IDCT, fancy
 * upsampling). CPU only: the GPU has no encoder here (nvJPEG's encoder is
 * another library, and its output would differ from libjpeg's). */
#include <setjmp.h>
#include <stdio.h> /* jpeglib.h needs FILE and size_t */
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

#include "codec/image.h"
#include "ops/filter/filter.h"

enum { JQ_QUALITY, JQ_COUNT };
static const ladle_arg_schema jpeg_args[JQ_COUNT] = {
    [JQ_QUALITY] = {LADLE_INT_ARG("quality", 50), .per_sample = 1, LADLE_RANGE(1, 100),
        .doc = "JPEG quality, 1 (worst) to 100 (best)."},
};

typedef struct encode_job {
  struct jpeg_error_mgr err;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
} encode_job;

static void on_encode_error(j_common_ptr c) {
  encode_job *job = (encode_job *)c->err;
  (*c->err->format_message)(c, job->message);
  longjmp(job->jump, 1);
}

static ladle_status jpeg_init(ladle__node *n) {
  const ladle__out_desc *in = &n->in[0];
  if (in->dtype != LADLE_UINT8 || in->ndim != 3 || (in->layout[0] && strcmp(in->layout, "HWC") != 0))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "needs HWC uint8 RGB images (got %d-D %s, layout \"%s\")",
                         in->ndim, ladle_dtype_name(in->dtype), in->layout);
  n->out[0] = *in;
  return LADLE_OK;
}

static ladle_status jpeg_setup(ladle__node *n, ladle__sample *s) {
  ladle__tensor in = ladle__input(n, s, 0);
  if (in.shape[2] != 3)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "needs 3 channels (RGB), got %lld", (long long)in.shape[2]);
  if (in.shape[0] > 65500 || in.shape[1] > 65500)
    return LADLE_OP_FAIL(n, LADLE_ERROR_LIMIT, "images above 65500 pixels per side cannot be JPEG-encoded");
  ladle__set_shape(n, s, 0, in.shape);
  return LADLE_OK;
}

/* Encodes rows of w RGB pixels; *jpeg is malloc'd (free it), also on failure. */
static int encode(const uint8_t *rgb, int w, int h, int quality, unsigned char **jpeg, unsigned long *size,
                  char *message) {
  struct jpeg_compress_struct c;
  encode_job job;
  volatile int ok = 0;
  c.err = jpeg_std_error(&job.err);
  job.err.error_exit = on_encode_error;
  jpeg_create_compress(&c);
  if (setjmp(job.jump)) {
    snprintf(message, JMSG_LENGTH_MAX, "%s", job.message);
    goto done;
  }
  jpeg_mem_dest(&c, jpeg, size);
  c.image_width = (JDIMENSION)w;
  c.image_height = (JDIMENSION)h;
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, quality, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = (JSAMPROW)(rgb + (size_t)c.next_scanline * (size_t)w * 3);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  ok = 1;
done:
  jpeg_destroy_compress(&c);
  return ok;
}

static ladle_status jpeg_run(ladle__node *n, ladle__sample *s) {
  ladle__tensor in = ladle__input(n, s, 0), out = ladle__output(n, s, 0);
  int h = (int)in.shape[0], w = (int)in.shape[1];
  if (h == 0 || w == 0) return LADLE_OK;
  unsigned char *jpeg = NULL;
  unsigned long size = 0;
  char message[JMSG_LENGTH_MAX] = "";
  ladle_status st = LADLE_OK;
  if (!encode(in.data, w, h, (int)ladle__arg_int(n, s, JQ_QUALITY), &jpeg, &size, message)) {
    st = LADLE_OP_FAIL(n, LADLE_ERROR_INTERNAL, "JPEG encoding failed: %s", message);
  } else {
    ladle__image_info info;
    ladle__decode_params p;
    ladle__decode_params_init(&p);
    p.apply_orientation = 0;
    p.max_pixels = 0;
    st = ladle__image_probe(jpeg, size, s->name, &info);
    if (st == LADLE_OK) st = ladle__image_decode(jpeg, size, s->name, &info, &p, out.data);
  }
  free(jpeg);
  return st;
}

const ladle__op_def ladle__op_jpeg_compression_distortion = {
    .schema = {.name = "jpeg_compression_distortion",
               .doc = "JPEG compression artifacts: each RGB image encoded at `quality` and decoded back (CPU only).",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1, .devices = LADLE_ON_CPU,
               .num_args = JQ_COUNT, .args = jpeg_args},
    .init = jpeg_init,
    .setup = jpeg_setup,
    .run = jpeg_run,
};

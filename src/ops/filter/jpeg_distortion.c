/* jpeg_compression_distortion: each HWC RGB uint8 image encoded as a JPEG of
 * `quality` (libjpeg: baseline, 4:2:0 chroma subsampling, standard tables
 * scaled by quality) and decoded back (codec/image.h: ISLOW IDCT, fancy
 * upsampling). The CPU runs libjpeg; the GPU (jpeg_distortion_kernels.cu)
 * computes the same round trip without the lossless Huffman stage, with the
 * arithmetic of jpeg_core.h, which tests/c/ops/filter/test_jpeg_distortion.c
 * proves bit-identical to libjpeg's. */
#include <setjmp.h>
#include <stdio.h> /* jpeglib.h needs FILE and size_t */
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

#include "codec/image.h"
#include "ops/filter/filter.h"
#include "ops/filter/filter_kernels.h"
#include "ops/filter/jpeg_core.h"

enum { JQ_QUALITY, JQ_COUNT };
static const ladle_arg_schema jpeg_args[JQ_COUNT] = {
    [JQ_QUALITY] = {LADLE_INT_ARG("quality", 50), .per_sample = 1, LADLE_RANGE(1, 100),
        .doc = "JPEG quality, 1 (worst) to 100 (best)."},
};

/* jcparam.c: the tables of the JPEG standard (Annex K), natural order. */
static const uint8_t std_tables[2][64] = {
    {16, 11, 10, 16, 24,  40,  51,  61,  12, 12, 14, 19, 26,  58,  60,  55,
     14, 13, 16, 24, 40,  57,  69,  56,  14, 17, 22, 29, 51,  87,  80,  62,
     18, 22, 37, 56, 68,  109, 103, 77,  24, 35, 55, 64, 81,  104, 113, 92,
     49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99},
    {17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99, 24, 26, 56, 99, 99, 99,
     99, 99, 47, 66, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99,
     99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99}};

void ladle__jd_tables_init(ladle__jd_tables *t, int quality) {
  /* jpeg_quality_scaling, then jpeg_add_quant_table with force_baseline */
  long scale = quality < 50 ? 5000 / quality : 200 - 2 * quality;
  for (int c = 0; c < 2; c++)
    for (int i = 0; i < 64; i++) {
      long q = (std_tables[c][i] * scale + 50) / 100;
      t->qval[c][i] = (uint16_t)(q < 1 ? 1 : q > 255 ? 255 : q);
      jd_reciprocal(8u * t->qval[c][i], &t->recip[c][i], &t->corr[c][i], &t->shift[c][i]);
    }
}

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

ladle_status ladle__jpeg_roundtrip(const uint8_t *rgb, int h, int w, int quality, const char *name, uint8_t *out,
                                   char *message) {
  unsigned char *jpeg = NULL;
  unsigned long size = 0;
  char text[JMSG_LENGTH_MAX] = "";
  ladle_status st = LADLE_OK;
  if (!encode(rgb, w, h, quality, &jpeg, &size, text)) {
    snprintf(message, JD_MESSAGE_MAX, "%s", text);
    st = LADLE_ERROR_INTERNAL;
  } else {
    ladle__image_info info;
    ladle__decode_params p;
    ladle__decode_params_init(&p);
    p.apply_orientation = 0;
    p.max_pixels = 0;
    st = ladle__image_probe(jpeg, size, name, &info);
    if (st == LADLE_OK) st = ladle__image_decode(jpeg, size, name, &info, &p, out);
  }
  free(jpeg);
  return st;
}

static ladle_status jpeg_run(ladle__node *n, ladle__sample *s) {
  ladle__tensor in = ladle__input(n, s, 0), out = ladle__output(n, s, 0);
  int h = (int)in.shape[0], w = (int)in.shape[1];
  if (h == 0 || w == 0) return LADLE_OK;
  char message[JD_MESSAGE_MAX] = "";
  ladle_status st = ladle__jpeg_roundtrip(in.data, h, w, (int)ladle__arg_int(n, s, JQ_QUALITY), s->name, out.data,
                                          message);
  if (st == LADLE_ERROR_INTERNAL && message[0]) return LADLE_OP_FAIL(n, st, "JPEG encoding failed: %s", message);
  return st;
}

#ifdef LADLE_HAVE_CUDA
/* One launch pair for the batch: the tables of each distinct quality, then a
 * descriptor per sample whose planes lie in device scratch. */
static ladle_status jpeg_run_batch(ladle__node *n, ladle__gpu *g) {
  int batch = n->config->batch_size, num_tables = 0, table_of[101];
  for (int q = 0; q <= 100; q++) table_of[q] = -1;
  ladle__gpu_jd_desc *d = NULL;
  ladle__jd_tables *tables = NULL;
  LADLE_TRY_OP(ladle__scratch(n, &(ladle__sample){.worker = 0}, (sizeof *d + sizeof *tables) * (size_t)batch,
                              (void **)&d));
  tables = (ladle__jd_tables *)(d + batch);
  size_t plane_bytes = 0;
  for (int i = 0; i < batch; i++) {
    ladle__sample s = {.slot = i};
    ladle__tensor in = ladle__input(n, &s, 0), out = ladle__output(n, &s, 0);
    int q = (int)ladle__arg_int(n, &s, JQ_QUALITY);
    if (table_of[q] < 0) ladle__jd_tables_init(&tables[table_of[q] = num_tables++], q);
    d[i] = (ladle__gpu_jd_desc){.in = in.data, .out = out.data, .h = (int)in.shape[0], .w = (int)in.shape[1],
                                .table = table_of[q]};
    if (d[i].h > 0 && d[i].w > 0) plane_bytes += jd_plane_bytes(d[i].h, d[i].w);
  }
  uint8_t *planes = NULL;
  /* + 8: the kernel stores 8-byte rows of the planes, aligned */
  LADLE_TRY_OP(ladle__gpu_device_scratch(g, plane_bytes + 8, (void **)&planes));
  planes += (8 - (uintptr_t)planes % 8) % 8;
  for (int i = 0; i < batch; i++) {
    d[i].planes = planes;
    if (d[i].h > 0 && d[i].w > 0) planes += jd_plane_bytes(d[i].h, d[i].w);
  }
  void *host = NULL, *dev = NULL;
  size_t bytes = ladle__gpu_jd_param_bytes(batch, num_tables);
  LADLE_TRY_OP(ladle__gpu_params(g, bytes, &host, &dev));
  return ladle__gpu_jpeg_distortion(d, batch, tables, num_tables, host, dev, bytes, g->stream);
}
#define JPEG_RUN_BATCH jpeg_run_batch
#else
#define JPEG_RUN_BATCH NULL
#endif

const ladle__op_def ladle__op_jpeg_compression_distortion = {
    .schema = {.name = "jpeg_compression_distortion",
               .doc = "JPEG compression artifacts: each HWC uint8 RGB image encoded at `quality` (baseline, 4:2:0, "
                      "libjpeg's tables and integer DCT) and decoded back (fancy upsampling). The GPU gives the "
                      "CPU's bytes exactly.",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1, .devices = LADLE_ON_CPU_GPU,
               .num_args = JQ_COUNT, .args = jpeg_args},
    .init = jpeg_init,
    .setup = jpeg_setup,
    .run = jpeg_run,
    .run_batch = JPEG_RUN_BATCH,
};

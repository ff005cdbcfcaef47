/* decoders.image and decoders.image_random_crop on the CPU: encoded bytes in,
 * HWC uint8 out. The random-crop decoder decodes only the window it keeps
 * (and at a reduced DCT scale when the pipeline will shrink it a lot). */
#include <stdlib.h>

#include "codec/image.h"
#include "ops/image/decoders.h"
#include "ops/image/random_crop.h"

enum {
  ARG_OUTPUT_TYPE, ARG_ADJUST_ORIENTATION, ARG_HW_DECODER_LOAD, ARG_DEVICE_MEMORY_PADDING,
  ARG_HOST_MEMORY_PADDING, ARG_PREALLOCATE_WIDTH_HINT, ARG_PREALLOCATE_HEIGHT_HINT, ARG_USE_FAST_IDCT,
  ARG_COMMON_COUNT,
  ARG_RANDOM_AREA = ARG_COMMON_COUNT, ARG_RANDOM_ASPECT_RATIO, ARG_NUM_ATTEMPTS, ARG_CROP_COUNT
};

#define COMMON_ARGS \
  [ARG_OUTPUT_TYPE] = {LADLE_STRING_ARG("output_type", "RGB"), LADLE_CHOICES("RGB", "BGR", "GRAY"), \
      .doc = "Colour of the output: \"RGB\", \"BGR\" or \"GRAY\"."}, \
  [ARG_ADJUST_ORIENTATION] = {LADLE_BOOL_ARG("adjust_orientation", 1), \
      .doc = "Apply the EXIF orientation, so the output is the image as displayed."}, \
  [ARG_HW_DECODER_LOAD] = {LADLE_FLOAT_ARG("hw_decoder_load", 0.8), LADLE_RANGE(0.0, 1.0), \
      .doc = "mixed: the share of JPEGs given to nvJPEG; the CPU workers decode the rest at the same time " \
             "(DALI's default is 0.65; 0.8 was fastest on an H200 with 16 cores)."}, \
  [ARG_DEVICE_MEMORY_PADDING] = {LADLE_INT_ARG("device_memory_padding", 16 << 20), \
      .no_effect = 1, .doc = "Accepted for DALI scripts; ladle's pools size themselves."}, \
  [ARG_HOST_MEMORY_PADDING] = {LADLE_INT_ARG("host_memory_padding", 8 << 20), \
      .no_effect = 1, .doc = "Accepted for DALI scripts; ladle's pools size themselves."}, \
  [ARG_PREALLOCATE_WIDTH_HINT] = {LADLE_INT_ARG("preallocate_width_hint", 0), \
      .no_effect = 1, .doc = "Accepted for DALI scripts; no effect."}, \
  [ARG_PREALLOCATE_HEIGHT_HINT] = {LADLE_INT_ARG("preallocate_height_hint", 0), \
      .no_effect = 1, .doc = "Accepted for DALI scripts; no effect."}, \
  [ARG_USE_FAST_IDCT] = {LADLE_BOOL_ARG("use_fast_idct", 0), \
      .no_effect = 1, .doc = "Accepted for DALI scripts; ladle always uses the accurate IDCT."}

static const double default_area[] = {0.08, 1.0};
static const double default_aspect[] = {3.0 / 4.0, 4.0 / 3.0};

static const ladle_arg_schema image_args[ARG_COMMON_COUNT] = {COMMON_ARGS};
static const ladle_arg_schema crop_args[ARG_CROP_COUNT] = {
    COMMON_ARGS,
    [ARG_RANDOM_AREA] = {LADLE_FLOATS_ARG("random_area", default_area), LADLE_RANGE(0.0, 1.0),
        .doc = "Range [min, max] of the crop's area as a fraction of the image's."},
    [ARG_RANDOM_ASPECT_RATIO] = {LADLE_FLOATS_ARG("random_aspect_ratio", default_aspect), LADLE_RANGE(1e-6, 1e6),
        .doc = "Range [min, max] of the crop's width/height, drawn log-uniformly."},
    [ARG_NUM_ATTEMPTS] = {LADLE_INT_ARG("num_attempts", 10), LADLE_RANGE(1.0, 1000.0),
        .doc = "Windows tried before falling back to a centred crop of the whole image."},
};

typedef struct sample_state {
  ladle__image_info info;
  ladle__decode_params params;
  const char *name; /* the sample's path, for run_batch's messages */
  int use_gpu;      /* mixed: nvJPEG decodes it (decided in setup, in parallel) */
} sample_state;

#ifdef LADLE_HAVE_CUDA
static ladle_status mixed_init(ladle__node *n, ladle__decoder_state *d);
static ladle_status mixed_route(ladle__node *n, ladle__sample *s, sample_state *ss);
static void mixed_fini(ladle__decoder_state *d);
static ladle_status mixed_run_batch(ladle__node *n, ladle__gpu *g);
#define MIXED_RUN_BATCH mixed_run_batch
#else
#define MIXED_RUN_BATCH NULL
#endif

static ladle_status decoder_init(ladle__node *n, int random_crop) {
  ladle__decoder_state *d = calloc(1, sizeof *d);
  if (!d) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  n->state = d;
  d->color = (ladle__color)ladle__arg_choice(n, ARG_OUTPUT_TYPE);
  d->apply_orientation = (int)ladle__arg_int(n, NULL, ARG_ADJUST_ORIENTATION);
  d->gpu_share = ladle__arg_float(n, NULL, ARG_HW_DECODER_LOAD);
  if (n->in[0].dtype != LADLE_UINT8 || n->in[0].ndim != 1)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "the input must be encoded bytes (uint8, 1-D)");
  if (random_crop) {
    const ladle_value *area = ladle__arg_value(n, ARG_RANDOM_AREA), *aspect = ladle__arg_value(n, ARG_RANDOM_ASPECT_RATIO);
    if (area->count != 2 || area->u.floats[0] > area->u.floats[1] || area->u.floats[1] <= 0)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'random_area' must be [min, max] with 0 <= min <= max <= 1, max > 0");
    if (aspect->count != 2 || aspect->u.floats[0] > aspect->u.floats[1])
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'random_aspect_ratio' must be [min, max] with 0 < min <= max");
    d->random_crop = 1;
    d->crop = (ladle__random_crop_params){area->u.floats[0], area->u.floats[1], aspect->u.floats[0],
                                          aspect->u.floats[1], (int)ladle__arg_int(n, NULL, ARG_NUM_ATTEMPTS)};
  }
  n->out[0] = (ladle__out_desc){LADLE_UINT8, 3, "HWC"};
#ifdef LADLE_HAVE_CUDA
  if (n->device == LADLE_ON_MIXED) return mixed_init(n, d);
#endif
  return LADLE_OK;
}

static ladle_status image_init(ladle__node *n) { return decoder_init(n, 0); }
static ladle_status image_random_crop_init(ladle__node *n) { return decoder_init(n, 1); }

static void decoder_fini(ladle__node *n) {
#ifdef LADLE_HAVE_CUDA
  if (n->state) mixed_fini(n->state);
#endif
  free(n->state);
}

static ladle_status decoder_setup(ladle__node *n, ladle__sample *s) {
  const ladle__decoder_state *d = n->state;
  sample_state *ss = s->state;
  ss->name = s->name ? s->name : "(unnamed)";
  ladle__tensor in = ladle__input(n, s, 0);
  ladle_status st = ladle__image_probe(in.data, (size_t)in.shape[0], s->name ? s->name : "(unnamed)", &ss->info);
  if (st != LADLE_OK) return st;
  ladle__decode_params_init(&ss->params);
  ss->params.color = d->color;
  ss->params.apply_orientation = d->apply_orientation;
  ss->params.max_pixels = n->config->max_pixels;
  if (d->random_crop) {
    int width = d->apply_orientation ? ss->info.width : ss->info.stored_width;
    int height = d->apply_orientation ? ss->info.height : ss->info.stored_height;
    ladle__rng rng;
    ladle__sample_rng(n, s, &rng);
    ladle__window w = ladle__random_crop_window(&rng, width, height, &d->crop);
    ss->params.has_roi = 1;
    ss->params.roi_x = w.x;
    ss->params.roi_y = w.y;
    ss->params.roi_w = w.w;
    ss->params.roi_h = w.h;
    if (n->device == LADLE_ON_CPU) { /* nvJPEG has no DCT scaling: keep both paths' sizes equal */
      ss->params.min_width = d->min_width;
      ss->params.min_height = d->min_height;
    }
  }
  int w, h, c;
  st = ladle__image_output_size(&ss->info, &ss->params, s->name ? s->name : "(unnamed)", &w, &h, &c);
  if (st != LADLE_OK) return st;
  int64_t shape[3] = {h, w, c};
  ladle__set_shape(n, s, 0, shape);
#ifdef LADLE_HAVE_CUDA
  if (n->device == LADLE_ON_MIXED) return mixed_route(n, s, ss);
#endif
  return LADLE_OK;
}

static ladle_status decoder_run(ladle__node *n, ladle__sample *s) {
  sample_state *ss = s->state;
  ladle__tensor in = ladle__input(n, s, 0), out = ladle__output(n, s, 0);
  return ladle__image_decode(in.data, (size_t)in.shape[0], s->name ? s->name : "(unnamed)", &ss->info, &ss->params,
                             out.data);
}

const ladle__op_def ladle__op_decoders_image = {
    .schema = {.name = "decoders.image",
               .doc = "Decodes JPEG and PNG images (the format is sniffed from the bytes) to HWC uint8. CMYK becomes "
                      "RGB, 16-bit PNG is reduced to 8 bits, alpha is dropped.",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
               .devices = LADLE_ON_CPU_MIXED,
               .num_args = ARG_COMMON_COUNT, .args = image_args},
    .sample_state_size = sizeof(sample_state),
    .init = image_init,
    .fini = decoder_fini,
    .setup = decoder_setup,
    .run = decoder_run,
    .run_batch = MIXED_RUN_BATCH,
};

const ladle__op_def ladle__op_decoders_image_random_crop = {
    .schema = {.name = "decoders.image_random_crop",
               .doc = "Decodes a random window of each image (area fraction in random_area, aspect ratio in "
                      "random_aspect_ratio), decoding only that window.",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
               .devices = LADLE_ON_CPU_MIXED, .flags = LADLE_OP_RANDOM,
               .num_args = ARG_CROP_COUNT, .args = crop_args},
    .sample_state_size = sizeof(sample_state),
    .init = image_random_crop_init,
    .fini = decoder_fini,
    .setup = decoder_setup,
    .run = decoder_run,
    .run_batch = MIXED_RUN_BATCH,
};

#ifdef LADLE_HAVE_CUDA
/* --- the mixed backend ------------------------------------------------------
 * JPEGs nvJPEG accepts (orientation 1) are decoded by it, on the hardware
 * engines where the GPU has them, straight into the output batch (only the
 * crop window where the backend supports regions, else the whole image and a
 * crop kernel). Every other image is decoded on the CPU workers into pinned
 * memory and copied up. Both give the same output shape, so a batch may mix
 * them. One nvJPEG decoder serves all pipelines on a device: several
 * hardware decoders driven from several threads hung on the H200
 * (GPU-NOTES.md), so decodes on one device take turns. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>

#include "codec/nvjpeg.h"
#include "core/threads.h"
#include "cuda/runtime.h"
#include "ops/geometry/normalize_kernel.h"
#include "ops/kernels/gpu_kernels.h"

#define MAX_DEVICES 64

/* Header checks run on the workers, each with a parse object of its own:
 * workers of several pipelines share them by index, one at a time. */
#define PARSERS 64

typedef struct ladle__shared_nvjpeg {
  pthread_mutex_t lock; /* decodes take turns */
  ladle__nvjpeg_decoder *decoder;
  int roi;
  pthread_mutex_t parser_locks[PARSERS];
} ladle__shared_nvjpeg;

static ladle__shared_nvjpeg shared[MAX_DEVICES];
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;

static ladle_status mixed_init(ladle__node *n, ladle__decoder_state *d) {
  int device = n->config->device_id;
  if (device < 0 || device >= MAX_DEVICES || !ladle__nvjpeg_available()) return LADLE_OK; /* CPU decodes */
  ladle_status st = LADLE_OK;
  pthread_mutex_lock(&shared_lock);
  ladle__shared_nvjpeg *sh = &shared[device];
  if (!sh->decoder) {
    ladle__nvjpeg_params params;
    ladle__nvjpeg_params_init(&params);
    params.device_id = device;
    params.max_batch = n->config->batch_size;
    params.num_workers = PARSERS;
    st = ladle__nvjpeg_decoder_create(&params, &sh->decoder);
    if (st == LADLE_OK) {
      pthread_mutex_init(&sh->lock, NULL);
      for (int k = 0; k < PARSERS; k++) pthread_mutex_init(&sh->parser_locks[k], NULL);
      sh->roi = ladle__nvjpeg_decoder_supports_roi(sh->decoder);
    }
  }
  pthread_mutex_unlock(&shared_lock);
  if (st != LADLE_OK) return ladle__wrap_error(st, "%s (device=\"mixed\")", n->def->schema.name);
  d->nvjpeg = sh; /* kept for the life of the process */
  return LADLE_OK;
}

static void mixed_fini(ladle__decoder_state *d) {}

typedef struct cpu_job {
  ladle__node *node;
  const int *slots;
  uint8_t *staging; /* pinned */
  const size_t *offsets;
  ladle_status status;
  char error[LADLE_ERROR_MAX];
  int failed_slot;
  pthread_mutex_t lock;
} cpu_job;

static void cpu_decode_one(void *ctx, int item, int worker) {
  cpu_job *job = ctx;
  ladle__node *n = job->node;
  int slot = job->slots[item];
  sample_state *ss = (sample_state *)(n->sample_states + (size_t)slot * sizeof(sample_state));
  const ladle_batch *in = n->in_batches[0];
  ladle_status st = ladle__image_decode(ladle_batch_data(in, slot), (size_t)ladle_batch_shape(in, slot)[0], ss->name,
                                        &ss->info, &ss->params, job->staging + job->offsets[item]);
  if (st == LADLE_OK) return;
  pthread_mutex_lock(&job->lock);
  if (slot < job->failed_slot) {
    job->failed_slot = slot;
    job->status = st;
    snprintf(job->error, sizeof job->error, "sample %d (\"%s\"): %s", slot, ss->name, ladle_last_error());
  }
  pthread_mutex_unlock(&job->lock);
}

/* nvJPEG decodes a truncated JPEG without complaint (measured on the H200):
 * a file that does not end with the end-of-image marker (trailing zero
 * padding allowed) goes to the CPU decoder, which tells a cut file from one
 * that only lacks the marker. */
static int ends_with_eoi(const uint8_t *data, size_t size) {
  while (size > 2 && data[size - 1] == 0) size--;
  return size >= 4 && data[size - 2] == 0xFF && data[size - 1] == 0xD9;
}

/* Whether nvJPEG can take the image whole or cropped, when the backend has regions. */
static ladle__nvjpeg_roi roi_of(const sample_state *ss, int *cropped) {
  ladle__nvjpeg_roi roi = {ss->params.roi_x, ss->params.roi_y, ss->params.roi_w, ss->params.roi_h};
  *cropped = ss->params.has_roi && (roi.w != ss->info.stored_width || roi.h != ss->info.stored_height);
  return roi;
}

/* Which JPEGs go to nvJPEG: a deterministic share (gpu_share) spread evenly
 * over the batch, so the split, and so the output, does not vary by run. */
static int to_gpu(int k, double share) { return (int)floor((k + 1) * share) > (int)floor(k * share); }

/* Setup, on a worker: decides whether nvJPEG or the CPU decodes the sample. */
static ladle_status mixed_route(ladle__node *n, ladle__sample *s, sample_state *ss) {
  const ladle__decoder_state *d = n->state;
  ladle__shared_nvjpeg *sh = d->nvjpeg;
  ladle__tensor in = ladle__input(n, s, 0);
  size_t size = (size_t)in.shape[0];
  int upright = ss->info.orientation == 1 || !ss->params.apply_orientation;
  ss->use_gpu = 0;
  if (!sh || ss->info.format != LADLE__IMAGE_JPEG || !upright || !ends_with_eoi(in.data, size) ||
      !to_gpu(s->slot, d->gpu_share))
    return LADLE_OK;
  int cropped, parser = s->worker % PARSERS;
  ladle__nvjpeg_roi roi = roi_of(ss, &cropped);
  pthread_mutex_lock(&sh->parser_locks[parser]);
  ladle_status st = ladle__nvjpeg_supported(sh->decoder, parser, in.data, size, ss->name,
                                            cropped && sh->roi ? &roi : NULL, &ss->use_gpu);
  pthread_mutex_unlock(&sh->parser_locks[parser]);
  return st;
}

static ladle_status mixed_run_batch(ladle__node *n, ladle__gpu *g) {
  ladle_status st = LADLE_OK;
  const ladle__decoder_state *d = n->state;
  ladle__shared_nvjpeg *sh = d->nvjpeg;
  int batch = n->config->batch_size;
  const ladle_batch *in = n->in_batches[0];
  ladle_batch *out = n->out_batches[0];
  ladle__nvjpeg_image *images = NULL;
  ladle__gpu_crop_flip_desc *crops = NULL; /* whole-image decodes to crop, where the backend has no regions */
  int *cpu_slots = NULL, num_gpu = 0, num_cpu = 0, num_crops = 0, locked = 0, started = 0;
  size_t *cpu_offsets = NULL, cpu_bytes = 0;
  ladle__job job;
  cpu_job work = {.node = n, .failed_slot = batch};
  pthread_mutex_init(&work.lock, NULL);
  /* The per-batch lists live in worker 0's scratch, reused every iteration:
   * run_batch runs between parallel passes, and the CPU decodes below do not
   * use node scratch. */
  size_t a = (sizeof *images * (size_t)batch + 63) & ~(size_t)63;
  size_t b = (sizeof *crops * (size_t)batch + 63) & ~(size_t)63;
  size_t c = (sizeof *cpu_slots * (size_t)batch + 63) & ~(size_t)63;
  uint8_t *lists = NULL;
  LADLE_TRY(ladle__scratch(n, &(ladle__sample){.worker = 0}, a + b + c + sizeof *cpu_offsets * ((size_t)batch + 1),
                           (void **)&lists));
  images = (ladle__nvjpeg_image *)lists;
  crops = (ladle__gpu_crop_flip_desc *)(lists + a);
  cpu_slots = (int *)(lists + a + b);
  cpu_offsets = (size_t *)(lists + a + b + c);
  ladle__nvjpeg_format format = d->color == LADLE__COLOR_BGR ? LADLE__NVJPEG_BGR
                                : d->color == LADLE__COLOR_GRAY ? LADLE__NVJPEG_GRAY : LADLE__NVJPEG_RGB;
  for (int i = 0; i < batch; i++) {
    sample_state *ss = (sample_state *)(n->sample_states + (size_t)i * sizeof(sample_state));
    const uint8_t *data = ladle_batch_data(in, i);
    size_t size = (size_t)ladle_batch_shape(in, i)[0];
    const int64_t *shape = ladle_batch_shape(out, i);
    int cropped;
    ladle__nvjpeg_roi roi = roi_of(ss, &cropped);
    if (!ss->use_gpu) {
      cpu_slots[num_cpu] = i;
      cpu_offsets[num_cpu++] = cpu_bytes;
      cpu_bytes += (size_t)(shape[0] * shape[1] * shape[2] + 63) & ~(size_t)63;
      continue;
    }
    ladle__nvjpeg_image *im = &images[num_gpu++];
    *im = (ladle__nvjpeg_image){data, size, ss->name, ladle_batch_data(out, i), (size_t)(shape[1] * shape[2]), 0, roi};
    if (cropped && sh->roi) {
      im->has_roi = 1;
    } else if (cropped) {
      int channels = (int)shape[2];
      void *full = NULL;
      LADLE_TRY(ladle__gpu_device_scratch(g, (size_t)ss->info.stored_width * ss->info.stored_height * channels,
                                          &full));
      im->out = full;
      im->pitch = (size_t)ss->info.stored_width * channels;
      crops[num_crops++] = (ladle__gpu_crop_flip_desc){full, ladle_batch_data(out, i), ss->info.stored_height,
                                                       ss->info.stored_width, channels, 1, roi.x, roi.y, roi.w,
                                                       roi.h, 0, 0, 0};
    }
  }
  /* The CPU share decodes on the workers while nvJPEG works. */
  if (num_cpu) {
    LADLE_TRY(ladle__gpu_host_scratch(g, cpu_bytes, (void **)&work.staging));
    work.slots = cpu_slots;
    work.offsets = cpu_offsets;
    ladle__parallel_start(g->workers, &job, num_cpu, cpu_decode_one, &work);
    started = 1;
  }
  if (num_gpu) {
    pthread_mutex_lock(&sh->lock);
    locked = 1;
    LADLE_TRY(ladle__nvjpeg_decode(sh->decoder, images, num_gpu, format, g->stream));
  }
  if (locked) {
    pthread_mutex_unlock(&sh->lock);
    locked = 0;
  }
  if (started) {
    ladle__parallel_wait(g->workers, &job);
    started = 0;
    if (work.status != LADLE_OK) {
      ladle__restore_error(work.error);
      st = work.status;
      goto done;
    }
    /* One copy of the whole CPU share, which the crop kernel below places:
     * a copy per image would cost a driver call each, and the training loop
     * contends for the driver (README.md, "Measured"). */
    uint8_t *dev_staging = NULL;
    LADLE_TRY(ladle__gpu_device_scratch(g, cpu_bytes, (void **)&dev_staging));
    LADLE_TRY(ladle__cuda_copy(dev_staging, work.staging, cpu_bytes, g->stream));
    for (int k = 0; k < num_cpu; k++) {
      const int64_t *shape = ladle_batch_shape(out, cpu_slots[k]);
      int h = (int)shape[0], w = (int)shape[1], c = (int)shape[2];
      crops[num_crops++] = (ladle__gpu_crop_flip_desc){dev_staging + cpu_offsets[k], ladle_batch_data(out, cpu_slots[k]),
                                                       h, w, c, 1, 0, 0, w, h, 0, 0, 0};
    }
  }
  if (num_crops) {
    void *host = NULL, *dev = NULL;
    size_t bytes = ladle__gpu_crop_flip_param_bytes(num_crops);
    LADLE_TRY(ladle__gpu_params(g, bytes, &host, &dev));
    LADLE_TRY(ladle__gpu_crop_flip(crops, num_crops, host, dev, bytes, g->stream));
  }
done:
  if (started) ladle__parallel_wait(g->workers, &job); /* the workers write into our scratch */
  if (locked) pthread_mutex_unlock(&sh->lock);
  pthread_mutex_destroy(&work.lock);
  return st;
}
#endif

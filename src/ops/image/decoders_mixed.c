/* The mixed backend of the image decoders (decoders.c has their schemas and
 * the CPU backend).
 * JPEGs nvJPEG accepts (orientation 1) are decoded by it, on the hardware
 * engines where the GPU has them, straight into the output batch (only the
 * crop window where the backend supports regions, else the whole image and a
 * crop kernel). Every other image is decoded on the CPU workers into pinned
 * memory and copied up. Both give the same output shape, so a batch may mix
 * them. One nvJPEG decoder serves all pipelines on a device: several
 * hardware decoders driven from several threads hung on the H200
 * (GPU-NOTES.md), so decodes on one device take turns. */
#include "ops/image/decoders.h"

#ifdef LADLE_HAVE_CUDA
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

ladle_status ladle__decoders_mixed_init(ladle__node *n, ladle__decoder_state *d) {
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

typedef struct cpu_job {
  ladle__node *node;
  ladle__gpu *gpu;
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
  ladle__decoder_sample *ss = (ladle__decoder_sample *)(n->sample_states + (size_t)slot * sizeof(ladle__decoder_sample));
  const ladle_batch *in = n->in_batches[0];
  ladle_status st = ladle__image_decode(ladle_batch_data(in, slot), (size_t)ladle_batch_shape(in, slot)[0], ss->name,
                                        &ss->info, &ss->params, job->staging + job->offsets[item]);
  if (st == LADLE_OK) return;
  pthread_mutex_lock(&job->lock);
  ladle__gpu_sample_failed(job->gpu, slot, st); /* skipping: the executor replaces it */
  if (slot < job->failed_slot) {
    job->failed_slot = slot;
    job->status = st;
    snprintf(job->error, sizeof job->error, "sample %d (\"%s\"): %s", slot, ss->name, ladle_last_error());
  }
  pthread_mutex_unlock(&job->lock);
}

/* Copies a CPU-decoded share to the device in one copy and adds the crops
 * that place each image in its output slot. */
static ladle_status place_cpu_share(ladle__gpu *g, const ladle_batch *out, const cpu_job *work, int count, size_t bytes,
                                    ladle__gpu_crop_flip_desc *crops, int *num_crops) {
  ladle_status st = LADLE_OK;
  /* One copy of the whole share, which the crop kernel places: a copy per
   * image would cost a driver call each, and the training loop contends for
   * the driver (README.md, "Measured"). */
  uint8_t *dev_staging = NULL;
  LADLE_TRY(ladle__gpu_device_scratch(g, bytes, (void **)&dev_staging));
  LADLE_TRY(ladle__cuda_copy(dev_staging, work->staging, bytes, g->stream));
  for (int k = 0; k < count; k++) {
    const int64_t *shape = ladle_batch_shape(out, work->slots[k]);
    int h = (int)shape[0], w = (int)shape[1], c = (int)shape[2];
    crops[(*num_crops)++] = (ladle__gpu_crop_flip_desc){dev_staging + work->offsets[k],
                                                        ladle_batch_data(out, work->slots[k]), h, w, c, 1, 0, 0, w, h,
                                                        0, 0, 0};
  }
done:
  return st;
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
static ladle__nvjpeg_roi roi_of(const ladle__decoder_sample *ss, int *cropped) {
  ladle__nvjpeg_roi roi = {ss->params.roi_x, ss->params.roi_y, ss->params.roi_w, ss->params.roi_h};
  *cropped = ss->params.has_roi && (roi.w != ss->info.stored_width || roi.h != ss->info.stored_height);
  return roi;
}

/* Which JPEGs go to nvJPEG: a deterministic share (gpu_share) spread evenly
 * over the batch, so the split, and so the output, does not vary by run. */
static int to_gpu(int k, double share) { return (int)floor((k + 1) * share) > (int)floor(k * share); }

/* Setup, on a worker: decides whether nvJPEG or the CPU decodes the sample. */
ladle_status ladle__decoders_mixed_route(ladle__node *n, ladle__sample *s, ladle__decoder_sample *ss) {
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

ladle_status ladle__decoders_mixed_run_batch(ladle__node *n, ladle__gpu *g) {
  ladle_status st = LADLE_OK;
  const ladle__decoder_state *d = n->state;
  ladle__shared_nvjpeg *sh = d->nvjpeg;
  int batch = n->config->batch_size;
  const ladle_batch *in = n->in_batches[0];
  ladle_batch *out = n->out_batches[0];
  ladle__nvjpeg_image *images = NULL;
  ladle__gpu_crop_flip_desc *crops = NULL; /* whole-image decodes to crop, where the backend has no regions */
  int *cpu_slots = NULL, *gpu_slots = NULL, num_gpu = 0, num_cpu = 0, num_crops = 0, locked = 0, started = 0;
  size_t *cpu_offsets = NULL, *gpu_offsets = NULL, cpu_bytes = 0, gpu_bytes = 0;
  ladle__job job;
  cpu_job work = {.node = n, .gpu = g, .failed_slot = batch};
  cpu_job retry = {.node = n, .gpu = g, .failed_slot = batch};
  pthread_mutex_init(&work.lock, NULL);
  pthread_mutex_init(&retry.lock, NULL);
  /* The per-batch lists live in worker 0's scratch, reused every iteration:
   * run_batch runs between parallel passes, and the CPU decodes below do not
   * use node scratch. */
  size_t a = (sizeof *images * (size_t)batch + 63) & ~(size_t)63;
  size_t b = (sizeof *crops * (size_t)batch + 63) & ~(size_t)63;
  size_t c = (sizeof *cpu_slots * (size_t)batch + 63) & ~(size_t)63;
  size_t o = (sizeof *cpu_offsets * (size_t)batch + 63) & ~(size_t)63;
  uint8_t *lists = NULL;
  LADLE_TRY(ladle__scratch(n, &(ladle__sample){.worker = 0}, a + b + 2 * c + 2 * o, (void **)&lists));
  images = (ladle__nvjpeg_image *)lists;
  crops = (ladle__gpu_crop_flip_desc *)(lists + a);
  cpu_slots = (int *)(lists + a + b);
  gpu_slots = (int *)(lists + a + b + c);
  cpu_offsets = (size_t *)(lists + a + b + 2 * c);
  gpu_offsets = (size_t *)(lists + a + b + 2 * c + o);
  ladle__nvjpeg_format format = d->color == LADLE__COLOR_BGR ? LADLE__NVJPEG_BGR
                                : d->color == LADLE__COLOR_GRAY ? LADLE__NVJPEG_GRAY : LADLE__NVJPEG_RGB;
  for (int i = 0; i < batch; i++) {
    ladle__decoder_sample *ss = (ladle__decoder_sample *)(n->sample_states + (size_t)i * sizeof(ladle__decoder_sample));
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
    gpu_slots[num_gpu] = i;
    gpu_offsets[num_gpu] = gpu_bytes;
    gpu_bytes += (size_t)(shape[0] * shape[1] * shape[2] + 63) & ~(size_t)63;
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
    st = ladle__nvjpeg_decode(sh->decoder, images, num_gpu, format, g->stream);
    if (st == LADLE_ERROR_CORRUPT_DATA || st == LADLE_ERROR_UNSUPPORTED) {
      /* nvJPEG refused the data: its share decodes on the CPU instead, which
       * gives each image its own verdict (a bad one fails there, naming its
       * file, and can be skipped; one nvJPEG only disliked decodes). */
      st = LADLE_OK;
      num_crops = 0; /* the whole-image crops of the GPU share are void */
      retry.slots = gpu_slots;
      retry.offsets = gpu_offsets;
    } else if (st != LADLE_OK) {
      goto done;
    }
  }
  if (locked) {
    pthread_mutex_unlock(&sh->lock);
    locked = 0;
  }
  if (started) {
    ladle__parallel_wait(g->workers, &job);
    started = 0;
  }
  if (retry.slots) {
    LADLE_TRY(ladle__gpu_host_scratch(g, gpu_bytes, (void **)&retry.staging));
    ladle__parallel_for(g->workers, num_gpu, cpu_decode_one, &retry);
  }
  /* The first failing slot of the batch, whichever share it was in (with
   * skipping, every data failure is noted for the executor already). */
  if (work.status != LADLE_OK || retry.status != LADLE_OK) {
    const cpu_job *first = retry.failed_slot < work.failed_slot ? &retry : &work;
    ladle__restore_error(first->error);
    st = first->status;
    goto done;
  }
  if (num_cpu) LADLE_TRY(place_cpu_share(g, out, &work, num_cpu, cpu_bytes, crops, &num_crops));
  if (retry.slots) LADLE_TRY(place_cpu_share(g, out, &retry, num_gpu, gpu_bytes, crops, &num_crops));
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
  pthread_mutex_destroy(&retry.lock);
  return st;
}
#else
/* ISO C forbids an empty translation unit. */
typedef int ladle__decoders_mixed_unused;
#endif

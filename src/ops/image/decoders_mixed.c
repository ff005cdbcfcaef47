/* The mixed backend of the image decoders (decoders.c has their schemas and
 * the CPU backend). Three routes decode a batch at the same time:
 *  - hw: a deterministic share (hw_decoder_load) of the JPEGs nvJPEG accepts
 *    (orientation 1), on the hardware engines where the GPU has them, from the
 *    executor thread, straight into the output batch (only the crop window
 *    where the backend supports regions, else the whole image and a crop
 *    kernel). One such decoder serves all pipelines on a device: several
 *    hardware decoders driven from several threads hung on the H200
 *    (GPU-NOTES.md), so these decodes take turns.
 *  - gpu_hybrid: of the other JPEGs, those with more pixels than
 *    hybrid_huffman_threshold that nvJPEG's GPU-Huffman backend takes, by the
 *    node's own GPU_HYBRID decoder (own handle, state and CUDA stream; made
 *    by the first image that comes this way, as most pipelines send none
 *    here at the default threshold) from a worker thread, whole images
 *    cropped by the same crop kernel; its stream is ordered after the
 *    pipeline's (fork event) and the pipeline's after it (join event) before
 *    the crops run and the batch is handed on.
 *  - cpu: every other image, decoded on the CPU workers into pinned memory
 *    and copied up.
 * All give the same output shape, so a batch may mix them; a batch nvJPEG
 * refuses is decoded on the CPU instead, which gives each image its verdict. */
#include "ops/image/decoders.h"

#ifdef LADLE_HAVE_CUDA
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/nvjpeg.h"
#include "core/clock.h"
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

/* The node's GPU-Huffman decoder. Its handle is its own, never the hardware
 * decoder's (GPU-NOTES.md: hardware states driven from several threads hung). */
typedef struct ladle__hybrid_nvjpeg {
  ladle__nvjpeg_decoder *decoder; /* NVJPEG_BACKEND_GPU_HYBRID, baseline JPEGs only */
  int device;
  int roi;        /* the backend decodes regions (GPU_HYBRID: no, so whole images are cropped) */
  void *stream;   /* its decodes run here */
  void *fork;     /* recorded on the pipeline's stream before the decode: its memory was in use there */
  void *join;     /* recorded on `stream` after the decode: the pipeline's stream waits for it */
} ladle__hybrid_nvjpeg;

static void hybrid_destroy(ladle__hybrid_nvjpeg *h) {
  if (!h) return;
  char saved[LADLE_ERROR_MAX];
  snprintf(saved, sizeof saved, "%s", ladle_last_error());
  int prev = -1;
  if (ladle__cuda_use_device(h->device, &prev) != LADLE_OK) prev = -1;
  /* Its last decode may still run on the GPU: nvJPEG's buffers outlive it. */
  if (h->stream) (void)ladle__cuda_stream_sync(h->stream);
  ladle__nvjpeg_decoder_destroy(h->decoder);
  ladle__cuda_event_destroy(h->fork);
  ladle__cuda_event_destroy(h->join);
  ladle__cuda_stream_destroy(h->stream);
  if (prev >= 0) ladle__cuda_restore_device(prev);
  free(h);
  ladle__restore_error(saved);
}

/* Made on a worker, in the setup pass (the host stage's too). */
static ladle_status hybrid_create(const ladle__node *n, ladle__hybrid_nvjpeg **out) {
  ladle_status st = LADLE_OK;
  ladle__hybrid_nvjpeg *h = NULL;
  int prev = -1;
  LADLE_ALLOC(h, 1);
  h->device = n->config->device_id;
  ladle__nvjpeg_params params;
  ladle__nvjpeg_params_init(&params);
  params.device_id = h->device;
  params.backend = LADLE__NVJPEG_GPU_HYBRID;
  params.max_batch = n->config->batch_size;
  params.num_workers = n->config->num_workers; /* setup's worker index picks the parse object */
  params.gpu_huffman_only = 1;
  LADLE_TRY(ladle__nvjpeg_decoder_create(&params, &h->decoder));
  h->roi = ladle__nvjpeg_decoder_supports_roi(h->decoder);
  LADLE_TRY(ladle__cuda_use_device(h->device, &prev));
  /* Low priority, as the pipeline's stream: the training step's kernels go first. */
  LADLE_TRY(ladle__cuda_stream_create(1, &h->stream));
  LADLE_TRY(ladle__cuda_event_create(h->device, &h->fork));
  LADLE_TRY(ladle__cuda_event_create(h->device, &h->join));
  *out = h;
  h = NULL;
done:
  if (prev >= 0) ladle__cuda_restore_device(prev);
  hybrid_destroy(h);
  return st;
}

/* Creation is rare (once a node): one lock for all nodes. */
static pthread_mutex_t hybrid_lock = PTHREAD_MUTEX_INITIALIZER;

/* The node's GPU-Huffman decoder, made by the first caller; the workers of a
 * setup pass may ask at once. A failure is the node's for good, as it was
 * when the decoder was made at build: later callers get its status and
 * message without trying again. */
static ladle_status hybrid_get(const ladle__node *n, ladle__decoder_state *d, const ladle__hybrid_nvjpeg **out) {
  ladle__hybrid_nvjpeg *h = atomic_load_explicit(&d->hybrid, memory_order_acquire);
  ladle_status st = LADLE_OK;
  if (!h) {
    pthread_mutex_lock(&hybrid_lock);
    h = atomic_load_explicit(&d->hybrid, memory_order_relaxed);
    if (!h && d->hybrid_status == LADLE_OK) {
      st = hybrid_create(n, &h);
      if (st == LADLE_OK) {
        atomic_store_explicit(&d->hybrid, h, memory_order_release);
      } else {
        ladle__wrap_error(st, "%s (device=\"mixed\"): the GPU-Huffman decoder for hybrid_huffman_threshold",
                          n->def->schema.name);
        d->hybrid_status = st;
        snprintf(d->hybrid_error, sizeof d->hybrid_error, "%s", ladle_last_error());
      }
    } else if (!h) {
      st = d->hybrid_status;
      ladle__restore_error(d->hybrid_error);
    }
    pthread_mutex_unlock(&hybrid_lock);
  }
  *out = h;
  return st;
}

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

void ladle__decoders_mixed_fini(ladle__decoder_state *d) {
  hybrid_destroy(atomic_exchange(&d->hybrid, NULL)); /* NULL when no image needed it */
}

/* A set of samples of one batch and where a CPU decode of each goes in a
 * pinned staging buffer; for an nvJPEG route also its decode list and the
 * crops that cut whole-image decodes down to their windows. */
typedef struct share {
  int *slots;
  size_t *offsets;
  size_t bytes;
  int count;
  ladle__nvjpeg_image *images;      /* nvJPEG routes */
  ladle__gpu_crop_flip_desc *crops; /* nvJPEG routes */
  int num_crops;
} share;

typedef struct cpu_job {
  ladle__node *node;
  ladle__gpu *gpu;
  const share *what;
  uint8_t *staging; /* pinned */
  ladle_status status;
  char error[LADLE_ERROR_MAX];
  int failed_slot;
  pthread_mutex_t lock;
} cpu_job;

static void cpu_decode_one(void *ctx, int item, int worker) {
  cpu_job *job = ctx;
  ladle__node *n = job->node;
  int slot = job->what->slots[item];
  ladle__decoder_sample *ss = (ladle__decoder_sample *)(n->sample_states + (size_t)slot * sizeof(ladle__decoder_sample));
  const ladle_batch *in = n->in_batches[0];
  ladle_status st = ladle__image_decode(ladle_batch_data(in, slot), (size_t)ladle_batch_shape(in, slot)[0], ss->name,
                                        &ss->info, &ss->params, job->staging + job->what->offsets[item]);
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

/* Queues the CPU decodes of `what` on the workers (into pinned staging);
 * *started = 1 when there was something to queue. */
static ladle_status start_cpu_share(ladle__gpu *g, ladle__job *job, cpu_job *work, const share *what, int *started) {
  if (!what->count) return LADLE_OK;
  ladle_status st = ladle__gpu_host_scratch(g, what->bytes, (void **)&work->staging);
  if (st != LADLE_OK) return st;
  work->what = what;
  ladle__parallel_start(g->workers, job, what->count, cpu_decode_one, work);
  *started = 1;
  return LADLE_OK;
}

/* Copies a CPU-decoded share to the device in one copy and adds the crops
 * that place each image in its output slot. */
static ladle_status place_cpu_share(ladle__gpu *g, const ladle_batch *out, const cpu_job *work,
                                    ladle__gpu_crop_flip_desc *crops, int *num_crops) {
  ladle_status st = LADLE_OK;
  const share *what = work->what;
  /* One copy of the whole share, which the crop kernel places: a copy per
   * image would cost a driver call each, and the training loop contends for
   * the driver (README.md, "Measured"). */
  uint8_t *dev_staging = NULL;
  LADLE_TRY(ladle__gpu_device_scratch(g, what->bytes, (void **)&dev_staging));
  LADLE_TRY(ladle__cuda_copy(dev_staging, work->staging, what->bytes, g->stream));
  for (int k = 0; k < what->count; k++) {
    const int64_t *shape = ladle_batch_shape(out, what->slots[k]);
    int h = (int)shape[0], w = (int)shape[1], c = (int)shape[2];
    crops[(*num_crops)++] = (ladle__gpu_crop_flip_desc){dev_staging + what->offsets[k],
                                                        ladle_batch_data(out, what->slots[k]), h, w, c, 1, 0, 0, w, h,
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

/* Setup, on a worker: decides who decodes the sample. Deterministic: the
 * slot, the arguments and the image's headers decide. */
ladle_status ladle__decoders_mixed_route(ladle__node *n, ladle__sample *s, ladle__decoder_sample *ss) {
  ladle__decoder_state *d = n->state;
  ladle__shared_nvjpeg *sh = d->nvjpeg;
  ladle__tensor in = ladle__input(n, s, 0);
  size_t size = (size_t)in.shape[0];
  int upright = ss->info.orientation == 1 || !ss->params.apply_orientation;
  ss->route = LADLE__ROUTE_CPU;
  if (!sh || ss->info.format != LADLE__IMAGE_JPEG || !upright || !ends_with_eoi(in.data, size)) return LADLE_OK;
  int cropped, ok = 0;
  ladle__nvjpeg_roi roi = roi_of(ss, &cropped);
  ladle_status st = LADLE_OK;
  if (to_gpu(s->slot, ladle__decoder_share(d))) {
    int parser = s->worker % PARSERS;
    pthread_mutex_lock(&sh->parser_locks[parser]);
    st = ladle__nvjpeg_supported(sh->decoder, parser, in.data, size, ss->name, cropped && sh->roi ? &roi : NULL, &ok);
    pthread_mutex_unlock(&sh->parser_locks[parser]);
    if (st != LADLE_OK || ok) {
      if (ok) ss->route = LADLE__ROUTE_HW;
      return st;
    }
  }
  /* Not for the hardware decoder (not in its share, or not taken): large
   * enough ones go to the GPU-Huffman decoder, as in DALI (an image above
   * max_pixels was refused before: its decoder is never made for nothing). */
  if ((int64_t)ss->info.stored_width * ss->info.stored_height <= d->hybrid_threshold) return LADLE_OK;
  const ladle__hybrid_nvjpeg *h = NULL;
  st = hybrid_get(n, d, &h);
  if (st != LADLE_OK) return st;
  st = ladle__nvjpeg_supported(h->decoder, s->worker, in.data, size, ss->name, cropped && h->roi ? &roi : NULL, &ok);
  if (st == LADLE_OK && ok) ss->route = LADLE__ROUTE_GPU_HYBRID;
  return st;
}

/* Adds sample i to a share; for an nvJPEG route (roi_capable: its decoder
 * takes regions) also to its decode list, straight into the output, or as a
 * whole-image decode into device scratch plus the crop that places the window. */
static ladle_status add_sample(ladle__gpu *g, ladle__node *n, share *to, int i, int nvjpeg, int roi_capable) {
  ladle_status st = LADLE_OK;
  const ladle_batch *in = n->in_batches[0];
  ladle_batch *out = n->out_batches[0];
  const ladle__decoder_sample *ss =
      (const ladle__decoder_sample *)(n->sample_states + (size_t)i * sizeof(ladle__decoder_sample));
  const int64_t *shape = ladle_batch_shape(out, i);
  to->slots[to->count] = i;
  to->offsets[to->count] = to->bytes;
  to->bytes += (size_t)(shape[0] * shape[1] * shape[2] + 63) & ~(size_t)63;
  if (!nvjpeg) {
    to->count++;
    return LADLE_OK;
  }
  int cropped;
  ladle__nvjpeg_roi roi = roi_of(ss, &cropped);
  ladle__nvjpeg_image *im = &to->images[to->count++];
  *im = (ladle__nvjpeg_image){ladle_batch_data(in, i), (size_t)ladle_batch_shape(in, i)[0], ss->name,
                              ladle_batch_data(out, i), (size_t)(shape[1] * shape[2]), 0, roi};
  if (cropped && roi_capable) {
    im->has_roi = 1;
  } else if (cropped) {
    int channels = (int)shape[2];
    void *full = NULL;
    LADLE_TRY(ladle__gpu_device_scratch(g, (size_t)ss->info.stored_width * ss->info.stored_height * channels, &full));
    im->out = full;
    im->pitch = (size_t)ss->info.stored_width * channels;
    to->crops[to->num_crops++] = (ladle__gpu_crop_flip_desc){full, ladle_batch_data(out, i), ss->info.stored_height,
                                                             ss->info.stored_width, channels, 1, roi.x, roi.y, roi.w,
                                                             roi.h, 0, 0, 0};
  }
done:
  return st;
}

/* The GPU-Huffman share's decode, on a worker. */
typedef struct hybrid_job {
  ladle__hybrid_nvjpeg *h;
  const share *what;
  ladle__nvjpeg_format format;
  ladle_status status;
  int joined; /* h->join follows whatever the decode queued on h->stream */
  char error[LADLE_ERROR_MAX];
} hybrid_job;

static void hybrid_decode(void *ctx, int item, int worker) {
  hybrid_job *job = ctx;
  ladle__hybrid_nvjpeg *h = job->h;
  ladle_status st = ladle__cuda_use_device(h->device, NULL);
  /* The output and scratch memory may have been in use on the pipeline's stream. */
  if (st == LADLE_OK) st = ladle__cuda_stream_wait(h->stream, h->fork);
  if (st == LADLE_OK) st = ladle__nvjpeg_decode(h->decoder, job->what->images, job->what->count, job->format, h->stream);
  if (st != LADLE_OK) snprintf(job->error, sizeof job->error, "%s", ladle_last_error());
  /* Also after a failure: whatever was queued, the pipeline's stream must wait for it. */
  ladle_status rec = ladle__cuda_event_record(h->join, h->stream);
  job->joined = rec == LADLE_OK;
  if (!job->joined) {
    if (st == LADLE_OK) {
      st = rec;
      snprintf(job->error, sizeof job->error, "%s", ladle_last_error());
    }
    (void)ladle__cuda_stream_sync(h->stream); /* nothing to join: nothing may still run */
  }
  job->status = st;
}

/* Waits for the GPU-Huffman job and puts the pipeline's stream after its GPU
 * work; its own outcome stays in job->status. Returns the join's status. */
static ladle_status finish_hybrid(ladle__gpu *g, ladle__job *job, hybrid_job *hj) {
  ladle__parallel_wait(g->workers, job);
  if (!hj->joined) return LADLE_OK; /* the job waited for its stream itself */
  ladle_status st = ladle__cuda_stream_wait(g->stream, hj->h->join);
  if (st != LADLE_OK) (void)ladle__cuda_event_sync(hj->h->join); /* no order on the GPU: wait on the host */
  return st;
}

/* decoder_balance="adaptive": one step (1/64) of the hardware share towards
 * what the batch waited for. A wait under WAITED counts as none: the engines'
 * event and the workers' join take that long when nothing is behind. */
#define WAITED 300000 /* ns */
static void rebalance(ladle__decoder_state *d, int64_t engines_ns, int64_t cpu_ns) {
  int share = atomic_load(&d->share64);
  if (engines_ns > WAITED && engines_ns > cpu_ns) share--; /* the engines are behind: the workers take more */
  else share++; /* the workers are behind, or nobody is: the engines take more, the cores stay free */
  atomic_store(&d->share64, share < 0 ? 0 : share > 64 ? 64 : share);
}

/* The per-batch lists, carved out of one block. */
static void *carve(uint8_t **p, size_t bytes) {
  void *r = *p;
  *p += (bytes + 63) & ~(size_t)63;
  return r;
}

static size_t list_bytes(int batch) {
  size_t b = (size_t)batch;
  return 2 * ((sizeof(ladle__nvjpeg_image) * b + 63) & ~(size_t)63) +
         2 * ((sizeof(ladle__gpu_crop_flip_desc) * b + 63) & ~(size_t)63) + 3 * ((sizeof(int) * b + 63) & ~(size_t)63) +
         3 * ((sizeof(size_t) * b + 63) & ~(size_t)63);
}

ladle_status ladle__decoders_mixed_run_batch(ladle__node *n, ladle__gpu *g) {
  ladle_status st = LADLE_OK;
  ladle__decoder_state *d = n->state;
  ladle__shared_nvjpeg *sh = d->nvjpeg;
  ladle__hybrid_nvjpeg *hy = d->hybrid;
  int batch = n->config->batch_size;
  ladle_batch *out = n->out_batches[0];
  share hw = {0}, hyb = {0}, cpu = {0};
  int locked = 0, cpu_started = 0, hyb_started = 0, hw_retried = 0, hyb_retried = 0;
  int hw_retry_started = 0, hyb_retry_started = 0;
  int64_t engines_ns = 0, cpu_ns = 0; /* waited for: the engines, the CPU share */
  ladle__job cpu_run, hyb_run, hw_retry_run, hyb_retry_run;
  hybrid_job hj = {.h = hy};
  cpu_job work = {.node = n, .gpu = g, .failed_slot = batch};
  cpu_job hw_retry = {.node = n, .gpu = g, .failed_slot = batch};
  cpu_job hyb_retry = {.node = n, .gpu = g, .failed_slot = batch};
  pthread_mutex_init(&work.lock, NULL);
  pthread_mutex_init(&hw_retry.lock, NULL);
  pthread_mutex_init(&hyb_retry.lock, NULL);
  /* The per-batch lists live in worker 0's scratch, reused every iteration:
   * run_batch runs between parallel passes, and the CPU decodes below do not
   * use node scratch. */
  uint8_t *lists = NULL;
  LADLE_TRY(ladle__scratch(n, &(ladle__sample){.worker = 0}, list_bytes(batch), (void **)&lists));
  hw.images = carve(&lists, sizeof *hw.images * (size_t)batch);
  hyb.images = carve(&lists, sizeof *hyb.images * (size_t)batch);
  hw.crops = carve(&lists, sizeof *hw.crops * (size_t)batch); /* also the batch's final crop list */
  hyb.crops = carve(&lists, sizeof *hyb.crops * (size_t)batch);
  share *shares[3] = {&hw, &hyb, &cpu};
  for (int k = 0; k < 3; k++) {
    shares[k]->slots = carve(&lists, sizeof(int) * (size_t)batch);
    shares[k]->offsets = carve(&lists, sizeof(size_t) * (size_t)batch);
  }
  ladle__nvjpeg_format format = d->color == LADLE__COLOR_BGR ? LADLE__NVJPEG_BGR
                                : d->color == LADLE__COLOR_GRAY ? LADLE__NVJPEG_GRAY : LADLE__NVJPEG_RGB;
  for (int i = 0; i < batch; i++) {
    const ladle__decoder_sample *ss =
        (const ladle__decoder_sample *)(n->sample_states + (size_t)i * sizeof(ladle__decoder_sample));
    if (ss->route == LADLE__ROUTE_HW) LADLE_TRY(add_sample(g, n, &hw, i, 1, sh->roi));
    else if (ss->route == LADLE__ROUTE_GPU_HYBRID) LADLE_TRY(add_sample(g, n, &hyb, i, 1, hy->roi));
    else LADLE_TRY(add_sample(g, n, &cpu, i, 0, 0));
  }
  /* The GPU-Huffman share first, so that a worker takes it at once; then the
   * CPU share on the other workers, while the executor drives the engines. */
  if (hyb.count) {
    LADLE_TRY(ladle__cuda_event_record(hy->fork, g->stream));
    hj.what = &hyb;
    hj.format = format;
    ladle__parallel_start(g->workers, &hyb_run, 1, hybrid_decode, &hj);
    hyb_started = 1;
  }
  LADLE_TRY(start_cpu_share(g, &cpu_run, &work, &cpu, &cpu_started));
  if (hw.count) {
    pthread_mutex_lock(&sh->lock);
    locked = 1;
    int64_t t0 = ladle__now_ns();
    st = ladle__nvjpeg_decode(sh->decoder, hw.images, hw.count, format, g->stream);
    atomic_fetch_add(&d->nvjpeg_ns, ladle__now_ns() - t0);
    engines_ns = ladle__nvjpeg_take_wait_ns(sh->decoder);
    atomic_fetch_add(&d->engines_wait_ns, engines_ns);
    if (st == LADLE_ERROR_CORRUPT_DATA || st == LADLE_ERROR_UNSUPPORTED) {
      /* nvJPEG refused the data: its share decodes on the CPU instead, which
       * gives each image its own verdict (a bad one fails there, naming its
       * file, and can be skipped; one nvJPEG only disliked decodes). */
      st = LADLE_OK;
      hw_retried = 1;
    } else if (st != LADLE_OK) {
      goto done;
    }
    pthread_mutex_unlock(&sh->lock);
    locked = 0;
  }
  if (hyb_started) {
    hyb_started = 0;
    LADLE_TRY(finish_hybrid(g, &hyb_run, &hj));
    if (hj.status == LADLE_ERROR_CORRUPT_DATA || hj.status == LADLE_ERROR_UNSUPPORTED) {
      hyb_retried = 1; /* as for the hardware share */
    } else if (hj.status != LADLE_OK) {
      ladle__restore_error(hj.error);
      st = hj.status;
      goto done;
    }
  }
  if (hw_retried) LADLE_TRY(start_cpu_share(g, &hw_retry_run, &hw_retry, &hw, &hw_retry_started));
  if (hyb_retried) LADLE_TRY(start_cpu_share(g, &hyb_retry_run, &hyb_retry, &hyb, &hyb_retry_started));
  if (cpu_started) {
    int64_t t0 = ladle__now_ns();
    ladle__parallel_wait(g->workers, &cpu_run);
    cpu_ns = ladle__now_ns() - t0;
    atomic_fetch_add(&d->cpu_wait_ns, cpu_ns);
    cpu_started = 0;
  }
  if (hw_retry_started) {
    ladle__parallel_wait(g->workers, &hw_retry_run);
    hw_retry_started = 0;
  }
  if (hyb_retry_started) {
    ladle__parallel_wait(g->workers, &hyb_retry_run);
    hyb_retry_started = 0;
  }
  /* The first failing slot of the batch, whichever share it was in (with
   * skipping, every data failure is noted for the executor already). */
  const cpu_job *first = &work;
  if (hw_retry.failed_slot < first->failed_slot) first = &hw_retry;
  if (hyb_retry.failed_slot < first->failed_slot) first = &hyb_retry;
  if (first->status != LADLE_OK) {
    ladle__restore_error(first->error);
    st = first->status;
    goto done;
  }
  /* The crops: the nvJPEG shares' whole-image decodes (void for a share the
   * CPU decoded again), then the placement of each CPU-decoded share. */
  int num_crops = hw_retried ? 0 : hw.num_crops;
  if (!hyb_retried && hyb.num_crops) {
    memcpy(hw.crops + num_crops, hyb.crops, sizeof *hyb.crops * (size_t)hyb.num_crops);
    num_crops += hyb.num_crops;
  }
  if (cpu.count) LADLE_TRY(place_cpu_share(g, out, &work, hw.crops, &num_crops));
  if (hw_retried) LADLE_TRY(place_cpu_share(g, out, &hw_retry, hw.crops, &num_crops));
  if (hyb_retried) LADLE_TRY(place_cpu_share(g, out, &hyb_retry, hw.crops, &num_crops));
  if (num_crops) {
    void *host = NULL, *dev = NULL;
    size_t bytes = ladle__gpu_crop_flip_param_bytes(num_crops);
    LADLE_TRY(ladle__gpu_params(g, bytes, &host, &dev));
    LADLE_TRY(ladle__gpu_crop_flip(hw.crops, num_crops, host, dev, bytes, g->stream));
  }
  atomic_fetch_add(&d->decoded[LADLE__ROUTE_HW], hw_retried ? 0 : hw.count);
  atomic_fetch_add(&d->decoded[LADLE__ROUTE_GPU_HYBRID], hyb_retried ? 0 : hyb.count);
  atomic_fetch_add(&d->decoded[LADLE__ROUTE_CPU],
                   cpu.count + (hw_retried ? hw.count : 0) + (hyb_retried ? hyb.count : 0));
  atomic_fetch_add(&d->retried_on_cpu, (hw_retried ? hw.count : 0) + (hyb_retried ? hyb.count : 0));
  if (d->adaptive) rebalance(d, engines_ns, cpu_ns);
done:
  if (locked) pthread_mutex_unlock(&sh->lock);
  /* The workers write into our scratch, and the GPU-Huffman work must come
   * before the iteration's end on the pipeline's stream (what it writes is
   * kept until then); keep the first error's message. */
  if (cpu_started) ladle__parallel_wait(g->workers, &cpu_run);
  if (hw_retry_started) ladle__parallel_wait(g->workers, &hw_retry_run);
  if (hyb_retry_started) ladle__parallel_wait(g->workers, &hyb_retry_run);
  if (hyb_started) {
    char saved[LADLE_ERROR_MAX];
    snprintf(saved, sizeof saved, "%s", ladle_last_error());
    (void)finish_hybrid(g, &hyb_run, &hj);
    ladle__restore_error(saved);
  }
  pthread_mutex_destroy(&work.lock);
  pthread_mutex_destroy(&hw_retry.lock);
  pthread_mutex_destroy(&hyb_retry.lock);
  return st;
}
#else
/* ISO C forbids an empty translation unit. */
typedef int ladle__decoders_mixed_unused;
#endif

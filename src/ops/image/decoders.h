/* What the decoder operators keep per instance; the pipeline's planner sets
 * min_width/min_height when the only consumer of a random-crop decoder is a
 * resize to a fixed size, allowing DCT-scaled decoding. */
#ifndef LADLE_OPS_DECODERS_H
#define LADLE_OPS_DECODERS_H

#include "codec/image.h"
#include "ops/op.h"
#include "ops/image/random_crop.h"

/* Which part of the image a decoder keeps. */
typedef enum ladle__decoder_window {
  LADLE__DECODER_WHOLE,       /* decoders.image */
  LADLE__DECODER_RANDOM_CROP, /* decoders.image_random_crop */
  LADLE__DECODER_CROP,        /* decoders.image_crop */
  LADLE__DECODER_SLICE        /* decoders.image_slice */
} ladle__decoder_window;

/* Who decodes a sample (the mixed backend decides in setup). */
typedef enum ladle__decoder_route {
  LADLE__ROUTE_CPU = 0,    /* libjpeg-turbo / libpng on the workers */
  LADLE__ROUTE_HW,         /* the hw_decoder_load share: the device's shared nvJPEG decoder */
  LADLE__ROUTE_GPU_HYBRID, /* hybrid_huffman_threshold: the node's nvJPEG GPU_HYBRID decoder */
  LADLE__ROUTE_COUNT
} ladle__decoder_route;

typedef struct ladle__decoder_state {
  ladle__color color;
  int apply_orientation;
  ladle__decoder_window window;
  int axes[LADLE_MAX_NDIM], num_axes; /* image_slice: the sliced axes of HWC (0 or 1) */
  ladle__random_crop_params crop;
  int min_width, min_height; /* 0: decode at full resolution */
  double gpu_share;          /* mixed: hw_decoder_load */
  int adaptive;              /* mixed: decoder_balance="adaptive" */
  _Atomic int share64;       /* adaptive: the hardware share in 64ths (run_batch moves it, setup reads it) */
  int64_t hybrid_threshold;  /* mixed: hybrid_huffman_threshold */
  struct ladle__shared_nvjpeg *nvjpeg; /* mixed: the device's decoder, or NULL (then the CPU decodes) */
  /* mixed: this node's GPU_HYBRID decoder, made by the first image routed to
   * it (NULL until then); a failure to make it, kept for later images */
  struct ladle__hybrid_nvjpeg *_Atomic hybrid;
  ladle_status hybrid_status;
  char hybrid_error[LADLE_ERROR_MAX];
  _Atomic int64_t decoded[LADLE__ROUTE_COUNT]; /* images delivered by each route (ladle_op_stats) */
  _Atomic int64_t retried_on_cpu;              /* of the CPU's: sent to nvJPEG, which refused their batch */
  /* mixed, for ladle_op_stats: time run_batch spent in nvJPEG's batched call
   * (of which waiting for the engines to finish the previous batch) and waiting
   * for the CPU share: which side of the balance is behind. */
  _Atomic int64_t nvjpeg_ns, engines_wait_ns, cpu_wait_ns;
} ladle__decoder_state;

/* The hardware share in use: hw_decoder_load, or the adaptive one. */
static inline double ladle__decoder_share(const ladle__decoder_state *d) {
  return d->adaptive ? atomic_load(&d->share64) / 64.0 : d->gpu_share;
}

/* Per sample (the node's sample_states). */
typedef struct ladle__decoder_sample {
  ladle__image_info info;
  ladle__decode_params params;
  const char *name; /* the sample's path, for run_batch's messages */
  int route;        /* mixed: a ladle__decoder_route (decided in setup, in parallel) */
} ladle__decoder_sample;

#ifdef LADLE_HAVE_CUDA
/* The mixed backend (decoders_mixed.c): init finds the device's shared nvJPEG
 * decoder (none: the CPU workers decode everything); route, in setup, decides
 * who decodes the sample, making the node's GPU_HYBRID decoder for the first
 * image that goes there; run_batch decodes the batch into device memory; fini
 * frees the GPU_HYBRID decoder if it was made (after the executor has
 * stopped: nothing is in flight on the host then). */
ladle_status ladle__decoders_mixed_init(ladle__node *n, ladle__decoder_state *d);
void ladle__decoders_mixed_fini(ladle__decoder_state *d);
ladle_status ladle__decoders_mixed_route(ladle__node *n, ladle__sample *s, ladle__decoder_sample *ss);
ladle_status ladle__decoders_mixed_run_batch(ladle__node *n, ladle__gpu *g);
#endif

extern const ladle__op_def ladle__op_decoders_image;
extern const ladle__op_def ladle__op_decoders_image_random_crop;
extern const ladle__op_def ladle__op_decoders_image_crop;
extern const ladle__op_def ladle__op_decoders_image_slice;

#endif

/* What the decoder operators keep per instance; the pipeline's planner sets
 * min_width/min_height when the only consumer of a random-crop decoder is a
 * resize to a fixed size, allowing DCT-scaled decoding. */
#ifndef LADLE_OPS_DECODERS_H
#define LADLE_OPS_DECODERS_H

#include "codec/image.h"
#include "ops/op.h"
#include "ops/image/random_crop.h"

typedef struct ladle__decoder_state {
  ladle__color color;
  int apply_orientation;
  int random_crop;
  ladle__random_crop_params crop;
  int min_width, min_height; /* 0: decode at full resolution */
  double gpu_share;          /* mixed: hw_decoder_load */
  struct ladle__shared_nvjpeg *nvjpeg; /* mixed: the device's decoder, or NULL (then the CPU decodes) */
} ladle__decoder_state;

extern const ladle__op_def ladle__op_decoders_image;
extern const ladle__op_def ladle__op_decoders_image_random_crop;

#endif

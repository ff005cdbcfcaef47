/* The arguments every reader takes for sharding and shuffling (io/sampler.h),
 * with DALI's names, written once: a reader's schema lists them as a block
 * of LADLE__SAMPLER_ARG_COUNT entries starting at its enum's `first`. */
#ifndef LADLE_OPS_READER_ARGS_H
#define LADLE_OPS_READER_ARGS_H

#include "io/sampler.h"
#include "ops/op.h"

enum {
  LADLE__SAMPLER_ARG_RANDOM_SHUFFLE, LADLE__SAMPLER_ARG_SHUFFLE_AFTER_EPOCH, LADLE__SAMPLER_ARG_SEED,
  LADLE__SAMPLER_ARG_SHARD_ID, LADLE__SAMPLER_ARG_NUM_SHARDS, LADLE__SAMPLER_ARG_STICK_TO_SHARD,
  LADLE__SAMPLER_ARG_PAD_LAST_BATCH, LADLE__SAMPLER_ARG_INITIAL_FILL, LADLE__SAMPLER_ARG_READ_AHEAD,
  LADLE__SAMPLER_ARG_PREFETCH_QUEUE_DEPTH, LADLE__SAMPLER_ARG_DONT_USE_MMAP, LADLE__SAMPLER_ARG_LAZY_INIT,
  LADLE__SAMPLER_ARG_SHUFFLE_AFTER_EPOCH_SEED, LADLE__SAMPLER_ARG_COUNT
};

/* Designated initializers of the block, for a schema array. */
#define LADLE__SAMPLER_ARG_SCHEMAS(first) \
  [(first) + LADLE__SAMPLER_ARG_RANDOM_SHUFFLE] = {LADLE_BOOL_ARG("random_shuffle", 0), \
      .doc = "Shuffle the records: a uniform permutation of the whole data set per epoch, drawn from (seed, " \
             "epoch) and the same on every shard (unlike DALI's shuffle buffer)."}, \
  [(first) + LADLE__SAMPLER_ARG_SHUFFLE_AFTER_EPOCH] = {LADLE_BOOL_ARG("shuffle_after_epoch", 0), \
      .doc = "Same as random_shuffle (accepted for DALI scripts)."}, \
  [(first) + LADLE__SAMPLER_ARG_SEED] = {LADLE_INT_ARG("seed", -1), LADLE_RANGE(-1.0, 9.2e18), \
      .doc = "Seed of the shuffle; -1: the pipeline's seed. Give every shard the same seed."}, \
  [(first) + LADLE__SAMPLER_ARG_SHARD_ID] = {LADLE_INT_ARG("shard_id", 0), LADLE_RANGE(0.0, 2147483647.0), \
      .doc = "Which shard this pipeline reads: positions [floor(i*N/S), floor((i+1)*N/S))."}, \
  [(first) + LADLE__SAMPLER_ARG_NUM_SHARDS] = {LADLE_INT_ARG("num_shards", 1), LADLE_RANGE(1.0, 2147483647.0), \
      .doc = "Number of shards the data set is split into."}, \
  [(first) + LADLE__SAMPLER_ARG_STICK_TO_SHARD] = {LADLE_BOOL_ARG("stick_to_shard", 0), \
      .doc = "Keep reading shard_id every epoch; otherwise epoch e reads shard (shard_id + e) % num_shards."}, \
  [(first) + LADLE__SAMPLER_ARG_PAD_LAST_BATCH] = {LADLE_BOOL_ARG("pad_last_batch", 0), \
      .doc = "End every epoch on a batch boundary, the same number of batches on every shard, padding with the " \
             "shard's last record."}, \
  [(first) + LADLE__SAMPLER_ARG_INITIAL_FILL] = {LADLE_INT_ARG("initial_fill", 1024), \
      .no_effect = 1, .doc = "Accepted for DALI scripts; no effect (ladle shuffles the whole epoch)."}, \
  [(first) + LADLE__SAMPLER_ARG_READ_AHEAD] = {LADLE_BOOL_ARG("read_ahead", 0), \
      .no_effect = 1, .doc = "Accepted for DALI scripts; no effect."}, \
  [(first) + LADLE__SAMPLER_ARG_PREFETCH_QUEUE_DEPTH] = {LADLE_INT_ARG("prefetch_queue_depth", 1), \
      .no_effect = 1, .doc = "Accepted for DALI scripts; no effect."}, \
  [(first) + LADLE__SAMPLER_ARG_DONT_USE_MMAP] = {LADLE_BOOL_ARG("dont_use_mmap", 0), \
      .no_effect = 1, .doc = "Accepted for DALI scripts; ladle always reads with read(2)."}, \
  [(first) + LADLE__SAMPLER_ARG_LAZY_INIT] = {LADLE_BOOL_ARG("lazy_init", 0), \
      .no_effect = 1, .doc = "Accepted for DALI scripts; the listing happens at build."}, \
  [(first) + LADLE__SAMPLER_ARG_SHUFFLE_AFTER_EPOCH_SEED] = {LADLE_OPTIONAL_ARG("shuffle_after_epoch_seed", \
      LADLE_ARG_INT), LADLE_RANGE(0.0, 9.2e18), \
      .doc = "Seed of the shuffle (DALI's name for shuffle_after_epoch's seed): the same as seed, which " \
             "random_shuffle and shuffle_after_epoch both use here; giving both with different values is an " \
             "error."}

/* Two hints of DALI's file-based readers (readers.file, coco, numpy,
 * tfrecord, webdataset) that cannot change results here, as a block of
 * LADLE__HINT_ARG_COUNT entries starting at `first`. */
enum { LADLE__HINT_ARG_SKIP_CACHED_IMAGES, LADLE__HINT_ARG_TENSOR_INIT_BYTES, LADLE__HINT_ARG_COUNT };

#define LADLE__HINT_ARG_SCHEMAS(first) \
  [(first) + LADLE__HINT_ARG_SKIP_CACHED_IMAGES] = {LADLE_BOOL_ARG("skip_cached_images", 0), .no_effect = 1, \
      .doc = "Accepted for DALI scripts; no effect: ladle has no decoder cache, so no image is ever cached."}, \
  [(first) + LADLE__HINT_ARG_TENSOR_INIT_BYTES] = {LADLE_INT_ARG("tensor_init_bytes", 1048576), .no_effect = 1, \
      .doc = "Accepted for DALI scripts; no effect (a memory hint)."}

/* The sampler parameters a reader's arguments give (the block at `first`),
 * for `num_records` records; batch_size from the pipeline. Fails, naming the
 * operator, on two different seeds. */
ladle_status ladle__reader_sampler_params(const ladle__node *node, int first, int64_t num_records,
                                          ladle__sampler_params *out);

#endif

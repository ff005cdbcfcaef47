/* Reading the sharding and shuffling arguments of a reader (reader_args.h). */
#include "ops/readers/reader_args.h"

ladle_status ladle__reader_sampler_params(const ladle__node *n, int first, int64_t num_records,
                                          ladle__sampler_params *out) {
  int64_t seed = ladle__arg_int(n, NULL, first + LADLE__SAMPLER_ARG_SEED);
  if (ladle__arg_given(n, first + LADLE__SAMPLER_ARG_SHUFFLE_AFTER_EPOCH_SEED)) {
    int64_t other = ladle__arg_int(n, NULL, first + LADLE__SAMPLER_ARG_SHUFFLE_AFTER_EPOCH_SEED);
    if (seed >= 0 && seed != other)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                           "'seed' (%lld) and 'shuffle_after_epoch_seed' (%lld) both seed the shuffle: give one",
                           (long long)seed, (long long)other);
    seed = other;
  }
  *out = (ladle__sampler_params){
      .num_records = num_records,
      .random_shuffle = ladle__arg_int(n, NULL, first + LADLE__SAMPLER_ARG_RANDOM_SHUFFLE) ||
                        ladle__arg_int(n, NULL, first + LADLE__SAMPLER_ARG_SHUFFLE_AFTER_EPOCH),
      .seed = seed >= 0 ? (uint64_t)seed : n->config->seed,
      .shard_id = (int)ladle__arg_int(n, NULL, first + LADLE__SAMPLER_ARG_SHARD_ID),
      .num_shards = (int)ladle__arg_int(n, NULL, first + LADLE__SAMPLER_ARG_NUM_SHARDS),
      .stick_to_shard = ladle__arg_int(n, NULL, first + LADLE__SAMPLER_ARG_STICK_TO_SHARD) != 0,
      .pad_last_batch = ladle__arg_int(n, NULL, first + LADLE__SAMPLER_ARG_PAD_LAST_BATCH) != 0,
      .batch_size = n->config->batch_size,
  };
  return LADLE_OK;
}

/* Which records make up batch k of a reader: sharding, shuffling, epochs and
 * padding as a pure function of (params, iteration). Shared by every reader
 * that has N indexable records (file trees now, tar and TFRecord later). */
#ifndef LADLE_IO_SAMPLER_H
#define LADLE_IO_SAMPLER_H

#include <stdint.h>

#include "ladle/ladle.h"

/*
 * The model (DALI's, made addressable):
 *
 * Epoch order. Without shuffling, epoch e reads the records in listing order
 * 0..N-1. With random_shuffle, epoch e reads a uniform permutation of all N
 * records, drawn by Fisher-Yates from ladle__rng keyed by (seed,
 * LADLE__SAMPLER_RNG_OP) and addressed by (epoch e, sample 0): starting from
 * the identity, for i = N-1 down to 1, swap perm[i] with perm[j], j =
 * ladle__rng_below(i + 1). The permutation depends on (seed, e) only, so every
 * shard sees the same one, and shards stay disjoint.
 *
 * Shards. Shard s of S holds positions [floor(s*N/S), floor((s+1)*N/S)) of
 * the epoch's order; sizes are floor(N/S) or ceil(N/S). In epoch e the reader
 * reads shard (shard_id + e) % S (stick_to_shard = 0, DALI's default) or
 * always shard_id (stick_to_shard = 1).
 *
 * Stream without pad_last_batch. The reader is endless: epoch 0's shard
 * samples in order, then epoch 1's, and so on; batch k holds stream positions
 * [k*B, (k+1)*B), so a batch that reaches the end of an epoch continues with
 * the next epoch's first samples (what DALI does). The shard size of epoch e
 * repeats with period S and sums to N over a period, which gives the
 * (epoch, position) of a stream position in O(S).
 *
 * Stream with pad_last_batch. Every epoch has exactly
 * ceil(ceil(N/S) / B) batches on every shard (so all ranks run the same
 * number of iterations). Batch k belongs to epoch k / that count; slots past
 * the shard's size repeat the shard's last sample and are marked pad = 1
 * (their position is >= the shard size). The next epoch starts a fresh batch.
 *
 * Limits: 1 <= N <= UINT32_MAX, num_shards <= N (as DALI: no empty shard),
 * iteration * batch_size < 2^63. The RNG counter holds the epoch modulo 2^32.
 */

/* The operator id under which shuffles draw from ladle__rng: "sampler" in
 * ASCII. Changing it changes every shuffled order. */
#define LADLE__SAMPLER_RNG_OP 0x73616D706C6572ull

typedef struct ladle__sampler_params {
  int64_t num_records; /* N >= 1 */
  int random_shuffle;
  uint64_t seed;
  int shard_id, num_shards; /* 0 <= shard_id < num_shards <= N */
  int stick_to_shard;
  int pad_last_batch;
  int batch_size; /* >= 1 */
} ladle__sampler_params;

typedef struct ladle__sample_ref {
  int64_t index;    /* record index in 0..N-1 */
  int64_t epoch;    /* the epoch this sample belongs to */
  int64_t position; /* its position in its epoch's shard, 0-based; padding: >= shard size */
  int pad;          /* 1: a padding duplicate (pad_last_batch) */
} ladle__sample_ref;

typedef struct ladle__sampler ladle__sampler;

/* Checks the parameters (errors name the bad one) and creates a sampler. */
ladle_status ladle__sampler_create(const ladle__sampler_params *params, ladle__sampler **out);
/* The checks of batch_size, num_shards and shard_id alone (callers run them
 * before slow work, such as listing a folder tree). */
ladle_status ladle__sampler_check_batching(int batch_size, int num_shards, int shard_id);
/* NULL is allowed. */
void ladle__sampler_destroy(ladle__sampler *sampler);

/* The first position of shard `shard` of `num_shards` over n records:
 * floor(shard * n / num_shards), computed without overflow. */
int64_t ladle__shard_begin(int64_t n, int num_shards, int shard);

/* The shard read in `epoch` and its size. */
int ladle__sampler_shard_of_epoch(const ladle__sampler *sampler, int64_t epoch);
int64_t ladle__sampler_shard_size(const ladle__sampler *sampler, int64_t epoch);

/* With pad_last_batch: batches per epoch, ceil(ceil(N/S) / B). Without: 0 (an
 * epoch need not start at a batch boundary). */
int64_t ladle__sampler_batches_per_epoch(const ladle__sampler *sampler);

/* Without pad_last_batch: the epoch and in-shard position of stream position
 * `pos` (>= 0). O(num_shards). */
void ladle__sampler_locate(const ladle__sampler *sampler, int64_t pos, int64_t *epoch,
                           int64_t *position);

/* Fills perm[0..n-1] with the shuffled order of `epoch` (see above). Pure;
 * O(n). n <= UINT32_MAX. */
void ladle__sampler_shuffle(int64_t n, uint64_t seed, int64_t epoch, uint32_t *perm);

/* DALI's reader metadata for these parameters: epoch_size = N;
 * epoch_size_padded = S * ceil(N / S) with pad_last_batch, else N (the value
 * DALI reports; see io/file_reader.h). */
void ladle__sampler_meta(const ladle__sampler *sampler, ladle_reader_meta *meta);

/* The batch_size samples of `iteration` (0-based), written to refs[0..B-1].
 * Pure in its result. Thread-safe: the shuffled orders of the two most
 * recently used epochs are cached behind a mutex, so the first call in an
 * epoch costs an O(N) shuffle and later ones O(B + num_shards). */
void ladle__sampler_plan(const ladle__sampler *sampler, int64_t iteration, ladle__sample_ref *refs);

#endif

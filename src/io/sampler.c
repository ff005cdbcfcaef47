/* Sharding, shuffling and epoch arithmetic for readers (see sampler.h for the
 * model). Everything here is a function of the parameters and the iteration. */
#include "io/sampler.h"

#include <pthread.h>
#include <stdlib.h>

#include "core/error.h"
#include "core/rng.h"

/* A cached shuffled order of one epoch. */
typedef struct perm_slot {
  int64_t epoch; /* -1: empty */
  uint64_t last_use;
  uint32_t *perm;
} perm_slot;

struct ladle__sampler {
  ladle__sampler_params p;
  int64_t max_shard; /* ceil(N/S) */
  int64_t batches_per_epoch;
  /* Mutable cache behind a const interface: it changes the cost of plan(),
   * never its result. */
  pthread_mutex_t lock;
  uint64_t uses;
  perm_slot slots[2];
};

int64_t ladle__shard_begin(int64_t n, int num_shards, int shard) {
  /* floor(s*n/S) = s*(n/S) + floor(s*(n%S)/S); s*(n%S) < S*S fits easily. */
  int64_t q = n / num_shards, r = n % num_shards;
  return (int64_t)shard * q + ((int64_t)shard * r) / num_shards;
}

ladle_status ladle__sampler_check_batching(int batch_size, int num_shards, int shard_id) {
  if (batch_size < 1)
    return LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT, "batch_size (%d) must be >= 1", batch_size);
  if (num_shards < 1)
    return LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT, "num_shards (%d) must be >= 1", num_shards);
  if (shard_id < 0 || shard_id >= num_shards)
    return LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT, "shard_id (%d) must be in 0..num_shards-1 (num_shards = %d)",
                      shard_id, num_shards);
  return LADLE_OK;
}

ladle_status ladle__sampler_create(const ladle__sampler_params *params, ladle__sampler **out) {
  ladle_status st = LADLE_OK;
  ladle__sampler *s = NULL;
  LADLE_CHECK(params && out, LADLE_ERROR_INVALID_ARGUMENT, "params and out must not be NULL");
  const ladle__sampler_params *p = params;
  LADLE_CHECK(p->num_records >= 1 && (uint64_t)p->num_records <= UINT32_MAX,
              LADLE_ERROR_INVALID_ARGUMENT, "the number of records (%lld) must be in 1..%lu",
              (long long)p->num_records, (unsigned long)UINT32_MAX);
  LADLE_TRY(ladle__sampler_check_batching(p->batch_size, p->num_shards, p->shard_id));
  /* As DALI: an empty shard could never yield a sample (nor a last sample to
   * pad with). */
  LADLE_CHECK(p->num_shards <= p->num_records, LADLE_ERROR_INVALID_ARGUMENT,
              "num_shards (%d) exceeds the number of samples (%lld); every shard needs at least "
              "one sample",
              p->num_shards, (long long)p->num_records);

  LADLE_ALLOC(s, 1);
  s->p = *p;
  s->p.random_shuffle = p->random_shuffle != 0;
  s->p.stick_to_shard = p->stick_to_shard != 0;
  s->p.pad_last_batch = p->pad_last_batch != 0;
  s->max_shard = (p->num_records + p->num_shards - 1) / p->num_shards;
  s->batches_per_epoch =
      s->p.pad_last_batch ? (s->max_shard + p->batch_size - 1) / p->batch_size : 0;
  for (int i = 0; i < 2; i++) s->slots[i].epoch = -1;
  if (s->p.random_shuffle) {
    /* Allocated now so that plan() cannot fail. */
    for (int i = 0; i < 2; i++) {
      s->slots[i].perm = malloc((size_t)p->num_records * sizeof(uint32_t));
      LADLE_CHECK(s->slots[i].perm, LADLE_ERROR_OUT_OF_MEMORY,
                  "cannot allocate the shuffle order of %lld records", (long long)p->num_records);
    }
  }
  LADLE_CHECK(pthread_mutex_init(&s->lock, NULL) == 0, LADLE_ERROR_INTERNAL,
              "pthread_mutex_init failed");
  *out = s;
  s = NULL;
done:
  if (s) {
    free(s->slots[0].perm);
    free(s->slots[1].perm);
    free(s);
  }
  return st;
}

void ladle__sampler_destroy(ladle__sampler *s) {
  if (!s) return;
  pthread_mutex_destroy(&s->lock);
  free(s->slots[0].perm);
  free(s->slots[1].perm);
  free(s);
}

int ladle__sampler_shard_of_epoch(const ladle__sampler *s, int64_t epoch) {
  if (s->p.stick_to_shard) return s->p.shard_id;
  return (int)((s->p.shard_id + epoch % s->p.num_shards) % s->p.num_shards);
}

static int64_t shard_size(const ladle__sampler *s, int shard) {
  return ladle__shard_begin(s->p.num_records, s->p.num_shards, shard + 1) -
         ladle__shard_begin(s->p.num_records, s->p.num_shards, shard);
}

int64_t ladle__sampler_shard_size(const ladle__sampler *s, int64_t epoch) {
  return shard_size(s, ladle__sampler_shard_of_epoch(s, epoch));
}

int64_t ladle__sampler_batches_per_epoch(const ladle__sampler *s) { return s->batches_per_epoch; }

void ladle__sampler_locate(const ladle__sampler *s, int64_t pos, int64_t *epoch,
                           int64_t *position) {
  if (s->p.stick_to_shard || s->p.num_shards == 1) {
    int64_t len = shard_size(s, s->p.shard_id);
    *epoch = pos / len;
    *position = pos % len;
    return;
  }
  /* Epochs e .. e+S-1 (e a multiple of S) read every shard once: N samples. */
  int S = s->p.num_shards;
  int64_t e = pos / s->p.num_records * S, r = pos % s->p.num_records;
  for (;; e++) {
    int64_t len = ladle__sampler_shard_size(s, e);
    if (r < len) break;
    r -= len;
  }
  *epoch = e;
  *position = r;
}

void ladle__sampler_shuffle(int64_t n, uint64_t seed, int64_t epoch, uint32_t *perm) {
  ladle__rng rng;
  ladle__rng_init(&rng, seed, LADLE__SAMPLER_RNG_OP, (uint64_t)epoch, 0);
  for (int64_t i = 0; i < n; i++) perm[i] = (uint32_t)i;
  for (int64_t i = n - 1; i >= 1; i--) {
    int64_t j = (int64_t)ladle__rng_below(&rng, (uint64_t)i + 1);
    uint32_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
}

/* The shuffled order of `epoch`, from the cache or computed into the least
 * recently used slot. Called with the lock held. */
static const uint32_t *epoch_order(ladle__sampler *s, int64_t epoch) {
  perm_slot *slot = NULL;
  for (int i = 0; i < 2; i++)
    if (s->slots[i].epoch == epoch) slot = &s->slots[i];
  if (!slot) {
    slot = s->slots[0].last_use <= s->slots[1].last_use ? &s->slots[0] : &s->slots[1];
    ladle__sampler_shuffle(s->p.num_records, s->p.seed, epoch, slot->perm);
    slot->epoch = epoch;
  }
  slot->last_use = ++s->uses;
  return slot->perm;
}

/* The record at `position` (< shard size) of epoch `epoch`'s shard. */
static int64_t record_at(ladle__sampler *s, int64_t epoch, int64_t position) {
  int64_t order_pos = ladle__shard_begin(s->p.num_records, s->p.num_shards,
                                         ladle__sampler_shard_of_epoch(s, epoch)) +
                      position;
  if (!s->p.random_shuffle) return order_pos;
  return epoch_order(s, epoch)[order_pos];
}

void ladle__sampler_plan(const ladle__sampler *cs, int64_t iteration, ladle__sample_ref *refs) {
  ladle__sampler *s = (ladle__sampler *)cs; /* only the cache changes */
  int B = s->p.batch_size;
  pthread_mutex_lock(&s->lock);
  if (s->p.pad_last_batch) {
    int64_t epoch = iteration / s->batches_per_epoch;
    int64_t first = iteration % s->batches_per_epoch * B;
    int64_t len = ladle__sampler_shard_size(s, epoch);
    for (int i = 0; i < B; i++) {
      int64_t pos = first + i;
      refs[i].epoch = epoch;
      refs[i].position = pos;
      refs[i].pad = pos >= len;
      refs[i].index = record_at(s, epoch, pos < len ? pos : len - 1);
    }
  } else {
    int64_t epoch, pos;
    ladle__sampler_locate(s, iteration * B, &epoch, &pos);
    int64_t len = ladle__sampler_shard_size(s, epoch);
    for (int i = 0; i < B; i++) {
      if (pos == len) {
        epoch++;
        pos = 0;
        len = ladle__sampler_shard_size(s, epoch);
      }
      refs[i].epoch = epoch;
      refs[i].position = pos;
      refs[i].pad = 0;
      refs[i].index = record_at(s, epoch, pos);
      pos++;
    }
  }
  pthread_mutex_unlock(&s->lock);
}

void ladle__sampler_meta(const ladle__sampler *s, ladle_reader_meta *meta) {
  int64_t n = s->p.num_records, shards = s->p.num_shards;
  meta->epoch_size = n;
  meta->epoch_size_padded = s->p.pad_last_batch ? (n + shards - 1) / shards * shards : n;
  meta->number_of_shards = s->p.num_shards;
  meta->shard_id = s->p.shard_id;
  meta->pad_last_batch = s->p.pad_last_batch;
  meta->stick_to_shard = s->p.stick_to_shard;
}

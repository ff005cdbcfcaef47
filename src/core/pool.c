/* Size-class memory pool. Classes step by a quarter of a power of two, so a
 * block wastes at most 25 % (up to 50 % when served from a larger class).
 * Free blocks wait in one list per class until reused; beyond the idle cap,
 * or beyond the peak of memory in use, they go back to the allocator. */
#include "core/pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define ALIGN 64
#define NUM_CLASSES 256

struct ladle__pool {
  ladle__allocator allocator;
  atomic_int refs;
  pthread_mutex_t lock;
  ladle__block *free_lists[NUM_CLASSES];
  /* Blocks waiting for their fence, oldest first. */
  struct pending {
    ladle__block *block;
    ladle__fence fence;
  } *pending;
  int num_pending, cap_pending;
  size_t idle_cap;
  ladle__pool_stats stats;
};

static void *host_alloc(void *ctx, size_t size) {
  void *p = NULL;
  return posix_memalign(&p, ALIGN, size) == 0 ? p : NULL;
}
static void host_free(void *ctx, void *ptr) { free(ptr); }
const ladle__allocator ladle__host_allocator = {host_alloc, host_free, NULL, LADLE_DEVICE_CPU};

/* The class of a size, and the block size of that class: multiples of 64 B up
 * to 256 B, then four steps per power of two. */
static uint32_t size_class_of(size_t size, size_t *class_size) {
  if (size <= 256) {
    *class_size = size <= 64 ? 64 : (size + 63) & ~(size_t)63;
    return (uint32_t)(*class_size / 64 - 1);
  }
  int octave = 63 - __builtin_clzll((unsigned long long)(size - 1)); /* 2^octave < size */
  size_t base = (size_t)1 << octave, step = base / 4;
  size_t k = (size - base + step - 1) / step; /* 1..4 */
  *class_size = base + k * step;
  return (uint32_t)(4 + (octave - 8) * 4 + (k - 1));
}

ladle_status ladle__pool_create(const ladle__allocator *allocator, size_t idle_cap, ladle__pool **out) {
  ladle__pool *pool = calloc(1, sizeof *pool);
  if (!pool) return LADLE_FAIL(LADLE_ERROR_OUT_OF_MEMORY, "cannot allocate a memory pool");
  pool->allocator = *allocator;
  atomic_init(&pool->refs, 1);
  pthread_mutex_init(&pool->lock, NULL);
  pool->idle_cap = idle_cap;
  *out = pool;
  return LADLE_OK;
}

/* Moves every block whose fence is done to the free lists (lock held). */
static void sweep_pending(ladle__pool *pool) {
  int kept = 0;
  for (int i = 0; i < pool->num_pending; i++) {
    struct pending *e = &pool->pending[i];
    if (!e->fence.done(e->fence.event)) {
      pool->pending[kept++] = *e;
      continue;
    }
    e->fence.destroy(e->fence.event);
    pool->stats.live_bytes += e->block->size; /* ladle__pool_free takes it off again */
    pthread_mutex_unlock(&pool->lock);
    ladle__pool_free(pool, e->block);
    pthread_mutex_lock(&pool->lock);
  }
  pool->num_pending = kept;
}

/* Gives the blocks of free lists back to the allocator. */
static void free_blocks(ladle__pool *pool, ladle__block *const lists[NUM_CLASSES]) {
  for (int c = 0; c < NUM_CLASSES; c++) {
    for (ladle__block *b = lists[c], *next; b; b = next) {
      next = b->next;
      pool->allocator.free(pool->allocator.ctx, b->data);
      free(b);
    }
  }
}

void ladle__pool_retain(ladle__pool *pool) { atomic_fetch_add(&pool->refs, 1); }

void ladle__pool_release(ladle__pool *pool) {
  if (!pool || atomic_fetch_sub(&pool->refs, 1) != 1) return;
  /* Freeing device memory waits for the device, so pending work is safe. */
  for (int i = 0; i < pool->num_pending; i++) {
    pool->pending[i].fence.destroy(pool->pending[i].fence.event);
    pool->allocator.free(pool->allocator.ctx, pool->pending[i].block->data);
    free(pool->pending[i].block);
  }
  free(pool->pending);
  free_blocks(pool, pool->free_lists);
  pthread_mutex_destroy(&pool->lock);
  free(pool);
}

ladle_status ladle__pool_alloc(ladle__pool *pool, size_t size, ladle__block **out) {
  size_t class_size;
  uint32_t c = size_class_of(size ? size : 1, &class_size);
  if (c >= NUM_CLASSES)
    return LADLE_FAIL(LADLE_ERROR_OUT_OF_MEMORY, "a block of %zu bytes is too large", size);
  pthread_mutex_lock(&pool->lock);
  if (pool->num_pending) sweep_pending(pool);
  /* An idle block of this class or, failing that, of one of the next two
   * (at most half as large again past 256 bytes): with sizes that vary from iteration to iteration
   * (random crops) this keeps the blocks in use instead of growing a new
   * class each time. */
  ladle__block *b = NULL;
  for (uint32_t k = c; k < c + 3 && k < NUM_CLASSES && !b; k++) {
    if ((b = pool->free_lists[k])) pool->free_lists[k] = b->next;
  }
  if (b) {
    pool->stats.idle_bytes -= b->size;
    pool->stats.reuses++;
  }
  pool->stats.live_bytes += b ? b->size : class_size;
  if (pool->stats.live_bytes > pool->stats.peak_live_bytes) pool->stats.peak_live_bytes = pool->stats.live_bytes;
  pthread_mutex_unlock(&pool->lock);
  if (!b) {
    b = calloc(1, sizeof *b);
    void *data = b ? pool->allocator.alloc(pool->allocator.ctx, class_size) : NULL;
    if (!data) {
      free(b);
      pthread_mutex_lock(&pool->lock);
      pool->stats.live_bytes -= class_size;
      pthread_mutex_unlock(&pool->lock);
      return LADLE_FAIL(LADLE_ERROR_OUT_OF_MEMORY, "cannot allocate %zu bytes", class_size);
    }
    b->data = data;
    b->size = class_size;
    b->size_class = c;
    pthread_mutex_lock(&pool->lock);
    pool->stats.system_allocs++;
    pool->stats.held_bytes += class_size;
    if (pool->stats.held_bytes > pool->stats.peak_held_bytes) pool->stats.peak_held_bytes = pool->stats.held_bytes;
    pthread_mutex_unlock(&pool->lock);
  }
  b->next = NULL;
  *out = b;
  return LADLE_OK;
}

void ladle__pool_free(ladle__pool *pool, ladle__block *b) {
  if (!b) return;
  pthread_mutex_lock(&pool->lock);
  pool->stats.live_bytes -= b->size;
  /* Idle memory stays under the peak in use, so what the pool holds stays
   * under twice that peak however the sizes vary. */
  size_t cap = pool->idle_cap < pool->stats.peak_live_bytes ? pool->idle_cap : pool->stats.peak_live_bytes;
  int keep = pool->stats.idle_bytes + b->size <= cap;
  if (keep) {
    b->next = pool->free_lists[b->size_class];
    pool->free_lists[b->size_class] = b;
    pool->stats.idle_bytes += b->size;
  } else {
    pool->stats.held_bytes -= b->size;
  }
  pthread_mutex_unlock(&pool->lock);
  if (!keep) {
    pool->allocator.free(pool->allocator.ctx, b->data);
    free(b);
  }
}

void ladle__pool_get_stats(ladle__pool *pool, ladle__pool_stats *stats) {
  pthread_mutex_lock(&pool->lock);
  *stats = pool->stats;
  pthread_mutex_unlock(&pool->lock);
}

size_t ladle__pool_trim(ladle__pool *pool) {
  ladle__block *lists[NUM_CLASSES];
  pthread_mutex_lock(&pool->lock);
  if (pool->num_pending) sweep_pending(pool);
  memcpy(lists, pool->free_lists, sizeof lists);
  memset(pool->free_lists, 0, sizeof pool->free_lists);
  size_t freed = pool->stats.idle_bytes;
  pool->stats.held_bytes -= freed;
  pool->stats.idle_bytes = 0;
  pthread_mutex_unlock(&pool->lock);
  free_blocks(pool, lists);
  return freed;
}

ladle_device ladle__pool_device(const ladle__pool *pool) { return pool->allocator.device; }

void ladle__pool_free_after(ladle__pool *pool, ladle__block *b, ladle__fence fence) {
  if (!b) return;
  pthread_mutex_lock(&pool->lock);
  if (pool->num_pending == pool->cap_pending) {
    int cap = pool->cap_pending ? pool->cap_pending * 2 : 16;
    struct pending *grown = realloc(pool->pending, sizeof *grown * (size_t)cap);
    if (!grown) { /* cannot wait without memory: keep the block out of reuse for good */
      pthread_mutex_unlock(&pool->lock);
      fence.destroy(fence.event);
      return;
    }
    pool->pending = grown;
    pool->cap_pending = cap;
  }
  pool->pending[pool->num_pending++] = (struct pending){b, fence};
  pool->stats.live_bytes -= b->size;
  pthread_mutex_unlock(&pool->lock);
}

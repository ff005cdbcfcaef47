/* Memory pools: blocks of host (or, through the allocator hooks, pinned or
 * device) memory recycled by size class, so that a warm pipeline allocates
 * nothing per iteration. A pool is reference counted because batches handed
 * to the user return their memory to it after the pipeline is gone. */
#ifndef LADLE_CORE_POOL_H
#define LADLE_CORE_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "ladle/ladle.h"

typedef struct ladle__allocator {
  void *(*alloc)(void *ctx, size_t size); /* NULL on failure; 64-byte aligned */
  void (*free)(void *ctx, void *ptr);
  void *ctx;
  ladle_device device;
} ladle__allocator;

/* Aligned host memory from malloc. */
extern const ladle__allocator ladle__host_allocator;

typedef struct ladle__pool ladle__pool;

/* Keeps at most idle_cap bytes of free blocks; the rest goes back to the system. */
ladle_status ladle__pool_create(const ladle__allocator *allocator, size_t idle_cap, ladle__pool **out);
void ladle__pool_retain(ladle__pool *pool);
void ladle__pool_release(ladle__pool *pool); /* frees the pool with its last reference */

/* A block of memory. The descriptor lives in host memory even when the
 * block's memory is on the device, so device pointers are never touched. */
typedef struct ladle__block {
  void *data;
  size_t size; /* usable bytes, >= the size asked for */
  struct ladle__block *next;
  uint32_t size_class;
} ladle__block;

/* A block of at least `size` bytes. Fails with LADLE_ERROR_OUT_OF_MEMORY. Thread-safe. */
ladle_status ladle__pool_alloc(ladle__pool *pool, size_t size, ladle__block **out);
/* Returns a block to its pool. NULL is allowed. Thread-safe. */
void ladle__pool_free(ladle__pool *pool, ladle__block *block);

/* A condition a block must wait for before reuse: work on another CUDA stream
 * that may still read it. `done` polls it; `destroy` frees it. */
typedef struct ladle__fence {
  int (*done)(void *event);
  void (*destroy)(void *event);
  void *event;
} ladle__fence;

/* Returns a block that becomes reusable once `fence` is done. The pool owns
 * the fence from now on. Thread-safe. */
void ladle__pool_free_after(ladle__pool *pool, ladle__block *block, ladle__fence fence);

typedef struct ladle__pool_stats {
  uint64_t system_allocs; /* blocks obtained from the allocator so far */
  uint64_t reuses;        /* allocations served from the free lists */
  size_t idle_bytes, live_bytes;
  size_t held_bytes;      /* obtained from the allocator and not yet given back: live + idle + fenced */
  size_t peak_held_bytes; /* the high-water mark of held_bytes */
  size_t peak_live_bytes; /* the high-water mark of live_bytes */
} ladle__pool_stats;
/* The kind of memory the pool hands out. */
ladle_device ladle__pool_device(const ladle__pool *pool);

void ladle__pool_get_stats(ladle__pool *pool, ladle__pool_stats *stats);

/* Gives every idle block back to the allocator (blocks in use, and those
 * still waiting for their fence, stay). Returns the bytes given back.
 * Thread-safe: allocations that follow simply go to the allocator again. */
size_t ladle__pool_trim(ladle__pool *pool);

#endif

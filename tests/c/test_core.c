/* Core: status table, errors, the RNG, memory pools, the thread pool, batches. */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "core/batch.h"
#include "core/error.h"
#include "core/rng.h"
#include "core/threads.h"
#include "test.h"

static void test_status_and_errors(void) {
  CHECK(strcmp(ladle_status_name(LADLE_ERROR_IO), "LADLE_ERROR_IO") == 0);
  CHECK(strcmp(ladle_status_name((ladle_status)999), "LADLE_UNKNOWN_STATUS") == 0);
  CHECK(strlen(ladle_status_description(LADLE_ERROR_CORRUPT_DATA)) > 0);
  ladle__clear_error();
  CHECK(ladle_last_error()[0] == '\0');
  CHECK(LADLE_FAIL(LADLE_ERROR_IO, "cannot open %s", "x.jpg") == LADLE_ERROR_IO);
  /* An internal function's name stays out of the message; a public one's is its start. */
  CHECK(strcmp(ladle_last_error(), "cannot open x.jpg") == 0);
  ladle__wrap_error(LADLE_ERROR_IO, "sample %d", 3);
  CHECK(strcmp(ladle_last_error(), "sample 3: cannot open x.jpg") == 0);
  ladle__set_error(LADLE_ERROR_IO, "ladle_pipeline_run", "no %s", "luck");
  CHECK(strcmp(ladle_last_error(), "ladle_pipeline_run: no luck") == 0);
  char long_text[3000];
  memset(long_text, 'a', sizeof long_text - 1);
  long_text[sizeof long_text - 1] = 0;
  LADLE_FAIL(LADLE_ERROR_IO, "%s", long_text);
  ladle__wrap_error(LADLE_ERROR_IO, "%s", long_text); /* truncates, never overflows */
  CHECK(strlen(ladle_last_error()) == LADLE_ERROR_MAX - 1);
  CHECK(ladle_version_number() == LADLE_VERSION_NUMBER);
  CHECK(strstr(ladle_build_info(), "\"version\"") != NULL);
}

/* Philox4x32-10 known-answer test (Random123's kat_vectors). */
static void test_philox_known_answer(void) {
  uint32_t ctr[4] = {0, 0, 0, 0}, key[2] = {0, 0}, out[4];
  ladle__philox_block(ctr, key, out);
  CHECK(out[0] == 0x6627e8d5u && out[1] == 0xe169c58du && out[2] == 0xbc57ac4cu && out[3] == 0x9b00dbd8u);
  uint32_t ctr2[4] = {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, key2[2] = {0xffffffffu, 0xffffffffu};
  ladle__philox_block(ctr2, key2, out);
  CHECK(out[0] == 0x408f276du && out[1] == 0x41c83b0eu && out[2] == 0xa20bc7c6u && out[3] == 0x6d5451fdu);
}

static void test_rng_streams(void) {
  ladle__rng a, b;
  ladle__rng_init(&a, 42, 1, 0, 7);
  ladle__rng_init(&b, 42, 1, 0, 7);
  int same = 1;
  for (int i = 0; i < 100; i++) same &= ladle__rng_u32(&a) == ladle__rng_u32(&b);
  CHECK(same);
  /* Any change of seed, op, epoch or sample gives another stream. */
  const uint64_t keys[4][4] = {{43, 1, 0, 7}, {42, 2, 0, 7}, {42, 1, 1, 7}, {42, 1, 0, 8}};
  ladle__rng_init(&a, 42, 1, 0, 7);
  uint32_t first = ladle__rng_u32(&a);
  for (int k = 0; k < 4; k++) {
    ladle__rng_init(&b, keys[k][0], keys[k][1], keys[k][2], keys[k][3]);
    CHECK(ladle__rng_u32(&b) != first);
  }
  /* uniform in [0,1) with the right mean; below(n) unbiased over 6 buckets. */
  double sum = 0;
  int counts[6] = {0};
  ladle__rng_init(&a, 1, 2, 3, 4);
  for (int i = 0; i < 60000; i++) {
    double u = ladle__rng_uniform(&a);
    CHECK(u >= 0 && u < 1);
    sum += u;
    counts[ladle__rng_below(&a, 6)]++;
  }
  CHECK(fabs(sum / 60000 - 0.5) < 0.01);
  for (int k = 0; k < 6; k++) CHECK(abs(counts[k] - 10000) < 500);
}

static void test_pool_reuse(void) {
  ladle__pool *pool = NULL;
  CHECK_OK(ladle__pool_create(&ladle__host_allocator, 1 << 20, &pool));
  ladle__block *a = NULL, *b = NULL;
  CHECK_OK(ladle__pool_alloc(pool, 1000, &a));
  CHECK(a->size >= 1000 && a->size <= 1250);
  CHECK(((uintptr_t)a->data & 63) == 0);
  memset(a->data, 1, 1000);
  void *first = a->data;
  ladle__pool_free(pool, a);
  CHECK_OK(ladle__pool_alloc(pool, 990, &b)); /* same class: reused */
  CHECK(b->data == first);
  ladle__pool_stats stats;
  ladle__pool_get_stats(pool, &stats);
  CHECK(stats.system_allocs == 1 && stats.reuses == 1);
  ladle__pool_free(pool, b);
  /* Beyond the idle cap, blocks go back to the system. */
  ladle__block *big = NULL;
  CHECK_OK(ladle__pool_alloc(pool, 4 << 20, &big));
  ladle__pool_free(pool, big);
  ladle__pool_get_stats(pool, &stats);
  CHECK(stats.idle_bytes <= (1 << 20) && stats.live_bytes == 0);
  /* Class sizes never waste more than a quarter (with no larger idle block to take). */
  ladle__pool_trim(pool);
  for (size_t size = 1; size < (64u << 20); size = size * 3 / 2 + 1) {
    ladle__block *blk = NULL;
    CHECK_OK(ladle__pool_alloc(pool, size, &blk));
    CHECK(blk->size >= size && (size < 256 || blk->size <= size + size / 4 + 1));
    ladle__pool_free(pool, blk);
  }
  ladle__pool_release(pool);
}

/* Sizes that vary (random crops) reuse larger idle blocks, what the pool
 * holds stays under twice its peak in use, and trim gives the idle back. */
static void test_pool_bounds(void) {
  ladle__pool *pool = NULL;
  CHECK_OK(ladle__pool_create(&ladle__host_allocator, (size_t)1 << 30, &pool));
  ladle__block *a = NULL, *b = NULL;
  CHECK_OK(ladle__pool_alloc(pool, 1000, &a)); /* class 1024 */
  ladle__pool_free(pool, a);
  CHECK_OK(ladle__pool_alloc(pool, 800, &b)); /* class 896, served by the idle 1024 */
  CHECK(b->size == 1024);
  ladle__pool_free(pool, b);
  CHECK_OK(ladle__pool_alloc(pool, 500, &b)); /* class 512: too far below, a new block */
  CHECK(b->size == 512);
  ladle__pool_free(pool, b);
  ladle__pool_stats stats;
  ladle__pool_get_stats(pool, &stats);
  CHECK(stats.system_allocs == 2 && stats.reuses == 1 && stats.peak_live_bytes == 1024);
  /* idle 1024 + 512 would pass the peak in use (1024): the 512 went back */
  CHECK(stats.held_bytes == 1024 && stats.peak_held_bytes == 1536 && stats.idle_bytes == 1024);
  /* One block of 1 MiB in use at a time, its size varying over 16 classes. */
  uint64_t x = 1;
  for (int i = 0; i < 2000; i++) {
    x = x * 6364136223846793005u + 1442695040888963407u;
    size_t size = ((size_t)1 << 20) + (size_t)(x >> 40) % ((size_t)15 << 20);
    CHECK_OK(ladle__pool_alloc(pool, size, &b));
    ladle__pool_free(pool, b);
    ladle__pool_get_stats(pool, &stats);
    CHECK(stats.held_bytes <= 2 * stats.peak_live_bytes && stats.live_bytes == 0);
  }
  CHECK(stats.peak_held_bytes <= 2 * stats.peak_live_bytes);
  size_t idle = stats.idle_bytes;
  CHECK(idle > 0);
  CHECK_OK(ladle__pool_alloc(pool, 100, &a)); /* in use: trim keeps it */
  CHECK(ladle__pool_trim(pool) == idle);
  ladle__pool_get_stats(pool, &stats);
  CHECK(stats.idle_bytes == 0 && stats.held_bytes == stats.live_bytes && stats.live_bytes == a->size);
  size_t small = a->size;
  ladle__pool_free(pool, a);
  CHECK(ladle__pool_trim(pool) == small && small == 128);
  ladle__pool_release(pool);
}

typedef struct {
  atomic_int hits[1000];
  atomic_int max_worker;
} loop_ctx;

static void count_item(void *p, int item, int worker) {
  loop_ctx *ctx = p;
  atomic_fetch_add(&ctx->hits[item], 1);
  int m = atomic_load(&ctx->max_worker);
  while (worker > m && !atomic_compare_exchange_weak(&ctx->max_worker, &m, worker)) {}
}

static void test_thread_pool(void) {
  ladle_thread_pool *pool = NULL;
  CHECK(ladle_thread_pool_create(0, NULL, 0, &pool) == LADLE_ERROR_INVALID_ARGUMENT);
  int cpus[1] = {0};
  CHECK_OK(ladle_thread_pool_create(3, cpus, 1, &pool));
  CHECK(ladle_thread_pool_num_threads(pool) == 3);
  static loop_ctx ctx;
  for (int round = 0; round < 20; round++) ladle__parallel_for(pool, 1000, count_item, &ctx);
  int all = 1;
  for (int i = 0; i < 1000; i++) all &= atomic_load(&ctx.hits[i]) == 20;
  CHECK(all);
  CHECK(atomic_load(&ctx.max_worker) <= 3); /* the workers 0-2, and 3: this thread, waiting */
  ladle_thread_pool_destroy(pool);
  ladle_thread_pool_destroy(NULL);

  int list[16];
  CHECK(ladle__parse_cpu_list("0,2,4-6", list, 16) == 5 && list[4] == 6);
  CHECK(ladle__parse_cpu_list("1-x", list, 16) == -1);
  CHECK(ladle__parse_cpu_list("3-1", list, 16) == -1);
}

typedef struct {
  atomic_int release; /* the blocking item returns once this is set */
  atomic_int blocked; /* it has started */
  atomic_int ran[64]; /* the worker index each quick item ran as, + 1 */
} caller_ctx;

static void block_item(void *p, int item, int worker) {
  caller_ctx *ctx = p;
  atomic_store(&ctx->blocked, 1);
  for (int i = 0; i < 5000 && !atomic_load(&ctx->release); i++) usleep(1000); /* 5 s at most: never hangs */
}

static void quick_item(void *p, int item, int worker) { atomic_store(&((caller_ctx *)p)->ran[item], worker + 1); }

static void *release_later(void *p) {
  usleep(20000);
  atomic_store(&((caller_ctx *)p)->release, 1);
  return NULL;
}

/* A job whose items no worker is free to take is run by the thread waiting
 * for it, as worker num_threads: with the pool's one worker blocked in
 * another job's item, a loop of 64 still completes, before that item.
 * LADLE_POOL_WAITER_RUNS=0 (the A/B knob): the waiting thread only waits, and
 * the worker runs them once let go. */
static void test_waiting_thread_runs_its_items(void) {
  for (int knob = 0; knob < 2; knob++) {
    if (knob) setenv("LADLE_POOL_WAITER_RUNS", "0", 1);
    else unsetenv("LADLE_POOL_WAITER_RUNS");
    ladle_thread_pool *pool = NULL;
    CHECK_OK(ladle_thread_pool_create(1, NULL, 0, &pool));
    static caller_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ladle__job slow;
    ladle__parallel_start(pool, &slow, 1, block_item, &ctx);
    while (!atomic_load(&ctx.blocked)) usleep(100);
    pthread_t releaser;
    if (knob) CHECK(pthread_create(&releaser, NULL, release_later, &ctx) == 0);
    ladle__parallel_for(pool, 64, quick_item, &ctx);
    int all = 1;
    for (int i = 0; i < 64; i++) all &= atomic_load(&ctx.ran[i]) == (knob ? 1 : 2); /* worker 0, or 1 = num_threads */
    CHECK(all);
    CHECK(atomic_load(&ctx.release) == knob); /* without the knob the blocking item had not been let go */
    if (knob) pthread_join(releaser, NULL);
    atomic_store(&ctx.release, 1);
    ladle__parallel_wait(pool, &slow);
    ladle_thread_pool_destroy(pool);
  }
  unsetenv("LADLE_POOL_WAITER_RUNS");
}

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static void record_nice(void *ctx, int item, int worker) {
  atomic_store(&((atomic_int *)ctx)[item], getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid)));
}

/* Workers run 10 nice levels below their creator (capped at 19), or as
 * LADLE_WORKER_NICE says. The loop is left to the workers (this thread
 * waits only once every item has run: the items it would run itself run at
 * its own priority). */
static void test_worker_priority(void) {
  int base = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
  const char *cases[3] = {NULL, "0", "3"};
  int offsets[3] = {10, 0, 3};
  for (int c = 0; c < 3; c++) {
    if (cases[c]) setenv("LADLE_WORKER_NICE", cases[c], 1);
    else unsetenv("LADLE_WORKER_NICE");
    ladle_thread_pool *pool = NULL;
    CHECK_OK(ladle_thread_pool_create(2, NULL, 0, &pool));
    atomic_int seen[64];
    for (int i = 0; i < 64; i++) atomic_store(&seen[i], INT_MIN);
    ladle__job job;
    ladle__parallel_start(pool, &job, 64, record_nice, seen);
    for (int i = 0; i < 64; i++)
      while (atomic_load(&seen[i]) == INT_MIN) usleep(100);
    ladle__parallel_wait(pool, &job);
    int want = base + offsets[c] > 19 ? 19 : base + offsets[c], all = 1;
    for (int i = 0; i < 64; i++) all &= atomic_load(&seen[i]) == want;
    CHECK(all);
    ladle_thread_pool_destroy(pool);
  }
  unsetenv("LADLE_WORKER_NICE");
  CHECK(getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid)) == base); /* the caller's own is untouched */
}
#endif

static void count_release(void *ctx) { ++*(int *)ctx; }

/* A batch over the caller's memory: no copy, dense sample offsets, and the
 * owner's release called once, with the last reference. */
static void test_wrapped_batch(void) {
  static float data[3 * 2 * 5];
  int released = 0;
  int64_t shape[2] = {2, 5};
  ladle_batch *b = NULL;
  CHECK_OK(ladle_batch_wrap(LADLE_FLOAT32, 3, 2, shape, "HW", LADLE_DEVICE_CPU, 0, data, count_release, &released, &b));
  CHECK(ladle_batch_num_samples(b) == 3 && ladle_batch_ndim(b) == 2 && ladle_batch_is_dense(b));
  CHECK(ladle_batch_data(b, 0) == (void *)data && ladle_batch_data(b, 2) == (void *)(data + 20));
  CHECK(ladle_batch_shape(b, 1)[0] == 2 && ladle_batch_shape(b, 1)[1] == 5);
  CHECK(strcmp(ladle_batch_layout(b), "HW") == 0 && ladle_batch_device(b) == LADLE_DEVICE_CPU);
  ladle_batch_retain(b);
  ladle_batch_release(b);
  CHECK(released == 0);
  ladle_batch_release(b);
  CHECK(released == 1);
  CHECK(ladle_batch_wrap(LADLE_FLOAT32, 1, 1, shape, NULL, LADLE_DEVICE_CUDA_HOST, 0, data, NULL, NULL, &b) ==
        LADLE_ERROR_INVALID_ARGUMENT);
  int64_t negative[1] = {-1};
  CHECK(ladle_batch_wrap(LADLE_UINT8, 1, 1, negative, NULL, LADLE_DEVICE_CPU, 0, data, NULL, NULL, &b) ==
        LADLE_ERROR_INVALID_ARGUMENT);
}

/* A ragged batch over the caller's memory: each sample its own shape, back to
 * back; a ready point is for wrapped CUDA memory only (a CPU batch needs none,
 * a batch ladle made orders its own). */
static void test_wrapped_ragged_batch(void) {
  static uint8_t data[2 * 2 * 3 * 1]; /* the ragged samples (10 bytes), then two 2x3x1 ones below */
  int released = 0;
  int64_t shapes[6] = {2, 3, 1, 4, 1, 1};
  ladle_batch *b = NULL;
  CHECK_OK(ladle_batch_wrap_samples(LADLE_UINT8, 2, 3, shapes, "HWC", LADLE_DEVICE_CPU, 0, data, count_release,
                                    &released, &b));
  CHECK(ladle_batch_num_samples(b) == 2 && !ladle_batch_is_dense(b));
  CHECK(ladle_batch_data(b, 0) == (void *)data && ladle_batch_data(b, 1) == (void *)(data + 6));
  CHECK(ladle_batch_shape(b, 1)[0] == 4 && ladle_batch_shape(b, 1)[1] == 1 && ladle_batch_shape(b, 0)[1] == 3);
  CHECK_OK(ladle_batch_record_ready(b, NULL));
  ladle_batch_release(b);
  CHECK(released == 1);
  int64_t same[6] = {2, 3, 1, 2, 3, 1};
  CHECK_OK(ladle_batch_wrap_samples(LADLE_UINT8, 2, 3, same, NULL, LADLE_DEVICE_CPU, 0, data, NULL, NULL, &b));
  CHECK(ladle_batch_is_dense(b));
  ladle_batch_release(b);
  CHECK_OK(ladle_batch_create_cpu(LADLE_UINT8, 2, 3, same, NULL, data, &b));
  CHECK(ladle_batch_record_ready(b, NULL) == LADLE_ERROR_INVALID_ARGUMENT);
  ladle_batch_release(b);
  int64_t negative[3] = {1, -1, 1};
  CHECK(ladle_batch_wrap_samples(LADLE_UINT8, 1, 3, negative, NULL, LADLE_DEVICE_CPU, 0, data, NULL, NULL, &b) ==
        LADLE_ERROR_INVALID_ARGUMENT);
}

static void test_batches(void) {
  int64_t shapes[6] = {2, 3, 3, 2, 3, 3};
  uint8_t data[36];
  for (int i = 0; i < 36; i++) data[i] = (uint8_t)i;
  ladle_batch *b = NULL;
  CHECK_OK(ladle_batch_create_cpu(LADLE_UINT8, 2, 3, shapes, "HWC", data, &b));
  CHECK(ladle_batch_num_samples(b) == 2 && ladle_batch_ndim(b) == 3 && ladle_batch_is_dense(b));
  CHECK(strcmp(ladle_batch_layout(b), "HWC") == 0);
  CHECK((uint8_t *)ladle_batch_data(b, 1) - (uint8_t *)ladle_batch_data(b, 0) == 18);
  CHECK(((uint8_t *)ladle_batch_data(b, 1))[0] == 18);
  CHECK(ladle_batch_data(b, 2) == NULL && ladle_batch_shape(b, -1) == NULL);
  CHECK(ladle_batch_wait(b, NULL) == LADLE_OK);
  ladle_batch_retain(b);
  ladle_batch_release(b);
  ladle_batch_release(b);
  int64_t ragged[4] = {2, 2, 3, 1};
  CHECK_OK(ladle_batch_create_cpu(LADLE_FLOAT32, 2, 2, ragged, NULL, NULL, &b));
  CHECK(!ladle_batch_is_dense(b));
  CHECK((uint8_t *)ladle_batch_data(b, 1) - (uint8_t *)ladle_batch_data(b, 0) == 16);
  ladle_batch_release(b);
  ladle_batch_release(NULL);
  CHECK(ladle_batch_create_cpu((ladle_dtype)77, 1, 1, ragged, NULL, NULL, &b) == LADLE_ERROR_INVALID_ARGUMENT);
  CHECK(ladle_dtype_size(LADLE_FLOAT16) == 2 && strcmp(ladle_dtype_name(LADLE_INT64), "int64") == 0);
}

int main(void) {
  RUN(test_status_and_errors);
  RUN(test_philox_known_answer);
  RUN(test_rng_streams);
  RUN(test_pool_reuse);
  RUN(test_pool_bounds);
  RUN(test_thread_pool);
  RUN(test_waiting_thread_runs_its_items);
#ifdef __linux__
  RUN(test_worker_priority);
#endif
  RUN(test_batches);
  RUN(test_wrapped_batch);
  RUN(test_wrapped_ragged_batch);
  TEST_MAIN_END();
}

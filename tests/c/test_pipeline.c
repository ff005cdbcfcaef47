/* Pipelines through the public API: building, argument checking, running,
 * determinism across thread counts and prefetch depths, repositioning,
 * destroying with work in flight, and no allocation once warm. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ladle/ladle.h"
#include "pipeline/pipeline.h"
#include "test.h"

static ladle_arg float_arg(const char *name, double f) {
  ladle_arg a = {name, {LADLE_ARG_FLOAT, 1, {.f = f}}, -1};
  return a;
}

/* coin_flip(probability=p) and uniform(range=[0, 10]) with the given settings;
 * fed: seeds come from ladle_pipeline_feed_seed. */
static ladle_pipeline *random_pipeline_of(int batch, int threads, int depth, uint64_t seed, int fed) {
  ladle_pipeline_params params;
  ladle_pipeline_params_init(&params);
  params.fed_seeds = fed;
  params.batch_size = batch;
  params.num_threads = threads;
  params.prefetch_queue_depth = depth;
  params.seed = seed;
  ladle_pipeline *p = NULL;
  if (ladle_pipeline_create(&params, &p) != LADLE_OK) return NULL;
  int coin = -1, uni = -1;
  ladle_arg prob = float_arg("probability", 0.3);
  double range[2] = {0, 10};
  ladle_arg r = {"range", {LADLE_ARG_FLOATS, 2, {.floats = range}}, -1};
  CHECK_OK(ladle_pipeline_add_op(p, "random.coin_flip", "cpu", NULL, 0, &prob, 1, NULL, &coin));
  CHECK_OK(ladle_pipeline_add_op(p, "random.uniform", "cpu", NULL, 0, &r, 1, NULL, &uni));
  int outs[2] = {coin, uni};
  CHECK_OK(ladle_pipeline_set_outputs(p, outs, 2));
  return p;
}

static ladle_pipeline *random_pipeline(int batch, int threads, int depth, uint64_t seed) {
  return random_pipeline_of(batch, threads, depth, seed, 0);
}

/* Runs `iters` iterations and appends every output byte to buf. */
static size_t collect(ladle_pipeline *p, int iters, uint8_t *buf) {
  size_t len = 0;
  for (int i = 0; i < iters; i++) {
    ladle_batch *out[2] = {NULL, NULL};
    CHECK_OK(ladle_pipeline_run(p, out));
    for (int k = 0; k < 2; k++) {
      if (!out[k]) continue;
      size_t bytes = (size_t)ladle_batch_num_samples(out[k]) * ladle_dtype_size(ladle_batch_dtype(out[k]));
      memcpy(buf + len, ladle_batch_data(out[k], 0), bytes);
      len += bytes;
      ladle_batch_release(out[k]);
    }
  }
  return len;
}

static void test_random_ops_and_determinism(void) {
  static uint8_t ref[1 << 16], other[1 << 16];
  ladle_pipeline *p = random_pipeline(16, 1, 1, 7);
  size_t n = collect(p, 20, ref);
  CHECK(n == 20 * 16 * 8);
  /* coin flips are 0/1 with roughly the requested rate; uniform within range */
  int ones = 0, in_range = 1;
  for (int i = 0; i < 20; i++) {
    const int32_t *coins = (const int32_t *)(ref + i * 128);
    const float *u = (const float *)(ref + i * 128 + 64);
    for (int k = 0; k < 16; k++) {
      ones += coins[k];
      in_range &= (coins[k] == 0 || coins[k] == 1) && u[k] >= 0 && u[k] < 10;
    }
  }
  CHECK(in_range);
  CHECK(ones > 60 && ones < 135); /* 320 flips at p = 0.3: mean 96, sd 8.2 */
  ladle_pipeline_destroy(p);

  const int settings[4][2] = {{4, 1}, {1, 3}, {4, 3}, {3, 2}};
  for (int s = 0; s < 4; s++) {
    p = random_pipeline(16, settings[s][0], settings[s][1], 7);
    CHECK(collect(p, 20, other) == n && memcmp(ref, other, n) == 0);
    ladle_pipeline_destroy(p);
  }
  p = random_pipeline(16, 2, 2, 8); /* another seed: other numbers */
  CHECK(collect(p, 20, other) == n && memcmp(ref, other, n) != 0);
  ladle_pipeline_destroy(p);
}

/* fed_seeds: iteration k draws what the first iteration of a pipeline with
 * seed = (k-th fed seed) draws, whatever ran before; without a fed seed run()
 * fails at once rather than waiting. */
static void test_fed_seeds(void) {
  static uint8_t want[3][256], got[3 * 256];
  const uint64_t seeds[3] = {11, 12, 11};
  for (int k = 0; k < 3; k++) {
    ladle_pipeline *ref = random_pipeline(16, 2, 1, seeds[k]);
    CHECK(collect(ref, 1, want[k]) == 128);
    ladle_pipeline_destroy(ref);
  }
  CHECK(memcmp(want[0], want[1], 128) != 0 && memcmp(want[0], want[2], 128) == 0);
  ladle_pipeline *p = random_pipeline_of(16, 2, 2, 5, 1);
  ladle_batch *out[2] = {NULL, NULL};
  CHECK(ladle_pipeline_run(p, out) == LADLE_ERROR_STATE && strstr(ladle_last_error(), "no seed"));
  for (int k = 0; k < 3; k++) CHECK_OK(ladle_pipeline_feed_seed(p, seeds[k]));
  CHECK(collect(p, 3, got) == 3 * 128);
  for (int k = 0; k < 3; k++) CHECK(memcmp(got + k * 128, want[k], 128) == 0);
  ladle_pipeline_position pos = {0};
  CHECK(ladle_pipeline_set_position(p, &pos) == LADLE_ERROR_STATE);
  int limited = 0;
  for (int k = 0; k < 20 && !limited; k++) limited = ladle_pipeline_feed_seed(p, (uint64_t)k) == LADLE_ERROR_LIMIT;
  CHECK(limited);
  ladle_pipeline_destroy(p); /* with seeds and iterations left */
  p = random_pipeline(16, 1, 1, 5);
  CHECK(ladle_pipeline_feed_seed(p, 1) == LADLE_ERROR_STATE && strstr(ladle_last_error(), "fed_seeds"));
  ladle_pipeline_destroy(p);
}

/* ladle_pipeline_set_node_seed: with fed_seeds = 2, each random operator draws
 * from its own seed of the iteration as the operator with the given stream
 * of a fed-seed pipeline's first iteration would. */
static void test_node_seeds(void) {
  static uint8_t want[2][256], got[2 * 256];
  const uint64_t seeds[2][2] = {{21, 22}, {23, 21}}; /* per iteration: slot 0, slot 1 */
  ladle_pipeline *p = random_pipeline_of(16, 2, 2, 5, 2);
  CHECK(ladle_pipeline_set_node_seed(p, 0, 1, 0) == LADLE_OK);  /* coin_flip: slot 1, stream 0 */
  CHECK(ladle_pipeline_set_node_seed(p, 1, 0, 1) == LADLE_OK);  /* uniform: slot 0, stream 1 */
  CHECK(ladle_pipeline_set_node_seed(p, 0, 2, 0) == LADLE_ERROR_INVALID_ARGUMENT && strstr(ladle_last_error(), "slot"));
  CHECK(ladle_pipeline_set_node_seed(p, 7, 0, 0) == LADLE_ERROR_INVALID_ARGUMENT);
  for (int k = 0; k < 2; k++) {
    for (int slot = 0; slot < 2; slot++) CHECK_OK(ladle_pipeline_feed_seed(p, seeds[k][slot]));
    /* coins of the pipeline seeded with slot 1's seed, uniforms of the one seeded with slot 0's */
    uint8_t tmp[256];
    ladle_pipeline *ref = random_pipeline(16, 1, 1, seeds[k][1]);
    CHECK(collect(ref, 1, tmp) == 128);
    memcpy(want[k], tmp, 64);
    ladle_pipeline_destroy(ref);
    ref = random_pipeline(16, 1, 1, seeds[k][0]);
    CHECK(collect(ref, 1, tmp) == 128);
    memcpy(want[k] + 64, tmp + 64, 64);
    ladle_pipeline_destroy(ref);
  }
  CHECK(collect(p, 2, got) == 2 * 128);
  for (int k = 0; k < 2; k++) CHECK(memcmp(got + k * 128, want[k], 128) == 0);
  CHECK(ladle_pipeline_set_node_seed(p, 0, 0, 0) == LADLE_ERROR_STATE); /* built */
  ladle_pipeline_destroy(p);
  p = random_pipeline(16, 1, 1, 5);
  CHECK(ladle_pipeline_set_node_seed(p, 0, 0, 0) == LADLE_ERROR_STATE && strstr(ladle_last_error(), "fed_seeds"));
  ladle_pipeline_destroy(p);
}

/* An empty pipeline with default parameters but these. */
static ladle_pipeline *new_pipeline(int batch, int threads) {
  ladle_pipeline_params params;
  ladle_pipeline_params_init(&params);
  params.batch_size = batch;
  params.num_threads = threads;
  ladle_pipeline *p = NULL;
  CHECK_OK(ladle_pipeline_create(&params, &p));
  return p;
}

/* The records of the iteration run() returned last, and their file names:
 * a reader over a folder of three files, two per batch. */
static void test_last_records(void) {
  char root[] = "/tmp/ladle_records_XXXXXX", path[512];
  if (!mkdtemp(root)) {
    CHECK(0);
    return;
  }
  snprintf(path, sizeof path, "%s/a", root);
  CHECK(mkdir(path, 0700) == 0);
  const char *names[3] = {"x.jpg", "y.jpg", "z.jpg"};
  for (int i = 0; i < 3; i++) {
    snprintf(path, sizeof path, "%s/a/%s", root, names[i]);
    FILE *f = fopen(path, "wb");
    CHECK(f && fputs(names[i], f) >= 0 && fclose(f) == 0);
  }
  ladle_pipeline *p = new_pipeline(2, 1);
  ladle_arg arg = {"file_root", {LADLE_ARG_STRING, 1, {.s = root}}, -1};
  int out = -1, count = -1;
  int64_t records[4] = {-1, -1, -1, -1};
  CHECK_OK(ladle_pipeline_add_op(p, "readers.file", "cpu", NULL, 0, &arg, 1, "Reader", &out));
  int outs[1] = {out};
  CHECK_OK(ladle_pipeline_set_outputs(p, outs, 1));
  CHECK_OK(ladle_pipeline_last_records(p, records, 4, &count));
  CHECK(count == 0); /* nothing returned yet */
  for (int it = 0; it < 2; it++) {
    ladle_batch *b = NULL;
    CHECK_OK(ladle_pipeline_run(p, &b));
    CHECK_OK(ladle_pipeline_last_records(p, records, 4, &count));
    CHECK(count == 2);
    for (int i = 0; i < count && b; i++) { /* each sample holds its file's name as its bytes */
      const char *name = ladle_pipeline_record_name(p, "Reader", records[i]);
      size_t len = strlen(names[0]);
      CHECK(name && strlen(name) > len && memcmp(ladle_batch_data(b, i), name + strlen(name) - len, len) == 0);
    }
    ladle_batch_release(b);
  }
  CHECK_OK(ladle_pipeline_last_records(p, records, 1, &count));
  CHECK(count == 1); /* capped at the capacity */
  CHECK(ladle_pipeline_record_name(p, "Reader", 3) == NULL && ladle_pipeline_record_name(p, "Other", 0) == NULL);
  ladle_pipeline_destroy(p);
  for (int i = 0; i < 3; i++) {
    snprintf(path, sizeof path, "%s/a/%s", root, names[i]);
    unlink(path);
  }
  snprintf(path, sizeof path, "%s/a", root);
  rmdir(path);
  rmdir(root);
}

static void test_set_position(void) {
  static uint8_t ref[1 << 16], other[1 << 16];
  ladle_pipeline *p = random_pipeline(8, 2, 3, 1);
  size_t n = collect(p, 10, ref);
  ladle_pipeline_position pos;
  CHECK_OK(ladle_pipeline_get_position(p, &pos));
  CHECK(pos.iteration == 10);
  pos.iteration = 4;
  CHECK_OK(ladle_pipeline_set_position(p, &pos));
  size_t m = collect(p, 6, other);
  CHECK(m == n - 4 * 64 && memcmp(other, ref + 4 * 64, m) == 0);
  ladle_pipeline_destroy(p);
  /* A fresh pipeline moved to iteration 7 yields iteration 7 first. */
  p = random_pipeline(8, 1, 2, 1);
  pos.iteration = 7;
  CHECK_OK(ladle_pipeline_set_position(p, &pos));
  m = collect(p, 3, other);
  CHECK(memcmp(other, ref + 7 * 64, m) == 0);
  ladle_pipeline_destroy(p);
}

static void expect_add_error(const char *op, const ladle_arg *args, int num_args, const char *needle) {
  ladle_pipeline_params params;
  ladle_pipeline_params_init(&params);
  params.batch_size = 2;
  ladle_pipeline *p = NULL;
  CHECK_OK(ladle_pipeline_create(&params, &p));
  int out = -1;
  ladle_status st = ladle_pipeline_add_op(p, op, "cpu", NULL, 0, args, num_args, NULL, &out);
  CHECK(st == LADLE_ERROR_INVALID_ARGUMENT);
  if (!strstr(ladle_last_error(), needle)) {
    test_failures++;
    fprintf(stderr, "message \"%s\" lacks \"%s\"\n", ladle_last_error(), needle);
  }
  ladle_pipeline_destroy(p);
}

static void test_argument_errors(void) {
  expect_add_error("random.no_such_op", NULL, 0, "unknown operator 'random.no_such_op'");
  ladle_arg unknown = float_arg("probabilty", 0.5);
  expect_add_error("random.coin_flip", &unknown, 1, "random.coin_flip: unknown argument 'probabilty'");
  ladle_arg range = float_arg("probability", 1.5);
  expect_add_error("random.coin_flip", &range, 1, "'probability' = 1.5 is out of range [0, 1]");
  ladle_arg wrong = {"probability", {LADLE_ARG_STRING, 1, {.s = "half"}}, -1};
  expect_add_error("random.coin_flip", &wrong, 1, "'probability' expects float, got str");
  expect_add_error("cast", NULL, 0, "takes 1 to 1 inputs");
  ladle_arg constant_only = {"range", {LADLE_ARG_FLOAT, 1, {.f = 0}}, 0};
  expect_add_error("random.uniform", &constant_only, 1, "'range' must be a constant, not a node");
  ladle_arg dangling = {"probability", {LADLE_ARG_FLOAT, 1, {.f = 0}}, 3};
  expect_add_error("random.coin_flip", &dangling, 1, "refers to node 3, which does not exist");

  ladle_pipeline_params params;
  ladle_pipeline_params_init(&params);
  ladle_pipeline *p = NULL;
  CHECK(ladle_pipeline_create(&params, &p) == LADLE_ERROR_INVALID_ARGUMENT); /* batch_size 0 */
  CHECK(strstr(ladle_last_error(), "batch_size") != NULL);
  params.batch_size = 1;
  CHECK_OK(ladle_pipeline_create(&params, &p));
  CHECK(ladle_pipeline_build(p) == LADLE_ERROR_STATE); /* no outputs */
  int bad = 5;
  CHECK(ladle_pipeline_set_outputs(p, &bad, 1) == LADLE_ERROR_INVALID_ARGUMENT);
  ladle_pipeline_destroy(p);
  ladle_pipeline_destroy(NULL);
}

static void test_destroy_in_flight_and_shared_pool(void) {
  ladle_thread_pool *pool = NULL;
  CHECK_OK(ladle_thread_pool_create(2, NULL, 0, &pool));
  for (int round = 0; round < 20; round++) {
    ladle_pipeline_params params;
    ladle_pipeline_params_init(&params);
    params.batch_size = 64;
    params.prefetch_queue_depth = 4;
    params.pool = pool;
    ladle_pipeline *a = NULL, *b = NULL;
    CHECK_OK(ladle_pipeline_create(&params, &a));
    CHECK_OK(ladle_pipeline_create(&params, &b));
    int coin = -1;
    CHECK_OK(ladle_pipeline_add_op(a, "random.coin_flip", "cpu", NULL, 0, NULL, 0, NULL, &coin));
    CHECK_OK(ladle_pipeline_add_op(b, "random.coin_flip", "cpu", NULL, 0, NULL, 0, NULL, &coin));
    CHECK_OK(ladle_pipeline_set_outputs(a, &coin, 1));
    CHECK_OK(ladle_pipeline_set_outputs(b, &coin, 1));
    ladle_batch *held = NULL;
    CHECK_OK(ladle_pipeline_run(a, &held));
    if (round % 2) CHECK_OK(ladle_pipeline_build(b)); /* b prefetches, never consumed */
    ladle_pipeline_destroy(a); /* with iterations in flight */
    ladle_pipeline_destroy(b);
    /* The batch outlives its pipeline. */
    CHECK(ladle_batch_num_samples(held) == 64);
    int32_t v = *(int32_t *)ladle_batch_data(held, 63);
    CHECK(v == 0 || v == 1);
    ladle_batch_release(held);
  }
  ladle_thread_pool_destroy(pool);
}

/* A 1-D uint8 batch of `n` samples of `len` bytes each, byte j of sample i = first + i * len + j. */
static ladle_batch *bytes_batch(int n, int len, int first) {
  int64_t shapes[16];
  uint8_t data[16 * 8];
  for (int i = 0; i < n; i++) shapes[i] = len;
  for (int i = 0; i < n * len; i++) data[i] = (uint8_t)(first + i);
  ladle_batch *b = NULL;
  CHECK_OK(ladle_batch_create_cpu(LADLE_UINT8, n, 1, shapes, "", data, &b));
  return b;
}

/* external_source "src" (1-D uint8) then `casts` casts to int32, the last
 * the output; batch 8, 2 threads; not built. */
static ladle_pipeline *source_pipeline(int casts) {
  ladle_pipeline *p = new_pipeline(8, 2);
  ladle_arg args[3] = {{"dtype", {LADLE_ARG_DTYPE, 1, {.i = LADLE_UINT8}}, -1},
                       {"ndim", {LADLE_ARG_INT, 1, {.i = 1}}, -1},
                       {"layout", {LADLE_ARG_STRING, 1, {.s = ""}}, -1}};
  int node = -1;
  CHECK_OK(ladle_pipeline_add_op(p, "external_source", "cpu", NULL, 0, args, 3, "src", &node));
  ladle_arg to_int = {"dtype", {LADLE_ARG_DTYPE, 1, {.i = LADLE_INT32}}, -1};
  for (int k = 0; k < casts; k++) {
    int in = node;
    CHECK_OK(ladle_pipeline_add_op(p, "cast", "cpu", &in, 1, &to_int, 1, NULL, &node));
  }
  CHECK_OK(ladle_pipeline_set_outputs(p, &node, 1));
  return p;
}

/* source_pipeline's p: a run before anything is fed fails; then `fed`
 * batches of sizes[k] samples of 4 bytes (batch k's bytes from 10 k on) go
 * in, and `runs` iterations come out, each its fed batch. */
static void feed_and_run(ladle_pipeline *p, const int *sizes, int fed, int runs) {
  ladle_batch *out = NULL;
  CHECK(ladle_pipeline_run(p, &out) == LADLE_ERROR_STATE && strstr(ladle_last_error(), "'src' has no data"));
  for (int k = 0; k < fed; k++) {
    ladle_batch *b = bytes_batch(sizes[k], 4, 10 * k);
    CHECK_OK(ladle_pipeline_feed(p, "src", b));
    ladle_batch_release(b); /* the pipeline holds its own reference */
  }
  for (int k = 0; k < runs; k++) {
    CHECK_OK(ladle_pipeline_run(p, &out));
    CHECK(ladle_batch_num_samples(out) == sizes[k]);
    const int32_t *last = ladle_batch_data(out, sizes[k] - 1);
    CHECK(last[3] == 10 * k + sizes[k] * 4 - 1);
    ladle_batch_release(out);
  }
}

/* external_source: fed batches come out in order, each iteration as big as
 * its fed batch; a run with nothing fed fails at once; fed batches still
 * queued at destroy are released (the ASan build checks). */
static void test_external_source(void) {
  ladle_pipeline *p = source_pipeline(1);
  const int sizes[4] = {8, 3, 1, 5};
  feed_and_run(p, sizes, 4, 3);
  ladle_batch *wrong = NULL;
  int64_t shape2[2] = {2, 2};
  uint8_t zeros[4] = {0};
  CHECK_OK(ladle_batch_create_cpu(LADLE_UINT8, 1, 2, shape2, "", zeros, &wrong));
  CHECK(ladle_pipeline_feed(p, "src", wrong) == LADLE_ERROR_INVALID_ARGUMENT && strstr(ladle_last_error(), "rank 2"));
  CHECK(ladle_pipeline_feed(p, "other", wrong) == LADLE_ERROR_INVALID_ARGUMENT);
  ladle_batch_release(wrong);
  ladle_batch *big = bytes_batch(8, 1, 0), *more = bytes_batch(2, 1, 0);
  CHECK_OK(ladle_pipeline_feed(p, "src", big));
  CHECK_OK(ladle_pipeline_feed(p, "src", more));
  ladle_batch_release(big);
  ladle_batch_release(more);
  ladle_pipeline_position pos = {0};
  CHECK(ladle_pipeline_set_position(p, &pos) == LADLE_ERROR_STATE);
  ladle_pipeline_destroy(p); /* with the 5-sample batch and two more fed, some maybe prepared */
}

/* Warms p up, then runs 50 iterations between two readings of its host
 * pool's figures; checks that those allocated nothing. */
static void check_warm_allocs(ladle_pipeline *p, ladle__pool_stats *before, ladle__pool_stats *after) {
  static uint8_t buf[1 << 20];
  /* Warm up at the peak of iterations alive at once: a slow consumer lets
   * the queue fill while it holds a batch. */
  for (int i = 0; i < 10; i++) {
    collect(p, 1, buf);
    usleep(3000);
  }
  /* ... and at a fast consumer's: the executor may take the next iteration's
   * batches a moment before the consumer has released its last ones. */
  for (int i = 0; i < 20; i++) collect(p, 10, buf);
  /* A window of 50 iterations may still meet a new peak of batches alive at
   * once (one more block each time, as the timing of the threads allows):
   * the pool is warm once a window allocates nothing, which an allocation
   * per iteration would never give. */
  for (int window = 0; window < 20; window++) {
    ladle__pool_get_stats(p->host_pool, before);
    collect(p, 50, buf);
    ladle__pool_get_stats(p->host_pool, after);
    if (after->system_allocs == before->system_allocs) break;
    fprintf(stderr, "     (window %d of 50 iterations: host pool allocations %llu -> %llu)\n", window,
            (unsigned long long)before->system_allocs, (unsigned long long)after->system_allocs);
  }
  CHECK(after->system_allocs == before->system_allocs);
}

static void test_no_allocation_when_warm(void) {
  ladle_pipeline *p = random_pipeline(32, 2, 2, 3);
  ladle__pool_stats before, after;
  check_warm_allocs(p, &before, &after);
  if (after.system_allocs != before.system_allocs)
    fprintf(stderr, "allocs %llu -> %llu, reuses %llu -> %llu\n", (unsigned long long)before.system_allocs,
            (unsigned long long)after.system_allocs, (unsigned long long)before.reuses, (unsigned long long)after.reuses);
  CHECK(after.reuses > before.reuses);
  ladle_pipeline_destroy(p);
}

/* The pools' figures in ladle_pipeline_get_stats, and release_memory. */
static void test_memory_stats_and_release(void) {
  ladle_pipeline *p = random_pipeline(32, 2, 2, 3);
  static uint8_t buf[1 << 20];
  ladle_pipeline_stats st;
  CHECK_OK(ladle_pipeline_get_stats(p, &st));
  collect(p, 10, buf);
  CHECK_OK(ladle_pipeline_get_stats(p, &st));
  const ladle_memory_stats *m = &st.host_pageable;
  CHECK(m->peak_used_bytes > 0 && m->peak_used_bytes >= m->used_bytes);
  CHECK(m->reserved_bytes >= m->used_bytes && m->peak_reserved_bytes >= m->reserved_bytes);
  CHECK(m->peak_reserved_bytes <= 2 * m->peak_used_bytes);
  CHECK(st.device.peak_reserved_bytes == 0 && st.host_pinned.peak_reserved_bytes == 0); /* no GPU operators */
  uint64_t released = 0;
  CHECK_OK(ladle_pipeline_release_memory(p, &released));
  ladle_pipeline_stats after;
  CHECK_OK(ladle_pipeline_get_stats(p, &after));
  CHECK(after.host_pageable.reserved_bytes + released >= m->reserved_bytes); /* the executor may allocate meanwhile */
  CHECK(after.host_pageable.peak_reserved_bytes >= m->peak_reserved_bytes);
  CHECK(collect(p, 3, buf) > 0); /* goes on */
  CHECK(ladle_pipeline_release_memory(NULL, NULL) == LADLE_ERROR_INVALID_ARGUMENT);
  ladle_pipeline_destroy(p);
}

/* --- the executor's two stages (executor.c), forced on these CPU pipelines ------------------------------------ */

/* Staging as given: -1 the default (one stage on the CPU), 0 one stage
 * (LADLE_EXECUTOR_STAGES=1), k >= 1 the device stage from node k (k past the
 * last node: one stage, beyond: an error); read at build. */
static void set_staging(int split) {
  char text[16];
  unsetenv("LADLE_EXECUTOR_SPLIT");
  unsetenv("LADLE_EXECUTOR_STAGES");
  snprintf(text, sizeof text, "%d", split);
  if (split == 0) setenv("LADLE_EXECUTOR_STAGES", "1", 1);
  else if (split > 0) setenv("LADLE_EXECUTOR_SPLIT", text, 1);
}

static ladle_pipeline *staged(ladle_pipeline *p, int split) {
  set_staging(split);
  CHECK_OK(ladle_pipeline_build(p));
  set_staging(-1);
  return p;
}

/* Bytes identical to one stage for any thread count, depth and seed; the
 * device stage's thread ran (device_stage_seconds), and repositioning drops
 * what either stage has in flight. */
static void test_two_stages_give_the_same_bytes(void) {
  static uint8_t ref[1 << 16], other[1 << 16];
  const int settings[5][3] = {{1, 1, 7}, {4, 1, 7}, {2, 3, 9}, {3, 2, 0}, {1, 4, 5}};
  for (int s = 0; s < 5; s++) {
    ladle_pipeline *p = staged(random_pipeline(16, settings[s][0], settings[s][1], settings[s][2]), 0);
    size_t n = collect(p, 12, ref);
    ladle_pipeline_stats st;
    CHECK_OK(ladle_pipeline_get_stats(p, &st));
    CHECK(st.host_stage_seconds == 0 && st.device_stage_seconds == 0);
    ladle_pipeline_destroy(p);
    p = staged(random_pipeline(16, settings[s][0], settings[s][1], settings[s][2]), 1);
    CHECK(collect(p, 12, other) == n && memcmp(ref, other, n) == 0);
    CHECK_OK(ladle_pipeline_get_stats(p, &st));
    CHECK(st.host_stage_seconds > 0 && st.device_stage_seconds > 0 && st.iterations >= 12);
    CHECK(st.prepare_seconds + 1e-9 >= st.host_stage_seconds + st.device_stage_seconds - 1e-3);
    ladle_pipeline_position pos = {5};
    CHECK_OK(ladle_pipeline_set_position(p, &pos));
    CHECK(collect(p, 4, other) == 4 * 128 && memcmp(other, ref + 5 * 128, 4 * 128) == 0);
    pos.iteration = 2;
    CHECK_OK(ladle_pipeline_set_position(p, &pos));
    CHECK_OK(ladle_pipeline_get_position(p, &pos));
    CHECK(pos.iteration == 2);
    CHECK(collect(p, 1, other) == 128 && memcmp(other, ref + 2 * 128, 128) == 0);
    CHECK_OK(ladle_pipeline_get_position(p, &pos));
    CHECK(pos.iteration == 3); /* iterations handed out, not those the stages prepared */
    ladle_pipeline_destroy(p);
  }
  /* The boundary past the last node: one stage; beyond it, no boundary: the build fails. */
  ladle_pipeline *p = staged(random_pipeline(16, 2, 2, 7), 2);
  collect(p, 2, other);
  ladle_pipeline_stats st;
  CHECK_OK(ladle_pipeline_get_stats(p, &st));
  CHECK(st.device_stage_seconds == 0);
  ladle_pipeline_destroy(p);
  p = random_pipeline(16, 2, 2, 7);
  set_staging(3);
  CHECK(ladle_pipeline_build(p) == LADLE_ERROR_INVALID_ARGUMENT);
  set_staging(-1);
  CHECK(strstr(ladle_last_error(), "LADLE_EXECUTOR_SPLIT=\"3\" is not a node index") != NULL);
  ladle_pipeline_destroy(p);
}

/* Fed seeds and external sources are taken by the host stage, in order. */
static void test_two_stages_fed_data(void) {
  static uint8_t want[3][256], got[3 * 256];
  const uint64_t seeds[3] = {11, 12, 11};
  for (int k = 0; k < 3; k++) {
    ladle_pipeline *ref = staged(random_pipeline(16, 2, 1, seeds[k]), 0);
    CHECK(collect(ref, 1, want[k]) == 128);
    ladle_pipeline_destroy(ref);
  }
  ladle_pipeline *p = staged(random_pipeline_of(16, 2, 2, 5, 1), 1);
  for (int k = 0; k < 3; k++) CHECK_OK(ladle_pipeline_feed_seed(p, seeds[k]));
  CHECK(collect(p, 3, got) == 3 * 128);
  for (int k = 0; k < 3; k++) CHECK(memcmp(got + k * 128, want[k], 128) == 0);
  ladle_batch *out[2] = {NULL, NULL};
  CHECK(ladle_pipeline_run(p, out) == LADLE_ERROR_STATE && strstr(ladle_last_error(), "no seed"));
  ladle_pipeline_destroy(p);

  p = source_pipeline(2);
  staged(p, 2); /* a host stage of the source alone would be one stage */
  const int sizes[5] = {8, 3, 1, 5, 2};
  feed_and_run(p, sizes, 5, 4);
  ladle_pipeline_stats st;
  CHECK_OK(ladle_pipeline_get_stats(p, &st));
  CHECK(st.device_stage_seconds > 0);
  ladle_pipeline_destroy(p); /* one fed batch left, maybe in flight */
}

/* Start, run a little or not at all, destroy: many times, so that a race of
 * the two threads at start or stop shows (tools/sanitize runs this under
 * TSan and ASan); the warm pipeline allocates nothing with three iterations
 * alive in the stages either. */
static void test_two_stages_start_and_stop(void) {
  static uint8_t buf[1 << 20];
  for (int round = 0; round < 200; round++) {
    ladle_pipeline *p = staged(random_pipeline(4, 1 + round % 3, 1 + round % 2, 3), 1);
    if (round % 3) collect(p, round % 3, buf);
    if (round % 5 == 0) {
      ladle_pipeline_position pos = {round % 7};
      CHECK_OK(ladle_pipeline_set_position(p, &pos));
    }
    ladle_pipeline_destroy(p);
  }
  ladle_pipeline *p = staged(random_pipeline(32, 2, 2, 3), 1);
  ladle__pool_stats before, after;
  check_warm_allocs(p, &before, &after);
  ladle_pipeline_destroy(p);
}

/* A folder of 10 copies of a test JPEG and 3 bad files; returns 0 when the
 * JPEG cannot be read. */
static int make_bad_tree(char *root) {
  const char *dir = getenv("LADLE_TEST_DATA");
  char path[600];
  snprintf(path, sizeof path, "%s/0ce2de21c524d1c5919393c4a98083ce5ad1d9be", dir && *dir ? dir : "tests/data");
  static char jpeg[1 << 16];
  FILE *f = fopen(path, "rb");
  size_t len = f ? fread(jpeg, 1, sizeof jpeg, f) : 0;
  if (f) fclose(f);
  if (!len || !mkdtemp(root)) return 0;
  snprintf(path, sizeof path, "%s/a", root);
  CHECK(mkdir(path, 0700) == 0);
  for (int i = 0; i < 13; i++) {
    snprintf(path, sizeof path, "%s/a/%c%02d.jpg", root, i < 10 ? 'g' : 'b', i);
    f = fopen(path, "wb");
    size_t bytes = i < 10 ? len : i == 10 ? 0 : i == 11 ? 300 : 40;
    CHECK(f && (i == 11 ? fwrite("not a jpeg", 1, 10, f) == 10 : fwrite(jpeg, 1, bytes, f) == bytes) && fclose(f) == 0);
  }
  return 1;
}

static void remove_bad_tree(const char *root) {
  char path[600];
  for (int i = 0; i < 13; i++) {
    snprintf(path, sizeof path, "%s/a/%c%02d.jpg", root, i < 10 ? 'g' : 'b', i);
    unlink(path);
  }
  snprintf(path, sizeof path, "%s/a", root);
  rmdir(path);
  rmdir(root);
}

/* readers.file -> decoders.image -> resize with skip_bad_samples: the bad
 * files fail in the device stage (split 1) or the host stage (split 2); the
 * outputs and the skip log are those of one stage. */
static size_t skip_run(const char *root, int split, int threads, char *log, size_t log_size) {
  static uint8_t buf[1 << 16];
  ladle_pipeline_params params;
  ladle_pipeline_params_init(&params);
  params.batch_size = 4;
  params.num_threads = threads;
  params.seed = 3;
  params.skip_bad_samples = 1;
  ladle_pipeline *p = NULL;
  CHECK_OK(ladle_pipeline_create(&params, &p));
  ladle_arg reader[2] = {{"file_root", {LADLE_ARG_STRING, 1, {.s = root}}, -1},
                         {"random_shuffle", {LADLE_ARG_BOOL, 1, {.i = 1}}, -1}};
  ladle_arg size[2] = {float_arg("resize_x", 8), float_arg("resize_y", 8)};
  int files = -1, images = -1, resized = -1;
  CHECK_OK(ladle_pipeline_add_op(p, "readers.file", "cpu", NULL, 0, reader, 2, "R", &files));
  CHECK_OK(ladle_pipeline_add_op(p, "decoders.image", "cpu", &files, 1, NULL, 0, NULL, &images));
  CHECK_OK(ladle_pipeline_add_op(p, "resize", "cpu", &images, 1, size, 2, NULL, &resized));
  int outs[2] = {resized, files + 1};
  CHECK_OK(ladle_pipeline_set_outputs(p, outs, 2));
  staged(p, split);
  size_t len = 0;
  for (int it = 0; it < 8; it++) { /* two epochs and a half of 13 files */
    ladle_batch *out[2] = {NULL, NULL};
    CHECK_OK(ladle_pipeline_run(p, out));
    for (int k = 0; k < 2 && out[0]; k++) {
      size_t bytes = (size_t)(out[k]->offsets[ladle_batch_num_samples(out[k])] - out[k]->offsets[0]);
      memcpy(buf + len, ladle_batch_data(out[k], 0), bytes);
      len += bytes;
      ladle_batch_release(out[k]);
    }
  }
  size_t used = (size_t)snprintf(log, log_size, "%lld skipped;", (long long)ladle_pipeline_num_skipped(p));
  for (int64_t i = 0; i < ladle_pipeline_num_skipped(p) && used < log_size; i++) {
    ladle_skipped_sample s;
    CHECK_OK(ladle_pipeline_get_skipped(p, i, &s));
    used += (size_t)snprintf(log + used, log_size - used, " %lld/%lld/%lld %s: %s;", (long long)s.record,
                             (long long)s.epoch, (long long)s.iteration, s.name, s.error);
  }
  uint64_t sum = 1469598103934665603ull; /* FNV-1a of the outputs, appended */
  for (size_t i = 0; i < len; i++) sum = (sum ^ buf[i]) * 1099511628211ull;
  if (used < log_size) snprintf(log + used, log_size - used, " outputs %zu bytes, %016llx", len, (unsigned long long)sum);
  ladle_pipeline_stats st;
  CHECK_OK(ladle_pipeline_get_stats(p, &st));
  CHECK((st.device_stage_seconds > 0) == (split > 0));
  ladle_pipeline_destroy(p);
  return len;
}

static void test_two_stages_skip_bad_files(void) {
  char root[] = "/tmp/ladle_stages_XXXXXX";
  if (!make_bad_tree(root)) {
    fprintf(stderr, "  the test JPEG was not found (set LADLE_TEST_DATA): skipped\n");
    return;
  }
  static char want[1 << 14], got[1 << 14];
  CHECK(skip_run(root, 0, 2, want, sizeof want) == 8 * 4 * (8 * 8 * 3 + 4));
  CHECK(strstr(want, "3 skipped;") == want);
  for (int split = 1; split <= 2; split++)
    for (int threads = 1; threads <= 3; threads += 2) {
      skip_run(root, split, threads, got, sizeof got);
      CHECK(strcmp(got, want) == 0);
      if (strcmp(got, want) != 0) fprintf(stderr, "  split %d: %s\n  one stage: %s\n", split, got, want);
    }
  remove_bad_tree(root);
}

int main(void) {
  RUN(test_random_ops_and_determinism);
  RUN(test_fed_seeds);
  RUN(test_node_seeds);
  RUN(test_last_records);
  RUN(test_set_position);
  RUN(test_argument_errors);
  RUN(test_destroy_in_flight_and_shared_pool);
  RUN(test_external_source);
  RUN(test_no_allocation_when_warm);
  RUN(test_memory_stats_and_release);
  RUN(test_two_stages_give_the_same_bytes);
  RUN(test_two_stages_fed_data);
  RUN(test_two_stages_start_and_stop);
  RUN(test_two_stages_skip_bad_files);
  TEST_MAIN_END();
}

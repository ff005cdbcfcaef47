/* math.arithmetic's CUDA kernel against its CPU kernel on random inputs:
 * every operation, every element type, broadcast and strided operands.
 * Exits 77 (ctest's SKIP) without CUDA or a device.
 *
 * Agreement asserted: bit-identical for every integer result and for the
 * correctly rounded float operations (+ - * / // % min max clamp, comparisons,
 * abs, floor, ceil, sqrt, rsqrt = 1/sqrt); at most 8 ulps (float32; float16:
 * 1 ulp after rounding) for exp, log*, pow, cbrt, atan2, trig and hyperbolic
 * functions, where CUDA's maths library (documented: <= 4 ulps) and glibc's
 * (<= 1-2 ulps) round differently. */
#include "test_cuda.h" /* built without CUDA: all of this test, a skip */
#ifdef LADLE_HAVE_CUDA

#include "test_random.h"
#include "ops/kernels/half.h"
#include "ops/math/math_kernel.h"
#include "ops/math/math_scalar.h"
#include "math_chain.h"

#define RULES(e, name, arity, rule) #rule,
static const char *const rules[] = {LADLE_MATH_OPS(RULES)};
#define ARITIES(e, name, arity, rule) arity,
static const int arities[] = {LADLE_MATH_OPS(ARITIES)};

static const int types[] = {LADLE_UINT8, LADLE_INT32, LADLE_INT64, LADLE_FLOAT16, LADLE_FLOAT32};

static int exact_op(int op) {
  return op <= LADLE_MATH_MOD || (op >= LADLE_MATH_MIN && op <= LADLE_MATH_MAX) || op == LADLE_MATH_CLAMP ||
         (op >= LADLE_MATH_EQ && op <= LADLE_MATH_ABS) || op == LADLE_MATH_FABS || op == LADLE_MATH_FLOOR ||
         op == LADLE_MATH_CEIL || op == LADLE_MATH_SQRT || op == LADLE_MATH_RSQRT;
}

/* Random element values: small integers (so pow and shifts stay in range of
 * interest, and divisors are nonzero), floats in [-4, 4]. */
static void fill(void *p, int t, int64_t n, int nonzero) {
  for (int64_t i = 0; i < n; i++) {
    int64_t v = rnd_int(-20, 20);
    if (nonzero && v == 0) v = 3;
    float f = (float)ladle__rng_uniform(&rng) * 8.0f - 4.0f;
    switch (t) {
      case LADLE_UINT8: ((uint8_t *)p)[i] = (uint8_t)(nonzero ? rnd_int(1, 255) : rnd_int(0, 255)); break;
      case LADLE_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
      case LADLE_INT64: ((int64_t *)p)[i] = v; break;
      case LADLE_FLOAT16: ((uint16_t *)p)[i] = ladle__f32_to_f16(f); break;
      default: ((float *)p)[i] = f; break;
    }
  }
}

static int64_t ulps(float a, float b) {
  if (a != a && b != b) return 0;
  if (a == b) return 0;
  int32_t x = (int32_t)ladle__f32_bits(a), y = (int32_t)ladle__f32_bits(b);
  if (x < 0) x = INT32_MIN - x;
  if (y < 0) y = INT32_MIN - y;
  return x > y ? (int64_t)x - y : (int64_t)y - x;
}

/* One sample's buffers: its operands on the host and on the device, the
 * CPU's and the GPU's outputs and the device output. */
typedef struct math_bufs {
  void *in[3], *din[3], *cpu, *gpu, *dout;
} math_bufs;

/* Operand k: n random elements of type t (fill's nonzero), uploaded. */
static void bufs_operand(math_bufs *b, int k, int t, int64_t n, int nonzero) {
  size_t bytes = (size_t)n * ladle_dtype_size((ladle_dtype)t);
  b->in[k] = malloc(bytes);
  fill(b->in[k], t, n, nonzero);
  b->din[k] = test_device_copy(b->in[k], bytes);
}

static void bufs_output(math_bufs *b, size_t bytes) {
  b->cpu = malloc(bytes);
  b->gpu = malloc(bytes);
  b->dout = test_device_alloc(bytes);
}

static void bufs_free(math_bufs *b) {
  for (int k = 0; k < 3; k++) free(b->in[k]), cudaFree(b->din[k]);
  free(b->cpu), free(b->gpu), cudaFree(b->dout);
}

/* The elements of [from, to) of two outputs of type t that differ, NaNs of
 * either sign counting as equal. */
static int64_t count_differing(const void *cpu, const void *gpu, int64_t from, int64_t to, int t) {
  const size_t es = ladle_dtype_size((ladle_dtype)t);
  int64_t bad = 0;
  for (int64_t j = from; j < to; j++) {
    if (!memcmp((const char *)cpu + j * es, (const char *)gpu + j * es, es)) continue;
    float a = ladle__math_load_f32(cpu, j, t), b = ladle__math_load_f32(gpu, j, t);
    bad += !(a != a && b != b);
  }
  return bad;
}

/* One batch of 3 samples: operand 0 [h, w], operand 1 [1, w] (broadcast
 * rows) or a constant, operand 2 [h, 1]; the same on both kernels. */
static void test_op_type(int op, int type) {
  enum { N = 3, H = 7, W = 33 };
  const int arity = arities[op];
  const char *rule = rules[op];
  if (!strcmp(rule, "INT") && (type == LADLE_FLOAT16 || type == LADLE_FLOAT32)) return;
  int cls = type == LADLE_INT64 ? LADLE_MATH_I64 : type == LADLE_FLOAT16 || type == LADLE_FLOAT32 ? LADLE_MATH_F32
                                                                                                  : LADLE_MATH_I32;
  int out_type = type;
  if (!strcmp(rule, "FLOAT") && cls != LADLE_MATH_F32) cls = LADLE_MATH_F32, out_type = LADLE_FLOAT32;
  if (!strcmp(rule, "CMP")) out_type = LADLE_UINT8;
  ladle__math_expr e = {.op = op, .cls = cls, .arity = arity, .out_dtype = out_type};
  size_t os = ladle_dtype_size((ladle_dtype)out_type);
  int64_t in_elems[3] = {H * W, W, H};
  math_bufs b[N];
  memset(b, 0, sizeof b);
  ladle__math_sample cpu[N], gpu[N];
  int constant = rnd_int(0, 1) && arity >= 2;
  for (int k = 0; k < arity; k++) e.in_dtype[k] = type;
  if (constant) {
    e.is_constant[1] = 1;
    fill(&e.constant[1], type, 1, 1);
  }
  for (int i = 0; i < N; i++) {
    memset(&cpu[i], 0, sizeof cpu[i]);
    cpu[i].ndim = 2;
    cpu[i].shape[0] = H;
    cpu[i].shape[1] = W;
    int64_t strides[3][2] = {{W, 1}, {0, 1}, {1, 0}};
    for (int k = 0; k < arity; k++) {
      bufs_operand(&b[i], k, type, in_elems[k], k == 1);
      cpu[i].in[k] = b[i].in[k];
      if (!e.is_constant[k]) memcpy(cpu[i].strides[k], strides[k], sizeof strides[k]);
    }
    bufs_output(&b[i], H * W * os);
    cpu[i].out = b[i].cpu;
    gpu[i] = cpu[i];
    gpu[i].out = b[i].dout;
    for (int k = 0; k < arity; k++) gpu[i].in[k] = b[i].din[k];
    ladle__math_collapse(&cpu[i], arity);
    ladle__math_collapse(&gpu[i], arity);
    CHECK(ladle__math_run(&e, &cpu[i]) == 0);
  }
  size_t bytes = ladle__gpu_math_param_bytes(N);
  void *hp = test_pinned_alloc(bytes), *dp = test_device_alloc(bytes);
  CHECK_OK(ladle__gpu_math(&e, gpu, N, hp, dp, bytes, NULL));
  int64_t worst = 0, mismatches = 0;
  for (int i = 0; i < N; i++) {
    test_download(b[i].gpu, b[i].dout, H * W * os, NULL);
    for (int64_t j = 0; j < H * W; j++) {
      if (out_type == LADLE_FLOAT32 || out_type == LADLE_FLOAT16) {
        float x = ladle__math_load_f32(b[i].cpu, j, out_type), y = ladle__math_load_f32(b[i].gpu, j, out_type);
        int64_t u = ulps(x, y);
        if (u > worst) worst = u;
      } else if (memcmp((char *)b[i].cpu + j * os, (char *)b[i].gpu + j * os, os)) {
        mismatches++;
      }
    }
    bufs_free(&b[i]);
  }
  cudaFreeHost(hp);
  cudaFree(dp);
  /* float16 results are compared as floats: 1 ulp of a half is 8192 float ulps. */
  int64_t limit = exact_op(op) ? 0 : out_type == LADLE_FLOAT16 ? 8192 : 8;
  if (worst > limit || mismatches)
    fprintf(stderr, "op %d type %d: worst %lld ulps, %lld integer mismatches\n", op, type, (long long)worst,
            (long long)mismatches);
  CHECK(worst <= limit);
  CHECK(mismatches == 0);
}

static void test_every_op_and_type(void) {
  ladle__rng_init(&rng, 99, 1, 0, 0);
  for (int op = 0; op < LADLE_MATH_OP_COUNT; op++)
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) test_op_type(op, types[t]);
}

/* A subscript's read: the copy of a [5, 6, 4] int64 input at an offset,
 * with a negative and a step-2 stride (x[4:0:-1, ::2, 1]). */
static void test_strided_copy(void) {
  enum { D0 = 5, D1 = 6, D2 = 4, N = D0 * D1 * D2 };
  ladle__rng_init(&rng, 99, 2, 0, 0);
  int64_t in[N], cpu_out[4 * 3], gpu_out[4 * 3];
  fill(in, LADLE_INT64, N, 0);
  ladle__math_expr e = {.op = LADLE_MATH_PLUS, .cls = LADLE_MATH_I64, .arity = 1, .in_dtype = {LADLE_INT64},
                        .out_dtype = LADLE_INT64};
  ladle__math_sample s = {.ndim = 2, .shape = {4, 3}, .strides = {{-D1 * D2, 2 * D2}}};
  s.in[0] = in + 4 * D1 * D2 + 1;
  s.out = cpu_out;
  CHECK(ladle__math_run(&e, &s) == 0);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 3; j++) CHECK(cpu_out[i * 3 + j] == in[(4 - i) * D1 * D2 + 2 * j * D2 + 1]);
  size_t bytes = ladle__gpu_math_param_bytes(1);
  void *din = test_device_copy(in, sizeof in), *dout = test_device_alloc(sizeof gpu_out);
  void *hp = test_pinned_alloc(bytes), *dp = test_device_alloc(bytes);
  s.in[0] = (int64_t *)din + 4 * D1 * D2 + 1;
  s.out = dout;
  CHECK_OK(ladle__gpu_math(&e, &s, 1, hp, dp, bytes, NULL));
  test_download(gpu_out, dout, sizeof gpu_out, NULL);
  CHECK(memcmp(cpu_out, gpu_out, sizeof gpu_out) == 0);
  cudaFree(din);
  cudaFree(dout);
  cudaFreeHost(hp);
  cudaFree(dp);
}

/* Fused programs (math_chain.h's random chains of 1..8 steps, mixed types,
 * broadcast leaves) in one kernel against the CPU program: the same bytes,
 * NaNs of either sign counting as equal (CUDA's sqrtf of a negative value
 * gives another NaN bit pattern than the CPU's; every operation used is
 * correctly rounded, so nothing else may differ). 3 samples a launch. */
static void test_chains(void) {
  enum { N = CHAIN_H * CHAIN_W, S = 3 };
  static uint8_t cpu_out[S][N * 4], gpu_out[S][N * 4];
  ladle__rng r;
  ladle__rng_init(&r, 7, 3, 0, 0);
  size_t bytes = ladle__gpu_math_param_bytes(S);
  void *hp = test_pinned_alloc(bytes), *dp = test_device_alloc(bytes), *dout[S] = {NULL};
  for (int i = 0; i < S; i++) dout[i] = test_device_alloc(sizeof gpu_out[0]);
  for (int trial = 0; trial < 200; trial++) {
    chain_case c[S];
    ladle__math_sample cpu[S], gpu[S];
    void *dleaf[S][LADLE_MATH_MAX_LEAVES] = {{NULL}};
    chain_make(&r, 1 + trial % LADLE_MATH_MAX_STEPS, &c[0]);
    for (int i = 0; i < S; i++) { /* one program, other leaf values per sample */
      if (i) {
        c[i] = c[0];
        for (int k = 0; k < c[0].p.num_leaves; k++) {
          int64_t n = chain_leaf_elems(c[0].leaf_shape[k]);
          c[i].leaf[k] = malloc((size_t)n * 4);
          chain_fill(&r, c[i].leaf[k], c[0].leaf_dtype[k], n);
        }
      }
      for (int k = 0; k < c[0].p.num_leaves; k++)
        dleaf[i][k] = test_device_copy(c[i].leaf[k], (size_t)chain_leaf_elems(c[0].leaf_shape[k]) * 4);
      chain_describe(&c[i], c[i].leaf, cpu_out[i], &cpu[i]);
      chain_describe(&c[i], dleaf[i], dout[i], &gpu[i]);
      ladle__math_collapse(&gpu[i], c[0].p.num_leaves);
      CHECK(ladle__math_run_prog(&c[0].p, &cpu[i]) == 0);
    }
    CHECK_OK(ladle__gpu_math_prog(&c[0].p, gpu, S, hp, dp, bytes, NULL));
    const int out_type = c[0].p.step[c[0].p.num_steps - 1].e.out_dtype;
    const size_t es = ladle_dtype_size((ladle_dtype)out_type);
    for (int i = 0; i < S; i++) {
      test_download(gpu_out[i], dout[i], (size_t)N * es, NULL);
      int64_t bad = count_differing(cpu_out[i], gpu_out[i], 0, N, out_type);
      if (bad) fprintf(stderr, "chain trial %d sample %d: %lld elements differ\n", trial, i, (long long)bad);
      CHECK(bad == 0);
      for (int k = 0; k < c[0].p.num_leaves; k++) cudaFree(dleaf[i][k]);
      chain_free(&c[i]);
    }
  }
  for (int i = 0; i < S; i++) cudaFree(dout[i]);
  cudaFreeHost(hp);
  cudaFree(dp);
}

/* The flat kernel (math_kernel.h: linear float32 programs on 1-D samples of
 * stride 0/1) against the CPU program, bit for bit (NaNs of either sign
 * equal): per program type pair, one launch of samples of 1, 7, 1000003 and
 * 2^23 + 13 elements (more than one grid-stride pass), a 0-d sample, and a
 * sample with a strided leaf (the general loop inside the flat kernel). */
static void flat_case(int leaf_type, int mid_type, int out_type, int op2, int seed) {
  enum { S = 6, NL = 2 };
  const int64_t counts[S] = {1, 7, 1000003, ((int64_t)1 << 23) + 13, 1, 300};
  ladle__rng_init(&rng, 99, (uint64_t)seed, 0, 0);
  /* step 0: leaf0 * 0.5; step 1: prev (op2) leaf1 (leaf1 broadcast: stride 0
   * in samples 1 and 3); step 2: prev + 1; step 3: clamp(prev, -2, 100). */
  ladle__math_prog p = {.num_steps = 4, .num_leaves = NL};
  float c05 = 0.5f, c1 = 1.0f, lo = -2.0f, hi = 100.0f;
  p.step[0].e = (ladle__math_expr){.op = LADLE_MATH_MUL, .cls = LADLE_MATH_F32, .arity = 2,
                                   .in_dtype = {leaf_type, LADLE_FLOAT32}, .out_dtype = mid_type,
                                   .is_constant = {0, 1}};
  memcpy(&p.step[0].e.constant[1], &c05, 4);
  p.step[1].e = (ladle__math_expr){.op = op2, .cls = LADLE_MATH_F32, .arity = op2 == LADLE_MATH_SQRT ? 1 : 2,
                                   .in_dtype = {mid_type, leaf_type}, .out_dtype = mid_type};
  p.step[1].ref[0] = -1;
  p.step[1].ref[1] = 1;
  if (op2 == LADLE_MATH_SQRT) p.step[1].ref[1] = 0;
  p.step[2].e = (ladle__math_expr){.op = LADLE_MATH_ADD, .cls = LADLE_MATH_F32, .arity = 2,
                                   .in_dtype = {mid_type, LADLE_FLOAT32}, .out_dtype = mid_type,
                                   .is_constant = {0, 1}};
  memcpy(&p.step[2].e.constant[1], &c1, 4);
  p.step[2].ref[0] = -2;
  p.step[3].e = (ladle__math_expr){.op = LADLE_MATH_CLAMP, .cls = LADLE_MATH_F32, .arity = 3,
                                   .in_dtype = {mid_type, LADLE_FLOAT32, LADLE_FLOAT32}, .out_dtype = out_type,
                                   .is_constant = {0, 1, 1}};
  memcpy(&p.step[3].e.constant[1], &lo, 4);
  memcpy(&p.step[3].e.constant[2], &hi, 4);
  p.step[3].ref[0] = -3;
  if (op2 == LADLE_MATH_SQRT) p.num_leaves = 1; /* leaf 1 read nowhere */
  int leaf = -1;
  CHECK(ladle__math_prog_is_linear_f32(&p, &leaf) == 1 && leaf == leaf_type);
  const size_t os = ladle_dtype_size((ladle_dtype)out_type);
  math_bufs b[S];
  memset(b, 0, sizeof b);
  ladle__math_sample cpu[S], gpu[S];
  for (int i = 0; i < S; i++) {
    const int64_t n = counts[i], strided = i == S - 1;
    memset(&cpu[i], 0, sizeof cpu[i]);
    cpu[i].ndim = i == 4 ? 0 : 1;
    cpu[i].shape[0] = n;
    for (int k = 0; k < NL; k++) {
      const int bcast = k == 1 && (i == 1 || i == 3);
      const int64_t elems = bcast ? 1 : strided ? 2 * n : n;
      bufs_operand(&b[i], k, leaf_type, elems, 0);
      cpu[i].in[k] = b[i].in[k];
      cpu[i].strides[k][0] = cpu[i].ndim == 0 || bcast ? 0 : strided && k == 0 ? 2 : 1;
    }
    bufs_output(&b[i], (size_t)n * os);
    cpu[i].out = b[i].cpu;
    gpu[i] = cpu[i];
    gpu[i].out = b[i].dout;
    for (int k = 0; k < NL; k++) gpu[i].in[k] = b[i].din[k];
    CHECK(ladle__math_is_flat(&gpu[i], p.num_leaves) == !strided);
    CHECK(ladle__math_run_prog(&p, &cpu[i]) == 0);
  }
  size_t bytes = ladle__gpu_math_param_bytes(S);
  void *hp = test_pinned_alloc(bytes), *dp = test_device_alloc(bytes);
  CHECK_OK(ladle__gpu_math_prog(&p, gpu, S, hp, dp, bytes, NULL));
  for (int i = 0; i < S; i++) {
    const int64_t n = counts[i];
    test_download(b[i].gpu, b[i].dout, (size_t)n * os, NULL);
    int64_t bad = count_differing(b[i].cpu, b[i].gpu, 0, n, out_type);
    if (bad)
      fprintf(stderr, "flat %d->%d (op %d) sample %d: %lld of %lld differ\n", leaf_type, out_type, op2, i,
              (long long)bad, (long long)n);
    CHECK(bad == 0);
    bufs_free(&b[i]);
  }
  cudaFreeHost(hp);
  cudaFree(dp);
}

static void test_flat_kernel(void) {
  flat_case(LADLE_UINT8, LADLE_FLOAT32, LADLE_FLOAT32, LADLE_MATH_SUB, 10);
  flat_case(LADLE_UINT8, LADLE_FLOAT16, LADLE_FLOAT32, LADLE_MATH_MUL, 11); /* float16 intermediates */
  flat_case(LADLE_FLOAT32, LADLE_FLOAT32, LADLE_FLOAT32, LADLE_MATH_DIV, 12);
  flat_case(LADLE_FLOAT32, LADLE_FLOAT32, LADLE_FLOAT32, LADLE_MATH_SQRT, 13); /* one leaf */
  flat_case(LADLE_FLOAT16, LADLE_FLOAT16, LADLE_FLOAT16, LADLE_MATH_MAX, 14);
  flat_case(LADLE_FLOAT16, LADLE_FLOAT16, LADLE_FLOAT16, LADLE_MATH_ADD, 15);
  flat_case(LADLE_FLOAT16, LADLE_FLOAT32, LADLE_FLOAT32, LADLE_MATH_SUB, 16); /* no flat instance: general */
  flat_case(LADLE_UINT8, LADLE_FLOAT32, LADLE_UINT8, LADLE_MATH_MUL, 17);     /* likewise */
}

/* The vector loop (math_kernel.cu: programs of one leaf on 1-D samples of
 * stride 1) against the CPU program, bit for bit (NaNs of either sign
 * equal), per (leaf, output) type pair: the program leaf * 0.5 (stored as
 * mid_type), then `op2` of the previous result and the leaf (SUB: the leaf
 * minus it), then 1 + the previous result (the constant first). One launch
 * of samples of 0, 1, 15, 16, 17, 33, 1000003 and random numbers of
 * elements, packed one after the other (most start off a 16-byte boundary,
 * leaf and output at different offsets, both shifted by a random number of
 * elements), plus a 0-d sample, a broadcast leaf and a strided leaf (the
 * general loop inside the vector kernel). */
static void vec_case(int leaf_type, int mid_type, int out_type, int op2, int seed) {
  enum { S = 11 };
  const int64_t fixed[8] = {0, 1, 15, 16, 17, 33, 1000003, 0};
  ladle__rng_init(&rng, 99, (uint64_t)seed, 0, 0);
  ladle__math_prog p = {.num_steps = 3, .num_leaves = 1};
  float c05 = 0.5f, c1 = 1.0f;
  p.step[0].e = (ladle__math_expr){.op = LADLE_MATH_MUL, .cls = LADLE_MATH_F32, .arity = 2,
                                   .in_dtype = {leaf_type, LADLE_FLOAT32}, .out_dtype = mid_type,
                                   .is_constant = {0, 1}};
  memcpy(&p.step[0].e.constant[1], &c05, 4);
  const int unary = op2 == LADLE_MATH_SQRT, sub = op2 == LADLE_MATH_SUB;
  p.step[1].e = (ladle__math_expr){.op = op2, .cls = LADLE_MATH_F32, .arity = unary ? 1 : 2,
                                   .in_dtype = {sub ? leaf_type : mid_type, sub ? mid_type : leaf_type},
                                   .out_dtype = mid_type};
  p.step[1].ref[0] = sub ? 0 : -1;
  p.step[1].ref[1] = sub ? -1 : 0;
  p.step[2].e = (ladle__math_expr){.op = LADLE_MATH_ADD, .cls = LADLE_MATH_F32, .arity = 2,
                                   .in_dtype = {LADLE_FLOAT32, mid_type}, .out_dtype = out_type,
                                   .is_constant = {1, 0}};
  memcpy(&p.step[2].e.constant[0], &c1, 4);
  p.step[2].ref[1] = -2;
  int leaf = -1;
  CHECK(ladle__math_prog_is_linear_f32(&p, &leaf) == 1 && leaf == leaf_type);
  const size_t ls = ladle_dtype_size((ladle_dtype)leaf_type), os = ladle_dtype_size((ladle_dtype)out_type);
  int64_t count[S], at_in[S], at_out[S], in_total = (int64_t)rnd_int(0, 15), out_total = (int64_t)rnd_int(0, 15);
  for (int i = 0; i < S; i++) {
    count[i] = i < 7 ? fixed[i] : i == 7 ? 1 : rnd_int(1, 5000);
    const int64_t reads = i == 9 ? 1 : i == 10 ? 2 * count[i] : count[i]; /* 9: broadcast, 10: stride 2 */
    at_in[i] = in_total, at_out[i] = out_total;
    in_total += reads, out_total += count[i];
  }
  void *hin = malloc((size_t)in_total * ls), *cpu_out = calloc((size_t)out_total, os),
       *gpu_out = malloc((size_t)out_total * os);
  fill(hin, leaf_type, in_total, 0);
  void *din = test_device_copy(hin, (size_t)in_total * ls), *dout = test_device_alloc((size_t)out_total * os);
  test_fill(dout, 0, (size_t)out_total * os);
  ladle__math_sample cpu[S], gpu[S];
  for (int i = 0; i < S; i++) {
    memset(&cpu[i], 0, sizeof cpu[i]);
    cpu[i].ndim = i == 7 ? 0 : 1;
    cpu[i].shape[0] = count[i];
    cpu[i].strides[0][0] = i == 7 || i == 9 ? 0 : i == 10 ? 2 : 1;
    cpu[i].in[0] = (char *)hin + at_in[i] * ls;
    cpu[i].out = (char *)cpu_out + at_out[i] * os;
    gpu[i] = cpu[i];
    gpu[i].in[0] = (char *)din + at_in[i] * ls;
    gpu[i].out = (char *)dout + at_out[i] * os;
    CHECK(ladle__math_run_prog(&p, &cpu[i]) == 0);
  }
  size_t bytes = ladle__gpu_math_param_bytes(S);
  void *hp = test_pinned_alloc(bytes), *dp = test_device_alloc(bytes);
  CHECK_OK(ladle__gpu_math_prog(&p, gpu, S, hp, dp, bytes, NULL));
  test_download(gpu_out, dout, (size_t)out_total * os, NULL);
  for (int i = 0; i < S; i++) {
    int64_t bad = count_differing(cpu_out, gpu_out, at_out[i], at_out[i] + count[i], out_type);
    if (bad)
      fprintf(stderr, "vector %d->%d (op %d) sample %d: %lld of %lld differ\n", leaf_type, out_type, op2, i,
              (long long)bad, (long long)count[i]);
    CHECK(bad == 0);
  }
  free(hin), free(cpu_out), free(gpu_out);
  cudaFree(din), cudaFree(dout), cudaFreeHost(hp), cudaFree(dp);
}

static void test_vec_kernel(void) {
  vec_case(LADLE_UINT8, LADLE_FLOAT32, LADLE_FLOAT32, LADLE_MATH_MUL, 20); /* x * 0.5 * x + 1 */
  vec_case(LADLE_UINT8, LADLE_FLOAT16, LADLE_FLOAT32, LADLE_MATH_SUB, 21); /* float16 intermediates */
  vec_case(LADLE_UINT8, LADLE_FLOAT32, LADLE_FLOAT16, LADLE_MATH_DIV, 22);
  vec_case(LADLE_FLOAT32, LADLE_FLOAT32, LADLE_FLOAT32, LADLE_MATH_SQRT, 23);
  vec_case(LADLE_FLOAT32, LADLE_FLOAT32, LADLE_FLOAT16, LADLE_MATH_ADD, 24);
  vec_case(LADLE_FLOAT16, LADLE_FLOAT16, LADLE_FLOAT16, LADLE_MATH_MAX, 25);
  vec_case(LADLE_FLOAT16, LADLE_FLOAT32, LADLE_FLOAT32, LADLE_MATH_SUB, 26);
  vec_case(LADLE_UINT8, LADLE_FLOAT32, LADLE_UINT8, LADLE_MATH_MUL, 27); /* no vector instance: the flat loop */
}

/* Prints the kernel time (ms, median of 15 launches, events on the stream,
 * the parameter upload included; not a check) of x * 0.5 + 1, uint8 in and
 * float32 out, on a batch like op_bench's (256 packed random uint8 RGB
 * images of about 450 x 400), beside a device copy of the output's bytes;
 * then checks the output against the CPU program (threads of a batch this
 * large take several tiles). */
static void time_affine(void) {
  enum { N = 256 };
  ladle__rng_init(&rng, 7, 9, 0, 0);
  int64_t count[N], total = 0;
  for (int i = 0; i < N; i++) total += count[i] = (int64_t)rnd_int(350, 580) * rnd_int(300, 510) * 3;
  ladle__math_prog p = {.num_steps = 2, .num_leaves = 1};
  float c05 = 0.5f, c1 = 1.0f;
  p.step[0].e = (ladle__math_expr){.op = LADLE_MATH_MUL, .cls = LADLE_MATH_F32, .arity = 2,
                                   .in_dtype = {LADLE_UINT8, LADLE_FLOAT32}, .out_dtype = LADLE_FLOAT32,
                                   .is_constant = {0, 1}};
  memcpy(&p.step[0].e.constant[1], &c05, 4);
  p.step[1].e = (ladle__math_expr){.op = LADLE_MATH_ADD, .cls = LADLE_MATH_F32, .arity = 2,
                                   .in_dtype = {LADLE_FLOAT32, LADLE_FLOAT32}, .out_dtype = LADLE_FLOAT32,
                                   .is_constant = {0, 1}};
  memcpy(&p.step[1].e.constant[1], &c1, 4);
  p.step[1].ref[0] = -1;
  size_t bytes = ladle__gpu_math_param_bytes(N);
  void *din = test_device_alloc((size_t)total), *dout = test_device_alloc((size_t)total * 4);
  void *hp = test_pinned_alloc(bytes), *dp = test_device_alloc(bytes);
  uint8_t *hin = malloc((size_t)total);
  float *got = malloc((size_t)total * 4), *want = malloc((size_t)total * 4);
  if (hin) fill(hin, LADLE_UINT8, total, 0);
  if (hin) test_upload(din, hin, (size_t)total);
  static ladle__math_sample s[N];
  int64_t off = 0;
  for (int i = 0; i < N; i++) {
    memset(&s[i], 0, sizeof s[i]);
    s[i].ndim = 1, s[i].shape[0] = count[i], s[i].strides[0][0] = 1;
    s[i].in[0] = (uint8_t *)din + off, s[i].out = (float *)dout + off;
    off += count[i];
  }
  cudaEvent_t a, b;
  float t[2][15];
  CHECK(cudaEventCreate(&a) == cudaSuccess && cudaEventCreate(&b) == cudaSuccess);
  for (int k = 0; k < 2; k++)
    for (int r = -2; r < 15; r++) {
      CHECK(cudaEventRecord(a, NULL) == cudaSuccess);
      if (k == 0)
        CHECK_OK(ladle__gpu_math_prog(&p, s, N, hp, dp, bytes, NULL));
      else
        CHECK(cudaMemcpyAsync((char *)dout + total * 2, dout, (size_t)total * 2, cudaMemcpyDeviceToDevice, NULL) ==
              cudaSuccess);
      CHECK(cudaEventRecord(b, NULL) == cudaSuccess && cudaEventSynchronize(b) == cudaSuccess);
      if (r >= 0) CHECK(cudaEventElapsedTime(&t[k][r], a, b) == cudaSuccess);
    }
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < 15; i++)
      for (int j = i + 1; j < 15; j++)
        if (t[k][j] < t[k][i]) {
          float x = t[k][i];
          t[k][i] = t[k][j], t[k][j] = x;
        }
  printf("time x * 0.5 + 1 uint8 -> float32 (%.1f MB in, %.1f MB out): %.3f ms; device copy of %.1f MB: %.3f ms\n",
         total / 1e6, total * 4 / 1e6, t[0][7], total * 2 / 1e6, t[1][7]);
  cudaEventDestroy(a), cudaEventDestroy(b);
  if (hin && got && want) {
    test_fill(dout, 0xff, (size_t)total * 4);
    CHECK_OK(ladle__gpu_math_prog(&p, s, N, hp, dp, bytes, NULL));
    test_download(got, dout, (size_t)total * 4, NULL);
    int64_t at = 0;
    for (int i = 0; i < N; i++) {
      ladle__math_sample c = s[i];
      c.in[0] = hin + at, c.out = want + at;
      CHECK(ladle__math_run_prog(&p, &c) == 0);
      at += count[i];
    }
    CHECK(memcmp(got, want, (size_t)total * 4) == 0);
  }
  free(hin), free(got), free(want);
  cudaFree(din), cudaFree(dout), cudaFreeHost(hp), cudaFree(dp);
}

int main(void) {
  TEST_SKIP_WITHOUT_DEVICE();
  RUN(test_every_op_and_type);
  RUN(test_strided_copy);
  RUN(test_chains);
  RUN(test_flat_kernel);
  RUN(test_vec_kernel);
  RUN(time_affine);
  TEST_MAIN_END();
}

#endif

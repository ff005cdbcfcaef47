/* Element-wise programs (fused chains) on the CPU against the same chain run
 * one operation at a time, each result stored in its type and read back:
 * random programs of 1..8 steps over leaves of mixed types and broadcast
 * shapes must give the same bytes. Also: integer division by zero names its
 * step. */
#include <stdio.h>
#include <string.h>

#include "math_chain.h"
#include "test.h"

static void test_random_chains_match_step_by_step(void) {
  enum { N = CHAIN_H * CHAIN_W };
  static uint8_t fused[N * 4], ref[N * 4];
  ladle__rng r;
  ladle__rng_init(&r, 7, 1, 0, 0);
  for (int trial = 0; trial < 400; trial++) {
    chain_case c;
    chain_make(&r, 1 + trial % LADLE_MATH_MAX_STEPS, &c);
    memset(fused, 0xAB, sizeof fused);
    memset(ref, 0xCD, sizeof ref);
    ladle__math_sample s;
    chain_describe(&c, c.leaf, fused, &s);
    if (trial % 2) ladle__math_collapse(&s, c.p.num_leaves); /* the operator collapses; both must agree */
    CHECK(chain_reference(&c, ref) == 0);
    CHECK(ladle__math_run_prog(&c.p, &s) == 0);
    size_t bytes = (size_t)N * ladle_dtype_size((ladle_dtype)c.p.step[c.p.num_steps - 1].e.out_dtype);
    if (memcmp(fused, ref, bytes) != 0) {
      fprintf(stderr, "trial %d: %d steps, %d leaves differ\n", trial, c.p.num_steps, c.p.num_leaves);
      CHECK(0);
    }
    chain_free(&c);
  }
}

/* (x + 1) // y with y holding a 0: step 2 (index 1) fails, reported as 2. */
static void test_division_by_zero_names_step(void) {
  int32_t x[4] = {1, 2, 3, 4}, y[4] = {1, 0, 2, 2}, out[4];
  ladle__math_prog p = {.num_steps = 2, .num_leaves = 2};
  p.step[0].e = (ladle__math_expr){.op = LADLE_MATH_ADD, .cls = LADLE_MATH_I32, .arity = 2,
                                   .in_dtype = {LADLE_INT32, LADLE_INT32}, .out_dtype = LADLE_INT32,
                                   .is_constant = {0, 1}, .constant = {0, 1}};
  p.step[1].e = (ladle__math_expr){.op = LADLE_MATH_DIV, .cls = LADLE_MATH_I32, .arity = 2,
                                   .in_dtype = {LADLE_INT32, LADLE_INT32}, .out_dtype = LADLE_INT32};
  p.step[1].ref[0] = -1;
  p.step[1].ref[1] = 1;
  ladle__math_sample s = {.out = out, .in = {x, y}, .ndim = 1, .shape = {4}, .strides = {{1}, {1}}};
  CHECK(ladle__math_run_prog(&p, &s) == 2);
  y[1] = 5;
  CHECK(ladle__math_run_prog(&p, &s) == 0);
  CHECK(out[0] == 2 && out[1] == 0 && out[2] == 2 && out[3] == 2);
}

/* The CUDA kernel's flat-path conditions (math_kernel.h), checked on the
 * host: 1-D samples of stride 0/1 whose count fits 32 bits; linear float32
 * programs on leaves of one type. */
static void test_flat_conditions(void) {
  ladle__math_sample s = {.ndim = 1, .shape = {1000}, .strides = {{1}, {0}}};
  CHECK(ladle__math_is_flat(&s, 2) == 1);
  s.shape[0] = INT32_MAX;
  CHECK(ladle__math_is_flat(&s, 2) == 1);
  s.shape[0] = (int64_t)INT32_MAX + 1; /* 2^31: too many for a 32-bit index */
  CHECK(ladle__math_is_flat(&s, 2) == 0);
  s.shape[0] = 7;
  s.strides[1][0] = 2;
  CHECK(ladle__math_is_flat(&s, 2) == 0);
  CHECK(ladle__math_is_flat(&s, 1) == 1); /* leaf 1 not part of the program */
  s.strides[1][0] = -1;
  CHECK(ladle__math_is_flat(&s, 2) == 0);
  ladle__math_sample two = {.ndim = 2, .shape = {3, 4}, .strides = {{4, 1}}};
  CHECK(ladle__math_is_flat(&two, 1) == 0);
  ladle__math_collapse(&two, 1);
  CHECK(ladle__math_is_flat(&two, 1) == 1);
  ladle__math_sample scalar = {.ndim = 0};
  CHECK(ladle__math_is_flat(&scalar, 1) == 1);

  /* x * 0.5 + 1, uint8 x, float32 result */
  ladle__math_prog p = {.num_steps = 2, .num_leaves = 1};
  float half = 0.5f, one = 1.0f;
  p.step[0].e = (ladle__math_expr){.op = LADLE_MATH_MUL, .cls = LADLE_MATH_F32, .arity = 2,
                                   .in_dtype = {LADLE_UINT8, LADLE_FLOAT32}, .out_dtype = LADLE_FLOAT32,
                                   .is_constant = {0, 1}};
  memcpy(&p.step[0].e.constant[1], &half, 4);
  p.step[1].e = (ladle__math_expr){.op = LADLE_MATH_ADD, .cls = LADLE_MATH_F32, .arity = 2,
                                   .in_dtype = {LADLE_FLOAT32, LADLE_FLOAT32}, .out_dtype = LADLE_FLOAT32,
                                   .is_constant = {0, 1}};
  memcpy(&p.step[1].e.constant[1], &one, 4);
  p.step[1].ref[0] = -1;
  int leaf = -1;
  CHECK(ladle__math_prog_is_linear_f32(&p, &leaf) == 1 && leaf == LADLE_UINT8);
  ladle__math_prog q = p;
  q.step[0].e.out_dtype = LADLE_FLOAT16; /* a float16 intermediate: still linear */
  q.step[1].e.in_dtype[0] = LADLE_FLOAT16;
  CHECK(ladle__math_prog_is_linear_f32(&q, &leaf) == 1);
  q = p;
  q.step[0].e.out_dtype = LADLE_INT32; /* an integer intermediate: general kernel */
  q.step[1].e.in_dtype[0] = LADLE_INT32;
  CHECK(ladle__math_prog_is_linear_f32(&q, &leaf) == 0);
  q = p;
  q.step[0].e.cls = LADLE_MATH_I32;
  CHECK(ladle__math_prog_is_linear_f32(&q, &leaf) == 0);
  q = p; /* step 1 reads leaf 1 of another type */
  q.num_leaves = 2;
  q.step[1].e.is_constant[1] = 0;
  q.step[1].ref[1] = 1;
  CHECK(ladle__math_prog_is_linear_f32(&q, &leaf) == 0);
  q.step[1].e.in_dtype[1] = LADLE_UINT8;
  CHECK(ladle__math_prog_is_linear_f32(&q, &leaf) == 1 && leaf == LADLE_UINT8);
  q.num_leaves = 3; /* leaf 2 read nowhere: its type is unknown */
  CHECK(ladle__math_prog_is_linear_f32(&q, &leaf) == 0);
  q = p; /* step 2 reads step 0, not its previous step */
  q.num_steps = 3;
  q.step[2] = q.step[1];
  q.step[2].ref[0] = -1;
  CHECK(ladle__math_prog_is_linear_f32(&q, &leaf) == 0);
  q.step[2].ref[0] = -2;
  CHECK(ladle__math_prog_is_linear_f32(&q, &leaf) == 1);
  q = p;
  q.num_leaves = LADLE_MATH_FLAT_LEAVES + 1;
  CHECK(ladle__math_prog_is_linear_f32(&q, &leaf) == 0);
}

int main(void) {
  RUN(test_random_chains_match_step_by_step);
  RUN(test_division_by_zero_names_step);
  RUN(test_flat_conditions);
  TEST_MAIN_END();
}

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

int main(void) {
  RUN(test_random_chains_match_step_by_step);
  RUN(test_division_by_zero_names_step);
  TEST_MAIN_END();
}

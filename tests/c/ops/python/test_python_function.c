/* Callback operators through the public C API (ladle_pipeline_add_callback_op,
 * what fn.python_function is built on): outputs made by the callback, readers
 * of them initialised at the first iteration, output_layouts applied, bad
 * outputs and callback failures reported naming the operator, the callback's
 * context released exactly once (also when adding fails). */
#include <string.h>

#include "ladle/ladle.h"
#include "test.h"

typedef struct ctx {
  int calls, released;
  int mode; /* 0: out = in + 1 as int32; 1: fail; 2: wrong sample count; 3: float32 from the 2nd call on */
} ctx;

static ladle_status plus_one(void *c_, ladle_callback_call *call) {
  ctx *c = c_;
  c->calls++;
  if (c->mode == 1) {
    snprintf(call->error, call->error_size, "the function raised ValueError: no");
    return LADLE_ERROR_INVALID_ARGUMENT;
  }
  const ladle_batch *in = call->inputs[0];
  int n = c->mode == 2 ? call->batch_size - 1 : call->batch_size;
  int64_t shapes[16];
  int32_t data[16 * 4];
  float fdata[16 * 4];
  int len = 0;
  for (int i = 0; i < n; i++) {
    shapes[i] = ladle_batch_shape(in, i)[0];
    const uint8_t *x = ladle_batch_data(in, i);
    for (int j = 0; j < shapes[i]; j++, len++) {
      data[len] = x[j] + 1;
      fdata[len] = (float)(x[j] + 1);
    }
  }
  int as_float = c->mode == 3 && c->calls > 1;
  return ladle_batch_create_cpu(as_float ? LADLE_FLOAT32 : LADLE_INT32, n, 1, shapes, "",
                                as_float ? (void *)fdata : (void *)data, &call->outputs[0]);
}

static void release(void *c_) { ((ctx *)c_)->released++; }

static ladle_status count_calls(void *c_, ladle_callback_call *call) {
  ((ctx *)c_)->calls += call->num_inputs == 0 && call->num_outputs == 0;
  return LADLE_OK;
}

static ladle_batch *bytes_batch(int n, int first) {
  int64_t shapes[16];
  uint8_t data[16 * 3];
  for (int i = 0; i < n; i++) shapes[i] = 1 + i % 3;
  int len = 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < shapes[i]; j++) data[len++] = (uint8_t)(first + 10 * i + j);
  ladle_batch *b = NULL;
  CHECK_OK(ladle_batch_create_cpu(LADLE_UINT8, n, 1, shapes, "", data, &b));
  return b;
}

/* external_source -> python_function(cb) -> cast(float64); returns the pipeline, outputs fn and cast. */
static ladle_pipeline *make(ctx *c, const char *layout, int *outs) {
  ladle_pipeline_params params;
  ladle_pipeline_params_init(&params);
  params.batch_size = 4;
  params.num_threads = 2;
  ladle_pipeline *p = NULL;
  CHECK_OK(ladle_pipeline_create(&params, &p));
  ladle_arg src_args[3] = {{"dtype", {LADLE_ARG_DTYPE, 1, {.i = LADLE_UINT8}}, -1},
                           {"ndim", {LADLE_ARG_INT, 1, {.i = 1}}, -1},
                           {"layout", {LADLE_ARG_STRING, 1, {.s = ""}}, -1}};
  int src = -1;
  CHECK_OK(ladle_pipeline_add_op(p, "external_source", "cpu", NULL, 0, src_args, 3, "src", &src));
  const char *layouts[1] = {layout};
  ladle_arg pf_args[1] = {{"output_layouts", {LADLE_ARG_STRINGS, 1, {.strings = layouts}}, -1}};
  ladle_callback cb = {plus_one, release, c};
  CHECK_OK(ladle_pipeline_add_callback_op(p, "python_function", "cpu", &src, 1, pf_args, layout ? 1 : 0, "pf", &cb,
                                          &outs[0]));
  ladle_arg to_f64 = {"dtype", {LADLE_ARG_DTYPE, 1, {.i = LADLE_FLOAT64}}, -1};
  CHECK_OK(ladle_pipeline_add_op(p, "cast", "cpu", &outs[0], 1, &to_f64, 1, NULL, &outs[1]));
  CHECK_OK(ladle_pipeline_set_outputs(p, outs, 2));
  CHECK_OK(ladle_pipeline_build(p)); /* the cast's input type is not known yet: it waits for the first run */
  return p;
}

static void feed(ladle_pipeline *p, int n, int first) {
  ladle_batch *b = bytes_batch(n, first);
  CHECK_OK(ladle_pipeline_feed(p, "src", b));
  ladle_batch_release(b);
}

static void test_outputs_and_their_readers(void) {
  ctx c = {0};
  int outs[2];
  ladle_pipeline *p = make(&c, "X", outs);
  for (int it = 0; it < 3; it++) {
    feed(p, it == 1 ? 2 : 4, 7 * it);
    ladle_batch *o[2] = {NULL, NULL};
    CHECK_OK(ladle_pipeline_run(p, o));
    int n = it == 1 ? 2 : 4;
    CHECK(o[0] && ladle_batch_dtype(o[0]) == LADLE_INT32 && ladle_batch_num_samples(o[0]) == n);
    CHECK(o[0] && strcmp(ladle_batch_layout(o[0]), "X") == 0);
    CHECK(o[1] && ladle_batch_dtype(o[1]) == LADLE_FLOAT64 && strcmp(ladle_batch_layout(o[1]), "X") == 0);
    for (int i = 0; o[0] && o[1] && i < n; i++) {
      CHECK(ladle_batch_shape(o[0], i)[0] == 1 + i % 3);
      CHECK(((const int32_t *)ladle_batch_data(o[0], i))[0] == 7 * it + 10 * i + 1);
      CHECK(((const double *)ladle_batch_data(o[1], i))[0] == 7 * it + 10 * i + 1);
    }
    ladle_batch_release(o[0]);
    ladle_batch_release(o[1]);
  }
  CHECK(c.calls == 3 && c.released == 0);
  ladle_pipeline_destroy(p);
  CHECK(c.released == 1);
}

static void expect_failure(int mode, const char *layout, const char *message, int fail_at) {
  ctx c = {.mode = mode};
  int outs[2];
  ladle_pipeline *p = make(&c, layout, outs);
  for (int it = 0; it <= fail_at; it++) {
    feed(p, 4, 0);
    ladle_batch *o[2] = {NULL, NULL};
    ladle_status st = ladle_pipeline_run(p, o);
    if (it < fail_at) {
      CHECK(st == LADLE_OK);
      ladle_batch_release(o[0]);
      ladle_batch_release(o[1]);
      continue;
    }
    CHECK(st == LADLE_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(ladle_last_error(), "python_function") && strstr(ladle_last_error(), message));
    if (!strstr(ladle_last_error(), message)) fprintf(stderr, "  got: %s\n", ladle_last_error());
  }
  ladle_pipeline_destroy(p);
  CHECK(c.released == 1);
}

static void test_callback_failures(void) {
  expect_failure(1, NULL, "ValueError: no", 0);
  expect_failure(2, NULL, "output 0 has 3 samples; the batch has 4", 0);
  expect_failure(3, NULL, "output 0 is float32 of rank 1; earlier iterations gave int32 of rank 1", 1);
  expect_failure(0, "XY", "\"XY\" does not fit output 0 of rank 1", 0);
}

static void test_adding_errors_release_the_context(void) {
  ladle_pipeline_params params;
  ladle_pipeline_params_init(&params);
  params.batch_size = 2;
  ladle_pipeline *p = NULL;
  CHECK_OK(ladle_pipeline_create(&params, &p));
  ctx c = {0};
  int first = -1;
  ladle_arg bad = {"num_outputs", {LADLE_ARG_INT, 1, {.i = 99}}, -1};
  ladle_callback cb = {plus_one, release, &c};
  CHECK(ladle_pipeline_add_callback_op(p, "python_function", "cpu", NULL, 0, &bad, 1, NULL, &cb, &first) ==
        LADLE_ERROR_INVALID_ARGUMENT);
  CHECK(c.released == 1);
  CHECK(ladle_pipeline_add_op(p, "python_function", "cpu", NULL, 0, NULL, 0, NULL, &first) ==
        LADLE_ERROR_INVALID_ARGUMENT && strstr(ladle_last_error(), "needs a function"));
  CHECK(ladle_pipeline_add_callback_op(p, "cast", "cpu", NULL, 0, NULL, 0, NULL, &cb, &first) ==
        LADLE_ERROR_INVALID_ARGUMENT);
  CHECK(c.released == 2);
  /* num_outputs = 0: the operator runs for its side effects, with no output value */
  ladle_arg none = {"num_outputs", {LADLE_ARG_INT, 1, {.i = 0}}, -1};
  ctx side = {0};
  ladle_callback cb2 = {count_calls, release, &side};
  int coin = -1;
  CHECK_OK(ladle_pipeline_add_op(p, "random.coin_flip", "cpu", NULL, 0, NULL, 0, NULL, &coin));
  CHECK_OK(ladle_pipeline_add_callback_op(p, "python_function", "cpu", NULL, 0, &none, 1, NULL, &cb2, &first));
  CHECK_OK(ladle_pipeline_set_outputs(p, &coin, 1));
  ladle_batch *o = NULL;
  CHECK_OK(ladle_pipeline_run(p, &o));
  ladle_batch_release(o);
  CHECK(side.calls >= 1);
  ladle_pipeline_destroy(p);
  CHECK(side.released == 1);
}

int main(void) {
  RUN(test_outputs_and_their_readers);
  RUN(test_callback_failures);
  RUN(test_adding_errors_release_the_context);
  TEST_MAIN_END();
}

/* The tensor family in C: the strided copy against a per-element reference
 * on random geometries, and views: reshape's output shares its input's
 * memory, keeps it alive after the input is released, and a view that would
 * change a sample's byte size is refused. */
#include <string.h>

#include "core/batch.h"
#include "core/rng.h"
#include "ladle/ladle.h"
#include "ops/tensor/tensor_args.h"
#include "ops/tensor/tensor_kernels.h"
#include "tensor_random.h"
#include "test.h"

/* The definition, element by element. */
static void reference_copy(const ladle__strided_desc *d) {
  int64_t total = 1;
  for (int k = 0; k < d->ndim; k++) total *= d->shape[k];
  for (int64_t e = 0; e < total; e++) {
    int64_t rest = e, out_off = 0, in_off = 0, fill_index = 0;
    int inside = 1;
    for (int k = d->ndim - 1; k >= 0; k--) {
      int64_t i = rest % d->shape[k], c = d->in_start[k] + i;
      rest /= d->shape[k];
      inside &= c >= 0 && c < d->in_shape[k];
      out_off += i * d->out_stride[k];
      in_off += c * d->in_stride[k];
      if (k == d->fill_dim) fill_index = i;
    }
    const uint8_t *src = inside ? (const uint8_t *)d->in + in_off * d->elem_size
                                : d->fill + (fill_index < d->num_fill ? fill_index : 0) * d->elem_size;
    memcpy((uint8_t *)d->out + out_off * d->elem_size, src, (size_t)d->elem_size);
  }
}

/* Random slices/pads/transposes: anchors inside and outside, permuted input
 * strides, per-channel fills, every element size. */
static void test_strided_copy_random(void) {
  ladle__rng r;
  ladle__rng_init(&r, 7, 1, 0, 0);
  static uint8_t in[4096 * 8], out[4096 * 8], want[4096 * 8];
  for (int t = 0; t < 400; t++) {
    int64_t in_total = 0, out_total = 0;
    ladle__strided_desc d = random_desc(&r, &in_total, &out_total);
    for (int64_t i = 0; i < in_total * d.elem_size; i++) in[i] = (uint8_t)ladle__rng_u32(&r);
    memset(out, 0xAB, sizeof out);
    memset(want, 0xAB, sizeof want);
    d.in = in;
    d.out = out;
    ladle__strided_copy(&d);
    d.out = want;
    reference_copy(&d);
    CHECK(memcmp(out, want, (size_t)(out_total * d.elem_size) + 64) == 0);
  }
}

/* ladle__strided_coalesce keeps the copy: random geometries with some
 * dimensions copied whole (what it merges), copied after coalescing, equal
 * the reference on the original desc; an HWC crop keeping its channels
 * becomes rows of W * C elements, and per-channel fills stop it there. */
static void test_strided_coalesce(void) {
  ladle__rng r;
  ladle__rng_init(&r, 8, 1, 0, 0);
  static uint8_t in[4096 * 8], out[4096 * 8], want[4096 * 8];
  int merged = 0;
  for (int t = 0; t < 600; t++) {
    int64_t in_total = 0, out_total = 1;
    ladle__strided_desc d = random_desc(&r, &in_total, &out_total);
    for (int k = 0; k < d.ndim; k++)
      if (draw(&r, 0, 2)) d.shape[k] = d.in_shape[k], d.in_start[k] = 0; /* copied whole */
    out_total = 1;
    for (int k = 0; k < d.ndim; k++) out_total *= d.shape[k];
    ladle__dense_strides(d.out_stride, d.shape, d.ndim);
    for (int64_t i = 0; i < in_total * d.elem_size; i++) in[i] = (uint8_t)ladle__rng_u32(&r);
    memset(out, 0xAB, sizeof out);
    memset(want, 0xAB, sizeof want);
    d.in = in;
    d.out = want;
    reference_copy(&d);
    ladle__strided_desc c = d;
    c.out = out;
    ladle__strided_coalesce(&c);
    CHECK(c.ndim >= (d.ndim > 0) && c.ndim <= d.ndim);
    merged += c.ndim < d.ndim;
    ladle__strided_copy(&c);
    CHECK(memcmp(out, want, (size_t)(out_total * d.elem_size) + 64) == 0);
  }
  CHECK(merged > 100);
  /* A 5 x 7 crop at (2, 3) of a 10 x 20 x 3 image. */
  ladle__strided_desc d = {.ndim = 3, .elem_size = 1, .fill_dim = -1, .num_fill = 1,
                           .shape = {5, 7, 3}, .in_shape = {10, 20, 3}, .in_start = {2, 3, 0}};
  ladle__dense_strides(d.out_stride, d.shape, 3);
  ladle__dense_strides(d.in_stride, d.in_shape, 3);
  ladle__strided_desc c = d;
  ladle__strided_coalesce(&c);
  CHECK(c.ndim == 2 && c.shape[1] == 21 && c.in_shape[1] == 60 && c.in_start[1] == 9 && c.in_stride[0] == 60);
  d.fill_dim = 2, d.num_fill = 3; /* a fill value per channel */
  c = d;
  ladle__strided_coalesce(&c);
  CHECK(c.ndim == 3);
}

#ifdef LADLE_HAVE_CUDA
/* The GPU copy's launch plan (merged dims, 2..16-byte units, 32-bit
 * indexing) run on the host against the CPU copy: random_desc's geometries
 * and random_fast_desc's, every element size. Asserts that the fast paths
 * were taken at all. */
static void test_gpu_strided_plan_emulated(void) {
  enum { LIMIT = 4096 * 8 };
  ladle__rng r;
  ladle__rng_init(&r, 7, 5, 0, 0);
  static uint8_t in[LIMIT], out[LIMIT + 64], want[LIMIT + 64];
  int units[17] = {0}, merged = 0, narrow = 0;
  for (int t = 0; t < 4000; t++) {
    int64_t in_off = 0, out_off = 0, in_span = 0, out_span = 0;
    ladle__strided_desc d;
    if (t % 4 == 0) {
      d = random_desc(&r, &in_span, &out_span);
    } else {
      d = random_fast_desc(&r, LIMIT, &in_off, &out_off, &in_span, &out_span);
    }
    for (int64_t i = 0; i < in_span * d.elem_size; i++) in[i] = (uint8_t)ladle__rng_u32(&r);
    memset(out, 0xAB, sizeof out);
    memset(want, 0xAB, sizeof want);
    d.in = in + in_off * d.elem_size;
    d.out = want + out_off * d.elem_size;
    ladle__strided_copy(&d);
    d.out = out + out_off * d.elem_size;
    ladle__gpu_strided_emulate(&d);
    CHECK(memcmp(out, want, sizeof out) == 0);
    int unit = 0, nd = 0, w = ladle__gpu_strided_plan_info(&d, &unit, &nd);
    if (w < 0) continue;
    CHECK(unit >= d.elem_size && unit <= 16);
    units[unit]++;
    merged += nd < d.ndim;
    narrow += w;
  }
  CHECK(units[16] > 100 && units[8] > 50 && units[4] > 50 && units[2] > 50 && units[1] > 50);
  CHECK(merged > 500 && narrow > 1000);
}

/* The 32-bit threshold of the plan (fake device pointers: nothing is read). */
static void test_gpu_strided_plan_limits(void) {
  ladle__strided_desc d;
  int64_t big = ((int64_t)1 << 31) + 16, n = 0;
  int unit = 0, nd = 0;
  ladle__strided_dense(&d, (void *)(uintptr_t)64, (const void *)(uintptr_t)128, 1, 1, &big, &big, NULL);
  CHECK(ladle__gpu_strided_plan_info(&d, &unit, &nd) == 1 && unit == 16 && nd == 1); /* 2^27 + 1 units */
  d.in = (const void *)(uintptr_t)129;                                                /* unaligned: bytes */
  CHECK(ladle__gpu_strided_plan_info(&d, &unit, &nd) == 0 && unit == 1);
  n = ((int64_t)1 << 31) - 1;
  ladle__strided_dense(&d, (void *)(uintptr_t)64, (const void *)(uintptr_t)129, 1, 1, &n, &n, NULL);
  CHECK(ladle__gpu_strided_plan_info(&d, &unit, &nd) == 1 && unit == 1);
  n++;
  ladle__strided_dense(&d, (void *)(uintptr_t)64, (const void *)(uintptr_t)129, 1, 1, &n, &n, NULL);
  CHECK(ladle__gpu_strided_plan_info(&d, &unit, &nd) == 0);
  /* [R, 999] of [R, 1000] at column 1: just inside 2^31 (R * 1000 < 2^31); one more row is not. */
  int64_t rows = ((int64_t)1 << 31) / 1000, in_shape[2] = {rows, 1000}, shape[2] = {rows, 999}, start[2] = {0, 1};
  ladle__strided_dense(&d, (void *)(uintptr_t)64, (const void *)(uintptr_t)128, 2, 1, shape, in_shape, start);
  CHECK(ladle__gpu_strided_plan_info(&d, &unit, &nd) == 1 && unit == 1 && nd == 2);
  in_shape[0] = shape[0] = rows + 1;
  ladle__strided_dense(&d, (void *)(uintptr_t)64, (const void *)(uintptr_t)128, 2, 1, shape, in_shape, start);
  CHECK(ladle__gpu_strided_plan_info(&d, &unit, &nd) == 0 && unit == 1 && nd == 2);
  /* A dense 100 bytes: 96 in 16-byte units (and a tail of 4). */
  n = 100;
  ladle__strided_dense(&d, (void *)(uintptr_t)64, (const void *)(uintptr_t)128, 1, 1, &n, &n, NULL);
  CHECK(ladle__gpu_strided_plan_info(&d, &unit, &nd) == 1 && unit == 16 && nd == 1);
  /* Nothing to copy. */
  shape[1] = 0;
  ladle__strided_dense(&d, (void *)(uintptr_t)64, (const void *)(uintptr_t)128, 2, 1, shape, in_shape, start);
  CHECK(ladle__gpu_strided_plan_info(&d, &unit, &nd) == -1);
}

/* Which kernel the launch plan gives the operators' common geometries
 * (HWC images of 1-byte elements): transposes HWC <-> CHW go to the tiled
 * transpose, a channel cat, a stack and a pad to one row job per sample. */
static void test_gpu_plan_kinds(void) {
  uint8_t *o = (uint8_t *)(uintptr_t)4096, *i = (uint8_t *)(uintptr_t)65536 + 3; /* fake pointers: nothing is read */
  int64_t hwc[3] = {7, 9, 3}, chw[3] = {3, 7, 9}, strides[3];
  int rows = 0, tr = 0;
  ladle__strided_desc d[4];
  CHECK(ladle__gpu_shift16_check() == 0);
  /* HWC -> CHW and back */
  ladle__strided_dense(&d[0], o, i, 3, 1, chw, chw, NULL);
  ladle__dense_strides(strides, hwc, 3);
  d[0].in_stride[0] = strides[2], d[0].in_stride[1] = strides[0], d[0].in_stride[2] = strides[1];
  CHECK(ladle__gpu_strided_plan_kind(d, 1, &rows, &tr) == 0 && rows == 0 && tr == 1);
  ladle__strided_dense(&d[0], o, i, 3, 1, hwc, hwc, NULL);
  ladle__dense_strides(strides, chw, 3);
  d[0].in_stride[0] = strides[1], d[0].in_stride[1] = strides[2], d[0].in_stride[2] = strides[0];
  CHECK(ladle__gpu_strided_plan_kind(d, 1, &rows, &tr) == 0 && rows == 0 && tr == 1);
  /* cat of two along C: [7, 9, 6] */
  for (int k = 0; k < 2; k++) {
    ladle__strided_dense(&d[k], o + 3 * k, i + 1000 * k, 3, 1, hwc, hwc, NULL);
    d[k].out_stride[0] = 54, d[k].out_stride[1] = 6;
  }
  CHECK(ladle__gpu_strided_plan_kind(d, 2, &rows, &tr) == 0 && rows == 1 && tr == 0);
  /* stack of two along a new axis 0, and along a new axis 3 */
  for (int k = 0; k < 2; k++) ladle__strided_dense(&d[k], o + 189 * k, i + 1000 * k, 3, 1, hwc, hwc, NULL);
  CHECK(ladle__gpu_strided_plan_kind(d, 2, &rows, &tr) == 0 && rows == 1 && tr == 0);
  for (int k = 0; k < 2; k++) {
    ladle__strided_dense(&d[k], o + k, i + 1000 * k, 3, 1, hwc, hwc, NULL);
    d[k].out_stride[0] = 54, d[k].out_stride[1] = 6, d[k].out_stride[2] = 2;
  }
  CHECK(ladle__gpu_strided_plan_kind(d, 2, &rows, &tr) == 0 && rows == 1 && tr == 0);
  /* pad H and W; two samples stay two jobs */
  int64_t padded[3] = {10, 12, 3};
  ladle__strided_dense(&d[0], o, i, 3, 1, padded, hwc, NULL);
  d[0].num_fill = 1;
  d[1] = d[0];
  d[1].out = o + 360;
  CHECK(ladle__gpu_strided_plan_kind(d, 2, &rows, &tr) == 0 && rows == 2 && tr == 0);
  /* a fill value per channel: the strided kernel */
  d[0].fill_dim = 2, d[0].num_fill = 3;
  CHECK(ladle__gpu_strided_plan_kind(d, 1, &rows, &tr) == 1 && rows == 0 && tr == 0);
}

/* The whole launch plan run on the host against the CPU copy: batches of
 * cat and stack samples (joined rows), rank-3 transposes of every
 * permutation, random_fast_desc's geometries and random_desc's (some
 * empty), mixed in one plan. */
static void test_gpu_plan_batches_emulated(void) {
  enum { LIMIT = 4096 * 8, MAXD = 24 };
  ladle__rng r;
  ladle__rng_init(&r, 9, 1, 0, 0);
  static uint8_t in[MAXD * LIMIT], out[MAXD * LIMIT], want[MAXD * LIMIT];
  int joined = 0, transposed = 0, generic = 0;
  for (int t = 0; t < 1500; t++) {
    ladle__strided_desc d[MAXD];
    int n = 0;
    int64_t slot = 0;
    while (n < MAXD - 4) { /* each group in its own LIMIT bytes of in and out */
      int kind = (int)draw(&r, 0, 4);
      int64_t in_offs[4], out_offs[4], in_span = 0, out_span = 0;
      int k = 1;
      uint8_t *ib = in + slot * LIMIT, *ob = out + slot * LIMIT;
      if (kind <= 1) {
        k = random_join(&r, kind, LIMIT, &d[n], in_offs, out_offs, &in_span, &out_span);
      } else if (kind == 2) {
        d[n] = random_transpose3(&r, (int)draw(&r, 0, 5), LIMIT, &in_offs[0], &out_offs[0], &in_span, &out_span);
      } else if (kind == 3) {
        d[n] = random_fast_desc(&r, LIMIT, &in_offs[0], &out_offs[0], &in_span, &out_span);
      } else { /* some with no elements */
        d[n] = random_desc(&r, &in_span, &out_span);
        in_offs[0] = out_offs[0] = 0;
      }
      for (int j = 0; j < k; j++) {
        d[n + j].in = ib + in_offs[j] * d[n + j].elem_size;
        d[n + j].out = ob + out_offs[j] * d[n + j].elem_size;
      }
      n += k, slot++;
      if (draw(&r, 0, 3) == 0) break;
    }
    for (size_t b = 0; b < (size_t)slot * LIMIT; b++) in[b] = (uint8_t)ladle__rng_u32(&r);
    memset(out, 0xAB, (size_t)slot * LIMIT);
    memset(want, 0xAB, (size_t)slot * LIMIT);
    CHECK(ladle__gpu_strided_emulate_batch(d, n) == 0);
    for (int j = 0; j < n; j++) {
      ladle__strided_desc c = d[j];
      c.out = want + ((uint8_t *)d[j].out - out);
      ladle__strided_copy(&c);
    }
    CHECK(memcmp(out, want, (size_t)slot * LIMIT) == 0);
    int rows = 0, tr = 0, g = ladle__gpu_strided_plan_kind(d, n, &rows, &tr);
    generic += g, transposed += tr;
    joined += n - tr - g > rows; /* fewer row jobs than the copies that went to them */
  }
  CHECK(joined > 1000 && transposed > 500 && generic > 100);
}
#endif

/* one_hot and lookup_table's kernels on a small case, by hand. */
static void test_encode_kernels(void) {
  int32_t classes[6] = {0, 2, -1, 1, 5, 2};
  float got[2 * 3 * 3];
  float on = 1, off = 0;
  ladle__one_hot_desc d = {got, classes, 2, 3}; /* [2, 3] input, new axis in the middle */
  ladle__one_hot(&d, LADLE_INT32, 3, 4, &on, &off);
  /* o=0 (0, 2, -1): c0 [1,0,0] c1 [0,0,0] c2 [0,1,0]; o=1 (1, 5, 2): c0 [0,0,0] c1 [1,0,0] c2 [0,0,1] */
  float exact[18] = {1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  CHECK(memcmp(got, exact, sizeof exact) == 0);
  uint8_t keys_in[5] = {0, 1, 2, 3, 200};
  int32_t table[4] = {7, -1, 9, -1}, fallback = -1, out[5];
  ladle__lookup_desc l = {out, keys_in, 5};
  ladle__lookup(&l, LADLE_UINT8, 4, table, 4, &fallback);
  CHECK(out[0] == 7 && out[1] == -1 && out[2] == 9 && out[3] == -1 && out[4] == -1);
}

/* A view shares the parent's memory, outlives the caller's reference to the
 * parent, and cannot change a sample's size in bytes. */
static void test_batch_view(void) {
  int64_t shapes[2 * 2] = {2, 3, 4, 1};
  int32_t data[10];
  for (int i = 0; i < 10; i++) data[i] = i;
  ladle_batch *parent = NULL, *view = NULL, *bad = NULL;
  CHECK_OK(ladle_batch_create_cpu(LADLE_INT32, 2, 2, shapes, "HW", data, &parent));
  int64_t flat[2] = {6, 4};
  CHECK_OK(ladle__batch_view(parent->meta_pool, parent, LADLE_INT32, 1, flat, "", &view));
  CHECK(ladle_batch_data(view, 1) == ladle_batch_data(parent, 1));
  int64_t bytes[2] = {24, 16};
  ladle_batch *as_bytes = NULL;
  CHECK_OK(ladle__batch_view(parent->meta_pool, parent, LADLE_UINT8, 1, bytes, "", &as_bytes));
  int64_t wrong[2] = {5, 5};
  CHECK(ladle__batch_view(parent->meta_pool, parent, LADLE_INT32, 1, wrong, "", &bad) == LADLE_ERROR_INVALID_ARGUMENT);
  ladle_batch_release(parent); /* the views keep it */
  CHECK(((const int32_t *)ladle_batch_data(view, 1))[3] == 9);
  CHECK(ladle_batch_shape(view, 0)[0] == 6 && ladle_batch_is_dense(view) == 0);
  ladle_batch_release(view);
  CHECK(((const uint8_t *)ladle_batch_data(as_bytes, 0))[4] == 1);
  ladle_batch_release(as_bytes);
}

/* reshape in a pipeline: its output is the fed batch's memory. */
static void test_reshape_is_zero_copy(void) {
  ladle_pipeline_params params;
  ladle_pipeline_params_init(&params);
  params.batch_size = 2;
  params.num_threads = 2;
  ladle_pipeline *p = NULL;
  CHECK_OK(ladle_pipeline_create(&params, &p));
  ladle_arg args[3] = {{"dtype", {LADLE_ARG_DTYPE, 1, {.i = LADLE_INT32}}, -1},
                       {"ndim", {LADLE_ARG_INT, 1, {.i = 2}}, -1},
                       {"layout", {LADLE_ARG_STRING, 1, {.s = "HW"}}, -1}};
  int src = -1, rs = -1, sq = -1;
  CHECK_OK(ladle_pipeline_add_op(p, "external_source", "cpu", NULL, 0, args, 3, "src", &src));
  int64_t shape[3] = {-1, 2, 1};
  ladle_arg to = {"shape", {LADLE_ARG_INTS, 3, {.ints = shape}}, -1};
  CHECK_OK(ladle_pipeline_add_op(p, "reshape", "cpu", &src, 1, &to, 1, NULL, &rs));
  int64_t axes[1] = {2};
  ladle_arg ax = {"axes", {LADLE_ARG_INTS, 1, {.ints = axes}}, -1};
  CHECK_OK(ladle_pipeline_add_op(p, "squeeze", "cpu", &rs, 1, &ax, 1, NULL, &sq));
  int outs[2] = {src, sq};
  CHECK_OK(ladle_pipeline_set_outputs(p, outs, 2));
  int64_t shapes[4] = {2, 2, 3, 2};
  int32_t data[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  ladle_batch *fed = NULL, *got[2] = {NULL, NULL};
  CHECK_OK(ladle_batch_create_cpu(LADLE_INT32, 2, 2, shapes, "HW", data, &fed));
  CHECK_OK(ladle_pipeline_feed(p, "src", fed));
  ladle_batch_release(fed);
  CHECK_OK(ladle_pipeline_run(p, got));
  if (got[0] && got[1]) {
    CHECK(ladle_batch_data(got[0], 1) == ladle_batch_data(got[1], 1));
    CHECK(ladle_batch_ndim(got[1]) == 2 && ladle_batch_shape(got[1], 1)[0] == 3 && ladle_batch_shape(got[1], 1)[1] == 2);
    CHECK(strcmp(ladle_batch_layout(got[1]), "") == 0);
  }
  ladle_pipeline_destroy(p);
  ladle_batch_release(got[0]);
  if (got[1]) CHECK(((const int32_t *)ladle_batch_data(got[1], 1))[5] == 9); /* alive after both */
  ladle_batch_release(got[1]);
}

int main(void) {
  RUN(test_strided_copy_random);
  RUN(test_strided_coalesce);
#ifdef LADLE_HAVE_CUDA
  RUN(test_gpu_strided_plan_emulated);
  RUN(test_gpu_strided_plan_limits);
  RUN(test_gpu_plan_kinds);
  RUN(test_gpu_plan_batches_emulated);
#endif
  RUN(test_encode_kernels);
  RUN(test_batch_view);
  RUN(test_reshape_is_zero_copy);
  TEST_MAIN_END();
}

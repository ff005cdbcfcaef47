/* The CPU side of the element-wise kernel (math_kernel.h). */
#include "ops/math/math_kernel.h"

#include <string.h>

#include "ops/math/math_scalar.h"

int64_t ladle__math_count(const ladle__math_sample *s) {
  int64_t n = 1;
  for (int d = 0; d < s->ndim; d++) n *= s->shape[d];
  return n;
}

void ladle__math_collapse(ladle__math_sample *s, int arity) { /* arity: the leaves */
  int nd = 0;
  for (int d = 0; d < s->ndim; d++) {
    if (s->shape[d] == 1) continue; /* its index is always 0 */
    int merge = nd > 0;
    for (int k = 0; merge && k < arity; k++)
      merge = s->strides[k][nd - 1] == s->strides[k][d] * s->shape[d];
    if (merge) {
      s->shape[nd - 1] *= s->shape[d];
      for (int k = 0; k < arity; k++) s->strides[k][nd - 1] = s->strides[k][d];
    } else {
      s->shape[nd] = s->shape[d];
      for (int k = 0; k < arity; k++) s->strides[k][nd] = s->strides[k][d];
      nd++;
    }
  }
  if (s->ndim > 0 && ladle__math_count(s) == 0) {
    s->shape[0] = 0;
    nd = 1;
  }
  s->ndim = nd;
}

int ladle__math_prog_is_linear_f32(const ladle__math_prog *p, int *leaf_dtype) {
  int dtype[LADLE_MATH_FLAT_LEAVES];
  if (p->num_steps < 1 || p->num_steps > LADLE_MATH_MAX_STEPS || p->num_leaves < 1 ||
      p->num_leaves > LADLE_MATH_FLAT_LEAVES)
    return 0;
  for (int j = 0; j < p->num_leaves; j++) dtype[j] = -1;
  for (int t = 0; t < p->num_steps; t++) {
    const ladle__math_expr *e = &p->step[t].e;
    if (e->cls != LADLE_MATH_F32 || e->arity < 1 || e->arity > LADLE_MATH_MAX_OPERANDS) return 0;
    if (t < p->num_steps - 1 && e->out_dtype != LADLE_FLOAT32 && e->out_dtype != LADLE_FLOAT16) return 0;
    for (int k = 0; k < e->arity; k++) {
      const int ref = p->step[t].ref[k];
      if (e->is_constant[k]) continue;
      if (ref >= 0) {
        if (ref >= p->num_leaves || (dtype[ref] >= 0 && dtype[ref] != e->in_dtype[k])) return 0;
        dtype[ref] = e->in_dtype[k];
      } else if (-1 - ref != t - 1 || e->in_dtype[k] != p->step[t - 1].e.out_dtype) {
        return 0;
      }
    }
  }
  for (int j = 0; j < p->num_leaves; j++)
    if (dtype[j] != dtype[0] || dtype[j] < 0) return 0;
  *leaf_dtype = dtype[0];
  return 1;
}

/* The CPU kernel works on blocks of up to BLOCK elements of one output row:
 * each operand is loaded into a block of the computing class, the operation
 * runs over the blocks, the result block is stored. The switches on type
 * and operation sit outside the element loops (each case calls the
 * per-element functions of math_scalar.h with a constant type or operation,
 * which the compiler specializes and vectorizes), so the formulas stay
 * those the GPU runs. */
enum { BLOCK = 256 };

/* Element types with a specialized loop; others take the generic one. */
#define EACH_TYPE(X) X(LADLE_UINT8) X(LADLE_INT32) X(LADLE_INT64) X(LADLE_FLOAT16) X(LADLE_FLOAT32)

#define LOAD_BLOCK(fname, T, load)                                                                            \
  static void fname(T *dst, const void *p, int dtype, int64_t base, int64_t step, int64_t n) {                \
    switch (dtype) {                                                                                         \
      EACH_TYPE(LOAD_CASE_##T)                                                                               \
      default:                                                                                               \
        for (int64_t j = 0; j < n; j++) dst[j] = (T)load(p, base + j * step, dtype);                         \
    }                                                                                                        \
  }
/* Contiguous and broadcast operands get loops of their own (they vectorize). */
#define LOAD_CASE_BODY(t, T, load)                                                  \
  case t:                                                                           \
    if (step == 1) {                                                                \
      for (int64_t j = 0; j < n; j++) dst[j] = (T)load(p, base + j, t);             \
    } else if (step == 0) {                                                         \
      const T v = (T)load(p, base, t);                                              \
      for (int64_t j = 0; j < n; j++) dst[j] = v;                                   \
    } else {                                                                        \
      for (int64_t j = 0; j < n; j++) dst[j] = (T)load(p, base + j * step, t);      \
    }                                                                               \
    break;
#define LOAD_CASE_int64_t(t) LOAD_CASE_BODY(t, int64_t, ladle__math_load_int)
#define LOAD_CASE_float(t) LOAD_CASE_BODY(t, float, ladle__math_load_f32)
LOAD_BLOCK(load_int, int64_t, ladle__math_load_int)
LOAD_BLOCK(load_f32, float, ladle__math_load_f32)

#define STORE_BLOCK(fname, T, store)                                                                          \
  static void fname(void *p, int dtype, int64_t base, const T *src, int64_t n) {                             \
    switch (dtype) {                                                                                         \
      EACH_TYPE(STORE_CASE_##T)                                                                              \
      default:                                                                                               \
        for (int64_t j = 0; j < n; j++) store(p, base + j, dtype, src[j]);                                   \
    }                                                                                                        \
  }
#define STORE_CASE_BODY(t, store) \
  case t:                         \
    for (int64_t j = 0; j < n; j++) store(p, base + j, t, src[j]); \
    break;
#define STORE_CASE_int64_t(t) STORE_CASE_BODY(t, ladle__math_store_int)
#define STORE_CASE_float(t) STORE_CASE_BODY(t, ladle__math_store_f32)
STORE_BLOCK(store_int, int64_t, ladle__math_store_int)
STORE_BLOCK(store_f32, float, ladle__math_store_f32)

/* r[j] = fn(op, a[j], b[j], c[j]) with the operation a constant in each case. */
#define APPLY_BLOCK(fname, T, CT, fn)                                                       \
  static void fname(int op, T *r, const T *a, const T *b, const T *c, int64_t n) {            \
    switch (op) {                                                                            \
      LADLE_MATH_OPS(APPLY_CASE_##fn)                                                        \
      default: break;                                                                        \
    }                                                                                        \
  }
#define APPLY_CASE(e, fn, CT)                                                          \
  case LADLE_MATH_##e:                                                                 \
    for (int64_t j = 0; j < n; j++) r[j] = fn(LADLE_MATH_##e, (CT)a[j], (CT)b[j], (CT)c[j]); \
    break;
#define APPLY_CASE_ladle__math_i32(e, name, arity, rule) APPLY_CASE(e, ladle__math_i32, int32_t)
#define APPLY_CASE_ladle__math_i64(e, name, arity, rule) APPLY_CASE(e, ladle__math_i64, int64_t)
#define APPLY_CASE_ladle__math_f32(e, name, arity, rule) APPLY_CASE(e, ladle__math_f32, float)
APPLY_BLOCK(apply_i32, int64_t, int32_t, ladle__math_i32)
APPLY_BLOCK(apply_i64, int64_t, int64_t, ladle__math_i64)
APPLY_BLOCK(apply_f32, float, float, ladle__math_f32)

void ladle__math_prog_of(const ladle__math_expr *e, ladle__math_prog *p) {
  memset(p, 0, sizeof *p);
  p->num_steps = 1;
  p->num_leaves = e->arity;
  p->step[0].e = *e;
  for (int k = 0; k < LADLE_MATH_MAX_OPERANDS; k++) p->step[0].ref[k] = k;
}

/* One run of n <= BLOCK output elements from o; leaf k starts at base[k] and
 * advances by step[k]. A step's result reaches later steps as if stored in
 * its output type and loaded back: where that round trip changes nothing
 * (float32 results of float operations, int32 and int64 results of integer
 * ones) the block of the computing class is read as it is; otherwise it is
 * stored in the output type into `reg`, and loaded from there like a tensor.
 * Returns t + 1 on an integer division by zero in step t. */
static int run_block(const ladle__math_prog *p, const void *const *in, const int64_t *base, const int64_t *step,
                     void *out, int64_t o, int64_t n) {
  union {
    float f[BLOCK];
    int64_t i[BLOCK];
  } reg[LADLE_MATH_MAX_STEPS - 1];
  int reg_dtype[LADLE_MATH_MAX_STEPS]; /* how reg[t] holds step t's result: FLOAT32 in .f, INT64 in .i, else bytes */
  for (int t = 0; t < p->num_steps; t++) {
    const ladle__math_expr *e = &p->step[t].e;
    const int last = t == p->num_steps - 1, f32 = e->cls == LADLE_MATH_F32;
    const int raw = !last && (f32 ? e->out_dtype == LADLE_FLOAT32
                                  : e->out_dtype == (e->cls == LADLE_MATH_I64 ? LADLE_INT64 : LADLE_INT32));
    float vf[LADLE_MATH_MAX_OPERANDS][BLOCK], rf[BLOCK];
    int64_t vi[LADLE_MATH_MAX_OPERANDS][BLOCK], ri[BLOCK];
    const float *af[LADLE_MATH_MAX_OPERANDS];
    const int64_t *ai[LADLE_MATH_MAX_OPERANDS];
    for (int k = 0; k < e->arity; k++) {
      const int ref = p->step[t].ref[k];
      const void *src;
      int64_t from = 0, by = 0;
      int dtype = e->in_dtype[k];
      af[k] = vf[k];
      ai[k] = vi[k];
      if (e->is_constant[k]) {
        src = &e->constant[k];
      } else if (ref >= 0) {
        src = in[ref], from = base[ref], by = step[ref];
      } else {
        const int j = -1 - ref;
        if (f32 && reg_dtype[j] == LADLE_FLOAT32) {
          af[k] = reg[j].f;
          continue;
        }
        if (!f32 && reg_dtype[j] == LADLE_INT64) {
          ai[k] = reg[j].i;
          continue;
        }
        src = &reg[j], by = 1, dtype = reg_dtype[j];
      }
      if (f32)
        load_f32(vf[k], src, dtype, from, by, n);
      else
        load_int(vi[k], src, dtype, from, by, n);
    }
    /* Operands past the arity are not used: they alias operand 0. */
    const int b = e->arity > 1, c = e->arity > 2 ? 2 : 0;
    if (f32) {
      float *r = raw ? reg[t].f : rf;
      apply_f32(e->op, r, af[0], af[b], af[c], n);
      if (raw)
        reg_dtype[t] = LADLE_FLOAT32;
      else if (last)
        store_f32(out, e->out_dtype, o, r, n);
      else
        store_f32(&reg[t], reg_dtype[t] = e->out_dtype, 0, r, n);
      continue;
    }
    if (e->op == LADLE_MATH_DIV || e->op == LADLE_MATH_MOD) {
      int zero = 0;
      for (int64_t j = 0; j < n; j++) zero |= ai[1][j] == 0;
      if (zero) return t + 1;
    }
    int64_t *r = raw ? reg[t].i : ri;
    (e->cls == LADLE_MATH_I64 ? apply_i64 : apply_i32)(e->op, r, ai[0], ai[b], ai[c], n);
    if (raw)
      reg_dtype[t] = LADLE_INT64;
    else if (last)
      store_int(out, e->out_dtype, o, r, n);
    else
      store_int(&reg[t], reg_dtype[t] = e->out_dtype, 0, r, n);
  }
  return 0;
}

int ladle__math_run(const ladle__math_expr *e, const ladle__math_sample *s) {
  ladle__math_prog p;
  ladle__math_prog_of(e, &p);
  return ladle__math_run_prog(&p, s) != 0;
}

int ladle__math_run_prog(const ladle__math_prog *p, const ladle__math_sample *s) {
  const int leaves = p->num_leaves, nd = s->ndim;
  const int64_t count = ladle__math_count(s);
  /* The innermost dimension is walked in blocks; an odometer walks the others. */
  const int64_t inner = nd > 0 ? s->shape[nd - 1] : 1;
  int64_t step[LADLE_MATH_MAX_LEAVES] = {0}, idx[LADLE_MAX_NDIM] = {0};
  int64_t base[LADLE_MATH_MAX_LEAVES] = {0};
  for (int k = 0; k < leaves; k++) step[k] = nd > 0 ? s->strides[k][nd - 1] : 0;
  for (int64_t o = 0; o < count; o += inner) {
    for (int64_t j = 0; j < inner; j += BLOCK) {
      int64_t at[LADLE_MATH_MAX_LEAVES];
      for (int k = 0; k < leaves; k++) at[k] = base[k] + j * step[k];
      int failed = run_block(p, s->in, at, step, s->out, o + j, inner - j < BLOCK ? inner - j : BLOCK);
      if (failed) return failed;
    }
    for (int d = nd - 2; d >= 0; d--) { /* next row */
      for (int k = 0; k < leaves; k++) base[k] += s->strides[k][d];
      if (++idx[d] < s->shape[d]) break;
      for (int k = 0; k < leaves; k++) base[k] -= s->strides[k][d] * s->shape[d];
      idx[d] = 0;
    }
  }
  return 0;
}

/* Random element-wise programs (ladle__math_prog) for the chain tests: 1..8
 * steps on up to 8 leaves of mixed types and broadcast shapes, constants, and
 * the reference that runs them step by step, each step's result stored to a
 * buffer of its type and read back by the later steps (the unfused chain). */
#ifndef LADLE_TESTS_MATH_CHAIN_H
#define LADLE_TESTS_MATH_CHAIN_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "ops/kernels/half.h"
#include "ops/math/math_kernel.h"
#include "ops/math/math_scalar.h"

enum { CHAIN_H = 5, CHAIN_W = 301 }; /* rows longer than the CPU kernel's block of 256 */

typedef struct chain_case {
  ladle__math_prog p;
  int leaf_dtype[LADLE_MATH_MAX_LEAVES];
  int leaf_shape[LADLE_MATH_MAX_LEAVES]; /* 0: [H, W], 1: [1, W], 2: [H, 1], 3: [W], 4: [] */
  void *leaf[LADLE_MATH_MAX_LEAVES];     /* host data */
} chain_case;

static inline int chain_rnd(ladle__rng *r, int lo, int hi) { return lo + (int)ladle__rng_below(r, (uint64_t)(hi - lo + 1)); }

static inline int64_t chain_leaf_elems(int shape) {
  static const int64_t elems[] = {CHAIN_H * CHAIN_W, CHAIN_W, CHAIN_H, CHAIN_W, 1};
  return elems[shape];
}

/* Sample descriptor of output [H, W] for the case's leaves at `data`. */
static inline void chain_describe(const chain_case *c, void *const *data, void *out, ladle__math_sample *s) {
  memset(s, 0, sizeof *s);
  s->ndim = 2;
  s->shape[0] = CHAIN_H;
  s->shape[1] = CHAIN_W;
  s->out = out;
  for (int k = 0; k < c->p.num_leaves; k++) {
    static const int64_t strides[][2] = {{CHAIN_W, 1}, {0, 1}, {1, 0}, {0, 1}, {0, 0}};
    s->in[k] = data[k];
    s->strides[k][0] = strides[c->leaf_shape[k]][0];
    s->strides[k][1] = strides[c->leaf_shape[k]][1];
  }
}

static inline int chain_is_float(int t) { return t == LADLE_FLOAT16 || t == LADLE_FLOAT32; }

/* math.arithmetic's promotion for the types used here (uint8, int32, float16,
 * float32, bool). */
static inline int chain_promote(int a, int b) {
  static const int order[] = {LADLE_BOOL, LADLE_UINT8, LADLE_INT32, LADLE_FLOAT16, LADLE_FLOAT32};
  int ia = 0, ib = 0;
  for (int i = 0; i < 5; i++) {
    if (order[i] == a) ia = i;
    if (order[i] == b) ib = i;
  }
  return order[ia > ib ? ia : ib];
}

/* Operations that stay defined on any operands (no integer division by a
 * register that may hold 0; div and mod get a nonzero constant divisor). */
static const int chain_ops[] = {LADLE_MATH_ADD,   LADLE_MATH_SUB,   LADLE_MATH_MUL,  LADLE_MATH_MIN,
                                LADLE_MATH_MAX,   LADLE_MATH_CLAMP, LADLE_MATH_LT,   LADLE_MATH_EQ,
                                LADLE_MATH_MINUS, LADLE_MATH_ABS,   LADLE_MATH_FDIV, LADLE_MATH_SQRT,
                                LADLE_MATH_FLOOR, LADLE_MATH_DIV,   LADLE_MATH_MOD,  LADLE_MATH_BITXOR};

#define CHAIN_ARITY(e, name, arity, rule) arity,
static const int chain_arity[] = {LADLE_MATH_OPS(CHAIN_ARITY)};
#undef CHAIN_ARITY

static inline void chain_fill(ladle__rng *r, void *p, int t, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    float f = (float)ladle__rng_uniform(r) * 16.0f - 8.0f;
    switch (t) {
      case LADLE_BOOL: ((uint8_t *)p)[i] = (uint8_t)chain_rnd(r, 0, 1); break;
      case LADLE_UINT8: ((uint8_t *)p)[i] = (uint8_t)chain_rnd(r, 0, 255); break;
      case LADLE_INT32: ((int32_t *)p)[i] = chain_rnd(r, -300, 300); break;
      case LADLE_FLOAT16: ((uint16_t *)p)[i] = ladle__f32_to_f16(f); break;
      default: ((float *)p)[i] = f; break;
    }
  }
}

/* A random program of `steps` steps whose last step reads every earlier
 * result at least indirectly (each step after the first reads the one before
 * it); leaves with host data (free with chain_free). */
static inline void chain_make(ladle__rng *r, int steps, chain_case *c) {
  static const int types[] = {LADLE_UINT8, LADLE_INT32, LADLE_FLOAT16, LADLE_FLOAT32, LADLE_BOOL};
  memset(c, 0, sizeof *c);
  c->p.num_steps = steps;
  c->p.num_leaves = chain_rnd(r, 1, LADLE_MATH_MAX_LEAVES);
  for (int k = 0; k < c->p.num_leaves; k++) {
    c->leaf_dtype[k] = types[chain_rnd(r, 0, 4)];
    c->leaf_shape[k] = k == 0 ? 0 : chain_rnd(r, 0, 4);
    int64_t n = chain_leaf_elems(c->leaf_shape[k]);
    c->leaf[k] = malloc((size_t)n * 4);
    chain_fill(r, c->leaf[k], c->leaf_dtype[k], n);
  }
  for (int t = 0; t < steps; t++) {
    ladle__math_step *st = &c->p.step[t];
    ladle__math_expr *e = &st->e;
    for (;;) {
      memset(st, 0, sizeof *st);
      e->op = chain_ops[chain_rnd(r, 0, (int)(sizeof chain_ops / sizeof chain_ops[0]) - 1)];
      e->arity = chain_arity[e->op];
      int type = -1;
      for (int k = 0; k < e->arity; k++) {
        int kind = k == 0 && t > 0 ? 1 : chain_rnd(r, 0, 2); /* 0 leaf, 1 register, 2 constant */
        if (kind == 1 && t == 0) kind = 0;
        if (kind == 2 && k == 0) kind = 0;
        if ((e->op == LADLE_MATH_DIV || e->op == LADLE_MATH_MOD) && k == 1) kind = 2;
        if (kind == 0) {
          st->ref[k] = chain_rnd(r, 0, c->p.num_leaves - 1);
          e->in_dtype[k] = c->leaf_dtype[st->ref[k]];
        } else if (kind == 1) {
          int from = k == 0 ? t - 1 : chain_rnd(r, 0, t - 1);
          st->ref[k] = -1 - from;
          e->in_dtype[k] = c->p.step[from].e.out_dtype;
        } else {
          int ct = types[chain_rnd(r, 0, 3)];
          e->is_constant[k] = 1;
          e->in_dtype[k] = ct;
          float f = (float)chain_rnd(r, 1, 9) * (chain_is_float(ct) ? 0.75f : 1.0f);
          if (ct == LADLE_FLOAT32) memcpy(&e->constant[k], &f, sizeof f);
          if (ct == LADLE_FLOAT16) {
            uint16_t h = ladle__f32_to_f16(f);
            memcpy(&e->constant[k], &h, sizeof h);
          }
          if (!chain_is_float(ct)) ladle__math_store_int(&e->constant[k], 0, ct, (int64_t)f);
        }
        type = k == 0 ? e->in_dtype[k] : chain_promote(type, e->in_dtype[k]);
      }
      if (e->op == LADLE_MATH_BITXOR && chain_is_float(type)) continue;
      if ((e->op == LADLE_MATH_DIV || e->op == LADLE_MATH_MOD) && chain_is_float(type)) continue;
      int out = type;
      if (e->op == LADLE_MATH_FDIV || e->op == LADLE_MATH_SQRT || e->op == LADLE_MATH_FLOOR)
        out = chain_is_float(type) ? type : LADLE_FLOAT32;
      e->cls = ladle__math_class_of(out);
      if (e->op == LADLE_MATH_LT || e->op == LADLE_MATH_EQ) out = LADLE_BOOL;
      e->out_dtype = out;
      break;
    }
  }
}

static inline void chain_free(chain_case *c) {
  for (int k = 0; k < c->p.num_leaves; k++) free(c->leaf[k]);
}

/* The unfused chain on the CPU: step t's result in full [H, W] of its type in
 * results[t] (8 bytes an element are enough), read back by later steps. */
static inline int chain_reference(const chain_case *c, void *out) {
  enum { N = CHAIN_H * CHAIN_W };
  static int64_t results[LADLE_MATH_MAX_STEPS][N];
  ladle__math_sample all;
  chain_describe(c, c->leaf, NULL, &all);
  for (int t = 0; t < c->p.num_steps; t++) {
    const ladle__math_step *st = &c->p.step[t];
    ladle__math_sample s = {.ndim = 2, .shape = {CHAIN_H, CHAIN_W}};
    s.out = t == c->p.num_steps - 1 ? out : (void *)results[t];
    for (int k = 0; k < st->e.arity; k++) {
      if (st->e.is_constant[k]) continue;
      int ref = st->ref[k];
      s.in[k] = ref >= 0 ? all.in[ref] : results[-1 - ref];
      s.strides[k][0] = ref >= 0 ? all.strides[ref][0] : CHAIN_W;
      s.strides[k][1] = ref >= 0 ? all.strides[ref][1] : 1;
    }
    if (ladle__math_run(&st->e, &s)) return 1;
  }
  return 0;
}

#endif

/* The element-wise kernel behind math.arithmetic and _tensor_subscript: an
 * operation (math_scalar.h) on up to three strided operands, written to a
 * packed output. A stride of 0 broadcasts an operand along a dimension
 * (a scalar has all strides 0); a subscript is the copy ("plus") of one
 * operand read with an offset and arbitrary (also negative) strides.
 *
 * A chain of operations (x * 0.5 + 1) runs as one program (ladle__math_prog):
 * steps of one operation each, whose operands are leaves (tensors read
 * through strides), constants, or earlier steps' results. A step's result is
 * converted to the step's output type before a later step reads it, exactly
 * as if it had been stored to memory and loaded back: a fused chain gives
 * the bytes of the chain run operation by operation, with one load per leaf
 * element and one store per output element. math.arithmetic's nodes merge
 * into such programs at build (pipeline/plan.c, LADLE_OP_ELEMENTWISE). */
#ifndef LADLE_OPS_MATH_MATH_KERNEL_H
#define LADLE_OPS_MATH_MATH_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include "ladle/ladle.h"
#include "ops/kernels/half.h" /* LADLE_HD */

#ifdef __cplusplus
extern "C" {
#endif

#define LADLE_MATH_MAX_OPERANDS 3
#define LADLE_MATH_MAX_STEPS 8  /* operations in one program */
#define LADLE_MATH_MAX_LEAVES 8 /* tensor operands of one program */

/* One operation of a whole batch. */
typedef struct ladle__math_expr {
  int op;                                  /* ladle__math_op */
  int cls;                                 /* ladle__math_class the operation is computed in */
  int arity;                               /* operands read (1..3) */
  int in_dtype[LADLE_MATH_MAX_OPERANDS];
  int out_dtype;
  /* Operand k is the constant whose bits (one element of in_dtype[k]) lie in
   * constant[k] where is_constant[k]; its in pointer and strides are then
   * not read. */
  int is_constant[LADLE_MATH_MAX_OPERANDS];
  int64_t constant[LADLE_MATH_MAX_OPERANDS];
} ladle__math_expr;

/* A step of a program: an operation whose operand k (not constant) is leaf
 * ref[k] when ref[k] >= 0, else the result of step -1 - ref[k] (an earlier
 * one; e.in_dtype[k] is then that step's out_dtype). */
typedef struct ladle__math_step {
  ladle__math_expr e;
  int ref[LADLE_MATH_MAX_OPERANDS];
} ladle__math_step;

/* Operations in sequence; the last step's result is the output. */
typedef struct ladle__math_prog {
  int num_steps;  /* 1..LADLE_MATH_MAX_STEPS */
  int num_leaves; /* 0..LADLE_MATH_MAX_LEAVES */
  ladle__math_step step[LADLE_MATH_MAX_STEPS];
} ladle__math_prog;

/* The program of one operation: operand k not constant is leaf k. */
void ladle__math_prog_of(const ladle__math_expr *e, ladle__math_prog *p);

/* One sample: output element (i_0, ..., i_{ndim-1}) of the packed output of
 * `shape` reads operand (leaf) k at in[k] + sum_d i_d * strides[k][d]
 * (elements). */
typedef struct ladle__math_sample {
  void *out;
  const void *in[LADLE_MATH_MAX_LEAVES];
  int ndim; /* 0..LADLE_MAX_NDIM */
  int64_t shape[LADLE_MAX_NDIM];
  int64_t strides[LADLE_MATH_MAX_LEAVES][LADLE_MAX_NDIM];
} ladle__math_sample;

/* Elements of the sample's output. */
int64_t ladle__math_count(const ladle__math_sample *s);

/* Merges dimensions that every operand walks the same way (contiguous after
 * each other, or broadcast), drops dimensions of extent 1: equal shapes
 * become one dimension, a scalar against a tensor too. Same result, fewer
 * index computations. */
void ladle__math_collapse(ladle__math_sample *s, int num_leaves);

/* The CUDA kernel's flat path: 1 when the (collapsed) sample is one
 * dimension (or none) that every leaf reads with stride 1 or 0 (broadcast),
 * and its count fits a 32-bit index (at most INT32_MAX elements): then
 * element i reads leaf k at i or at 0, no per-dimension division. */
static inline LADLE_HD int ladle__math_is_flat(const ladle__math_sample *s, int num_leaves) {
  if (s->ndim > 1) return 0;
  if (s->ndim == 0) return 1;
  if (s->shape[0] < 0 || s->shape[0] > INT32_MAX) return 0;
  for (int k = 0; k < num_leaves; k++)
    if (s->strides[k][0] != 0 && s->strides[k][0] != 1) return 0;
  return 1;
}

/* 1 when the CUDA kernel's specialised flat loop can run the program, whose
 * leaves then all have the type *leaf_dtype: every step computes in float32
 * and reads constants, leaves (at most LADLE_MATH_FLAT_LEAVES, each read
 * somewhere, all of one type) or the previous step's result; every step but the last stores float32 or
 * float16. Else 0 (the general kernel runs it). Such a program of one leaf,
 * with a float32 or float16 output, runs the vector loop instead. */
#define LADLE_MATH_FLAT_LEAVES 4
int ladle__math_prog_is_linear_f32(const ladle__math_prog *p, int *leaf_dtype);

/* The CPU kernel. Integer division or modulo by zero: returns 1 (the
 * output is then incomplete), else 0. */
int ladle__math_run(const ladle__math_expr *e, const ladle__math_sample *s);
/* The CPU kernel of a program: one loop over the output, the steps run on
 * blocks of elements held in cache. Integer division or modulo by zero in
 * step t: returns t + 1 (the output is then incomplete), else 0. */
int ladle__math_run_prog(const ladle__math_prog *p, const ladle__math_sample *s);

#ifdef LADLE_HAVE_CUDA
/* The CUDA kernel on n samples (gpu_kernels.h's launcher rules: descriptors
 * in host memory with device pointers, parameters packed into host_params and
 * copied to dev_params on `stream`, both of ladle__gpu_math_param_bytes(n)
 * bytes). Results equal ladle__math_run's bit for bit, except (a) integer
 * division or modulo by zero, which gives 0 here, and (b) the transcendental
 * float functions (exp, log*, pow, trig, hyperbolic, cbrt, atan2), where
 * CUDA's functions differ from libm's by a few ulps (CUDA documents at most 4
 * ulps for these; libm at most 1-2). */
size_t ladle__gpu_math_param_bytes(int n);
ladle_status ladle__gpu_math(const ladle__math_expr *e, const ladle__math_sample *d, int n, void *host_params,
                             void *dev_params, size_t param_bytes, void *stream);
/* The same for a program: one kernel, each thread running every step on its
 * element in registers; results as ladle__math_run_prog's, with the same
 * exceptions (a) and (b). */
ladle_status ladle__gpu_math_prog(const ladle__math_prog *p, const ladle__math_sample *d, int n, void *host_params,
                                  void *dev_params, size_t param_bytes, void *stream);
#endif

#ifdef __cplusplus
}
#endif

#endif

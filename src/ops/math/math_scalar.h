/* The element-wise arithmetic of math.arithmetic, one element at a time, in
 * functions that the CPU kernel (math_kernel.c) and the CUDA kernel
 * (math_kernel.cu) both call: the same formula on both sides, so integer
 * results agree bit for bit, and so do the correctly rounded float
 * operations (+ - * / sqrt fmod floor ceil min max); libm and CUDA differ
 * only in the last bits of the transcendental functions.
 *
 * Values are computed in one of three classes (int32, int64, float32): an
 * operand is loaded from its element type into the class, the operation is
 * applied there and the result is stored into the output's element type.
 * uint8 operations run in int32 and are stored truncated, which gives C's
 * wrap-around results for uint8. A new element type needs a case in each
 * load/store switch (and, for float64 or uint64, a class of its own). */
#ifndef LADLE_OPS_MATH_MATH_SCALAR_H
#define LADLE_OPS_MATH_MATH_SCALAR_H

#include <math.h>
#include <stdint.h>

#include "ladle/ladle.h"
#include "ops/kernels/half.h"

/* Every operation: enum suffix, name (DALI's, the `op` argument's choice),
 * number of operands, and its type rule:
 *   SAME  the operands' promoted type (any type);
 *   INT   the promoted type, integers only;
 *   FLOAT the promoted type where it is a float, else float32;
 *   CMP   computed in the promoted type, the result is boolean. */
#define LADLE_MATH_OPS(X)                                                                                          \
  X(ADD, "add", 2, SAME) X(SUB, "sub", 2, SAME) X(MUL, "mul", 2, SAME) X(DIV, "div", 2, SAME)                   \
  X(FDIV, "fdiv", 2, FLOAT) X(MOD, "mod", 2, SAME) X(POW, "pow", 2, SAME) X(FPOW, "fpow", 2, FLOAT)             \
  X(MIN, "min", 2, SAME) X(MAX, "max", 2, SAME) X(ATAN2, "atan2", 2, FLOAT) X(CLAMP, "clamp", 3, SAME)          \
  X(EQ, "eq", 2, CMP) X(NEQ, "neq", 2, CMP) X(LT, "lt", 2, CMP) X(LEQ, "leq", 2, CMP) X(GT, "gt", 2, CMP)       \
  X(GEQ, "geq", 2, CMP) X(BITAND, "bitand", 2, INT) X(BITOR, "bitor", 2, INT) X(BITXOR, "bitxor", 2, INT)       \
  X(LSHIFT, "lshift", 2, INT) X(RSHIFT, "rshift", 2, INT) X(BITNOT, "bitnot", 1, INT) X(PLUS, "plus", 1, SAME) \
  X(MINUS, "minus", 1, SAME) X(ABS, "abs", 1, SAME) X(FABS, "fabs", 1, FLOAT) X(FLOOR, "floor", 1, FLOAT)      \
  X(CEIL, "ceil", 1, FLOAT) X(SQRT, "sqrt", 1, FLOAT) X(RSQRT, "rsqrt", 1, FLOAT) X(CBRT, "cbrt", 1, FLOAT)     \
  X(EXP, "exp", 1, FLOAT) X(LOG, "log", 1, FLOAT) X(LOG2, "log2", 1, FLOAT) X(LOG10, "log10", 1, FLOAT)        \
  X(SIN, "sin", 1, FLOAT) X(COS, "cos", 1, FLOAT) X(TAN, "tan", 1, FLOAT) X(ASIN, "asin", 1, FLOAT)            \
  X(ACOS, "acos", 1, FLOAT) X(ATAN, "atan", 1, FLOAT) X(SINH, "sinh", 1, FLOAT) X(COSH, "cosh", 1, FLOAT)      \
  X(TANH, "tanh", 1, FLOAT) X(ASINH, "asinh", 1, FLOAT) X(ACOSH, "acosh", 1, FLOAT) X(ATANH, "atanh", 1, FLOAT)

#define LADLE__MATH_ENUM(e, name, arity, rule) LADLE_MATH_##e,
typedef enum ladle__math_op { LADLE_MATH_OPS(LADLE__MATH_ENUM) LADLE_MATH_OP_COUNT } ladle__math_op;
#undef LADLE__MATH_ENUM

/* The per-element functions are inlined into every loop that calls them
 * with a constant operation or type, which then shrinks to that one case. */
#if defined(__CUDACC__)
#define LADLE__MATH_FN static __host__ __device__ __forceinline__
#elif defined(__GNUC__)
#define LADLE__MATH_FN static inline __attribute__((always_inline))
#else
#define LADLE__MATH_FN static inline
#endif

typedef enum ladle__math_class { LADLE_MATH_I32 = 0, LADLE_MATH_I64 = 1, LADLE_MATH_F32 = 2 } ladle__math_class;

/* The class an operation on element type t is computed in; -1: none. */
static inline int ladle__math_class_of(int t) {
  switch (t) {
    case LADLE_BOOL:
    case LADLE_UINT8:
    case LADLE_INT32: return LADLE_MATH_I32;
    case LADLE_INT64: return LADLE_MATH_I64;
    case LADLE_FLOAT16:
    case LADLE_FLOAT32: return LADLE_MATH_F32;
    default: return -1;
  }
}

/* --- loads and stores ------------------------------------------------------ */

LADLE__MATH_FN int64_t ladle__math_load_int(const void *p, int64_t i, int dtype) {
  switch (dtype) {
    case LADLE_BOOL:
    case LADLE_UINT8: return ((const uint8_t *)p)[i];
    case LADLE_INT32: return ((const int32_t *)p)[i];
    case LADLE_INT64: return ((const int64_t *)p)[i];
    default: return 0; /* floats never load into an integer class */
  }
}

LADLE__MATH_FN float ladle__math_load_f32(const void *p, int64_t i, int dtype) {
  switch (dtype) {
    case LADLE_FLOAT32: return ((const float *)p)[i];
    case LADLE_FLOAT16: return ladle__f16_to_f32(((const uint16_t *)p)[i]);
    default: return (float)ladle__math_load_int(p, i, dtype); /* round to nearest even */
  }
}

/* Integer results: truncated to the element type (C's wrap-around). */
LADLE__MATH_FN void ladle__math_store_int(void *p, int64_t i, int dtype, int64_t v) {
  switch (dtype) {
    case LADLE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case LADLE_UINT8: ((uint8_t *)p)[i] = (uint8_t)(uint64_t)v; break;
    case LADLE_INT32: ((int32_t *)p)[i] = (int32_t)(uint32_t)(uint64_t)v; break;
    case LADLE_INT64: ((int64_t *)p)[i] = v; break;
    case LADLE_FLOAT32: ((float *)p)[i] = (float)v; break;
    case LADLE_FLOAT16: ((uint16_t *)p)[i] = ladle__f32_to_f16((float)v); break;
    default: break;
  }
}

/* Float results (comparisons store 0 or 1 into bool this way). */
LADLE__MATH_FN void ladle__math_store_f32(void *p, int64_t i, int dtype, float v) {
  switch (dtype) {
    case LADLE_FLOAT32: ((float *)p)[i] = v; break;
    case LADLE_FLOAT16: ((uint16_t *)p)[i] = ladle__f32_to_f16(v); break;
    default: ladle__math_store_int(p, i, dtype, (int64_t)v); break;
  }
}

/* --- the operations -------------------------------------------------------- */

/* Integer operations on T (int32_t or int64_t; UT its unsigned twin): add,
 * sub, mul, neg and pow wrap around; x / 0 and x % 0 give 0 here (the CPU
 * operator reports them as errors before calling this); MIN / -1 wraps; a
 * shift by a negative count or by the width or more gives 0 (>> of a
 * negative value: -1). Comparisons give 0 or 1. */
#define LADLE__MATH_INT_FN(name, T, UT, BITS)                                                       \
  LADLE__MATH_FN T name(int op, T a, T b, T c) {                                                                                                  \
    switch (op) {                                                                                     \
      case LADLE_MATH_ADD: return (T)((UT)a + (UT)b);                                                 \
      case LADLE_MATH_SUB: return (T)((UT)a - (UT)b);                                                 \
      case LADLE_MATH_MUL: return (T)((UT)a * (UT)b);                                                 \
      case LADLE_MATH_DIV: return b == 0 ? 0 : b == -1 ? (T)((UT)0 - (UT)a) : a / b;                  \
      case LADLE_MATH_MOD: return b == 0 || b == -1 ? 0 : a % b;                                      \
      case LADLE_MATH_POW: {                                                                          \
        if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;                             \
        UT r = 1, x = (UT)a;                                                                          \
        for (T e = b; e > 0; e >>= 1) {                                                               \
          if (e & 1) r *= x;                                                                          \
          x *= x;                                                                                     \
        }                                                                                             \
        return (T)r;                                                                                  \
      }                                                                                               \
      case LADLE_MATH_MIN: return b < a ? b : a;                                                      \
      case LADLE_MATH_MAX: return a < b ? b : a;                                                      \
      case LADLE_MATH_CLAMP: return a < b ? b : c < a ? c : a;                                        \
      case LADLE_MATH_EQ: return a == b;                                                              \
      case LADLE_MATH_NEQ: return a != b;                                                             \
      case LADLE_MATH_LT: return a < b;                                                               \
      case LADLE_MATH_LEQ: return a <= b;                                                             \
      case LADLE_MATH_GT: return a > b;                                                               \
      case LADLE_MATH_GEQ: return a >= b;                                                             \
      case LADLE_MATH_BITAND: return a & b;                                                           \
      case LADLE_MATH_BITOR: return a | b;                                                            \
      case LADLE_MATH_BITXOR: return a ^ b;                                                           \
      case LADLE_MATH_BITNOT: return ~a;                                                              \
      case LADLE_MATH_LSHIFT: return b < 0 || b >= BITS ? 0 : (T)((UT)a << b);                        \
      case LADLE_MATH_RSHIFT: return b < 0 || b >= BITS ? (a < 0 ? -1 : 0) : a >> b;                  \
      case LADLE_MATH_MINUS: return (T)((UT)0 - (UT)a);                                               \
      case LADLE_MATH_ABS: return a < 0 ? (T)((UT)0 - (UT)a) : a;                                     \
      default: return a; /* plus */                                                                   \
    }                                                                                                 \
  }

LADLE__MATH_INT_FN(ladle__math_i32, int32_t, uint32_t, 32)
LADLE__MATH_INT_FN(ladle__math_i64, int64_t, uint64_t, 64)
#undef LADLE__MATH_INT_FN

/* + - * of floats, each rounded by itself on the GPU too: nvcc may contract
 * a product and a sum into one fused multiply-add, which the CPU does not do
 * (a fused chain keeps x * 0.5 + 1 two roundings, as the unfused one). */
#if defined(__CUDA_ARCH__)
#define LADLE__MATH_FADD(a, b) __fadd_rn((a), (b))
#define LADLE__MATH_FSUB(a, b) __fsub_rn((a), (b))
#define LADLE__MATH_FMUL(a, b) __fmul_rn((a), (b))
#else
#define LADLE__MATH_FADD(a, b) ((a) + (b))
#define LADLE__MATH_FSUB(a, b) ((a) - (b))
#define LADLE__MATH_FMUL(a, b) ((a) * (b))
#endif

/* Float operations: C's float functions (libm on the CPU, CUDA's on the
 * GPU). `div` of floats is true division, as in DALI; `mod` is fmod; min and
 * max are std::min/std::max (a NaN in the first operand propagates); rsqrt is
 * 1 / sqrt (both correctly rounded, not CUDA's approximate rsqrtf). */
LADLE__MATH_FN float ladle__math_f32(int op, float a, float b, float c) {
  switch (op) {
    case LADLE_MATH_ADD: return LADLE__MATH_FADD(a, b);
    case LADLE_MATH_SUB: return LADLE__MATH_FSUB(a, b);
    case LADLE_MATH_MUL: return LADLE__MATH_FMUL(a, b);
    case LADLE_MATH_DIV:
    case LADLE_MATH_FDIV: return a / b;
    case LADLE_MATH_MOD: return fmodf(a, b);
    case LADLE_MATH_POW:
    case LADLE_MATH_FPOW: return powf(a, b);
    case LADLE_MATH_MIN: return b < a ? b : a;
    case LADLE_MATH_MAX: return a < b ? b : a;
    case LADLE_MATH_ATAN2: return atan2f(a, b);
    case LADLE_MATH_CLAMP: return a < b ? b : c < a ? c : a;
    case LADLE_MATH_EQ: return a == b ? 1.0f : 0.0f;
    case LADLE_MATH_NEQ: return a != b ? 1.0f : 0.0f;
    case LADLE_MATH_LT: return a < b ? 1.0f : 0.0f;
    case LADLE_MATH_LEQ: return a <= b ? 1.0f : 0.0f;
    case LADLE_MATH_GT: return a > b ? 1.0f : 0.0f;
    case LADLE_MATH_GEQ: return a >= b ? 1.0f : 0.0f;
    case LADLE_MATH_MINUS: return -a;
    case LADLE_MATH_ABS:
    case LADLE_MATH_FABS: return fabsf(a);
    case LADLE_MATH_FLOOR: return floorf(a);
    case LADLE_MATH_CEIL: return ceilf(a);
    case LADLE_MATH_SQRT: return sqrtf(a);
    case LADLE_MATH_RSQRT: return 1.0f / sqrtf(a);
    case LADLE_MATH_CBRT: return cbrtf(a);
    case LADLE_MATH_EXP: return expf(a);
    case LADLE_MATH_LOG: return logf(a);
    case LADLE_MATH_LOG2: return log2f(a);
    case LADLE_MATH_LOG10: return log10f(a);
    case LADLE_MATH_SIN: return sinf(a);
    case LADLE_MATH_COS: return cosf(a);
    case LADLE_MATH_TAN: return tanf(a);
    case LADLE_MATH_ASIN: return asinf(a);
    case LADLE_MATH_ACOS: return acosf(a);
    case LADLE_MATH_ATAN: return atanf(a);
    case LADLE_MATH_SINH: return sinhf(a);
    case LADLE_MATH_COSH: return coshf(a);
    case LADLE_MATH_TANH: return tanhf(a);
    case LADLE_MATH_ASINH: return asinhf(a);
    case LADLE_MATH_ACOSH: return acoshf(a);
    case LADLE_MATH_ATANH: return atanhf(a);
    default: return a; /* plus */
  }
}

/* One element: operands k < arity at element offsets off[k] of in[k] (the
 * caller passes offset 0 for a constant operand). */
static inline LADLE_HD void ladle__math_element(int op, int cls, int arity, void *out, int64_t o, int out_dtype,
                                                const void *const *in, const int *in_dtype, const int64_t *off) {
  if (cls == LADLE_MATH_F32) {
    float v[3] = {0, 0, 0};
    for (int k = 0; k < arity; k++) v[k] = ladle__math_load_f32(in[k], off[k], in_dtype[k]);
    ladle__math_store_f32(out, o, out_dtype, ladle__math_f32(op, v[0], v[1], v[2]));
  } else {
    int64_t v[3] = {0, 0, 0};
    for (int k = 0; k < arity; k++) v[k] = ladle__math_load_int(in[k], off[k], in_dtype[k]);
    int64_t r = cls == LADLE_MATH_I64 ? ladle__math_i64(op, v[0], v[1], v[2])
                                      : ladle__math_i32(op, (int32_t)v[0], (int32_t)v[1], (int32_t)v[2]);
    ladle__math_store_int(out, o, out_dtype, r);
  }
}

#endif

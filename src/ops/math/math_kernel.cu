/* The CUDA side of the element-wise kernel (math_kernel.h): grid-stride
 * loops over each sample's output, the same per-element functions as the
 * CPU (math_scalar.h). Three kernels: the general one (any program, strides
 * of any dimensions), the flat one for the commonest programs (float32
 * arithmetic on uint8, float32 or float16 leaves) on contiguous samples, and
 * the vector one for those of them that read one leaf (x * 0.5 + 1), with
 * 16-byte loads and stores and the program decided per step, not per
 * element. */
#ifndef LADLE_HAVE_CUDA
#define LADLE_HAVE_CUDA 1
#endif

#include "ops/kernels/gpu_kernels.h"
#include "ops/kernels/gpu_vec.h"
#include "ops/math/math_kernel.h"
#include "ops/math/math_scalar.h"

#include <string.h>

extern "C" {
#include "core/error.h"
}
#include "cuda/runtime.h"

namespace {

struct math_params {
  ladle__math_prog p;
  ladle__math_sample s[1]; /* n of them */
};

size_t param_bytes(int n) {
  return ladle__align16(offsetof(math_params, s) + (size_t)(n > 0 ? n : 0) * sizeof(ladle__math_sample));
}

/* The general loop over one sample, in a grid-stride loop of the blocks of
 * its grid row. Each step's result lives in reg[t] as one element of its
 * output type (the bytes the unfused chain would store), which later steps
 * load. */
__device__ __forceinline__ void run_general(const ladle__math_prog &prog, const ladle__math_sample *sp) {
  const int nd = sp->ndim, leaves = prog.num_leaves, steps = prog.num_steps;
  int64_t count = 1;
  for (int d = 0; d < nd; d++) count *= sp->shape[d];
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
    int64_t off[LADLE_MATH_MAX_LEAVES] = {0}, rest = i;
    if (nd == 1) { /* the common case after collapsing: no 64-bit divisions */
      for (int k = 0; k < leaves; k++) off[k] = i * sp->strides[k][0];
      rest = 0;
    }
    for (int d = nd == 1 ? -1 : nd - 1; d >= 0; d--) {
      const int64_t q = rest / sp->shape[d], r = rest - q * sp->shape[d];
      for (int k = 0; k < leaves; k++) off[k] += r * sp->strides[k][d];
      rest = q;
    }
    int64_t reg[LADLE_MATH_MAX_STEPS - 1];
    for (int t = 0; t < steps; t++) {
      const ladle__math_step &st = prog.step[t];
      const void *src[LADLE_MATH_MAX_OPERANDS];
      int64_t at[LADLE_MATH_MAX_OPERANDS];
      for (int k = 0; k < st.e.arity; k++) {
        const int ref = st.ref[k];
        src[k] = st.e.is_constant[k] ? (const void *)&st.e.constant[k] : ref >= 0 ? sp->in[ref] : (const void *)&reg[-1 - ref];
        at[k] = st.e.is_constant[k] || ref < 0 ? 0 : off[ref];
      }
      const int last = t == steps - 1;
      ladle__math_element(st.e.op, st.e.cls, st.e.arity, last ? sp->out : (void *)&reg[t], last ? i : 0,
                          st.e.out_dtype, src, st.e.in_dtype, at);
    }
  }
}

/* The general loop called from the flat kernel (inlined there, its arrays
 * would make the flat loop spill). */
__device__ __noinline__ void run_general_call(const ladle__math_prog &prog, const ladle__math_sample *sp) {
  run_general(prog, sp);
}

/* grid (blocks, samples), block 256: the general loop. */
__global__ void __launch_bounds__(256) math_kernel(const math_params *__restrict__ p) {
  run_general(p->p, &p->s[blockIdx.y]);
}

/* The operations other than + - * in the flat loop: one called function
 * (inlined eight times, the transcendental ones would cost registers that
 * the whole loop then keeps). */
__device__ __noinline__ float flat_op(int op, float a, float b, float c) { return ladle__math_f32(op, a, b, c); }

/* An operand of the flat loop: a constant (also the 0 of an operand past
 * the arity), the previous step's result, or leaf j. */
enum { FLAT_CONST = -2, FLAT_PREV = -1 };

/* A program that ladle__math_prog_is_linear_f32 accepts, decoded for the
 * flat loops (in shared memory, once per block): op[t]; src[t], operand k's
 * source in bits 4k..4k+3 (FLAT_* + 2 or leaf + 2); cst[t][k], a constant as
 * a float; bit t of half: step t stores float16. */
struct flat_prog {
  int op[LADLE_MATH_MAX_STEPS];
  unsigned src[LADLE_MATH_MAX_STEPS], half;
  float cst[LADLE_MATH_MAX_STEPS][LADLE_MATH_MAX_OPERANDS];
};

/* Fills f; threads 0..LADLE_MATH_MAX_STEPS-1 of the block call it, then the
 * block synchronizes. */
__device__ __forceinline__ void flat_decode(const ladle__math_prog &prog, flat_prog &f) {
  const int t = threadIdx.x, steps = prog.num_steps;
  f.op[t] = LADLE_MATH_PLUS;
  f.src[t] = 0;
  for (int k = 0; k < LADLE_MATH_MAX_OPERANDS; k++) {
    f.cst[t][k] = 0.0f;
    if (t < steps && k < prog.step[t].e.arity) {
      const ladle__math_step &st = prog.step[t];
      if (st.e.is_constant[k])
        f.cst[t][k] = ladle__math_load_f32(&st.e.constant[k], 0, st.e.in_dtype[k]);
      else
        f.src[t] |= (unsigned)((st.ref[k] >= 0 ? st.ref[k] : FLAT_PREV) + 2) << (4 * k);
    }
  }
  if (t < steps) f.op[t] = prog.step[t].e.op;
  if (t == 0) {
    unsigned h = 0;
    for (int j = 0; j < steps; j++)
      if (prog.step[j].e.out_dtype == LADLE_FLOAT16) h |= 1u << j;
    f.half = h;
  }
}

/* The flat loop of a program that ladle__math_prog_is_linear_f32 accepts,
 * with leaves of type TIN and output TOUT, on samples that
 * ladle__math_is_flat accepts (other samples run the general loop): 32-bit
 * indices, leaf k at i & mask[k] (stride 1: all ones, 0: zero), constants
 * converted to float once per block, the previous step's result in a
 * register (rounded through float16 where that step stores float16, as its
 * store and the next load would). The operations are math_scalar.h's. */
template <int TIN, int TOUT>
__global__ void __launch_bounds__(256) math_flat_kernel(const math_params *__restrict__ p) {
  const ladle__math_prog &prog = p->p;
  const ladle__math_sample *sp = &p->s[blockIdx.y];
  const int leaves = prog.num_leaves, steps = prog.num_steps;
  if (!ladle__math_is_flat(sp, leaves)) {
    run_general_call(prog, sp);
    return;
  }
  const uint32_t count = sp->ndim ? (uint32_t)sp->shape[0] : 1u;
  const void *in[LADLE_MATH_FLAT_LEAVES];
  uint32_t mask[LADLE_MATH_FLAT_LEAVES];
#pragma unroll
  for (int j = 0; j < LADLE_MATH_FLAT_LEAVES; j++) {
    in[j] = j < leaves ? sp->in[j] : sp->in[0];
    mask[j] = j < leaves && sp->ndim && sp->strides[j][0] ? 0xFFFFFFFFu : 0u;
  }
  __shared__ flat_prog f;
  if (threadIdx.x < LADLE_MATH_MAX_STEPS) flat_decode(prog, f);
  __syncthreads();
  const uint32_t stride = gridDim.x * blockDim.x; /* at most 2^20: i + stride never wraps */
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
    float leaf[LADLE_MATH_FLAT_LEAVES], acc = 0.0f;
#pragma unroll
    for (int j = 0; j < LADLE_MATH_FLAT_LEAVES; j++)
      leaf[j] = j < leaves ? ladle__math_load_f32(in[j], (int64_t)(i & mask[j]), TIN) : 0.0f;
#pragma unroll
    for (int t = 0; t < LADLE_MATH_MAX_STEPS; t++) {
      if (t >= steps) break;
      float v[LADLE_MATH_MAX_OPERANDS];
#pragma unroll
      for (int k = 0; k < LADLE_MATH_MAX_OPERANDS; k++) {
        const int r = (int)((f.src[t] >> (4 * k)) & 15u) - 2;
        float x = r == FLAT_CONST ? f.cst[t][k] : r == FLAT_PREV ? acc : leaf[0];
#pragma unroll
        for (int j = 1; j < LADLE_MATH_FLAT_LEAVES; j++) x = r == j ? leaf[j] : x;
        v[k] = x;
      }
      const int o = f.op[t];
      acc = o == LADLE_MATH_MUL   ? LADLE__MATH_FMUL(v[0], v[1])
            : o == LADLE_MATH_ADD ? LADLE__MATH_FADD(v[0], v[1])
            : o == LADLE_MATH_SUB ? LADLE__MATH_FSUB(v[0], v[1])
                                  : flat_op(o, v[0], v[1], v[2]);
      if (t < steps - 1 && ((f.half >> t) & 1u)) acc = ladle__f16_to_f32(ladle__f32_to_f16(acc));
    }
    ladle__math_store_f32(sp->out, (int64_t)i, TOUT, acc);
  }
}

/* --- the vector loop of one-leaf programs ----------------------------------
 * The commonest fused chains (x * 0.5 + 1, (x - mean) / std ...) read one
 * leaf: each operand is a constant, the leaf or the previous result. A
 * thread runs the program on VEC elements at once, each step's operation and
 * operand sources decided once for all of them (a warp-uniform branch, no
 * per-element interpretation). A warp takes a tile of TILE elements that
 * starts on a 16-byte boundary of the leaf and the output, lane l the runs
 * of 4 elements at 4 * (32 r + l), r = 0..3: every load and store of the
 * warp covers contiguous memory (4, 8 or 16 bytes a lane). The elements
 * before the first tile and after the last run one at a time. The
 * arithmetic is the flat loop's, element for element. */
enum { VEC = 16, TILE = LADLE__VEC_TILE };

/* Steps of f on E elements: x the leaf's values, acc the running result. */
template <int E>
__device__ __forceinline__ void vec_steps(const flat_prog &f, int steps, const float (&x)[E], float (&acc)[E]) {
  for (int t = 0; t < steps; t++) {
    const unsigned src = f.src[t];
    const int r0 = (int)(src & 15u) - 2, r1 = (int)((src >> 4) & 15u) - 2, r2 = (int)((src >> 8) & 15u) - 2;
    const float c0 = f.cst[t][0], c1 = f.cst[t][1], c2 = f.cst[t][2];
    const int o = f.op[t];
#define VEC_OPERAND(r, c, e) ((r) == FLAT_CONST ? (c) : (r) == FLAT_PREV ? acc[e] : x[e])
    if (o == LADLE_MATH_MUL) {
#pragma unroll
      for (int e = 0; e < E; e++) acc[e] = LADLE__MATH_FMUL(VEC_OPERAND(r0, c0, e), VEC_OPERAND(r1, c1, e));
    } else if (o == LADLE_MATH_ADD) {
#pragma unroll
      for (int e = 0; e < E; e++) acc[e] = LADLE__MATH_FADD(VEC_OPERAND(r0, c0, e), VEC_OPERAND(r1, c1, e));
    } else if (o == LADLE_MATH_SUB) {
#pragma unroll
      for (int e = 0; e < E; e++) acc[e] = LADLE__MATH_FSUB(VEC_OPERAND(r0, c0, e), VEC_OPERAND(r1, c1, e));
    } else {
#pragma unroll
      for (int e = 0; e < E; e++)
        acc[e] = flat_op(o, VEC_OPERAND(r0, c0, e), VEC_OPERAND(r1, c1, e), VEC_OPERAND(r2, c2, e));
    }
#undef VEC_OPERAND
    if (t < steps - 1 && ((f.half >> t) & 1u)) {
#pragma unroll
      for (int e = 0; e < E; e++) acc[e] = ladle__f16_to_f32(ladle__f32_to_f16(acc[e]));
    }
  }
}

/* The bits of element value v stored as T (FLOAT32 or FLOAT16), as
 * ladle__math_store_f32 stores it; and a leaf's element from its bits. */
template <int T>
__device__ __forceinline__ uint32_t vec_bits(float v) {
  return T == LADLE_FLOAT16 ? (uint32_t)ladle__f32_to_f16(v) : __float_as_uint(v);
}

template <int T>
__device__ __forceinline__ float vec_value(uint32_t bits) {
  /* uint8: 2^23 + u minus 2^23, exact and at the float rate (a conversion
   * instruction issues at an eighth of it) */
  return T == LADLE_UINT8     ? __fadd_rn(__uint_as_float(0x4B000000u | bits), -8388608.0f)
         : T == LADLE_FLOAT16 ? ladle__f16_to_f32((uint16_t)bits)
                              : __uint_as_float(bits);
}

/* grid (blocks, samples), block 256 (whole warps): the vector loop on 1-D
 * samples whose leaf has stride 1 (others: the general loop). */
template <int TIN, int TOUT>
__global__ void __launch_bounds__(256) math_vec_kernel(const math_params *__restrict__ p) {
  const ladle__math_prog &prog = p->p;
  const ladle__math_sample *sp = &p->s[blockIdx.y];
  if (sp->ndim != 1 || sp->strides[0][0] != 1) {
    run_general_call(prog, sp);
    return;
  }
  __shared__ flat_prog f;
  if (threadIdx.x < LADLE_MATH_MAX_STEPS) flat_decode(prog, f);
  __syncthreads();
  constexpr int IB = ladle__vec_size(TIN), OB = ladle__vec_size(TOUT);
  const int steps = prog.num_steps;
  const uintptr_t base[2] = {(uintptr_t)sp->in[0], (uintptr_t)sp->out};
  const int bytes[2] = {IB, OB};
  const ladle__vec_plan plan = ladle__vec_split((size_t)sp->shape[0], ladle__vec_head(2, base, bytes), TILE);
  /* threads [0, 32 * tiles): the lanes of the tiles; then single elements */
  const size_t tiled = 32 * plan.groups, n = tiled + plan.single, stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    if (i < tiled) {
      const size_t first = ladle__vec_lane_first(plan.head, i);
      uint32_t wi[4 * IB], wo[4 * OB];
      float x[VEC], acc[VEC];
      ladle__vec_load_lane<IB>(wi, (const uint8_t *)sp->in[0] + first * IB);
#pragma unroll
      for (int e = 0; e < VEC; e++) x[e] = vec_value<TIN>(ladle__vec_get<IB>(wi, e)), acc[e] = 0.0f;
      vec_steps<VEC>(f, steps, x, acc);
#pragma unroll
      for (int e = 0; e < VEC; e++) ladle__vec_put<OB>(wo, e, vec_bits<TOUT>(acc[e]));
      ladle__vec_store_lane<OB>((uint8_t *)sp->out + first * OB, wo);
    } else {
      const size_t e = ladle__vec_single(plan, i - tiled, TILE);
      const float x[1] = {ladle__math_load_f32(sp->in[0], (int64_t)e, TIN)};
      float acc[1] = {0.0f};
      vec_steps<1>(f, steps, x, acc);
      ladle__math_store_f32(sp->out, (int64_t)e, TOUT, acc[0]);
    }
  }
}

}  // namespace

extern "C" size_t ladle__gpu_math_param_bytes(int n) { return param_bytes(n); }

extern "C" ladle_status ladle__gpu_math(const ladle__math_expr *e, const ladle__math_sample *d, int n,
                                        void *host_params, void *dev_params, size_t bytes, void *stream) {
  ladle__math_prog p;
  if (!e) return LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT, "NULL operation");
  ladle__math_prog_of(e, &p);
  return ladle__gpu_math_prog(&p, d, n, host_params, dev_params, bytes, stream);
}

extern "C" ladle_status ladle__gpu_math_prog(const ladle__math_prog *p, const ladle__math_sample *d, int n,
                                             void *host_params, void *dev_params, size_t bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  math_params *hp = (math_params *)host_params;
  int64_t largest = 1;
  LADLE_CUDA_ENTER();
  LADLE_CHECK(n >= 1 && n <= LADLE__GPU_MAX_SAMPLES && p && d && host_params && dev_params &&
                  !((uintptr_t)host_params & 15) && !((uintptr_t)dev_params & 15) && bytes >= param_bytes(n),
              LADLE_ERROR_INVALID_ARGUMENT, "bad batch (n = %d), or parameter buffers too small or unaligned", n);
  LADLE_CHECK(p->num_steps >= 1 && p->num_steps <= LADLE_MATH_MAX_STEPS && p->num_leaves >= 0 &&
                  p->num_leaves <= LADLE_MATH_MAX_LEAVES,
              LADLE_ERROR_INVALID_ARGUMENT, "bad program: %d steps, %d leaves", p->num_steps, p->num_leaves);
  for (int t = 0; t < p->num_steps; t++) {
    const ladle__math_step *q = &p->step[t];
    LADLE_CHECK(q->e.arity >= 1 && q->e.arity <= LADLE_MATH_MAX_OPERANDS && q->e.op >= 0 &&
                    q->e.op < LADLE_MATH_OP_COUNT,
                LADLE_ERROR_INVALID_ARGUMENT, "step %d: bad operation %d with %d operands", t, q->e.op, q->e.arity);
    for (int k = 0; k < q->e.arity; k++)
      LADLE_CHECK(q->e.is_constant[k] || (q->ref[k] >= 0 ? q->ref[k] < p->num_leaves : -1 - q->ref[k] < t),
                  LADLE_ERROR_INVALID_ARGUMENT, "step %d: operand %d refers to %d", t, k, q->ref[k]);
  }
  hp->p = *p;
  for (int i = 0; i < n; i++) {
    LADLE_CHECK(d[i].ndim >= 0 && d[i].ndim <= LADLE_MAX_NDIM && d[i].out, LADLE_ERROR_INVALID_ARGUMENT,
                "sample %d: bad descriptor", i);
    hp->s[i] = d[i];
    int64_t c = ladle__math_count(&d[i]);
    if (c > largest) largest = c;
  }
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, param_bytes(n), cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError(); /* a stale error from elsewhere must not be blamed on the launch */
  {
    /* The flat kernel for the commonest (leaf, output) types: each thread
     * takes several elements, which pays for converting the constants. */
    const int out = p->step[p->num_steps - 1].e.out_dtype;
    int leaf = -1;
    const int linear = ladle__math_prog_is_linear_f32(p, &leaf);
    void (*kernel)(const math_params *) = math_kernel;
    int64_t per_thread = 1; /* elements */
    unsigned vec_blocks = 0;
    if (linear && leaf == LADLE_UINT8 && out == LADLE_FLOAT32) kernel = math_flat_kernel<LADLE_UINT8, LADLE_FLOAT32>;
    if (linear && leaf == LADLE_FLOAT32 && out == LADLE_FLOAT32) kernel = math_flat_kernel<LADLE_FLOAT32, LADLE_FLOAT32>;
    if (linear && leaf == LADLE_FLOAT16 && out == LADLE_FLOAT16) kernel = math_flat_kernel<LADLE_FLOAT16, LADLE_FLOAT16>;
    if (kernel != math_kernel) per_thread = 8;
    if (linear && p->num_leaves == 1) { /* one leaf: the vector loop */
      void (*vec)(const math_params *) = NULL;
      if (leaf == LADLE_UINT8 && out == LADLE_FLOAT32) vec = math_vec_kernel<LADLE_UINT8, LADLE_FLOAT32>;
      if (leaf == LADLE_UINT8 && out == LADLE_FLOAT16) vec = math_vec_kernel<LADLE_UINT8, LADLE_FLOAT16>;
      if (leaf == LADLE_FLOAT32 && out == LADLE_FLOAT32) vec = math_vec_kernel<LADLE_FLOAT32, LADLE_FLOAT32>;
      if (leaf == LADLE_FLOAT32 && out == LADLE_FLOAT16) vec = math_vec_kernel<LADLE_FLOAT32, LADLE_FLOAT16>;
      if (leaf == LADLE_FLOAT16 && out == LADLE_FLOAT16) vec = math_vec_kernel<LADLE_FLOAT16, LADLE_FLOAT16>;
      if (leaf == LADLE_FLOAT16 && out == LADLE_FLOAT32) vec = math_vec_kernel<LADLE_FLOAT16, LADLE_FLOAT32>;
      if (vec) { /* a thread per lane of a tile, and per single element; per element where a sample has no aligned tile */
        int aligned = 1;
        const int bytes[2] = {ladle__vec_size(leaf), ladle__vec_size(out)};
        for (int i = 0; i < n; i++) {
          const uintptr_t base[2] = {(uintptr_t)d[i].in[0], (uintptr_t)d[i].out};
          if (ladle__math_count(&d[i]) > 1 && ladle__vec_head(2, base, bytes) < 0) aligned = 0;
        }
        kernel = vec;
        vec_blocks = ladle__vec_blocks(aligned ? (size_t)largest / VEC + TILE + 16 : (size_t)largest, n);
      }
    }
    const int64_t per_block = 256 * per_thread;
    int64_t blocks = (largest + per_block - 1) / per_block;
    dim3 grid(vec_blocks ? vec_blocks : (unsigned)(blocks < 4096 ? blocks : 4096), (unsigned)n);
    kernel<<<grid, 256, 0, s>>>((const math_params *)dev_params);
  }
  LADLE_CUDA_CHECK_LAUNCH(math_kernel);
done:
  return st;
}

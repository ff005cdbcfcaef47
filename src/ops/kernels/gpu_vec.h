/* Vector access for the element-wise CUDA kernels (colour, math.arithmetic):
 * a thread takes a group of elements that starts on a 16-byte boundary of
 * every array it touches, loads and stores it as 16-byte words and picks
 * the elements out of (or packs them into) 32-bit registers. Elements before
 * the first such boundary (the head) and after the last whole group (the
 * tail) go one at a time. CUDA only. */
#ifndef LADLE_OPS_KERNELS_GPU_VEC_H
#define LADLE_OPS_KERNELS_GPU_VEC_H

#if defined(__CUDACC__)

#include <stddef.h>
#include <stdint.h>

#include "ladle/ladle.h"
#include "ops/kernels/half.h"

/* Bytes of an element of the types the vector loops take (uint8, float16,
 * float32). */
constexpr int ladle__vec_size(int dtype) { return dtype == LADLE_UINT8 ? 1 : dtype == LADLE_FLOAT16 ? 2 : 4; }

/* W 32-bit words (W a multiple of 4) from / to 16-byte aligned memory. */
template <int W>
static __device__ __forceinline__ void ladle__vec_load(uint32_t (&w)[W], const void *p) {
  static_assert(W % 4 == 0, "whole 16-byte words");
  const uint4 *q = (const uint4 *)p;
#pragma unroll
  for (int i = 0; i < W / 4; i++) {
    const uint4 v = q[i];
    w[4 * i] = v.x, w[4 * i + 1] = v.y, w[4 * i + 2] = v.z, w[4 * i + 3] = v.w;
  }
}

template <int W>
static __device__ __forceinline__ void ladle__vec_store(void *p, const uint32_t (&w)[W]) {
  static_assert(W % 4 == 0, "whole 16-byte words");
  uint4 *q = (uint4 *)p;
#pragma unroll
  for (int i = 0; i < W / 4; i++) q[i] = make_uint4(w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3]);
}

/* The bits of element k (of B = 1, 2 or 4 bytes) of a word array; k is a
 * constant after unrolling, so this is a shift and a mask. */
template <int B>
static __device__ __forceinline__ uint32_t ladle__vec_get(const uint32_t *w, int k) {
  if (B == 4) return w[k];
  if (B == 2) return (w[k / 2] >> (16 * (k % 2))) & 0xffffu;
  return (w[k / 4] >> (8 * (k % 4))) & 0xffu;
}

/* Element k := bits (which fit B bytes); elements must be put in increasing
 * order within a word (the first one of a word overwrites it). */
template <int B>
static __device__ __forceinline__ void ladle__vec_put(uint32_t *w, int k, uint32_t bits) {
  const int per = 4 / B, i = k / per, sh = 8 * B * (k % per);
  w[i] = k % per == 0 ? bits : w[i] | (bits << sh);
}

/* The first item h in [0, 16) at which every one of the n arrays (array j
 * at base[j], bytes_per_item[j] bytes an item) is 16-byte aligned, or -1
 * (16 items later they are all aligned again). With group *
 * bytes_per_item[j] a multiple of 16, items h, h + group, h + 2 * group...
 * then start aligned groups in all of them. (Also on the host: a launcher
 * sizes its grid for single items where this is -1.) */
static __host__ __device__ __forceinline__ int ladle__vec_head(int n, const uintptr_t *base,
                                                               const int *bytes_per_item) {
  for (int h = 0; h < 16; h++) {
    int ok = 1;
    for (int j = 0; j < n; j++) ok &= ((base[j] + (uintptr_t)h * (uintptr_t)bytes_per_item[j]) & 15u) == 0;
    if (ok) return h;
  }
  return -1;
}

/* Runs of 4 elements of B bytes (4, 8 or 16 bytes, aligned to that) from /
 * to memory, as B 32-bit words. */
template <int B>
static __device__ __forceinline__ void ladle__vec_load_run(uint32_t *w, const void *p) {
  if (B == 4) {
    const uint4 v = *(const uint4 *)p;
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
  } else if (B == 2) {
    const uint2 v = *(const uint2 *)p;
    w[0] = v.x, w[1] = v.y;
  } else {
    w[0] = *(const uint32_t *)p;
  }
}

template <int B>
static __device__ __forceinline__ void ladle__vec_store_run(void *p, const uint32_t *w) {
  if (B == 4)
    *(uint4 *)p = make_uint4(w[0], w[1], w[2], w[3]);
  else if (B == 2)
    *(uint2 *)p = make_uint2(w[0], w[1]);
  else
    *(uint32_t *)p = w[0];
}

/* Warp tiles of element-wise loops: a warp takes LADLE__VEC_TILE elements
 * (from a 16-byte boundary of every array), lane l the 4 runs of 4 elements
 * at 4 * (32 r + l), r = 0..3, so that every load and store of the warp
 * covers contiguous memory. The lane's 16 elements of B bytes, from the
 * address `p` of its first one, as 4 * B words (element k of them: run k / 4). */
enum { LADLE__VEC_TILE = 32 * 16 };

template <int B>
static __device__ __forceinline__ void ladle__vec_load_lane(uint32_t (&w)[4 * B], const uint8_t *p) {
#pragma unroll
  for (int r = 0; r < 4; r++) ladle__vec_load_run<B>(w + r * B, p + 128 * r * B);
}

template <int B>
static __device__ __forceinline__ void ladle__vec_store_lane(uint8_t *p, const uint32_t (&w)[4 * B]) {
#pragma unroll
  for (int r = 0; r < 4; r++) ladle__vec_store_run<B>(p + 128 * r * B, w + r * B);
}

/* The first of the lane's elements for thread index i < 32 * tiles of a
 * grid-stride loop (whose stride, a multiple of 32, keeps each warp in one
 * tile): head + tile i / 32, lane i % 32. */
static __device__ __forceinline__ size_t ladle__vec_lane_first(size_t head, size_t i) {
  return head + (i / 32) * LADLE__VEC_TILE + 4 * (i % 32);
}

/* Blocks of 256 threads for each sample's row of a grid-stride loop whose
 * largest sample takes `threads` iterations (a group or a single item each),
 * for n samples: about LADLE__VEC_ITERS iterations a thread where the grid
 * keeps at least LADLE__VEC_MIN_BLOCKS blocks (to fill the GPU), else one;
 * 1 to 4096. Blocks of one iteration spend much of their life fetching the
 * sample's parameters, with no data in flight, and many short blocks make
 * the block scheduler's rate the bound. */
enum { LADLE__VEC_ITERS = 4, LADLE__VEC_MIN_BLOCKS = 2048 };

static inline unsigned ladle__vec_blocks(size_t threads, int n) {
  const size_t one = (threads + 255) / 256, fewer = (one + LADLE__VEC_ITERS - 1) / LADLE__VEC_ITERS;
  const size_t fill = ((size_t)LADLE__VEC_MIN_BLOCKS + (size_t)n - 1) / (size_t)(n > 0 ? n : 1);
  size_t b = fewer >= fill ? fewer : one < fill ? one : fill;
  return (unsigned)(b < 1 ? 1 : b > 4096 ? 4096 : b);
}

/* How a sample of `items` items splits for a thread index i of a grid-stride
 * loop over [0, ladle__vec_work(...)): i < groups: the aligned group i
 * (items head + group * i ...); else one single item. */
typedef struct ladle__vec_plan {
  size_t head, groups, single; /* single = head + tail items */
} ladle__vec_plan;

static __device__ __forceinline__ ladle__vec_plan ladle__vec_split(size_t items, int h, int group) {
  ladle__vec_plan s;
  if (h < 0 || (size_t)h >= items) { /* no aligned group: all single items */
    s.head = items, s.groups = 0, s.single = items;
  } else {
    s.head = (size_t)h;
    s.groups = (items - s.head) / (size_t)group;
    s.single = items - s.groups * (size_t)group;
  }
  return s;
}

/* The item of the single index j (0 <= j < s.single): head items, then tail. */
static __device__ __forceinline__ size_t ladle__vec_single(const ladle__vec_plan &s, size_t j, int group) {
  return j < s.head ? j : j + s.groups * (size_t)group;
}

#endif /* __CUDACC__ */

#endif

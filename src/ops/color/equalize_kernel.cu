/* equalize on the GPU (equalize_kernel.h). A sample is seen as `runs`
 * contiguous runs of bytes whose channel is the byte's index modulo `ch`:
 * frames of interleaved channels (HWC, FHWC: ch = channels) or single planes
 * (HW, CHW, FCHW: ch = 1); plane (run * ch + channel) is histogram h of
 * equalize_core.h. A block takes LADLE__EQ_SPAN bytes of one run and reads
 * them as aligned 4-byte words (the few bytes before the first aligned
 * address and after the last word one by one), tracking each byte's channel
 * without a division per byte: it counts into per-block shared counters
 * (ch x 256) added to the plane's histogram at the end, and it applies the
 * tables from a shared copy. Counts are exact, so the order of the atomic
 * additions does not matter. */
#ifndef LADLE_HAVE_CUDA
#define LADLE_HAVE_CUDA 1
#endif

#include <string.h>

#include "ops/color/equalize_kernel.h"
#include "ops/kernels/gpu_kernels.h"

extern "C" {
#include "core/error.h"
}
#include "cuda/runtime.h"

namespace {

constexpr int THREADS = 256;
constexpr int64_t SPAN = 32768;       /* bytes of a run per block of apply_kernel */
constexpr int64_t HIST_SPAN = 65536;  /* and of hist_kernel (fewer blocks: fewer additions of counters) */
constexpr int SHARED_CH = 32;    /* runs of more interleaved channels count in global memory */

struct sample {
  const uint8_t *in;
  uint8_t *out;
  uint32_t *hist;
  const uint8_t *lut;
  int64_t runs, run_len, run_stride;
  int ch;
};

/* The channel of byte e of a run, and the channel `step` bytes later. */
__device__ __forceinline__ int channel_of(int64_t e, int ch) {
  return ch == 1 ? 0 : ((uint64_t)e >> 32) ? (int)(e % ch) : (int)((uint32_t)e % (uint32_t)ch);
}

__device__ __forceinline__ int next_channel(int c, int step, int ch) {
  c += step;
  return c >= ch ? c - ch : c;
}

/* What a block of hist_kernel or apply_kernel takes: bytes [lo, hi) of run
 * u = blockIdx.z of sample blockIdx.y, `span` per block along x; ch and tid
 * as the kernels name them. */
struct part {
  int64_t u, lo, hi;
  int ch, tid;
};

/* The block's part; false when it has none. */
__device__ __forceinline__ bool block_part(const sample &s, int64_t span, part *b) {
  b->u = blockIdx.z;
  b->lo = (int64_t)blockIdx.x * span;
  if (b->u >= s.runs || b->lo >= s.run_len) return false;
  b->hi = b->lo + span < s.run_len ? b->lo + span : s.run_len;
  b->ch = s.ch, b->tid = threadIdx.x;
  return true;
}

/* How a part of a run starting at p is read: `words` aligned 4-byte words
 * from byte a; the bytes before a (at most 3) and from tail on (after the
 * last whole word) one at a time, thread tid taking lo + tid and tail + tid.
 * c0: the channel of the thread's first word's first byte; adv: how far it
 * moves from one of the thread's words to its next. */
struct words {
  int64_t a, count, tail;
  int c0, adv;
};

__device__ __forceinline__ words words_of(const void *p, const part &b) {
  words w;
  const int64_t head = (int64_t)((4 - ((uintptr_t)p + (uintptr_t)b.lo) % 4) % 4);
  w.a = b.lo + head < b.hi ? b.lo + head : b.hi;
  w.count = (b.hi - w.a) / 4;
  w.tail = w.a + 4 * w.count;
  w.adv = (4 * THREADS) % b.ch;
  w.c0 = channel_of(w.a + 4 * (int64_t)b.tid, b.ch);
  return w;
}

__global__ void __launch_bounds__(THREADS) hist_kernel(const sample *__restrict__ samples, int shared_ch) {
  extern __shared__ uint32_t counts[];
  const sample &s = samples[blockIdx.y];
  part b;
  if (!block_part(s, HIST_SPAN, &b)) return;
  const int ch = b.ch, tid = b.tid;
  const bool in_shared = ch <= shared_ch;
  uint32_t *cnt = in_shared ? counts : s.hist + b.u * ch * 256;
  if (in_shared) {
    for (int i = tid; i < ch * 256; i += THREADS) counts[i] = 0;
    __syncthreads();
  }
  const uint8_t *p = s.in + b.u * s.run_stride;
  const words ws = words_of(p, b);
  if (b.lo + tid < ws.a) atomicAdd(&cnt[channel_of(b.lo + tid, ch) * 256 + __ldg(p + b.lo + tid)], 1u);
  if (ws.tail + tid < b.hi) atomicAdd(&cnt[channel_of(ws.tail + tid, ch) * 256 + __ldg(p + ws.tail + tid)], 1u);
  const uint32_t *wp = (const uint32_t *)(p + ws.a);
  int c0 = ws.c0;
  for (int64_t w = tid; w < ws.count; w += THREADS) {
    const uint32_t v = __ldg(wp + w);
    int c = c0;
#pragma unroll
    for (int j = 0; j < 4; j++) {
      atomicAdd(&cnt[c * 256 + ((v >> (8 * j)) & 255u)], 1u);
      c = next_channel(c, 1, ch);
    }
    c0 = next_channel(c0, ws.adv, ch);
  }
  if (in_shared) {
    __syncthreads();
    uint32_t *h = s.hist + b.u * ch * 256;
    for (int i = tid; i < ch * 256; i += THREADS)
      if (counts[i]) atomicAdd(&h[i], counts[i]);
  }
}

/* A warp per plane: lane l takes values 8l .. 8l + 7; the cumulative counts
 * by a shuffle scan (integers: exact), then equalize_core.h's entries. */
__global__ void __launch_bounds__(256) lut_kernel(const sample *__restrict__ samples) {
  const sample &s = samples[blockIdx.y];
  const int lane = threadIdx.x & 31;
  const int64_t hists = s.runs * s.ch;
  for (int64_t h = (int64_t)blockIdx.x * 8 + threadIdx.x / 32; h < hists; h += (int64_t)gridDim.x * 8) {
    const uint4 *hw = (const uint4 *)(s.hist + h * 256) + 2 * lane;
    const uint4 a = hw[0], b = hw[1];
    const uint32_t count[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    int64_t mine = 0, first = 0;
#pragma unroll
    for (int j = 0; j < 8; j++) {
      if (!first) first = count[j];
      mine += count[j];
    }
    int64_t below = mine; /* inclusive scan of the lanes' totals */
    for (int off = 1; off < 32; off *= 2) {
      const int64_t up = __shfl_up_sync(0xffffffffu, below, off);
      if (lane >= off) below += up;
    }
    const int64_t total = __shfl_sync(0xffffffffu, below, 31);
    const unsigned nonzero = __ballot_sync(0xffffffffu, mine != 0);
    const int64_t c0 = nonzero ? __shfl_sync(0xffffffffu, first, __ffs(nonzero) - 1) : 0;
    int64_t cdf = below - mine;
    uint32_t out[2] = {0, 0};
    const double scale = total == c0 ? 0.0 : 255.0 / (double)(total - c0);
#pragma unroll
    for (int j = 0; j < 8; j++) {
      cdf += count[j];
      const uint32_t e = total == c0 ? (uint32_t)(8 * lane + j) : ladle__equalize_entry(cdf, c0, scale);
      out[j / 4] |= e << (8 * (j % 4));
    }
    ((uint2 *)((uint8_t *)s.lut + h * 256))[lane] = make_uint2(out[0], out[1]);
  }
}

__global__ void __launch_bounds__(THREADS) apply_kernel(const sample *__restrict__ samples, int shared_ch) {
  extern __shared__ uint32_t table_words[];
  const sample &s = samples[blockIdx.y];
  part b;
  if (!block_part(s, SPAN, &b)) return;
  const int ch = b.ch, tid = b.tid;
  const uint8_t *lut = s.lut + b.u * ch * 256;
  if (ch <= shared_ch) { /* the run's tables: ch * 256 bytes, 4-aligned */
    for (int i = tid; i < ch * 64; i += THREADS) table_words[i] = ((const uint32_t *)lut)[i];
    lut = (const uint8_t *)table_words;
    __syncthreads();
  }
  const uint8_t *ip = s.in + b.u * s.run_stride;
  uint8_t *op = s.out + b.u * s.run_stride;
  if (((uintptr_t)ip - (uintptr_t)op) % 4) { /* words of input and output not aligned together */
    const int adv = THREADS % ch;
    int c = channel_of(b.lo + tid, ch);
    for (int64_t e = b.lo + tid; e < b.hi; e += THREADS) {
      __stcg(op + e, lut[c * 256 + __ldg(ip + e)]);
      c = next_channel(c, adv, ch);
    }
    return;
  }
  const words ws = words_of(ip, b);
  if (b.lo + tid < ws.a) __stcg(op + b.lo + tid, lut[channel_of(b.lo + tid, ch) * 256 + __ldg(ip + b.lo + tid)]);
  if (ws.tail + tid < b.hi)
    __stcg(op + ws.tail + tid, lut[channel_of(ws.tail + tid, ch) * 256 + __ldg(ip + ws.tail + tid)]);
  const uint32_t *wi = (const uint32_t *)(ip + ws.a);
  uint32_t *wo = (uint32_t *)(op + ws.a);
  int c0 = ws.c0;
  for (int64_t w = tid; w < ws.count; w += THREADS) {
    const uint32_t v = __ldg(wi + w);
    uint32_t r = 0;
    int c = c0;
#pragma unroll
    for (int j = 0; j < 4; j++) {
      r |= (uint32_t)lut[c * 256 + ((v >> (8 * j)) & 255u)] << (8 * j);
      c = next_channel(c, 1, ch);
    }
    __stcg(wo + w, r);
    c0 = next_channel(c0, ws.adv, ch);
  }
}

}  // namespace

extern "C" size_t ladle__gpu_equalize_param_bytes(int n) { return ladle__align16((size_t)n * sizeof(sample)); }

extern "C" ladle_status ladle__gpu_equalize(const ladle__equalize_desc *d, int n, uint32_t *hist, int64_t total_hists,
                                            void *host_params, void *dev_params, size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  sample *hs = (sample *)host_params;
  int64_t runs = 1, run_len = 1, hists = 1;
  int shared_ch = 0;
  LADLE_CUDA_ENTER();
  LADLE_TRY(ladle__gpu_check_params(n, d, host_params, dev_params, param_bytes, ladle__gpu_equalize_param_bytes(n),
                                    __func__));
  for (int i = 0; i < n; i++) {
    const ladle__equalize_desc *e = &d[i];
    sample *q = &hs[i];
    const int interleaved = e->channels > 1 && e->chan_stride == 1 && e->pix_stride == e->channels;
    const int planar = e->pix_stride == 1 && (e->channels == 1 || e->chan_stride == e->pixels);
    if (e->channels < 1 || e->channels > 65535 || e->hists % e->channels ||
        e->frame_stride != e->pixels * e->channels || !(interleaved || planar))
      LADLE_TRY(ladle__set_error(LADLE_ERROR_UNSUPPORTED, __func__, "sample %d: not a layout of whole planes", i));
    q->in = e->in, q->out = e->out, q->hist = e->hist, q->lut = e->lut;
    q->ch = interleaved ? (int)e->channels : 1;
    q->runs = interleaved ? e->hists / e->channels : e->hists;
    q->run_len = e->pixels * q->ch;
    q->run_stride = interleaved ? e->frame_stride : e->pixels;
    if (q->runs > runs) runs = q->runs;
    if (q->run_len > run_len) run_len = q->run_len;
    if (e->hists > hists) hists = e->hists;
    if (q->ch <= SHARED_CH && q->ch > shared_ch) shared_ch = q->ch;
  }
  if (runs > 65535)
    LADLE_TRY(ladle__set_error(LADLE_ERROR_UNSUPPORTED, __func__, "%lld planes in one sample (at most 65535)",
                               (long long)runs));
  {
    const dim3 grid((unsigned)((run_len + SPAN - 1) / SPAN), (unsigned)n, (unsigned)runs);
    const dim3 hist_grid((unsigned)((run_len + HIST_SPAN - 1) / HIST_SPAN), (unsigned)n, (unsigned)runs);
    LADLE_CUDA_CHECK(cudaMemsetAsync(hist, 0, sizeof *hist * 256 * (size_t)total_hists, s));
    LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, (size_t)n * sizeof *hs, cudaMemcpyHostToDevice, s));
    (void)cudaGetLastError();
    hist_kernel<<<hist_grid, THREADS, (size_t)shared_ch * 256 * sizeof(uint32_t), s>>>((const sample *)dev_params,
                                                                                 shared_ch);
    LADLE_CUDA_CHECK_LAUNCH(hist_kernel);
    lut_kernel<<<dim3((unsigned)((hists + 7) / 8 < 4096 ? (hists + 7) / 8 : 4096), (unsigned)n), 256, 0, s>>>(
        (const sample *)dev_params);
    LADLE_CUDA_CHECK_LAUNCH(lut_kernel);
    apply_kernel<<<grid, THREADS, (size_t)shared_ch * 256, s>>>((const sample *)dev_params, shared_ch);
    LADLE_CUDA_CHECK_LAUNCH(apply_kernel);
  }
done:
  return st;
}

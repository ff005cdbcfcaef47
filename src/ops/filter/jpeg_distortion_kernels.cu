/* jpeg_compression_distortion on the GPU: jpeg_core.h's round trip in two
 * launches, the codec (RGB -> reconstructed Y, Cb, Cr planes in device
 * scratch) and the output (chroma upsampling, which needs the neighbouring
 * MCUs' samples, hence the second launch, and YCbCr -> RGB). blockIdx.y is the
 * sample; blocks past a smaller sample's work return at once.
 *
 * Speed (issue 9; the first version took 0.74 ms per batch of 256 ~400x460
 * images on an H200, DALI 0.60 ms). What changed and why:
 * - Codec blocks of 96 threads (3 full warps) for a pair of MCUs, 12 8x8
 *   blocks: thread t owns row or column t % 8 of block t / 8 in every DCT pass
 *   (warps 0, 1: the two MCUs' luma, warp 2: their Cb and Cr), so no lane idles
 *   (before: 48 of 64 threads busy in each pass, the other 16 in a warp that
 *   was issuing) and the luma/chroma table choice is per warp, not per lane.
 * - The 8 values of a row or column live in registers (jpeg_core.h's 1-D
 *   passes on a local array): the forward column pass, requantization and the
 *   inverse column pass run back to back with no shared-memory round trip,
 *   and the last (row) pass packs its 8 samples into one 8-byte store to the
 *   plane, L2 only (__stcg: the next launch reads it). Before: 6 byte stores
 *   per thread and 7 barriers per MCU; now 4 barriers per pair of MCUs.
 * - Shared tiles padded to 9 words per row: row and column accesses of a warp
 *   (4 blocks x 8 rows/columns) hit 32 distinct banks (before: stride-8 rows,
 *   8-way conflicts in the row passes, 4-way in the column passes).
 * - The load phase gives a thread a 2x2 quad: 12 byte loads give 4 Y and the
 *   quad's Cb and Cr sums at once (before: 24 loads for 4 pixels, each pixel
 *   read twice, for luma and for chroma).
 * - Quantization tables laid out on the host as one 16-byte entry per
 *   coefficient (qval, recip, corr, shift): 8 loads per column thread
 *   instead of 24, no unpacking. Pixels, planes and tables are read through
 *   the read-only path (ld.global.nc; the first version's loads were generic).
 * - One integer division per pair of MCUs (jd_pair_at), not one per thread.
 * - 40 registers a thread (launch bounds, no spills on sm_90): 16 codec blocks
 *   (1,536 threads) and 12 output blocks per SM, against ~18 x 64 = 1,152
 *   threads of the first codec kernel, a quarter of them idle in the DCTs.
 * - The output kernel takes a pixel pair per thread (both share a chroma
 *   column: 3 blended columns instead of 4, one 2-byte luma load) and hoists
 *   the per-row chroma pointers out of the pixel loop.
 * Memory traffic is unchanged (~0.43 GB per batch: RGB in and out, planes
 * 1.5 B/pixel written and read, partly L2-resident), ~0.1 ms at HBM speed;
 * the codec was bound by shared-memory conflicts and idle lanes, now by
 * integer ALU work (~115 thread instructions a pixel, from ~170 plus
 * conflict replays). Measured on the H200 (2026-12-02, 28d1828): 0.444 ms a
 * batch on the stream, 0.501 ms in bench/op_bench.py against DALI's 0.771.
 * The arithmetic is jpeg_core.h's, bit for bit
 * (tests/c/ops/filter/test_jpeg_distortion_gpu.c); the phases are
 * __host__ __device__ so that a host loop over a block's threads can run
 * them too. */
#ifndef LADLE_HAVE_CUDA
#define LADLE_HAVE_CUDA 1
#endif

#include <stdint.h>
#include <string.h>

#include "ops/filter/filter_kernels.h"
#include "ops/kernels/gpu_kernels.h"

extern "C" {
#include "core/error.h"
}
#include "cuda/runtime.h"

namespace {


/* One coefficient's quantizer, unpacked (x qval, y recip, z corr, w shift):
 * one 16-byte load; [table][comp][natural index]. */
typedef uint4 jd_entry;
/* Global loads of read-only data and stores of the planes (read by the next
 * launch, so kept in L2 only); plain accesses in a host build of the phases. */
#ifdef __CUDA_ARCH__
#define JD_LDG(p) __ldg(p)
#define JD_STORE8(p, v) __stcg(p, v)
#else
#define JD_LDG(p) (*(p))
#define JD_STORE8(p, v) (*(p) = (v))
#endif
/* Blocks per SM the launch bounds ask for (40 registers a thread, no spills,
 * on sm_80/sm_90; architectures with fewer threads per SM take the default). */
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ == 800 || __CUDA_ARCH__ == 900
#define JD_CODEC_BLOCKS 16
#define JD_OUTPUT_BLOCKS 12
#else
#define JD_CODEC_BLOCKS 1
#define JD_OUTPUT_BLOCKS 1
#endif
enum {
  JD_TABLE_ENTRIES = 2 * 64, JD_CODEC_THREADS = 96, JD_OUTPUT_THREADS = 128,
  JD_TILE = 8 * 9 /* a tile: 8 rows of 9 words */
};

/* Row y of the image, the last repeated below it (jd_luma_in). */
JD_FN const uint8_t *jd_image_row(const uint8_t *rgb, int h, int w, int y) {
  return rgb + (size_t)jd_min(y, h - 1) * (size_t)w * 3;
}

/* Quad (qy, qx) of MCU (my, mx) into the tiles: its 4 luma samples into luma
 * block `lb` (0..3 of this MCU), its Cb and Cr sample into cb, cr. */
JD_FN void jd_load_quad(int32_t *luma, int32_t *cb, int32_t *cr, const uint8_t *rgb, int h,
                                             int w, int my, int mx, int q) {
  const int qy = q >> 3, qx = q & 7, cy = 8 * my + qy, cx = 8 * mx + qx;
  const int x0 = 2 * cx, y0 = 2 * cy;
  const size_t c0 = (size_t)jd_min(x0, w - 1) * 3, c1 = (size_t)jd_min(x0 + 1, w - 1) * 3;
  const uint8_t *row0 = jd_image_row(rgb, h, w, y0), *row1 = jd_image_row(rgb, h, w, y0 + 1);
  const uint8_t *p[4] = {row0 + c0, row0 + c1, row1 + c0, row1 + c1};
  int32_t *l = luma + ((qy >> 2) * 2 + (qx >> 2)) * JD_TILE + 2 * (qy & 3) * 9 + 2 * (qx & 3);
  uint8_t v[4][3];
  for (int k = 0; k < 4; k++) v[k][0] = JD_LDG(p[k]), v[k][1] = JD_LDG(p[k] + 1), v[k][2] = JD_LDG(p[k] + 2);
  for (int k = 0; k < 4; k++) l[(k >> 1) * 9 + (k & 1)] = jd_y(v[k]);
  /* Below the image the chroma rows repeat the last chroma row, not the last
   * image row (jd_chroma_in): other pixels than the luma's when h is even. */
  const int r = jd_min(cy, (h + 1) / 2 - 1);
  if (2 * r != jd_min(y0, h - 1)) {
    row0 = jd_image_row(rgb, h, w, 2 * r), row1 = jd_image_row(rgb, h, w, 2 * r + 1);
    const uint8_t *c[4] = {row0 + c0, row0 + c1, row1 + c0, row1 + c1};
    for (int k = 0; k < 4; k++) v[k][0] = JD_LDG(c[k]), v[k][1] = JD_LDG(c[k] + 1), v[k][2] = JD_LDG(c[k] + 2);
  }
  int sb = 1 + (cx & 1), sr = sb;
  for (int k = 0; k < 4; k++) {
    sb += jd_cb(v[k][0], v[k][1], v[k][2]);
    sr += jd_cr(v[k][0], v[k][1], v[k][2]);
  }
  cb[qy * 9 + qx] = (sb >> 2) - 128;
  cr[qy * 9 + qx] = (sr >> 2) - 128;
}

/* What codec thread t of a block does in the DCT passes: its 8x8 block b
 * (tiles 0..3: luma of the pair's first MCU, 4..7 of the second, 8, 9: Cb, Cr
 * of the first, 10, 11 of the second), its row/column k, its MCU j (0, 1),
 * where its rows go (plane, stride, place in the MCU, MCU size) and the
 * quantizers of its column. The phases below are __host__ too, so that a host
 * harness can run a block's threads phase by phase. */
typedef struct jd_thread {
  uint8_t *plane;
  size_t stride;
  const jd_entry *q; /* entry (0, k) of its table */
  int b, k, j, by, bx, unit;
} jd_thread;

JD_FN jd_thread jd_thread_init(const ladle__gpu_jd_desc *s, const jd_entry *tables, int t) {
  jd_thread d;
  const int mw = jd_mcus(s->w), mh = jd_mcus(s->h);
  const size_t ls = 16 * (size_t)mw, cs = ls / 2;
  d.b = t >> 3, d.k = t & 7;
  const int chroma = d.b >= 8;
  d.j = chroma ? (d.b - 8) >> 1 : d.b >> 2;
  d.plane = s->planes, d.stride = ls, d.by = 8 * ((d.b & 3) >> 1), d.bx = 8 * (d.b & 1), d.unit = 16;
  if (chroma) {
    d.plane += ls * 16 * (size_t)mh + (d.b & 1) * cs * 8 * (size_t)mh;
    d.stride = cs, d.by = d.bx = 0, d.unit = 8;
  }
  d.q = tables + (size_t)s->table * JD_TABLE_ENTRIES + chroma * 64 + d.k;
  return d;
}

/* The place (my, mx) of MCUs m0 and m0 + 1 (mw per row): one division. */
typedef struct jd_pair {
  int my[2], mx[2];
} jd_pair;

JD_FN jd_pair jd_pair_at(int m0, int mw) {
  jd_pair p;
  p.my[0] = m0 / mw, p.mx[0] = m0 - p.my[0] * mw;
  const int wrap = p.mx[0] + 1 == mw;
  p.my[1] = p.my[0] + wrap, p.mx[1] = wrap ? 0 : p.mx[0] + 1;
  return p;
}

/* Phase 1: the level-shifted samples of MCUs m0, m0 + 1 (those below mcus)
 * into the tiles. */
JD_FN void jd_phase_load(int32_t *tile, const ladle__gpu_jd_desc *s, const jd_pair *p, int m0, int mcus, int t) {
  for (int qi = t; qi < 128; qi += JD_CODEC_THREADS) {
    const int jj = qi >> 6;
    if (m0 + jj < mcus)
      jd_load_quad(tile + jj * 4 * JD_TILE, tile + (8 + 2 * jj) * JD_TILE, tile + (9 + 2 * jj) * JD_TILE, s->in, s->h,
                   s->w, p->my[jj], p->mx[jj], qi & 63);
  }
}

/* Phase 2: the forward row pass. */
JD_FN void jd_phase_rows(int32_t *tile, const jd_thread *d) {
  int32_t v[8], *row = tile + d->b * JD_TILE + 9 * d->k;
  for (int i = 0; i < 8; i++) v[i] = row[i];
  jd_fdct_1d(v, 1, 0);
  for (int i = 0; i < 8; i++) row[i] = v[i];
}

/* Phase 3: forward column pass, requantization, inverse column pass. */
JD_FN void jd_phase_columns(int32_t *tile, const jd_thread *d) {
  int32_t v[8], *col = tile + d->b * JD_TILE + d->k;
  for (int i = 0; i < 8; i++) v[i] = col[9 * i];
  jd_fdct_1d(v, 1, 1);
  for (int i = 0; i < 8; i++) {
    const jd_entry e = JD_LDG(d->q + 8 * i);
    v[i] = jd_requant_entry(v[i], e.x, e.y, e.z, e.w);
  }
  jd_idct_1d(v, 1, 0);
  for (int i = 0; i < 8; i++) col[9 * i] = v[i];
}

/* Phase 4: the inverse row pass, its 8 samples in one 8-byte store. */
JD_FN void jd_phase_store(const int32_t *tile, const jd_thread *d, const jd_pair *p) {
  int32_t v[8];
  const int32_t *row = tile + d->b * JD_TILE + 9 * d->k;
  for (int i = 0; i < 8; i++) v[i] = row[i];
  jd_idct_1d(v, 1, 1);
  const int my = p->my[d->j], mx = p->mx[d->j];
  uint2 out;
  out.x = (uint32_t)v[0] | (uint32_t)v[1] << 8 | (uint32_t)v[2] << 16 | (uint32_t)v[3] << 24;
  out.y = (uint32_t)v[4] | (uint32_t)v[5] << 8 | (uint32_t)v[6] << 16 | (uint32_t)v[7] << 24;
  JD_STORE8((uint2 *)(d->plane + (size_t)(d->unit * my + d->by + d->k) * d->stride + (size_t)(d->unit * mx + d->bx)),
            out);
}

/* A block per pair of MCUs (pairs strided by the grid). */
__global__ void __launch_bounds__(JD_CODEC_THREADS, JD_CODEC_BLOCKS)
    jd_codec_kernel(const ladle__gpu_jd_desc *__restrict__ samples, const jd_entry *__restrict__ tables) {
  const ladle__gpu_jd_desc s = samples[blockIdx.y];
  if (s.h <= 0 || s.w <= 0) return;
  const int mw = jd_mcus(s.w), mcus = mw * jd_mcus(s.h), t = (int)threadIdx.x;
  __shared__ int32_t tile[12 * JD_TILE];
  const jd_thread d = jd_thread_init(&s, tables, t);
  for (int m0 = 2 * (int)blockIdx.x; m0 < mcus; m0 += 2 * (int)gridDim.x) {
    const int live = m0 + d.j < mcus;
    const jd_pair p = jd_pair_at(m0, mw);
    jd_phase_load(tile, &s, &p, m0, mcus, t);
    __syncthreads();
    if (live) jd_phase_rows(tile, &d);
    __syncthreads();
    if (live) jd_phase_columns(tile, &d);
    __syncthreads();
    if (live) jd_phase_store(tile, &d, &p);
    __syncthreads(); /* the tiles are reused by the next pair */
  }
}

/* Both chroma samples of output columns 2cx, 2cx + 1 from chroma rows r0
 * (the pixel's) and r1 (the blended one), cw > 2 (jd_upsample). */
JD_FN void jd_fancy_pair(const uint8_t *r0, const uint8_t *r1, int cx, int cw, int *even,
                                              int *odd) {
  const int l = cx > 0 ? cx - 1 : 0, r = cx + 1 < cw ? cx + 1 : cw - 1;
  const int nc = 3 * JD_LDG(r0 + cx) + JD_LDG(r1 + cx);
  *even = jd_fancy(nc, 3 * JD_LDG(r0 + l) + JD_LDG(r1 + l), 0);
  *odd = jd_fancy(nc, 3 * JD_LDG(r0 + r) + JD_LDG(r1 + r), 1);
}

/* Output row y of a sample: its luma row, its chroma rows (the pixel's, 0,
 * and the blended one, 1) and RGB row. */
typedef struct jd_row {
  const uint8_t *luma, *cb0, *cb1, *cr0, *cr1;
  uint8_t *out;
  int w, cw;
} jd_row;

JD_FN jd_row jd_row_init(const ladle__gpu_jd_desc *s, int y) {
  const int ls = 16 * jd_mcus(s->w), cs = ls / 2, ch = (s->h + 1) / 2;
  const uint8_t *cb = s->planes + (size_t)ls * 16 * jd_mcus(s->h), *cr = cb + (size_t)cs * 8 * jd_mcus(s->h);
  const size_t r0 = (size_t)(y >> 1) * cs, r1 = (size_t)jd_fancy_row(y, ch) * cs;
  jd_row r = {s->planes + (size_t)y * ls, cb + r0, cb + r1, cr + r0, cr + r1, s->out + (size_t)y * (size_t)s->w * 3,
              s->w, (s->w + 1) / 2};
  return r;
}

/* Output pixels 2cx and (within the row) 2cx + 1 of a row. */
JD_FN void jd_output_pair(const jd_row *r, int cx) {
  int b0, b1, r0, r1;
  if (r->cw <= 2) { /* h2v2_upsample */
    b0 = b1 = JD_LDG(r->cb0 + cx), r0 = r1 = JD_LDG(r->cr0 + cx);
  } else {
    jd_fancy_pair(r->cb0, r->cb1, cx, r->cw, &b0, &b1);
    jd_fancy_pair(r->cr0, r->cr1, cx, r->cw, &r0, &r1);
  }
  const uchar2 l = JD_LDG((const uchar2 *)(r->luma + 2 * cx)); /* the luma stride is even: 2-byte aligned */
  uint8_t *o = r->out + (size_t)cx * 6;
  jd_rgb(l.x, b0, r0, o);
  if (2 * cx + 1 < r->w) jd_rgb(l.y, b1, r1, o + 3);
}

/* A block per row (rows strided by the grid), a pixel pair per thread. */
__global__ void __launch_bounds__(JD_OUTPUT_THREADS, JD_OUTPUT_BLOCKS)
    jd_output_kernel(const ladle__gpu_jd_desc *__restrict__ samples) {
  const ladle__gpu_jd_desc s = samples[blockIdx.y];
  if (s.h <= 0 || s.w <= 0) return;
  for (int y = (int)blockIdx.x; y < s.h; y += (int)gridDim.x) {
    const jd_row r = jd_row_init(&s, y);
    for (int cx = (int)threadIdx.x; cx < r.cw; cx += (int)blockDim.x) jd_output_pair(&r, cx);
  }
}

/* The quantizers of tables[0..n) as the codec kernel reads them. */
void jd_pack_tables(jd_entry *packed, const ladle__jd_tables *tables, int n) {
  for (int k = 0; k < n; k++)
    for (int c = 0; c < 2; c++)
      for (int i = 0; i < 64; i++) {
        const ladle__jd_tables *t = &tables[k];
        packed[(k * 2 + c) * 64 + i] = make_uint4(t->qval[c][i], t->recip[c][i], t->corr[c][i], t->shift[c][i]);
      }
}

/* Blocks for `count` work items (MCU pairs, rows), a block each up to 65535. */
unsigned grid_for(int64_t count) { return (unsigned)(count < 1 ? 1 : count > 65535 ? 65535 : count); }

}  // namespace

extern "C" size_t ladle__gpu_jd_param_bytes(int n, int num_tables) {
  return ladle__align16((size_t)n * sizeof(ladle__gpu_jd_desc)) + (size_t)num_tables * JD_TABLE_ENTRIES * sizeof(jd_entry);
}

extern "C" ladle_status ladle__gpu_jpeg_distortion(const ladle__gpu_jd_desc *d, int n, const ladle__jd_tables *tables,
                                                   int num_tables, void *host_params, void *dev_params,
                                                   size_t param_bytes, void *stream) {
  ladle_status st = LADLE_OK;
  cudaStream_t s = ladle__cuda_stream(stream);
  int64_t most_pairs = 1, most_rows = 1;
  const size_t desc_bytes = ladle__align16((size_t)n * sizeof *d);
  jd_entry *packed = (jd_entry *)((char *)host_params + desc_bytes);
  LADLE_CUDA_ENTER();
  LADLE_TRY(ladle__gpu_check_params(n, d, host_params, dev_params, param_bytes,
                                    ladle__gpu_jd_param_bytes(n, num_tables), __func__));
  LADLE_CHECK(tables && num_tables >= 1, LADLE_ERROR_INVALID_ARGUMENT, "no quantization tables");
  for (int i = 0; i < n; i++) {
    LADLE_CHECK(d[i].table >= 0 && d[i].table < num_tables && d[i].h >= 0 && d[i].w >= 0,
                LADLE_ERROR_INVALID_ARGUMENT, "sample %d: bad descriptor", i);
    if (d[i].h == 0 || d[i].w == 0) continue;
    LADLE_CHECK(((uintptr_t)d[i].planes & 7) == 0, LADLE_ERROR_INVALID_ARGUMENT,
                "sample %d: planes not 8-byte aligned", i);
    const int64_t pairs = ((int64_t)jd_mcus(d[i].h) * jd_mcus(d[i].w) + 1) / 2;
    most_pairs = pairs > most_pairs ? pairs : most_pairs;
    most_rows = d[i].h > most_rows ? d[i].h : most_rows;
  }
  memcpy(host_params, d, (size_t)n * sizeof *d);
  jd_pack_tables(packed, tables, num_tables);
  LADLE_CUDA_CHECK(cudaMemcpyAsync(dev_params, host_params, ladle__gpu_jd_param_bytes(n, num_tables),
                                   cudaMemcpyHostToDevice, s));
  (void)cudaGetLastError();
  jd_codec_kernel<<<dim3(grid_for(most_pairs), (unsigned)n), JD_CODEC_THREADS, 0, s>>>(
      (const ladle__gpu_jd_desc *)dev_params, (const jd_entry *)((char *)dev_params + desc_bytes));
  LADLE_CUDA_CHECK_LAUNCH(jd_codec_kernel);
  jd_output_kernel<<<dim3(grid_for(most_rows), (unsigned)n), JD_OUTPUT_THREADS, 0, s>>>(
      (const ladle__gpu_jd_desc *)dev_params);
  LADLE_CUDA_CHECK_LAUNCH(jd_output_kernel);
done:
  return st;
}

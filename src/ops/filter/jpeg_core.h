/* jpeg_compression_distortion's arithmetic, written once for the CUDA kernels
 * (jpeg_distortion_kernels.cu) and the plain-C emulation that proves them
 * equal to the CPU operator (tests/c/ops/filter/jpeg_emulation.h).
 *
 * The CPU operator encodes with libjpeg-turbo (jpeg_set_defaults +
 * jpeg_set_quality(q, TRUE): baseline, 4:2:0, JDCT_ISLOW) and decodes (ISLOW,
 * fancy upsampling). Huffman coding is lossless, so the round trip is fixed by
 * the stages below; each follows the libjpeg-turbo 2.1 file named beside it.
 * Based in part on the work of the Independent JPEG Group (libjpeg, as
 * carried on by libjpeg-turbo; IJG and modified-BSD licences).
 *
 * The image as the codec sees it: MCUs of 16x16 pixels, mw x mh of them; the
 * luma plane 16mw x 16mh, each chroma plane 8mw x 8mh. Samples beyond the
 * image repeat the edge (jcsample.c expand_right_edge, jcprepct.c
 * expand_bottom_edge); blocks beyond ceil(w/8) x ceil(h/8) are computed but
 * never reach the output, as in the decoder.
 *
 * Quantization: libjpeg-turbo multiplies by a reciprocal (jcdctmgr.c
 * compute_reciprocal, 16-bit DCTELEM as in its SIMD builds); the C test checks
 * exhaustively that this equals sign(x) * floor((|x| + d/2) / d) for every
 * divisor of a baseline table and every 16-bit coefficient. */
#ifndef LADLE_OPS_FILTER_JPEG_CORE_H
#define LADLE_OPS_FILTER_JPEG_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "ladle/ladle.h"

#ifdef __CUDACC__
#define JD_FN static __host__ __device__ __forceinline__
#else
#define JD_FN static inline
#endif

/* Per quality: quantizer, reciprocal, correction and shift of entry i
 * (natural order) of the luma ([0]) and chroma ([1]) tables. */
typedef struct ladle__jd_tables {
  uint16_t qval[2][64], recip[2][64], corr[2][64];
  uint8_t shift[2][64];
} ladle__jd_tables;

#ifdef __cplusplus
extern "C" {
#endif
/* Host only (jpeg_distortion.c). The tables jpeg_set_quality(quality, TRUE)
 * gives (jcparam.c), with their reciprocals (jcdctmgr.c); quality in [1, 100]. */
void ladle__jd_tables_init(ladle__jd_tables *t, int quality);
/* The CPU operator's round trip through libjpeg of an h x w RGB image (h, w
 * >= 1) into out; an encoder failure returns LADLE_ERROR_INTERNAL with
 * libjpeg's message in message[JD_MESSAGE_MAX], a decoder one its status
 * (ladle_last_error() names `name`). */
#define JD_MESSAGE_MAX 200
ladle_status ladle__jpeg_roundtrip(const uint8_t *rgb, int h, int w, int quality, const char *name, uint8_t *out,
                                   char *message);
#ifdef __cplusplus
}
#endif

/* The planes of an h x w image: MCU counts and bytes of scratch (luma then
 * Cb then Cr). */
JD_FN int jd_mcus(int pixels) { return (pixels + 15) / 16; }
JD_FN size_t jd_plane_bytes(int h, int w) {
  return (size_t)jd_mcus(h) * (size_t)jd_mcus(w) * 256u * 3u / 2u;
}

JD_FN int jd_min(int a, int b) { return a < b ? a : b; }
JD_FN int jd_clamp(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* jcdctmgr.c compute_reciprocal for divisor d = 8 * quantizer (ISLOW scales
 * its output by 8), DCTELEM of 16 bits. */
JD_FN void jd_reciprocal(unsigned d, uint16_t *recip, uint16_t *corr, uint8_t *shift) {
  int b = 0;
  while ((d >> (b + 1)) != 0) b++; /* floor(log2 d) */
  int r = 16 + b;
  uint32_t fq = (uint32_t)(((uint32_t)1 << r) / d), fr = (uint32_t)(((uint32_t)1 << r) % d);
  unsigned c = d / 2;
  if (fr == 0) { /* a power of two: fq would not fit in 16 bits */
    fq >>= 1;
    r--;
  } else if (fr <= d / 2) {
    c++;
  } else {
    fq++;
  }
  *recip = (uint16_t)fq;
  *corr = (uint16_t)c;
  *shift = (uint8_t)r;
}

/* jcdctmgr.c quantize, then jidctint.c's DEQUANTIZE: the coefficient the
 * decoder multiplies back. */
JD_FN int32_t jd_requant_entry(int32_t x, unsigned qval, unsigned recip, unsigned corr, unsigned shift) {
  const uint32_t a = (uint32_t)(x < 0 ? -x : x) + corr;
  const int32_t q = (int32_t)((a * recip) >> shift);
  return (x < 0 ? -q : q) * (int32_t)qval;
}
JD_FN int32_t jd_requant(int32_t x, const ladle__jd_tables *t, int comp, int i) {
  return jd_requant_entry(x, t->qval[comp][i], t->recip[comp][i], t->corr[comp][i], t->shift[comp][i]);
}

/* RGB -> YCbCr, level-shifted by -128 for the DCT (jccolor.c: FIX(c) =
 * round(c * 65536); Cb and Cr round with 0.5 - epsilon). */
JD_FN int jd_y(const uint8_t *p) { return ((19595 * p[0] + 38470 * p[1] + 7471 * p[2] + 32768) >> 16) - 128; }
JD_FN int jd_cb(int r, int g, int b) { return (-11059 * r - 21709 * g + 32768 * b + (128 << 16) + 32767) >> 16; }
JD_FN int jd_cr(int r, int g, int b) { return (32768 * r - 27439 * g - 5329 * b + (128 << 16) + 32767) >> 16; }

/* Luma sample (y, x) of the padded plane: the edge pixel repeated. */
JD_FN int jd_luma_in(const uint8_t *rgb, int h, int w, int y, int x) {
  return jd_y(rgb + ((size_t)jd_min(y, h - 1) * (size_t)w + (size_t)jd_min(x, w - 1)) * 3);
}

/* Chroma sample (cy, cx) of the padded planes, level-shifted, into cb, cr:
 * jcsample.c h2v2_downsample (bias 1, 2, 1, 2... along the row) of the
 * colour-converted rows, whose right edge is repeated; the chroma rows below
 * the image's last one repeat it (the encoder pads the downsampled rows). */
JD_FN void jd_chroma_in(const uint8_t *rgb, int h, int w, int cy, int cx, int *cb, int *cr) {
  const int r = jd_min(cy, (h + 1) / 2 - 1);
  const int y0 = 2 * r, y1 = jd_min(2 * r + 1, h - 1), x0 = jd_min(2 * cx, w - 1), x1 = jd_min(2 * cx + 1, w - 1);
  const uint8_t *p[4] = {rgb + ((size_t)y0 * (size_t)w + (size_t)x0) * 3, rgb + ((size_t)y0 * (size_t)w + (size_t)x1) * 3,
                         rgb + ((size_t)y1 * (size_t)w + (size_t)x0) * 3, rgb + ((size_t)y1 * (size_t)w + (size_t)x1) * 3};
  int sb = 1 + (cx & 1), sr = sb;
  for (int k = 0; k < 4; k++) {
    sb += jd_cb(p[k][0], p[k][1], p[k][2]);
    sr += jd_cr(p[k][0], p[k][1], p[k][2]);
  }
  *cb = (sb >> 2) - 128;
  *cr = (sr >> 2) - 128;
}

/* The ISLOW constants (jfdctint.c, jidctint.c): FIX(c) = round(c * 8192). */
enum {
  JD_CONST_BITS = 13, JD_PASS1_BITS = 2,
  JD_F0298 = 2446, JD_F0390 = 3196, JD_F0541 = 4433, JD_F0765 = 6270, JD_F0899 = 7373, JD_F1175 = 9633,
  JD_F1501 = 12299, JD_F1847 = 15137, JD_F1961 = 16069, JD_F2053 = 16819, JD_F2562 = 20995, JD_F3072 = 25172
};

JD_FN int32_t jd_descale(int32_t x, int n) { return (x + (1 << (n - 1))) >> n; }

/* One 1-D pass of jfdctint.c jpeg_fdct_islow over d[0], d[step], ... d[7 * step],
 * in place: pass 0 the rows (scaled up by 2^PASS1_BITS), pass 1 the columns. */
JD_FN void jd_fdct_1d(int32_t *d, int step, int pass) {
  const int32_t tmp0 = d[0] + d[7 * step], tmp7 = d[0] - d[7 * step];
  const int32_t tmp1 = d[step] + d[6 * step], tmp6 = d[step] - d[6 * step];
  const int32_t tmp2 = d[2 * step] + d[5 * step], tmp5 = d[2 * step] - d[5 * step];
  const int32_t tmp3 = d[3 * step] + d[4 * step], tmp4 = d[3 * step] - d[4 * step];
  const int32_t tmp10 = tmp0 + tmp3, tmp13 = tmp0 - tmp3, tmp11 = tmp1 + tmp2, tmp12 = tmp1 - tmp2;
  const int odd = pass ? JD_CONST_BITS + JD_PASS1_BITS : JD_CONST_BITS - JD_PASS1_BITS;
  d[0] = pass ? jd_descale(tmp10 + tmp11, JD_PASS1_BITS) : (tmp10 + tmp11) * (1 << JD_PASS1_BITS);
  d[4 * step] = pass ? jd_descale(tmp10 - tmp11, JD_PASS1_BITS) : (tmp10 - tmp11) * (1 << JD_PASS1_BITS);
  int32_t z1 = (tmp12 + tmp13) * JD_F0541;
  d[2 * step] = jd_descale(z1 + tmp13 * JD_F0765, odd);
  d[6 * step] = jd_descale(z1 - tmp12 * JD_F1847, odd);
  z1 = tmp4 + tmp7;
  int32_t z2 = tmp5 + tmp6, z3 = tmp4 + tmp6, z4 = tmp5 + tmp7;
  const int32_t z5 = (z3 + z4) * JD_F1175;
  z1 *= -JD_F0899, z2 *= -JD_F2562, z3 = z3 * -JD_F1961 + z5, z4 = z4 * -JD_F0390 + z5;
  d[7 * step] = jd_descale(tmp4 * JD_F0298 + z1 + z3, odd);
  d[5 * step] = jd_descale(tmp5 * JD_F2053 + z2 + z4, odd);
  d[3 * step] = jd_descale(tmp6 * JD_F3072 + z2 + z3, odd);
  d[step] = jd_descale(tmp7 * JD_F1501 + z1 + z4, odd);
}

/* The final pass's range limit as libjpeg-turbo's x86 SIMD IDCT (the one
 * the CPU operator runs) does it: saturated to [-128, 127], then + 128. Its C
 * IDCT (a build without SIMD, or JSIMD_FORCENONE=1) indexes a table modulo
 * 1024 instead, which differs for values outside [-512, 511]: rare, but
 * reachable at quality 1 (test_range_limit holds such a block). */
JD_FN int32_t jd_range_limit(int32_t v) { return jd_clamp(v, -128, 127) + 128; }

/* One 1-D pass of jidctint.c jpeg_idct_islow over d[0], d[step], ..., in
 * place: pass 0 the columns of dequantized coefficients (result scaled by
 * 2^PASS1_BITS), pass 1 the rows (samples 0..255). The all-zero AC shortcuts
 * of jidctint.c give the same values and are left out. */
JD_FN void jd_idct_1d(int32_t *d, int step, int pass) {
  int32_t z2 = d[2 * step], z3 = d[6 * step];
  int32_t z1 = (z2 + z3) * JD_F0541;
  int32_t tmp2 = z1 - z3 * JD_F1847, tmp3 = z1 + z2 * JD_F0765;
  z2 = d[0], z3 = d[4 * step];
  int32_t tmp0 = (z2 + z3) * (1 << JD_CONST_BITS), tmp1 = (z2 - z3) * (1 << JD_CONST_BITS);
  const int32_t tmp10 = tmp0 + tmp3, tmp13 = tmp0 - tmp3, tmp11 = tmp1 + tmp2, tmp12 = tmp1 - tmp2;
  tmp0 = d[7 * step], tmp1 = d[5 * step], tmp2 = d[3 * step], tmp3 = d[step];
  z1 = tmp0 + tmp3, z2 = tmp1 + tmp2, z3 = tmp0 + tmp2;
  int32_t z4 = tmp1 + tmp3;
  const int32_t z5 = (z3 + z4) * JD_F1175;
  z1 *= -JD_F0899, z2 *= -JD_F2562, z3 = z3 * -JD_F1961 + z5, z4 = z4 * -JD_F0390 + z5;
  tmp0 = tmp0 * JD_F0298 + z1 + z3;
  tmp1 = tmp1 * JD_F2053 + z2 + z4;
  tmp2 = tmp2 * JD_F3072 + z2 + z3;
  tmp3 = tmp3 * JD_F1501 + z1 + z4;
  const int32_t out[8] = {tmp10 + tmp3, tmp11 + tmp2, tmp12 + tmp1, tmp13 + tmp0,
                          tmp13 - tmp0, tmp12 - tmp1, tmp11 - tmp2, tmp10 - tmp3};
  for (int k = 0; k < 8; k++)
    d[k * step] = pass ? jd_range_limit(jd_descale(out[k], JD_CONST_BITS + JD_PASS1_BITS + 3))
                       : jd_descale(out[k], JD_CONST_BITS - JD_PASS1_BITS);
}

/* One 8x8 block through the codec, in place: level-shifted samples in
 * (jd_luma_in, jd_chroma_in), reconstructed samples 0..255 out. The kernels
 * run the same passes with a thread per row or column. */
JD_FN void jd_block(int32_t *b, const ladle__jd_tables *t, int comp) {
  for (int k = 0; k < 8; k++) jd_fdct_1d(b + 8 * k, 1, 0);
  for (int k = 0; k < 8; k++) jd_fdct_1d(b + k, 8, 1);
  for (int i = 0; i < 64; i++) b[i] = jd_requant(b[i], t, comp, i);
  for (int k = 0; k < 8; k++) jd_idct_1d(b + k, 8, 0);
  for (int k = 0; k < 8; k++) jd_idct_1d(b + 8 * k, 1, 1);
}

/* Element i (row-major) of each of the six blocks of MCU (my, mx): luma
 * blocks 0..3 (left to right, top to bottom), Cb 4, Cr 5. */
JD_FN void jd_mcu_load(const uint8_t *rgb, int h, int w, int my, int mx, int i, int32_t (*blk)[64]) {
  for (int b = 0; b < 4; b++) blk[b][i] = jd_luma_in(rgb, h, w, 16 * my + 8 * (b >> 1) + i / 8, 16 * mx + 8 * (b & 1) + i % 8);
  int cb, cr;
  jd_chroma_in(rgb, h, w, 8 * my + i / 8, 8 * mx + i % 8, &cb, &cr);
  blk[4][i] = cb, blk[5][i] = cr;
}

/* Element i of each reconstructed block of MCU (my, mx) into the planes. */
JD_FN void jd_mcu_store(uint8_t *planes, int h, int w, int my, int mx, int i, int32_t (*blk)[64]) {
  const size_t ls = 16 * (size_t)jd_mcus(w), cs = ls / 2;
  uint8_t *cb = planes + ls * 16 * (size_t)jd_mcus(h), *cr = cb + cs * 8 * (size_t)jd_mcus(h);
  for (int b = 0; b < 4; b++)
    planes[(size_t)(16 * my + 8 * (b >> 1) + i / 8) * ls + (size_t)(16 * mx + 8 * (b & 1) + i % 8)] = (uint8_t)blk[b][i];
  const size_t c = (size_t)(8 * my + i / 8) * cs + (size_t)(8 * mx + i % 8);
  cb[c] = (uint8_t)blk[4][i], cr[c] = (uint8_t)blk[5][i];
}

/* YCbCr -> one RGB pixel (jdcolor.c tables: FIX(1.402), FIX(1.772) rounded
 * to integers; G from -FIX(0.34414) Cb - FIX(0.71414) Cr + 0.5, shifted). */
JD_FN void jd_rgb(int y, int cb, int cr, uint8_t *p) {
  cb -= 128, cr -= 128;
  p[0] = (uint8_t)jd_clamp(y + ((91881 * cr + 32768) >> 16), 0, 255);
  p[1] = (uint8_t)jd_clamp(y + ((-22554 * cb - 46802 * cr + 32768) >> 16), 0, 255);
  p[2] = (uint8_t)jd_clamp(y + ((116130 * cb + 32768) >> 16), 0, 255);
}

/* Chroma at output pixel (y, x) from a reconstructed plane c (row stride cs)
 * of ch x cw real samples: jdsample.c h2v2_fancy_upsample (9/16, 3/16, 3/16,
 * 1/16 of the nearest samples, rounding 8 then 7 along the row; the rows
 * above the first and below the last repeat them, jdmainct.c's context
 * pointers, and so do the columns), or h2v2_upsample (replication), which
 * jinit_upsampler picks when cw <= 2. */
/* The fancy sample of an even (odd = 0) or odd output column from the
 * vertically blended (3 * this row + nearer row) nearest and next columns. */
JD_FN int jd_fancy(int near, int far, int odd) { return (3 * near + far + (odd ? 7 : 8)) >> 4; }
/* The chroma row blended with output row y (its nearer neighbour, clamped). */
JD_FN int jd_fancy_row(int y, int ch) { return jd_clamp(y & 1 ? (y >> 1) + 1 : (y >> 1) - 1, 0, ch - 1); }
JD_FN int jd_upsample(const uint8_t *c, int cs, int ch, int cw, int y, int x) {
  const int cy = y >> 1, cx = x >> 1;
  if (cw <= 2) return c[(size_t)cy * cs + cx];
  const int ny = jd_fancy_row(y, ch), nx = jd_clamp(x & 1 ? cx + 1 : cx - 1, 0, cw - 1);
  const uint8_t *r0 = c + (size_t)cy * cs, *r1 = c + (size_t)ny * cs;
  return jd_fancy(3 * r0[cx] + r1[cx], 3 * r0[nx] + r1[nx], x & 1);
}

/* Output pixel (y, x) of an h x w image from its reconstructed planes
 * (jd_plane_bytes, laid out luma, Cb, Cr). */
JD_FN void jd_output_pixel(const uint8_t *planes, int h, int w, int y, int x, uint8_t *p) {
  const int ls = 16 * jd_mcus(w), cs = ls / 2, ch = (h + 1) / 2, cw = (w + 1) / 2;
  const uint8_t *cb = planes + (size_t)ls * 16 * jd_mcus(h), *cr = cb + (size_t)cs * 8 * jd_mcus(h);
  jd_rgb(planes[(size_t)y * ls + x], jd_upsample(cb, cs, ch, cw, y, x), jd_upsample(cr, cs, ch, cw, y, x), p);
}

#endif

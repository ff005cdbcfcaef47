/* The .npy header parser and region copy (io/npy.h). */
#include "io/npy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "io/io_util.h"

/* --- the header's dict literal ------------------------------------------- */

typedef struct cursor {
  const char *p, *end;
} cursor;

static void skip_space(cursor *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static int take(cursor *c, char ch) {
  skip_space(c);
  if (c->p < c->end && *c->p == ch) {
    c->p++;
    return 1;
  }
  return 0;
}

/* A quoted string without escapes into out (at most size-1 characters). */
static int read_string(cursor *c, char *out, size_t size) {
  skip_space(c);
  if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return 0;
  char q = *c->p++;
  size_t n = 0;
  while (c->p < c->end && *c->p != q) {
    if (*c->p == '\\' || n + 1 >= size) return 0;
    out[n++] = *c->p++;
  }
  if (c->p >= c->end) return 0;
  c->p++;
  out[n] = 0;
  return 1;
}

static int read_word(cursor *c, const char *word) {
  skip_space(c);
  size_t n = strlen(word);
  if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return 0;
  c->p += n;
  return 1;
}

/* (d0, d1, ...) with an optional trailing comma; "(n)" is accepted too. */
static ladle_status read_shape(cursor *c, ladle__npy_header *h) {
  if (!take(c, '(')) return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "'shape' is not a tuple");
  h->ndim = 0;
  for (;;) {
    if (take(c, ')')) return LADLE_OK;
    skip_space(c);
    if (c->p >= c->end || *c->p < '0' || *c->p > '9')
      return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "'shape' holds something other than non-negative integers");
    int64_t v = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
      if (v > (INT64_MAX - 9) / 10) return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "a dimension of 'shape' is too large");
      v = v * 10 + (*c->p++ - '0');
    }
    if (c->p < c->end && (*c->p == 'L' || *c->p == 'l')) c->p++; /* Python 2's long */
    if (h->ndim == LADLE_MAX_NDIM)
      return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "'shape' has more than %d dimensions", LADLE_MAX_NDIM);
    h->shape[h->ndim++] = v;
    if (take(c, ')')) return LADLE_OK;
    if (!take(c, ',')) return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "'shape' is not a tuple of integers");
  }
}

static ladle_status parse_descr(const char *d, ladle__npy_header *h) {
  const char *s = d;
  char order = '=';
  if (*s == '<' || *s == '>' || *s == '|' || *s == '=') order = *s++;
  static const struct {
    const char *code;
    ladle_dtype dtype;
    int size;
  } codes[] = {{"b1", LADLE_BOOL, 1},    {"?", LADLE_BOOL, 1},     {"u1", LADLE_UINT8, 1},   {"i1", LADLE_INT8, 1},
               {"u2", LADLE_UINT16, 2},  {"i2", LADLE_INT16, 2},   {"u4", LADLE_UINT32, 4},  {"i4", LADLE_INT32, 4},
               {"u8", LADLE_UINT64, 8},  {"i8", LADLE_INT64, 8},   {"f2", LADLE_FLOAT16, 2}, {"f4", LADLE_FLOAT32, 4},
               {"f8", LADLE_FLOAT64, 8}, {"B", LADLE_UINT8, 1},    {"b", LADLE_INT8, 1}};
  for (size_t k = 0; k < sizeof codes / sizeof codes[0]; k++)
    if (strcmp(s, codes[k].code) == 0) {
      h->dtype = codes[k].dtype;
      h->elem_size = codes[k].size;
      h->swap = order == '>' && h->elem_size > 1;
      return LADLE_OK;
    }
  return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA,
                    "dtype '%s' is not supported (ladle reads bool, int8-64, uint8-64, float16, float32 and float64)",
                    d);
}

ladle_status ladle__npy_parse(const uint8_t *data, size_t size, ladle__npy_header *h, size_t *need) {
  static const uint8_t magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (need) *need = 0;
  memset(h, 0, sizeof *h);
  if (size < 8 || memcmp(data, magic, 6) != 0) {
    if (size < 8 && (size == 0 || memcmp(data, magic, size < 6 ? size : 6) == 0))
      return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "not a .npy file (%zu bytes, shorter than a header)", size);
    return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "not a .npy file (no \\x93NUMPY magic)");
  }
  h->major = data[6];
  h->minor = data[7];
  if (h->major < 1 || h->major > 3 || h->minor != 0)
    return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "unknown .npy format version %d.%d (1.0, 2.0 and 3.0 are read)",
                      h->major, h->minor);
  size_t prefix = h->major == 1 ? 10 : 12;
  if (size < prefix) {
    if (need) *need = prefix;
    return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "the file ends inside the .npy header");
  }
  uint64_t len = h->major == 1 ? (uint64_t)data[8] | (uint64_t)data[9] << 8
                               : (uint64_t)data[8] | (uint64_t)data[9] << 8 | (uint64_t)data[10] << 16 |
                                     (uint64_t)data[11] << 24;
  if (len > LADLE__NPY_MAX_HEADER)
    return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "the .npy header claims %llu bytes (at most %d are accepted)",
                      (unsigned long long)len, LADLE__NPY_MAX_HEADER);
  if (size < prefix + len) {
    if (need) *need = prefix + (size_t)len;
    return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "the file ends inside the .npy header (%llu bytes announced)",
                      (unsigned long long)len);
  }
  h->data_offset = (int64_t)(prefix + len);
  cursor c = {(const char *)data + prefix, (const char *)data + prefix + len};
  int have_descr = 0, have_order = 0, have_shape = 0;
  char key[32], descr[64];
  if (!take(&c, '{')) return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "the .npy header is not a dict literal");
  for (;;) {
    if (take(&c, '}')) break;
    if (!read_string(&c, key, sizeof key) || !take(&c, ':'))
      return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "the .npy header is not a dict literal of quoted keys");
    if (strcmp(key, "descr") == 0) {
      if (have_descr++) return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "the .npy header repeats 'descr'");
      if (!read_string(&c, descr, sizeof descr))
        return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "'descr' is not a dtype string (records are not supported)");
    } else if (strcmp(key, "fortran_order") == 0) {
      if (have_order++) return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "the .npy header repeats 'fortran_order'");
      if (read_word(&c, "True")) h->fortran_order = 1;
      else if (read_word(&c, "False")) h->fortran_order = 0;
      else return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "'fortran_order' is neither True nor False");
    } else if (strcmp(key, "shape") == 0) {
      if (have_shape++) return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "the .npy header repeats 'shape'");
      ladle_status st = read_shape(&c, h);
      if (st != LADLE_OK) return st;
    } else {
      return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "the .npy header has an unknown key '%s'", key);
    }
    if (take(&c, '}')) break;
    if (!take(&c, ',')) return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "the .npy header is not a dict literal");
  }
  skip_space(&c);
  if (c.p != c.end) return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "the .npy header has bytes after its dict");
  if (!have_descr || !have_order || !have_shape)
    return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "the .npy header lacks '%s'",
                      !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
  ladle_status st = parse_descr(descr, h);
  if (st != LADLE_OK) return st;
  /* The product of the nonzero dimensions must fit too: strides are taken
   * of every dimension, even in an empty array. */
  int64_t bytes = h->elem_size;
  int empty = 0;
  for (int d = 0; d < h->ndim; d++) {
    empty |= h->shape[d] == 0;
    if (h->shape[d] && bytes > INT64_MAX / 2 / h->shape[d])
      return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "the .npy shape's byte count overflows");
    if (h->shape[d]) bytes *= h->shape[d];
  }
  h->data_bytes = empty ? 0 : bytes;
  return LADLE_OK;
}

ladle_status ladle__npy_read_header(int fd, const char *path, ladle__npy_header *h) {
  ladle_status st = LADLE_OK;
  uint8_t small[4096], *big = NULL;
  size_t got = 0, need = 0;
  char err[128];
  struct stat sb;
  if (fstat(fd, &sb) != 0)
    return LADLE_FAIL(LADLE_ERROR_IO, "%s: %s", path, ladle__errno_text(errno, err, sizeof err));
  if (ladle__pread_full(fd, small, sizeof small, 0, &got) != 0)
    return LADLE_FAIL(LADLE_ERROR_IO, "%s: %s", path, ladle__errno_text(errno, err, sizeof err));
  st = ladle__npy_parse(small, got, h, &need);
  if (st != LADLE_OK && need > got && got == sizeof small) { /* a long header: read all of it */
    size_t more = 0;
    LADLE_ALLOC(big, need);
    if (ladle__pread_full(fd, big, need, 0, &more) != 0) {
      st = LADLE_FAIL(LADLE_ERROR_IO, "%s: %s", path, ladle__errno_text(errno, err, sizeof err));
      goto done;
    }
    st = ladle__npy_parse(big, more, h, NULL);
  }
  if (st != LADLE_OK) {
    ladle__wrap_error(st, "%s", path);
    goto done;
  }
  LADLE_CHECK((int64_t)sb.st_size - h->data_offset >= h->data_bytes, LADLE_ERROR_CORRUPT_DATA,
              "%s: the .npy file is truncated: its header announces %lld data bytes, it holds %lld", path,
              (long long)h->data_bytes, (long long)((int64_t)sb.st_size - h->data_offset));
done:
  free(big);
  return st;
}

/* --- the region copy ------------------------------------------------------ */

static int slow_axis(const ladle__npy_header *h) { return h->fortran_order ? h->ndim - 1 : 0; }

/* Element strides of the array in the file. */
static void strides_of(const ladle__npy_header *h, int64_t *strides) {
  int64_t s = 1;
  if (h->fortran_order)
    for (int d = 0; d < h->ndim; d++) strides[d] = s, s *= h->shape[d];
  else
    for (int d = h->ndim - 1; d >= 0; d--) strides[d] = s, s *= h->shape[d];
}

void ladle__npy_slab(const ladle__npy_header *h, const int64_t *start, const int64_t *shape, int64_t *offset,
                     int64_t *bytes) {
  int64_t strides[LADLE_MAX_NDIM];
  int64_t es = h->elem_size;
  *offset = h->data_offset;
  *bytes = 0;
  if (h->ndim == 0) {
    *bytes = es;
    return;
  }
  for (int d = 0; d < h->ndim; d++) /* an empty region, or one missing the array, reads nothing */
    if (shape[d] <= 0 || start[d] >= h->shape[d] || start[d] + shape[d] <= 0) return;
  strides_of(h, strides);
  int ax = slow_axis(h);
  int64_t lo = start[ax] < 0 ? 0 : start[ax];
  int64_t hi = start[ax] + shape[ax] > h->shape[ax] ? h->shape[ax] : start[ax] + shape[ax];
  *offset = h->data_offset + lo * strides[ax] * es;
  *bytes = (hi - lo) * strides[ax] * es;
}

typedef struct region {
  const ladle__npy_header *h;
  const int64_t *start, *shape;
  int64_t strides[LADLE_MAX_NDIM], block[LADLE_MAX_NDIM]; /* block[d]: output elements per index of axis d */
  int64_t first; /* the slab's first index along the slow axis */
  size_t es;
  const uint8_t *fill;
} region;

static uint8_t *fill_elems(uint8_t *dst, const uint8_t *fill, size_t es, int64_t count) {
  if (count <= 0) return dst;
  int zero = 1;
  for (size_t b = 0; b < es; b++) zero &= fill[b] == 0;
  if (zero) {
    memset(dst, 0, (size_t)count * es);
    return dst + (size_t)count * es;
  }
  for (int64_t i = 0; i < count; i++, dst += es) memcpy(dst, fill, es);
  return dst;
}

static void copy_elem(uint8_t *dst, const uint8_t *src, size_t es, int swap) {
  if (!swap) {
    memcpy(dst, src, es);
    return;
  }
  for (size_t b = 0; b < es; b++) dst[b] = src[es - 1 - b];
}

static uint8_t *copy_dim(const region *r, int d, uint8_t *dst, const uint8_t *src) {
  const ladle__npy_header *h = r->h;
  int64_t ext = h->shape[d], n = r->shape[d];
  int64_t lo = r->start[d] < 0 ? -r->start[d] : 0; /* output indices [lo, hi) are inside */
  int64_t hi = ext - r->start[d] < n ? ext - r->start[d] : n;
  if (hi < lo) hi = lo = n;
  if (lo > n) lo = hi = n;
  int64_t base = d == slow_axis(h) ? r->first : 0;
  dst = fill_elems(dst, r->fill, r->es, lo * r->block[d]);
  if (d == h->ndim - 1 && r->strides[d] == 1 && !h->swap) {
    size_t bytes = (size_t)(hi - lo) * r->es;
    if (bytes) memcpy(dst, src + (size_t)(r->start[d] + lo - base) * r->es, bytes);
    dst += bytes;
  } else {
    for (int64_t o = lo; o < hi; o++) {
      const uint8_t *s = src + (size_t)((r->start[d] + o - base) * r->strides[d]) * r->es;
      if (d == h->ndim - 1) {
        copy_elem(dst, s, r->es, h->swap);
        dst += r->es;
      } else {
        dst = copy_dim(r, d + 1, dst, s);
      }
    }
  }
  return fill_elems(dst, r->fill, r->es, (n - hi) * r->block[d]);
}

void ladle__npy_copy_region(uint8_t *dst, const uint8_t *src, const ladle__npy_header *h, const int64_t *start,
                            const int64_t *shape, const void *fill) {
  region r = {.h = h, .start = start, .shape = shape, .es = (size_t)h->elem_size, .fill = fill};
  if (h->ndim == 0) {
    copy_elem(dst, src, r.es, h->swap);
    return;
  }
  for (int d = 0; d < h->ndim; d++)
    if (shape[d] <= 0) return;
  strides_of(h, r.strides);
  int64_t b = 1;
  for (int d = h->ndim - 1; d >= 0; d--) r.block[d] = b, b *= shape[d];
  int ax = slow_axis(h);
  r.first = start[ax] < 0 ? 0 : start[ax];
  int outside = 0;
  for (int d = 0; d < h->ndim; d++) outside |= start[d] >= h->shape[d] || start[d] + shape[d] <= 0;
  if (outside) {
    fill_elems(dst, r.fill, r.es, b);
    return;
  }
  copy_dim(&r, 0, dst, src);
}

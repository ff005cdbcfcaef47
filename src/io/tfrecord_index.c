/* TFRecord framing, the record index and tf.train.Example decoding (see
 * tfrecord_index.h): one pass over each file's record headers at build,
 * pread and CRC check of a record later. */
#include "io/tfrecord_index.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "io/io_util.h"

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

#define HEADER 12 /* uint64 length + uint32 masked CRC of it */
#define FOOTER 4  /* uint32 masked CRC of the data */

/* ---- CRC32C ------------------------------------------------------------ */

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int b = 0; b < 8; b++) c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1)));
    crc_table[i] = c;
  }
}

uint32_t ladle__tfrecord_crc32c(uint32_t crc, const void *data, size_t size) {
  pthread_once(&crc_once, crc_init);
  const uint8_t *p = data;
  crc = ~crc;
  for (size_t i = 0; i < size; i++) crc = crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

uint32_t ladle__tfrecord_mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

static uint64_t load_le(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

/* ---- the index --------------------------------------------------------- */

struct ladle__tfrecord_index {
  char **paths;
  int num_paths;
  ladle__tfrecord_record *records;
  int64_t count, cap;
};

static ladle_status add_record(ladle__tfrecord_index *x, int file, int64_t offset, int64_t length) {
  if (x->count == x->cap) {
    int64_t cap = x->cap ? x->cap * 2 : 1024;
    ladle__tfrecord_record *r = realloc(x->records, (size_t)cap * sizeof *r);
    if (!r) return LADLE_FAIL(LADLE_ERROR_OUT_OF_MEMORY, "cannot grow the record index to %lld records",
                              (long long)cap);
    x->records = r;
    x->cap = cap;
  }
  x->records[x->count++] = (ladle__tfrecord_record){offset, length, file};
  return LADLE_OK;
}

static ladle_status scan_file(ladle__tfrecord_index *x, int file) {
  ladle_status st = LADLE_OK;
  const char *path = x->paths[file];
  char err[128];
  struct stat sb;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  LADLE_CHECK(fd >= 0, LADLE_ERROR_IO, "%s: %s", path, ladle__errno_text(errno, err, sizeof err));
  LADLE_CHECK(fstat(fd, &sb) == 0, LADLE_ERROR_IO, "%s: %s", path, ladle__errno_text(errno, err, sizeof err));
  LADLE_CHECK(S_ISREG(sb.st_mode), LADLE_ERROR_IO, "%s is not a regular file", path);
  int64_t size = (int64_t)sb.st_size, offset = 0;
  while (offset < size) {
    uint8_t h[HEADER];
    size_t got = 0;
    LADLE_CHECK(ladle__pread_full(fd, h, HEADER, offset, &got) == 0, LADLE_ERROR_IO,
                "%s: reading the record header at byte %lld failed: %s", path, (long long)offset,
                ladle__errno_text(errno, err, sizeof err));
    LADLE_CHECK(got == HEADER, LADLE_ERROR_CORRUPT_DATA,
                "%s: truncated record header at byte %lld (%zu of %d bytes before end of file)", path,
                (long long)offset, got, HEADER);
    uint64_t length = load_le(h, 8);
    uint32_t want = (uint32_t)load_le(h + 8, 4), have = ladle__tfrecord_mask(ladle__tfrecord_crc32c(0, h, 8));
    LADLE_CHECK(want == have, LADLE_ERROR_CORRUPT_DATA,
                "%s: the record at byte %lld has a bad length CRC (stored 0x%08x, computed 0x%08x): not a "
                "TFRecord file, or corrupt",
                path, (long long)offset, want, have);
    int64_t left = size - offset - HEADER - FOOTER;
    LADLE_CHECK(left >= 0 && length <= (uint64_t)left, LADLE_ERROR_CORRUPT_DATA,
                "%s: truncated record at byte %lld: it says %llu bytes of data, the file has %lld after its "
                "header",
                path, (long long)offset, (unsigned long long)length, (long long)(size - offset - HEADER));
    LADLE_TRY(add_record(x, file, offset, (int64_t)length));
    offset += HEADER + (int64_t)length + FOOTER;
  }
done:
  if (fd >= 0) close(fd);
  return st;
}

ladle_status ladle__tfrecord_index_build(const char *const *paths, int num_paths, ladle__tfrecord_index **out) {
  ladle_status st = LADLE_OK;
  ladle__tfrecord_index *x = NULL;
  LADLE_CHECK(out && paths && num_paths >= 1, LADLE_ERROR_INVALID_ARGUMENT, "no TFRecord files given");
  *out = NULL;
  LADLE_ALLOC(x, 1);
  LADLE_ALLOC(x->paths, num_paths);
  x->num_paths = num_paths;
  for (int f = 0; f < num_paths; f++) {
    LADLE_CHECK(paths[f], LADLE_ERROR_INVALID_ARGUMENT, "path %d is NULL", f);
    x->paths[f] = strdup(paths[f]);
    LADLE_CHECK(x->paths[f], LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  for (int f = 0; f < num_paths; f++) LADLE_TRY(scan_file(x, f));
  LADLE_CHECK(x->count > 0, LADLE_ERROR_INVALID_ARGUMENT, "the %d TFRecord file(s) (first: %s) hold no record",
              num_paths, paths[0]);
  LADLE_CHECK(x->count <= UINT32_MAX, LADLE_ERROR_LIMIT, "too many records (%lld)", (long long)x->count);
  *out = x;
  x = NULL;
done:
  ladle__tfrecord_index_destroy(x);
  return st;
}

void ladle__tfrecord_index_destroy(ladle__tfrecord_index *x) {
  if (!x) return;
  if (x->paths)
    for (int f = 0; f < x->num_paths; f++) free(x->paths[f]);
  free(x->paths);
  free(x->records);
  free(x);
}

int64_t ladle__tfrecord_index_size(const ladle__tfrecord_index *x) { return x->count; }

ladle__tfrecord_record ladle__tfrecord_index_record(const ladle__tfrecord_index *x, int64_t i) {
  return x->records[i];
}

const char *ladle__tfrecord_index_path(const ladle__tfrecord_index *x, int64_t i) {
  return x->paths[x->records[i].file];
}

ladle_status ladle__tfrecord_index_read(const ladle__tfrecord_index *x, int64_t i, uint8_t **buf, size_t *cap,
                                        size_t *length) {
  ladle_status st = LADLE_OK;
  char err[128];
  int fd = -1;
  LADLE_CHECK(x && buf && cap && length, LADLE_ERROR_INVALID_ARGUMENT, "NULL argument");
  LADLE_CHECK(i >= 0 && i < x->count, LADLE_ERROR_INVALID_ARGUMENT, "record %lld is out of range (%lld records)",
              (long long)i, (long long)x->count);
  const ladle__tfrecord_record r = x->records[i];
  const char *path = x->paths[r.file];
  LADLE_CHECK((uint64_t)r.length <= SIZE_MAX - FOOTER, LADLE_ERROR_LIMIT, "%s: the record at byte %lld is too large",
              path, (long long)r.offset);
  size_t need = (size_t)r.length + FOOTER;
  if (*cap < need) {
    uint8_t *b = realloc(*buf, need);
    LADLE_CHECK(b, LADLE_ERROR_OUT_OF_MEMORY, "%s: cannot allocate %zu bytes for the record at byte %lld", path,
                need, (long long)r.offset);
    *buf = b;
    *cap = need;
  }
  fd = open(path, O_RDONLY | O_CLOEXEC);
  LADLE_CHECK(fd >= 0, LADLE_ERROR_IO, "%s: %s (reading the record at byte %lld)", path,
              ladle__errno_text(errno, err, sizeof err), (long long)r.offset);
  size_t got = 0;
  LADLE_CHECK(ladle__pread_full(fd, *buf, need, r.offset + HEADER, &got) == 0, LADLE_ERROR_IO,
              "%s: reading the record at byte %lld failed: %s", path, (long long)r.offset,
              ladle__errno_text(errno, err, sizeof err));
  LADLE_CHECK(got == need, LADLE_ERROR_IO,
              "%s changed since it was indexed: the record at byte %lld should have %zu bytes after its header, "
              "the file ended after %zu",
              path, (long long)r.offset, need, got);
  uint32_t want = (uint32_t)load_le(*buf + r.length, 4);
  uint32_t have = ladle__tfrecord_mask(ladle__tfrecord_crc32c(0, *buf, (size_t)r.length));
  LADLE_CHECK(want == have, LADLE_ERROR_CORRUPT_DATA,
              "%s: the record at byte %lld has a bad data CRC (stored 0x%08x, computed 0x%08x)", path,
              (long long)r.offset, want, have);
  *length = (size_t)r.length;
done:
  if (fd >= 0) close(fd);
  return st;
}

/* ---- protobuf wire format ---------------------------------------------- */

/* A cursor over a message's bytes. */
typedef struct pb {
  const uint8_t *p, *end;
} pb;

/* One field: its number, wire type, and payload (a varint's value; the
 * bytes of a length-delimited, fixed32 or fixed64 field). */
typedef struct pb_field {
  uint32_t number;
  int wire;
  uint64_t varint;
  const uint8_t *data;
  size_t size;
} pb_field;

enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_LEN = 2, WIRE_FIXED32 = 5 };

/* -1: truncated or longer than 10 bytes. */
static int pb_varint(pb *r, uint64_t *out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (r->p >= r->end) return -1;
    uint8_t b = *r->p++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return 0;
    }
  }
  return -1;
}

/* The next field of a message: 1, or 0 at its end; fails on malformed data. */
static ladle_status pb_next(pb *r, pb_field *f, int *more) {
  uint64_t tag;
  *more = 0;
  if (r->p >= r->end) return LADLE_OK;
  if (pb_varint(r, &tag) != 0) return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "malformed protobuf: truncated tag");
  if (tag >> 3 == 0 || tag >> 3 > 0x1fffffff)
    return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "malformed protobuf: field number %llu",
                      (unsigned long long)(tag >> 3));
  f->number = (uint32_t)(tag >> 3);
  f->wire = (int)(tag & 7);
  f->varint = 0;
  f->data = NULL;
  f->size = 0;
  size_t left = (size_t)(r->end - r->p);
  switch (f->wire) {
  case WIRE_VARINT:
    if (pb_varint(r, &f->varint) != 0)
      return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "malformed protobuf: truncated varint of field %u", f->number);
    break;
  case WIRE_FIXED64:
  case WIRE_FIXED32: {
    size_t n = f->wire == WIRE_FIXED64 ? 8 : 4;
    if (left < n)
      return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "malformed protobuf: truncated fixed%zu field %u", n * 8,
                        f->number);
    f->data = r->p;
    f->size = n;
    r->p += n;
    break;
  }
  case WIRE_LEN: {
    uint64_t n;
    if (pb_varint(r, &n) != 0)
      return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "malformed protobuf: truncated length of field %u", f->number);
    left = (size_t)(r->end - r->p);
    if (n > left)
      return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA,
                        "malformed protobuf: field %u says %llu bytes, %zu are left in its message", f->number,
                        (unsigned long long)n, left);
    f->data = r->p;
    f->size = (size_t)n;
    r->p += n;
    break;
  }
  default:
    return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "malformed protobuf: wire type %d of field %u is not supported",
                      f->wire, f->number);
  }
  *more = 1;
  return LADLE_OK;
}

/* ---- tf.train.Example -------------------------------------------------- */

/* One map entry of Features: the key and the Feature, last occurrence of
 * each winning (protobuf merge semantics). */
static ladle_status find_in_entry(const uint8_t *d, size_t n, const char *const *names, int num_names,
                                  ladle__tfrecord_feature *out) {
  ladle_status st = LADLE_OK;
  pb r = {d, d + n};
  pb_field f;
  int more;
  const uint8_t *key = NULL, *value = NULL;
  size_t key_size = 0, value_size = 0;
  for (;;) {
    LADLE_TRY(pb_next(&r, &f, &more));
    if (!more) break;
    if (f.wire != WIRE_LEN) continue;
    if (f.number == 1) key = f.data, key_size = f.size;
    else if (f.number == 2) value = f.data, value_size = f.size;
  }
  if (!key) key = d; /* an entry without a key has the empty key */
  for (int k = 0; k < num_names; k++)
    if (strlen(names[k]) == key_size && memcmp(names[k], key, key_size) == 0)
      /* a missing value is an empty Feature; keep a non-NULL pointer so that it counts as present */
      out[k] = (ladle__tfrecord_feature){value ? value : d, value ? value_size : 0};
done:
  return st;
}

ladle_status ladle__tfrecord_example_find(const uint8_t *example, size_t size, const char *const *names,
                                          int num_names, ladle__tfrecord_feature *out) {
  ladle_status st = LADLE_OK;
  pb ex = {example, example ? example + size : NULL};
  pb_field f, g;
  int more;
  for (int k = 0; k < num_names; k++) out[k] = (ladle__tfrecord_feature){NULL, 0};
  for (;;) {
    LADLE_TRY(pb_next(&ex, &f, &more));
    if (!more) break;
    if (f.number != 1 || f.wire != WIRE_LEN) continue;
    pb features = {f.data, f.data + f.size}; /* several Features messages merge */
    for (;;) {
      LADLE_TRY(pb_next(&features, &g, &more));
      if (!more) break;
      if (g.number == 1 && g.wire == WIRE_LEN) LADLE_TRY(find_in_entry(g.data, g.size, names, num_names, out));
    }
  }
done:
  return st;
}

/* Appends a list message's values (field 1) to the count and, with dst, to
 * dst at *bytes. */
static ladle_status decode_list(const uint8_t *d, size_t n, ladle__tfrecord_kind kind, int64_t *count,
                                int64_t *bytes, uint8_t *dst) {
  ladle_status st = LADLE_OK;
  pb r = {d, d + n};
  pb_field f;
  int more;
  for (;;) {
    LADLE_TRY(pb_next(&r, &f, &more));
    if (!more) break;
    if (f.number != 1) continue;
    if (kind == LADLE__TFRECORD_BYTES) {
      if (f.wire != WIRE_LEN) continue;
      if (dst && f.size) memcpy(dst + *bytes, f.data, f.size);
      *count += 1;
      *bytes += (int64_t)f.size;
    } else if (kind == LADLE__TFRECORD_FLOAT) {
      if (f.wire != WIRE_FIXED32 && f.wire != WIRE_LEN) continue;
      LADLE_CHECK(f.size % 4 == 0, LADLE_ERROR_CORRUPT_DATA,
                  "malformed protobuf: a packed float list of %zu bytes (not a multiple of 4)", f.size);
      for (size_t i = 0; i < f.size; i += 4) {
        if (dst) {
          uint32_t bits = (uint32_t)load_le(f.data + i, 4);
          float v;
          memcpy(&v, &bits, 4);
          memcpy(dst + *bytes, &v, 4);
        }
        *count += 1;
        *bytes += 4;
      }
    } else {
      if (f.wire != WIRE_VARINT && f.wire != WIRE_LEN) continue;
      pb packed = {f.data, f.data ? f.data + f.size : NULL}; /* a varint field has no data */
      uint64_t v = f.varint;
      while (f.wire == WIRE_VARINT || packed.p < packed.end) {
        LADLE_CHECK(f.wire == WIRE_VARINT || pb_varint(&packed, &v) == 0, LADLE_ERROR_CORRUPT_DATA,
                    "malformed protobuf: truncated varint in a packed int64 list");
        if (dst) {
          int64_t s = (int64_t)v; /* int64 is two's complement on the wire */
          memcpy(dst + *bytes, &s, 8);
        }
        *count += 1;
        *bytes += 8;
        if (f.wire == WIRE_VARINT) break;
      }
    }
  }
done:
  return st;
}

ladle_status ladle__tfrecord_feature_decode(ladle__tfrecord_feature feat, ladle__tfrecord_kind *kind, int64_t *count,
                                            int64_t *bytes, void *dst) {
  ladle_status st = LADLE_OK;
  pb_field f;
  int more;
  const uint8_t *from = feat.data; /* where the last oneof member's first occurrence starts */
  *kind = LADLE__TFRECORD_NONE;
  *count = *bytes = 0;
  if (!feat.data) return LADLE_OK;
  pb r = {feat.data, feat.data + feat.size};
  /* First pass: the kind and the sizes, written nowhere (an earlier, replaced
   * member may be larger than dst). */
  for (;;) {
    const uint8_t *at = r.p;
    LADLE_TRY(pb_next(&r, &f, &more));
    if (!more) break;
    if (f.number < 1 || f.number > 3 || f.wire != WIRE_LEN) continue;
    if ((ladle__tfrecord_kind)f.number != *kind) { /* another oneof member replaces the earlier one */
      *kind = (ladle__tfrecord_kind)f.number;
      *count = *bytes = 0;
      from = at;
    }
    LADLE_TRY(decode_list(f.data, f.size, *kind, count, bytes, NULL));
  }
  if (dst && *count) { /* second pass: the values, from the last member's start */
    int64_t n = 0, b = 0;
    r = (pb){from, feat.data + feat.size};
    for (;;) {
      LADLE_TRY(pb_next(&r, &f, &more));
      if (!more) break;
      if ((ladle__tfrecord_kind)f.number == *kind && f.wire == WIRE_LEN)
        LADLE_TRY(decode_list(f.data, f.size, *kind, &n, &b, dst));
    }
  }
done:
  return st;
}

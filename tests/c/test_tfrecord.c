/* Tests of src/io/tfrecord_index: CRC32C, record framing and indexing,
 * length/data CRC and truncation errors, and tf.train.Example decoding
 * (packed and unpacked lists, oneof replacement, repeated keys, unknown
 * fields, malformed wire data) against records written by a small encoder. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "io/tfrecord_index.h"
#include "test.h"

/* ---- a byte buffer and a protobuf encoder ------------------------------- */

typedef struct buf {
  uint8_t *p;
  size_t len, cap;
} buf;

static void put(buf *b, const void *d, size_t n) {
  if (b->len + n > b->cap) {
    b->cap = (b->len + n) * 2 + 64;
    b->p = realloc(b->p, b->cap);
    if (!b->p) exit(2);
  }
  if (n) memcpy(b->p + b->len, d, n);
  b->len += n;
}

static void varint(buf *b, uint64_t v) {
  do {
    uint8_t c = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) c |= 0x80;
    put(b, &c, 1);
  } while (v);
}

static void tag(buf *b, unsigned field, int wire) { varint(b, (uint64_t)field << 3 | (unsigned)wire); }

static void lendelim(buf *b, unsigned field, const void *d, size_t n) {
  tag(b, field, 2);
  varint(b, n);
  put(b, d, n);
}

static void le(buf *b, uint64_t v, int n) {
  for (int i = 0; i < n; i++) {
    uint8_t c = (uint8_t)(v >> (8 * i));
    put(b, &c, 1);
  }
}

/* Appends map entry {key, Feature} to a Features message. */
static void entry(buf *features, const char *key, const buf *feature) {
  buf e = {0};
  lendelim(&e, 1, key, strlen(key));
  lendelim(&e, 2, feature->p, feature->len);
  lendelim(features, 1, e.p, e.len);
  free(e.p);
}

static void feature_bytes(buf *f, const char *const *values, int n) {
  buf l = {0};
  for (int i = 0; i < n; i++) lendelim(&l, 1, values[i], strlen(values[i]));
  lendelim(f, 1, l.p ? l.p : (const uint8_t *)"", l.len);
  free(l.p);
}

static void feature_int64(buf *f, const int64_t *v, int n, int packed) {
  buf l = {0}, pk = {0};
  for (int i = 0; i < n; i++) {
    if (packed) varint(&pk, (uint64_t)v[i]);
    else tag(&l, 1, 0), varint(&l, (uint64_t)v[i]);
  }
  if (packed) lendelim(&l, 1, pk.p, pk.len);
  lendelim(f, 3, l.p, l.len);
  free(l.p);
  free(pk.p);
}

static void feature_float(buf *f, const float *v, int n, int packed) {
  buf l = {0}, pk = {0};
  for (int i = 0; i < n; i++) {
    uint32_t bits;
    memcpy(&bits, &v[i], 4);
    if (packed) le(&pk, bits, 4);
    else tag(&l, 1, 5), le(&l, bits, 4);
  }
  if (packed) lendelim(&l, 1, pk.p, pk.len);
  lendelim(f, 2, l.p, l.len);
  free(l.p);
  free(pk.p);
}

/* Example{features = 1: Features} */
static void example(buf *ex, const buf *features) {
  lendelim(ex, 1, features->p, features->len);
}

static void record(buf *file, const buf *data) {
  uint8_t h[8];
  for (int i = 0; i < 8; i++) h[i] = (uint8_t)((uint64_t)data->len >> (8 * i));
  put(file, h, 8);
  le(file, ladle__tfrecord_mask(ladle__tfrecord_crc32c(0, h, 8)), 4);
  put(file, data->p, data->len);
  le(file, ladle__tfrecord_mask(ladle__tfrecord_crc32c(0, data->p, data->len)), 4);
}

static char dir[64];

static const char *write_file(const char *name, const void *d, size_t n) {
  static char path[8][128];
  static int next;
  char *p = path[next++ % 8];
  snprintf(p, 128, "%s/%s", dir, name);
  FILE *f = fopen(p, "wb");
  if (!f || (n && fwrite(d, 1, n, f) != n) || fclose(f)) exit(2);
  return p;
}

/* ---- tests -------------------------------------------------------------- */

static void test_crc32c(void) {
  CHECK(ladle__tfrecord_crc32c(0, "123456789", 9) == 0xe3069283u); /* the standard check value */
  CHECK(ladle__tfrecord_crc32c(0, "", 0) == 0);
  /* incremental equals one-shot */
  CHECK(ladle__tfrecord_crc32c(ladle__tfrecord_crc32c(0, "1234", 4), "56789", 5) == 0xe3069283u);
  uint8_t zeros[32] = {0};
  CHECK(ladle__tfrecord_crc32c(0, zeros, 32) == 0x8a9136aau); /* RFC 3720 B.4 */
  CHECK(ladle__tfrecord_mask(0) == 0xa282ead8u);
  CHECK(ladle__tfrecord_mask(0x80000000u) == 0xa282ead8u + 0x10000u);
}

/* Three Examples: a full one (packed), one with unpacked lists and an absent
 * feature, and an empty record. */
static buf three_records(int64_t *offsets) {
  buf file = {0};
  const char *img[] = {"JPEGDATA\0x"};
  const int64_t ints[] = {7, -1, INT64_MIN, INT64_MAX, 0};
  const float floats[] = {1.5f, -0.25f, 3.0e38f};
  for (int r = 0; r < 3; r++) {
    buf fs = {0}, ex = {0}, f1 = {0}, f2 = {0}, f3 = {0};
    if (r < 2) {
      feature_int64(&f2, ints, 5, r == 0);
      feature_float(&f3, floats, 3, r == 0);
      if (r == 0) {
        feature_bytes(&f1, img, 1);
        entry(&fs, "image", &f1);
      }
      entry(&fs, "label", &f2);
      entry(&fs, "box", &f3);
      example(&ex, &fs);
    }
    offsets[r] = (int64_t)file.len;
    record(&file, &ex);
    free(fs.p), free(ex.p), free(f1.p), free(f2.p), free(f3.p);
  }
  return file;
}

static void test_index_and_decode(void) {
  int64_t offsets[3];
  buf file = three_records(offsets);
  const char *paths[2] = {write_file("a.tfrecord", file.p, file.len), write_file("b.tfrecord", file.p, file.len)};
  ladle__tfrecord_index *x = NULL;
  CHECK_OK(ladle__tfrecord_index_build(paths, 2, &x));
  if (!x) return;
  CHECK(ladle__tfrecord_index_size(x) == 6);
  for (int i = 0; i < 6; i++) {
    ladle__tfrecord_record r = ladle__tfrecord_index_record(x, i);
    CHECK(r.file == i / 3 && r.offset == offsets[i % 3]);
    CHECK(strcmp(ladle__tfrecord_index_path(x, i), paths[i / 3]) == 0);
  }
  uint8_t *b = NULL;
  size_t cap = 0, len = 0;
  const char *names[] = {"image", "label", "box", "nope"};
  ladle__tfrecord_feature f[4];
  ladle__tfrecord_kind kind;
  int64_t count, bytes;
  for (int i = 0; i < 6; i++) {
    CHECK_OK(ladle__tfrecord_index_read(x, i, &b, &cap, &len));
    CHECK_OK(ladle__tfrecord_example_find(b, len, names, 4, f));
    CHECK(f[3].data == NULL);
    if (i % 3 == 2) {
      CHECK(len == 0 && !f[0].data && !f[1].data && !f[2].data);
      continue;
    }
    CHECK((f[0].data != NULL) == (i % 3 == 0));
    if (f[0].data) {
      char out[16];
      CHECK_OK(ladle__tfrecord_feature_decode(f[0], &kind, &count, &bytes, out));
      CHECK(kind == LADLE__TFRECORD_BYTES && count == 1 && bytes == 8 && memcmp(out, "JPEGDATA", 8) == 0);
    }
    int64_t iv[5];
    CHECK_OK(ladle__tfrecord_feature_decode(f[1], &kind, &count, &bytes, iv));
    CHECK(kind == LADLE__TFRECORD_INT64 && count == 5 && bytes == 40);
    CHECK(iv[0] == 7 && iv[1] == -1 && iv[2] == INT64_MIN && iv[3] == INT64_MAX && iv[4] == 0);
    float fv[3];
    CHECK_OK(ladle__tfrecord_feature_decode(f[2], &kind, &count, &bytes, fv));
    CHECK(kind == LADLE__TFRECORD_FLOAT && count == 3 && bytes == 12);
    CHECK(fv[0] == 1.5f && fv[1] == -0.25f && fv[2] == 3.0e38f);
  }
  free(b);
  ladle__tfrecord_index_destroy(x);
  free(file.p);
}

/* Protobuf rules: repeated key (last wins), oneof replacement, list
 * occurrences concatenating, unknown fields of every wire type skipped,
 * several Features messages merging, an empty Feature. */
static void test_protobuf_rules(void) {
  buf fs = {0}, ex = {0}, a = {0}, b = {0}, c = {0}, e = {0};
  const int64_t one[] = {1}, two[] = {2, 3};
  const char *s[] = {"xy", "", "z"};
  feature_int64(&a, one, 1, 1);
  entry(&fs, "k", &a);
  /* k again: bytes, then int64 twice (replaces bytes; the two lists concatenate) */
  feature_bytes(&b, s, 3);
  feature_int64(&b, two, 2, 0);
  feature_int64(&b, two, 2, 1);
  tag(&b, 9, 0), varint(&b, 300);        /* unknown varint */
  tag(&b, 10, 1), le(&b, 0, 8);          /* unknown fixed64 */
  tag(&b, 11, 5), le(&b, 0, 4);          /* unknown fixed32 */
  tag(&b, 2, 0), varint(&b, 5);          /* float_list with a wrong wire type: skipped */
  entry(&fs, "k", &b);
  feature_bytes(&c, s, 3);
  tag(&ex, 7, 2), varint(&ex, 1), varint(&ex, 0); /* unknown field in Example */
  example(&ex, &fs);
  buf fs2 = {0};
  entry(&fs2, "s", &c);
  entry(&fs2, "empty", &e);
  example(&ex, &fs2); /* a second Features message merges */
  const char *names[] = {"k", "s", "empty"};
  ladle__tfrecord_feature f[3];
  ladle__tfrecord_kind kind;
  int64_t count, bytes;
  CHECK_OK(ladle__tfrecord_example_find(ex.p, ex.len, names, 3, f));
  int64_t iv[4] = {0};
  CHECK_OK(ladle__tfrecord_feature_decode(f[0], &kind, &count, &bytes, iv));
  CHECK(kind == LADLE__TFRECORD_INT64 && count == 4 && bytes == 32);
  CHECK(iv[0] == 2 && iv[1] == 3 && iv[2] == 2 && iv[3] == 3);
  char sv[4] = {0};
  CHECK_OK(ladle__tfrecord_feature_decode(f[1], &kind, &count, &bytes, sv));
  CHECK(kind == LADLE__TFRECORD_BYTES && count == 3 && bytes == 3 && memcmp(sv, "xyz", 3) == 0);
  CHECK(f[2].data != NULL);
  CHECK_OK(ladle__tfrecord_feature_decode(f[2], &kind, &count, &bytes, NULL));
  CHECK(kind == LADLE__TFRECORD_NONE && count == 0 && bytes == 0);
  free(fs.p), free(fs2.p), free(ex.p), free(a.p), free(b.p), free(c.p);
}

static void test_malformed_protobuf(void) {
  const char *names[] = {"a"};
  ladle__tfrecord_feature f[1];
  ladle__tfrecord_kind kind;
  int64_t count, bytes;
  const uint8_t trunc_len[] = {0x0a, 0x05, 1, 2};            /* says 5 bytes, 2 left */
  const uint8_t trunc_varint[] = {0x08, 0x80};                /* varint without its end */
  const uint8_t group[] = {0x0b};                             /* field 1, wire type 3 */
  const uint8_t field0[] = {0x02, 0x00};                      /* field number 0 */
  const uint8_t long_varint[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  struct { const uint8_t *d; size_t n; const char *says; } bad[] = {
      {trunc_len, sizeof trunc_len, "says 5 bytes"},      {trunc_varint, sizeof trunc_varint, "truncated varint"},
      {group, sizeof group, "wire type 3"},               {field0, sizeof field0, "field number 0"},
      {long_varint, sizeof long_varint, "truncated varint"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECK(ladle__tfrecord_example_find(bad[i].d, bad[i].n, names, 1, f) == LADLE_ERROR_CORRUPT_DATA);
    CHECK(strstr(ladle_last_error(), bad[i].says) != NULL);
    CHECK(ladle__tfrecord_feature_decode((ladle__tfrecord_feature){bad[i].d, bad[i].n}, &kind, &count, &bytes,
                                         NULL) == LADLE_ERROR_CORRUPT_DATA);
  }
  /* a packed float list of 5 bytes; a packed int64 list ending inside a varint */
  const uint8_t badfloat[] = {0x12, 0x07, 0x0a, 0x05, 0, 0, 0, 0, 0};
  const uint8_t badint[] = {0x1a, 0x04, 0x0a, 0x02, 0x01, 0x80};
  CHECK(ladle__tfrecord_feature_decode((ladle__tfrecord_feature){badfloat, sizeof badfloat}, &kind, &count, &bytes,
                                       NULL) == LADLE_ERROR_CORRUPT_DATA);
  CHECK(strstr(ladle_last_error(), "multiple of 4") != NULL);
  CHECK(ladle__tfrecord_feature_decode((ladle__tfrecord_feature){badint, sizeof badint}, &kind, &count, &bytes,
                                       NULL) == LADLE_ERROR_CORRUPT_DATA);
}

/* Random mutations of a valid Example: decoding either succeeds with counts
 * that fit the record or fails cleanly (ASan checks the reads). */
static void test_mutations(void) {
  int64_t offsets[3];
  buf file = three_records(offsets);
  const uint8_t *ex0 = file.p + 12;
  size_t n = (size_t)(offsets[1] - 16);
  uint8_t *m = malloc(n);
  uint64_t state = 12345;
  const char *names[] = {"image", "label", "box"};
  int failures = 0, bad_counts = 0;
  for (int it = 0; it < 20000; it++) {
    memcpy(m, ex0, n);
    int edits = 1 + it % 3;
    for (int e = 0; e < edits; e++) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      m[(state >> 33) % n] = (uint8_t)(state >> 17);
    }
    size_t len = it % 5 == 0 ? (size_t)((state >> 40) % n) : n; /* sometimes truncated too */
    ladle__tfrecord_feature f[3];
    if (ladle__tfrecord_example_find(m, len, names, 3, f) != LADLE_OK) {
      failures++;
      continue;
    }
    for (int k = 0; k < 3; k++) {
      ladle__tfrecord_kind kind;
      int64_t count, bytes;
      if (ladle__tfrecord_feature_decode(f[k], &kind, &count, &bytes, NULL) != LADLE_OK) continue;
      if (bytes > (int64_t)len * 8) bad_counts++; /* an int64 takes at least one byte */
      uint8_t *dst = malloc((size_t)bytes + 1);
      int64_t c2, b2;
      ladle__tfrecord_kind k2;
      CHECK(ladle__tfrecord_feature_decode(f[k], &k2, &c2, &b2, dst) == LADLE_OK && c2 == count && b2 == bytes);
      free(dst);
    }
  }
  CHECK(failures > 0 && bad_counts == 0);
  free(m);
  free(file.p);
}

static void test_file_errors(void) {
  int64_t offsets[3];
  buf file = three_records(offsets);
  ladle__tfrecord_index *x = NULL;
  uint8_t *b = NULL;
  size_t cap = 0, len = 0;

  /* data CRC: found when the record is read, not at build */
  uint8_t *copy = malloc(file.len);
  memcpy(copy, file.p, file.len);
  copy[offsets[1] + 12 + 3] ^= 0x40;
  const char *p = write_file("datacrc.tfrecord", copy, file.len);
  CHECK_OK(ladle__tfrecord_index_build(&p, 1, &x));
  CHECK_OK(ladle__tfrecord_index_read(x, 0, &b, &cap, &len));
  CHECK(ladle__tfrecord_index_read(x, 1, &b, &cap, &len) == LADLE_ERROR_CORRUPT_DATA);
  char want[256];
  snprintf(want, sizeof want, "%s: the record at byte %lld has a bad data CRC", p, (long long)offsets[1]);
  CHECK(strstr(ladle_last_error(), want) != NULL);
  ladle__tfrecord_index_destroy(x);
  x = NULL;

  /* length CRC: found at build */
  memcpy(copy, file.p, file.len);
  copy[offsets[2] + 9] ^= 1;
  p = write_file("lencrc.tfrecord", copy, file.len);
  CHECK(ladle__tfrecord_index_build(&p, 1, &x) == LADLE_ERROR_CORRUPT_DATA && !x);
  snprintf(want, sizeof want, "%s: the record at byte %lld has a bad length CRC", p, (long long)offsets[2]);
  CHECK(strstr(ladle_last_error(), want) != NULL);

  /* truncation inside a record's data/footer, and inside a header */
  size_t cuts[] = {file.len - 1, (size_t)offsets[1] + 20, (size_t)offsets[2] + 5};
  const char *says[] = {"truncated record at byte", "truncated record at byte", "truncated record header at byte"};
  int64_t at[] = {offsets[2], offsets[1], offsets[2]};
  for (int i = 0; i < 3; i++) {
    p = write_file("cut.tfrecord", file.p, cuts[i]);
    CHECK(ladle__tfrecord_index_build(&p, 1, &x) == LADLE_ERROR_CORRUPT_DATA);
    snprintf(want, sizeof want, "%s: %s %lld", p, says[i], (long long)at[i]);
    CHECK(strstr(ladle_last_error(), want) != NULL);
  }

  /* a file shortened after indexing */
  p = write_file("shrink.tfrecord", file.p, file.len);
  CHECK_OK(ladle__tfrecord_index_build(&p, 1, &x));
  p = write_file("shrink.tfrecord", file.p, (size_t)offsets[1] + 14);
  CHECK(ladle__tfrecord_index_read(x, 1, &b, &cap, &len) == LADLE_ERROR_IO);
  CHECK(strstr(ladle_last_error(), "changed since it was indexed") != NULL);
  ladle__tfrecord_index_destroy(x);
  x = NULL;

  /* empty files and missing files */
  p = write_file("empty.tfrecord", "", 0);
  CHECK(ladle__tfrecord_index_build(&p, 1, &x) == LADLE_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(ladle_last_error(), "hold no record") != NULL);
  const char *missing = "/nonexistent/x.tfrecord";
  CHECK(ladle__tfrecord_index_build(&missing, 1, &x) == LADLE_ERROR_IO);
  CHECK(strstr(ladle_last_error(), missing) != NULL);
  free(copy);
  free(b);
  free(file.p);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/ladle_test_tfrecord_XXXXXX");
  if (!mkdtemp(dir)) return 2;
  RUN(test_crc32c);
  RUN(test_index_and_decode);
  RUN(test_protobuf_rules);
  RUN(test_malformed_protobuf);
  RUN(test_mutations);
  RUN(test_file_errors);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  TEST_MAIN_END();
}

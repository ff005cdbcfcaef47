/* Tests of src/io/tar_index: header parsing (ustar prefix, pax path/size, GNU
 * long names, base-256 sizes, ignored entry types) against tars written here
 * by a small writer, the corrupt-archive errors, sample grouping, the
 * missing-component modes, dtype divisibility and reading components back. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "io/tar_index.h"
#include "test.h"

/* ------------------------------------------------------------------------ */
/* A tar writer                                                               */
/* ------------------------------------------------------------------------ */

typedef struct tw {
  uint8_t *buf;
  size_t len, cap;
} tw;

static void tw_bytes(tw *w, const void *data, size_t n) {
  if (w->len + n > w->cap) {
    w->cap = (w->len + n) * 2 + 4096;
    w->buf = realloc(w->buf, w->cap);
    if (!w->buf) exit(2);
  }
  if (data) memcpy(w->buf + w->len, data, n);
  else memset(w->buf + w->len, 0, n);
  w->len += n;
}

static void tw_pad(tw *w) {
  if (w->len % 512) tw_bytes(w, NULL, 512 - w->len % 512);
}

enum { MAGIC_USTAR, MAGIC_GNU, MAGIC_NONE };

/* Appends a header; `size` is written as octal, or base-256 when base256. */
static size_t tw_header(tw *w, const char *name, const char *prefix, char type, uint64_t size, int magic,
                        int base256) {
  uint8_t h[512];
  memset(h, 0, sizeof h);
  size_t nlen = strlen(name);
  memcpy(h, name, nlen > 100 ? 100 : nlen);
  memcpy(h + 100, "0000644", 8);
  memcpy(h + 108, "0001750", 8);
  memcpy(h + 116, "0001750", 8);
  if (base256) {
    h[124] = 0x80;
    for (int i = 0; i < 8; i++) h[135 - i] = (uint8_t)(size >> (8 * i));
  } else {
    snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)size);
  }
  memcpy(h + 136, "14547114120", 12);
  h[156] = (uint8_t)type;
  if (magic == MAGIC_USTAR) memcpy(h + 257, "ustar\0" "00", 8);
  if (magic == MAGIC_GNU) memcpy(h + 257, "ustar  ", 8);
  if (prefix) memcpy(h + 345, prefix, strlen(prefix));
  memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (int i = 0; i < 512; i++) sum += h[i];
  snprintf((char *)h + 148, 8, "%06o", sum);
  h[155] = ' ';
  size_t at = w->len;
  tw_bytes(w, h, 512);
  return at;
}

/* A regular file; returns its data offset. */
static size_t tw_file(tw *w, const char *name, const void *data, size_t n) {
  tw_header(w, name, NULL, '0', n, MAGIC_USTAR, 0);
  size_t at = w->len;
  tw_bytes(w, data, n);
  tw_pad(w);
  return at;
}

static size_t tw_file_str(tw *w, const char *name, const char *text) { return tw_file(w, name, text, strlen(text)); }

/* A pax extended header ('x', or 'g' global) with the given "key=value" records. */
static void tw_pax_typed(tw *w, char type, const char *const *kv, int n) {
  char data[4096];
  size_t len = 0;
  for (int i = 0; i < n; i++) {
    size_t body = strlen(kv[i]) + 2; /* " " + "\n" */
    size_t total = body + 1;
    while (total != body + (size_t)snprintf(NULL, 0, "%zu", total)) total = body + (size_t)snprintf(NULL, 0, "%zu", total);
    len += (size_t)snprintf(data + len, sizeof data - len, "%zu %s\n", total, kv[i]);
  }
  tw_header(w, "PaxHeaders/x", NULL, type, len, MAGIC_USTAR, 0);
  tw_bytes(w, data, len);
  tw_pad(w);
}

static void tw_pax(tw *w, const char *const *kv, int n) { tw_pax_typed(w, 'x', kv, n); }

static void tw_gnu_longname(tw *w, const char *name) {
  tw_header(w, "././@LongLink", NULL, 'L', strlen(name) + 1, MAGIC_GNU, 0);
  tw_bytes(w, name, strlen(name) + 1);
  tw_pad(w);
}

static void tw_end(tw *w) { tw_bytes(w, NULL, 1024); }

static char tmp_root[64];

static const char *tpath(const char *rel) {
  static char bufs[8][512];
  static int next;
  char *b = bufs[next++ % 8];
  snprintf(b, sizeof bufs[0], "%s/%s", tmp_root, rel);
  return b;
}

static void write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
    perror(path);
    exit(2);
  }
}

/* Writes w to tmp/rel and frees it; returns the path (rotating buffer). */
static const char *tw_save(tw *w, const char *rel) {
  const char *p = tpath(rel);
  write_file(p, w->buf, w->len);
  free(w->buf);
  memset(w, 0, sizeof *w);
  return p;
}

static int error_has(const char *a, const char *b) {
  const char *e = ladle_last_error();
  int ok = strstr(e, a) != NULL && (!b || strstr(e, b) != NULL);
  if (!ok) fprintf(stderr, "  unexpected message: %s\n", e);
  return ok;
}

/* Collects what ladle__tar_scan visits. */
typedef struct seen {
  int n;
  char names[32][300];
  int64_t offset[32], size[32], header[32];
} seen;

static ladle_status collect(void *ctx, const ladle__tar_file *f) {
  seen *s = ctx;
  if (s->n < 32) {
    snprintf(s->names[s->n], sizeof s->names[0], "%s", f->name);
    s->offset[s->n] = f->offset;
    s->size[s->n] = f->size;
    s->header[s->n] = f->header;
  }
  s->n++;
  return LADLE_OK;
}

/* ------------------------------------------------------------------------ */
/* Parsing                                                                    */
/* ------------------------------------------------------------------------ */

static void test_scan_formats(void) {
  tw w = {0};
  uint8_t big[700];
  for (int i = 0; i < 700; i++) big[i] = (uint8_t)(i * 7 + 3);
  char long_pax[200], long_gnu[220];
  memset(long_pax, 'p', sizeof long_pax);
  memcpy(long_pax + 150, "/0003.txt", 10); /* 159 characters */
  memset(long_gnu, 'g', sizeof long_gnu);
  memcpy(long_gnu + 190, "/0004.seg.png", 14); /* 203 characters */

  tw_header(&w, "d/", NULL, '5', 0, MAGIC_USTAR, 0);
  size_t off0 = tw_file(&w, "d/0001.jpg", big, sizeof big);
  size_t off1 = tw_file(&w, "d/0001.cls", "\x07\0\0\0", 4);
  tw_header(&w, "0002.jpg", "long/prefix/dir", '0', 5, MAGIC_USTAR, 0); /* name = prefix + "/" + name */
  size_t off2 = w.len;
  tw_bytes(&w, "hello", 5);
  tw_pad(&w);
  const char *pax1[] = {"mtime=1.5", NULL};
  char path_rec[220];
  snprintf(path_rec, sizeof path_rec, "path=%s", long_pax);
  pax1[1] = path_rec;
  tw_pax(&w, pax1, 2);
  size_t off3 = tw_file_str(&w, "shortened.txt", "pax!");
  tw_gnu_longname(&w, long_gnu);
  size_t hdr4 = w.len - 1024;
  tw_header(&w, "truncated-name", NULL, '0', 3, MAGIC_GNU, 0);
  size_t off4 = w.len;
  tw_bytes(&w, "gnu", 3);
  tw_pad(&w);
  tw_header(&w, "d/link.jpg", NULL, '2', 0, MAGIC_USTAR, 0); /* symlink: ignored */
  tw_header(&w, "d/hard.jpg", NULL, '1', 0, MAGIC_USTAR, 0); /* hard link: ignored */
  const char *global[] = {"comment=global"};
  tw_pax_typed(&w, 'g', global, 1);
  tw_header(&w, "././@LongLink", NULL, 'K', 10, MAGIC_GNU, 0); /* GNU long link name: skipped */
  tw_bytes(&w, "target.jp", 10);
  tw_pad(&w);
  tw_header(&w, "d/b256.bin", NULL, '0', 513, MAGIC_GNU, 1); /* base-256 size */
  size_t off5 = w.len;
  tw_bytes(&w, NULL, 513);
  tw_pad(&w);
  const char *pax_size[] = {"size=6"}; /* pax size overrides the header's 0 */
  tw_pax(&w, pax_size, 1);
  tw_header(&w, "d/paxsize.bin", NULL, '0', 0, MAGIC_USTAR, 0);
  size_t off6 = w.len;
  tw_bytes(&w, "sixsix", 6);
  tw_pad(&w);
  tw_header(&w, "d/README", NULL, '\0', 2, MAGIC_NONE, 0); /* old-style typeflag NUL, no magic */
  size_t off7 = w.len;
  tw_bytes(&w, "hi", 2);
  tw_pad(&w);
  tw_end(&w);
  const char *path = tw_save(&w, "formats.tar");

  seen s = {0};
  CHECK_OK(ladle__tar_scan(path, collect, &s));
  CHECK(s.n == 8);
  const char *want[8] = {"d/0001.jpg", "d/0001.cls", "long/prefix/dir/0002.jpg", long_pax, long_gnu,
                         "d/b256.bin", "d/paxsize.bin", "d/README"};
  size_t offs[8] = {off0, off1, off2, off3, off4, off5, off6, off7};
  int64_t sizes[8] = {700, 4, 5, 4, 3, 513, 6, 2};
  for (int i = 0; i < 8 && i < s.n; i++) {
    CHECK(strcmp(s.names[i], want[i]) == 0);
    CHECK(s.offset[i] == (int64_t)offs[i]);
    CHECK(s.size[i] == sizes[i]);
  }
  CHECK(s.header[4] == (int64_t)hdr4); /* the long name's own header */
  CHECK(s.header[0] == (int64_t)off0 - 512);
}

static void test_split_name(void) {
  struct {
    const char *name;
    int ok;
    const char *key, *ext;
  } cases[] = {
      {"a/b/000001.seg.png", 1, "a/b/000001", "seg.png"},
      {"000001.jpg", 1, "000001", "jpg"},
      {"./x.y/k.cls", 1, "./x.y/k", "cls"},
      {"dir.d/README", 0, NULL, NULL},
      {"a/.hidden", 0, NULL, NULL},
      {"a/b.", 0, NULL, NULL},
      {"noext", 0, NULL, NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t kl = 0;
    const char *ext = NULL;
    int ok = ladle__tar_split_name(cases[i].name, &kl, &ext);
    CHECK(ok == cases[i].ok);
    if (ok && cases[i].ok) {
      CHECK(kl == strlen(cases[i].key) && strncmp(cases[i].name, cases[i].key, kl) == 0);
      CHECK(strcmp(ext, cases[i].ext) == 0);
    }
  }
}

static ladle_status count_only(void *ctx, const ladle__tar_file *f) {
  (void)f;
  (*(int *)ctx)++;
  return LADLE_OK;
}

static void test_corrupt(void) {
  tw w = {0};
  tw_file_str(&w, "a.jpg", "0123456789");
  tw_file(&w, "b.jpg", NULL, 1500);
  tw_end(&w);
  size_t full = w.len;
  uint8_t *good = malloc(full);
  memcpy(good, w.buf, full);
  const char *path = tw_save(&w, "corrupt.tar");
  int n = 0;

  /* Intact, and also without the end-of-archive blocks (EOF on a boundary). */
  CHECK_OK(ladle__tar_scan(path, count_only, &n));
  CHECK(n == 2);
  write_file(path, good, full - 1024);
  n = 0;
  CHECK_OK(ladle__tar_scan(path, count_only, &n));
  CHECK(n == 2);

  /* Bad checksum in the second header (byte 1024). */
  uint8_t *bad = malloc(full);
  memcpy(bad, good, full);
  bad[1024 + 1] ^= 0x20; /* "b.jpg" -> "B.jpg" */
  write_file(path, bad, full);
  CHECK(ladle__tar_scan(path, count_only, &n) == LADLE_ERROR_CORRUPT_DATA);
  CHECK(error_has(path, "header at byte 1024: checksum mismatch"));

  /* Bad size field. */
  memcpy(bad, good, full);
  memcpy(bad + 1024 + 124, "00000z00000", 11);
  memset(bad + 1024 + 148, ' ', 8);
  unsigned sum = 0;
  for (int i = 0; i < 512; i++) sum += bad[1024 + i];
  snprintf((char *)bad + 1024 + 148, 8, "%06o", sum);
  write_file(path, bad, full);
  CHECK(ladle__tar_scan(path, count_only, &n) == LADLE_ERROR_CORRUPT_DATA);
  CHECK(error_has(path, "header at byte 1024: bad size field"));

  /* Truncated inside the data of b.jpg, inside its padding, inside a header. */
  write_file(path, good, 1024 + 512 + 700);
  CHECK(ladle__tar_scan(path, count_only, &n) == LADLE_ERROR_CORRUPT_DATA);
  CHECK(error_has(path, "truncated: the entry at byte 1024 has 1500 bytes"));
  write_file(path, good, 1024 + 512 + 1500);
  CHECK(ladle__tar_scan(path, count_only, &n) == LADLE_ERROR_CORRUPT_DATA);
  CHECK(error_has(path, "truncated: the padding of the entry at byte 1024"));
  write_file(path, good, 1024 + 100);
  CHECK(ladle__tar_scan(path, count_only, &n) == LADLE_ERROR_CORRUPT_DATA);
  CHECK(error_has(path, "ends inside the header at byte 1024"));

  /* Not a tar at all; a missing file. */
  memset(bad, 'x', full);
  write_file(path, bad, full);
  CHECK(ladle__tar_scan(path, count_only, &n) == LADLE_ERROR_CORRUPT_DATA);
  CHECK(error_has(path, "header at byte 0"));
  CHECK(ladle__tar_scan(tpath("nope.tar"), count_only, &n) == LADLE_ERROR_IO);
  CHECK(error_has("nope.tar", "No such file"));

  /* A pax header with a broken record, and one that is the last thing in the file. */
  tw_pax(&w, (const char *const[]){"path=x.jpg"}, 1);
  w.buf[512] = '9'; /* the record's length no longer fits */
  size_t pax_len = w.len;
  tw_file_str(&w, "y.jpg", "y");
  uint8_t *saved = malloc(w.len);
  memcpy(saved, w.buf, w.len);
  write_file(path, saved, w.len);
  CHECK(ladle__tar_scan(path, count_only, &n) == LADLE_ERROR_CORRUPT_DATA);
  CHECK(error_has(path, "pax header at byte 0: malformed record"));
  saved[512] = '1'; /* restore "1x path=x.jpg" */
  write_file(path, saved, pax_len);
  CHECK(ladle__tar_scan(path, count_only, &n) == LADLE_ERROR_CORRUPT_DATA);
  CHECK(error_has(path, "ends after the extended header at byte 0"));
  free(saved);
  free(w.buf);
  free(bad);
  free(good);
}

/* ------------------------------------------------------------------------ */
/* The index                                                                  */
/* ------------------------------------------------------------------------ */

static ladle__tar_index *build(const char *const *paths, int np, const char *const *ext, int no,
                               ladle__tar_missing missing, int case_sensitive, const size_t *elem) {
  ladle__tar_index_params p = {paths, np, ext, no, missing, case_sensitive, elem};
  ladle__tar_index *x = NULL;
  if (ladle__tar_index_build(&p, &x) != LADLE_OK) return NULL;
  return x;
}

static void test_grouping(void) {
  tw w = {0};
  size_t a_jpg = tw_file_str(&w, "s/a.jpg", "A-jpg");
  size_t a_cls = tw_file_str(&w, "s/a.cls", "1");
  tw_header(&w, "s/", NULL, '5', 0, MAGIC_USTAR, 0); /* a directory does not break the group */
  size_t a_png = tw_file_str(&w, "s/a.png", "A-png");  /* loses to jpg: listed later */
  size_t b_png = tw_file_str(&w, "s/b.png", "B-png");
  size_t b_cls = tw_file_str(&w, "s/b.cls", "22");
  tw_file_str(&w, "README.txt", "stray");            /* matches no output: not a sample */
  size_t a2_jpg = tw_file_str(&w, "s/a.jpg", "A2");   /* key a again: a new sample */
  size_t a2_cls = tw_file_str(&w, "s/a.CLS", "333");  /* only case-insensitively */
  tw_end(&w);
  const char *t1 = strdup(tw_save(&w, "g1.tar"));
  size_t c_jpg = tw_file_str(&w, "s/b.jpg", "other tar"); /* same key as in g1: another sample */
  size_t c_cls = tw_file_str(&w, "s/b.cls", "4444");
  tw_end(&w);
  const char *t2 = strdup(tw_save(&w, "g2.tar"));
  const char *paths[] = {t1, t2};
  const char *ext[] = {"jpg;png", "cls"};

  ladle__tar_index *x = build(paths, 2, ext, 2, LADLE__TAR_MISSING_EMPTY, 0, NULL);
  CHECK(x != NULL);
  if (x) {
    CHECK(ladle__tar_index_size(x) == 4);
    CHECK(ladle__tar_index_num_outputs(x) == 2);
    const char *keys[] = {"s/a", "s/b", "s/a", "s/b"};
    const char *tars[] = {t1, t1, t1, t2};
    int64_t off0[] = {(int64_t)a_jpg, (int64_t)b_png, (int64_t)a2_jpg, (int64_t)c_jpg};
    int64_t size0[] = {5, 5, 2, 9};
    int64_t off1[] = {(int64_t)a_cls, (int64_t)b_cls, (int64_t)a2_cls, (int64_t)c_cls};
    int64_t size1[] = {1, 2, 3, 4};
    const char *ext0[] = {"jpg", "png", "jpg", "jpg"};
    for (int i = 0; i < 4; i++) {
      CHECK(strcmp(ladle__tar_index_key(x, i), keys[i]) == 0);
      CHECK(strcmp(ladle__tar_index_path(x, i), tars[i]) == 0);
      char name[600];
      snprintf(name, sizeof name, "%s:%s", tars[i], keys[i]);
      CHECK(strcmp(ladle__tar_index_name(x, i), name) == 0);
      ladle__tar_component c0 = ladle__tar_index_component(x, i, 0), c1 = ladle__tar_index_component(x, i, 1);
      CHECK(c0.offset == off0[i] && c0.size == size0[i] && strcmp(c0.ext, ext0[i]) == 0);
      CHECK(c1.offset == off1[i] && c1.size == size1[i] && strcmp(c1.ext, "cls") == 0);
    }
    (void)a_png;
    /* Read sample 1 (png + cls) and sample 3 (the other tar). */
    uint8_t b0[16] = {0}, b1[16] = {0};
    uint8_t *dst[2] = {b0, b1};
    CHECK_OK(ladle__tar_index_read(x, 1, dst));
    CHECK(memcmp(b0, "B-png", 5) == 0 && memcmp(b1, "22", 2) == 0);
    CHECK_OK(ladle__tar_index_read(x, 3, dst));
    CHECK(memcmp(b0, "other tar", 9) == 0 && memcmp(b1, "4444", 4) == 0);
    ladle__tar_index_destroy(x);
  }

  /* Case-sensitive (the default): s/a.CLS does not match "cls". */
  x = build(paths, 2, ext, 2, LADLE__TAR_MISSING_EMPTY, 1, NULL);
  CHECK(x != NULL);
  if (x) {
    CHECK(ladle__tar_index_size(x) == 4);
    ladle__tar_component c = ladle__tar_index_component(x, 2, 1);
    CHECK(c.offset == -1 && c.size == 0 && c.ext == NULL);
    uint8_t b0[16] = {0};
    uint8_t *dst[2] = {b0, NULL}; /* an empty component needs no buffer */
    CHECK_OK(ladle__tar_index_read(x, 2, dst));
    CHECK(memcmp(b0, "A2", 2) == 0);
    ladle__tar_index_destroy(x);
  }

  /* Alternatives are ranked by their order in ext: "png;jpg" takes a.png. */
  const char *ext_png_first[] = {"png;.jpg"};
  x = build(paths, 1, ext_png_first, 1, LADLE__TAR_MISSING_EMPTY, 1, NULL);
  CHECK(x != NULL);
  if (x) {
    CHECK(ladle__tar_index_size(x) == 3);
    CHECK(ladle__tar_index_component(x, 0, 0).offset == (int64_t)a_png);
    CHECK(ladle__tar_index_component(x, 2, 0).offset == (int64_t)a2_jpg);
    ladle__tar_index_destroy(x);
  }
  free((void *)t1);
  free((void *)t2);
}

static void test_missing_modes(void) {
  tw w = {0};
  tw_file_str(&w, "k1.jpg", "j1");
  tw_file_str(&w, "k1.cls", "c1");
  tw_file_str(&w, "k2.jpg", "j2"); /* no cls */
  tw_file_str(&w, "k3.cls", "c3"); /* no jpg */
  tw_file_str(&w, "k4.jpg", "j4");
  tw_file_str(&w, "k4.cls", "c4");
  tw_end(&w);
  const char *path = strdup(tw_save(&w, "missing.tar"));
  const char *paths[] = {path};
  const char *ext[] = {"jpg", "cls"};

  ladle__tar_index *x = build(paths, 1, ext, 2, LADLE__TAR_MISSING_EMPTY, 1, NULL);
  CHECK(x && ladle__tar_index_size(x) == 4);
  if (x) {
    CHECK(ladle__tar_index_component(x, 1, 1).offset == -1);
    CHECK(ladle__tar_index_component(x, 2, 0).offset == -1);
    CHECK(ladle__tar_index_component(x, 2, 1).size == 2);
    ladle__tar_index_destroy(x);
  }
  x = build(paths, 1, ext, 2, LADLE__TAR_MISSING_SKIP, 1, NULL);
  CHECK(x && ladle__tar_index_size(x) == 2);
  if (x) {
    CHECK(strcmp(ladle__tar_index_key(x, 0), "k1") == 0 && strcmp(ladle__tar_index_key(x, 1), "k4") == 0);
    ladle__tar_index_destroy(x);
  }
  x = build(paths, 1, ext, 2, LADLE__TAR_MISSING_ERROR, 1, NULL);
  CHECK(x == NULL);
  CHECK(error_has(path, "sample \"k2\" has no component for ext \"cls\""));
  ladle__tar_index_destroy(x);

  /* Nothing matches: a clear error rather than an empty reader. */
  const char *none[] = {"webp"};
  CHECK(build(paths, 1, none, 1, LADLE__TAR_MISSING_EMPTY, 1, NULL) == NULL);
  CHECK(error_has("no samples", path));
  /* An empty alternative is refused. */
  const char *empty_alt[] = {"jpg;"};
  CHECK(build(paths, 1, empty_alt, 1, LADLE__TAR_MISSING_EMPTY, 1, NULL) == NULL);
  CHECK(error_has("ext[0] \"jpg;\" has an empty extension", NULL));
  free((void *)path);
}

static void test_dtype_sizes(void) {
  tw w = {0};
  int32_t labels[2] = {7, -3};
  tw_file_str(&w, "x/s1.jpg", "jpeg");
  tw_file(&w, "x/s1.cls", labels, 8);
  tw_file_str(&w, "x/s2.jpg", "jpeg");
  tw_file(&w, "x/s2.cls", labels, 6); /* not a multiple of 4 */
  tw_end(&w);
  const char *path = strdup(tw_save(&w, "dtype.tar"));
  const char *paths[] = {path};
  const char *ext[] = {"jpg", "cls"};
  size_t elem[] = {1, 4};
  CHECK(build(paths, 1, ext, 2, LADLE__TAR_MISSING_EMPTY, 1, elem) == NULL);
  CHECK(error_has(path, "component \"x/s2.cls\" has 6 bytes, not a multiple of its dtype's 4-byte"));
  size_t elem2[] = {1, 2};
  ladle__tar_index *x = build(paths, 1, ext, 2, LADLE__TAR_MISSING_EMPTY, 1, elem2);
  CHECK(x && ladle__tar_index_size(x) == 2);
  if (x) {
    int32_t got[2] = {0, 0};
    uint8_t jpg[4];
    uint8_t *dst[2] = {jpg, (uint8_t *)got};
    CHECK_OK(ladle__tar_index_read(x, 0, dst));
    CHECK(got[0] == 7 && got[1] == -3);
    ladle__tar_index_destroy(x);
  }
  free((void *)path);
}

static void test_read_errors(void) {
  tw w = {0};
  tw_file(&w, "r/0.bin", NULL, 3000);
  tw_file_str(&w, "r/1.bin", "tail");
  tw_end(&w);
  size_t len = w.len;
  uint8_t *copy = malloc(len);
  memcpy(copy, w.buf, len);
  const char *path = strdup(tw_save(&w, "read.tar"));
  const char *paths[] = {path};
  const char *ext[] = {"bin"};
  ladle__tar_index *x = build(paths, 1, ext, 1, LADLE__TAR_MISSING_EMPTY, 1, NULL);
  CHECK(x && ladle__tar_index_size(x) == 2);
  if (x) {
    uint8_t *buf = malloc(3000);
    uint8_t *dst[1] = {buf};
    CHECK_OK(ladle__tar_index_read(x, 0, dst));
    /* The tar shrinks after indexing: a short read names tar, key and extension. */
    write_file(path, copy, 512 + 1000);
    CHECK(ladle__tar_index_read(x, 0, dst) == LADLE_ERROR_IO);
    CHECK(error_has(path, "changed since it was indexed: \"r/0.bin\" at byte 512"));
    unlink(path);
    CHECK(ladle__tar_index_read(x, 1, dst) == LADLE_ERROR_IO);
    CHECK(error_has(path, "reading sample \"r/1\""));
    CHECK(ladle__tar_index_read(x, 2, dst) == LADLE_ERROR_INVALID_ARGUMENT);
    free(buf);
    ladle__tar_index_destroy(x);
  }
  free(copy);
  free((void *)path);
}

/* Many samples across many tars: the index keeps every offset exact. */
static void test_many(void) {
  const char *paths[5];
  char names[5][64];
  int64_t want_off[5][40];
  for (int t = 0; t < 5; t++) {
    tw w = {0};
    for (int i = 0; i < 40; i++) {
      char name[32];
      snprintf(name, sizeof name, "%03d/%06d.dat", t, i);
      uint8_t data[1100];
      size_t n = (size_t)((t * 131 + i * 37) % 1100);
      for (size_t k = 0; k < n; k++) data[k] = (uint8_t)(t + i + k);
      want_off[t][i] = (int64_t)tw_file(&w, name, data, n);
    }
    tw_end(&w);
    snprintf(names[t], sizeof names[t], "many%d.tar", t);
    paths[t] = strdup(tw_save(&w, names[t]));
  }
  const char *ext[] = {"dat"};
  ladle__tar_index *x = build(paths, 5, ext, 1, LADLE__TAR_MISSING_EMPTY, 1, NULL);
  CHECK(x && ladle__tar_index_size(x) == 200);
  int bad = 0;
  for (int s = 0; x && s < 200; s++) {
    int t = s / 40, i = s % 40;
    ladle__tar_component c = ladle__tar_index_component(x, s, 0);
    size_t n = (size_t)((t * 131 + i * 37) % 1100);
    uint8_t buf[1100];
    uint8_t *dst[1] = {buf};
    bad += c.offset != want_off[t][i] || c.size != (int64_t)n;
    bad += ladle__tar_index_read(x, s, dst) != LADLE_OK;
    for (size_t k = 0; k < n; k++) bad += buf[k] != (uint8_t)(t + i + k);
  }
  CHECK(bad == 0);
  ladle__tar_index_destroy(x);
  for (int t = 0; t < 5; t++) free((void *)paths[t]);
}

static void remove_tmp(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_root);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp_root);
}

int main(void) {
  snprintf(tmp_root, sizeof tmp_root, "/tmp/ladle_test_tar_XXXXXX");
  if (!mkdtemp(tmp_root)) {
    perror("mkdtemp");
    return 2;
  }
  RUN(test_scan_formats);
  RUN(test_split_name);
  RUN(test_corrupt);
  RUN(test_grouping);
  RUN(test_missing_modes);
  RUN(test_dtype_sizes);
  RUN(test_read_errors);
  RUN(test_many);
  remove_tmp();
  TEST_MAIN_END();
}

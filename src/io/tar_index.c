/* Tar header parsing and the webdataset sample index (see tar_index.h):
 * one pass over each archive's headers at build, pread of components later. */
#include "io/tar_index.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "io/io_util.h"

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

#define BLOCK 512
/* Pax headers and GNU long names larger than this are refused: real ones are
 * a few hundred bytes, and the size field of a corrupt header could ask for
 * gigabytes. */
#define MAX_META_SIZE (1 << 20)

/* ---- tar headers ----------------------------------------------------- */

/* An octal field: optional spaces/NULs, octal digits, then only spaces/NULs.
 * An empty field reads as 0 (as GNU tar and Python's tarfile accept). */
static int parse_octal(const uint8_t *f, size_t n, int64_t *out) {
  size_t i = 0;
  uint64_t v = 0;
  while (i < n && (f[i] == ' ' || f[i] == '\0')) i++;
  for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
    if (v > (uint64_t)INT64_MAX >> 3) return -1;
    v = v * 8 + (uint64_t)(f[i] - '0');
  }
  for (; i < n; i++)
    if (f[i] != ' ' && f[i] != '\0') return -1;
  *out = (int64_t)v;
  return 0;
}

/* A numeric field: octal, or GNU base-256 (big-endian after the marker bit)
 * when the first byte has its high bit set. Negative values are refused. */
static int parse_number(const uint8_t *f, size_t n, int64_t *out) {
  if (!(f[0] & 0x80)) return parse_octal(f, n, out);
  if (f[0] & 0x40) return -1; /* negative (two's complement) */
  uint64_t v = f[0] & 0x3f;
  for (size_t i = 1; i < n; i++) {
    if (v > (uint64_t)INT64_MAX >> 8) return -1;
    v = v << 8 | f[i];
  }
  *out = (int64_t)v;
  return 0;
}

static int is_zero_block(const uint8_t *h) {
  for (int i = 0; i < BLOCK; i++)
    if (h[i]) return 0;
  return 1;
}

/* The checksum is the sum of the header's bytes with the checksum field
 * itself counted as spaces; old writers summed signed chars, so accept both. */
static int checksum_ok(const uint8_t *h, int64_t *stored, int64_t *computed) {
  if (parse_octal(h + 148, 8, stored) != 0) return -1;
  int64_t sum_unsigned = 0, sum_signed = 0;
  for (int i = 0; i < BLOCK; i++) {
    int in_field = i >= 148 && i < 156;
    sum_unsigned += in_field ? ' ' : h[i];
    sum_signed += in_field ? ' ' : (int8_t)h[i];
  }
  *computed = sum_unsigned;
  return *stored == sum_unsigned || *stored == sum_signed;
}

/* What the pax and GNU long-name headers before an entry said about it. */
typedef struct pending_meta {
  char *path;     /* pax "path" or GNU 'L', or NULL */
  int from_pax;   /* 1: path came from pax (it wins over a GNU long name) */
  int64_t size;   /* pax "size", or -1 */
  int64_t header; /* offset of the first such header, or -1 */
} pending_meta;

static void meta_reset(pending_meta *m) {
  free(m->path);
  m->path = NULL;
  m->from_pax = 0;
  m->size = -1;
  m->header = -1;
}

/* Parses pax records "<len> <key>=<value>\n" and keeps path and size. */
static ladle_status parse_pax(const char *path, int64_t header, const char *data, size_t size,
                              pending_meta *m) {
  ladle_status st = LADLE_OK;
  size_t pos = 0;
  while (pos < size && data[pos] != '\0') {
    size_t len = 0, i = pos;
    while (i < size && data[i] >= '0' && data[i] <= '9' && len <= size) len = len * 10 + (size_t)(data[i++] - '0');
    LADLE_CHECK(i < size && data[i] == ' ' && len > i - pos + 1 && len <= size - pos &&
                    data[pos + len - 1] == '\n',
                LADLE_ERROR_CORRUPT_DATA, "%s: pax header at byte %lld: malformed record at data byte %zu", path,
                (long long)header, pos);
    const char *key = data + i + 1, *end = data + pos + len - 1;
    const char *eq = memchr(key, '=', (size_t)(end - key));
    LADLE_CHECK(eq, LADLE_ERROR_CORRUPT_DATA, "%s: pax header at byte %lld: record without '=' at data byte %zu",
                path, (long long)header, pos);
    size_t key_len = (size_t)(eq - key), value_len = (size_t)(end - eq - 1);
    if (key_len == 4 && memcmp(key, "path", 4) == 0) {
      char *p = malloc(value_len + 1);
      LADLE_CHECK(p, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
      memcpy(p, eq + 1, value_len);
      p[value_len] = '\0';
      free(m->path);
      m->path = p;
      m->from_pax = 1;
    } else if (key_len == 4 && memcmp(key, "size", 4) == 0) {
      int64_t v = 0;
      int ok = value_len > 0 && value_len <= 18;
      for (size_t k = 0; ok && k < value_len; k++) {
        char c = eq[1 + k];
        ok = c >= '0' && c <= '9';
        v = v * 10 + (c - '0');
      }
      LADLE_CHECK(ok, LADLE_ERROR_CORRUPT_DATA, "%s: pax header at byte %lld: bad size record \"%.*s\"", path,
                  (long long)header, (int)(value_len > 40 ? 40 : value_len), eq + 1);
      m->size = v;
    }
    pos += len;
  }
done:
  return st;
}

/* Reads a pax or long-name header's data (checked to fit the file) into a new
 * NUL-terminated buffer. */
static ladle_status read_meta(int fd, const char *path, int64_t header, int64_t size, char **out) {
  ladle_status st = LADLE_OK;
  char err[128];
  char *buf = NULL;
  LADLE_CHECK(size <= MAX_META_SIZE, LADLE_ERROR_CORRUPT_DATA,
              "%s: header at byte %lld: extended header of %lld bytes is implausibly large", path,
              (long long)header, (long long)size);
  buf = malloc((size_t)size + 1);
  LADLE_CHECK(buf, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  size_t got = 0;
  LADLE_CHECK(ladle__pread_full(fd, buf, (size_t)size, header + BLOCK, &got) == 0, LADLE_ERROR_IO,
              "%s: header at byte %lld: read failed: %s", path, (long long)header,
              ladle__errno_text(errno, err, sizeof err));
  LADLE_CHECK(got == (size_t)size, LADLE_ERROR_CORRUPT_DATA, "%s: header at byte %lld: truncated extended header",
              path, (long long)header);
  buf[size] = '\0';
  *out = buf;
  buf = NULL;
done:
  free(buf);
  return st;
}

ladle_status ladle__tar_scan(const char *path, ladle__tar_visit_fn visit, void *ctx) {
  ladle_status st = LADLE_OK;
  char err[128];
  pending_meta meta = {NULL, 0, -1, -1};
  char *data = NULL;
  char name[100 + 1 + 155 + 1];
  int fd = -1;
  LADLE_CHECK(path && visit, LADLE_ERROR_INVALID_ARGUMENT, "path and visit must not be NULL");
  fd = open(path, O_RDONLY | O_CLOEXEC);
  LADLE_CHECK(fd >= 0, LADLE_ERROR_IO, "%s: %s", path, ladle__errno_text(errno, err, sizeof err));
  struct stat sb;
  LADLE_CHECK(fstat(fd, &sb) == 0, LADLE_ERROR_IO, "%s: %s", path, ladle__errno_text(errno, err, sizeof err));
  LADLE_CHECK(S_ISREG(sb.st_mode), LADLE_ERROR_IO, "%s is not a regular file", path);
  int64_t file_size = (int64_t)sb.st_size, pos = 0;
  for (;;) {
    uint8_t h[BLOCK];
    size_t got = 0;
    LADLE_CHECK(ladle__pread_full(fd, h, BLOCK, pos, &got) == 0, LADLE_ERROR_IO, "%s: byte %lld: read failed: %s",
                path, (long long)pos, ladle__errno_text(errno, err, sizeof err));
    if (got == 0) {
      LADLE_CHECK(meta.header < 0, LADLE_ERROR_CORRUPT_DATA,
                  "%s: truncated: the file ends after the extended header at byte %lld", path,
                  (long long)meta.header);
      break; /* end of file on a header boundary: the end of the archive */
    }
    LADLE_CHECK(got == BLOCK, LADLE_ERROR_CORRUPT_DATA,
                "%s: truncated: the file ends inside the header at byte %lld (%zu of 512 bytes)", path,
                (long long)pos, got);
    if (is_zero_block(h)) break; /* end-of-archive marker */
    int64_t stored = 0, computed = 0;
    int ok = checksum_ok(h, &stored, &computed);
    LADLE_CHECK(ok >= 0, LADLE_ERROR_CORRUPT_DATA, "%s: header at byte %lld: bad checksum field (not a tar file?)",
                path, (long long)pos);
    LADLE_CHECK(ok, LADLE_ERROR_CORRUPT_DATA,
                "%s: header at byte %lld: checksum mismatch (stored %lld, computed %lld; corrupt or not a tar)",
                path, (long long)pos, (long long)stored, (long long)computed);
    int64_t size = 0;
    LADLE_CHECK(parse_number(h + 124, 12, &size) == 0, LADLE_ERROR_CORRUPT_DATA,
                "%s: header at byte %lld: bad size field \"%.12s\"", path, (long long)pos,
                (const char *)h + 124);
    char type = (char)h[156];
    int is_meta = type == 'x' || type == 'L';
    if (!is_meta && type != 'g' && type != 'K' && meta.size >= 0) size = meta.size;
    /* Links, directories, devices and FIFOs carry no data whatever size says. */
    int has_data = !(type >= '1' && type <= '6');
    int64_t data_at = pos + BLOCK;
    if (!has_data) size = 0;
    LADLE_CHECK(size <= file_size - data_at, LADLE_ERROR_CORRUPT_DATA,
                "%s: truncated: the entry at byte %lld has %lld bytes of data but the file ends at byte %lld",
                path, (long long)pos, (long long)size, (long long)file_size);
    int64_t next = data_at + (size + BLOCK - 1) / BLOCK * BLOCK;
    LADLE_CHECK(next <= file_size, LADLE_ERROR_CORRUPT_DATA,
                "%s: truncated: the padding of the entry at byte %lld ends at byte %lld, past the end of the "
                "file (%lld bytes)",
                path, (long long)pos, (long long)next, (long long)file_size);

    if (type == 'x' || type == 'L') {
      LADLE_TRY(read_meta(fd, path, pos, size, &data));
      if (meta.header < 0) meta.header = pos;
      if (type == 'x') {
        LADLE_TRY(parse_pax(path, pos, data, (size_t)size, &meta));
      } else if (!meta.from_pax) {
        free(meta.path);
        meta.path = data; /* NUL-terminated at its first NUL */
        data = NULL;
      }
      free(data);
      data = NULL;
    } else if (type != 'g' && type != 'K') {
      const char *full = meta.path;
      if (!full) {
        size_t nlen = strnlen((const char *)h, 100);
        size_t plen = memcmp(h + 257, "ustar", 6) == 0 ? strnlen((const char *)h + 345, 155) : 0;
        if (plen)
          memcpy(name, h + 345, plen), name[plen] = '/', plen++;
        memcpy(name + plen, h, nlen);
        name[plen + nlen] = '\0';
        full = name;
      }
      size_t flen = strlen(full);
      int regular = (type == '0' || type == '\0' || type == '7') && flen > 0 && full[flen - 1] != '/';
      if (regular) {
        ladle__tar_file f = {full, meta.header >= 0 ? meta.header : pos, data_at, size};
        LADLE_TRY(visit(ctx, &f));
      }
      meta_reset(&meta);
    }
    pos = next;
  }
done:
  free(data);
  meta_reset(&meta);
  if (fd >= 0) close(fd);
  return st;
}

int ladle__tar_split_name(const char *name, size_t *key_len, const char **ext) {
  const char *slash = strrchr(name, '/');
  const char *base = slash ? slash + 1 : name;
  const char *dot = strchr(base, '.');
  if (!dot || dot == base || dot[1] == '\0') return 0;
  *key_len = (size_t)(dot - name);
  *ext = dot + 1;
  return 1;
}

/* ---- the sample index -------------------------------------------------- */

struct ladle__tar_index {
  int num_outputs;
  int num_paths;
  char **paths;
  int num_alts;
  char **alts;     /* every alternative of every output, in `ext` order */
  int *alt_output; /* the output alternative i belongs to */
  int *alt_rank;   /* its position within that output's list (lower wins) */
  int64_t count, cap;
  int32_t *tar;      /* per sample: index into paths */
  size_t *name_at;   /* per sample: offset of "<path>:<key>" in names */
  ladle__tar_component *comps; /* count * num_outputs */
  char *names;
  size_t names_len, names_cap;
};

/* The group of consecutive files with one key, while a tar is scanned. */
typedef struct builder {
  ladle__tar_index *index;
  const ladle__tar_index_params *p;
  int tar;
  int active;
  char *key;
  size_t key_len, key_cap;
  ladle__tar_component *comps; /* num_outputs */
  int *rank;                   /* num_outputs: rank of the chosen alternative */
  char **actual_ext;           /* num_outputs: the file's own extension, for messages */
} builder;

static int ext_equal(const char *a, const char *b, int case_sensitive) {
  if (case_sensitive) return strcmp(a, b) == 0;
  for (;; a++, b++) {
    unsigned char x = (unsigned char)*a, y = (unsigned char)*b;
    if (x >= 'A' && x <= 'Z') x = (unsigned char)(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = (unsigned char)(y - 'A' + 'a');
    if (x != y) return 0;
    if (!x) return 1;
  }
}

static ladle_status grow(void **ptr, int64_t *cap, int64_t need, size_t elem) {
  if (need <= *cap) return LADLE_OK;
  int64_t n = *cap ? *cap : 64;
  while (n < need) n *= 2;
  void *q = realloc(*ptr, (size_t)n * elem);
  if (!q) return LADLE_FAIL(LADLE_ERROR_OUT_OF_MEMORY, "cannot allocate %lld bytes", (long long)n * (long long)elem);
  *ptr = q;
  *cap = n;
  return LADLE_OK;
}

static ladle_status append_sample(builder *b) {
  ladle_status st = LADLE_OK;
  ladle__tar_index *x = b->index;
  int n = x->num_outputs;
  const char *path = x->paths[b->tar];
  size_t plen = strlen(path), need = plen + 1 + b->key_len + 1;
  if (x->count == x->cap) {
    int64_t cap = x->cap ? x->cap * 2 : 64;
    int32_t *tar = realloc(x->tar, sizeof *tar * (size_t)cap);
    LADLE_CHECK(tar, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
    x->tar = tar;
    size_t *name_at = realloc(x->name_at, sizeof *name_at * (size_t)cap);
    LADLE_CHECK(name_at, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
    x->name_at = name_at;
    ladle__tar_component *comps = realloc(x->comps, sizeof *comps * (size_t)cap * (size_t)n);
    LADLE_CHECK(comps, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
    x->comps = comps;
    x->cap = cap;
  }
  if (x->names_len + need > x->names_cap) {
    int64_t cap = (int64_t)x->names_cap;
    LADLE_TRY(grow((void **)&x->names, &cap, (int64_t)(x->names_len + need), 1));
    x->names_cap = (size_t)cap;
  }
  char *dst = x->names + x->names_len;
  memcpy(dst, path, plen);
  dst[plen] = ':';
  memcpy(dst + plen + 1, b->key, b->key_len);
  dst[plen + 1 + b->key_len] = '\0';
  x->tar[x->count] = b->tar;
  x->name_at[x->count] = x->names_len;
  memcpy(x->comps + x->count * n, b->comps, sizeof *b->comps * (size_t)n);
  x->names_len += need;
  x->count++;
done:
  return st;
}

/* The group ends: apply the missing-component rule and the size checks. */
static ladle_status flush_group(builder *b) {
  ladle_status st = LADLE_OK;
  if (!b->active) return LADLE_OK;
  b->active = 0;
  const ladle__tar_index_params *p = b->p;
  const char *path = b->index->paths[b->tar];
  int n = b->index->num_outputs, present = 0, first_missing = -1;
  for (int k = 0; k < n; k++) {
    if (b->comps[k].offset >= 0) present++;
    else if (first_missing < 0) first_missing = k;
  }
  if (present == 0) return LADLE_OK; /* none of the requested files: not a sample */
  if (present < n) {
    if (p->missing == LADLE__TAR_MISSING_SKIP) return LADLE_OK;
    LADLE_CHECK(p->missing != LADLE__TAR_MISSING_ERROR, LADLE_ERROR_INVALID_ARGUMENT,
                "%s: sample \"%.*s\" has no component for ext \"%s\" (missing_component_behavior is \"error\")",
                path, (int)b->key_len, b->key, p->ext[first_missing]);
  }
  for (int k = 0; k < n; k++) {
    size_t elem = p->elem_sizes ? p->elem_sizes[k] : 1;
    LADLE_CHECK(b->comps[k].offset < 0 || elem <= 1 || (uint64_t)b->comps[k].size % elem == 0,
                LADLE_ERROR_INVALID_ARGUMENT,
                "%s: component \"%.*s.%s\" has %lld bytes, not a multiple of its dtype's %zu-byte elements", path,
                (int)b->key_len, b->key, b->actual_ext[k], (long long)b->comps[k].size, elem);
  }
  LADLE_TRY(append_sample(b));
done:
  return st;
}

static ladle_status visit_file(void *ctx, const ladle__tar_file *f) {
  ladle_status st = LADLE_OK;
  builder *b = ctx;
  ladle__tar_index *x = b->index;
  size_t key_len = 0;
  const char *ext = NULL;
  if (!ladle__tar_split_name(f->name, &key_len, &ext)) return LADLE_OK;
  if (!b->active || key_len != b->key_len || memcmp(f->name, b->key, key_len) != 0) {
    LADLE_TRY(flush_group(b));
    if (key_len + 1 > b->key_cap) {
      char *k = realloc(b->key, key_len + 1);
      LADLE_CHECK(k, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
      b->key = k;
      b->key_cap = key_len + 1;
    }
    memcpy(b->key, f->name, key_len);
    b->key[key_len] = '\0';
    b->key_len = key_len;
    b->active = 1;
    for (int k = 0; k < x->num_outputs; k++) {
      b->comps[k] = (ladle__tar_component){-1, 0, NULL};
      b->rank[k] = -1;
    }
  }
  for (int a = 0; a < x->num_alts; a++) {
    int k = x->alt_output[a];
    if (!ext_equal(ext, x->alts[a], b->p->case_sensitive)) continue;
    if (b->rank[k] >= 0 && b->rank[k] <= x->alt_rank[a]) continue; /* a better (or earlier) one won */
    char *copy = strdup(ext);
    LADLE_CHECK(copy, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
    free(b->actual_ext[k]);
    b->actual_ext[k] = copy;
    b->comps[k] = (ladle__tar_component){f->offset, f->size, x->alts[a]};
    b->rank[k] = x->alt_rank[a];
  }
done:
  return st;
}

/* Splits every ext entry at ';' into the index's alternative table. */
static ladle_status parse_extensions(ladle__tar_index *x, const ladle__tar_index_params *p) {
  ladle_status st = LADLE_OK;
  int total = 0;
  for (int k = 0; k < p->num_outputs; k++) {
    LADLE_CHECK(p->ext[k], LADLE_ERROR_INVALID_ARGUMENT, "ext[%d] is NULL", k);
    total++;
    for (const char *c = p->ext[k]; *c; c++) total += *c == ';';
  }
  LADLE_ALLOC(x->alts, total);
  LADLE_ALLOC(x->alt_output, total);
  LADLE_ALLOC(x->alt_rank, total);
  for (int k = 0; k < p->num_outputs; k++) {
    const char *s = p->ext[k];
    for (int rank = 0;; rank++) {
      const char *end = strchr(s, ';');
      size_t len = end ? (size_t)(end - s) : strlen(s);
      if (len > 0 && s[0] == '.') s++, len--;
      LADLE_CHECK(len > 0, LADLE_ERROR_INVALID_ARGUMENT, "ext[%d] \"%s\" has an empty extension", k, p->ext[k]);
      char *alt = malloc(len + 1);
      LADLE_CHECK(alt, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
      memcpy(alt, s, len);
      alt[len] = '\0';
      x->alts[x->num_alts] = alt;
      x->alt_output[x->num_alts] = k;
      x->alt_rank[x->num_alts] = rank;
      x->num_alts++;
      if (!end) break;
      s = end + 1;
    }
  }
done:
  return st;
}

ladle_status ladle__tar_index_build(const ladle__tar_index_params *p, ladle__tar_index **out) {
  ladle_status st = LADLE_OK;
  ladle__tar_index *x = NULL;
  builder b;
  memset(&b, 0, sizeof b);
  LADLE_CHECK(p && out, LADLE_ERROR_INVALID_ARGUMENT, "params and out must not be NULL");
  LADLE_CHECK(p->paths && p->num_paths > 0, LADLE_ERROR_INVALID_ARGUMENT, "paths is empty");
  LADLE_CHECK(p->ext && p->num_outputs > 0, LADLE_ERROR_INVALID_ARGUMENT, "ext is empty");
  LADLE_CHECK(p->missing >= LADLE__TAR_MISSING_EMPTY && p->missing <= LADLE__TAR_MISSING_ERROR,
              LADLE_ERROR_INVALID_ARGUMENT, "bad missing-component mode %d", (int)p->missing);
  LADLE_ALLOC(x, 1);
  x->num_outputs = p->num_outputs;
  LADLE_TRY(parse_extensions(x, p));
  LADLE_ALLOC(x->paths, p->num_paths);
  x->num_paths = p->num_paths;
  for (int i = 0; i < p->num_paths; i++) {
    LADLE_CHECK(p->paths[i] && p->paths[i][0], LADLE_ERROR_INVALID_ARGUMENT, "paths[%d] is empty", i);
    x->paths[i] = strdup(p->paths[i]);
    LADLE_CHECK(x->paths[i], LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  b.index = x;
  b.p = p;
  LADLE_ALLOC(b.comps, p->num_outputs);
  LADLE_ALLOC(b.rank, p->num_outputs);
  LADLE_ALLOC(b.actual_ext, p->num_outputs);
  for (int i = 0; i < p->num_paths; i++) {
    b.tar = i;
    b.active = 0; /* keys never continue across tars */
    LADLE_TRY(ladle__tar_scan(p->paths[i], visit_file, &b));
    LADLE_TRY(flush_group(&b));
  }
  LADLE_CHECK(x->count > 0, LADLE_ERROR_INVALID_ARGUMENT,
              "no samples with the requested extensions (ext[0] \"%s\") in %d tar file(s) (first: %s)", p->ext[0],
              p->num_paths, p->paths[0]);
  *out = x;
  x = NULL;
done:
  if (b.actual_ext)
    for (int k = 0; k < p->num_outputs; k++) free(b.actual_ext[k]);
  free(b.actual_ext);
  free(b.comps);
  free(b.rank);
  free(b.key);
  ladle__tar_index_destroy(x);
  return st;
}

void ladle__tar_index_destroy(ladle__tar_index *x) {
  if (!x) return;
  for (int i = 0; x->paths && i < x->num_paths; i++) free(x->paths[i]);
  for (int i = 0; i < x->num_alts; i++) free(x->alts[i]);
  free(x->paths);
  free(x->alts);
  free(x->alt_output);
  free(x->alt_rank);
  free(x->tar);
  free(x->name_at);
  free(x->comps);
  free(x->names);
  free(x);
}

int64_t ladle__tar_index_size(const ladle__tar_index *x) { return x->count; }

int ladle__tar_index_num_outputs(const ladle__tar_index *x) { return x->num_outputs; }

const char *ladle__tar_index_name(const ladle__tar_index *x, int64_t sample) {
  return sample >= 0 && sample < x->count ? x->names + x->name_at[sample] : "(no such sample)";
}

const char *ladle__tar_index_path(const ladle__tar_index *x, int64_t sample) {
  return sample >= 0 && sample < x->count ? x->paths[x->tar[sample]] : "(no such sample)";
}

const char *ladle__tar_index_key(const ladle__tar_index *x, int64_t sample) {
  if (sample < 0 || sample >= x->count) return "(no such sample)";
  return x->names + x->name_at[sample] + strlen(x->paths[x->tar[sample]]) + 1;
}

ladle__tar_component ladle__tar_index_component(const ladle__tar_index *x, int64_t sample, int output) {
  if (sample < 0 || sample >= x->count || output < 0 || output >= x->num_outputs)
    return (ladle__tar_component){-1, 0, NULL};
  return x->comps[sample * x->num_outputs + output];
}

ladle_status ladle__tar_index_read(const ladle__tar_index *x, int64_t sample, uint8_t *const *dst) {
  ladle_status st = LADLE_OK;
  char err[128];
  int fd = -1;
  LADLE_CHECK(x && dst, LADLE_ERROR_INVALID_ARGUMENT, "index and dst must not be NULL");
  LADLE_CHECK(sample >= 0 && sample < x->count, LADLE_ERROR_INVALID_ARGUMENT,
              "sample %lld is out of range (the index has %lld)", (long long)sample, (long long)x->count);
  const char *path = ladle__tar_index_path(x, sample), *key = ladle__tar_index_key(x, sample);
  const ladle__tar_component *c = x->comps + sample * x->num_outputs;
  fd = open(path, O_RDONLY | O_CLOEXEC);
  LADLE_CHECK(fd >= 0, LADLE_ERROR_IO, "%s: %s (reading sample \"%s\")", path,
              ladle__errno_text(errno, err, sizeof err), key);
  for (int k = 0; k < x->num_outputs; k++) {
    if (c[k].offset < 0 || c[k].size == 0) continue;
    LADLE_CHECK(dst[k], LADLE_ERROR_INVALID_ARGUMENT, "dst[%d] is NULL", k);
    size_t got = 0;
    LADLE_CHECK(ladle__pread_full(fd, dst[k], (size_t)c[k].size, c[k].offset, &got) == 0, LADLE_ERROR_IO,
                "%s: reading \"%s.%s\" at byte %lld failed: %s", path, key, c[k].ext, (long long)c[k].offset,
                ladle__errno_text(errno, err, sizeof err));
    LADLE_CHECK(got == (size_t)c[k].size, LADLE_ERROR_IO,
                "%s changed since it was indexed: \"%s.%s\" at byte %lld should have %lld bytes, the file "
                "ended after %zu",
                path, key, c[k].ext, (long long)c[k].offset, (long long)c[k].size, got);
  }
done:
  if (fd >= 0) close(fd);
  return st;
}

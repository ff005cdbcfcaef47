/* Filling the file reader's record table: walking a class-per-folder tree,
 * parsing a list file, taking an explicit list. See path_table.h. */
#define _GNU_SOURCE /* FNM_CASEFOLD */
#include "io/path_table.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "core/error.h"
#include "io/io_util.h"

static const char *const default_file_filters[] = {"*.jpg", "*.jpeg", "*.png", "*.bmp", "*.tif", "*.tiff",
                                                   "*.pnm", "*.ppm", "*.pgm", "*.pbm", "*.webp", "*.jp2"};
#define DEFAULT_FILE_FILTERS ((int)(sizeof default_file_filters / sizeof *default_file_filters))

/* ------------------------------------------------------------------------ */
/* The table                                                                  */
/* ------------------------------------------------------------------------ */

/* Makes room for one more record with a path of `len` bytes. */
static ladle_status reserve(ladle__path_table *t, size_t len) {
  ladle_status st = LADLE_OK;
  if (t->count == t->cap) {
    int64_t cap = t->cap ? t->cap * 2 : 1024;
    uint64_t *offsets = realloc(t->offsets, (size_t)cap * sizeof *offsets);
    LADLE_CHECK(offsets, LADLE_ERROR_OUT_OF_MEMORY, "cannot grow the file table to %lld records",
                (long long)cap);
    t->offsets = offsets;
    int32_t *labels = realloc(t->labels, (size_t)cap * sizeof *labels);
    LADLE_CHECK(labels, LADLE_ERROR_OUT_OF_MEMORY, "cannot grow the file table to %lld records",
                (long long)cap);
    t->labels = labels;
    t->cap = cap;
  }
  if (t->arena_cap - t->arena_len < len + 1) {
    size_t cap = t->arena_cap ? t->arena_cap : 1 << 16;
    while (cap - t->arena_len < len + 1) cap *= 2;
    char *arena = realloc(t->arena, cap);
    LADLE_CHECK(arena, LADLE_ERROR_OUT_OF_MEMORY, "cannot grow the path table to %zu bytes", cap);
    t->arena = arena;
    t->arena_cap = cap;
  }
done:
  return st;
}

/* Appends the record "a/b" (no slash added when a is empty or ends with one). */
static ladle_status add_joined(ladle__path_table *t, const char *a, size_t alen, const char *b,
                               size_t blen, int32_t label) {
  int slash = alen > 0 && a[alen - 1] != '/';
  ladle_status st = reserve(t, alen + (size_t)slash + blen);
  if (st != LADLE_OK) return st;
  char *dst = t->arena + t->arena_len;
  memcpy(dst, a, alen);
  if (slash) dst[alen] = '/';
  memcpy(dst + alen + slash, b, blen);
  dst[alen + slash + blen] = '\0';
  t->offsets[t->count] = t->arena_len;
  t->labels[t->count] = label;
  t->count++;
  t->arena_len += alen + (size_t)slash + blen + 1;
  return LADLE_OK;
}

ladle_status ladle__path_table_add(ladle__path_table *t, const char *path, size_t len,
                                   int32_t label) {
  return add_joined(t, "", 0, path, len, label);
}

void ladle__path_table_free(ladle__path_table *t) {
  free(t->arena);
  free(t->offsets);
  free(t->labels);
  memset(t, 0, sizeof *t);
}

void ladle__path_table_trim(ladle__path_table *t) {
  if (t->count == 0) return;
  char *arena = realloc(t->arena, t->arena_len);
  if (arena) {
    t->arena = arena;
    t->arena_cap = t->arena_len;
  }
  uint64_t *offsets = realloc(t->offsets, (size_t)t->count * sizeof *offsets);
  if (offsets) t->offsets = offsets;
  int32_t *labels = realloc(t->labels, (size_t)t->count * sizeof *labels);
  if (labels) t->labels = labels;
  if (offsets && labels) t->cap = t->count;
}

/* ------------------------------------------------------------------------ */
/* Name filters                                                               */
/* ------------------------------------------------------------------------ */

static int ascii_lower(int c) { return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; }

static int has_suffix(const char *name, const char *suffix, int case_sensitive) {
  size_t n = strlen(name), m = strlen(suffix);
  if (m > n) return 0;
  const char *tail = name + n - m;
  if (case_sensitive) return memcmp(tail, suffix, m) == 0;
  size_t k = 0;
  while (k < m && ascii_lower((unsigned char)tail[k]) == ascii_lower((unsigned char)suffix[k])) k++;
  return k == m;
}

/* The patterns in force: the defaults for files without any. */
static const char *const *filter_patterns(const ladle__name_filter *f, int is_file, int *count) {
  *count = f->count;
  if (f->count || !is_file) return f->patterns;
  *count = DEFAULT_FILE_FILTERS;
  return default_file_filters;
}

int ladle__name_filter_match(const ladle__name_filter *f, const char *name, int is_file) {
  int count;
  const char *const *patterns = filter_patterns(f, is_file, &count);
  if (!count) return 1; /* folders, no dir_filters */
  for (int i = 0; i < count; i++) {
    const char *p = patterns[i];
    if (p[0] == '*' && !strpbrk(p + 1, "*?[\\")) {
      if (has_suffix(name, p + 1, f->case_sensitive)) return 1;
    } else if (fnmatch(p, name, f->case_sensitive ? 0 : FNM_CASEFOLD) == 0) {
      return 1;
    }
  }
  return 0;
}

/* "*.jpg *.png ..." for error messages. */
static void format_patterns(char *out, size_t size, const ladle__name_filter *f, int is_file) {
  int count;
  const char *const *patterns = filter_patterns(f, is_file, &count);
  size_t used = 0;
  out[0] = '\0';
  for (int i = 0; i < count && used + 1 < size; i++) {
    int w = snprintf(out + used, size - used, "%s%s", i ? " " : "", patterns[i]);
    if (w < 0) break;
    used += (size_t)w;
  }
  if (used >= size && size > 4) strcpy(out + size - 4, "...");
}

/* ------------------------------------------------------------------------ */
/* Tree walk                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct dev_ino {
  dev_t dev;
  ino_t ino;
} dev_ino;

typedef struct walk {
  ladle__path_table *t;
  const ladle__name_filter *files;
  char *buf; /* the current folder's path */
  size_t len, cap;
  dev_ino *open; /* the folders being walked, outermost first: loop detection */
  int depth, open_cap;
  int32_t label;
} walk;

/* Appends "/name" to the current path. */
static ladle_status walk_push(walk *w, const char *name) {
  ladle_status st = LADLE_OK;
  size_t n = strlen(name);
  int slash = w->len > 0 && w->buf[w->len - 1] != '/';
  if (w->cap < w->len + (size_t)slash + n + 1) {
    size_t cap = w->cap ? w->cap : 256;
    while (cap < w->len + (size_t)slash + n + 1) cap *= 2;
    char *buf = realloc(w->buf, cap);
    LADLE_CHECK(buf, LADLE_ERROR_OUT_OF_MEMORY, "cannot allocate %zu bytes", cap);
    w->buf = buf;
    w->cap = cap;
  }
  if (slash) w->buf[w->len++] = '/';
  memcpy(w->buf + w->len, name, n + 1);
  w->len += n;
done:
  return st;
}

/* What a directory entry is: 0 other (skipped), 1 file, 2 folder. d_type
 * answers without a stat for plain files and folders; links are followed. */
static int entry_kind(walk *w, const struct dirent *e) {
#ifdef _DIRENT_HAVE_D_TYPE
  if (e->d_type == DT_REG) return 1;
  if (e->d_type == DT_DIR) return 2;
  if (e->d_type != DT_LNK && e->d_type != DT_UNKNOWN) return 0;
#endif
  size_t saved = w->len;
  int kind = 0;
  if (walk_push(w, e->d_name) == LADLE_OK) {
    struct stat sb;
    /* A dangling link is not a file: skipped like a socket would be. */
    if (stat(w->buf, &sb) == 0) kind = S_ISREG(sb.st_mode) ? 1 : S_ISDIR(sb.st_mode) ? 2 : 0;
  } else {
    kind = -1;
  }
  w->len = saved;
  w->buf[saved] = '\0';
  return kind;
}

/* Adds every accepted file under the current path (a folder), recursively. */
static ladle_status walk_folder(walk *w) {
  ladle_status st = LADLE_OK;
  char err[128];
  DIR *d = opendir(w->buf);
  LADLE_CHECK(d, LADLE_ERROR_IO, "cannot open folder %s: %s", w->buf,
              ladle__errno_text(errno, err, sizeof err));
  struct stat sb;
  LADLE_CHECK(fstat(dirfd(d), &sb) == 0, LADLE_ERROR_IO, "cannot stat folder %s: %s", w->buf,
              ladle__errno_text(errno, err, sizeof err));
  for (int i = 0; i < w->depth; i++)
    LADLE_CHECK(w->open[i].dev != sb.st_dev || w->open[i].ino != sb.st_ino,
                LADLE_ERROR_INVALID_ARGUMENT,
                "%s is a link back to a folder that contains it (a loop)", w->buf);
  if (w->depth == w->open_cap) {
    int cap = w->open_cap ? w->open_cap * 2 : 16;
    dev_ino *open = realloc(w->open, (size_t)cap * sizeof *open);
    LADLE_CHECK(open, LADLE_ERROR_OUT_OF_MEMORY, "cannot allocate the folder stack");
    w->open = open;
    w->open_cap = cap;
  }
  w->open[w->depth].dev = sb.st_dev;
  w->open[w->depth].ino = sb.st_ino;
  w->depth++;
  for (;;) {
    errno = 0;
    struct dirent *e = readdir(d);
    if (!e) {
      LADLE_CHECK(errno == 0, LADLE_ERROR_IO, "cannot read folder %s: %s", w->buf,
                  ladle__errno_text(errno, err, sizeof err));
      break;
    }
    const char *name = e->d_name;
    if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
    int kind = entry_kind(w, e);
    LADLE_CHECK(kind >= 0, LADLE_ERROR_OUT_OF_MEMORY, "cannot allocate a path");
    if (kind == 1 && ladle__name_filter_match(w->files, name, 1)) {
      LADLE_TRY(add_joined(w->t, w->buf, w->len, name, strlen(name), w->label));
    } else if (kind == 2) {
      size_t saved = w->len;
      LADLE_TRY(walk_push(w, name));
      st = walk_folder(w);
      w->len = saved;
      w->buf[saved] = '\0';
      if (st != LADLE_OK) goto done;
    }
  }
  w->depth--;
done:
  if (d) closedir(d);
  return st;
}

static int compare_strings(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorts records [begin, end) by path (only their offsets move). */
static ladle_status sort_range(ladle__path_table *t, int64_t begin, int64_t end,
                               const char ***tmp, int64_t *tmp_cap) {
  ladle_status st = LADLE_OK;
  int64_t n = end - begin;
  if (n < 2) return LADLE_OK;
  if (*tmp_cap < n) {
    const char **p = realloc(*tmp, (size_t)n * sizeof *p);
    LADLE_CHECK(p, LADLE_ERROR_OUT_OF_MEMORY, "cannot allocate %lld pointers for sorting",
                (long long)n);
    *tmp = p;
    *tmp_cap = n;
  }
  for (int64_t i = 0; i < n; i++) (*tmp)[i] = t->arena + t->offsets[begin + i];
  qsort(*tmp, (size_t)n, sizeof **tmp, compare_strings);
  for (int64_t i = 0; i < n; i++) t->offsets[begin + i] = (uint64_t)((*tmp)[i] - t->arena);
done:
  return st;
}

ladle_status ladle__path_table_from_tree(ladle__path_table *t, const char *root, const ladle__name_filter *files,
                                         const ladle__name_filter *dirs) {
  ladle_status st = LADLE_OK;
  walk w = {.t = t, .files = files};
  int64_t folders = 0;
  ladle__path_table classes = {0}; /* subfolder names, reusing the table's storage */
  const char **tmp = NULL;
  int64_t tmp_cap = 0;
  DIR *d = NULL;
  char err[128];

  size_t root_len = strlen(root);
  while (root_len > 1 && root[root_len - 1] == '/') root_len--;
  w.cap = root_len + 256;
  LADLE_ALLOC(w.buf, w.cap);
  memcpy(w.buf, root, root_len);
  w.buf[root_len] = '\0';
  w.len = root_len;

  d = opendir(w.buf);
  LADLE_CHECK(d, LADLE_ERROR_IO, "cannot open folder %s (file_root): %s", w.buf,
              ladle__errno_text(errno, err, sizeof err));
  for (;;) {
    errno = 0;
    struct dirent *e = readdir(d);
    if (!e) {
      LADLE_CHECK(errno == 0, LADLE_ERROR_IO, "cannot read folder %s: %s", w.buf,
                  ladle__errno_text(errno, err, sizeof err));
      break;
    }
    const char *name = e->d_name;
    if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
    int kind = entry_kind(&w, e);
    LADLE_CHECK(kind >= 0, LADLE_ERROR_OUT_OF_MEMORY, "cannot allocate a path");
    if (kind != 2) continue;
    folders++;
    if (ladle__name_filter_match(dirs, name, 0)) LADLE_TRY(ladle__path_table_add(&classes, name, strlen(name), 0));
  }
  closedir(d);
  d = NULL;
  LADLE_CHECK(folders > 0, LADLE_ERROR_INVALID_ARGUMENT,
              "%s has no subfolders; file_root expects one subfolder per class", w.buf);
  if (classes.count == 0) {
    char list[256];
    format_patterns(list, sizeof list, dirs, 0);
    LADLE_CHECK(0, LADLE_ERROR_INVALID_ARGUMENT, "none of the %lld subfolders of %s matches dir_filters (%s)",
                (long long)folders, w.buf, list);
  }
  LADLE_CHECK(classes.count <= INT32_MAX, LADLE_ERROR_LIMIT, "%s has too many subfolders",
              w.buf);
  LADLE_TRY(sort_range(&classes, 0, classes.count, &tmp, &tmp_cap));

  for (int64_t c = 0; c < classes.count; c++) {
    int64_t first = t->count;
    w.label = (int32_t)c;
    LADLE_TRY(walk_push(&w, classes.arena + classes.offsets[c]));
    LADLE_TRY(walk_folder(&w));
    w.len = root_len;
    w.buf[root_len] = '\0';
    LADLE_TRY(sort_range(t, first, t->count, &tmp, &tmp_cap));
  }
  if (t->count == 0) {
    char list[256];
    format_patterns(list, sizeof list, files, 1);
    st = LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT, "no files matching file_filters (%s) in the %lld subfolders of %s",
                    list, (long long)classes.count, w.buf);
  }
done:
  if (d) closedir(d);
  free(tmp);
  free(w.buf);
  free(w.open);
  ladle__path_table_free(&classes);
  return st;
}

/* ------------------------------------------------------------------------ */
/* List file                                                                  */
/* ------------------------------------------------------------------------ */

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

/* Parses an int32 from s[0..n); 0 on failure. */
static int parse_label(const char *s, size_t n, int32_t *out) {
  size_t i = 0;
  int neg = 0;
  if (i < n && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  if (i == n) return 0;
  int64_t v = 0;
  for (; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return 0;
    v = v * 10 + (s[i] - '0');
    if (v > (int64_t)INT32_MAX + 1) return 0;
  }
  if (neg) v = -v;
  if (v < INT32_MIN || v > INT32_MAX) return 0;
  *out = (int32_t)v;
  return 1;
}

ladle_status ladle__path_table_from_list_file(ladle__path_table *t, const char *list_path,
                                              const char *root) {
  ladle_status st = LADLE_OK;
  char *text = NULL;
  size_t size = 0;
  LADLE_TRY(ladle__read_whole_file(list_path, "file_list", &text, &size));

  /* Relative paths are relative to root, else to the list's folder. */
  const char *base = root;
  size_t base_len = root ? strlen(root) : 0;
  if (!root) {
    const char *slash = strrchr(list_path, '/');
    base = list_path;
    base_len = slash ? (size_t)(slash - list_path) + (slash == list_path) : 0;
  }

  int64_t line_no = 0;
  for (size_t at = 0; at < size;) {
    const char *line = text + at;
    const char *nl = memchr(line, '\n', size - at);
    size_t n = nl ? (size_t)(nl - line) : size - at;
    at += n + 1;
    line_no++;
    LADLE_CHECK(memchr(line, '\0', n) == NULL, LADLE_ERROR_INVALID_ARGUMENT,
                "%s:%lld: the line contains a NUL byte", list_path, (long long)line_no);
    while (n > 0 && is_blank(line[n - 1])) n--;
    while (n > 0 && is_blank(line[0])) line++, n--;
    if (n == 0 || line[0] == '#') continue;
    size_t split = n;
    while (split > 0 && !is_blank(line[split - 1])) split--;
    LADLE_CHECK(split > 0, LADLE_ERROR_INVALID_ARGUMENT,
                "%s:%lld: expected \"path label\", found no label in \"%.*s\"", list_path,
                (long long)line_no, (int)(n > 200 ? 200 : n), line);
    const char *label_text = line + split;
    size_t label_len = n - split;
    size_t path_len = split;
    while (path_len > 0 && is_blank(line[path_len - 1])) path_len--;
    int32_t label;
    LADLE_CHECK(parse_label(label_text, label_len, &label), LADLE_ERROR_INVALID_ARGUMENT,
                "%s:%lld: the label \"%.*s\" is not an integer in int32 range", list_path,
                (long long)line_no, (int)(label_len > 64 ? 64 : label_len), label_text);
    if (line[0] == '/')
      LADLE_TRY(add_joined(t, "", 0, line, path_len, label));
    else
      LADLE_TRY(add_joined(t, base, base_len, line, path_len, label));
  }
  LADLE_CHECK(t->count > 0, LADLE_ERROR_INVALID_ARGUMENT,
              "the file list %s has no entries (only blank lines or comments)", list_path);
done:
  free(text);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Explicit list                                                              */
/* ------------------------------------------------------------------------ */

ladle_status ladle__path_table_from_files(ladle__path_table *t, const char *const *files,
                                          int num_files, const int32_t *labels,
                                          const char *root) {
  ladle_status st = LADLE_OK;
  LADLE_CHECK(num_files > 0 && files, LADLE_ERROR_INVALID_ARGUMENT, "files is empty");
  size_t root_len = root ? strlen(root) : 0;
  for (int i = 0; i < num_files; i++) {
    const char *f = files[i];
    LADLE_CHECK(f && f[0], LADLE_ERROR_INVALID_ARGUMENT, "files[%d] is %s", i,
                f ? "an empty string" : "NULL");
    int32_t label = labels ? labels[i] : (int32_t)i;
    if (f[0] == '/' || !root)
      LADLE_TRY(add_joined(t, "", 0, f, strlen(f), label));
    else
      LADLE_TRY(add_joined(t, root, root_len, f, strlen(f), label));
  }
done:
  return st;
}

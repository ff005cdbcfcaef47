/* readers.numpy: NumPy .npy files (io/npy.h), whole or a region of interest
 * of each, as one tensor per sample; batches come from the shared sampler
 * (io/sampler.h), as for readers.file. device="gpu" reads on the host
 * workers into pinned memory and moves the batch with one copy. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/threads.h"
#include "io/io_util.h"
#include "io/npy.h"
#include "io/path_table.h"
#include "ops/op.h"
#include "ops/readers/reader_args.h"
#include "ops/tensor/tensor_args.h"

#ifdef LADLE_HAVE_CUDA
#include "cuda/runtime.h"
#endif

enum {
  ARG_FILE_ROOT, ARG_FILE_FILTER, ARG_FILE_LIST, ARG_FILES, ARG_ROI_START, ARG_REL_ROI_START, ARG_ROI_END,
  ARG_REL_ROI_END, ARG_ROI_SHAPE, ARG_REL_ROI_SHAPE, ARG_ROI_AXES, ARG_POLICY, ARG_FILL_VALUE, ARG_USE_O_DIRECT,
  ARG_CACHE_HEADER, ARG_REGISTER_BUFFERS, ARG_HINTS, ARG_SAMPLER = ARG_HINTS + LADLE__HINT_ARG_COUNT,
  ARG_COUNT = ARG_SAMPLER + LADLE__SAMPLER_ARG_COUNT
};

enum { POLICY_ERROR, POLICY_TRIM, POLICY_PAD };

static const ladle_arg_schema args[ARG_COUNT] = {
    [ARG_FILE_ROOT] = {LADLE_OPTIONAL_ARG("file_root", LADLE_ARG_STRING),
        .doc = "Folder of .npy files: without file_list and files, the files directly in it and in its immediate "
               "subfolders whose name matches file_filter: the files directly in file_root first, then "
               "each subfolder's, subfolders and files sorted by name (byte-wise), as DALI lists them. Otherwise the base of relative paths."},
    [ARG_FILE_FILTER] = {LADLE_STRING_ARG("file_filter", "*.npy"),
        .doc = "Glob pattern (fnmatch, case-sensitive) the file names under file_root must match."},
    [ARG_FILE_LIST] = {LADLE_OPTIONAL_ARG("file_list", LADLE_ARG_STRING),
        .doc = "Text file with one path per line (blank lines skipped; spaces are part of the path), relative "
               "to file_root when given, else to the list file's folder. Exclusive with files."},
    [ARG_FILES] = {LADLE_OPTIONAL_ARG("files", LADLE_ARG_STRINGS),
        .doc = "Explicit list of paths, relative ones joined to file_root when given. Exclusive with file_list."},
    [ARG_ROI_START] = {LADLE_OPTIONAL_ARG("roi_start", LADLE_ARG_INTS), .per_sample = 1,
        .doc = "Start of the region of interest, in elements, one per roi_axes entry (all axes without it)."},
    [ARG_REL_ROI_START] = {LADLE_OPTIONAL_ARG("rel_roi_start", LADLE_ARG_FLOATS), .per_sample = 1,
        .doc = "Start of the region of interest as fractions of the extents (rounded to nearest after scaling)."},
    [ARG_ROI_END] = {LADLE_OPTIONAL_ARG("roi_end", LADLE_ARG_INTS), .per_sample = 1,
        .doc = "End (exclusive) of the region of interest, in elements."},
    [ARG_REL_ROI_END] = {LADLE_OPTIONAL_ARG("rel_roi_end", LADLE_ARG_FLOATS), .per_sample = 1,
        .doc = "End of the region of interest as fractions of the extents."},
    [ARG_ROI_SHAPE] = {LADLE_OPTIONAL_ARG("roi_shape", LADLE_ARG_INTS), .per_sample = 1,
        .doc = "Shape of the region of interest, in elements."},
    [ARG_REL_ROI_SHAPE] = {LADLE_OPTIONAL_ARG("rel_roi_shape", LADLE_ARG_FLOATS), .per_sample = 1,
        .doc = "Shape of the region of interest as fractions of the extents (the end is start + shape, rounded "
               "to nearest)."},
    [ARG_ROI_AXES] = {LADLE_OPTIONAL_ARG("roi_axes", LADLE_ARG_INTS), LADLE_RANGE(0.0, LADLE_MAX_NDIM - 1),
        .doc = "The axes the roi_* values refer to, in their order; default: every axis."},
    [ARG_POLICY] = {LADLE_STRING_ARG("out_of_bounds_policy", "error"), LADLE_CHOICES("error", "trim_to_shape", "pad"),
        .doc = "A region reaching outside the array: an error naming the file, cut to the array (trim_to_shape), "
               "or padded with fill_value (pad)."},
    [ARG_FILL_VALUE] = {LADLE_FLOAT_ARG("fill_value", 0), .doc = "The padding value of out_of_bounds_policy=\"pad\", "
               "converted to the array's type (saturating)."},
    [ARG_USE_O_DIRECT] = {LADLE_BOOL_ARG("use_o_direct", 0),
        .doc = "Read the files with O_DIRECT (bypassing the page cache) in 4096-byte aligned blocks; where the "
               "file system refuses O_DIRECT (tmpfs) the read fails naming the file. Needs dont_use_mmap=True, "
               "as in DALI."},
    [ARG_CACHE_HEADER] = {LADLE_BOOL_ARG("cache_header_information", 0), .no_effect = 1,
        .doc = "Accepted for DALI scripts: a speed hint; ladle parses each header when it reads the file (one "
               "small read)."},
    [ARG_REGISTER_BUFFERS] = {LADLE_BOOL_ARG("register_buffers", 1), .no_effect = 1,
        .doc = "Accepted for DALI scripts: cuFile buffer registration (GDS), which ladle does not use (DALI "
               "disables it too)."},
    LADLE__HINT_ARG_SCHEMAS(ARG_HINTS),
    LADLE__SAMPLER_ARG_SCHEMAS(ARG_SAMPLER),
};

#define DIRECT_ALIGN 4096

typedef struct np_state {
  ladle__path_table files;
  ladle__sampler *sampler;
  ladle_dtype dtype;
  int ndim;
  int axes[LADLE_MAX_NDIM], num_axes; /* the roi_* values' axes */
  int start_arg, end_arg, end_kind;   /* end_kind: 0 end, 1 shape; args -1 when not given */
  int has_roi, policy, o_direct;
  uint8_t fill[8];
} np_state;

typedef struct np_sample {
  ladle__npy_header h;
  int64_t index; /* the record, from setup (run_batch has no refs) */
  int64_t start[LADLE_MAX_NDIM], shape[LADLE_MAX_NDIM];
} np_sample;

/* --- listing ------------------------------------------------------------- */

typedef struct listing {
  char **names; /* relative: "./file" or "sub/file" */
  size_t count, cap;
} listing;

static ladle_status listing_add(listing *l, const char *dir, const char *name) {
  if (l->count == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 256;
    char **grown = realloc(l->names, cap * sizeof *grown);
    if (!grown) return LADLE_FAIL(LADLE_ERROR_OUT_OF_MEMORY, "out of memory listing files");
    l->names = grown;
    l->cap = cap;
  }
  size_t len = strlen(dir) + strlen(name) + 2;
  char *s = malloc(len);
  if (!s) return LADLE_FAIL(LADLE_ERROR_OUT_OF_MEMORY, "out of memory listing files");
  snprintf(s, len, "%s/%s", dir, name);
  l->names[l->count++] = s;
  return LADLE_OK;
}

/* DALI's order: the files directly in the folder ("./name") first, then each
 * subfolder's in the order of the subfolders' names; by name within one. */
static int cmp_names(const void *pa, const void *pb) {
  const char *a = *(char *const *)pa, *b = *(char *const *)pb;
  int ra = strncmp(a, "./", 2) == 0, rb = strncmp(b, "./", 2) == 0;
  if (ra != rb) return rb - ra;
  size_t da = strcspn(a, "/"), db = strcspn(b, "/");
  int c = strncmp(a, b, da < db ? da : db);
  if (c || da == db) return c ? c : strcmp(a + da, b + db);
  return da < db ? -1 : 1;
}

/* 1: a directory, 0: a regular file, -1: neither (or gone). Links followed. */
static int entry_kind(const char *dir, const char *name) {
  char path[4096];
  struct stat sb;
  if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path || stat(path, &sb) != 0) return -1;
  return S_ISDIR(sb.st_mode) ? 1 : S_ISREG(sb.st_mode) ? 0 : -1;
}

/* The files of `dir` (relative name `rel`) matching filter; with
 * subfolders, those of each immediate subfolder too. */
static ladle_status list_dir(listing *l, const char *root, const char *rel, const char *filter, int subfolders) {
  ladle_status st = LADLE_OK;
  char dir[4096], err[128];
  snprintf(dir, sizeof dir, "%s/%s", root, rel);
  DIR *d = opendir(subfolders ? root : dir);
  if (!d) return LADLE_FAIL(LADLE_ERROR_IO, "%s: %s", subfolders ? root : dir, ladle__errno_text(errno, err, sizeof err));
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    int kind = entry_kind(subfolders ? root : dir, e->d_name);
    if (kind == 1 && subfolders) {
      LADLE_TRY(list_dir(l, root, e->d_name, filter, 0));
    } else if (kind == 0 && fnmatch(filter, e->d_name, 0) == 0) {
      LADLE_TRY(listing_add(l, subfolders ? "." : rel, e->d_name));
    }
  }
done:
  closedir(d);
  return st;
}

static ladle_status list_root(ladle__path_table *t, const char *root, const char *filter) {
  listing l = {0};
  ladle_status st = list_dir(&l, root, "", filter, 1);
  if (st == LADLE_OK && l.count) qsort(l.names, l.count, sizeof *l.names, cmp_names);
  size_t rlen = strlen(root);
  while (rlen > 1 && root[rlen - 1] == '/') rlen--;
  for (size_t i = 0; st == LADLE_OK && i < l.count; i++) {
    const char *rel = strncmp(l.names[i], "./", 2) == 0 ? l.names[i] + 2 : l.names[i];
    size_t len = rlen + 1 + strlen(rel);
    char *full = malloc(len + 1);
    if (!full) {
      st = LADLE_FAIL(LADLE_ERROR_OUT_OF_MEMORY, "out of memory listing files");
      break;
    }
    snprintf(full, len + 1, "%.*s/%s", (int)rlen, root, rel);
    st = ladle__path_table_add(t, full, len, 0);
    free(full);
  }
  for (size_t i = 0; i < l.count; i++) free(l.names[i]);
  free(l.names);
  return st;
}

/* One path per line; relative ones joined to root or to the list's folder. */
static ladle_status list_file(ladle__path_table *t, const char *list_path, const char *root) {
  ladle_status st = LADLE_OK;
  char *text = NULL, *base = NULL;
  const char **lines = NULL;
  size_t size = 0, count = 0;
  LADLE_TRY(ladle__read_whole_file(list_path, "file_list", &text, &size));
  if (!root) {
    const char *slash = strrchr(list_path, '/');
    size_t blen = slash ? (size_t)(slash - list_path) + 1 : 0;
    LADLE_ALLOC(base, blen + 1);
    memcpy(base, list_path, blen);
    root = base[0] ? base : NULL;
  }
  LADLE_ALLOC(lines, size / 2 + 2);
  for (char *p = text; *p;) {
    char *nl = strchr(p, '\n'), *next = nl ? nl + 1 : p + strlen(p);
    char *e = nl ? nl : next;
    while (e > p && (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t')) e--;
    char *b = p;
    while (b < e && (*b == ' ' || *b == '\t')) b++;
    *e = 0;
    if (b < e) lines[count++] = b;
    p = next;
  }
  LADLE_CHECK(count > 0, LADLE_ERROR_INVALID_ARGUMENT, "file_list %s names no files", list_path);
  LADLE_TRY(ladle__path_table_from_files(t, lines, (int)count, NULL, root));
done:
  free(lines);
  free(base);
  free(text);
  return st;
}

/* --- reading --------------------------------------------------------------- */

static ladle_status open_file(const char *path, int direct, int *fd) {
  char err[128];
  *fd = open(path, O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0));
  if (*fd < 0)
    return LADLE_FAIL(LADLE_ERROR_IO, "%s: %s%s", path, ladle__errno_text(errno, err, sizeof err),
                      direct && errno == EINVAL ? " (the file system refuses O_DIRECT: leave use_o_direct off)" : "");
  return LADLE_OK;
}

/* Reads [offset, offset + bytes) of the file into dst. With O_DIRECT the
 * reads are 4096-byte aligned, into `aligned` (at least bytes + 2 blocks). */
static ladle_status read_range(int fd, const char *path, uint8_t *dst, int64_t offset, int64_t bytes, uint8_t *aligned) {
  char err[128];
  size_t got = 0;
  if (!bytes) return LADLE_OK;
  if (!aligned) {
    if (ladle__pread_full(fd, dst, (size_t)bytes, offset, &got) != 0)
      return LADLE_FAIL(LADLE_ERROR_IO, "%s: %s", path, ladle__errno_text(errno, err, sizeof err));
  } else {
    int64_t lo = offset & ~(int64_t)(DIRECT_ALIGN - 1);
    int64_t hi = (offset + bytes + DIRECT_ALIGN - 1) & ~(int64_t)(DIRECT_ALIGN - 1);
    if (ladle__pread_full(fd, aligned, (size_t)(hi - lo), lo, &got) != 0)
      return LADLE_FAIL(LADLE_ERROR_IO, "%s: %s (O_DIRECT read)", path, ladle__errno_text(errno, err, sizeof err));
    got = got > (size_t)(offset - lo) ? got - (size_t)(offset - lo) : 0;
    if (got > (size_t)bytes) got = (size_t)bytes;
    memcpy(dst, aligned + (offset - lo), got);
  }
  if (got < (size_t)bytes)
    return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "%s: the file is shorter than its .npy header says (it changed?)",
                      path);
  return LADLE_OK;
}

/* --- the operator ---------------------------------------------------------- */

static void np_fini(ladle__node *n) {
  np_state *w = n->state;
  if (!w) return;
  ladle__path_table_free(&w->files);
  ladle__sampler_destroy(w->sampler);
  free(w);
  n->state = NULL;
}

static const char *path_of(const np_state *w, int64_t i) { return w->files.arena + w->files.offsets[i]; }

static ladle_status np_init(ladle__node *n) {
  ladle_status st = LADLE_OK;
  const char *root = ladle__arg_string(n, ARG_FILE_ROOT), *list = ladle__arg_string(n, ARG_FILE_LIST);
  const ladle_value *files = ladle__arg_value(n, ARG_FILES), *axes = ladle__arg_value(n, ARG_ROI_AXES);
  if (root && !root[0]) root = NULL;
  if (list && !list[0]) list = NULL;
  if (list && files->count)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "give either argument 'files' or 'file_list', not both");
  if (!list && !files->count && !root)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "give argument 'file_root' (a folder to list), 'file_list' or 'files'");
  if (ladle__arg_given(n, ARG_ROI_START) && ladle__arg_given(n, ARG_REL_ROI_START))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "arguments 'roi_start' and 'rel_roi_start' are exclusive");
  const int ends[] = {ARG_ROI_END, ARG_REL_ROI_END, ARG_ROI_SHAPE, ARG_REL_ROI_SHAPE};
  int num_ends = 0;
  for (int k = 0; k < 4; k++) num_ends += ladle__arg_given(n, ends[k]);
  if (num_ends > 1)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "arguments 'roi_end', 'rel_roi_end', 'roi_shape' and 'rel_roi_shape' are exclusive: give one");
  if (ladle__arg_int(n, NULL, ARG_USE_O_DIRECT) && !ladle__arg_int(n, NULL, ARG_SAMPLER + LADLE__SAMPLER_ARG_DONT_USE_MMAP))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "argument 'use_o_direct' needs dont_use_mmap=True (as in DALI)");
  ladle__sampler_params sp;
  st = ladle__reader_sampler_params(n, ARG_SAMPLER, 0, &sp);
  if (st != LADLE_OK) return st;
  st = ladle__sampler_check_batching(sp.batch_size, sp.num_shards, sp.shard_id);
  if (st != LADLE_OK) return ladle__wrap_error(st, "readers.numpy");

  np_state *w = calloc(1, sizeof *w);
  if (!w) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  n->state = w;
  w->policy = ladle__arg_choice(n, ARG_POLICY);
  w->o_direct = (int)ladle__arg_int(n, NULL, ARG_USE_O_DIRECT);
  w->start_arg = ladle__arg_given(n, ARG_ROI_START) ? ARG_ROI_START
                 : ladle__arg_given(n, ARG_REL_ROI_START) ? ARG_REL_ROI_START : -1;
  w->end_arg = -1;
  for (int k = 0; k < 4; k++)
    if (ladle__arg_given(n, ends[k])) w->end_arg = ends[k], w->end_kind = k >= 2;
  w->has_roi = w->start_arg >= 0 || w->end_arg >= 0;
  if (list) st = list_file(&w->files, list, root);
  else if (files->count) st = ladle__path_table_from_files(&w->files, files->u.strings, files->count, NULL, root);
  else st = list_root(&w->files, root, ladle__arg_string(n, ARG_FILE_FILTER));
  if (st != LADLE_OK) goto fail;
  if (w->files.count == 0) {
    st = LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "no file under file_root %s matches file_filter \"%s\"", root,
                       ladle__arg_string(n, ARG_FILE_FILTER));
    goto fail;
  }
  /* The output's type and rank: the first file's (every file must agree). */
  ladle__npy_header h;
  int fd = -1;
  st = open_file(path_of(w, 0), 0, &fd);
  if (st != LADLE_OK) goto fail;
  st = ladle__npy_read_header(fd, path_of(w, 0), &h);
  close(fd);
  if (st != LADLE_OK) goto fail;
  w->dtype = h.dtype;
  w->ndim = h.ndim;
  if (axes->count) {
    if (axes->count > h.ndim) {
      st = LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'roi_axes' has %d axes; the arrays have %d",
                         axes->count, h.ndim);
      goto fail;
    }
    for (int k = 0; k < axes->count; k++) {
      int ax = (int)axes->u.ints[k];
      for (int j = 0; j < k; j++)
        if (w->axes[j] == ax) {
          st = LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'roi_axes' repeats axis %d", ax);
          goto fail;
        }
      if (ax >= h.ndim) {
        st = LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'roi_axes': axis %d of arrays with %d", ax,
                           h.ndim);
        goto fail;
      }
      w->axes[k] = ax;
    }
    w->num_axes = axes->count;
  } else {
    for (int d = 0; d < h.ndim; d++) w->axes[d] = d;
    w->num_axes = h.ndim;
  }
  ladle__tensor_value(w->fill, w->dtype, ladle__arg_float(n, NULL, ARG_FILL_VALUE));
  sp.num_records = w->files.count;
  st = ladle__sampler_create(&sp, &w->sampler);
  if (st != LADLE_OK) goto fail;
  n->out[0] = (ladle__out_desc){w->dtype, w->ndim, ""};
  return LADLE_OK;
fail:
  ladle__wrap_error(st, "readers.numpy");
  np_fini(n);
  return st;
}

static ladle_status np_plan(ladle__node *n, int64_t iteration, ladle__sample_ref *refs) {
  ladle__sampler_plan(((np_state *)n->state)->sampler, iteration, refs);
  return LADLE_OK;
}

static const char *np_sample_name(ladle__node *n, int64_t index) { return path_of(n->state, index); }

static ladle_status np_meta(ladle__node *n, ladle_reader_meta *meta) {
  ladle__sampler_meta(((np_state *)n->state)->sampler, meta);
  return LADLE_OK;
}

/* The region of sample s from the roi_* arguments (as slice computes it). */
static ladle_status roi_of(ladle__node *n, ladle__sample *s, const char *path, np_sample *ss) {
  const np_state *w = n->state;
  const ladle__npy_header *h = &ss->h;
  double a[LADLE_TENSOR_MAX_LIST], b[LADLE_TENSOR_MAX_LIST];
  for (int d = 0; d < h->ndim; d++) ss->start[d] = 0, ss->shape[d] = h->shape[d];
  if (!w->has_roi) return LADLE_OK;
  int na = w->start_arg >= 0 ? ladle__tensor_list(n, s, w->start_arg, a, LADLE_TENSOR_MAX_LIST) : -1;
  int nb = w->end_arg >= 0 ? ladle__tensor_list(n, s, w->end_arg, b, LADLE_TENSOR_MAX_LIST) : -1;
  if (na == -2 || nb == -2) return LADLE_ERROR_INVALID_ARGUMENT;
  const ladle_arg_schema *sa = n->def->schema.args;
  if (na >= 0 && na != w->num_axes)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument '%s' has %d values for %d axes", sa[w->start_arg].name,
                         na, w->num_axes);
  if (nb >= 0 && nb != w->num_axes)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument '%s' has %d values for %d axes", sa[w->end_arg].name,
                         nb, w->num_axes);
  int a_rel = w->start_arg == ARG_REL_ROI_START, b_rel = w->end_arg == ARG_REL_ROI_END || w->end_arg == ARG_REL_ROI_SHAPE;
  for (int k = 0; k < w->num_axes; k++) {
    int ax = w->axes[k];
    double extent = (double)h->shape[ax];
    double lo = na >= 0 ? (a_rel ? a[k] * extent : a[k]) : 0;
    double len = nb >= 0 ? (b_rel ? b[k] * extent : b[k]) : 0;
    double hi = nb < 0 ? extent : w->end_kind ? lo + len : len;
    if (!(fabs(lo) < 9e15 && fabs(hi) < 9e15))
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "%s: the region of interest of axis %d is out of range",
                           path, ax);
    int64_t start = (int64_t)llround(lo), end = (int64_t)llround(hi);
    if (end < start)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                           "%s: the region of interest ends before it starts in axis %d (start %lld, end %lld)", path,
                           ax, (long long)start, (long long)end);
    if (w->policy == POLICY_ERROR && (start < 0 || end > h->shape[ax]))
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                           "%s: the region of interest [%lld, %lld) of axis %d is outside the array's extent %lld "
                           "(out_of_bounds_policy \"error\"; \"pad\" and \"trim_to_shape\" allow it)",
                           path, (long long)start, (long long)end, ax, (long long)h->shape[ax]);
    if (w->policy == POLICY_TRIM) {
      if (start < 0) start = 0;
      if (start > h->shape[ax]) start = h->shape[ax];
      if (end > h->shape[ax]) end = h->shape[ax];
      if (end < start) end = start;
    }
    ss->start[ax] = start;
    ss->shape[ax] = end - start;
  }
  return LADLE_OK;
}

static ladle_status np_setup(ladle__node *n, ladle__sample *s) {
  np_state *w = n->state;
  np_sample *ss = s->state;
  const char *path = path_of(w, s->ref->index);
  int fd = -1;
  ss->index = s->ref->index;
  ladle_status st = open_file(path, 0, &fd);
  if (st != LADLE_OK) return ladle__wrap_error(st, "readers.numpy");
  st = ladle__npy_read_header(fd, path, &ss->h);
  close(fd);
  if (st != LADLE_OK) return ladle__wrap_error(st, "readers.numpy");
  if (ss->h.dtype != w->dtype || ss->h.ndim != w->ndim)
    return LADLE_OP_FAIL(n, LADLE_ERROR_CORRUPT_DATA,
                         "%s holds %s with %d dimensions; the first file (%s) holds %s with %d: every file must "
                         "have the same type and number of dimensions",
                         path, ladle_dtype_name(ss->h.dtype), ss->h.ndim, path_of(w, 0), ladle_dtype_name(w->dtype),
                         w->ndim);
  st = roi_of(n, s, path, ss);
  if (st != LADLE_OK) return st;
  ladle__set_shape(n, s, 0, ss->shape);
  return LADLE_OK;
}

/* Reads sample s's output into dst (out_bytes bytes). */
static ladle_status read_sample(ladle__node *n, ladle__sample *s, uint8_t *dst, size_t out_bytes) {
  const np_state *w = n->state;
  const np_sample *ss = s->state;
  const char *path = path_of(w, ss->index);
  int64_t offset, bytes;
  ladle__npy_slab(&ss->h, ss->start, ss->shape, &offset, &bytes);
  /* Straight into the output when the slab is the output: C order, native bytes, whole rows. */
  int direct = !ss->h.fortran_order && !ss->h.swap && (size_t)bytes == out_bytes;
  for (int d = 1; d < ss->h.ndim && direct; d++) direct = ss->start[d] == 0 && ss->shape[d] == ss->h.shape[d];
  if (direct && ss->h.ndim) direct = ss->start[0] >= 0 && ss->start[0] + ss->shape[0] <= ss->h.shape[0];
  uint8_t *buf = NULL, *aligned = NULL;
  size_t need = (direct ? 0 : (size_t)bytes) + (w->o_direct ? (size_t)bytes + 3 * DIRECT_ALIGN : 0);
  if (need) {
    void *scratch = NULL;
    ladle_status st = ladle__scratch(n, s, need, &scratch);
    if (st != LADLE_OK) return st;
    buf = scratch;
    if (w->o_direct) {
      uintptr_t p = (uintptr_t)buf + (direct ? 0 : (size_t)bytes);
      aligned = (uint8_t *)((p + DIRECT_ALIGN - 1) & ~(uintptr_t)(DIRECT_ALIGN - 1));
    }
  }
  int fd = -1;
  ladle_status st = open_file(path, w->o_direct, &fd);
  if (st != LADLE_OK) return ladle__wrap_error(st, "readers.numpy");
  st = read_range(fd, path, direct ? dst : buf, offset, bytes, aligned);
  close(fd);
  if (st != LADLE_OK) return ladle__wrap_error(st, "readers.numpy");
  if (direct) return st;
  ladle__npy_copy_region(dst, buf, &ss->h, ss->start, ss->shape, w->fill);
  return LADLE_OK;
}

static ladle_status np_run(ladle__node *n, ladle__sample *s) {
  ladle__tensor out = ladle__output(n, s, 0);
  const ladle_batch *b = n->out_batches[0];
  return read_sample(n, s, out.data, b->offsets[s->slot + 1] - b->offsets[s->slot]);
}

#ifdef LADLE_HAVE_CUDA
typedef struct gpu_read {
  ladle__node *node;
  uint8_t *staging;
  const size_t *offsets;
  _Atomic int failed;
  ladle_status status;
  char *error;
} gpu_read;

static void gpu_read_one(void *ctx, int i, int worker) {
  gpu_read *g = ctx;
  ladle__node *n = g->node;
  ladle__sample s = {.slot = i, .worker = worker,
                     .state = n->sample_states + (size_t)i * sizeof(np_sample)};
  ladle_status st = read_sample(n, &s, g->staging + g->offsets[i], g->offsets[i + 1] - g->offsets[i]);
  if (st != LADLE_OK && !atomic_exchange(&g->failed, 1)) {
    g->status = st;
    g->error = strdup(ladle_last_error());
  }
}
#endif

/* device="gpu": the workers read every sample into one pinned block laid out
 * as the device batch, and one copy moves it. */
static ladle_status np_run_batch(ladle__node *n, ladle__gpu *g) {
#ifdef LADLE_HAVE_CUDA
  ladle_batch *out = n->out_batches[0];
  size_t total = out->offsets[out->num_samples];
  if (!total) return LADLE_OK;
  gpu_read work = {.node = n, .offsets = out->offsets};
  ladle_status st = ladle__gpu_host_scratch(g, total, (void **)&work.staging);
  if (st != LADLE_OK) return st;
  ladle__parallel_for(g->workers, out->num_samples, gpu_read_one, &work);
  if (atomic_load(&work.failed)) {
    ladle__restore_error(work.error);
    free(work.error);
    return work.status;
  }
  return ladle__cuda_copy(out->data, work.staging, total, g->stream);
#else
  (void)g;
  return LADLE_OP_FAIL(n, LADLE_ERROR_NOT_AVAILABLE, "this build of ladle has no CUDA support");
#endif
}

const ladle__op_def ladle__op_readers_numpy = {
    .schema = {.name = "readers.numpy",
               .doc = "Reads NumPy .npy files (format 1.0, 2.0 and 3.0; C or Fortran order, the output always C "
                      "order; bool, int8-64, uint8-64, float16/32/64; big-endian files too, which DALI refuses) from "
                      "a folder (file_root, file_filter), a list file or explicit paths: one tensor per sample, whole "
                      "or its region of interest (roi_* arguments, read from the file without the rest of the "
                      "array). Every file must have the first file's type and number of dimensions. A bad header "
                      "is a CorruptDataError naming the file. device=\"gpu\": the output is in GPU memory (read on "
                      "the host, then one copy per batch; no GPUDirect Storage). Sharding and shuffling as "
                      "readers.file.",
               .min_inputs = 0, .max_inputs = 0, .num_outputs = 1,
               .devices = LADLE_ON_CPU_GPU, .flags = LADLE_OP_READER,
               .num_args = ARG_COUNT, .args = args},
    .sample_state_size = sizeof(np_sample),
    .init = np_init,
    .fini = np_fini,
    .plan = np_plan,
    .sample_name = np_sample_name,
    .reader_meta = np_meta,
    .setup = np_setup,
    .run = np_run,
    .run_batch = np_run_batch,
};

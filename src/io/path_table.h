/* The record table of the file reader: N (path, label) pairs stored compactly
 * (one string arena, one offset and one label per record), and the three ways
 * of filling it: a class-per-folder tree, a list file, an explicit list. */
#ifndef LADLE_IO_PATH_TABLE_H
#define LADLE_IO_PATH_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "ladle/ladle.h"

typedef struct ladle__path_table {
  char *arena; /* NUL-terminated paths back to back */
  size_t arena_len, arena_cap;
  uint64_t *offsets; /* record i's path starts at arena + offsets[i] */
  int32_t *labels;
  int64_t count, cap;
} ladle__path_table;

/* Appends a record (copies path[0..len)). */
ladle_status ladle__path_table_add(ladle__path_table *t, const char *path, size_t len,
                                   int32_t label);

/* Frees the memory and zeroes the table. */
void ladle__path_table_free(ladle__path_table *t);

/* Shrinks the arrays to their size (after listing). Never fails: on a failed
 * realloc the larger block is kept. */
void ladle__path_table_trim(ladle__path_table *t);

/* Which names a tree listing keeps (readers.file's file_filters, dir_filters
 * and case_sensitive_filter, as DALI reads them): glob patterns as fnmatch(3)
 * reads them, matched against the name alone, ASCII-case-insensitively
 * unless case_sensitive. No patterns: for files the defaults *.jpg *.jpeg
 * *.png *.bmp *.tif *.tiff *.pnm *.ppm *.pgm *.pbm *.webp *.jp2, for folders
 * every name. */
typedef struct ladle__name_filter {
  const char *const *patterns;
  int count;
  int case_sensitive;
} ladle__name_filter;

/* 1 when `name` matches one of the filter's patterns (a pattern "*.ext" with
 * no other wildcard is a suffix comparison, the common case, without fnmatch). */
int ladle__name_filter_match(const ladle__name_filter *f, const char *name, int is_file);

/*
 * Lists a class-per-folder tree: every subfolder of `root` (directories and
 * links to directories, sorted byte-wise with strcmp) that `dirs` keeps is a
 * class whose label is its index in that order, empty folders included.
 * Files directly in `root` are ignored. Inside a class folder, files are
 * found recursively (links followed; a link back to an enclosing folder is an
 * error; as torchvision's ImageFolder does, while DALI 2.4 lists a class
 * folder's own files only) and kept when `files` keeps their name; a
 * class's files are sorted byte-wise by path. Paths are "root/class/..." with `root` as given (its
 * trailing slashes dropped). d_type decides file or folder without a stat
 * except for links and file systems that do not report it.
 */
ladle_status ladle__path_table_from_tree(ladle__path_table *t, const char *root, const ladle__name_filter *files,
                                         const ladle__name_filter *dirs);

/*
 * Reads a list file: one "path label" per line, the label being the last
 * whitespace-separated token (so paths may contain spaces) and an integer
 * in int32 range. Leading/trailing whitespace and a CR before the newline are
 * ignored; blank lines and lines whose first non-blank character is '#' are
 * skipped. A relative path is taken relative to `root` when it is not NULL,
 * else to the list file's folder. Records keep the file's order. A bad line
 * fails with LADLE_ERROR_INVALID_ARGUMENT and "list:line: what".
 */
ladle_status ladle__path_table_from_list_file(ladle__path_table *t, const char *list_path,
                                              const char *root);

/* Takes explicit paths (relative ones joined to `root` when it is not NULL)
 * and labels (NULL: record i gets label i). */
ladle_status ladle__path_table_from_files(ladle__path_table *t, const char *const *files,
                                          int num_files, const int32_t *labels,
                                          const char *root);

#endif

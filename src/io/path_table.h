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

/* The default accepted suffixes of a tree listing: .jpg .jpeg .png .bmp .tif
 * .tiff .pnm .ppm .pgm .pbm .webp .jp2 (NULL-terminated, static). */
extern const char *const ladle__default_extensions[];

/* 1 when `name` ends with one of the suffixes, compared ASCII-case-insensitively.
 * exts == NULL: the defaults. A leading '*' is ignored, so DALI-style filters
 * such as "*.jpg" work as suffixes (no other wildcard is understood). An empty
 * suffix (or "*") accepts every name. */
int ladle__path_has_extension(const char *name, const char *const *exts, int num_exts);

/*
 * Lists a class-per-folder tree: every subfolder of `root` (directories and
 * links to directories, sorted byte-wise with strcmp) is a class whose label
 * is its index in that order, empty folders included. Files directly in
 * `root` are ignored. Inside a class folder, files are found recursively
 * (links followed; a link back to an enclosing folder is an error) and kept
 * when their name has an accepted suffix; a class's files are sorted
 * byte-wise by path. Paths are "root/class/..." with `root` as given (its
 * trailing slashes dropped). d_type decides file or folder without a stat
 * except for links and file systems that do not report it.
 */
ladle_status ladle__path_table_from_tree(ladle__path_table *t, const char *root,
                                         const char *const *exts, int num_exts);

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

/* The engine behind fn.readers.webdataset: reads the headers of POSIX tar
 * archives once, groups their files into samples by key, and reads a
 * sample's components back with pread.
 *
 * Tar format understood (POSIX.1-1988 ustar, POSIX.1-2001 pax, GNU):
 *  - 512-byte headers; the name is the 100-byte name field, joined as
 *    "<prefix>/<name>" with the 155-byte prefix field of a POSIX ustar header
 *    (magic "ustar\0"; GNU headers use that space for other things);
 *  - the size field is octal (spaces/NULs around it allowed; an empty field
 *    is 0) or GNU base-256 (high bit of its first byte set);
 *  - the header checksum is verified (the unsigned sum, or the signed sum
 *    some old writers stored);
 *  - typeflags: '0', '\0' and '7' are regular files; 'x' is a pax extended
 *    header whose "path" and "size" records apply to the next entry; 'g'
 *    (global pax) and 'K' (GNU long link name) are skipped; 'L' is a GNU long
 *    name for the next entry; links, directories, devices and FIFOs
 *    ('1'..'6') have no data; any other typeflag (GNU sparse 'S', vendor
 *    types) is skipped with its data and ignored;
 *  - data is padded to 512 bytes; the archive ends at a zero block (the
 *    second one is not required) or at end of file on a header boundary.
 * A file that ends inside a header or inside an entry's data or padding, a
 * bad checksum, a bad size field or a malformed pax record fails with a
 * message naming the tar file and the byte offset of the header at fault.
 * Only headers are read (pread at each header offset); data is skipped.
 *
 * Samples (the webdataset convention): a regular file's key is its path up to
 * the first '.' of its last path component, its extension everything after
 * that dot ("a/b/000001.seg.png": key "a/b/000001", extension "seg.png").
 * Files whose last component has no '.', or starts with '.' (hidden files:
 * their key would be a bare folder), are ignored, as are directories, links
 * and other non-regular entries. Consecutive files of one key form one sample;
 * a key that appears again after another key starts a new sample (tars are
 * written sample by sample; the index does not search for stragglers).
 * Samples are numbered in tar order, tar by tar in the order given.
 *
 * Outputs: the caller asks for num_outputs components per sample, each given
 * as one or more extensions separated by ';' ("jpg;jpeg;png"); a file fills
 * every output whose set contains its extension (compared byte-wise, or
 * ASCII-case-insensitively). When a sample has several files matching one
 * output, the alternative listed first wins (then the first in tar order).
 * A group of files that matches no output at all (e.g. a stray README.txt)
 * is not a sample and is left out in every mode. A group that matches some
 * outputs but not all is handled by `missing`: EMPTY keeps it with empty
 * components, SKIP leaves it out, ERROR fails naming the tar and the key.
 */
#ifndef LADLE_IO_TAR_INDEX_H
#define LADLE_IO_TAR_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "ladle/ladle.h"

/* One regular file found in a tar: where its data lies. */
typedef struct ladle__tar_file {
  const char *name; /* the full name (after pax path / GNU long name) */
  int64_t header;   /* byte offset of its header (the first of its pax/L headers) */
  int64_t offset;   /* byte offset of its data */
  int64_t size;     /* bytes of data */
} ladle__tar_file;

/* Called by ladle__tar_scan for every regular file, in archive order; `file`
 * and its name are valid during the call only. A status other than LADLE_OK
 * stops the scan and is returned (its message kept). */
typedef ladle_status (*ladle__tar_visit_fn)(void *ctx, const ladle__tar_file *file);

/* Reads the headers of the tar `path` and calls visit for each regular file.
 * Errors (see the header comment) name `path` and the byte offset:
 * LADLE_ERROR_IO when the file cannot be opened or read, LADLE_ERROR_CORRUPT_DATA
 * when it is not a well-formed tar (checksum, size field, pax record,
 * truncation). */
ladle_status ladle__tar_scan(const char *path, ladle__tar_visit_fn visit, void *ctx);

/* Splits a member name into key and extension: returns 1 and sets *key_len
 * (the key is name[0 .. *key_len)) and *ext (points into name, after the
 * dot), or returns 0 for a name that is not a sample component (no '.' in
 * its last path component, a leading '.', or an empty extension). */
int ladle__tar_split_name(const char *name, size_t *key_len, const char **ext);

typedef enum ladle__tar_missing {
  LADLE__TAR_MISSING_EMPTY = 0, /* keep the sample; the missing component is empty */
  LADLE__TAR_MISSING_SKIP = 1,  /* leave the sample out */
  LADLE__TAR_MISSING_ERROR = 2  /* fail the build naming tar and key */
} ladle__tar_missing;

typedef struct ladle__tar_index_params {
  const char *const *paths; /* the tar files, num_paths >= 1 */
  int num_paths;
  const char *const *ext; /* one entry per output: "jpg" or "jpg;jpeg;png"; a
                             leading '.' of an alternative is ignored */
  int num_outputs;        /* >= 1 */
  ladle__tar_missing missing;
  int case_sensitive;       /* 1: extensions compare byte-wise (DALI's default) */
  const size_t *elem_sizes; /* per output: a component's size must be a multiple
                               of it (checked at build); NULL: all 1 */
} ladle__tar_index_params;

/* A sample's component: its bytes lie at [offset, offset + size) of the tar. */
typedef struct ladle__tar_component {
  int64_t offset; /* -1: the sample has no such component (size 0) */
  int64_t size;
  const char *ext; /* the extension that matched (e.g. "png" for "jpg;png"); NULL when missing */
} ladle__tar_component;

typedef struct ladle__tar_index ladle__tar_index;

/* Scans every tar (one pass over its headers each) and builds the sample
 * index. Fails on a bad parameter, a tar that cannot be opened or parsed, a
 * missing component in ERROR mode, a component whose size is not a multiple
 * of its output's elem_size (naming tar, key and extension), and when no
 * sample is found. The caller owns *out. */
ladle_status ladle__tar_index_build(const ladle__tar_index_params *p, ladle__tar_index **out);
/* NULL is allowed. */
void ladle__tar_index_destroy(ladle__tar_index *index);

/* N, the number of samples. */
int64_t ladle__tar_index_size(const ladle__tar_index *index);
int ladle__tar_index_num_outputs(const ladle__tar_index *index);
/* "<tar path>:<key>" of sample i (0 <= i < N), for messages. Valid until destroy. */
const char *ladle__tar_index_name(const ladle__tar_index *index, int64_t sample);
/* The key of sample i, and its tar's path. Valid until destroy. */
const char *ladle__tar_index_key(const ladle__tar_index *index, int64_t sample);
const char *ladle__tar_index_path(const ladle__tar_index *index, int64_t sample);
/* Component `output` of sample i. */
ladle__tar_component ladle__tar_index_component(const ladle__tar_index *index, int64_t sample,
                                                int output);

/* Reads every component of sample i: dst[k] receives component k's size
 * bytes (dst[k] may be NULL for an empty one). Opens the tar, preads, and
 * closes it again (so any number of tars can be read without running out of
 * file descriptors). Fails naming the tar, the key and the extension when
 * the tar cannot be opened or is shorter than indexed (it changed since).
 * Thread-safe. */
ladle_status ladle__tar_index_read(const ladle__tar_index *index, int64_t sample,
                                   uint8_t *const *dst);

#endif

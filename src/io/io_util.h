/* Small file-system helpers shared by the readers: errno text, whole-file
 * reads, and the checked size-then-bytes read of one file. */
#ifndef LADLE_IO_IO_UTIL_H
#define LADLE_IO_IO_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "ladle/ladle.h"

/* strerror(err) into buf, thread-safe; returns buf. */
const char *ladle__errno_text(int err, char *buf, size_t size);

/* Reads the whole regular file `path` into a new buffer (NUL-terminated, the
 * terminator not counted in *size); the caller frees *data. `what` names the
 * file's role in messages ("file_list"). */
ladle_status ladle__read_whole_file(const char *path, const char *what, char **data,
                                    size_t *size);

/* The size of the regular file `path`. Fails, naming the path, when it is
 * missing, unreadable, a directory or not a regular file. A zero-byte file
 * is not an error. */
ladle_status ladle__file_size(const char *path, size_t *size);

/* Reads up to `size` bytes at `offset` (retrying short reads and EINTR);
 * *got says how many came before end of file. Returns -1 (errno set) on a
 * read error. */
int ladle__pread_full(int fd, void *dst, size_t size, int64_t offset, size_t *got);

/* Reads exactly `size` bytes, the whole file, into dst. Fails, naming the
 * path, when the file cannot be opened, is not a regular file, no longer has
 * `size` bytes (it changed since its size was taken), or a read fails. */
ladle_status ladle__file_read_exact(const char *path, uint8_t *dst, size_t size);

#endif

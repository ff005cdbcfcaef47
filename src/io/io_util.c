/* File-system helpers for the readers (see io_util.h). Errors name the path. */
#include "io/io_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

const char *ladle__errno_text(int err, char *buf, size_t size) {
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
  /* The GNU variant may return a static string instead of filling buf. */
  const char *s = strerror_r(err, buf, size);
  if (s != buf) snprintf(buf, size, "%s", s);
#else
  if (strerror_r(err, buf, size) != 0) snprintf(buf, size, "error %d", err);
#endif
  return buf;
}

/* "is a directory" / "is not a regular file" for a non-regular st_mode. */
static const char *kind_text(mode_t mode) {
  return S_ISDIR(mode) ? "is a directory, not a file" : "is not a regular file";
}

ladle_status ladle__file_size(const char *path, size_t *size) {
  ladle_status st = LADLE_OK;
  char err[128];
  struct stat sb;
  LADLE_CHECK(stat(path, &sb) == 0, LADLE_ERROR_IO, "%s: %s", path,
              ladle__errno_text(errno, err, sizeof err));
  LADLE_CHECK(S_ISREG(sb.st_mode), LADLE_ERROR_IO, "%s %s", path, kind_text(sb.st_mode));
  LADLE_CHECK((uint64_t)sb.st_size <= SIZE_MAX, LADLE_ERROR_LIMIT, "%s is too large (%lld bytes)",
              path, (long long)sb.st_size);
  *size = (size_t)sb.st_size;
done:
  return st;
}

int ladle__pread_full(int fd, void *dst, size_t size, int64_t offset, size_t *got) {
  size_t n = 0;
  while (n < size) {
    size_t chunk = size - n > (1u << 30) ? (1u << 30) : size - n;
    ssize_t r = pread(fd, (uint8_t *)dst + n, chunk, (off_t)(offset + (int64_t)n));
    if (r < 0) {
      if (errno == EINTR) continue;
      *got = n;
      return -1;
    }
    if (r == 0) break;
    n += (size_t)r;
  }
  *got = n;
  return 0;
}

ladle_status ladle__file_read_exact(const char *path, uint8_t *dst, size_t size) {
  ladle_status st = LADLE_OK;
  char err[128];
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  LADLE_CHECK(fd >= 0, LADLE_ERROR_IO, "%s: %s", path, ladle__errno_text(errno, err, sizeof err));
  struct stat sb;
  LADLE_CHECK(fstat(fd, &sb) == 0, LADLE_ERROR_IO, "%s: %s", path,
              ladle__errno_text(errno, err, sizeof err));
  LADLE_CHECK(S_ISREG(sb.st_mode), LADLE_ERROR_IO, "%s %s", path, kind_text(sb.st_mode));
  LADLE_CHECK((uint64_t)sb.st_size == (uint64_t)size, LADLE_ERROR_IO,
              "%s changed size while being read (%zu bytes expected, %lld now)", path, size,
              (long long)sb.st_size);
  size_t got = 0;
  LADLE_CHECK(ladle__pread_full(fd, dst, size, 0, &got) == 0, LADLE_ERROR_IO,
              "%s: read failed after %zu of %zu bytes: %s", path, got, size,
              ladle__errno_text(errno, err, sizeof err));
  LADLE_CHECK(got == size, LADLE_ERROR_IO,
              "%s changed size while being read (%zu bytes expected, the file ended after %zu)",
              path, size, got);
done:
  if (fd >= 0) close(fd);
  return st;
}

ladle_status ladle__read_whole_file(const char *path, const char *what, char **data,
                                    size_t *size) {
  ladle_status st = LADLE_OK;
  char *buf = NULL;
  char err[128];
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  LADLE_CHECK(fd >= 0, LADLE_ERROR_IO, "cannot open %s %s: %s", what, path,
              ladle__errno_text(errno, err, sizeof err));
  struct stat sb;
  LADLE_CHECK(fstat(fd, &sb) == 0, LADLE_ERROR_IO, "cannot stat %s %s: %s", what, path,
              ladle__errno_text(errno, err, sizeof err));
  LADLE_CHECK(S_ISREG(sb.st_mode), LADLE_ERROR_IO, "%s %s %s", what, path, kind_text(sb.st_mode));
  LADLE_CHECK((uint64_t)sb.st_size < SIZE_MAX, LADLE_ERROR_LIMIT, "%s %s is too large", what,
              path);
  size_t n = (size_t)sb.st_size;
  buf = malloc(n + 1);
  LADLE_CHECK(buf, LADLE_ERROR_OUT_OF_MEMORY, "cannot allocate %zu bytes for %s %s", n + 1, what,
              path);
  size_t got = 0;
  LADLE_CHECK(ladle__pread_full(fd, buf, n, 0, &got) == 0, LADLE_ERROR_IO, "cannot read %s %s: %s",
              what, path, ladle__errno_text(errno, err, sizeof err));
  buf[got] = '\0'; /* a file that shrank meanwhile is read as it now is */
  *data = buf;
  *size = got;
  buf = NULL;
done:
  if (fd >= 0) close(fd);
  free(buf);
  return st;
}

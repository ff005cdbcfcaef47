/* libFuzzer target for the tar indexer behind readers.webdataset
 * (src/io/tar_index.h): each input is a tar file (kept in a memfd), scanned,
 * indexed for two outputs ("jpg;png" bytes and "cls" int32) and every sample
 * read back. Any crash, sanitizer report or status other than the ones a bad
 * file may cause is a finding. Build and run: see README.md. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "io/tar_index.h"

static ladle_status visit(void *ctx, const ladle__tar_file *file) {
  (void)ctx;
  if (file->size < 0 || file->offset < 0) abort();
  return LADLE_OK;
}

static void expect_bad_file_status(ladle_status st) {
  if (st == LADLE_OK || st == LADLE_ERROR_IO || st == LADLE_ERROR_CORRUPT_DATA || st == LADLE_ERROR_INVALID_ARGUMENT ||
      st == LADLE_ERROR_LIMIT || st == LADLE_ERROR_OUT_OF_MEMORY)
    return;
  fprintf(stderr, "fuzz_tar: unexpected status %s: %s\n", ladle_status_name(st), ladle_last_error());
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = memfd_create("tar", 0);
  if (fd < 0) return 0;
  if (size && write(fd, data, size) != (ssize_t)size) {
    close(fd);
    return 0;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  expect_bad_file_status(ladle__tar_scan(path, visit, NULL));
  const char *paths[1] = {path};
  const char *ext[2] = {"jpg;png", "cls"};
  size_t elem_sizes[2] = {1, 4};
  ladle__tar_index_params p = {.paths = paths, .num_paths = 1, .ext = ext, .num_outputs = 2,
                               .missing = LADLE__TAR_MISSING_EMPTY, .case_sensitive = 1, .elem_sizes = elem_sizes};
  ladle__tar_index *x = NULL;
  ladle_status st = ladle__tar_index_build(&p, &x);
  expect_bad_file_status(st);
  for (int64_t i = 0; st == LADLE_OK && i < ladle__tar_index_size(x); i++) {
    uint8_t *dst[2];
    for (int k = 0; k < 2; k++) {
      ladle__tar_component c = ladle__tar_index_component(x, i, k);
      if (c.size < 0 || (c.offset < 0 && c.size != 0) || c.size % (int64_t)elem_sizes[k]) abort();
      dst[k] = malloc(c.size ? (size_t)c.size : 1); /* exact sizes: ASan catches a longer write */
    }
    if (dst[0] && dst[1]) expect_bad_file_status(ladle__tar_index_read(x, i, dst));
    free(dst[0]);
    free(dst[1]);
  }
  ladle__tar_index_destroy(x);
  close(fd);
  return 0;
}

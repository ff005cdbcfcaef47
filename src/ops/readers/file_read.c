/* io.file.read: the bytes of the file whose path each sample holds (the
 * path's bytes, 1-D, of any 1-byte type: DALI's examples pass
 * np.frombuffer(path.encode(), np.int8)). What a DataLoader-driven pipeline
 * (plugin.pytorch.experimental.proxy) uses in place of a reader. */
#include <limits.h>
#include <string.h>

#include "io/io_util.h"
#include "ops/op.h"

enum { ARG_DONT_USE_MMAP, ARG_USE_O_DIRECT, ARG_COUNT };

static const ladle_arg_schema read_args[ARG_COUNT] = {
    [ARG_DONT_USE_MMAP] = {LADLE_BOOL_ARG("dont_use_mmap", 0), .no_effect = 1,
        .doc = "Accepted for DALI scripts; ladle always reads with read(2)."},
    [ARG_USE_O_DIRECT] = {LADLE_BOOL_ARG("use_o_direct", 0), .no_effect = 1,
        .doc = "Accepted for DALI scripts: how the bytes are read, not which; ladle reads through the page cache."},
};

typedef struct sample_state {
  char path[PATH_MAX];
  size_t size;
} sample_state;

static ladle_status read_init(ladle__node *n) {
  if (ladle_dtype_size(n->in[0].dtype) != 1 || n->in[0].ndim != 1)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "the input must be file paths as 1-D byte arrays, got %s "
                         "with %d dimensions", ladle_dtype_name(n->in[0].dtype), n->in[0].ndim);
  n->out[0] = (ladle__out_desc){LADLE_UINT8, 1, ""};
  return LADLE_OK;
}

static ladle_status read_setup(ladle__node *n, ladle__sample *s) {
  sample_state *ss = s->state;
  ladle__tensor in = ladle__input(n, s, 0);
  size_t len = (size_t)in.shape[0];
  if (len == 0 || len >= sizeof ss->path || memchr(in.data, 0, len))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "sample %d: not a file path (%zu bytes%s)", s->slot, len,
                         len && memchr(in.data, 0, len) ? ", with a NUL byte" : "");
  memcpy(ss->path, in.data, len);
  ss->path[len] = 0;
  ladle_status st = ladle__file_size(ss->path, &ss->size);
  if (st != LADLE_OK) return ladle__wrap_error(st, "io.file.read");
  int64_t shape[1] = {(int64_t)ss->size};
  ladle__set_shape(n, s, 0, shape);
  return LADLE_OK;
}

static ladle_status read_run(ladle__node *n, ladle__sample *s) {
  sample_state *ss = s->state;
  ladle_status st = ladle__file_read_exact(ss->path, ladle__output(n, s, 0).data, ss->size);
  return st == LADLE_OK ? st : ladle__wrap_error(st, "io.file.read");
}

const ladle__op_def ladle__op_io_file_read = {
    .schema = {.name = "io.file.read",
               .doc = "Reads the file each sample names (its path as 1-D bytes) and outputs its bytes (uint8, 1-D), "
                      "e.g. for fn.decoders.image.",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
               .devices = LADLE_ON_CPU,
               .num_args = ARG_COUNT, .args = read_args},
    .sample_state_size = sizeof(sample_state),
    .init = read_init,
    .setup = read_setup,
    .run = read_run,
};

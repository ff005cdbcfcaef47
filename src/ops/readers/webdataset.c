/* readers.webdataset: samples from tar archives, one output per `ext` entry
 * holding the raw bytes of that component (io/tar_index.h); batches come from
 * the shared sampler (io/sampler.h), as for readers.file. */
#include <stdlib.h>
#include <string.h>

#include "io/tar_index.h"
#include "ops/op.h"
#include "ops/readers/reader_args.h"

enum {
  ARG_PATHS, ARG_EXT, ARG_MISSING_COMPONENT_BEHAVIOR, ARG_CASE_SENSITIVE_EXTENSIONS, ARG_DTYPES,
  ARG_INDEX_PATHS, ARG_HINTS, ARG_SAMPLER = ARG_HINTS + LADLE__HINT_ARG_COUNT,
  ARG_COUNT = ARG_SAMPLER + LADLE__SAMPLER_ARG_COUNT
};

/* The number of outputs is the number of `ext` entries. Schema convention
 * (see the report to the lead: pipeline.c and fn.py must implement it): a
 * negative num_outputs means "one output per element of the list argument
 * args[-1 - num_outputs]", between 1 and LADLE_MAX_OUTPUTS. */
#define OUTPUTS_PER_EXT (-1 - ARG_EXT)

static const ladle_arg_schema args[ARG_COUNT] = {
    [ARG_PATHS] = {LADLE_REQUIRED_ARG("paths", LADLE_ARG_STRINGS),
        .doc = "The tar files (POSIX ustar, pax or GNU). Samples are numbered in tar order, tar by tar."},
    [ARG_EXT] = {LADLE_REQUIRED_ARG("ext", LADLE_ARG_STRINGS),
        .doc = "One output per entry: the extension of the component it holds, or several alternatives "
               "separated by ';' (\"jpg;jpeg;png\": the first listed that the sample has wins). A file's key is "
               "its path up to the first '.' of its name, its extension the rest (\"a/0001.seg.png\": key "
               "\"a/0001\", extension \"seg.png\"). Consecutive files of one key form a sample; a key that "
               "comes back after another key starts a new sample. Files without a '.' in their name (or with a "
               "leading '.'), directories and links are ignored, and so are keys that have none of the "
               "requested extensions. At most 4 entries."},
    [ARG_MISSING_COMPONENT_BEHAVIOR] = {LADLE_STRING_ARG("missing_component_behavior", ""), LADLE_CHOICES("empty", "skip", "error", ""),
        .doc = "What to do with a sample lacking some of the requested components: \"empty\" or \"\" (default): "
               "that output is empty for the sample; \"skip\": leave the sample out; \"error\": fail at build, "
               "naming the tar and the key."},
    [ARG_CASE_SENSITIVE_EXTENSIONS] = {LADLE_BOOL_ARG("case_sensitive_extensions", 1),
        .doc = "Compare extensions byte-wise; false: ASCII-case-insensitively."},
    [ARG_DTYPES] = {LADLE_OPTIONAL_ARG("dtypes", LADLE_ARG_INTS), LADLE_RANGE(0.0, (double)(LADLE_DTYPE_COUNT - 1)),
        .doc = "Element type of each output (any of types.INT8 .. types.BOOL; default UINT8 for all): the "
               "component's bytes reinterpreted in the machine's byte order (little-endian on x86 and ARM) as a "
               "1-D array of size / element size (BOOL: a nonzero byte is true). One per ext entry; a component whose size is not a multiple "
               "of the element size fails at build, naming tar, key and extension."},
    [ARG_INDEX_PATHS] = {LADLE_OPTIONAL_ARG("index_paths", LADLE_ARG_STRINGS),
        .no_effect = 1, .doc = "Accepted for DALI scripts and ignored: ladle indexes the tars itself at build, reading only "
               "their headers."},
    LADLE__HINT_ARG_SCHEMAS(ARG_HINTS),
    LADLE__SAMPLER_ARG_SCHEMAS(ARG_SAMPLER),
};

typedef struct wds_state {
  ladle__tar_index *index;
  ladle__sampler *sampler;
} wds_state;

static void wds_fini(ladle__node *n) {
  wds_state *w = n->state;
  if (!w) return;
  ladle__tar_index_destroy(w->index);
  ladle__sampler_destroy(w->sampler);
  free(w);
  n->state = NULL;
}

static ladle_status wds_init(ladle__node *n) {
  ladle_status st = LADLE_OK;
  wds_state *w = NULL;
  size_t elem_sizes[LADLE_MAX_OUTPUTS];
  const ladle_value *paths = ladle__arg_value(n, ARG_PATHS), *ext = ladle__arg_value(n, ARG_EXT);
  const ladle_value *dtypes = ladle__arg_value(n, ARG_DTYPES);
  int num_outputs = ext->count;
  if (paths->count < 1) return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'paths' is empty");
  if (num_outputs < 1 || num_outputs > LADLE_MAX_OUTPUTS)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'ext' has %d entries; give 1 to %d",
                         num_outputs, LADLE_MAX_OUTPUTS);
  if (num_outputs != n->num_outputs)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INTERNAL, "the node has %d outputs but 'ext' has %d entries",
                         n->num_outputs, num_outputs);
  if (dtypes->count && dtypes->count != num_outputs)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "argument 'dtypes' has %d entries but 'ext' has %d; give one per output", dtypes->count,
                         num_outputs);
  for (int k = 0; k < num_outputs; k++) {
    ladle_dtype t = dtypes->count ? (ladle_dtype)dtypes->u.ints[k] : LADLE_UINT8;
    elem_sizes[k] = ladle_dtype_size(t);
    n->out[k] = (ladle__out_desc){t, 1, ""};
  }
  int missing = ladle__arg_choice(n, ARG_MISSING_COMPONENT_BEHAVIOR) % 3; /* "" is "empty" */
  ladle__sampler_params sp;
  st = ladle__reader_sampler_params(n, ARG_SAMPLER, 0, &sp); /* num_records once the tars are indexed */
  if (st != LADLE_OK) return st;
  /* Check what does not need the tars first: indexing can take a while. */
  st = ladle__sampler_check_batching(sp.batch_size, sp.num_shards, sp.shard_id);
  if (st != LADLE_OK) return ladle__wrap_error(st, "readers.webdataset");

  w = calloc(1, sizeof *w);
  if (!w) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  n->state = w;
  ladle__tar_index_params tp = {
      .paths = paths->u.strings,
      .num_paths = paths->count,
      .ext = ext->u.strings,
      .num_outputs = num_outputs,
      .missing = (ladle__tar_missing)missing,
      .case_sensitive = (int)ladle__arg_int(n, NULL, ARG_CASE_SENSITIVE_EXTENSIONS),
      .elem_sizes = elem_sizes,
  };
  st = ladle__tar_index_build(&tp, &w->index);
  if (st != LADLE_OK) goto fail;
  sp.num_records = ladle__tar_index_size(w->index);
  st = ladle__sampler_create(&sp, &w->sampler);
  if (st != LADLE_OK) goto fail;
  return LADLE_OK;
fail:
  ladle__wrap_error(st, "readers.webdataset");
  wds_fini(n);
  return st;
}

static ladle_status wds_plan(ladle__node *n, int64_t iteration, ladle__sample_ref *refs) {
  wds_state *w = n->state;
  ladle__sampler_plan(w->sampler, iteration, refs);
  return LADLE_OK;
}

static const char *wds_sample_name(ladle__node *n, int64_t index) {
  wds_state *w = n->state;
  return ladle__tar_index_name(w->index, index);
}

static ladle_status wds_meta(ladle__node *n, ladle_reader_meta *meta) {
  ladle__sampler_meta(((wds_state *)n->state)->sampler, meta);
  return LADLE_OK;
}

static ladle_status wds_setup(ladle__node *n, ladle__sample *s) {
  wds_state *w = n->state;
  for (int k = 0; k < n->num_outputs; k++) {
    ladle__tar_component c = ladle__tar_index_component(w->index, s->ref->index, k);
    int64_t shape[1] = {c.size / (int64_t)ladle_dtype_size(n->out[k].dtype)};
    ladle__set_shape(n, s, k, shape);
  }
  return LADLE_OK;
}

static ladle_status wds_run(ladle__node *n, ladle__sample *s) {
  wds_state *w = n->state;
  uint8_t *dst[LADLE_MAX_OUTPUTS];
  for (int k = 0; k < n->num_outputs; k++) dst[k] = ladle__output(n, s, k).data;
  ladle_status st = ladle__tar_index_read(w->index, s->ref->index, dst);
  /* A bool element is 0 or 1 (what NumPy and torch expect of their bools). */
  for (int k = 0; st == LADLE_OK && k < n->num_outputs; k++) {
    if (n->out[k].dtype != LADLE_BOOL) continue;
    ladle__tensor t = ladle__output(n, s, k);
    for (int64_t i = 0; i < t.shape[0]; i++) dst[k][i] = dst[k][i] != 0;
  }
  return st;
}

const ladle__op_def ladle__op_readers_webdataset = {
    .schema = {.name = "readers.webdataset",
               .doc = "Reads samples from tar archives in the webdataset layout: files sharing a key (the path "
                      "up to the first '.' of the file name) form a sample, and each `ext` entry selects one "
                      "component, output as its raw bytes (1-D, uint8 or the entry's dtype). Tars are indexed at build "
                      "by reading their headers (index_paths is not needed); components are read with pread, the tar "
                      "opened per sample. Sharding and shuffling as readers.file.",
               .min_inputs = 0, .max_inputs = 0, .num_outputs = OUTPUTS_PER_EXT,
               .devices = LADLE_ON_CPU, .flags = LADLE_OP_READER,
               .num_args = ARG_COUNT, .args = args},
    .init = wds_init,
    .fini = wds_fini,
    .plan = wds_plan,
    .sample_name = wds_sample_name,
    .reader_meta = wds_meta,
    .setup = wds_setup,
    .run = wds_run,
};

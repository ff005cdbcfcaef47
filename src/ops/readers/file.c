/* readers.file: records from a class-per-folder tree, a list file or explicit
 * paths (io/file_reader.h), as (encoded bytes, int32 label [1]). */
#include <stdlib.h>
#include <string.h>

#include "io/file_reader.h"
#include "ops/op.h"
#include "ops/readers/reader_args.h"

enum {
  ARG_FILE_ROOT, ARG_FILE_LIST, ARG_FILES, ARG_LABELS, ARG_FILE_FILTERS, ARG_DIR_FILTERS, ARG_CASE_SENSITIVE_FILTER,
  ARG_HINTS,
  ARG_SAMPLER = ARG_HINTS + LADLE__HINT_ARG_COUNT, ARG_COUNT = ARG_SAMPLER + LADLE__SAMPLER_ARG_COUNT
};

static const ladle_arg_schema args[ARG_COUNT] = {
    [ARG_FILE_ROOT] = {LADLE_OPTIONAL_ARG("file_root", LADLE_ARG_STRING),
        .doc = "Folder with one subfolder per class (labels: the subfolders' indices in sorted order), or the "
               "base of relative paths in file_list/files."},
    [ARG_FILE_LIST] = {LADLE_OPTIONAL_ARG("file_list", LADLE_ARG_STRING),
        .doc = "Text file of \"path label\" lines (blank lines and # comments skipped)."},
    [ARG_FILES] = {LADLE_OPTIONAL_ARG("files", LADLE_ARG_STRINGS), .doc = "Explicit list of file paths."},
    [ARG_LABELS] = {LADLE_OPTIONAL_ARG("labels", LADLE_ARG_INTS), LADLE_RANGE(-2147483648.0, 2147483647.0),
        .doc = "Labels for `files` (default: the file's index)."},
    [ARG_FILE_FILTERS] = {LADLE_OPTIONAL_ARG("file_filters", LADLE_ARG_STRINGS),
        .doc = "Glob patterns (fnmatch: * ? [...]) a file's name under file_root must match, case-insensitively "
               "unless case_sensitive_filter. Default: *.jpg *.jpeg *.png *.bmp *.tif *.tiff *.pnm *.ppm *.pgm "
               "*.pbm *.webp *.jp2 (DALI's list less its audio formats). Ignored with file_list or files."},
    [ARG_DIR_FILTERS] = {LADLE_OPTIONAL_ARG("dir_filters", LADLE_ARG_STRINGS),
        .doc = "Glob patterns a subfolder of file_root must match to be a class; labels number the kept "
               "subfolders in sorted order. Default: every subfolder. Ignored with file_list or files."},
    [ARG_CASE_SENSITIVE_FILTER] = {LADLE_BOOL_ARG("case_sensitive_filter", 0),
        .doc = "Match file_filters and dir_filters case-sensitively."},
    LADLE__HINT_ARG_SCHEMAS(ARG_HINTS),
    LADLE__SAMPLER_ARG_SCHEMAS(ARG_SAMPLER),
};

static ladle_status reader_init(ladle__node *n) {
  ladle_status st = LADLE_OK;
  ladle__file_reader_params p;
  ladle__file_reader_params_init(&p);
  int32_t *labels = NULL;
  p.file_root = ladle__arg_string(n, ARG_FILE_ROOT);
  p.file_list = ladle__arg_string(n, ARG_FILE_LIST);
  const ladle_value *files = ladle__arg_value(n, ARG_FILES);
  p.files = files->count ? files->u.strings : NULL;
  p.num_files = files->count;
  const ladle_value *lab = ladle__arg_value(n, ARG_LABELS);
  if (lab->count) {
    labels = malloc(sizeof *labels * (size_t)lab->count);
    if (!labels) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < lab->count; i++) labels[i] = (int32_t)lab->u.ints[i];
    p.labels = labels;
    p.num_labels = lab->count;
  }
  int case_sensitive = ladle__arg_int(n, NULL, ARG_CASE_SENSITIVE_FILTER) != 0;
  const ladle_value *kept_files = ladle__arg_value(n, ARG_FILE_FILTERS);
  const ladle_value *kept_dirs = ladle__arg_value(n, ARG_DIR_FILTERS);
  p.file_filters = (ladle__name_filter){kept_files->u.strings, kept_files->count, case_sensitive};
  p.dir_filters = (ladle__name_filter){kept_dirs->u.strings, kept_dirs->count, case_sensitive};
  ladle__sampler_params sp;
  st = ladle__reader_sampler_params(n, ARG_SAMPLER, 0, &sp); /* the file reader counts the records */
  if (st != LADLE_OK) goto done;
  p.random_shuffle = sp.random_shuffle;
  p.seed = sp.seed;
  p.shard_id = sp.shard_id;
  p.num_shards = sp.num_shards;
  p.stick_to_shard = sp.stick_to_shard;
  p.pad_last_batch = sp.pad_last_batch;
  p.batch_size = sp.batch_size;
  ladle__file_reader *r = NULL;
  st = ladle__file_reader_create(&p, &r);
  if (st != LADLE_OK) {
    ladle__wrap_error(st, "readers.file");
    goto done;
  }
  n->state = r;
  n->out[0] = (ladle__out_desc){LADLE_UINT8, 1, ""};
  n->out[1] = (ladle__out_desc){LADLE_INT32, 1, ""};
done:
  free(labels);
  return st;
}

static void reader_fini(ladle__node *n) { ladle__file_reader_destroy(n->state); }

static ladle_status reader_plan(ladle__node *n, int64_t iteration, ladle__sample_ref *refs) {
  ladle__file_reader_plan(n->state, iteration, refs);
  return LADLE_OK;
}

static const char *reader_sample_name(ladle__node *n, int64_t index) {
  return ladle__file_reader_path(n->state, index);
}

static ladle_status reader_meta(ladle__node *n, ladle_reader_meta *meta) {
  return ladle__file_reader_meta(n->state, meta);
}

static ladle_status reader_setup(ladle__node *n, ladle__sample *s) {
  size_t size = 0;
  ladle_status st = ladle__file_reader_stat(n->state, s->ref->index, &size);
  if (st != LADLE_OK) return st;
  int64_t data_shape[1] = {(int64_t)size}, label_shape[1] = {1};
  ladle__set_shape(n, s, 0, data_shape);
  ladle__set_shape(n, s, 1, label_shape);
  return LADLE_OK;
}

static ladle_status reader_run(ladle__node *n, ladle__sample *s) {
  ladle__tensor data = ladle__output(n, s, 0), label = ladle__output(n, s, 1);
  *(int32_t *)label.data = ladle__file_reader_label(n->state, s->ref->index);
  return ladle__file_reader_read(n->state, s->ref->index, data.data, (size_t)data.shape[0]);
}

const ladle__op_def ladle__op_readers_file = {
    .schema = {.name = "readers.file",
               .doc = "Reads files and their labels from a class-per-folder tree (file_root), a list file "
                      "(file_list) or explicit paths (files, labels). Outputs the encoded bytes (uint8, 1-D) and the "
                      "label (int32, shape [1]).",
               .min_inputs = 0, .max_inputs = 0, .num_outputs = 2,
               .devices = LADLE_ON_CPU, .flags = LADLE_OP_READER,
               .num_args = ARG_COUNT, .args = args},
    .init = reader_init,
    .fini = reader_fini,
    .plan = reader_plan,
    .sample_name = reader_sample_name,
    .reader_meta = reader_meta,
    .setup = reader_setup,
    .run = reader_run,
};

/* readers.tfrecord: tf.train.Example records from TFRecord files, one output
 * per requested feature (io/tfrecord_index.h); batches come from the shared
 * sampler (io/sampler.h), as for readers.file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "io/tfrecord_index.h"
#include "ops/op.h"
#include "ops/readers/reader_args.h"

enum {
  ARG_PATH, ARG_INDEX_PATH, ARG_FEATURE_NAMES, ARG_FEATURE_TYPES, ARG_FEATURE_SIZES, ARG_FEATURE_DEFAULTS,
  ARG_FEATURE_HAS_DEFAULT, ARG_HINTS, ARG_SAMPLER = ARG_HINTS + LADLE__HINT_ARG_COUNT,
  ARG_COUNT = ARG_SAMPLER + LADLE__SAMPLER_ARG_COUNT
};

/* One output per feature name (the schema convention of readers.webdataset). */
#define OUTPUTS_PER_FEATURE (-1 - ARG_FEATURE_NAMES)

static const ladle_arg_schema args[ARG_COUNT] = {
    [ARG_PATH] = {LADLE_REQUIRED_ARG("path", LADLE_ARG_STRINGS),
        .doc = "The TFRecord files (uncompressed). Records are numbered in file order, file by file."},
    [ARG_INDEX_PATH] = {LADLE_OPTIONAL_ARG("index_path", LADLE_ARG_STRINGS),
        .no_effect = 1, .doc = "Accepted for DALI scripts and ignored: ladle indexes the files itself at build, reading only "
               "the 12-byte record headers (DALI's tfrecord2idx files are not needed)."},
    [ARG_FEATURE_NAMES] = {LADLE_OPTIONAL_ARG("feature_names", LADLE_ARG_STRINGS),
        .doc = "One output per entry, in this order: the values of the Example feature of that name, as a 1-D "
               "tensor. 1 to 4 entries. Required (Python's `features` dict sets it, with the other feature_* "
               "lists)."},
    [ARG_FEATURE_TYPES] = {LADLE_OPTIONAL_ARG("feature_types", LADLE_ARG_STRINGS),
        .doc = "One per feature name: \"string\" (a bytes_list, output as uint8: the bytes of its values "
               "concatenated, usually the one value), \"int64\" (an int64_list, output int64) or \"float32\" (a "
               "float_list, output float32). A feature of another list type fails, naming file, record offset "
               "and feature. Required: one per name."},
    [ARG_FEATURE_SIZES] = {LADLE_OPTIONAL_ARG("feature_sizes", LADLE_ARG_INTS), LADLE_RANGE(-1.0, 9.2e18),
        .doc = "One per feature name: the number of values every record's feature must have (FixedLenFeature: "
               "the product of its shape; a string feature of shape () has 1 value), or -1 for any number "
               "(VarLenFeature). Default: -1 for all."},
    [ARG_FEATURE_DEFAULTS] = {LADLE_OPTIONAL_ARG("feature_defaults", LADLE_ARG_STRINGS),
        .doc = "One per feature name: the output for a record that lacks the feature. \"string\": the text's "
               "bytes (UTF-8); \"int64\", \"float32\": numbers separated by spaces or commas (\"\" for none). "
               "With feature_sizes n > 1, a single number is repeated n times; otherwise the count must match "
               "n. Without a default (see feature_has_default) an absent feature fails, naming file, record "
               "offset and feature."},
    [ARG_FEATURE_HAS_DEFAULT] = {LADLE_OPTIONAL_ARG("feature_has_default", LADLE_ARG_INTS), LADLE_RANGE(0.0, 1.0),
        .doc = "One per feature name: 1 where feature_defaults holds a default, 0 where the feature has none. "
               "Default: 1 for all when feature_defaults is given, else 0."},
    LADLE__HINT_ARG_SCHEMAS(ARG_HINTS),
    LADLE__SAMPLER_ARG_SCHEMAS(ARG_SAMPLER),
};

typedef enum { TYPE_STRING, TYPE_INT64, TYPE_FLOAT32 } feature_type;

static const char *const type_names[] = {"string", "int64", "float32", NULL};
static const ladle__tfrecord_kind type_kinds[] = {LADLE__TFRECORD_BYTES, LADLE__TFRECORD_INT64,
                                                  LADLE__TFRECORD_FLOAT};
static const char *const kind_names[] = {"no list", "bytes_list", "float_list", "int64_list"};

typedef struct feature_spec {
  const char *name;
  feature_type type;
  int64_t size; /* -1: any */
  int has_default;
  uint8_t *default_data; /* the default's output bytes */
  int64_t default_count, default_bytes;
} feature_spec;

/* What setup found in a batch slot's record, kept for run. The slot's
 * buffer is reused from iteration to iteration. */
typedef struct slot {
  uint8_t *buf;
  size_t cap, length;
  ladle__tfrecord_feature found[LADLE_MAX_OUTPUTS]; /* data NULL: use the default */
} slot;

typedef struct tfr_state {
  ladle__tfrecord_index *index;
  ladle__sampler *sampler;
  feature_spec features[LADLE_MAX_OUTPUTS];
  int num_features;
  slot *slots;
  int num_slots;
} tfr_state;

static void tfr_fini(ladle__node *n) {
  tfr_state *w = n->state;
  if (!w) return;
  ladle__tfrecord_index_destroy(w->index);
  ladle__sampler_destroy(w->sampler);
  for (int k = 0; k < w->num_features; k++) free(w->features[k].default_data);
  if (w->slots)
    for (int i = 0; i < w->num_slots; i++) free(w->slots[i].buf);
  free(w->slots);
  free(w);
  n->state = NULL;
}

/* Parses a default's text for feature f (see the argument's doc). */
static ladle_status parse_default(feature_spec *f, const char *text) {
  ladle_status st = LADLE_OK;
  if (f->type == TYPE_STRING) {
    size_t len = strlen(text);
    LADLE_ALLOC(f->default_data, len);
    memcpy(f->default_data, text, len);
    f->default_count = f->size < 0 ? 1 : f->size;
    f->default_bytes = (int64_t)len;
    return LADLE_OK;
  }
  size_t elem = f->type == TYPE_INT64 ? 8 : 4;
  int64_t n = 0;
  size_t cap = strlen(text) / 2 + 1; /* each number takes a character and a separator */
  LADLE_ALLOC(f->default_data, cap * elem);
  const char *p = text;
  for (;;) {
    while (*p == ' ' || *p == ',' || *p == '\t') p++;
    if (!*p) break;
    char *end = NULL;
    errno = 0;
    if (f->type == TYPE_INT64) {
      long long v = strtoll(p, &end, 0);
      LADLE_CHECK(end != p && errno == 0, LADLE_ERROR_INVALID_ARGUMENT,
                  "feature \"%s\": the default \"%s\" is not a list of int64 numbers", f->name, text);
      int64_t v64 = v;
      memcpy(f->default_data + n * 8, &v64, 8);
    } else {
      double v = strtod(p, &end);
      LADLE_CHECK(end != p, LADLE_ERROR_INVALID_ARGUMENT,
                  "feature \"%s\": the default \"%s\" is not a list of numbers", f->name, text);
      float v32 = (float)v;
      memcpy(f->default_data + n * 4, &v32, 4);
    }
    LADLE_CHECK(*end == '\0' || *end == ' ' || *end == ',' || *end == '\t', LADLE_ERROR_INVALID_ARGUMENT,
                "feature \"%s\": the default \"%s\" is not a list of numbers", f->name, text);
    n++;
    p = end;
  }
  if (f->size > 1 && n == 1) { /* a scalar default fills the fixed shape */
    uint8_t *grown = realloc(f->default_data, (size_t)f->size * elem);
    LADLE_CHECK(grown, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
    f->default_data = grown;
    for (int64_t i = 1; i < f->size; i++) memcpy(grown + i * (int64_t)elem, grown, elem);
    n = f->size;
  }
  LADLE_CHECK(f->size < 0 || n == f->size, LADLE_ERROR_INVALID_ARGUMENT,
              "feature \"%s\": the default \"%s\" has %lld values; the feature has %lld", f->name, text,
              (long long)n, (long long)f->size);
  f->default_count = n;
  f->default_bytes = n * (int64_t)elem;
done:
  return st;
}

static ladle_status tfr_init(ladle__node *n) {
  ladle_status st = LADLE_OK;
  tfr_state *w = NULL;
  const ladle_value *paths = ladle__arg_value(n, ARG_PATH), *names = ladle__arg_value(n, ARG_FEATURE_NAMES);
  const ladle_value *types = ladle__arg_value(n, ARG_FEATURE_TYPES), *sizes = ladle__arg_value(n, ARG_FEATURE_SIZES);
  const ladle_value *defaults = ladle__arg_value(n, ARG_FEATURE_DEFAULTS);
  const ladle_value *has_default = ladle__arg_value(n, ARG_FEATURE_HAS_DEFAULT);
  int num = names->count;
  if (paths->count < 1) return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'path' is empty");
  if (num < 1 || num > LADLE_MAX_OUTPUTS)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'feature_names' has %d entries; give 1 to %d",
                         num, LADLE_MAX_OUTPUTS);
  if (num != n->num_outputs)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INTERNAL, "the node has %d outputs but 'feature_names' has %d entries",
                         n->num_outputs, num);
  const ladle_value *lists[] = {types, sizes, defaults, has_default};
  const char *list_names[] = {"feature_types", "feature_sizes", "feature_defaults", "feature_has_default"};
  for (int i = 0; i < 4; i++)
    if ((i == 0 || lists[i]->count) && lists[i]->count != num)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                           "argument '%s' has %d entries but 'feature_names' has %d; give one per feature",
                           list_names[i], lists[i]->count, num);
  if (has_default->count && !defaults->count)
    for (int k = 0; k < num; k++)
      if (has_default->u.ints[k])
        return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                             "argument 'feature_has_default' says feature \"%s\" has a default, but "
                             "'feature_defaults' is not given",
                             names->u.strings[k]);
  ladle__sampler_params sp;
  st = ladle__reader_sampler_params(n, ARG_SAMPLER, 0, &sp); /* num_records once the files are indexed */
  if (st != LADLE_OK) return st;
  st = ladle__sampler_check_batching(sp.batch_size, sp.num_shards, sp.shard_id);
  if (st != LADLE_OK) return ladle__wrap_error(st, "readers.tfrecord");

  w = calloc(1, sizeof *w);
  if (!w) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  n->state = w;
  w->num_features = num;
  for (int k = 0; k < num; k++) {
    feature_spec *f = &w->features[k];
    f->name = names->u.strings[k];
    int t = ladle__choice(types->u.strings[k], type_names, NULL);
    if (t < 0) {
      st = LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "feature \"%s\": type \"%s\" is not one of \"string\", \"int64\", \"float32\"", f->name,
                         types->u.strings[k]);
      goto fail;
    }
    f->type = (feature_type)t;
    f->size = sizes->count ? sizes->u.ints[k] : -1;
    f->has_default = defaults->count && (!has_default->count || has_default->u.ints[k]);
    if (f->has_default) {
      st = parse_default(f, defaults->u.strings[k]);
      if (st != LADLE_OK) goto fail;
    }
    static const ladle_dtype dtypes[] = {LADLE_UINT8, LADLE_INT64, LADLE_FLOAT32};
    n->out[k] = (ladle__out_desc){dtypes[t], 1, ""};
  }
  w->num_slots = sp.batch_size;
  w->slots = calloc((size_t)w->num_slots, sizeof *w->slots);
  if (!w->slots) {
    st = LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
    goto fail;
  }
  st = ladle__tfrecord_index_build(paths->u.strings, paths->count, &w->index);
  if (st != LADLE_OK) goto fail;
  sp.num_records = ladle__tfrecord_index_size(w->index);
  st = ladle__sampler_create(&sp, &w->sampler);
  if (st != LADLE_OK) goto fail;
  return LADLE_OK;
fail:
  ladle__wrap_error(st, "readers.tfrecord");
  tfr_fini(n);
  return st;
}

static ladle_status tfr_plan(ladle__node *n, int64_t iteration, ladle__sample_ref *refs) {
  ladle__sampler_plan(((tfr_state *)n->state)->sampler, iteration, refs);
  return LADLE_OK;
}

static const char *tfr_sample_name(ladle__node *n, int64_t index) {
  return ladle__tfrecord_index_path(((tfr_state *)n->state)->index, index);
}

static ladle_status tfr_meta(ladle__node *n, ladle_reader_meta *meta) {
  ladle__sampler_meta(((tfr_state *)n->state)->sampler, meta);
  return LADLE_OK;
}

/* Reads and checks the record, finds its features and sets the shapes. */
static ladle_status tfr_setup(ladle__node *n, ladle__sample *s) {
  ladle_status st = LADLE_OK;
  int read = 0;
  tfr_state *w = n->state;
  slot *sl = &w->slots[s->slot];
  const char *names[LADLE_MAX_OUTPUTS];
  ladle__tfrecord_record rec = ladle__tfrecord_index_record(w->index, s->ref->index);
  const char *path = ladle__tfrecord_index_path(w->index, s->ref->index);
  LADLE_TRY(ladle__tfrecord_index_read(w->index, s->ref->index, &sl->buf, &sl->cap, &sl->length));
  read = 1; /* from here on, messages get the file and record offset prefixed */
  for (int k = 0; k < w->num_features; k++) names[k] = w->features[k].name;
  LADLE_TRY(ladle__tfrecord_example_find(sl->buf, sl->length, names, w->num_features, sl->found));
  for (int k = 0; k < w->num_features; k++) {
    const feature_spec *f = &w->features[k];
    ladle__tfrecord_kind kind;
    int64_t count, bytes;
    if (!sl->found[k].data) {
      LADLE_CHECK(f->has_default, LADLE_ERROR_CORRUPT_DATA,
                  "the record has no feature \"%s\" and the feature has no default", f->name);
      count = f->default_count;
      bytes = f->default_bytes;
    } else {
      LADLE_TRY(ladle__tfrecord_feature_decode(sl->found[k], &kind, &count, &bytes, NULL));
      LADLE_CHECK(kind == LADLE__TFRECORD_NONE || kind == type_kinds[f->type], LADLE_ERROR_CORRUPT_DATA,
                  "feature \"%s\" is a %s; its type \"%s\" reads a %s", f->name, kind_names[kind],
                  type_names[f->type], kind_names[type_kinds[f->type]]);
    }
    LADLE_CHECK(f->size < 0 || count == f->size, LADLE_ERROR_CORRUPT_DATA,
                "feature \"%s\" has %lld values; it is declared with %lld", f->name, (long long)count,
                (long long)f->size);
    int64_t shape[1] = {f->type == TYPE_STRING ? bytes : count};
    ladle__set_shape(n, s, k, shape);
  }
done:
  if (st != LADLE_OK && read) ladle__wrap_error(st, "%s: the record at byte %lld", path, (long long)rec.offset);
  return st;
}

static ladle_status tfr_run(ladle__node *n, ladle__sample *s) {
  ladle_status st = LADLE_OK;
  tfr_state *w = n->state;
  slot *sl = &w->slots[s->slot];
  for (int k = 0; k < w->num_features; k++) {
    const feature_spec *f = &w->features[k];
    void *dst = ladle__output(n, s, k).data;
    if (!sl->found[k].data) {
      if (f->default_bytes) memcpy(dst, f->default_data, (size_t)f->default_bytes);
      continue;
    }
    ladle__tfrecord_kind kind;
    int64_t count, bytes;
    LADLE_TRY(ladle__tfrecord_feature_decode(sl->found[k], &kind, &count, &bytes, dst));
  }
done:
  return st;
}

const ladle__op_def ladle__op_readers_tfrecord = {
    .schema = {.name = "readers.tfrecord",
               .doc = "Reads tf.train.Example records from TFRecord files: each feature_names entry gives one output, "
                      "the values of that feature as a 1-D tensor (uint8 bytes, int64 or float32; its length may vary "
                      "per record unless feature_sizes fixes it). Files are indexed at build from the record headers "
                      "(index_path is ignored); records are read with pread and their data CRC checked (a mismatch is "
                      "a CorruptDataError naming file and record offset). Python: use fn.readers.tfrecord(path, "
                      "index_path, features={name: ladle.tfrecord.FixedLenFeature(...)}), which returns a dict. "
                      "Sharding and shuffling as readers.file.",
               .min_inputs = 0, .max_inputs = 0, .num_outputs = OUTPUTS_PER_FEATURE,
               .devices = LADLE_ON_CPU, .flags = LADLE_OP_READER,
               .num_args = ARG_COUNT, .args = args},
    .init = tfr_init,
    .fini = tfr_fini,
    .plan = tfr_plan,
    .sample_name = tfr_sample_name,
    .reader_meta = tfr_meta,
    .setup = tfr_setup,
    .run = tfr_run,
};

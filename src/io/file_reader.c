/* The file reader: its record table (path_table.c), its batch plan
 * (sampler.c) and the checked reading of a record's bytes. */
#include "io/file_reader.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/io_util.h"
#include "io/path_table.h"

struct ladle__file_reader {
  ladle__path_table table;
  ladle__sampler *sampler;
  ladle__file_reader_params params; /* pointers in it are not kept valid: copy of the scalars */
};

void ladle__file_reader_params_init(ladle__file_reader_params *p) {
  memset(p, 0, sizeof *p);
  p->num_shards = 1;
  p->batch_size = 1;
}

static int given(const char *s) { return s && s[0]; }

ladle_status ladle__file_reader_create(const ladle__file_reader_params *p,
                                       ladle__file_reader **out) {
  ladle_status st = LADLE_OK;
  ladle__file_reader *r = NULL;
  LADLE_CHECK(p && out, LADLE_ERROR_INVALID_ARGUMENT, "params and out must not be NULL");
  int has_root = given(p->file_root), has_list = given(p->file_list);
  int has_files = p->files != NULL || p->num_files != 0;
  LADLE_CHECK(!(has_list && has_files), LADLE_ERROR_INVALID_ARGUMENT,
              "file_list and files cannot both be given");
  LADLE_CHECK(has_root || has_list || has_files, LADLE_ERROR_INVALID_ARGUMENT,
              "one of file_root, file_list or files must be given");
  LADLE_CHECK(p->labels == NULL || has_files, LADLE_ERROR_INVALID_ARGUMENT,
              "labels can only be given with files");
  LADLE_CHECK(p->labels == NULL || p->num_labels == p->num_files, LADLE_ERROR_INVALID_ARGUMENT,
              "labels has %d values but files has %d; they must match", p->num_labels,
              p->num_files);
  LADLE_CHECK(!has_files || (p->files && p->num_files > 0), LADLE_ERROR_INVALID_ARGUMENT,
              "files is empty (num_files = %d)", p->num_files);
  const ladle__name_filter *filters[2] = {&p->file_filters, &p->dir_filters};
  for (int f = 0; f < 2; f++) {
    LADLE_CHECK(filters[f]->count >= 0 && (filters[f]->count == 0 || filters[f]->patterns),
                LADLE_ERROR_INVALID_ARGUMENT, "a filter's patterns are NULL but its count is %d", filters[f]->count);
    for (int i = 0; i < filters[f]->count; i++)
      LADLE_CHECK(filters[f]->patterns[i], LADLE_ERROR_INVALID_ARGUMENT, "filter pattern %d is NULL", i);
  }
  /* Check what does not need the listing first: listing can take seconds. */
  LADLE_TRY(ladle__sampler_check_batching(p->batch_size, p->num_shards, p->shard_id));

  LADLE_ALLOC(r, 1);
  const char *root = has_root ? p->file_root : NULL;
  if (has_list)
    LADLE_TRY(ladle__path_table_from_list_file(&r->table, p->file_list, root));
  else if (has_files)
    LADLE_TRY(ladle__path_table_from_files(&r->table, p->files, p->num_files, p->labels, root));
  else
    LADLE_TRY(ladle__path_table_from_tree(&r->table, root, &p->file_filters, &p->dir_filters));
  ladle__path_table_trim(&r->table);

  ladle__sampler_params sp = {
      .num_records = r->table.count,
      .random_shuffle = p->random_shuffle,
      .seed = p->seed,
      .shard_id = p->shard_id,
      .num_shards = p->num_shards,
      .stick_to_shard = p->stick_to_shard,
      .pad_last_batch = p->pad_last_batch,
      .batch_size = p->batch_size,
  };
  LADLE_TRY(ladle__sampler_create(&sp, &r->sampler));
  r->params = *p;
  r->params.file_root = r->params.file_list = NULL;
  r->params.files = NULL;
  r->params.labels = NULL;
  r->params.file_filters.patterns = r->params.dir_filters.patterns = NULL;
  r->params.stick_to_shard = p->stick_to_shard != 0;
  r->params.pad_last_batch = p->pad_last_batch != 0;
  *out = r;
  r = NULL;
done:
  ladle__file_reader_destroy(r);
  return st;
}

void ladle__file_reader_destroy(ladle__file_reader *r) {
  if (!r) return;
  ladle__sampler_destroy(r->sampler);
  ladle__path_table_free(&r->table);
  free(r);
}

int64_t ladle__file_reader_size(const ladle__file_reader *r) { return r->table.count; }

const char *ladle__file_reader_path(const ladle__file_reader *r, int64_t index) {
  if (index < 0 || index >= r->table.count) return NULL;
  return r->table.arena + r->table.offsets[index];
}

int32_t ladle__file_reader_label(const ladle__file_reader *r, int64_t index) {
  if (index < 0 || index >= r->table.count) return -1;
  return r->table.labels[index];
}

ladle_status ladle__file_reader_meta(const ladle__file_reader *r, ladle_reader_meta *meta) {
  ladle_status st = LADLE_OK;
  LADLE_CHECK(r && meta, LADLE_ERROR_INVALID_ARGUMENT, "reader and meta must not be NULL");
  ladle__sampler_meta(r->sampler, meta);
done:
  return st;
}

int64_t ladle__file_reader_batches_per_epoch(const ladle__file_reader *r) {
  return ladle__sampler_batches_per_epoch(r->sampler);
}

void ladle__file_reader_plan(const ladle__file_reader *r, int64_t iteration,
                             ladle__sample_ref *refs) {
  ladle__sampler_plan(r->sampler, iteration, refs);
}

ladle_status ladle__file_reader_stat(const ladle__file_reader *r, int64_t index, size_t *size) {
  ladle_status st = LADLE_OK;
  LADLE_CHECK(r && size, LADLE_ERROR_INVALID_ARGUMENT, "reader and size must not be NULL");
  LADLE_CHECK(index >= 0 && index < r->table.count, LADLE_ERROR_INVALID_ARGUMENT,
              "record %lld is out of range (the reader has %lld)", (long long)index,
              (long long)r->table.count);
  st = ladle__file_size(ladle__file_reader_path(r, index), size);
  if (st != LADLE_OK) st = ladle__wrap_error(st, "%s: record %lld", __func__, (long long)index);
done:
  return st;
}

ladle_status ladle__file_reader_read(const ladle__file_reader *r, int64_t index, uint8_t *dst,
                                     size_t size) {
  ladle_status st = LADLE_OK;
  LADLE_CHECK(r && (dst || size == 0), LADLE_ERROR_INVALID_ARGUMENT,
              "reader and dst must not be NULL");
  LADLE_CHECK(index >= 0 && index < r->table.count, LADLE_ERROR_INVALID_ARGUMENT,
              "record %lld is out of range (the reader has %lld)", (long long)index,
              (long long)r->table.count);
  st = ladle__file_read_exact(ladle__file_reader_path(r, index), dst, size);
  if (st != LADLE_OK) st = ladle__wrap_error(st, "%s: record %lld", __func__, (long long)index);
done:
  return st;
}

/* The engine behind fn.readers.tfrecord: lists the records of TFRecord files
 * from their headers, reads a record back with its CRC checked, and finds
 * and decodes the features of a serialized tf.train.Example.
 *
 * TFRecord files: a sequence of records, each
 *   uint64 length (little-endian), uint32 masked CRC32C of those 8 bytes,
 *   `length` bytes of data, uint32 masked CRC32C of the data,
 * where mask(c) = ((c >> 15) | (c << 17)) + 0xa282ead8 (mod 2^32). Indexing
 * reads the 12 header bytes of each record, checks the length CRC and that
 * the record fits in the file, and skips the data; the data CRC is checked
 * when a record is read. Errors name the file and the byte offset of the
 * record's header.
 *
 * Examples (protobuf wire format, decoded here without a protobuf library):
 *   Example  { Features features = 1; }
 *   Features { map<string, Feature> feature = 1; }   entries: key = 1, value = 2
 *   Feature  { oneof { BytesList bytes_list = 1; FloatList float_list = 2;
 *                      Int64List int64_list = 3; } }
 *   BytesList { repeated bytes value = 1; }
 *   FloatList { repeated float value = 1; }    packed or not
 *   Int64List { repeated int64 value = 1; }    packed or not
 * As protobuf parsers do: unknown fields (and known fields of an unexpected
 * wire type) are skipped; a repeated map key keeps its last entry; repeated
 * occurrences of the same list field concatenate, and a different oneof
 * member replaces the earlier one. Group wire types (3, 4) and field number 0
 * are malformed. Every read is bounds-checked: malformed data is
 * LADLE_ERROR_CORRUPT_DATA, never a read outside the record.
 */
#ifndef LADLE_IO_TFRECORD_INDEX_H
#define LADLE_IO_TFRECORD_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "ladle/ladle.h"

/* CRC32C (Castagnoli, reflected polynomial 0x82f63b78) of data, continuing
 * from `crc` (0 to start). */
uint32_t ladle__tfrecord_crc32c(uint32_t crc, const void *data, size_t size);
/* TFRecord's masked form of a CRC. */
uint32_t ladle__tfrecord_mask(uint32_t crc);

/* One record: its data lies at [offset + 12, offset + 12 + length). */
typedef struct ladle__tfrecord_record {
  int64_t offset; /* byte offset of the record's header in its file */
  int64_t length; /* bytes of data */
  int file;       /* index into the paths given to build */
} ladle__tfrecord_record;

typedef struct ladle__tfrecord_index ladle__tfrecord_index;

/* Indexes every file, records numbered file by file in the order given.
 * Fails with LADLE_ERROR_IO when a file cannot be opened or read, and with
 * LADLE_ERROR_CORRUPT_DATA (naming file and offset) on a bad length CRC or a
 * file that ends inside a record; with LADLE_ERROR_INVALID_ARGUMENT when the
 * files hold no record at all. The index keeps its own copy of the paths. */
ladle_status ladle__tfrecord_index_build(const char *const *paths, int num_paths, ladle__tfrecord_index **out);
/* NULL is allowed. */
void ladle__tfrecord_index_destroy(ladle__tfrecord_index *index);

int64_t ladle__tfrecord_index_size(const ladle__tfrecord_index *index);
ladle__tfrecord_record ladle__tfrecord_index_record(const ladle__tfrecord_index *index, int64_t i);
/* The path of record i's file. Valid until destroy. */
const char *ladle__tfrecord_index_path(const ladle__tfrecord_index *index, int64_t i);

/* Reads record i's data into *buf (grown with realloc as needed; *cap its
 * size; the caller frees it) and checks its CRC; *length gets the data size.
 * Opens and closes the file per call. Fails naming the file and the record's
 * offset: LADLE_ERROR_IO when the file cannot be read or has become shorter,
 * LADLE_ERROR_CORRUPT_DATA on a bad data CRC. Thread-safe. */
ladle_status ladle__tfrecord_index_read(const ladle__tfrecord_index *index, int64_t i, uint8_t **buf,
                                        size_t *cap, size_t *length);

/* ---- tf.train.Example ---------------------------------------------------- */

typedef enum ladle__tfrecord_kind {
  LADLE__TFRECORD_NONE = 0,  /* a Feature with no list set: no values */
  LADLE__TFRECORD_BYTES = 1, /* bytes_list */
  LADLE__TFRECORD_FLOAT = 2, /* float_list */
  LADLE__TFRECORD_INT64 = 3  /* int64_list */
} ladle__tfrecord_kind;

/* A serialized Feature message inside a record; data NULL: the feature is
 * absent from the Example. */
typedef struct ladle__tfrecord_feature {
  const uint8_t *data;
  size_t size;
} ladle__tfrecord_feature;

/* Finds the features called names[0..num_names) in the serialized Example
 * `example`: out[k] is the Feature of names[k], or {NULL, 0}. Fails with
 * LADLE_ERROR_CORRUPT_DATA on malformed wire data (the message says what). */
ladle_status ladle__tfrecord_example_find(const uint8_t *example, size_t size, const char *const *names,
                                          int num_names, ladle__tfrecord_feature *out);

/* Decodes a Feature: *kind, *count (values) and *bytes (the bytes its values
 * take as output: the sum of the byte strings' lengths, 4 per float, 8 per
 * int64). With dst non-NULL also writes the values there: byte strings
 * concatenated, floats as float32, int64s as int64 (host order). Fails with
 * LADLE_ERROR_CORRUPT_DATA on malformed wire data. */
ladle_status ladle__tfrecord_feature_decode(ladle__tfrecord_feature f, ladle__tfrecord_kind *kind, int64_t *count,
                                            int64_t *bytes, void *dst);

#endif

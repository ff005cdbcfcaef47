/* NumPy .npy files: the header parser and the region copy behind
 * fn.readers.numpy.
 *
 * The format (numpy.lib.format): the magic "\x93NUMPY", a major and a minor
 * version byte, the header length (2 bytes little-endian in version 1.0, 4
 * bytes in 2.0 and 3.0), then the header: a Python dict literal with exactly
 * the keys 'descr' (a dtype string such as '<f4', '|u1', '|b1'), 'fortran_order'
 * (True/False) and 'shape' (a tuple of non-negative ints), padded with
 * spaces and ended by a newline; the array's bytes follow. Version 3.0 only
 * allows UTF-8 in the header, which changes nothing for the dtypes read here.
 *
 * The parser takes any order of keys, single or double quotes, spaces,
 * trailing commas, Python 2's 'L' suffix on shape numbers and any header
 * length (NumPy aligns the data to 64 bytes; DALI requires 16, ladle neither).
 * It refuses, with LADLE_ERROR_CORRUPT_DATA and a message saying what is
 * wrong: a bad magic or version, a header past the bytes given or longer
 * than 1 MiB, a missing, repeated or unknown key, a malformed literal, a
 * dtype ladle has no type for (complex, strings, records, datetimes: the
 * message names it), more than LADLE_MAX_NDIM dimensions, and a byte count
 * that overflows. Big-endian data ('>') is accepted: the copy swaps the
 * bytes (DALI refuses such files).
 */
#ifndef LADLE_IO_NPY_H
#define LADLE_IO_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "ladle/ladle.h"

/* Longest header accepted (NumPy itself refuses more than 10000 bytes by default). */
#define LADLE__NPY_MAX_HEADER (1 << 20)

typedef struct ladle__npy_header {
  ladle_dtype dtype;
  int elem_size;     /* bytes per element */
  int swap;          /* 1: the data is big-endian (element size > 1): bytes are swapped when copied */
  int fortran_order; /* 1: the first axis varies fastest */
  int ndim;          /* 0 for a scalar */
  int64_t shape[LADLE_MAX_NDIM];
  int64_t data_offset; /* where the data starts in the file */
  int64_t data_bytes;  /* product of the shape times the element size */
  int major, minor;    /* the format version */
} ladle__npy_header;

/* Parses the start of a .npy file, data[0 .. size). Returns
 * LADLE_ERROR_CORRUPT_DATA (message set, naming no file: the caller adds
 * it) when the bytes are not a header ladle reads; *need, when not NULL,
 * gets the bytes the header needs when `size` was too small for it (else 0),
 * so a caller may read more and try again. */
ladle_status ladle__npy_parse(const uint8_t *data, size_t size, ladle__npy_header *h, size_t *need);

/* Reads and parses the header of the file open as fd, and checks that the
 * file holds the data it announces. Errors name `path`. */
ladle_status ladle__npy_read_header(int fd, const char *path, ladle__npy_header *h);

/* Copies the region of the array given by start[d] and shape[d] (in array
 * coordinates, any part of it possibly outside the array) into dst, dense in
 * C order, writing fill (one element, native byte order) outside the array.
 * src holds the array's elements along its slowest axis (axis 0 in C order,
 * the last one in Fortran order) from index `first` on, as many as that
 * axis's in-array part of the region needs: src is the file's bytes from
 * ladle__npy_slab's offset. */
void ladle__npy_copy_region(uint8_t *dst, const uint8_t *src, const ladle__npy_header *h, const int64_t *start,
                            const int64_t *shape, const void *fill);

/* The bytes of the file the region needs: [*offset, *offset + *bytes), the
 * whole rows of the slowest axis the region meets (0 bytes when the region
 * lies outside the array or is empty). */
void ladle__npy_slab(const ladle__npy_header *h, const int64_t *start, const int64_t *shape, int64_t *offset,
                     int64_t *bytes);

#endif

/* The engine behind fn.readers.file: lists (path, label) records once, says
 * which records make up any iteration's batch, and reads a record's bytes.
 *
 * Where the records come from (exactly one way; DALI's argument names):
 *  - file_root alone: a class-per-folder tree. Every subfolder of file_root
 *    (folders and links to folders, sorted byte-wise with strcmp) that
 *    `dir_filters` keeps is a class; its label is its index in that order,
 *    empty subfolders included. Files directly in file_root are ignored. A
 *    class folder is searched recursively (links followed; a link back to an
 *    enclosing folder is an error; a dangling link is skipped) for files whose
 *    name `file_filters` keeps (glob patterns, io/path_table.h; default *.jpg
 *    *.jpeg *.png *.bmp *.tif *.tiff *.pnm *.ppm *.pgm *.pbm *.webp *.jp2;
 *    ASCII-case-insensitive unless case_sensitive). Within a class, files are sorted
 *    byte-wise by their whole path. Hidden names get no special treatment
 *    (like DALI and torchvision). Records are ordered by (label, path).
 *  - file_list: a text file with one "path label" per line; the label is the
 *    line's last whitespace-separated token (so paths may contain spaces), an
 *    integer in int32 range; blank lines and lines starting with '#' are
 *    skipped; a relative path is relative to file_root when given, else to
 *    the list file's folder. Records keep the file's order. A bad line fails
 *    with "<list path>:<line>: <what is wrong>".
 *  - files (+ labels): explicit paths, relative ones joined to file_root when
 *    given; labels[i] or, without labels, i (DALI: sequential 0-based
 *    indices). Records keep the given order.
 * file_root and file_list equal to "" count as not given. Files named in a
 * list are not checked at creation (millions of stats); a missing one fails
 * when it is read. An empty data set is an error.
 *
 * Which records make up iteration k: see io/sampler.h for the full model:
 * a uniform per-epoch shuffle drawn from (seed, epoch) (unlike DALI, whose
 * random_shuffle draws from a prefetch buffer of initial_fill samples and so
 * is neither uniform nor addressable); shard s of S holds positions
 * [floor(s*N/S), floor((s+1)*N/S)); shards rotate per epoch unless
 * stick_to_shard; an endless stream without pad_last_batch, and with it a
 * whole number of batches per epoch, ceil(ceil(N/S)/B). Requires
 * num_shards <= N, as DALI does.
 *
 * Reader metadata (ladle__file_reader_meta), as DALI computes it:
 * epoch_size = N. epoch_size_padded = num_shards * ceil(N / num_shards) when
 * pad_last_batch, else N. DALI's documentation of pad_last_batch says the
 * option "pads every shard to the same size, which is a multiple of the batch
 * size" (Sharding docs) and "if the number of batches differs across shards,
 * this option can cause an entire batch of repeated samples to be added"
 * (readers docs); but the value DALI reports as epoch_size_padded
 * (Loader::Size(consider_padding=true)) is num_samples(num_shards, N) *
 * num_shards, i.e. S*ceil(N/S), not rounded to the batch size: DALI's
 * framework iterators divide it by S and round up to whole batches
 * themselves. We report the same number, so those formulas carry over; the
 * batches per epoch are ceil(epoch_size_padded / S / B).
 *
 * Thread safety: after creation the reader is immutable to its users; every
 * function may be called from any thread at once (plan() serialises on an
 * internal cache lock). Paths stay valid until destroy.
 */
#ifndef LADLE_IO_FILE_READER_H
#define LADLE_IO_FILE_READER_H

#include <stddef.h>
#include <stdint.h>

#include "io/path_table.h"
#include "io/sampler.h"
#include "ladle/ladle.h"

typedef struct ladle__file_reader_params {
  const char *file_root; /* class-per-folder tree, or base of relative paths; NULL/"": unused */
  const char *file_list; /* "path label" lines; NULL/"" if unused */
  const char *const *files;
  int num_files;              /* explicit paths; files NULL and num_files 0 if unused */
  const int32_t *labels;      /* with files: one label per file, or NULL (label = index) */
  int num_labels;             /* must equal num_files when labels is given */
  ladle__name_filter file_filters; /* file_root tree: the files kept (no patterns: the defaults) */
  ladle__name_filter dir_filters;  /* file_root tree: the class folders kept (no patterns: all) */
  int random_shuffle; /* default 0 */
  uint64_t seed;
  int shard_id, num_shards; /* 0 <= shard_id < num_shards <= N; default 0, 1 */
  int stick_to_shard;       /* default 0 */
  int pad_last_batch;       /* default 0 */
  int batch_size;           /* >= 1 */
} ladle__file_reader_params;

typedef struct ladle__file_reader ladle__file_reader;

/* Fills `p` with the defaults (everything 0/NULL, num_shards 1, batch_size 1). */
void ladle__file_reader_params_init(ladle__file_reader_params *p);

/* Lists the records now and checks the parameters. Errors name the folder or
 * file at fault (and the line of a list file). The caller owns *out. */
ladle_status ladle__file_reader_create(const ladle__file_reader_params *p,
                                       ladle__file_reader **out);
/* NULL is allowed. */
void ladle__file_reader_destroy(ladle__file_reader *r);

/* N, the records of the whole data set. */
int64_t ladle__file_reader_size(const ladle__file_reader *r);
/* The full path of record `index` (0..N-1, listing order). Valid until destroy. */
const char *ladle__file_reader_path(const ladle__file_reader *r, int64_t index);
int32_t ladle__file_reader_label(const ladle__file_reader *r, int64_t index);
/* DALI's reader metadata; see the header comment for epoch_size_padded. */
ladle_status ladle__file_reader_meta(const ladle__file_reader *r, ladle_reader_meta *meta);

/* Batches per epoch with pad_last_batch (ceil(ceil(N/S)/B)); 0 without (an
 * epoch then need not start at a batch boundary). */
int64_t ladle__file_reader_batches_per_epoch(const ladle__file_reader *r);

/* The batch_size samples of iteration `iteration` (>= 0, counting from the
 * pipeline's start), written to refs[0 .. batch_size-1]. A pure function of
 * (params, iteration); see io/sampler.h. */
void ladle__file_reader_plan(const ladle__file_reader *r, int64_t iteration,
                             ladle__sample_ref *refs);

/* The size in bytes of record `index`, so the caller can allocate. Fails,
 * naming the path and record, when the file is missing, not accessible, a
 * directory or otherwise not a regular file. A zero-byte file is NOT an error
 * here: its size is 0 and the decoder reports it. */
ladle_status ladle__file_reader_stat(const ladle__file_reader *r, int64_t index, size_t *size);

/* Reads record `index`'s `size` bytes (the size stat gave) into dst. Fails,
 * naming the path and record, on the errors of stat, when the file no longer
 * has `size` bytes (it changed between the two calls), and on read errors.
 * size 0 reads nothing (dst may be NULL). */
ladle_status ladle__file_reader_read(const ladle__file_reader *r, int64_t index, uint8_t *dst,
                                     size_t size);

#endif

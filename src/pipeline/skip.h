/* Skipping bad samples (ladle_pipeline_params.skip_bad_samples): which
 * records are known bad, the log of skips, and the substitution of bad slots
 * by the next good slot of their batch. Used by the executor thread; the log
 * is also read by the consumer, under the pipeline's lock. */
#ifndef LADLE_PIPELINE_SKIP_H
#define LADLE_PIPELINE_SKIP_H

#include <pthread.h>

#include "io/sampler.h"
#include "ladle/ladle.h"

typedef struct ladle__skipped {
  ladle_skipped_sample info;
  char *name, *error; /* owned; info's strings point here */
} ladle__skipped;

typedef struct ladle__skip_state {
  int enabled;
  int64_t budget;         /* distinct records allowed, < 0: no limit */
  int64_t *bad;           /* known bad record indices, sorted */
  int num_bad, cap_bad;
  ladle__skipped *log;    /* every skip, in the order found */
  int num_log, cap_log;
} ladle__skip_state;

/* 1 for the statuses of bad data (a file, record or pixel), which a skip
 * policy may drop; 0 for wrong arguments, memory, CUDA and state errors. */
int ladle__skip_data_error(ladle_status st);

/* At build: sets the budget (epoch_size for a fractional one). */
ladle_status ladle__skip_init(ladle__skip_state *s, const ladle_pipeline_params *params, int64_t epoch_size);
void ladle__skip_fini(ladle__skip_state *s);

/* 1 when `record` is known bad. */
int ladle__skip_known_bad(const ladle__skip_state *s, int64_t record);

/* 1 when skipping is on and every slot of the batch is known bad: then
 * nothing in it can fill the batch (ladle__skip_substitute fails), and the
 * executor borrows a sample of another batch of the same epoch. */
int ladle__skip_all_bad(const ladle__skip_state *s, const ladle__sample_ref *refs, int batch_size);

/* Replaces, in refs/names, every slot whose record is known bad by the next
 * slot (cyclically) whose record is not. Fails when none of the batch is good. */
ladle_status ladle__skip_substitute(const ladle__skip_state *s, ladle__sample_ref *refs, const char **names,
                                    int batch_size, int64_t iteration);

/* Records the slots of `failed` (1 per slot that failed on bad data, with
 * its message in `messages`) as bad (log and known set; under `lock`).
 * Fails with LADLE_ERROR_LIMIT, listing the skipped files, past the budget. */
ladle_status ladle__skip_record(ladle__skip_state *s, pthread_mutex_t *lock, const ladle__sample_ref *refs,
                                const char **names, const unsigned char *failed, char *const *messages,
                                int batch_size, int64_t iteration);

#endif

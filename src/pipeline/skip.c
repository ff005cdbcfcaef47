/* Skipping bad samples: see skip.h and ladle_pipeline_params. */
#include "pipeline/skip.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

int ladle__skip_data_error(ladle_status st) {
  return st == LADLE_ERROR_IO || st == LADLE_ERROR_CORRUPT_DATA || st == LADLE_ERROR_UNSUPPORTED ||
         st == LADLE_ERROR_LIMIT;
}

ladle_status ladle__skip_init(ladle__skip_state *s, const ladle_pipeline_params *params, int64_t epoch_size) {
  ladle_status st = LADLE_OK;
  memset(s, 0, sizeof *s);
  s->enabled = params->skip_bad_samples != 0;
  if (!s->enabled) return LADLE_OK;
  LADLE_CHECK(params->max_skipped_fraction >= 0 && params->max_skipped_fraction <= 1, LADLE_ERROR_INVALID_ARGUMENT,
              "max_skipped_fraction must be in [0, 1], got %g", params->max_skipped_fraction);
  s->budget = params->max_skipped;
  if (params->max_skipped_fraction > 0)
    s->budget = (int64_t)ceil(params->max_skipped_fraction * (double)(epoch_size > 0 ? epoch_size : 0));
  return LADLE_OK;
done:
  return st;
}

void ladle__skip_fini(ladle__skip_state *s) {
  for (int i = 0; i < s->num_log; i++) {
    free(s->log[i].name);
    free(s->log[i].error);
  }
  free(s->log);
  free(s->bad);
  memset(s, 0, sizeof *s);
}

int ladle__skip_known_bad(const ladle__skip_state *s, int64_t record) {
  int lo = 0, hi = s->num_bad;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (s->bad[mid] < record) lo = mid + 1;
    else hi = mid;
  }
  return lo < s->num_bad && s->bad[lo] == record;
}

int ladle__skip_all_bad(const ladle__skip_state *s, const ladle__sample_ref *refs, int batch_size) {
  if (!s->enabled || !s->num_bad) return 0;
  for (int i = 0; i < batch_size; i++)
    if (!ladle__skip_known_bad(s, refs[i].index)) return 0;
  return 1;
}

ladle_status ladle__skip_substitute(const ladle__skip_state *s, ladle__sample_ref *refs, const char **names,
                                    int batch_size, int64_t iteration) {
  if (!s->enabled || !s->num_bad) return LADLE_OK;
  int good = -1;
  for (int i = 0; i < batch_size && good < 0; i++)
    if (!ladle__skip_known_bad(s, refs[i].index)) good = i;
  if (good < 0)
    return LADLE_FAIL(LADLE_ERROR_CORRUPT_DATA, "every sample of iteration %lld is bad (%d skipped); nothing is "
                      "left to fill the batch with", (long long)iteration, batch_size);
  /* From the last slot backwards, so that each bad slot copies the nearest good slot after it (cyclically)
   * as the original listing had it. */
  int next_good = good; /* the first good slot: what the tail wraps around to */
  for (int i = batch_size - 1; i >= 0; i--) {
    if (!ladle__skip_known_bad(s, refs[i].index)) {
      next_good = i;
      continue;
    }
    refs[i] = refs[next_good];
    names[i] = names[next_good];
  }
  return LADLE_OK;
}

static ladle_status grow(void **array, int *cap, int need, size_t elem) {
  if (need <= *cap) return LADLE_OK;
  int cap2 = *cap ? *cap * 2 : 16;
  while (cap2 < need) cap2 *= 2;
  void *a = realloc(*array, (size_t)cap2 * elem);
  if (!a) return LADLE_FAIL(LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  *array = a;
  *cap = cap2;
  return LADLE_OK;
}

ladle_status ladle__skip_record(ladle__skip_state *s, pthread_mutex_t *lock, const ladle__sample_ref *refs,
                                const char **names, const unsigned char *failed, char *const *messages,
                                int batch_size, int64_t iteration) {
  ladle_status st = LADLE_OK;
  pthread_mutex_lock(lock);
  for (int i = 0; i < batch_size && st == LADLE_OK; i++) {
    if (!failed[i] || ladle__skip_known_bad(s, refs[i].index)) continue; /* a duplicate slot of one bad record */
    st = grow((void **)&s->bad, &s->cap_bad, s->num_bad + 1, sizeof *s->bad);
    if (st == LADLE_OK) st = grow((void **)&s->log, &s->cap_log, s->num_log + 1, sizeof *s->log);
    if (st != LADLE_OK) break;
    int at = s->num_bad;
    while (at > 0 && s->bad[at - 1] > refs[i].index) at--;
    memmove(s->bad + at + 1, s->bad + at, sizeof *s->bad * (size_t)(s->num_bad - at));
    s->bad[at] = refs[i].index;
    s->num_bad++;
    ladle__skipped *e = &s->log[s->num_log++];
    e->name = strdup(names[i] ? names[i] : "");
    e->error = strdup(messages[i]);
    if (!e->name || !e->error) {
      st = LADLE_FAIL(LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
      break;
    }
    e->info = (ladle_skipped_sample){refs[i].index, refs[i].epoch, iteration, e->name, e->error};
  }
  if (st == LADLE_OK && s->budget >= 0 && s->num_log > s->budget) {
    char list[LADLE_ERROR_MAX / 2] = "";
    size_t len = 0;
    for (int k = 0; k < s->num_log && len + 8 < sizeof list; k++)
      len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", k ? ", " : "",
                              s->log[k].name[0] ? s->log[k].name : "(unnamed)");
    st = LADLE_FAIL(LADLE_ERROR_LIMIT, "%d bad samples skipped, more than max_skipped_samples=%lld allows: %s",
                    s->num_log, (long long)s->budget, list);
  }
  pthread_mutex_unlock(lock);
  return st;
}

/* The thread-local error message and the status table. */
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[LADLE_ERROR_MAX];

const char *ladle_last_error(void) { return last_error; }

void ladle__clear_error(void) { last_error[0] = '\0'; }

void ladle__restore_error(const char *message) {
  snprintf(last_error, sizeof last_error, "%s", message ? message : "");
}

/* Messages name the public function that failed (as libjpeg-turbo's do);
 * the library's internal helpers (ladle__*, static functions) are not the
 * caller's business, so their names stay out. */
static int is_public(const char *func) { return func && strncmp(func, "ladle_", 6) == 0 && func[6] != '_'; }

ladle_status ladle__set_error(ladle_status status, const char *func, const char *fmt, ...) {
  int n = is_public(func) ? snprintf(last_error, sizeof last_error, "%s: ", func) : 0;
  if (n < 0 || (size_t)n >= sizeof last_error) n = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error + n, sizeof last_error - (size_t)n, fmt, ap);
  va_end(ap);
  return status;
}

ladle_status ladle__wrap_error(ladle_status status, const char *fmt, ...) {
  char prefix[LADLE_ERROR_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  /* Truncation is expected and harmless: the message is capped. */
  size_t n = strlen(prefix);
  if (n > sizeof last_error - 3) n = sizeof last_error - 3;
  size_t old = strnlen(last_error, sizeof last_error - 1);
  if (old > sizeof last_error - 1 - n - 2) old = sizeof last_error - 1 - n - 2;
  memmove(last_error + n + 2, last_error, old);
  memcpy(last_error, prefix, n);
  last_error[n] = ':';
  last_error[n + 1] = ' ';
  last_error[n + 2 + old] = '\0';
  return status;
}

const char *ladle_status_name(ladle_status status) {
  switch (status) {
#define LADLE_X_NAME(name, value, text) \
  case name:                            \
    return #name;
    LADLE_STATUS_LIST(LADLE_X_NAME)
#undef LADLE_X_NAME
  }
  return "LADLE_UNKNOWN_STATUS";
}

const char *ladle_status_description(ladle_status status) {
  switch (status) {
#define LADLE_X_TEXT(name, value, text) \
  case name:                            \
    return text;
    LADLE_STATUS_LIST(LADLE_X_TEXT)
#undef LADLE_X_TEXT
  }
  return "unknown status";
}

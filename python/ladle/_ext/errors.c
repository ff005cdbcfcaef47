/* errors.c: ladle.Error and one exception class per status family; raising
 * them from a ladle status and its thread-local message. */
#include "ext.h"

#include <string.h>

/* error_types[0] is ladle.Error; error_types[status] the class of a status. */
#define NUM_STATUS (LADLE_ERROR_INTERNAL + 1)
static PyObject *error_types[NUM_STATUS];

static const struct {
  ladle_status status;
  const char *name;
  const char *doc;
} error_classes[] = {
    {LADLE_ERROR_INVALID_ARGUMENT, "InvalidArgumentError", "An argument is wrong (also a ValueError)."},
    {LADLE_ERROR_OUT_OF_MEMORY, "OutOfMemoryError", "Memory ran out (also a MemoryError)."},
    {LADLE_ERROR_IO, "ReadError", "A file or record could not be read (also an OSError)."},
    {LADLE_ERROR_CORRUPT_DATA, "CorruptDataError", "A sample is corrupt or truncated."},
    {LADLE_ERROR_UNSUPPORTED, "UnsupportedError", "A format or feature is not supported."},
    {LADLE_ERROR_LIMIT, "LimitError", "A configured limit (max_pixels, ...) was exceeded."},
    {LADLE_ERROR_STATE, "StateError", "The call is not valid in the object's current state."},
    {LADLE_ERROR_CUDA, "CudaError", "A CUDA call failed."},
    {LADLE_ERROR_NOT_AVAILABLE, "NotAvailableError", "An optional component (CUDA, nvJPEG) is not available."},
    {LADLE_ERROR_INTERNAL, "InternalError", "A bug in ladle: please report it with the message."},
};

/* Raises the class of `st` with `message`; the exception gets a `status`
 * attribute holding the code's name ("LADLE_ERROR_IO"). Returns NULL. */
static PyObject *raise_message(ladle_status st, PyObject *message) {
  PyObject *type = (st > 0 && st < NUM_STATUS) ? error_types[st] : error_types[0];
  if (!message) return NULL;
  PyObject *exc = PyObject_CallOneArg(type, message);
  Py_DECREF(message);
  if (!exc) return NULL;
  PyObject *name = PyUnicode_FromString(ladle_status_name(st));
  if (name) {
    PyObject_SetAttrString(exc, "status", name);
    Py_DECREF(name);
  }
  PyErr_SetObject(type, exc);
  Py_DECREF(exc);
  return NULL;
}

/* Raises the failure of the ladle call that just returned `st` on this
 * thread. ladle_last_error() is thread-local; dropping and retaking the GIL
 * does not change the OS thread, so this must simply be the first ladle call
 * after the failing one. Returns NULL. */
PyObject *ladle__py_raise_status(ladle_status st) {
  const char *text = ladle_last_error();
  if (!text || !*text) text = ladle_status_description(st);
  /* A Python user called no C function: drop the "ladle_pipeline_run: " a
   * message starts with. */
  size_t skip = strspn(text, "abcdefghijklmnopqrstuvwxyz0123456789_");
  if (strncmp(text, "ladle_", 6) == 0 && text[skip] == ':' && text[skip + 1] == ' ') text += skip + 2;
  /* Messages carry file paths, which need not be UTF-8. */
  return raise_message(st, PyUnicode_DecodeUTF8(text, (Py_ssize_t)strlen(text), "backslashreplace"));
}

PyObject *ladle__py_raise_format(ladle_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  PyObject *message = PyUnicode_FromFormatV(fmt, ap);
  va_end(ap);
  return raise_message(st, message);
}

int ladle__py_add_errors(PyObject *m) {
  error_types[0] = PyErr_NewExceptionWithDoc(
      "ladle.Error", "Base class of ladle's errors (a RuntimeError, as DALI raises).", PyExc_RuntimeError, NULL);
  if (!error_types[0] || PyModule_AddObjectRef(m, "Error", error_types[0]) < 0) return -1;
  for (size_t k = 0; k < sizeof error_classes / sizeof error_classes[0]; k++) {
    PyObject *extra = NULL;
    switch (error_classes[k].status) {
      case LADLE_ERROR_INVALID_ARGUMENT: extra = PyExc_ValueError; break;
      case LADLE_ERROR_OUT_OF_MEMORY: extra = PyExc_MemoryError; break;
      case LADLE_ERROR_IO: extra = PyExc_OSError; break;
      default: break;
    }
    PyObject *bases = extra ? PyTuple_Pack(2, error_types[0], extra) : PyTuple_Pack(1, error_types[0]);
    if (!bases) return -1;
    char qualified[64];
    snprintf(qualified, sizeof qualified, "ladle.%s", error_classes[k].name);
    PyObject *type = PyErr_NewExceptionWithDoc(qualified, error_classes[k].doc, bases, NULL);
    Py_DECREF(bases);
    if (!type) return -1;
    error_types[error_classes[k].status] = type;
    if (PyModule_AddObjectRef(m, error_classes[k].name, type) < 0) return -1;
  }
  return 0;
}

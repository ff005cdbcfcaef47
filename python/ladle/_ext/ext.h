/* ext.h: what the files of the _ladle extension share (private to it).
 * module.c: init and the method table; errors.c: exception classes;
 * batch.c: _Batch, _Sample, batch_from_buffer; dlpack.c: DLPack export and
 * import; args.c: Python values <-> ladle_value, NodeRef, schema dicts;
 * pipeline.c: _Pipeline; threadpool.c: _ThreadPool; callback.c: the
 * callbacks of python_function operators. Cross-file names start
 * with ladle__py_; the build hides them (only PyInit__ladle is exported). */
#ifndef LADLE_PY_EXT_H
#define LADLE_PY_EXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "dlpack.h"
#include "ladle/ladle.h"

#if PY_VERSION_HEX < 0x030A0000 /* Python 3.9 */
static inline PyObject *Py_NewRef(PyObject *obj) {
  Py_INCREF(obj);
  return obj;
}
static inline int PyModule_AddObjectRef(PyObject *m, const char *name, PyObject *value) {
  Py_INCREF(value);
  if (PyModule_AddObject(m, name, value) < 0) {
    Py_DECREF(value);
    return -1;
  }
  return 0;
}
#endif

/* errors.c */
/* Raises the failure of the ladle call that just returned `st` on this
 * thread (its ladle_last_error()). Returns NULL. */
PyObject *ladle__py_raise_status(ladle_status st);
/* Raises the class of `st` with a PyUnicode_FromFormat message. Returns NULL. */
PyObject *ladle__py_raise_format(ladle_status st, const char *fmt, ...);
/* Adds ladle.Error and one subclass per status family to `m`. */
int ladle__py_add_errors(PyObject *m);

/* batch.c */
typedef struct {
  PyObject_HEAD
  ladle_batch *batch;
} BatchObject;
extern PyTypeObject ladle__py_batch_type;
/* Wraps `b`, taking over the caller's reference (released here on failure). */
PyObject *ladle__py_batch_wrap(ladle_batch *b);
PyObject *ladle__py_batch_from_buffer(PyObject *m, PyObject *args, PyObject *kw);
/* A sequence of per-sample shapes of one rank (`who` names the caller in
 * errors): *out a PyMem block of *num * *ndim extents (the caller frees it,
 * never NULL on success), *total their elements. 0, or -1 with an exception. */
int ladle__py_read_shapes(PyObject *obj, const char *who, int64_t **out, int *num, int *ndim, int64_t *total);
/* The sample index that stands for every sample of a batch concatenated
 * along the first axis (_Batch.rows()). */
#define LADLE__PY_ROWS (-2)
/* Fills shape[0..ndim) with the samples' shape concatenated along the first
 * axis and returns 1 when they lie back to back in one buffer and agree on
 * the other axes; 0 otherwise (or for 0-d samples). */
int ladle__py_rows_shape(const ladle_batch *b, int64_t *shape);
/* Readies _Batch and _Sample and adds them to `m`. */
int ladle__py_add_batch_types(PyObject *m);

/* dlpack.c */
/* __dlpack__(*, stream, max_version, dl_device, copy) of sample `sample` of
 * `b`, of the whole batch as one [N, ...] tensor for sample -1, or of the
 * samples concatenated for LADLE__PY_ROWS. compat:
 * bool as uint8 and unsigned as signed types of the same bytes. */
PyObject *ladle__py_dlpack(ladle_batch *b, int sample, PyObject *args, PyObject *kw, int compat);
/* __dlpack_device__: (device_type, device_id). */
PyObject *ladle__py_dlpack_device(const ladle_batch *b);
/* Calls the DLPack deleters of fed tensors whose batches are gone; the
 * caller holds the GIL. */
void ladle__py_run_deferred_deleters(void);
PyObject *ladle__py_batch_from_dlpack(PyObject *m, PyObject *args, PyObject *kw);

/* args.c */
/* Fills `out` for argument `name` of `op` from `value` (a plain value or a
 * NodeRef). Arrays are PyMem-allocated into *owned (the caller frees it);
 * strings point into `value`, which the caller keeps alive. 0 or -1 with an
 * exception set. */
int ladle__py_arg_from_py(const ladle_op_schema *op, const char *name, PyObject *value, ladle_arg *out,
                          void **owned);
PyObject *ladle__py_op_schemas(PyObject *m, PyObject *unused);
PyObject *ladle__py_op_common_args(PyObject *m, PyObject *unused);
PyObject *ladle__py_op_aliases(PyObject *m, PyObject *unused);
int ladle__py_add_noderef(PyObject *m);

/* callback.c */
/* A callback operator's callback calling `callable` (a new reference, which
 * the callback's release drops) with the GIL taken. */
ladle_callback ladle__py_callback(PyObject *callable);

/* threadpool.c */
typedef struct {
  PyObject_HEAD
  ladle_thread_pool *pool;
} ThreadPoolObject;
extern PyTypeObject ladle__py_threadpool_type;
/* Reads a sequence of core numbers into a PyMem array (*cpus NULL when the
 * object is None or empty). */
int ladle__py_parse_cpus(PyObject *obj, int **cpus, int *count);
int ladle__py_add_threadpool(PyObject *m);

/* pipeline.c */
int ladle__py_add_pipeline(PyObject *m);

#endif

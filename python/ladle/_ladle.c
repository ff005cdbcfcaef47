/* _ladle: the CPython extension under the ladle package. It is thin on
 * purpose: one Python type per C handle (_Pipeline, _Batch, _Sample), one
 * exception class per status family, DLPack export of batches. The friendly
 * DALI-like API is plain Python on top of it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "dlpack.h"
#include "ladle/ladle.h"

#if PY_VERSION_HEX < 0x030A0000 /* Python 3.9 */
static PyObject *Py_NewRef(PyObject *obj) {
  Py_INCREF(obj);
  return obj;
}
static int PyModule_AddObjectRef(PyObject *m, const char *name, PyObject *value) {
  Py_INCREF(value);
  if (PyModule_AddObject(m, name, value) < 0) {
    Py_DECREF(value);
    return -1;
  }
  return 0;
}
#endif

/* Calls the DLPack deleters of fed tensors whose batches are gone (below). */
static void run_deferred_deleters(void);

/* ------------------------------------------------------------------------ */
/* Exceptions                                                                 */
/* ------------------------------------------------------------------------ */

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
static PyObject *raise_status(ladle_status st) {
  const char *text = ladle_last_error();
  if (!text || !*text) text = ladle_status_description(st);
  /* A Python user called no C function: drop the "ladle_pipeline_run: " a
   * message starts with. */
  size_t skip = strspn(text, "abcdefghijklmnopqrstuvwxyz0123456789_");
  if (strncmp(text, "ladle_", 6) == 0 && text[skip] == ':' && text[skip + 1] == ' ') text += skip + 2;
  /* Messages carry file paths, which need not be UTF-8. */
  return raise_message(st, PyUnicode_DecodeUTF8(text, (Py_ssize_t)strlen(text), "backslashreplace"));
}

static PyObject *raise_format(ladle_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  PyObject *message = PyUnicode_FromFormatV(fmt, ap);
  va_end(ap);
  return raise_message(st, message);
}

/* ------------------------------------------------------------------------ */
/* Small conversions                                                          */
/* ------------------------------------------------------------------------ */

static const char *device_name(ladle_device device) {
  return device == LADLE_DEVICE_CUDA ? "cuda" : "cpu";
}

/* Pinned host memory is ordinary host memory to a consumer: export it as
 * kDLCPU, which every consumer accepts (PyTorch rejects kDLCUDAHost). */
static DLDevice dl_device_of(const ladle_batch *b) {
  DLDevice d;
  if (ladle_batch_device(b) == LADLE_DEVICE_CUDA) {
    d.device_type = kDLCUDA;
    d.device_id = ladle_batch_device_id(b);
  } else {
    d.device_type = kDLCPU;
    d.device_id = 0;
  }
  return d;
}

/* compat: the same bytes as types older consumers know: bool as kDLUInt 8
 * (0 or 1; NumPy < 1.25 and PyTorch < 2.0 lack kDLBool), uint16/32/64 as
 * kDLInt (PyTorch < 2.3 lacks them); the Python side views the result as the
 * real type. */
static DLDataType dl_dtype_of(ladle_dtype dtype, int compat) {
  DLDataType t = {kDLUInt, 8, 1};
  switch (dtype) {
    case LADLE_UINT8: t.code = kDLUInt; break;
    case LADLE_UINT16: case LADLE_UINT32: case LADLE_UINT64: t.code = compat ? kDLInt : kDLUInt; break;
    case LADLE_INT8: case LADLE_INT16: case LADLE_INT32: case LADLE_INT64: t.code = kDLInt; break;
    case LADLE_FLOAT16: case LADLE_FLOAT32: case LADLE_FLOAT64: t.code = kDLFloat; break;
    case LADLE_BOOL: t.code = compat ? kDLUInt : kDLBool; break;
    default: break;
  }
  t.bits = (uint8_t)(8 * ladle_dtype_size(dtype));
  return t;
}

static PyObject *shape_tuple(const int64_t *shape, int ndim) {
  PyObject *t = PyTuple_New(ndim);
  if (!t) return NULL;
  for (int d = 0; d < ndim; d++) {
    PyObject *v = PyLong_FromLongLong(shape[d]);
    if (!v) {
      Py_DECREF(t);
      return NULL;
    }
    PyTuple_SET_ITEM(t, d, v);
  }
  return t;
}

/* ------------------------------------------------------------------------ */
/* DLPack export                                                              */
/* ------------------------------------------------------------------------ */

/* What a capsule owns: one reference to the batch and the shape arrays the
 * DLTensor points to. The deleter may run on any thread, without the GIL
 * (consumers free tensors wherever they like), so it touches no Python
 * object: that is why it holds the ladle_batch itself, not the _Batch. */
typedef struct export_ctx {
  ladle_batch *batch;
  int64_t shape[LADLE_MAX_NDIM + 1];
  int64_t strides[LADLE_MAX_NDIM + 1];
  union {
    DLManagedTensor legacy;
    DLManagedTensorVersioned versioned;
  } m;
} export_ctx;

static void legacy_deleter(DLManagedTensor *self) {
  export_ctx *ctx = self->manager_ctx;
  ladle_batch_release(ctx->batch);
  free(ctx);
}

static void versioned_deleter(DLManagedTensorVersioned *self) {
  export_ctx *ctx = self->manager_ctx;
  ladle_batch_release(ctx->batch);
  free(ctx);
}

/* A capsule never consumed (renamed "used_...") still owns its tensor. */
static void legacy_capsule_destructor(PyObject *capsule) {
  if (!PyCapsule_IsValid(capsule, "dltensor")) return;
  DLManagedTensor *m = PyCapsule_GetPointer(capsule, "dltensor");
  if (m && m->deleter) m->deleter(m);
}

static void versioned_capsule_destructor(PyObject *capsule) {
  if (!PyCapsule_IsValid(capsule, "dltensor_versioned")) return;
  DLManagedTensorVersioned *m = PyCapsule_GetPointer(capsule, "dltensor_versioned");
  if (m && m->deleter) m->deleter(m);
}

/* The stream argument of __dlpack__ as a cudaStream_t for ladle_batch_wait.
 * Returns 1 and sets *stream, 0 when no synchronization is wanted (-1), or
 * -1 with an exception set. */
static int consumer_stream(PyObject *obj, void **stream) {
  *stream = NULL;
  if (obj == Py_None) return 1; /* legacy default stream */
  if (!PyLong_Check(obj)) {
    PyErr_SetString(PyExc_TypeError, "__dlpack__: stream must be an int or None");
    return -1;
  }
  long long s = PyLong_AsLongLong(obj);
  if (s == -1 && PyErr_Occurred()) {
    /* A pointer above 2**63: take it as unsigned. */
    PyErr_Clear();
    *stream = PyLong_AsVoidPtr(obj);
    return PyErr_Occurred() ? -1 : 1;
  }
  if (s == -1) return 0;
  if (s == 0) {
    PyErr_SetString(PyExc_ValueError,
                    "__dlpack__: stream 0 is ambiguous for CUDA and not allowed by DLPack; "
                    "use 1 (legacy default stream) or 2 (per-thread default stream)");
    return -1;
  }
  if (s == 1) return 1;
  *stream = (void *)(intptr_t)s; /* 2 is the per-thread default stream; ladle handles it */
  return 1;
}

/* Exports sample `sample` of `b` (or, for sample < 0, the whole batch as one
 * [N, ...] tensor) following the __dlpack__ keywords. */
static PyObject *export_dlpack(ladle_batch *b, int sample, PyObject *stream, PyObject *max_version,
                               PyObject *dl_device, PyObject *copy, int compat) {
  int versioned = 0;
  if (max_version != Py_None) {
    if (!PyTuple_Check(max_version) || PyTuple_GET_SIZE(max_version) != 2) {
      PyErr_SetString(PyExc_TypeError, "__dlpack__: max_version must be a (major, minor) tuple or None");
      return NULL;
    }
    long major = PyLong_AsLong(PyTuple_GET_ITEM(max_version, 0));
    if (major == -1 && PyErr_Occurred()) return NULL;
    versioned = major >= 1;
  }
  DLDevice dev = dl_device_of(b);
  if (dl_device != Py_None) {
    int type, id;
    if (!PyArg_ParseTuple(dl_device, "ii;__dlpack__: dl_device must be a (device_type, device_id) tuple",
                          &type, &id))
      return NULL;
    if (type != (int)dev.device_type || id != dev.device_id) {
      PyErr_Format(PyExc_BufferError,
                   "__dlpack__: the batch is on DLPack device (%d, %d) and ladle does not copy it to (%d, %d)",
                   (int)dev.device_type, (int)dev.device_id, type, id);
      return NULL;
    }
  }
  int make_copy = 0;
  if (copy != Py_None) {
    make_copy = PyObject_IsTrue(copy);
    if (make_copy < 0) return NULL;
  }

  int n = ladle_batch_num_samples(b);
  if (sample >= n) {
    PyErr_Format(PyExc_IndexError, "sample %d is out of range for a batch of %d", sample, n);
    return NULL;
  }
  if (sample < 0 && n > 1 && !ladle_batch_is_dense(b)) {
    PyErr_SetString(PyExc_BufferError,
                    "batch is ragged (sample shapes differ), take samples with at(i)");
    return NULL;
  }

  if (ladle_batch_device(b) == LADLE_DEVICE_CUDA) {
    if (make_copy) {
      PyErr_SetString(PyExc_BufferError, "__dlpack__: ladle does not copy CUDA batches on export (copy=True)");
      return NULL;
    }
    void *s;
    int sync = consumer_stream(stream, &s);
    if (sync < 0) return NULL;
    if (sync) {
      ladle_status st = ladle_batch_wait(b, s);
      if (st != LADLE_OK) return raise_status(st);
    }
  }

  int ndim = ladle_batch_ndim(b);
  export_ctx *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return PyErr_NoMemory();
  int out_ndim = sample < 0 ? ndim + 1 : ndim;
  int64_t *shape = ctx->shape;
  if (sample < 0) {
    shape[0] = n;
    if (n > 0) memcpy(shape + 1, ladle_batch_shape(b, 0), sizeof(int64_t) * (size_t)ndim);
  } else {
    memcpy(shape, ladle_batch_shape(b, sample), sizeof(int64_t) * (size_t)ndim);
  }
  int64_t stride = 1;
  for (int d = out_ndim - 1; d >= 0; d--) {
    ctx->strides[d] = stride;
    stride *= shape[d] > 1 ? shape[d] : 1;
  }

  if (make_copy) {
    /* A private copy: a new CPU batch holding just the exported bytes. */
    const void *src = n > 0 ? ladle_batch_data(b, sample < 0 ? 0 : sample) : NULL;
    ladle_batch *c = NULL;
    ladle_status st;
    int copies = sample < 0 ? n : 1;
    const int64_t *sample_shape = sample < 0 ? shape + 1 : shape;
    int64_t *shapes = malloc(sizeof(int64_t) * (size_t)(copies * (ndim ? ndim : 1)));
    if (!shapes) {
      free(ctx);
      return PyErr_NoMemory();
    }
    for (int i = 0; i < copies; i++) memcpy(shapes + (size_t)i * ndim, sample_shape, sizeof(int64_t) * (size_t)ndim);
    Py_BEGIN_ALLOW_THREADS
    st = ladle_batch_create_cpu(ladle_batch_dtype(b), copies, ndim, shapes, ladle_batch_layout(b), src, &c);
    Py_END_ALLOW_THREADS
    free(shapes);
    if (st != LADLE_OK) {
      free(ctx);
      return raise_status(st);
    }
    b = c; /* the context owns the new batch's only reference */
    sample = sample < 0 ? -1 : 0;
    ctx->batch = c;
  } else {
    ladle_batch_retain(b);
    ctx->batch = b;
  }

  DLTensor *t = versioned ? &ctx->m.versioned.dl_tensor : &ctx->m.legacy.dl_tensor;
  t->data = ladle_batch_num_samples(b) > 0 ? ladle_batch_data(b, sample < 0 ? 0 : sample) : NULL;
  t->device = dev;
  t->ndim = out_ndim;
  t->dtype = dl_dtype_of(ladle_batch_dtype(b), compat);
  t->shape = ctx->shape;
  t->strides = ctx->strides;
  t->byte_offset = 0;

  PyObject *capsule;
  if (versioned) {
    ctx->m.versioned.version.major = DLPACK_MAJOR_VERSION;
    ctx->m.versioned.version.minor = DLPACK_MINOR_VERSION;
    ctx->m.versioned.manager_ctx = ctx;
    ctx->m.versioned.deleter = versioned_deleter;
    ctx->m.versioned.flags = make_copy ? DLPACK_FLAG_BITMASK_IS_COPIED : 0;
    capsule = PyCapsule_New(&ctx->m.versioned, "dltensor_versioned", versioned_capsule_destructor);
  } else {
    ctx->m.legacy.manager_ctx = ctx;
    ctx->m.legacy.deleter = legacy_deleter;
    capsule = PyCapsule_New(&ctx->m.legacy, "dltensor", legacy_capsule_destructor);
  }
  if (!capsule) {
    ladle_batch_release(ctx->batch);
    free(ctx);
  }
  return capsule;
}

static char *dlpack_kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};

/* ------------------------------------------------------------------------ */
/* _Batch and _Sample                                                         */
/* ------------------------------------------------------------------------ */

typedef struct {
  PyObject_HEAD
  ladle_batch *batch;
} BatchObject;

typedef struct {
  PyObject_HEAD
  ladle_batch *batch; /* one reference */
  int index;
} SampleObject;

static PyTypeObject BatchType;
static PyTypeObject SampleType;

/* Wraps `b`, taking over the caller's reference (released here on failure). */
static PyObject *batch_wrap(ladle_batch *b) {
  BatchObject *self = PyObject_New(BatchObject, &BatchType);
  if (!self) {
    ladle_batch_release(b);
    return NULL;
  }
  self->batch = b;
  return (PyObject *)self;
}

static void batch_dealloc(BatchObject *self) {
  ladle_batch_release(self->batch);
  PyObject_Free(self);
  run_deferred_deleters(); /* a fed tensor's, if that was its last reference */
}

static int check_index(ladle_batch *b, Py_ssize_t i) {
  if (i < 0 || i >= ladle_batch_num_samples(b)) {
    PyErr_Format(PyExc_IndexError, "sample index %zd is out of range for a batch of %d", i,
                 ladle_batch_num_samples(b));
    return -1;
  }
  return 0;
}

static PyObject *batch_get_num_samples(BatchObject *self, void *closure) {
  return PyLong_FromLong(ladle_batch_num_samples(self->batch));
}
static PyObject *batch_get_dtype(BatchObject *self, void *closure) {
  return PyUnicode_FromString(ladle_dtype_name(ladle_batch_dtype(self->batch)));
}
static PyObject *batch_get_ndim(BatchObject *self, void *closure) {
  return PyLong_FromLong(ladle_batch_ndim(self->batch));
}
static PyObject *batch_get_layout(BatchObject *self, void *closure) {
  return PyUnicode_FromString(ladle_batch_layout(self->batch));
}
static PyObject *batch_get_device(BatchObject *self, void *closure) {
  return PyUnicode_FromString(device_name(ladle_batch_device(self->batch)));
}
static PyObject *batch_get_device_id(BatchObject *self, void *closure) {
  return PyLong_FromLong(ladle_batch_device_id(self->batch));
}
static PyObject *batch_get_is_dense(BatchObject *self, void *closure) {
  return PyBool_FromLong(ladle_batch_is_dense(self->batch));
}

static PyObject *batch_shape(BatchObject *self, PyObject *arg) {
  Py_ssize_t i = PyLong_AsSsize_t(arg);
  if (i == -1 && PyErr_Occurred()) return NULL;
  if (check_index(self->batch, i) < 0) return NULL;
  return shape_tuple(ladle_batch_shape(self->batch, (int)i), ladle_batch_ndim(self->batch));
}

static PyObject *batch_shapes(BatchObject *self, PyObject *unused) {
  int n = ladle_batch_num_samples(self->batch);
  PyObject *list = PyList_New(n);
  if (!list) return NULL;
  for (int i = 0; i < n; i++) {
    PyObject *t = shape_tuple(ladle_batch_shape(self->batch, i), ladle_batch_ndim(self->batch));
    if (!t) {
      Py_DECREF(list);
      return NULL;
    }
    PyList_SET_ITEM(list, i, t);
  }
  return list;
}

static PyObject *batch_data_ptr(BatchObject *self, PyObject *args) {
  Py_ssize_t i = 0;
  if (!PyArg_ParseTuple(args, "|n:data_ptr", &i)) return NULL;
  if (check_index(self->batch, i) < 0) return NULL;
  return PyLong_FromVoidPtr(ladle_batch_data(self->batch, (int)i));
}

static PyObject *batch_sample(BatchObject *self, PyObject *arg) {
  Py_ssize_t i = PyLong_AsSsize_t(arg);
  if (i == -1 && PyErr_Occurred()) return NULL;
  if (check_index(self->batch, i) < 0) return NULL;
  SampleObject *s = PyObject_New(SampleObject, &SampleType);
  if (!s) return NULL;
  ladle_batch_retain(self->batch);
  s->batch = self->batch;
  s->index = (int)i;
  return (PyObject *)s;
}

static PyObject *batch_export(BatchObject *self, PyObject *args, PyObject *kw, int compat) {
  PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|$OOOO:__dlpack__", dlpack_kwlist, &stream, &max_version,
                                   &dl_device, &copy))
    return NULL;
  return export_dlpack(self->batch, -1, stream, max_version, dl_device, copy, compat);
}

static PyObject *batch_dlpack(BatchObject *self, PyObject *args, PyObject *kw) {
  return batch_export(self, args, kw, 0);
}

static PyObject *batch_dlpack_compat(BatchObject *self, PyObject *args, PyObject *kw) {
  return batch_export(self, args, kw, 1);
}

static PyObject *dlpack_device_tuple(const ladle_batch *b) {
  DLDevice d = dl_device_of(b);
  return Py_BuildValue("(ii)", (int)d.device_type, (int)d.device_id);
}

static PyObject *batch_dlpack_device(BatchObject *self, PyObject *unused) {
  return dlpack_device_tuple(self->batch);
}

static Py_ssize_t batch_len(BatchObject *self) { return ladle_batch_num_samples(self->batch); }

static PyObject *batch_repr(BatchObject *self) {
  return PyUnicode_FromFormat("<ladle._Batch %d samples %s layout=\"%s\" on %s%s>",
                              ladle_batch_num_samples(self->batch),
                              ladle_dtype_name(ladle_batch_dtype(self->batch)), ladle_batch_layout(self->batch),
                              device_name(ladle_batch_device(self->batch)),
                              ladle_batch_is_dense(self->batch) ? "" : " (ragged)");
}

static PyGetSetDef batch_getset[] = {
    {"num_samples", (getter)batch_get_num_samples, NULL, "Samples in the batch.", NULL},
    {"dtype", (getter)batch_get_dtype, NULL, "Element type name (NumPy's: uint8, int32, float32, float64, bool, ...).", NULL},
    {"ndim", (getter)batch_get_ndim, NULL, "Dimensions per sample.", NULL},
    {"layout", (getter)batch_get_layout, NULL, "Layout letters per sample, e.g. \"HWC\"; \"\" when none.", NULL},
    {"device", (getter)batch_get_device, NULL, "\"cpu\" or \"cuda\".", NULL},
    {"device_id", (getter)batch_get_device_id, NULL, "CUDA device ordinal (0 for CPU batches).", NULL},
    {"is_dense", (getter)batch_get_is_dense, NULL, "True when all samples share one shape and one buffer.", NULL},
    {NULL},
};

static PyMethodDef batch_methods[] = {
    {"shape", (PyCFunction)batch_shape, METH_O, "shape(i) -> tuple: the shape of sample i."},
    {"shapes", (PyCFunction)batch_shapes, METH_NOARGS, "shapes() -> list of tuples, one per sample."},
    {"data_ptr", (PyCFunction)batch_data_ptr, METH_VARARGS, "data_ptr(i=0) -> int: address of sample i."},
    {"sample", (PyCFunction)batch_sample, METH_O,
     "sample(i) -> _Sample: a view of sample i with __dlpack__ (no copy; keeps the batch alive)."},
    {"__dlpack__", (PyCFunction)(void (*)(void))batch_dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None): the dense batch as one "
     "[N, ...] tensor."},
    {"_dlpack_compat", (PyCFunction)(void (*)(void))batch_dlpack_compat, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__ with bool as uint8 and uint16/32/64 as int16/32/64 (the same bytes), for consumers without "
     "those types."},
    {"__dlpack_device__", (PyCFunction)batch_dlpack_device, METH_NOARGS, "(device_type, device_id)."},
    {NULL},
};

static PySequenceMethods batch_as_sequence = {
    .sq_length = (lenfunc)batch_len,
};

static PyTypeObject BatchType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ladle._ladle._Batch",
    .tp_basicsize = sizeof(BatchObject),
    .tp_dealloc = (destructor)batch_dealloc,
    .tp_repr = (reprfunc)batch_repr,
    .tp_as_sequence = &batch_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A batch of samples owned by ladle (one reference to a ladle_batch).",
    .tp_methods = batch_methods,
    .tp_getset = batch_getset,
};

static void sample_dealloc(SampleObject *self) {
  ladle_batch_release(self->batch);
  PyObject_Free(self);
}

static PyObject *sample_export(SampleObject *self, PyObject *args, PyObject *kw, int compat) {
  PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|$OOOO:__dlpack__", dlpack_kwlist, &stream, &max_version,
                                   &dl_device, &copy))
    return NULL;
  return export_dlpack(self->batch, self->index, stream, max_version, dl_device, copy, compat);
}

static PyObject *sample_dlpack(SampleObject *self, PyObject *args, PyObject *kw) {
  return sample_export(self, args, kw, 0);
}

static PyObject *sample_dlpack_compat(SampleObject *self, PyObject *args, PyObject *kw) {
  return sample_export(self, args, kw, 1);
}

static PyObject *sample_dlpack_device(SampleObject *self, PyObject *unused) {
  return dlpack_device_tuple(self->batch);
}

static PyObject *sample_get_shape(SampleObject *self, void *closure) {
  return shape_tuple(ladle_batch_shape(self->batch, self->index), ladle_batch_ndim(self->batch));
}
static PyObject *sample_get_index(SampleObject *self, void *closure) { return PyLong_FromLong(self->index); }
static PyObject *sample_get_dtype(SampleObject *self, void *closure) {
  return PyUnicode_FromString(ladle_dtype_name(ladle_batch_dtype(self->batch)));
}
static PyObject *sample_get_layout(SampleObject *self, void *closure) {
  return PyUnicode_FromString(ladle_batch_layout(self->batch));
}
static PyObject *sample_get_device(SampleObject *self, void *closure) {
  return PyUnicode_FromString(device_name(ladle_batch_device(self->batch)));
}
static PyObject *sample_get_data_ptr(SampleObject *self, void *closure) {
  return PyLong_FromVoidPtr(ladle_batch_data(self->batch, self->index));
}

static PyGetSetDef sample_getset[] = {
    {"shape", (getter)sample_get_shape, NULL, "The sample's shape.", NULL},
    {"index", (getter)sample_get_index, NULL, "The sample's index in its batch.", NULL},
    {"dtype", (getter)sample_get_dtype, NULL, "Element type name.", NULL},
    {"layout", (getter)sample_get_layout, NULL, "Layout letters.", NULL},
    {"device", (getter)sample_get_device, NULL, "\"cpu\" or \"cuda\".", NULL},
    {"data_ptr", (getter)sample_get_data_ptr, NULL, "Address of the sample's first byte.", NULL},
    {NULL},
};

static PyMethodDef sample_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))sample_dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None): the sample as a tensor."},
    {"_dlpack_compat", (PyCFunction)(void (*)(void))sample_dlpack_compat, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__ with bool as uint8 and uint16/32/64 as int16/32/64 (the same bytes), for consumers without "
     "those types."},
    {"__dlpack_device__", (PyCFunction)sample_dlpack_device, METH_NOARGS, "(device_type, device_id)."},
    {NULL},
};

static PyTypeObject SampleType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ladle._ladle._Sample",
    .tp_basicsize = sizeof(SampleObject),
    .tp_dealloc = (destructor)sample_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One sample of a batch, exported through DLPack without a copy.",
    .tp_methods = sample_methods,
    .tp_getset = sample_getset,
};

/* ------------------------------------------------------------------------ */
/* NodeRef: marks an operator argument as a per-sample node                   */
/* ------------------------------------------------------------------------ */

typedef struct {
  PyObject_HEAD
  int id;
} NodeRefObject;

static PyObject *noderef_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  int id;
  static char *kwlist[] = {"id", NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kw, "i:NodeRef", kwlist, &id)) return NULL;
  if (id < 0) {
    PyErr_SetString(PyExc_ValueError, "NodeRef: id must be >= 0");
    return NULL;
  }
  NodeRefObject *self = (NodeRefObject *)type->tp_alloc(type, 0);
  if (self) self->id = id;
  return (PyObject *)self;
}

static PyObject *noderef_get_id(NodeRefObject *self, void *closure) { return PyLong_FromLong(self->id); }

static PyObject *noderef_repr(NodeRefObject *self) { return PyUnicode_FromFormat("NodeRef(%d)", self->id); }

static PyGetSetDef noderef_getset[] = {
    {"id", (getter)noderef_get_id, NULL, "The node id.", NULL},
    {NULL},
};

static PyTypeObject NodeRefType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ladle._ladle.NodeRef",
    .tp_basicsize = sizeof(NodeRefObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "NodeRef(id): an operator argument given per sample by node `id`.",
    .tp_new = noderef_new,
    .tp_repr = (reprfunc)noderef_repr,
    .tp_getset = noderef_getset,
};

/* ------------------------------------------------------------------------ */
/* Argument values: Python -> ladle_value by the schema's type                */
/* ------------------------------------------------------------------------ */

static PyObject *bad_value(const ladle_op_schema *op, const ladle_arg_schema *as, PyObject *obj, const char *why) {
  return raise_format(LADLE_ERROR_INVALID_ARGUMENT, "%s: argument '%s' expects %s, got %s %R%s", op->name,
                      as->name, ladle_arg_type_name(as->type), Py_TYPE(obj)->tp_name, obj, why);
}

/* One Python number as an int64 for an int-like argument: ints, bools (as
 * DALI takes them) and floats with an integral value. */
static int to_int(const ladle_op_schema *op, const ladle_arg_schema *as, PyObject *obj, int64_t *out) {
  if (PyFloat_Check(obj)) {
    double v = PyFloat_AS_DOUBLE(obj);
    if (!(v == floor(v) && fabs(v) < 9.2e18)) {
      bad_value(op, as, obj, " (not a whole number)");
      return -1;
    }
    *out = (int64_t)v;
    return 0;
  }
  if (PyUnicode_Check(obj) || !PyIndex_Check(obj)) {
    bad_value(op, as, obj, "");
    return -1;
  }
  PyObject *index = PyNumber_Index(obj);
  if (!index) return -1;
  int overflow;
  long long v = PyLong_AsLongLongAndOverflow(index, &overflow);
  Py_DECREF(index);
  if (v == -1 && PyErr_Occurred()) return -1;
  if (overflow) {
    bad_value(op, as, obj, " (does not fit in 64 bits)");
    return -1;
  }
  *out = v;
  return 0;
}

/* One Python number as a double for a float argument (ints are fine). */
static int to_float(const ladle_op_schema *op, const ladle_arg_schema *as, PyObject *obj, double *out) {
  if (PyBool_Check(obj) || PyUnicode_Check(obj) || PyBytes_Check(obj) ||
      !(PyFloat_Check(obj) || PyLong_Check(obj) || PyIndex_Check(obj) ||
        (Py_TYPE(obj)->tp_as_number && Py_TYPE(obj)->tp_as_number->nb_float))) {
    bad_value(op, as, obj, "");
    return -1;
  }
  double v = PyFloat_AsDouble(obj);
  if (v == -1.0 && PyErr_Occurred()) return -1;
  *out = v;
  return 0;
}

static int to_dtype(const ladle_op_schema *op, const ladle_arg_schema *as, PyObject *obj, int64_t *out) {
  if (PyUnicode_Check(obj)) {
    const char *s = PyUnicode_AsUTF8(obj);
    if (!s) return -1;
    for (int d = 0; d < LADLE_DTYPE_COUNT; d++)
      if (strcmp(s, ladle_dtype_name((ladle_dtype)d)) == 0) {
        *out = d;
        return 0;
      }
    bad_value(op, as, obj, " (use a NumPy type name: uint8, int32, float32, float64, bool, ...)");
    return -1;
  }
  if (to_int(op, as, obj, out) < 0) return -1;
  if (*out < 0 || *out >= LADLE_DTYPE_COUNT) {
    bad_value(op, as, obj, " (not a ladle dtype number)");
    return -1;
  }
  return 0;
}

static int is_list_like(PyObject *obj) {
  return (PyList_Check(obj) || PyTuple_Check(obj)) && !PyUnicode_Check(obj);
}

/* Converts `obj` for argument `as` into `out`. Arrays are allocated with
 * PyMem and stored in *owned (freed by the caller); strings point into the
 * str objects, which the caller keeps alive. */
static int convert_value(const ladle_op_schema *op, const ladle_arg_schema *as, PyObject *obj,
                         ladle_value *out, void **owned) {
  out->type = as->type;
  out->count = 1;
  switch (as->type) {
    case LADLE_ARG_INT:
      return to_int(op, as, obj, &out->u.i);
    case LADLE_ARG_DTYPE:
      return to_dtype(op, as, obj, &out->u.i);
    case LADLE_ARG_FLOAT:
      return to_float(op, as, obj, &out->u.f);
    case LADLE_ARG_BOOL:
      if (PyBool_Check(obj)) {
        out->u.i = obj == Py_True;
        return 0;
      }
      if (PyLong_Check(obj)) {
        long v = PyLong_AsLong(obj);
        if (v == 0 || v == 1) {
          out->u.i = v;
          return 0;
        }
        PyErr_Clear();
      }
      bad_value(op, as, obj, "");
      return -1;
    case LADLE_ARG_STRING:
      if (!PyUnicode_Check(obj)) {
        bad_value(op, as, obj, "");
        return -1;
      }
      out->u.s = PyUnicode_AsUTF8(obj);
      return out->u.s ? 0 : -1;
    case LADLE_ARG_INTS:
    case LADLE_ARG_FLOATS:
    case LADLE_ARG_STRINGS: {
      /* A scalar is a list of one, as in DALI (mean=0.5). */
      PyObject *seq = is_list_like(obj) ? PySequence_Fast(obj, "") : PyTuple_Pack(1, obj);
      if (!seq) return -1;
      Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
      if (n > INT32_MAX) {
        Py_DECREF(seq);
        bad_value(op, as, obj, " (too long)");
        return -1;
      }
      size_t elem = as->type == LADLE_ARG_INTS ? sizeof(int64_t)
                    : as->type == LADLE_ARG_FLOATS ? sizeof(double) : sizeof(const char *);
      void *array = PyMem_Calloc(n ? (size_t)n : 1, elem);
      if (!array) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
      }
      *owned = array;
      out->count = (int)n;
      int rc = 0;
      for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        if (as->type == LADLE_ARG_INTS) {
          rc = to_int(op, as, item, (int64_t *)array + i);
        } else if (as->type == LADLE_ARG_FLOATS) {
          rc = to_float(op, as, item, (double *)array + i);
        } else if (!PyUnicode_Check(item)) {
          bad_value(op, as, item, " in the list");
          rc = -1;
        } else {
          ((const char **)array)[i] = PyUnicode_AsUTF8(item);
          rc = ((const char **)array)[i] ? 0 : -1;
        }
      }
      Py_DECREF(seq); /* the items live on in `obj`, which the caller holds */
      if (as->type == LADLE_ARG_INTS) out->u.ints = array;
      else if (as->type == LADLE_ARG_FLOATS) out->u.floats = array;
      else out->u.strings = array;
      return rc;
    }
  }
  raise_format(LADLE_ERROR_INTERNAL, "%s: argument '%s' has an unknown type %d", op->name, as->name, (int)as->type);
  return -1;
}

/* A schema value (default) as a Python object. */
static PyObject *value_to_py(const ladle_value *v) {
  switch (v->type) {
    case LADLE_ARG_INT:
      return v->count ? PyLong_FromLongLong(v->u.i) : Py_NewRef(Py_None);
    case LADLE_ARG_FLOAT:
      return v->count ? PyFloat_FromDouble(v->u.f) : Py_NewRef(Py_None);
    case LADLE_ARG_BOOL:
      return v->count ? PyBool_FromLong(v->u.i != 0) : Py_NewRef(Py_None);
    case LADLE_ARG_DTYPE:
      return v->count ? PyUnicode_FromString(ladle_dtype_name((ladle_dtype)v->u.i)) : Py_NewRef(Py_None);
    case LADLE_ARG_STRING:
      return v->count && v->u.s ? PyUnicode_FromString(v->u.s) : Py_NewRef(Py_None);
    case LADLE_ARG_INTS:
    case LADLE_ARG_FLOATS:
    case LADLE_ARG_STRINGS: {
      PyObject *list = PyList_New(v->count);
      if (!list) return NULL;
      for (int i = 0; i < v->count; i++) {
        PyObject *item = v->type == LADLE_ARG_INTS     ? PyLong_FromLongLong(v->u.ints[i])
                         : v->type == LADLE_ARG_FLOATS ? PyFloat_FromDouble(v->u.floats[i])
                                                       : PyUnicode_FromString(v->u.strings[i]);
        if (!item) {
          Py_DECREF(list);
          return NULL;
        }
        PyList_SET_ITEM(list, i, item);
      }
      return list;
    }
  }
  Py_RETURN_NONE;
}

/* A range bound: an int for integer arguments when it is one, else a float. */
static PyObject *bound_to_py(ladle_arg_type type, double x) {
  int integral = type == LADLE_ARG_INT || type == LADLE_ARG_INTS || type == LADLE_ARG_BOOL || type == LADLE_ARG_DTYPE;
  if (integral && isfinite(x) && floor(x) == x) return PyLong_FromDouble(x);
  return PyFloat_FromDouble(x);
}

static PyObject *strings_to_py(const char *const *strings) {
  if (!strings) Py_RETURN_NONE;
  PyObject *list = PyList_New(0);
  for (int i = 0; list && strings[i]; i++) {
    PyObject *s = PyUnicode_FromString(strings[i]);
    if (!s || PyList_Append(list, s) < 0) Py_CLEAR(list);
    Py_XDECREF(s);
  }
  return list;
}

static PyObject *arg_schema_to_dict(const ladle_arg_schema *a) {
  int has_default = a->default_value.count > 0;
  PyObject *def = has_default ? value_to_py(&a->default_value) : Py_NewRef(Py_None);
  PyObject *lo = a->has_range ? bound_to_py(a->type, a->min) : Py_NewRef(Py_None);
  PyObject *hi = a->has_range ? bound_to_py(a->type, a->max) : Py_NewRef(Py_None);
  PyObject *choices = strings_to_py(a->choices);
  PyObject *d = NULL;
  if (def && lo && hi && choices)
    d = Py_BuildValue("{s:s,s:s,s:i,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:s}", "name", a->name, "type",
                      ladle_arg_type_name(a->type), "type_id", (int)a->type, "required", a->required ? Py_True : Py_False,
                      "has_default", has_default ? Py_True : Py_False, "default", def, "per_sample",
                      a->per_sample ? Py_True : Py_False, "min", lo, "max", hi, "choices", choices, "no_effect",
                      a->no_effect ? Py_True : Py_False, "doc", a->doc ? a->doc : "");
  Py_XDECREF(def);
  Py_XDECREF(lo);
  Py_XDECREF(hi);
  Py_XDECREF(choices);
  return d;
}

static PyObject *arg_schemas_to_list(const ladle_arg_schema *args, int count) {
  PyObject *list = PyList_New(0);
  for (int a = 0; list && a < count; a++) {
    PyObject *ad = arg_schema_to_dict(&args[a]);
    if (!ad || PyList_Append(list, ad) < 0) Py_CLEAR(list);
    Py_XDECREF(ad);
  }
  return list;
}

static PyObject *op_schema_to_dict(const ladle_op_schema *s) {
  PyObject *devices = PyList_New(0), *args = arg_schemas_to_list(s->args, s->num_args), *flags = PyList_New(0);
  PyObject *d = NULL;
  if (!devices || !args || !flags) goto done;
  static const struct {
    unsigned bit;
    const char *name;
  } flag_bits[] = {{LADLE_OP_RANDOM, "random"}, {LADLE_OP_READER, "reader"}, {LADLE_OP_MOVES_DATA, "moves_data"},
                   {LADLE_OP_EXTERNAL, "external"}, {LADLE_OP_STATEFUL, "stateful"}};
  for (size_t k = 0; k < sizeof flag_bits / sizeof flag_bits[0]; k++) {
    if (!(s->flags & flag_bits[k].bit)) continue;
    PyObject *name = PyUnicode_FromString(flag_bits[k].name);
    if (!name || PyList_Append(flags, name) < 0) {
      Py_XDECREF(name);
      goto done;
    }
    Py_DECREF(name);
  }
  static const struct {
    unsigned bit;
    const char *name;
  } device_bits[] = {{LADLE_ON_CPU, "cpu"}, {LADLE_ON_GPU, "gpu"}, {LADLE_ON_MIXED, "mixed"}};
  for (size_t k = 0; k < sizeof device_bits / sizeof device_bits[0]; k++) {
    if (!(s->devices & device_bits[k].bit)) continue;
    PyObject *name = PyUnicode_FromString(device_bits[k].name);
    if (!name || PyList_Append(devices, name) < 0) {
      Py_XDECREF(name);
      goto done;
    }
    Py_DECREF(name);
  }
  d = Py_BuildValue("{s:s,s:s,s:i,s:i,s:i,s:O,s:O,s:O,s:i,s:z}", "name", s->name, "doc", s->doc ? s->doc : "",
                    "min_inputs", s->min_inputs, "max_inputs", s->max_inputs, "num_outputs", s->num_outputs,
                    "devices", devices, "flags", flags, "args", args, "outputs_per_extra_input",
                    s->outputs_per_extra_input, "output_if",
                    s->output_if_arg > 0 ? s->args[s->output_if_arg - 1].name : NULL);
done:
  Py_XDECREF(devices);
  Py_XDECREF(args);
  Py_XDECREF(flags);
  return d;
}

/* ------------------------------------------------------------------------ */
/* _Pipeline                                                                  */
/* ------------------------------------------------------------------------ */

/* Reads a sequence of core numbers into a PyMem array (*cpus NULL when the
 * object is None or empty). */
static int parse_cpus(PyObject *obj, int **cpus, int *count) {
  *cpus = NULL;
  *count = 0;
  if (obj == Py_None) return 0;
  PyObject *seq = PySequence_Fast(obj, "cpus must be a sequence of ints");
  if (!seq) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  int *out = PyMem_Calloc(n ? (size_t)n : 1, sizeof *out);
  if (!out) {
    Py_DECREF(seq);
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    long c = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
    if (c == -1 && PyErr_Occurred()) {
      Py_DECREF(seq);
      PyMem_Free(out);
      return -1;
    }
    out[i] = (int)c;
  }
  Py_DECREF(seq);
  if (n == 0) {
    PyMem_Free(out);
    return 0;
  }
  *cpus = out;
  *count = (int)n;
  return 0;
}

/* ------------------------------------------------------------------------ */
/* _ThreadPool: workers several pipelines can share                           */
/* ------------------------------------------------------------------------ */

typedef struct {
  PyObject_HEAD
  ladle_thread_pool *pool;
} ThreadPoolObject;

static int threadpool_init(ThreadPoolObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"num_threads", "cpus", NULL};
  int num_threads, ncpus;
  PyObject *cpus_obj = Py_None;
  int *cpus;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "i|O:_ThreadPool", kwlist, &num_threads, &cpus_obj)) return -1;
  if (self->pool) {
    raise_format(LADLE_ERROR_STATE, "_ThreadPool.__init__ called twice");
    return -1;
  }
  if (parse_cpus(cpus_obj, &cpus, &ncpus) < 0) return -1;
  ladle_status st;
  Py_BEGIN_ALLOW_THREADS
  st = ladle_thread_pool_create(num_threads, cpus, ncpus, &self->pool);
  Py_END_ALLOW_THREADS
  PyMem_Free(cpus);
  if (st != LADLE_OK) {
    raise_status(st);
    return -1;
  }
  return 0;
}

static void threadpool_dealloc(ThreadPoolObject *self) {
  ladle_thread_pool *pool = self->pool;
  self->pool = NULL;
  if (pool) {
    Py_BEGIN_ALLOW_THREADS
    ladle_thread_pool_destroy(pool); /* every pipeline using it holds a reference: none is left */
    Py_END_ALLOW_THREADS
  }
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *threadpool_get_num_threads(ThreadPoolObject *self, void *unused) {
  return PyLong_FromLong(self->pool ? ladle_thread_pool_num_threads(self->pool) : 0);
}

static PyGetSetDef threadpool_getset[] = {
    {"num_threads", (getter)threadpool_get_num_threads, NULL, "Worker threads.", NULL},
    {NULL},
};

static PyTypeObject ThreadPoolType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ladle._ladle._ThreadPool",
    .tp_basicsize = sizeof(ThreadPoolObject),
    .tp_dealloc = (destructor)threadpool_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "_ThreadPool(num_threads, cpus=None): a ladle_thread_pool that pipelines may share; it lives "
              "as long as any pipeline using it.",
    .tp_getset = threadpool_getset,
    .tp_init = (initproc)threadpool_init,
    .tp_new = PyType_GenericNew,
};

typedef struct {
  PyObject_HEAD
  ladle_pipeline *pipe;
  PyObject *pool; /* a shared _ThreadPool, kept alive while the pipeline is */
  /* Set while a call runs without the GIL: a ladle pipeline must not be used
   * from two threads at once, and must not be destroyed under a running call. */
  int busy;
} PipelineObject;

/* Fails unless the pipeline is open and idle. */
static int pipeline_ready(PipelineObject *self) {
  if (!self->pipe) {
    raise_format(LADLE_ERROR_STATE, "the pipeline is closed");
    return -1;
  }
  if (self->busy) {
    raise_format(LADLE_ERROR_STATE, "the pipeline is in use by another thread");
    return -1;
  }
  return 0;
}

static int pipeline_init(PipelineObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"batch_size", "num_threads", "device_id", "seed", "prefetch_queue_depth",
                           "max_pixels", "cpus", "pool", "skip_bad_samples", "max_skipped",
                           "max_skipped_fraction", NULL};
  int batch_size, num_threads = -1, device_id = -1, depth = -1, skip = 0;
  unsigned long long seed = 0;
  long long max_pixels = 0, max_skipped = -1;
  double max_skipped_fraction = 0;
  PyObject *cpus_obj = Py_None, *pool_obj = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "i|iiKiLOOpLd:_Pipeline", kwlist, &batch_size, &num_threads,
                                   &device_id, &seed, &depth, &max_pixels, &cpus_obj, &pool_obj, &skip,
                                   &max_skipped, &max_skipped_fraction))
    return -1;
  if (self->pipe) {
    raise_format(LADLE_ERROR_STATE, "_Pipeline.__init__ called twice");
    return -1;
  }
  if (pool_obj != Py_None && !PyObject_TypeCheck(pool_obj, &ThreadPoolType)) {
    PyErr_SetString(PyExc_TypeError, "_Pipeline: pool must be a _ThreadPool or None");
    return -1;
  }

  ladle_pipeline_params params;
  ladle_pipeline_params_init(&params);
  params.batch_size = batch_size;
  if (num_threads > 0) params.num_threads = num_threads;
  params.device_id = device_id;
  params.seed = seed;
  if (depth > 0) params.prefetch_queue_depth = depth;
  if (max_pixels > 0) params.max_pixels = max_pixels;
  if (pool_obj != Py_None) params.pool = ((ThreadPoolObject *)pool_obj)->pool;
  params.skip_bad_samples = skip;
  params.max_skipped = max_skipped;
  params.max_skipped_fraction = max_skipped_fraction;

  int *cpus = NULL;
  if (parse_cpus(cpus_obj, &cpus, &params.num_cpus) < 0) return -1;
  params.cpus = cpus;

  ladle_pipeline *pipe = NULL;
  ladle_status st;
  Py_BEGIN_ALLOW_THREADS
  st = ladle_pipeline_create(&params, &pipe);
  Py_END_ALLOW_THREADS
  PyMem_Free(cpus);
  if (st != LADLE_OK) {
    raise_status(st);
    return -1;
  }
  self->pipe = pipe;
  if (pool_obj != Py_None) {
    Py_INCREF(pool_obj);
    self->pool = pool_obj;
  }
  return 0;
}

static void pipeline_destroy(PipelineObject *self) {
  ladle_pipeline *pipe = self->pipe;
  self->pipe = NULL;
  if (pipe) {
    /* Stopping joins the executor and the workers, which may be mid-sample. */
    Py_BEGIN_ALLOW_THREADS
    ladle_pipeline_destroy(pipe);
    Py_END_ALLOW_THREADS
  }
  Py_CLEAR(self->pool); /* after the pipeline: the pool must outlive it */
}

static void pipeline_dealloc(PipelineObject *self) {
  pipeline_destroy(self);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *pipeline_close(PipelineObject *self, PyObject *unused) {
  if (self->busy) return raise_format(LADLE_ERROR_STATE, "the pipeline is in use by another thread");
  pipeline_destroy(self);
  run_deferred_deleters();
  Py_RETURN_NONE;
}

/* Finds argument `name` of `op`, or raises an error listing the valid names. */
/* The schema row of argument `name`: the operator's own or a common one.
 * NULL for a name neither has: the library then reports it (it is the only
 * judge of names), so the value only needs some type. */
static const ladle_arg_schema *find_arg(const ladle_op_schema *op, const char *name) {
  for (int a = 0; a < op->num_args; a++)
    if (strcmp(op->args[a].name, name) == 0) return &op->args[a];
  int count = 0;
  const ladle_arg_schema *common = ladle_op_common_args(&count);
  for (int a = 0; a < count; a++)
    if (strcmp(common[a].name, name) == 0) return &common[a];
  return NULL;
}

static PyObject *pipeline_add_op(PipelineObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"op_name", "device", "inputs", "args", "instance_name", NULL};
  const char *op_name, *device, *instance_name = NULL;
  PyObject *inputs_obj, *args_obj = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "ssO|Oz:add_op", kwlist, &op_name, &device, &inputs_obj, &args_obj,
                                   &instance_name))
    return NULL;
  if (pipeline_ready(self) < 0) return NULL;
  const ladle_op_schema *op = ladle_op_find(op_name);
  if (!op) return raise_format(LADLE_ERROR_INVALID_ARGUMENT, "unknown operator '%s'", op_name);

  PyObject *result = NULL, *inputs = NULL, *items = NULL;
  int *input_ids = NULL;
  ladle_arg *cargs = NULL;
  void **owned = NULL;
  Py_ssize_t num_args = 0;

  inputs = PySequence_Fast(inputs_obj, "add_op: inputs must be a sequence of node ids");
  if (!inputs) goto done;
  Py_ssize_t num_inputs = PySequence_Fast_GET_SIZE(inputs);
  input_ids = PyMem_Calloc(num_inputs ? (size_t)num_inputs : 1, sizeof *input_ids);
  if (!input_ids) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t i = 0; i < num_inputs; i++) {
    long id = PyLong_AsLong(PySequence_Fast_GET_ITEM(inputs, i));
    if (id == -1 && PyErr_Occurred()) goto done;
    input_ids[i] = (int)id;
  }

  if (args_obj != Py_None) {
    items = PySequence_Fast(args_obj, "add_op: args must be a sequence of (name, value) pairs");
    if (!items) goto done;
    num_args = PySequence_Fast_GET_SIZE(items);
  }
  cargs = PyMem_Calloc(num_args ? (size_t)num_args : 1, sizeof *cargs);
  owned = PyMem_Calloc(num_args ? (size_t)num_args : 1, sizeof *owned);
  if (!cargs || !owned) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t i = 0; i < num_args; i++) {
    PyObject *item = PySequence_Fast_GET_ITEM(items, i), *value;
    const char *name;
    if (!PyTuple_Check(item) || !PyArg_ParseTuple(item, "sO;add_op: each arg must be a (name, value) tuple", &name,
                                                  &value)) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "add_op: each arg must be a (name, value) tuple");
      goto done;
    }
    const ladle_arg_schema *as = find_arg(op, name);
    cargs[i].name = name;
    if (!as) { /* reported by ladle_pipeline_add_op */
      cargs[i].node = -1;
      cargs[i].value = (ladle_value){LADLE_ARG_INT, 1, {.i = 0}};
      continue;
    }
    cargs[i].node = -1;
    if (PyObject_TypeCheck(value, &NodeRefType)) {
      cargs[i].node = ((NodeRefObject *)value)->id;
      cargs[i].value.type = as->type;
    } else if (convert_value(op, as, value, &cargs[i].value, &owned[i]) < 0) {
      goto done;
    }
  }

  /* Adding checks arguments and never blocks: the GIL stays, which also
   * keeps the strings that cargs point into unchanged. */
  int first = -1;
  ladle_status st = ladle_pipeline_add_op(self->pipe, op_name, device, input_ids, (int)num_inputs, cargs,
                                          (int)num_args, instance_name, &first);
  if (st != LADLE_OK) {
    raise_status(st);
    goto done;
  }
  result = PyLong_FromLong(first);

done:
  for (Py_ssize_t i = 0; owned && i < num_args; i++) PyMem_Free(owned[i]);
  PyMem_Free(owned);
  PyMem_Free(cargs);
  PyMem_Free(input_ids);
  Py_XDECREF(items);
  Py_XDECREF(inputs);
  return result;
}

static PyObject *pipeline_set_outputs(PipelineObject *self, PyObject *arg) {
  if (pipeline_ready(self) < 0) return NULL;
  PyObject *seq = PySequence_Fast(arg, "set_outputs: expects a sequence of node ids");
  if (!seq) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  int *ids = PyMem_Calloc(n ? (size_t)n : 1, sizeof *ids);
  PyObject *result = NULL;
  if (!ids) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    long id = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
    if (id == -1 && PyErr_Occurred()) goto done;
    ids[i] = (int)id;
  }
  ladle_status st = ladle_pipeline_set_outputs(self->pipe, ids, (int)n);
  if (st != LADLE_OK) {
    raise_status(st);
    goto done;
  }
  result = Py_NewRef(Py_None);
done:
  PyMem_Free(ids);
  Py_DECREF(seq);
  return result;
}

static PyObject *pipeline_build(PipelineObject *self, PyObject *unused) {
  if (pipeline_ready(self) < 0) return NULL;
  ladle_status st;
  self->busy = 1;
  Py_BEGIN_ALLOW_THREADS
  st = ladle_pipeline_build(self->pipe);
  Py_END_ALLOW_THREADS
  self->busy = 0;
  if (st != LADLE_OK) return raise_status(st);
  Py_RETURN_NONE;
}

static PyObject *pipeline_run(PipelineObject *self, PyObject *unused) {
  if (pipeline_ready(self) < 0) return NULL;
  int n = ladle_pipeline_num_outputs(self->pipe);
  ladle_batch **outputs = PyMem_Calloc(n > 0 ? (size_t)n : 1, sizeof *outputs);
  if (!outputs) return PyErr_NoMemory();
  ladle_status st = LADLE_OK;
  self->busy = 1;
  /* Wait in slices so that Ctrl-C (and other signals) are handled within
   * 0.1 s; the iteration being prepared stays queued for the next run(). */
  int ready = n <= 0;
  while (!ready) {
    Py_BEGIN_ALLOW_THREADS
    ready = ladle_pipeline_wait_ready(self->pipe, 100);
    Py_END_ALLOW_THREADS
    if (!ready && PyErr_CheckSignals() < 0) {
      self->busy = 0;
      PyMem_Free(outputs);
      return NULL;
    }
  }
  Py_BEGIN_ALLOW_THREADS
  /* With no outputs declared, build reports why without run writing any. */
  st = n > 0 ? ladle_pipeline_run(self->pipe, outputs) : ladle_pipeline_build(self->pipe);
  Py_END_ALLOW_THREADS
  self->busy = 0;
  run_deferred_deleters();
  if (st != LADLE_OK) {
    PyMem_Free(outputs);
    return raise_status(st);
  }
  PyObject *tuple = PyTuple_New(n);
  for (int i = 0; i < n; i++) {
    PyObject *b = tuple ? batch_wrap(outputs[i]) : NULL;
    if (!b) {
      if (!tuple) ladle_batch_release(outputs[i]);
      Py_CLEAR(tuple);
      continue;
    }
    PyTuple_SET_ITEM(tuple, i, b);
  }
  PyMem_Free(outputs);
  return tuple;
}

static PyObject *pipeline_feed(PipelineObject *self, PyObject *args) {
  const char *name;
  PyObject *obj;
  if (!PyArg_ParseTuple(args, "sO!:feed", &name, &BatchType, &obj)) return NULL;
  if (!self->pipe) return raise_format(LADLE_ERROR_STATE, "the pipeline is closed");
  /* Not a long call (no busy flag): a thread blocked in run() may be waiting
   * for exactly this batch. */
  ladle_status st = ladle_pipeline_feed(self->pipe, name, ((BatchObject *)obj)->batch);
  if (st != LADLE_OK) return raise_status(st);
  Py_RETURN_NONE;
}

static PyObject *pipeline_reader_meta(PipelineObject *self, PyObject *arg) {
  if (pipeline_ready(self) < 0) return NULL;
  const char *name = PyUnicode_AsUTF8(arg);
  if (!name) return NULL;
  ladle_reader_meta meta;
  ladle_status st;
  self->busy = 1;
  Py_BEGIN_ALLOW_THREADS
  st = ladle_pipeline_reader_meta(self->pipe, name, &meta);
  Py_END_ALLOW_THREADS
  self->busy = 0;
  if (st != LADLE_OK) return raise_status(st);
  return Py_BuildValue("{s:L,s:L,s:i,s:i,s:O,s:O}", "epoch_size", (long long)meta.epoch_size, "epoch_size_padded",
                       (long long)meta.epoch_size_padded, "number_of_shards", meta.number_of_shards, "shard_id",
                       meta.shard_id, "pad_last_batch", meta.pad_last_batch ? Py_True : Py_False,
                       "stick_to_shard", meta.stick_to_shard ? Py_True : Py_False);
}

static PyObject *pipeline_get_position(PipelineObject *self, PyObject *unused) {
  if (pipeline_ready(self) < 0) return NULL;
  ladle_pipeline_position pos;
  ladle_status st = ladle_pipeline_get_position(self->pipe, &pos);
  if (st != LADLE_OK) return raise_status(st);
  return PyLong_FromLongLong(pos.iteration);
}

static PyObject *pipeline_set_position(PipelineObject *self, PyObject *arg) {
  if (pipeline_ready(self) < 0) return NULL;
  ladle_pipeline_position pos;
  pos.iteration = PyLong_AsLongLong(arg);
  if (pos.iteration == -1 && PyErr_Occurred()) return NULL;
  ladle_status st;
  self->busy = 1;
  Py_BEGIN_ALLOW_THREADS
  st = ladle_pipeline_set_position(self->pipe, &pos);
  Py_END_ALLOW_THREADS
  self->busy = 0;
  if (st != LADLE_OK) return raise_status(st);
  Py_RETURN_NONE;
}

static PyObject *pipeline_stats(PipelineObject *self, PyObject *unused) {
  if (pipeline_ready(self) < 0) return NULL;
  ladle_pipeline_stats ps;
  ladle_status st = ladle_pipeline_get_stats(self->pipe, &ps);
  if (st != LADLE_OK) return raise_status(st);
  int n = ladle_pipeline_num_ops(self->pipe);
  PyObject *ops = PyList_New(n);
  if (!ops) return NULL;
  for (int i = 0; i < n; i++) {
    ladle_op_stats os;
    st = ladle_pipeline_get_op_stats(self->pipe, i, &os);
    if (st != LADLE_OK) {
      Py_DECREF(ops);
      return raise_status(st);
    }
    PyObject *d = Py_BuildValue("{s:s,s:z,s:s,s:d,s:O}", "op", os.op_name, "name", os.instance_name, "device",
                                os.device, "seconds", os.seconds, "fused", os.fused ? Py_True : Py_False);
    if (!d) {
      Py_DECREF(ops);
      return NULL;
    }
    PyList_SET_ITEM(ops, i, d);
  }
  return Py_BuildValue("{s:L,s:d,s:d,s:L,s:N}", "iterations", (long long)ps.iterations, "prepare_seconds",
                       ps.prepare_seconds, "wait_seconds", ps.wait_seconds, "skipped_samples",
                       (long long)ps.skipped, "operators", ops);
}

/* The skipped samples from `start` on, as dicts. */
static PyObject *pipeline_skipped(PipelineObject *self, PyObject *args) {
  long long start = 0;
  if (!PyArg_ParseTuple(args, "|L:skipped", &start)) return NULL;
  if (pipeline_ready(self) < 0) return NULL;
  int64_t n = ladle_pipeline_num_skipped(self->pipe);
  PyObject *list = PyList_New(0);
  for (int64_t i = start < 0 ? 0 : start; list && i < n; i++) {
    ladle_skipped_sample s;
    ladle_status st = ladle_pipeline_get_skipped(self->pipe, i, &s);
    if (st != LADLE_OK) {
      Py_DECREF(list);
      return raise_status(st);
    }
    PyObject *d = Py_BuildValue("{s:L,s:L,s:L,s:N,s:N}", "record", (long long)s.record, "epoch", (long long)s.epoch,
                                "iteration", (long long)s.iteration, "name",
                                PyUnicode_DecodeFSDefault(s.name), "error",
                                PyUnicode_DecodeUTF8(s.error, (Py_ssize_t)strlen(s.error), "backslashreplace"));
    if (!d || PyList_Append(list, d) < 0) Py_CLEAR(list);
    Py_XDECREF(d);
  }
  return list;
}

static PyObject *pipeline_cuda_stream(PipelineObject *self, PyObject *unused) {
  if (!self->pipe) return raise_format(LADLE_ERROR_STATE, "the pipeline is closed");
  return PyLong_FromVoidPtr(ladle_pipeline_cuda_stream(self->pipe));
}

static PyObject *pipeline_get_num_outputs(PipelineObject *self, void *closure) {
  if (pipeline_ready(self) < 0) return NULL;
  return PyLong_FromLong(ladle_pipeline_num_outputs(self->pipe));
}

static PyObject *pipeline_get_closed(PipelineObject *self, void *closure) { return PyBool_FromLong(!self->pipe); }

static PyMethodDef pipeline_methods[] = {
    {"add_op", (PyCFunction)(void (*)(void))pipeline_add_op, METH_VARARGS | METH_KEYWORDS,
     "add_op(op_name, device, inputs, args=None, instance_name=None) -> int: adds an operator; args is a list of "
     "(name, value) with value a plain value or a NodeRef; returns the node id of its first output."},
    {"set_outputs", (PyCFunction)pipeline_set_outputs, METH_O, "set_outputs(ids): the nodes run() returns."},
    {"build", (PyCFunction)pipeline_build, METH_NOARGS, "build(): checks the graph and starts the executor."},
    {"run", (PyCFunction)pipeline_run, METH_NOARGS, "run() -> tuple of _Batch, one per output."},
    {"reader_meta", (PyCFunction)pipeline_reader_meta, METH_O, "reader_meta(name) -> dict."},
    {"feed", (PyCFunction)pipeline_feed, METH_VARARGS,
     "feed(source_name, batch): queues a _Batch for the external_source of that name (one iteration each)."},
    {"get_position", (PyCFunction)pipeline_get_position, METH_NOARGS,
     "get_position() -> int: iterations handed out so far."},
    {"set_position", (PyCFunction)pipeline_set_position, METH_O,
     "set_position(iteration): the next run() returns that iteration."},
    {"close", (PyCFunction)pipeline_close, METH_NOARGS, "close(): stops and frees the pipeline. Idempotent."},
    {"cuda_stream", (PyCFunction)pipeline_cuda_stream, METH_NOARGS,
     "cuda_stream() -> int: the cudaStream_t of the pipeline's GPU work, 0 without one (built pipelines)."},
    {"skipped", (PyCFunction)pipeline_skipped, METH_VARARGS,
     "skipped(start=0) -> list of dict: the bad samples skipped, from `start` on (record, epoch, iteration, name, "
     "error)."},
    {"stats", (PyCFunction)pipeline_stats, METH_NOARGS,
     "stats() -> dict: iterations, prepare_seconds, wait_seconds and per-operator seconds so far."},
    {NULL},
};

static PyGetSetDef pipeline_getset[] = {
    {"num_outputs", (getter)pipeline_get_num_outputs, NULL, "Outputs declared.", NULL},
    {"closed", (getter)pipeline_get_closed, NULL, "True after close().", NULL},
    {NULL},
};

static PyTypeObject PipelineType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ladle._ladle._Pipeline",
    .tp_basicsize = sizeof(PipelineObject),
    .tp_dealloc = (destructor)pipeline_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "_Pipeline(batch_size, num_threads=-1, device_id=-1, seed=0, prefetch_queue_depth=-1, "
              "max_pixels=0, cpus=None, pool=None): a ladle_pipeline handle. Values <= 0 take ladle's defaults; "
              "pool: a _ThreadPool to share instead of num_threads workers of its own.",
    .tp_methods = pipeline_methods,
    .tp_getset = pipeline_getset,
    .tp_init = (initproc)pipeline_init,
    .tp_new = PyType_GenericNew,
};

/* ------------------------------------------------------------------------ */
/* Module functions                                                           */
/* ------------------------------------------------------------------------ */

static PyObject *mod_version(PyObject *m, PyObject *unused) { return PyUnicode_FromString(ladle_version_string()); }

static PyObject *mod_version_number(PyObject *m, PyObject *unused) {
  return PyLong_FromUnsignedLong(ladle_version_number());
}

static PyObject *mod_build_info(PyObject *m, PyObject *unused) { return PyUnicode_FromString(ladle_build_info()); }

static PyObject *mod_op_common_args(PyObject *m, PyObject *unused) {
  int count = 0;
  const ladle_arg_schema *args = ladle_op_common_args(&count);
  return arg_schemas_to_list(args, count);
}

static PyObject *mod_op_aliases(PyObject *m, PyObject *unused) {
  PyObject *d = PyDict_New();
  const char *alias, *target;
  for (int i = 0; d && (alias = ladle_op_alias_get(i, &target)); i++) {
    PyObject *t = PyUnicode_FromString(target);
    if (!t || PyDict_SetItemString(d, alias, t) < 0) Py_CLEAR(d);
    Py_XDECREF(t);
  }
  return d;
}

static PyObject *mod_op_schemas(PyObject *m, PyObject *unused) {
  int n = ladle_op_count();
  PyObject *list = PyList_New(0);
  for (int i = 0; i < n && list; i++) {
    const ladle_op_schema *s = ladle_op_get(i);
    if (!s) continue;
    PyObject *d = op_schema_to_dict(s);
    if (!d || PyList_Append(list, d) < 0) Py_CLEAR(list);
    Py_XDECREF(d);
  }
  return list;
}

/* The ladle dtype of a buffer's struct format, or -1. */
static int dtype_of_format(const char *format, Py_ssize_t itemsize) {
  static const ladle_dtype sint[] = {LADLE_INT8, LADLE_INT16, LADLE_INT32, LADLE_INT64};
  static const ladle_dtype uint[] = {LADLE_UINT8, LADLE_UINT16, LADLE_UINT32, LADLE_UINT64};
  if (!format) return LADLE_UINT8; /* plain bytes */
  if (*format == '@' || *format == '=') format++;
#if PY_LITTLE_ENDIAN
  if (*format == '<') format++;
#else
  if (*format == '>' || *format == '!') format++;
#endif
  if (strlen(format) != 1) return -1;
  int log = itemsize == 1 ? 0 : itemsize == 2 ? 1 : itemsize == 4 ? 2 : itemsize == 8 ? 3 : -1;
  if (log < 0) return -1;
  switch (*format) {
    case '?': return itemsize == 1 ? LADLE_BOOL : -1;
    case 'e': return itemsize == 2 ? LADLE_FLOAT16 : -1;
    case 'f': return itemsize == 4 ? LADLE_FLOAT32 : -1;
    case 'd': return itemsize == 8 ? LADLE_FLOAT64 : -1;
    case 'b': case 'h': case 'i': case 'l': case 'q': case 'n': return sint[log];
    case 'B': case 'H': case 'I': case 'L': case 'Q': case 'N': return uint[log];
    default: return -1;
  }
}

static PyObject *mod_batch_from_buffer(PyObject *m, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"buffer", "shapes", "layout", NULL};
  PyObject *obj, *shapes_obj = Py_None;
  const char *layout = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|Oz:batch_from_buffer", kwlist, &obj, &shapes_obj, &layout))
    return NULL;
  Py_buffer view;
  if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
  PyObject *result = NULL, *seq = NULL;
  int64_t *shapes = NULL;
  int num_samples = 0, ndim = 0;

  int dtype = dtype_of_format(view.format, view.itemsize);
  if (dtype < 0) {
    raise_format(LADLE_ERROR_UNSUPPORTED,
                 "batch_from_buffer: element format '%s' is not a ladle dtype (a numeric or bool "
                 "array is needed: int8..int64, uint8..uint64, float16, float32, float64 or bool)",
                 view.format ? view.format : "B");
    goto done;
  }
  if (shapes_obj == Py_None) {
    /* [N, ...]: N samples of shape[1:]. */
    if (view.ndim < 1 || view.ndim - 1 > LADLE_MAX_NDIM) {
      raise_format(LADLE_ERROR_INVALID_ARGUMENT,
                   "batch_from_buffer: expects an array of shape [num_samples, ...] with 1 to %d dimensions, got %d",
                   LADLE_MAX_NDIM + 1, view.ndim);
      goto done;
    }
    num_samples = (int)view.shape[0];
    ndim = view.ndim - 1;
    shapes = PyMem_Calloc((size_t)(num_samples * ndim) + 1, sizeof *shapes);
    if (!shapes) {
      PyErr_NoMemory();
      goto done;
    }
    for (int i = 0; i < num_samples; i++)
      for (int d = 0; d < ndim; d++) shapes[(size_t)i * ndim + d] = view.shape[d + 1];
  } else {
    /* Ragged: the samples back to back in the buffer, their shapes given. */
    seq = PySequence_Fast(shapes_obj, "batch_from_buffer: shapes must be a sequence of shape tuples");
    if (!seq) goto done;
    num_samples = (int)PySequence_Fast_GET_SIZE(seq);
    ndim = -1;
    int64_t total = 0;
    for (int i = 0; i < num_samples; i++) {
      PyObject *shape = PySequence_Fast(PySequence_Fast_GET_ITEM(seq, i), "batch_from_buffer: a shape must be a sequence");
      if (!shape) goto done;
      int nd = (int)PySequence_Fast_GET_SIZE(shape);
      if (ndim < 0) {
        ndim = nd;
        if (ndim > LADLE_MAX_NDIM) {
          Py_DECREF(shape);
          raise_format(LADLE_ERROR_INVALID_ARGUMENT, "batch_from_buffer: samples have at most %d dimensions",
                       LADLE_MAX_NDIM);
          goto done;
        }
        shapes = PyMem_Calloc((size_t)(num_samples * ndim) + 1, sizeof *shapes);
        if (!shapes) {
          Py_DECREF(shape);
          PyErr_NoMemory();
          goto done;
        }
      }
      if (nd != ndim) {
        Py_DECREF(shape);
        raise_format(LADLE_ERROR_INVALID_ARGUMENT,
                     "batch_from_buffer: all samples need the same number of dimensions (sample 0 has %d, "
                     "sample %d has %d)",
                     ndim, i, nd);
        goto done;
      }
      int64_t elems = 1;
      for (int d = 0; d < ndim; d++) {
        long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(shape, d));
        if (v == -1 && PyErr_Occurred()) {
          Py_DECREF(shape);
          goto done;
        }
        if (v < 0) {
          Py_DECREF(shape);
          raise_format(LADLE_ERROR_INVALID_ARGUMENT, "batch_from_buffer: negative extent in the shape of sample %d", i);
          goto done;
        }
        shapes[(size_t)i * ndim + d] = v;
        elems *= v;
      }
      Py_DECREF(shape);
      total += elems;
    }
    if (ndim < 0) ndim = 0;
    if (total * view.itemsize != view.len) {
      raise_format(LADLE_ERROR_INVALID_ARGUMENT,
                   "batch_from_buffer: the shapes hold %lld elements but the buffer holds %lld", (long long)total,
                   (long long)(view.len / view.itemsize));
      goto done;
    }
  }

  ladle_batch *b = NULL;
  ladle_status st;
  Py_BEGIN_ALLOW_THREADS
  st = ladle_batch_create_cpu((ladle_dtype)dtype, num_samples, ndim, shapes, layout, view.buf, &b);
  Py_END_ALLOW_THREADS
  if (st != LADLE_OK) {
    raise_status(st);
    goto done;
  }
  result = batch_wrap(b);
done:
  PyMem_Free(shapes);
  Py_XDECREF(seq);
  PyBuffer_Release(&view);
  return result;
}

/* --- DLPack import ---------------------------------------------------------
 * A fed tensor's memory stays its producer's: the batch wraps it and, when
 * the last reference goes (often on a pipeline's thread, without the GIL),
 * its DLPack deleter is queued here and called later by a thread that holds
 * the GIL (a producer's deleter may need it: NumPy's takes it, which would
 * deadlock against a thread that holds it while joining a pipeline). */
static pthread_mutex_t dead_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct dead_node {
  DLManagedTensor *tensor;
  struct dead_node *next;
} dead_node;
static dead_node *dead_list;
static atomic_int dead_pending; /* dead_list is not empty: lets the common case skip the lock */

static void defer_deleter(void *ctx) {
  dead_node *n = malloc(sizeof *n);
  DLManagedTensor *t = ctx;
  if (!n) { /* no memory for the queue: leaking the tensor beats calling into Python here */
    return;
  }
  n->tensor = t;
  pthread_mutex_lock(&dead_lock);
  n->next = dead_list;
  dead_list = n;
  atomic_store(&dead_pending, 1);
  pthread_mutex_unlock(&dead_lock);
}

/* Calls the queued deleters; the caller holds the GIL. */
static void run_deferred_deleters(void) {
  if (!atomic_load(&dead_pending)) return; /* every batch_dealloc calls this */
  pthread_mutex_lock(&dead_lock);
  dead_node *n = dead_list;
  dead_list = NULL;
  atomic_store(&dead_pending, 0);
  pthread_mutex_unlock(&dead_lock);
  while (n) {
    dead_node *next = n->next;
    if (n->tensor->deleter) n->tensor->deleter(n->tensor);
    free(n);
    n = next;
  }
}

static int dtype_from_dl(DLDataType t, ladle_dtype *out) {
  if (t.lanes != 1) return -1;
  for (int d = 0; d < LADLE_DTYPE_COUNT; d++) {
    DLDataType c = dl_dtype_of((ladle_dtype)d, 0);
    if (c.code == t.code && c.bits == t.bits) {
      *out = (ladle_dtype)d;
      return 0;
    }
  }
  return -1;
}

static PyObject *mod_batch_from_dlpack(PyObject *m, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"tensor", "stream", "layout", "as_bool", NULL};
  PyObject *obj, *stream = Py_None, *capsule = NULL, *result = NULL;
  const char *layout = NULL;
  int as_bool = 0; /* a uint8 tensor of 0/1 that is a bool tensor (PyTorch < 2.0 exports bool so) */
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|Ozp:batch_from_dlpack", kwlist, &obj, &stream, &layout, &as_bool))
    return NULL;
  run_deferred_deleters();
  if (stream == Py_None) {
    capsule = PyObject_CallMethod(obj, "__dlpack__", NULL);
  } else {
    PyObject *no_args = PyTuple_New(0), *kwargs = Py_BuildValue("{s:O}", "stream", stream);
    PyObject *method = PyObject_GetAttrString(obj, "__dlpack__");
    if (no_args && kwargs && method) capsule = PyObject_Call(method, no_args, kwargs);
    Py_XDECREF(no_args);
    Py_XDECREF(kwargs);
    Py_XDECREF(method);
  }
  if (!capsule) return NULL;
  DLManagedTensor *mt = PyCapsule_GetPointer(capsule, "dltensor");
  if (!mt) goto done;
  const DLTensor *t = &mt->dl_tensor;
  ladle_dtype dtype;
  if (dtype_from_dl(t->dtype, &dtype) < 0) {
    raise_format(LADLE_ERROR_INVALID_ARGUMENT,
                 "batch_from_dlpack: element type (code %d, %d bits, %d lanes) is not a ladle dtype (a numeric "
                 "or bool tensor is needed: int8..int64, uint8..uint64, float16, float32, float64 or bool)",
                 (int)t->dtype.code, (int)t->dtype.bits, (int)t->dtype.lanes);
    goto done;
  }
  if (as_bool && dtype == LADLE_UINT8) dtype = LADLE_BOOL;
  if (t->ndim < 1 || t->ndim > LADLE_MAX_NDIM + 1) {
    raise_format(LADLE_ERROR_INVALID_ARGUMENT,
                 "batch_from_dlpack: expects a tensor [num_samples, ...] of 1 to %d dimensions, got %d",
                 LADLE_MAX_NDIM + 1, (int)t->ndim);
    goto done;
  }
  if (t->strides) { /* row-major and compact, or it cannot be a batch without a copy */
    int64_t expect = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
      if (t->shape[d] != 1 && t->strides[d] != expect) {
        raise_format(LADLE_ERROR_INVALID_ARGUMENT,
                     "batch_from_dlpack: the tensor is not contiguous (make it so first, e.g. .contiguous())");
        goto done;
      }
      expect *= t->shape[d];
    }
  }
  ladle_device device;
  if (t->device.device_type == kDLCPU || t->device.device_type == kDLCUDAHost) {
    device = LADLE_DEVICE_CPU;
  } else if (t->device.device_type == kDLCUDA) {
    device = LADLE_DEVICE_CUDA;
  } else {
    raise_format(LADLE_ERROR_UNSUPPORTED, "batch_from_dlpack: memory of DLPack device type %d is not supported",
                 (int)t->device.device_type);
    goto done;
  }
  if (t->shape[0] > INT32_MAX) {
    raise_format(LADLE_ERROR_INVALID_ARGUMENT, "batch_from_dlpack: too many samples (%lld)", (long long)t->shape[0]);
    goto done;
  }
  /* The batch takes the tensor over: the capsule must no longer delete it. */
  if (PyCapsule_SetName(capsule, "used_dltensor") < 0) goto done;
  ladle_batch *b = NULL;
  ladle_status st = ladle_batch_wrap(dtype, (int)t->shape[0], t->ndim - 1, t->shape + 1, layout, device,
                                     t->device.device_id, (uint8_t *)t->data + t->byte_offset, defer_deleter, mt,
                                     &b);
  if (st != LADLE_OK) {
    PyCapsule_SetName(capsule, "dltensor"); /* the capsule deletes it after all */
    raise_status(st);
    goto done;
  }
  result = batch_wrap(b);
done:
  Py_DECREF(capsule);
  return result;
}

static PyMethodDef module_methods[] = {
    {"version", mod_version, METH_NOARGS, "version() -> str: the loaded library's version."},
    {"version_number", mod_version_number, METH_NOARGS, "version_number() -> int: MAJOR*10000+MINOR*100+PATCH."},
    {"build_info", mod_build_info, METH_NOARGS, "build_info() -> str: the build facts as JSON text."},
    {"op_schemas", mod_op_schemas, METH_NOARGS, "op_schemas() -> list of dict: every registered operator."},
    {"op_common_args", mod_op_common_args, METH_NOARGS,
     "op_common_args() -> list of dict: the arguments every operator takes (seed and DALI's hints)."},
    {"op_aliases", mod_op_aliases, METH_NOARGS, "op_aliases() -> dict: DALI's deprecated operator names -> names."},
    {"batch_from_buffer", (PyCFunction)(void (*)(void))mod_batch_from_buffer, METH_VARARGS | METH_KEYWORDS,
     "batch_from_buffer(buffer, shapes=None, layout=None) -> _Batch: copies a C-contiguous buffer into a new "
     "CPU batch. Without shapes the buffer is [N, ...]; with shapes (one tuple per sample) it holds the "
     "samples back to back."},
    {"batch_from_dlpack", (PyCFunction)(void (*)(void))mod_batch_from_dlpack, METH_VARARGS | METH_KEYWORDS,
     "batch_from_dlpack(tensor, stream=None, layout=None) -> _Batch: wraps a contiguous [N, ...] tensor "
     "(anything with __dlpack__: NumPy, PyTorch on the CPU or a CUDA device) without a copy; `stream` is "
     "passed to __dlpack__ so that the producer orders its writes before that CUDA stream."},
    {NULL},
};

static struct PyModuleDef ladle_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ladle._ladle",
    .m_doc = "The C core of ladle. Use the `ladle` package instead of this module.",
    .m_size = -1,
    .m_methods = module_methods,
};

static int add_exceptions(PyObject *m) {
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

PyMODINIT_FUNC PyInit__ladle(void) {
  if (PyType_Ready(&BatchType) < 0 || PyType_Ready(&SampleType) < 0 || PyType_Ready(&NodeRefType) < 0 ||
      PyType_Ready(&PipelineType) < 0 || PyType_Ready(&ThreadPoolType) < 0)
    return NULL;
  PyObject *m = PyModule_Create(&ladle_module);
  if (!m) return NULL;
  if (add_exceptions(m) < 0 || PyModule_AddObjectRef(m, "_Batch", (PyObject *)&BatchType) < 0 ||
      PyModule_AddObjectRef(m, "_Sample", (PyObject *)&SampleType) < 0 ||
      PyModule_AddObjectRef(m, "NodeRef", (PyObject *)&NodeRefType) < 0 ||
      PyModule_AddObjectRef(m, "_Pipeline", (PyObject *)&PipelineType) < 0 ||
      PyModule_AddObjectRef(m, "_ThreadPool", (PyObject *)&ThreadPoolType) < 0 ||
      PyModule_AddIntConstant(m, "MAX_NDIM", LADLE_MAX_NDIM) < 0 ||
      PyModule_AddIntConstant(m, "DLPACK_MAJOR_VERSION", DLPACK_MAJOR_VERSION) < 0 ||
      PyModule_AddIntConstant(m, "DLPACK_MINOR_VERSION", DLPACK_MINOR_VERSION) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}

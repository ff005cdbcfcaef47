/* dlpack.c: batches leave through DLPack (__dlpack__, __dlpack_device__)
 * without a copy, and tensors of other libraries come in the same way
 * (batch_from_dlpack), their deleters deferred to a thread holding the GIL. */
#include "ext.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

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

/* Exports sample `sample` of `b` (for -1 the whole batch as one [N, ...]
 * tensor, for LADLE__PY_ROWS the samples concatenated along the first axis)
 * following the __dlpack__ keywords. */
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
  if (sample == -1 && n > 1 && !ladle_batch_is_dense(b)) {
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
      if (st != LADLE_OK) return ladle__py_raise_status(st);
    }
  }

  int ndim = ladle_batch_ndim(b);
  export_ctx *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return PyErr_NoMemory();
  int out_ndim = sample == -1 ? ndim + 1 : ndim;
  int64_t *shape = ctx->shape;
  if (sample == -1) {
    shape[0] = n;
    if (n > 0) memcpy(shape + 1, ladle_batch_shape(b, 0), sizeof(int64_t) * (size_t)ndim);
  } else if (sample == LADLE__PY_ROWS) {
    if (!ladle__py_rows_shape(b, shape)) {
      free(ctx);
      PyErr_SetString(PyExc_BufferError, "the samples do not lie back to back with one shape past the first axis");
      return NULL;
    }
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
    int copies = sample == -1 ? n : 1;
    const int64_t *sample_shape = sample == -1 ? shape + 1 : shape;
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
      return ladle__py_raise_status(st);
    }
    b = c; /* the context owns the new batch's only reference */
    sample = sample == -1 ? -1 : 0;
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

PyObject *ladle__py_dlpack(ladle_batch *b, int sample, PyObject *args, PyObject *kw, int compat) {
  static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
  PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|$OOOO:__dlpack__", kwlist, &stream, &max_version, &dl_device,
                                   &copy))
    return NULL;
  return export_dlpack(b, sample, stream, max_version, dl_device, copy, compat);
}

PyObject *ladle__py_dlpack_device(const ladle_batch *b) {
  DLDevice d = dl_device_of(b);
  return Py_BuildValue("(ii)", (int)d.device_type, (int)d.device_id);
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
void ladle__py_run_deferred_deleters(void) {
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

PyObject *ladle__py_batch_from_dlpack(PyObject *m, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"tensor", "stream", "layout", "as_bool", "shapes", "ready_stream", NULL};
  PyObject *obj, *stream = Py_None, *capsule = NULL, *result = NULL, *shapes_obj = Py_None, *ready = Py_None;
  const char *layout = NULL;
  int as_bool = 0; /* a uint8 tensor of 0/1 that is a bool tensor (PyTorch < 2.0 exports bool so) */
  int64_t *shapes = NULL; /* with `shapes`: one shape per sample, the samples back to back in the tensor */
  int num_shapes = 0, shapes_ndim = 0;
  int64_t want = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OzpOO:batch_from_dlpack", kwlist, &obj, &stream, &layout, &as_bool,
                                   &shapes_obj, &ready))
    return NULL;
  if (shapes_obj != Py_None &&
      ladle__py_read_shapes(shapes_obj, "batch_from_dlpack", &shapes, &num_shapes, &shapes_ndim, &want) < 0)
    return NULL;
  ladle__py_run_deferred_deleters();
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
  if (!capsule) {
    PyMem_Free(shapes);
    return NULL;
  }
  DLManagedTensor *mt = PyCapsule_GetPointer(capsule, "dltensor");
  if (!mt) goto done;
  const DLTensor *t = &mt->dl_tensor;
  ladle_dtype dtype;
  if (dtype_from_dl(t->dtype, &dtype) < 0) {
    ladle__py_raise_format(LADLE_ERROR_INVALID_ARGUMENT,
                 "batch_from_dlpack: element type (code %d, %d bits, %d lanes) is not a ladle dtype (a numeric "
                 "or bool tensor is needed: int8..int64, uint8..uint64, float16, float32, float64 or bool)",
                 (int)t->dtype.code, (int)t->dtype.bits, (int)t->dtype.lanes);
    goto done;
  }
  if (as_bool && dtype == LADLE_UINT8) dtype = LADLE_BOOL;
  if (t->ndim < 1 || (!shapes && t->ndim > LADLE_MAX_NDIM + 1)) {
    ladle__py_raise_format(LADLE_ERROR_INVALID_ARGUMENT,
                 "batch_from_dlpack: expects a tensor [num_samples, ...] of 1 to %d dimensions, got %d",
                 LADLE_MAX_NDIM + 1, (int)t->ndim);
    goto done;
  }
  int64_t elements = 1;
  for (int d = 0; d < t->ndim; d++) elements *= t->shape[d];
  /* Row-major and compact, or it cannot be a batch without a copy. An empty
   * tensor's strides mean nothing (NumPy 2.4 exports them as it likes). */
  if (t->strides && elements > 0) {
    int64_t expect = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
      if (t->shape[d] != 1 && t->strides[d] != expect) {
        ladle__py_raise_format(LADLE_ERROR_INVALID_ARGUMENT,
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
    ladle__py_raise_format(LADLE_ERROR_UNSUPPORTED, "batch_from_dlpack: memory of DLPack device type %d is not supported",
                 (int)t->device.device_type);
    goto done;
  }
  if (t->shape[0] > INT32_MAX) {
    ladle__py_raise_format(LADLE_ERROR_INVALID_ARGUMENT, "batch_from_dlpack: too many samples (%lld)", (long long)t->shape[0]);
    goto done;
  }
  if (shapes) { /* the samples' elements must be the tensor's */
    int64_t have = 1;
    for (int d = 0; d < t->ndim; d++) have *= t->shape[d];
    if (have != want) {
      ladle__py_raise_format(LADLE_ERROR_INVALID_ARGUMENT,
                             "batch_from_dlpack: the shapes hold %lld elements, the tensor %lld", (long long)want,
                             (long long)have);
      goto done;
    }
  }
  void *ready_stream = NULL;
  if (ready != Py_None) {
    ready_stream = PyLong_AsVoidPtr(ready);
    if (PyErr_Occurred()) goto done;
  }
  /* The batch takes the tensor over: the capsule must no longer delete it. */
  if (PyCapsule_SetName(capsule, "used_dltensor") < 0) goto done;
  ladle_batch *b = NULL;
  uint8_t *data = (uint8_t *)t->data + t->byte_offset;
  ladle_status st = shapes ? ladle_batch_wrap_samples(dtype, num_shapes, shapes_ndim, shapes, layout, device,
                                                      t->device.device_id, data, defer_deleter, mt, &b)
                           : ladle_batch_wrap(dtype, (int)t->shape[0], t->ndim - 1, t->shape + 1, layout, device,
                                              t->device.device_id, data, defer_deleter, mt, &b);
  if (st != LADLE_OK) {
    PyCapsule_SetName(capsule, "dltensor"); /* the capsule deletes it after all */
    ladle__py_raise_status(st);
    goto done;
  }
  if (ready != Py_None && (st = ladle_batch_record_ready(b, ready_stream)) != LADLE_OK) {
    ladle_batch_release(b); /* its release hands the tensor back to the producer's deleter */
    ladle__py_raise_status(st);
    goto done;
  }
  result = ladle__py_batch_wrap(b);
done:
  PyMem_Free(shapes);
  Py_DECREF(capsule);
  return result;
}

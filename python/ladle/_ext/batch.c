/* batch.c: _Batch and _Sample, the Python faces of a ladle_batch (shapes,
 * dtype, layout, DLPack export through dlpack.c), and batch_from_buffer. */
#include "ext.h"

#include <string.h>

static const char *device_name(ladle_device device) {
  return device == LADLE_DEVICE_CUDA ? "cuda" : "cpu";
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

typedef struct {
  PyObject_HEAD
  ladle_batch *batch; /* one reference */
  int index;
} SampleObject;

static PyTypeObject SampleType;

PyObject *ladle__py_batch_wrap(ladle_batch *b) {
  BatchObject *self = PyObject_New(BatchObject, &ladle__py_batch_type);
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
  ladle__py_run_deferred_deleters(); /* a fed tensor's, if that was its last reference */
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

int ladle__py_rows_shape(const ladle_batch *b, int64_t *shape) {
  int n = ladle_batch_num_samples(b), ndim = ladle_batch_ndim(b);
  if (n < 1 || ndim < 1) return 0;
  const int64_t *first = ladle_batch_shape(b, 0);
  size_t row_bytes = ladle_dtype_size(ladle_batch_dtype(b));
  for (int d = 1; d < ndim; d++) row_bytes *= (size_t)first[d];
  const char *next = ladle_batch_data(b, 0);
  int64_t rows = 0;
  for (int i = 0; i < n; i++) {
    const int64_t *s = ladle_batch_shape(b, i);
    if ((const char *)ladle_batch_data(b, i) != next ||
        memcmp(s + 1, first + 1, sizeof(int64_t) * (size_t)(ndim - 1)) != 0)
      return 0;
    next += row_bytes * (size_t)s[0];
    rows += s[0];
  }
  shape[0] = rows;
  memcpy(shape + 1, first + 1, sizeof(int64_t) * (size_t)(ndim - 1));
  return 1;
}

static PyObject *batch_rows(BatchObject *self, PyObject *unused) {
  int64_t shape[LADLE_MAX_NDIM];
  if (!ladle__py_rows_shape(self->batch, shape)) Py_RETURN_NONE;
  SampleObject *s = PyObject_New(SampleObject, &SampleType);
  if (!s) return NULL;
  ladle_batch_retain(self->batch);
  s->batch = self->batch;
  s->index = LADLE__PY_ROWS;
  return (PyObject *)s;
}

static PyObject *batch_dlpack(BatchObject *self, PyObject *args, PyObject *kw) {
  return ladle__py_dlpack(self->batch, -1, args, kw, 0);
}

static PyObject *batch_dlpack_compat(BatchObject *self, PyObject *args, PyObject *kw) {
  return ladle__py_dlpack(self->batch, -1, args, kw, 1);
}

static PyObject *batch_dlpack_device(BatchObject *self, PyObject *unused) {
  return ladle__py_dlpack_device(self->batch);
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
    {"rows", (PyCFunction)batch_rows, METH_NOARGS,
     "rows() -> _Sample or None: every sample concatenated along the first axis, as one view (no copy), "
     "where the samples lie back to back and agree on the other axes; None otherwise. One export for a "
     "ragged batch, which torch's split() cuts into the samples."},
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

PyTypeObject ladle__py_batch_type = {
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

static PyObject *sample_dlpack(SampleObject *self, PyObject *args, PyObject *kw) {
  return ladle__py_dlpack(self->batch, self->index, args, kw, 0);
}

static PyObject *sample_dlpack_compat(SampleObject *self, PyObject *args, PyObject *kw) {
  return ladle__py_dlpack(self->batch, self->index, args, kw, 1);
}

static PyObject *sample_dlpack_device(SampleObject *self, PyObject *unused) {
  return ladle__py_dlpack_device(self->batch);
}

static PyObject *sample_get_shape(SampleObject *self, void *closure) {
  if (self->index == LADLE__PY_ROWS) {
    int64_t shape[LADLE_MAX_NDIM];
    ladle__py_rows_shape(self->batch, shape); /* held when rows() made this */
    return shape_tuple(shape, ladle_batch_ndim(self->batch));
  }
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
  return PyLong_FromVoidPtr(ladle_batch_data(self->batch, self->index == LADLE__PY_ROWS ? 0 : self->index));
}

static PyGetSetDef sample_getset[] = {
    {"shape", (getter)sample_get_shape, NULL, "The sample's shape.", NULL},
    {"index", (getter)sample_get_index, NULL, "The sample's index in its batch (-2: every sample, from rows()).", NULL},
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

/* See ext.h. */
int ladle__py_read_shapes(PyObject *obj, const char *who, int64_t **out, int *num, int *ndim, int64_t *total) {
  char what[96];
  snprintf(what, sizeof what, "%s: shapes must be a sequence of shape tuples", who);
  PyObject *seq = PySequence_Fast(obj, what);
  if (!seq) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  int64_t *shapes = NULL, sum = 0;
  int rank = -1;
  if (n > INT32_MAX) {
    ladle__py_raise_format(LADLE_ERROR_INVALID_ARGUMENT, "%s: too many samples", who);
    goto fail;
  }
  snprintf(what, sizeof what, "%s: a shape must be a sequence", who);
  for (int i = 0; i < (int)n; i++) {
    PyObject *shape = PySequence_Fast(PySequence_Fast_GET_ITEM(seq, i), what);
    if (!shape) goto fail;
    int nd = (int)PySequence_Fast_GET_SIZE(shape);
    if (rank < 0) {
      rank = nd;
      if (rank > LADLE_MAX_NDIM) {
        Py_DECREF(shape);
        ladle__py_raise_format(LADLE_ERROR_INVALID_ARGUMENT, "%s: samples have at most %d dimensions", who,
                               LADLE_MAX_NDIM);
        goto fail;
      }
      shapes = PyMem_Calloc((size_t)n * (size_t)rank + 1, sizeof *shapes);
      if (!shapes) {
        Py_DECREF(shape);
        PyErr_NoMemory();
        goto fail;
      }
    }
    if (nd != rank) {
      Py_DECREF(shape);
      ladle__py_raise_format(LADLE_ERROR_INVALID_ARGUMENT,
                             "%s: all samples need the same number of dimensions (sample 0 has %d, sample %d has %d)",
                             who, rank, i, nd);
      goto fail;
    }
    int64_t elems = 1;
    for (int d = 0; d < rank; d++) {
      long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(shape, d));
      if (v == -1 && PyErr_Occurred()) {
        Py_DECREF(shape);
        goto fail;
      }
      if (v < 0) {
        Py_DECREF(shape);
        ladle__py_raise_format(LADLE_ERROR_INVALID_ARGUMENT, "%s: negative extent in the shape of sample %d", who, i);
        goto fail;
      }
      shapes[(size_t)i * rank + d] = v;
      elems *= v;
    }
    Py_DECREF(shape);
    sum += elems;
  }
  if (!shapes && !(shapes = PyMem_Calloc(1, sizeof *shapes))) { /* no samples: an empty block, not NULL */
    PyErr_NoMemory();
    goto fail;
  }
  Py_DECREF(seq);
  *out = shapes;
  *num = (int)n;
  *ndim = rank < 0 ? 0 : rank;
  *total = sum;
  return 0;
fail:
  PyMem_Free(shapes);
  Py_DECREF(seq);
  return -1;
}

PyObject *ladle__py_batch_from_buffer(PyObject *m, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"buffer", "shapes", "layout", NULL};
  PyObject *obj, *shapes_obj = Py_None;
  const char *layout = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|Oz:batch_from_buffer", kwlist, &obj, &shapes_obj, &layout))
    return NULL;
  Py_buffer view;
  if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
  PyObject *result = NULL;
  int64_t *shapes = NULL;
  int num_samples = 0, ndim = 0;

  int dtype = dtype_of_format(view.format, view.itemsize);
  if (dtype < 0) {
    ladle__py_raise_format(LADLE_ERROR_UNSUPPORTED,
                 "batch_from_buffer: element format '%s' is not a ladle dtype (a numeric or bool "
                 "array is needed: int8..int64, uint8..uint64, float16, float32, float64 or bool)",
                 view.format ? view.format : "B");
    goto done;
  }
  if (shapes_obj == Py_None) {
    /* [N, ...]: N samples of shape[1:]. */
    if (view.ndim < 1 || view.ndim - 1 > LADLE_MAX_NDIM) {
      ladle__py_raise_format(LADLE_ERROR_INVALID_ARGUMENT,
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
    int64_t total = 0;
    if (ladle__py_read_shapes(shapes_obj, "batch_from_buffer", &shapes, &num_samples, &ndim, &total) < 0) goto done;
    if (total * view.itemsize != view.len) {
      ladle__py_raise_format(LADLE_ERROR_INVALID_ARGUMENT,
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
    ladle__py_raise_status(st);
    goto done;
  }
  result = ladle__py_batch_wrap(b);
done:
  PyMem_Free(shapes);
  PyBuffer_Release(&view);
  return result;
}

int ladle__py_add_batch_types(PyObject *m) {
  if (PyType_Ready(&ladle__py_batch_type) < 0 || PyType_Ready(&SampleType) < 0) return -1;
  if (PyModule_AddObjectRef(m, "_Batch", (PyObject *)&ladle__py_batch_type) < 0 ||
      PyModule_AddObjectRef(m, "_Sample", (PyObject *)&SampleType) < 0)
    return -1;
  return 0;
}

/* threadpool.c: _ThreadPool, a ladle_thread_pool that several pipelines
 * can share, and the reading of core lists (cpus=) both types take. */
#include "ext.h"

int ladle__py_parse_cpus(PyObject *obj, int **cpus, int *count) {
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

static int threadpool_init(ThreadPoolObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"num_threads", "cpus", NULL};
  int num_threads, ncpus;
  PyObject *cpus_obj = Py_None;
  int *cpus;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "i|O:_ThreadPool", kwlist, &num_threads, &cpus_obj)) return -1;
  if (self->pool) {
    ladle__py_raise_format(LADLE_ERROR_STATE, "_ThreadPool.__init__ called twice");
    return -1;
  }
  if (ladle__py_parse_cpus(cpus_obj, &cpus, &ncpus) < 0) return -1;
  ladle_status st;
  Py_BEGIN_ALLOW_THREADS
  st = ladle_thread_pool_create(num_threads, cpus, ncpus, &self->pool);
  Py_END_ALLOW_THREADS
  PyMem_Free(cpus);
  if (st != LADLE_OK) {
    ladle__py_raise_status(st);
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

PyTypeObject ladle__py_threadpool_type = {
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

int ladle__py_add_threadpool(PyObject *m) {
  if (PyType_Ready(&ladle__py_threadpool_type) < 0) return -1;
  return PyModule_AddObjectRef(m, "_ThreadPool", (PyObject *)&ladle__py_threadpool_type);
}

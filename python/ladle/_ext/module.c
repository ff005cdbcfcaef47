/* _ladle: the CPython extension under the ladle package. It is thin on
 * purpose: one Python type per C handle (_Pipeline, _Batch, _Sample,
 * _ThreadPool), one exception class per status family, DLPack export of
 * batches. The friendly DALI-like API is plain Python on top of it. This
 * file: module init and the module's functions; ext.h lists the others. */
#include "ext.h"

static PyObject *mod_version(PyObject *m, PyObject *unused) { return PyUnicode_FromString(ladle_version_string()); }

static PyObject *mod_version_number(PyObject *m, PyObject *unused) {
  return PyLong_FromUnsignedLong(ladle_version_number());
}

static PyObject *mod_build_info(PyObject *m, PyObject *unused) { return PyUnicode_FromString(ladle_build_info()); }

static PyMethodDef module_methods[] = {
    {"version", mod_version, METH_NOARGS, "version() -> str: the loaded library's version."},
    {"version_number", mod_version_number, METH_NOARGS, "version_number() -> int: MAJOR*10000+MINOR*100+PATCH."},
    {"build_info", mod_build_info, METH_NOARGS, "build_info() -> str: the build facts as JSON text."},
    {"op_schemas", ladle__py_op_schemas, METH_NOARGS, "op_schemas() -> list of dict: every registered operator."},
    {"op_common_args", ladle__py_op_common_args, METH_NOARGS,
     "op_common_args() -> list of dict: the arguments every operator takes (seed and DALI's hints)."},
    {"op_aliases", ladle__py_op_aliases, METH_NOARGS, "op_aliases() -> dict: DALI's deprecated operator names -> names."},
    {"batch_from_buffer", (PyCFunction)(void (*)(void))ladle__py_batch_from_buffer, METH_VARARGS | METH_KEYWORDS,
     "batch_from_buffer(buffer, shapes=None, layout=None) -> _Batch: copies a C-contiguous buffer into a new "
     "CPU batch. Without shapes the buffer is [N, ...]; with shapes (one tuple per sample) it holds the "
     "samples back to back."},
    {"batch_from_dlpack", (PyCFunction)(void (*)(void))ladle__py_batch_from_dlpack, METH_VARARGS | METH_KEYWORDS,
     "batch_from_dlpack(tensor, stream=None, layout=None, as_bool=False, shapes=None, ready_stream=None) -> "
     "_Batch: wraps a contiguous [N, ...] tensor (anything with __dlpack__: NumPy, PyTorch on the CPU or a CUDA "
     "device) without a copy; `stream` is passed to __dlpack__ so that the producer orders its writes before "
     "that CUDA stream. `shapes` (one tuple per sample): the samples lie back to back in the tensor, of those "
     "shapes (ragged allowed). `ready_stream` (a CUDA stream handle, the producer's): whoever reads the batch "
     "waits on the GPU for the work queued there so far (ladle_batch_record_ready)."},
    {NULL},
};

static struct PyModuleDef ladle_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ladle._ladle",
    .m_doc = "The C core of ladle. Use the `ladle` package instead of this module.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__ladle(void) {
  PyObject *m = PyModule_Create(&ladle_module);
  if (!m) return NULL;
  /* The order of the module's names is the original one: errors, _Batch,
   * _Sample, NodeRef, _Pipeline, _ThreadPool, constants. */
  if (ladle__py_add_errors(m) < 0 || ladle__py_add_batch_types(m) < 0 || ladle__py_add_noderef(m) < 0 ||
      ladle__py_add_pipeline(m) < 0 || ladle__py_add_threadpool(m) < 0 ||
      PyModule_AddIntConstant(m, "MAX_NDIM", LADLE_MAX_NDIM) < 0 ||
      PyModule_AddIntConstant(m, "DLPACK_MAJOR_VERSION", DLPACK_MAJOR_VERSION) < 0 ||
      PyModule_AddIntConstant(m, "DLPACK_MINOR_VERSION", DLPACK_MINOR_VERSION) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}

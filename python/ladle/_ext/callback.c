/* Callback operators (fn.python_function): the C side of the call. The
 * executor calls ladle__py_callback_call without the GIL, once per
 * iteration; ctx is a Python callable (ladle._python_function's dispatcher)
 * called as ctx(inputs, batch_size, stream, iteration), inputs a tuple of
 * _Batch. It returns num_outputs _Batch, or a (status, message) pair when the
 * function failed (the dispatcher keeps the exception for run() to chain). */
#include <stdint.h>
#include <stdio.h>

#include "ext.h"

static int interpreter_finalizing(void) {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

/* The pending exception as "Type: message" in buf (cleared). */
static void error_text(char *buf, size_t size) {
  PyObject *type = NULL, *value = NULL, *tb = NULL;
  PyErr_Fetch(&type, &value, &tb);
  PyObject *text = value ? PyObject_Str(value) : NULL;
  const char *name = type ? ((PyTypeObject *)type)->tp_name : "error";
  const char *utf8 = text ? PyUnicode_AsUTF8(text) : NULL;
  snprintf(buf, size, "the dispatcher failed: %s: %s", name, utf8 ? utf8 : "");
  PyErr_Clear();
  Py_XDECREF(text);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
}

/* Stores the dispatcher's result in call->outputs, or its failure in call->error. */
static ladle_status take_result(PyObject *result, ladle_callback_call *call) {
  if (PyTuple_Check(result) && PyTuple_GET_SIZE(result) == 2 && PyLong_Check(PyTuple_GET_ITEM(result, 0))) {
    const char *text = PyUnicode_AsUTF8(PyTuple_GET_ITEM(result, 1));
    snprintf(call->error, call->error_size, "%s", text ? text : "the function failed");
    PyErr_Clear();
    long st = PyLong_AsLong(PyTuple_GET_ITEM(result, 0));
    return st > LADLE_OK && st <= LADLE_ERROR_INTERNAL ? (ladle_status)st : LADLE_ERROR_INTERNAL;
  }
  PyObject *seq = PySequence_Fast(result, "the dispatcher must return a sequence of batches");
  if (!seq) {
    error_text(call->error, call->error_size);
    return LADLE_ERROR_INTERNAL;
  }
  ladle_status st = LADLE_ERROR_INTERNAL;
  if (PySequence_Fast_GET_SIZE(seq) != call->num_outputs) {
    snprintf(call->error, call->error_size, "the dispatcher returned %zd batches for %d outputs",
             PySequence_Fast_GET_SIZE(seq), call->num_outputs);
    goto done;
  }
  for (int k = 0; k < call->num_outputs; k++) {
    PyObject *b = PySequence_Fast_GET_ITEM(seq, k);
    if (!PyObject_TypeCheck(b, &ladle__py_batch_type)) {
      snprintf(call->error, call->error_size, "the dispatcher returned a %s for output %d", Py_TYPE(b)->tp_name, k);
      goto done;
    }
  }
  for (int k = 0; k < call->num_outputs; k++) {
    call->outputs[k] = ((BatchObject *)PySequence_Fast_GET_ITEM(seq, k))->batch;
    ladle_batch_retain(call->outputs[k]);
  }
  st = LADLE_OK;
done:
  Py_DECREF(seq);
  return st;
}

static ladle_status callback_call(void *ctx, ladle_callback_call *call) {
  /* Once the interpreter finalizes, a thread asking for the GIL is ended in place. */
  if (interpreter_finalizing()) {
    snprintf(call->error, call->error_size, "the Python interpreter is shutting down");
    return LADLE_ERROR_STATE;
  }
  PyGILState_STATE gil = PyGILState_Ensure();
  ladle_status st = LADLE_ERROR_INTERNAL;
  PyObject *inputs = PyTuple_New(call->num_inputs), *result = NULL;
  for (int i = 0; inputs && i < call->num_inputs; i++) {
    ladle_batch_retain(call->inputs[i]);
    PyObject *b = ladle__py_batch_wrap(call->inputs[i]);
    if (!b) Py_CLEAR(inputs);
    else PyTuple_SET_ITEM(inputs, i, b);
  }
  if (inputs)
    result = PyObject_CallFunction((PyObject *)ctx, "OiKL", inputs, call->batch_size,
                                   (unsigned long long)(uintptr_t)call->cuda_stream, (long long)call->iteration);
  if (result) st = take_result(result, call);
  else error_text(call->error, call->error_size);
  Py_XDECREF(result);
  Py_XDECREF(inputs);
  ladle__py_run_deferred_deleters();
  PyGILState_Release(gil);
  return st;
}

static void callback_release(void *ctx) {
  if (interpreter_finalizing()) return; /* no GIL to take: the interpreter frees it */
  PyGILState_STATE gil = PyGILState_Ensure();
  Py_DECREF((PyObject *)ctx);
  PyGILState_Release(gil);
}

ladle_callback ladle__py_callback(PyObject *callable) {
  ladle_callback cb = {callback_call, callback_release, Py_NewRef(callable)};
  return cb;
}

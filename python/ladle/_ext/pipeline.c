/* pipeline.c: _Pipeline, one ladle_pipeline: adding operators (arguments
 * through args.c), building, running (outputs as _Batch), feeding external
 * sources, positions and statistics. Blocking calls release the GIL. */
#include "ext.h"

#include <string.h>
#include <time.h>

typedef struct {
  PyObject_HEAD
  ladle_pipeline *pipe;
  PyObject *pool; /* a shared _ThreadPool, kept alive while the pipeline is */
  /* Set while a call runs without the GIL: a ladle pipeline must not be used
   * from two threads at once, and must not be destroyed under a running call. */
  int busy;
  unsigned long busy_thread; /* the thread in that call */
  int close_requested;       /* close() came while busy: the call ends, then the pipeline */
} PipelineObject;

static void set_busy(PipelineObject *self, int busy) {
  self->busy = busy;
  self->busy_thread = busy ? PyThread_get_thread_ident() : 0;
}

/* Fails unless the pipeline is open and idle. */
static int pipeline_ready(PipelineObject *self) {
  if (!self->pipe) {
    ladle__py_raise_format(LADLE_ERROR_STATE, "the pipeline is closed");
    return -1;
  }
  if (self->busy) {
    ladle__py_raise_format(LADLE_ERROR_STATE, "the pipeline is in use by another thread");
    return -1;
  }
  return 0;
}

static int pipeline_init(PipelineObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"batch_size", "num_threads", "device_id", "seed", "prefetch_queue_depth",
                           "max_pixels", "cpus", "pool", "skip_bad_samples", "max_skipped",
                           "max_skipped_fraction", "fed_seeds", NULL};
  int batch_size, num_threads = -1, device_id = -1, depth = -1, skip = 0, fed_seeds = 0;
  unsigned long long seed = 0;
  long long max_pixels = 0, max_skipped = -1;
  double max_skipped_fraction = 0;
  PyObject *cpus_obj = Py_None, *pool_obj = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "i|iiKiLOOpLdi:_Pipeline", kwlist, &batch_size, &num_threads,
                                   &device_id, &seed, &depth, &max_pixels, &cpus_obj, &pool_obj, &skip,
                                   &max_skipped, &max_skipped_fraction, &fed_seeds))
    return -1;
  if (self->pipe) {
    ladle__py_raise_format(LADLE_ERROR_STATE, "_Pipeline.__init__ called twice");
    return -1;
  }
  if (pool_obj != Py_None && !PyObject_TypeCheck(pool_obj, &ladle__py_threadpool_type)) {
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
  params.fed_seeds = fed_seeds;

  int *cpus = NULL;
  if (ladle__py_parse_cpus(cpus_obj, &cpus, &params.num_cpus) < 0) return -1;
  params.cpus = cpus;

  ladle_pipeline *pipe = NULL;
  ladle_status st;
  Py_BEGIN_ALLOW_THREADS
  st = ladle_pipeline_create(&params, &pipe);
  Py_END_ALLOW_THREADS
  PyMem_Free(cpus);
  if (st != LADLE_OK) {
    ladle__py_raise_status(st);
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

/* close() while another thread is in a call: run() stops waiting within its
 * 0.1 s wait slice and raises; other calls (build, set_position) finish first.
 * Then the pipeline is destroyed. From a signal handler on the thread in run()
 * itself, run() destroys it as it unwinds. */
static PyObject *pipeline_close(PipelineObject *self, PyObject *unused) {
  if (self->busy) {
    self->close_requested = 1;
    if (self->busy_thread == PyThread_get_thread_ident()) Py_RETURN_NONE;
    const struct timespec pause = {0, 5 * 1000 * 1000};
    while (self->busy) {
      Py_BEGIN_ALLOW_THREADS
      nanosleep(&pause, NULL);
      Py_END_ALLOW_THREADS
    }
  }
  pipeline_destroy(self);
  ladle__py_run_deferred_deleters();
  Py_RETURN_NONE;
}


static PyObject *pipeline_add_op(PipelineObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"op_name", "device", "inputs", "args", "instance_name", "callback", NULL};
  const char *op_name, *device, *instance_name = NULL;
  PyObject *inputs_obj, *args_obj = Py_None, *callback = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "ssO|OzO:add_op", kwlist, &op_name, &device, &inputs_obj, &args_obj,
                                   &instance_name, &callback))
    return NULL;
  if (callback != Py_None && !PyCallable_Check(callback))
    return PyErr_Format(PyExc_TypeError, "add_op: callback must be callable");
  if (pipeline_ready(self) < 0) return NULL;
  const ladle_op_schema *op = ladle_op_find(op_name);
  if (!op) return ladle__py_raise_format(LADLE_ERROR_INVALID_ARGUMENT, "unknown operator '%s'", op_name);

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
    if (ladle__py_arg_from_py(op, name, value, &cargs[i], &owned[i]) < 0) goto done;
  }

  /* Adding checks arguments and never blocks: the GIL stays, which also
   * keeps the strings that cargs point into unchanged. */
  int first = -1;
  ladle_status st;
  if (callback != Py_None) { /* python_function: the library releases the callback, also on failure */
    ladle_callback cb = ladle__py_callback(callback);
    st = ladle_pipeline_add_callback_op(self->pipe, op_name, device, input_ids, (int)num_inputs, cargs,
                                        (int)num_args, instance_name, &cb, &first);
  } else {
    st = ladle_pipeline_add_op(self->pipe, op_name, device, input_ids, (int)num_inputs, cargs, (int)num_args,
                               instance_name, &first);
  }
  if (st != LADLE_OK) {
    ladle__py_raise_status(st);
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
    ladle__py_raise_status(st);
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
  set_busy(self, 1);
  Py_BEGIN_ALLOW_THREADS
  st = ladle_pipeline_build(self->pipe);
  Py_END_ALLOW_THREADS
  set_busy(self, 0);
  if (st != LADLE_OK) return ladle__py_raise_status(st);
  Py_RETURN_NONE;
}

static PyObject *pipeline_run(PipelineObject *self, PyObject *unused) {
  if (pipeline_ready(self) < 0) return NULL;
  int n = ladle_pipeline_num_outputs(self->pipe);
  ladle_batch **outputs = PyMem_Calloc(n > 0 ? (size_t)n : 1, sizeof *outputs);
  if (!outputs) return PyErr_NoMemory();
  ladle_status st = LADLE_OK;
  set_busy(self, 1);
  /* Wait in slices so that Ctrl-C (and other signals) are handled within
   * 0.1 s; the iteration being prepared stays queued for the next run(). */
  int ready = n <= 0;
  while (!ready) {
    Py_BEGIN_ALLOW_THREADS
    ready = ladle_pipeline_wait_ready(self->pipe, 100);
    Py_END_ALLOW_THREADS
    if (!ready && PyErr_CheckSignals() < 0) {
      set_busy(self, 0);
      PyMem_Free(outputs);
      return NULL;
    }
    if (!ready && self->close_requested) {
      PyMem_Free(outputs);
      pipeline_destroy(self); /* still busy: a waiting close() must not free the pool under it */
      set_busy(self, 0);
      return ladle__py_raise_format(LADLE_ERROR_STATE, "the pipeline was closed while run() waited for its outputs");
    }
  }
  Py_BEGIN_ALLOW_THREADS
  /* With no outputs declared, build reports why without run writing any. */
  st = n > 0 ? ladle_pipeline_run(self->pipe, outputs) : ladle_pipeline_build(self->pipe);
  Py_END_ALLOW_THREADS
  set_busy(self, 0);
  ladle__py_run_deferred_deleters();
  if (st != LADLE_OK) {
    PyMem_Free(outputs);
    return ladle__py_raise_status(st);
  }
  PyObject *tuple = PyTuple_New(n);
  for (int i = 0; i < n; i++) {
    PyObject *b = tuple ? ladle__py_batch_wrap(outputs[i]) : NULL;
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
  if (!PyArg_ParseTuple(args, "sO!:feed", &name, &ladle__py_batch_type, &obj)) return NULL;
  if (!self->pipe) return ladle__py_raise_format(LADLE_ERROR_STATE, "the pipeline is closed");
  /* Not a long call (no busy flag): a thread blocked in run() may be waiting
   * for exactly this batch. */
  ladle_status st = ladle_pipeline_feed(self->pipe, name, ((BatchObject *)obj)->batch);
  if (st != LADLE_OK) return ladle__py_raise_status(st);
  Py_RETURN_NONE;
}

static PyObject *pipeline_feed_seed(PipelineObject *self, PyObject *arg) {
  unsigned long long seed = PyLong_AsUnsignedLongLong(arg);
  if (seed == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
  if (!self->pipe) return ladle__py_raise_format(LADLE_ERROR_STATE, "the pipeline is closed");
  ladle_status st = ladle_pipeline_feed_seed(self->pipe, seed); /* never blocks, as feed */
  if (st != LADLE_OK) return ladle__py_raise_status(st);
  Py_RETURN_NONE;
}

static PyObject *pipeline_set_node_seed(PipelineObject *self, PyObject *args) {
  int first_output, slot;
  long long stream;
  if (!PyArg_ParseTuple(args, "iiL:set_node_seed", &first_output, &slot, &stream)) return NULL;
  if (!self->pipe) return ladle__py_raise_format(LADLE_ERROR_STATE, "the pipeline is closed");
  ladle_status st = ladle_pipeline_set_node_seed(self->pipe, first_output, slot, (int64_t)stream);
  if (st != LADLE_OK) return ladle__py_raise_status(st);
  Py_RETURN_NONE;
}

static PyObject *pipeline_last_records(PipelineObject *self, PyObject *unused) {
  (void)unused;
  if (!self->pipe) return ladle__py_raise_format(LADLE_ERROR_STATE, "the pipeline is closed");
  int count = 0, capacity = 64;
  int64_t records[64], *buf = records;
  ladle_status st;
  for (;;) { /* a full buffer may have cut the list short: ask again with a larger one */
    st = ladle_pipeline_last_records(self->pipe, buf, capacity, &count);
    if (st != LADLE_OK || count < capacity) break;
    if (buf != records) PyMem_Free(buf);
    capacity *= 4;
    buf = PyMem_Malloc((size_t)capacity * sizeof *buf);
    if (!buf) return PyErr_NoMemory();
  }
  PyObject *out = st == LADLE_OK ? PyList_New(count) : NULL;
  for (int i = 0; out && i < count; i++) PyList_SET_ITEM(out, i, PyLong_FromLongLong(buf[i]));
  if (buf != records) PyMem_Free(buf);
  if (st != LADLE_OK) return ladle__py_raise_status(st);
  return out;
}

static PyObject *pipeline_record_name(PipelineObject *self, PyObject *args) {
  const char *reader;
  long long index;
  if (!PyArg_ParseTuple(args, "sL:record_name", &reader, &index)) return NULL;
  if (!self->pipe) return ladle__py_raise_format(LADLE_ERROR_STATE, "the pipeline is closed");
  const char *name = ladle_pipeline_record_name(self->pipe, reader, index);
  if (!name) Py_RETURN_NONE;
  return PyUnicode_DecodeFSDefault(name);
}

static PyObject *pipeline_reader_meta(PipelineObject *self, PyObject *arg) {
  if (pipeline_ready(self) < 0) return NULL;
  const char *name = PyUnicode_AsUTF8(arg);
  if (!name) return NULL;
  ladle_reader_meta meta;
  ladle_status st;
  set_busy(self, 1);
  Py_BEGIN_ALLOW_THREADS
  st = ladle_pipeline_reader_meta(self->pipe, name, &meta);
  Py_END_ALLOW_THREADS
  set_busy(self, 0);
  if (st != LADLE_OK) return ladle__py_raise_status(st);
  return Py_BuildValue("{s:L,s:L,s:i,s:i,s:O,s:O,s:L}", "epoch_size", (long long)meta.epoch_size, "epoch_size_padded",
                       (long long)meta.epoch_size_padded, "number_of_shards", meta.number_of_shards, "shard_id",
                       meta.shard_id, "pad_last_batch", meta.pad_last_batch ? Py_True : Py_False,
                       "stick_to_shard", meta.stick_to_shard ? Py_True : Py_False, "index_bytes",
                       (long long)meta.index_bytes);
}

static PyObject *pipeline_get_position(PipelineObject *self, PyObject *unused) {
  if (pipeline_ready(self) < 0) return NULL;
  ladle_pipeline_position pos;
  ladle_status st = ladle_pipeline_get_position(self->pipe, &pos);
  if (st != LADLE_OK) return ladle__py_raise_status(st);
  return PyLong_FromLongLong(pos.iteration);
}

static PyObject *pipeline_set_position(PipelineObject *self, PyObject *arg) {
  if (pipeline_ready(self) < 0) return NULL;
  ladle_pipeline_position pos;
  pos.iteration = PyLong_AsLongLong(arg);
  if (pos.iteration == -1 && PyErr_Occurred()) return NULL;
  ladle_status st;
  set_busy(self, 1);
  Py_BEGIN_ALLOW_THREADS
  st = ladle_pipeline_set_position(self->pipe, &pos);
  Py_END_ALLOW_THREADS
  set_busy(self, 0);
  if (st != LADLE_OK) return ladle__py_raise_status(st);
  Py_RETURN_NONE;
}

static PyObject *memory_dict(const ladle_memory_stats *m) {
  return Py_BuildValue("{s:K,s:K,s:K,s:K}", "used_bytes", (unsigned long long)m->used_bytes, "peak_used_bytes",
                       (unsigned long long)m->peak_used_bytes, "reserved_bytes", (unsigned long long)m->reserved_bytes,
                       "peak_reserved_bytes", (unsigned long long)m->peak_reserved_bytes);
}

static PyObject *pipeline_stats(PipelineObject *self, PyObject *unused) {
  if (pipeline_ready(self) < 0) return NULL;
  ladle_pipeline_stats ps;
  ladle_status st = ladle_pipeline_get_stats(self->pipe, &ps);
  if (st != LADLE_OK) return ladle__py_raise_status(st);
  int n = ladle_pipeline_num_ops(self->pipe);
  PyObject *ops = PyList_New(n);
  if (!ops) return NULL;
  for (int i = 0; i < n; i++) {
    ladle_op_stats os;
    st = ladle_pipeline_get_op_stats(self->pipe, i, &os);
    if (st != LADLE_OK) {
      Py_DECREF(ops);
      return ladle__py_raise_status(st);
    }
    PyObject *counters = PyDict_New();
    for (int k = 0; counters && k < os.num_counters; k++) {
      PyObject *v = PyLong_FromLongLong((long long)os.counters[k]);
      if (!v || PyDict_SetItemString(counters, os.counter_names[k], v) < 0) Py_CLEAR(counters);
      Py_XDECREF(v);
    }
    PyObject *d = counters ? Py_BuildValue("{s:s,s:z,s:s,s:d,s:d,s:L,s:L,s:O,s:z,s:N}", "op", os.op_name, "name",
                                           os.instance_name, "device", os.device, "seconds", os.seconds,
                                           "setup_seconds", os.setup_seconds, "cpu_passes",
                                           (long long)os.cpu_passes, "inline_passes", (long long)os.inline_passes,
                                           "fused", os.fused ? Py_True : Py_False, "stage", os.stage, "counters",
                                           counters)
                           : NULL;
    if (!d) {
      Py_DECREF(ops);
      return NULL;
    }
    PyList_SET_ITEM(ops, i, d);
  }
  PyObject *memory = Py_BuildValue("{s:N,s:N,s:N}", "host_pageable", memory_dict(&ps.host_pageable), "host_pinned",
                                    memory_dict(&ps.host_pinned), "device", memory_dict(&ps.device));
  if (!memory) {
    Py_DECREF(ops);
    return NULL;
  }
  return Py_BuildValue("{s:L,s:d,s:d,s:d,s:d,s:d,s:L,s:N,s:N}", "iterations", (long long)ps.iterations,
                       "prepare_seconds", ps.prepare_seconds, "wait_seconds", ps.wait_seconds, "host_stage_seconds",
                       ps.host_stage_seconds, "device_stage_seconds", ps.device_stage_seconds, "gpu_wait_seconds",
                       ps.gpu_wait_seconds, "skipped_samples",
                       (long long)ps.skipped, "memory", memory, "operators", ops);
}

static PyObject *pipeline_release_memory(PipelineObject *self, PyObject *unused) {
  if (pipeline_ready(self) < 0) return NULL;
  uint64_t released = 0;
  ladle_status st;
  Py_BEGIN_ALLOW_THREADS
  st = ladle_pipeline_release_memory(self->pipe, &released);
  Py_END_ALLOW_THREADS
  if (st != LADLE_OK) return ladle__py_raise_status(st);
  return PyLong_FromUnsignedLongLong(released);
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
      return ladle__py_raise_status(st);
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
  if (!self->pipe) return ladle__py_raise_format(LADLE_ERROR_STATE, "the pipeline is closed");
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
    {"set_node_seed", (PyCFunction)pipeline_set_node_seed, METH_VARARGS,
     "set_node_seed(first_output, slot, stream): the random operator draws from fed seed `slot` as stream `stream`."},
    {"feed_seed", (PyCFunction)pipeline_feed_seed, METH_O,
     "feed_seed(seed): queues the seed of a coming iteration (a _Pipeline made with fed_seeds=True)."},
    {"last_records", (PyCFunction)pipeline_last_records, METH_NOARGS,
     "last_records() -> list of int: the reader's record of each sample of the last iteration run() returned."},
    {"record_name", (PyCFunction)pipeline_record_name, METH_VARARGS,
     "record_name(reader_name, index) -> str or None: the file path of a reader's record."},
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
     "stats() -> dict: iterations, prepare_seconds, wait_seconds, host/device_stage_seconds, skipped_samples, memory (per pool) and "
     "per-operator seconds so far."},
    {"release_memory", (PyCFunction)pipeline_release_memory, METH_NOARGS,
     "release_memory() -> int: gives the pools' idle memory back to the system; returns the bytes."},
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

int ladle__py_add_pipeline(PyObject *m) {
  if (PyType_Ready(&PipelineType) < 0) return -1;
  return PyModule_AddObjectRef(m, "_Pipeline", (PyObject *)&PipelineType);
}

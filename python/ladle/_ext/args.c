/* args.c: operator arguments between Python and C: Python values converted
 * to ladle_value by the schema's type (or a NodeRef for a per-sample
 * argument), and the schemas themselves as dicts for the Python side. */
#include "ext.h"

#include <math.h>
#include <string.h>

/* NodeRef: marks an operator argument as a per-sample node. */

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

static PyObject *bad_value(const ladle_op_schema *op, const ladle_arg_schema *as, PyObject *obj, const char *why) {
  return ladle__py_raise_format(LADLE_ERROR_INVALID_ARGUMENT, "%s: argument '%s' expects %s, got %s %R%s", op->name,
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

/* A string argument's bytes: a str as UTF-8, or bytes as they are (file
 * names that are not UTF-8: Python hands them over as os.fsencode() gives
 * them). NULL with an exception set otherwise. Points into `obj`. */
static const char *string_of(const ladle_op_schema *op, const ladle_arg_schema *as, PyObject *obj,
                             const char *where) {
  if (PyUnicode_Check(obj)) return PyUnicode_AsUTF8(obj);
  if (PyBytes_Check(obj)) {
    char *bytes;
    Py_ssize_t n;
    if (PyBytes_AsStringAndSize(obj, &bytes, &n) < 0) return NULL;
    if (strlen(bytes) == (size_t)n) return bytes;
    bad_value(op, as, obj, " (a string with a NUL byte)");
    return NULL;
  }
  bad_value(op, as, obj, where);
  return NULL;
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
      out->u.s = string_of(op, as, obj, "");
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
        } else {
          ((const char **)array)[i] = string_of(op, as, item, " in the list");
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
  ladle__py_raise_format(LADLE_ERROR_INTERNAL, "%s: argument '%s' has an unknown type %d", op->name, as->name, (int)as->type);
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
    d = Py_BuildValue("{s:s,s:s,s:i,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:s,s:i,s:z}", "name", a->name, "type",
                      ladle_arg_type_name(a->type), "type_id", (int)a->type, "required", a->required ? Py_True : Py_False,
                      "has_default", has_default ? Py_True : Py_False, "default", def, "per_sample",
                      a->per_sample ? Py_True : Py_False, "min", lo, "max", hi, "choices", choices, "no_effect",
                      a->no_effect ? Py_True : Py_False, "doc", a->doc ? a->doc : "", "adds_outputs",
                      a->adds_outputs, "deprecated_name", a->deprecated_name);
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
                   {LADLE_OP_EXTERNAL, "external"}, {LADLE_OP_STATEFUL, "stateful"},
                   {LADLE_OP_CALLBACK, "callback"}, {LADLE_OP_EPILOGUE, "epilogue"},
                   {LADLE_OP_ACCEPTS_EPILOGUE, "accepts_epilogue"}};
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
  d = Py_BuildValue("{s:s,s:s,s:i,s:i,s:i,s:O,s:O,s:O,s:i,s:z,s:z,s:i}", "name", s->name, "doc",
                    s->doc ? s->doc : "", "min_inputs", s->min_inputs, "max_inputs", s->max_inputs, "num_outputs",
                    s->num_outputs, "devices", devices, "flags", flags, "args", args, "outputs_per_extra_input",
                    s->outputs_per_extra_input, "one_output_if",
                    s->one_output_if_arg > 0 ? s->args[s->one_output_if_arg - 1].name : NULL, "one_output_choice",
                    s->one_output_if_arg > 0 ? s->args[s->one_output_if_arg - 1].choices[s->one_output_choice]
                                             : NULL,
                    "host_inputs_from", s->host_inputs_from);
done:
  Py_XDECREF(devices);
  Py_XDECREF(args);
  Py_XDECREF(flags);
  return d;
}

/* The schema row of argument `name`: the operator's own or a common one.
 * NULL for a name neither has: the library then reports it (it is the only
 * judge of names), so the value only needs some type. */
static const ladle_arg_schema *find_arg(const ladle_op_schema *op, const char *name) {
  for (int a = 0; a < op->num_args; a++)
    if (ladle_arg_is_named(&op->args[a], name)) return &op->args[a];
  int count = 0;
  const ladle_arg_schema *common = ladle_op_common_args(&count);
  for (int a = 0; a < count; a++)
    if (strcmp(common[a].name, name) == 0) return &common[a];
  return NULL;
}

int ladle__py_arg_from_py(const ladle_op_schema *op, const char *name, PyObject *value, ladle_arg *out,
                          void **owned) {
  const ladle_arg_schema *as = find_arg(op, name);
  out->name = name;
  out->node = -1;
  if (!as) { /* reported by ladle_pipeline_add_op */
    out->value = (ladle_value){LADLE_ARG_INT, 1, {.i = 0}};
    return 0;
  }
  if (PyObject_TypeCheck(value, &NodeRefType)) {
    out->node = ((NodeRefObject *)value)->id;
    out->value.type = as->type;
    return 0;
  }
  return convert_value(op, as, value, &out->value, owned);
}

PyObject *ladle__py_op_common_args(PyObject *m, PyObject *unused) {
  int count = 0;
  const ladle_arg_schema *args = ladle_op_common_args(&count);
  return arg_schemas_to_list(args, count);
}

PyObject *ladle__py_op_aliases(PyObject *m, PyObject *unused) {
  PyObject *d = PyDict_New();
  const char *alias, *target;
  for (int i = 0; d && (alias = ladle_op_alias_get(i, &target)); i++) {
    PyObject *t = PyUnicode_FromString(target);
    if (!t || PyDict_SetItemString(d, alias, t) < 0) Py_CLEAR(d);
    Py_XDECREF(t);
  }
  return d;
}

PyObject *ladle__py_op_schemas(PyObject *m, PyObject *unused) {
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

int ladle__py_add_noderef(PyObject *m) {
  if (PyType_Ready(&NodeRefType) < 0) return -1;
  return PyModule_AddObjectRef(m, "NodeRef", (PyObject *)&NodeRefType);
}

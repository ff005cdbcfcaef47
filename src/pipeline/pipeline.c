/* Building a pipeline: operators are checked against their schemas as they
 * are added, so that a wrong argument is reported at the user's line, naming
 * the operator and the argument. */
#include "pipeline/pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "ops/readers/external_source.h"
#include "ops/registry.h"
#include "pipeline/gpu.h"

void ladle_pipeline_params_init(ladle_pipeline_params *p) {
  memset(p, 0, sizeof *p);
  p->batch_size = 0;
  p->num_threads = 4;
  p->device_id = -1;
  p->seed = 0;
  p->prefetch_queue_depth = 2;
  p->max_pixels = (int64_t)512 << 20;
  p->host_pool_cap = (size_t)1 << 30;
  p->max_skipped = -1;
}

ladle_status ladle_pipeline_create(const ladle_pipeline_params *params, ladle_pipeline **out) {
  ladle_status st = LADLE_OK;
  ladle_pipeline *p = NULL;
  LADLE_CHECK(params && out, LADLE_ERROR_INVALID_ARGUMENT, "params and out must not be NULL");
  LADLE_CHECK(params->batch_size >= 1, LADLE_ERROR_INVALID_ARGUMENT,
              "batch_size must be at least 1, got %d", params->batch_size);
  LADLE_CHECK(params->pool || params->num_threads >= 1, LADLE_ERROR_INVALID_ARGUMENT,
              "num_threads must be at least 1, got %d", params->num_threads);
  LADLE_CHECK(params->fed_seeds >= 0 && params->fed_seeds <= 64, LADLE_ERROR_INVALID_ARGUMENT,
              "fed_seeds must be in [0, 64], got %d", params->fed_seeds);
  LADLE_CHECK(params->prefetch_queue_depth >= 1 && params->prefetch_queue_depth <= 64,
              LADLE_ERROR_INVALID_ARGUMENT, "prefetch_queue_depth must be in [1, 64], got %d",
              params->prefetch_queue_depth);
  LADLE_CHECK(!params->pool || !ladle__thread_pool_inherited(params->pool), LADLE_ERROR_STATE,
              "the thread pool was made before this process was forked; make a new one in this process");
  LADLE_ALLOC(p, 1);
  p->pid = getpid();
  p->params = *params;
  p->params.cpus = NULL; /* the caller's array is not ours to keep */
  if (params->pool) {
    p->pool = params->pool;
  } else {
    LADLE_TRY(ladle_thread_pool_create(params->num_threads, params->cpus, params->num_cpus, &p->pool));
    p->owns_pool = 1;
  }
  LADLE_TRY(ladle__pool_create(&ladle__host_allocator, params->host_pool_cap, &p->host_pool));
  p->config.batch_size = params->batch_size;
  p->config.device_id = params->device_id;
  p->config.seed = params->seed;
  p->config.max_pixels = params->max_pixels;
  p->config.num_workers = ladle_thread_pool_num_threads(p->pool) + 1; /* and a waiting stage thread (core/threads.h) */
  if (params->fed_seeds) {
    p->seeds_cap = (params->prefetch_queue_depth + LADLE__FEED_MARGIN) * params->fed_seeds;
    LADLE_ALLOC(p->seeds, p->seeds_cap);
  }
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->space, NULL);
  pthread_cond_init(&p->ready, NULL);
  *out = p;
  return LADLE_OK;
done:
  if (p) {
    if (p->owns_pool) ladle_thread_pool_destroy(p->pool);
    free(p);
  }
  return st;
}

static void free_value(ladle_value *v) {
  switch (v->type) {
    case LADLE_ARG_STRING: free((void *)v->u.s); break;
    case LADLE_ARG_INTS: free((void *)v->u.ints); break;
    case LADLE_ARG_FLOATS: free((void *)v->u.floats); break;
    case LADLE_ARG_STRINGS:
      for (int i = 0; i < v->count; i++) free((void *)v->u.strings[i]);
      free((void *)v->u.strings);
      break;
    default: break;
  }
}

static void node_free(ladle__node *n) {
  if (!n) return;
  if (n->def->fini) n->def->fini(n);
  if (n->callback.release) n->callback.release(n->callback.ctx);
  for (int a = 0; a < n->def->schema.num_args && n->args; a++)
    if (n->args[a].given && n->args[a].source < 0) free_value(&n->args[a].value);
  free(n->args);
  free(n->name);
  free(n->out_shapes);
  for (int w = 0; n->scratch && w < n->config->num_workers; w++) free(n->scratch[w]);
  free(n->scratch);
  free(n->scratch_size);
  free(n->sample_states);
  free(n);
}

ladle_status ladle__pipeline_check_process(const ladle_pipeline *p) {
  if (p->pid == getpid()) return LADLE_OK;
  return LADLE_FAIL(LADLE_ERROR_STATE, "this pipeline was built by process %ld, which forked this one; threads do "
                    "not survive fork(): build the pipeline in this process", (long)p->pid);
}

void ladle_pipeline_destroy(ladle_pipeline *p) {
  if (!p) return;
  /* Forked: the executor, the workers, the GPU state are the parent's; what
   * this process has is a copy of its memory, left as it is. */
  if (p->pid != getpid()) return;
  ladle__executor_stop(p);
  for (int i = 0; i < p->num_nodes; i++) node_free(p->nodes[i]);
  free(p->nodes);
  free(p->order);
  free(p->values);
  free(p->outputs);
  free(p->fed);
  free(p->seeds);
  free(p->last_records);
  ladle__skip_fini(&p->skip);
  ladle__gpu_state_destroy(p->gpu); /* after the executor: waits for queued GPU work */
  if (p->owns_pool) ladle_thread_pool_destroy(p->pool);
  ladle__pool_release(p->host_pool);
  pthread_mutex_destroy(&p->lock);
  pthread_cond_destroy(&p->space);
  pthread_cond_destroy(&p->ready);
  free(p);
}

/* --- argument checking ----------------------------------------------------- */

static int in_range(const ladle_arg_schema *a, double x) { return !a->has_range || (x >= a->min && x <= a->max); }

/* "a", "b" or "c": a string argument's choices, for a message. */
static const char *choice_list(const char *const *choices, char *buf, size_t size) {
  size_t len = 0;
  buf[0] = 0;
  for (int i = 0; choices[i] && len + 4 < size; i++)
    len += (size_t)snprintf(buf + len, size - len, "%s\"%s\"", i == 0 ? "" : choices[i + 1] ? ", " : " or ",
                            choices[i]);
  return buf;
}

/* Copies `given` into `out` as the schema's type, converting where the
 * conversion loses nothing (an int where a float is wanted, a scalar where a
 * list is wanted). */
static ladle_status convert_value(const ladle_op_schema *op, const ladle_arg_schema *a,
                                  const ladle_value *given, ladle_value *out) {
  ladle_status st = LADLE_OK;
  ladle_arg_type t = given->type;
  int n = given->count;
  int scalar = t == LADLE_ARG_INT || t == LADLE_ARG_FLOAT || t == LADLE_ARG_BOOL || t == LADLE_ARG_STRING ||
               t == LADLE_ARG_DTYPE;
  memset(out, 0, sizeof *out);
  out->type = a->type;
  out->count = 1;
#define WRONG_TYPE()                                                                          \
  LADLE_CHECK(0, LADLE_ERROR_INVALID_ARGUMENT, "%s: argument '%s' expects %s, got %s", op->name, \
              a->name, ladle_arg_type_name(a->type), ladle_arg_type_name(t))
  switch (a->type) {
    case LADLE_ARG_INT:
    case LADLE_ARG_BOOL:
    case LADLE_ARG_DTYPE:
      if (t != LADLE_ARG_INT && t != LADLE_ARG_BOOL && t != a->type) WRONG_TYPE();
      out->u.i = given->u.i;
      if (a->type == LADLE_ARG_BOOL)
        LADLE_CHECK(out->u.i == 0 || out->u.i == 1, LADLE_ERROR_INVALID_ARGUMENT,
                    "%s: argument '%s' expects a bool, got %lld", op->name, a->name, (long long)out->u.i);
      if (a->type == LADLE_ARG_DTYPE)
        LADLE_CHECK(out->u.i >= 0 && out->u.i < LADLE_DTYPE_COUNT, LADLE_ERROR_INVALID_ARGUMENT,
                    "%s: argument '%s': %lld is not a data type", op->name, a->name, (long long)out->u.i);
      LADLE_CHECK(in_range(a, (double)out->u.i), LADLE_ERROR_INVALID_ARGUMENT,
                  "%s: argument '%s' = %lld is out of range [%g, %g]", op->name, a->name,
                  (long long)out->u.i, a->min, a->max);
      break;
    case LADLE_ARG_FLOAT:
      if (t == LADLE_ARG_FLOAT) out->u.f = given->u.f;
      else if (t == LADLE_ARG_INT) out->u.f = (double)given->u.i;
      else WRONG_TYPE();
      LADLE_CHECK(in_range(a, out->u.f), LADLE_ERROR_INVALID_ARGUMENT,
                  "%s: argument '%s' = %g is out of range [%g, %g]", op->name, a->name, out->u.f,
                  a->min, a->max);
      break;
    case LADLE_ARG_STRING: {
      if (t != LADLE_ARG_STRING) WRONG_TYPE();
      const char *s = given->u.s ? given->u.s : "";
      char buf[256];
      LADLE_CHECK(!a->choices || ladle__choice(s, a->choices, "INTERP_") >= 0, LADLE_ERROR_INVALID_ARGUMENT,
                  "%s: argument '%s' = \"%s\": use %s", op->name, a->name, s, choice_list(a->choices, buf, sizeof buf));
      out->u.s = strdup(s);
      LADLE_CHECK(out->u.s, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
      break;
    }
    case LADLE_ARG_INTS:
    case LADLE_ARG_FLOATS: {
      int is_float = a->type == LADLE_ARG_FLOATS;
      if (!(t == LADLE_ARG_INTS || t == LADLE_ARG_INT || (is_float && (t == LADLE_ARG_FLOATS || t == LADLE_ARG_FLOAT))))
        WRONG_TYPE();
      int count = scalar ? 1 : n;
      out->count = count;
      if (is_float) {
        double *v = calloc(count ? count : 1, sizeof *v);
        LADLE_CHECK(v, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
        out->u.floats = v;
        for (int i = 0; i < count; i++) {
          if (t == LADLE_ARG_FLOAT) v[i] = given->u.f;
          else if (t == LADLE_ARG_INT) v[i] = (double)given->u.i;
          else if (t == LADLE_ARG_FLOATS) v[i] = given->u.floats[i];
          else v[i] = (double)given->u.ints[i];
          LADLE_CHECK(in_range(a, v[i]), LADLE_ERROR_INVALID_ARGUMENT,
                      "%s: argument '%s'[%d] = %g is out of range [%g, %g]", op->name, a->name, i,
                      v[i], a->min, a->max);
        }
      } else {
        int64_t *v = calloc(count ? count : 1, sizeof *v);
        LADLE_CHECK(v, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
        out->u.ints = v;
        for (int i = 0; i < count; i++) {
          v[i] = t == LADLE_ARG_INT ? given->u.i : given->u.ints[i];
          LADLE_CHECK(in_range(a, (double)v[i]), LADLE_ERROR_INVALID_ARGUMENT,
                      "%s: argument '%s'[%d] = %lld is out of range [%g, %g]", op->name, a->name, i,
                      (long long)v[i], a->min, a->max);
        }
      }
      break;
    }
    case LADLE_ARG_STRINGS: {
      if (t != LADLE_ARG_STRINGS && t != LADLE_ARG_STRING) WRONG_TYPE();
      int count = t == LADLE_ARG_STRING ? 1 : n;
      char **v = calloc(count ? count : 1, sizeof *v);
      LADLE_CHECK(v, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
      out->u.strings = (const char *const *)v;
      out->count = count;
      for (int i = 0; i < count; i++) {
        v[i] = strdup(t == LADLE_ARG_STRING ? given->u.s : given->u.strings[i]);
        LADLE_CHECK(v[i], LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
      }
      break;
    }
  }
#undef WRONG_TYPE
  return LADLE_OK;
done:
  free_value(out);
  memset(out, 0, sizeof *out);
  return st;
}

/* --- the arguments every operator takes (DALI's base schema) ------------------ */

enum { COMMON_SEED, COMMON_BYTES_PER_SAMPLE_HINT, COMMON_PRESERVE, COMMON_COUNT };
static const ladle_arg_schema common_args[COMMON_COUNT] = {
    [COMMON_SEED] = {LADLE_INT_ARG("seed", -1), LADLE_RANGE(-1.0, 9.2e18),
        .doc = "Random operators: the seed of this operator's draws (from (seed, epoch, sample)); -1: the "
               "pipeline's seed and the operator's position. Other operators draw nothing: no effect."},
    [COMMON_BYTES_PER_SAMPLE_HINT] = {LADLE_OPTIONAL_ARG("bytes_per_sample_hint", LADLE_ARG_INTS), .no_effect = 1,
        .doc = "Accepted for DALI scripts: a memory hint; ladle's pools size themselves."},
    [COMMON_PRESERVE] = {LADLE_BOOL_ARG("preserve", 0), .no_effect = 1,
        .doc = "Accepted for DALI scripts: ladle never prunes an operator whose output is unused."},
};

const ladle_arg_schema *ladle_op_common_args(int *count) {
  if (count) *count = COMMON_COUNT;
  return common_args;
}

static const ladle_arg_schema *common_arg(const char *name) {
  for (int k = 0; k < COMMON_COUNT; k++)
    if (strcmp(common_args[k].name, name) == 0) return &common_args[k];
  return NULL;
}

static ladle_status take_common_arg(ladle__node *n, const ladle_arg_schema *as, const ladle_arg *given) {
  ladle_status st = LADLE_OK;
  ladle_value v = {0};
  LADLE_CHECK(given->node < 0, LADLE_ERROR_INVALID_ARGUMENT, "%s: argument '%s' must be a constant, not a node",
              n->def->schema.name, as->name);
  LADLE_TRY(convert_value(&n->def->schema, as, &given->value, &v));
  if (as == &common_args[COMMON_SEED]) n->seed = v.u.i;
  free_value(&v);
done:
  return st;
}


static unsigned device_bit(const char *device) {
  if (!device || strcasecmp(device, "cpu") == 0) return LADLE_ON_CPU;
  if (strcasecmp(device, "gpu") == 0 || strcasecmp(device, "cuda") == 0) return LADLE_ON_GPU;
  if (strcasecmp(device, "mixed") == 0) return LADLE_ON_MIXED;
  return 0;
}

static const char *device_names(unsigned bits, char *buf, size_t size) {
  snprintf(buf, size, "%s%s%s", bits & LADLE_ON_CPU ? "\"cpu\" " : "", bits & LADLE_ON_MIXED ? "\"mixed\" " : "",
           bits & LADLE_ON_GPU ? "\"gpu\" " : "");
  return buf;
}

static ladle_status add_node(ladle_pipeline *p, const char *op_name, const char *device, const int *inputs,
                             int num_inputs, const ladle_arg *args, int num_args, const char *instance_name,
                             const ladle_callback *callback, int *first_output) {
  ladle_status st = LADLE_OK;
  ladle__node *n = NULL;
  LADLE_CHECK(p && op_name && first_output, LADLE_ERROR_INVALID_ARGUMENT, "NULL argument");
  LADLE_CHECK(!p->built, LADLE_ERROR_STATE, "the pipeline is built: operators can no longer be added");
  const ladle__op_def *def = ladle__op_def_find(op_name);
  LADLE_CHECK(def, LADLE_ERROR_INVALID_ARGUMENT, "unknown operator '%s'", op_name);
  const ladle_op_schema *schema = &def->schema;
  op_name = schema->name; /* not an alias: messages name the operator */
  int wants_callback = (schema->flags & LADLE_OP_CALLBACK) != 0;
  LADLE_CHECK(!wants_callback || (callback && callback->call), LADLE_ERROR_INVALID_ARGUMENT,
              "%s: needs a function (add it with ladle_pipeline_add_callback_op)", op_name);
  LADLE_CHECK(wants_callback || !callback, LADLE_ERROR_INVALID_ARGUMENT, "%s: takes no function", op_name);
  unsigned dev = device_bit(device);
  char buf[64];
  LADLE_CHECK(dev, LADLE_ERROR_INVALID_ARGUMENT, "%s: unknown device '%s' (use \"cpu\", \"mixed\" or \"gpu\")",
              op_name, device);
  LADLE_CHECK(dev & schema->devices, LADLE_ERROR_INVALID_ARGUMENT,
              "%s: device '%s' is not supported; this build runs it on: %s", op_name, device,
              device_names(schema->devices, buf, sizeof buf));
  LADLE_CHECK(num_inputs >= schema->min_inputs && num_inputs <= schema->max_inputs && num_inputs <= LADLE_MAX_INPUTS,
              LADLE_ERROR_INVALID_ARGUMENT, "%s: takes %d to %d inputs, got %d", op_name,
              schema->min_inputs, schema->max_inputs, num_inputs);
  LADLE_ALLOC(n, 1);
  n->def = def;
  n->device = dev;
  n->id = p->num_computing;
  n->config = &p->config;
  n->num_inputs = num_inputs;
  n->num_outputs = schema->num_outputs;
  n->seed = -1;
  n->seed_slot = -1;
  if (callback) {
    n->callback = *callback;
    callback = NULL; /* released with the node from here on */
  }
  if (instance_name) {
    n->name = strdup(instance_name);
    LADLE_CHECK(n->name, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  for (int k = 0; k < num_inputs; k++) {
    LADLE_CHECK(inputs[k] >= 0 && inputs[k] < p->num_values, LADLE_ERROR_INVALID_ARGUMENT,
                "%s: input %d refers to node %d, which does not exist", op_name, k, inputs[k]);
    n->inputs[k] = inputs[k];
  }
  LADLE_ALLOC(n->args, schema->num_args);
  for (int a = 0; a < schema->num_args; a++) {
    n->args[a].source = -1;
    n->args[a].value = schema->args[a].default_value;
  }
  for (int i = 0; i < num_args; i++) {
    int a = 0;
    while (a < schema->num_args && !ladle_arg_is_named(&schema->args[a], args[i].name)) a++;
    if (a == schema->num_args && common_arg(args[i].name)) {
      LADLE_TRY(take_common_arg(n, common_arg(args[i].name), &args[i]));
      continue;
    }
    if (a == schema->num_args) {
      char names[LADLE_ERROR_MAX / 2] = "";
      size_t len = 0;
      for (int k = 0; k < schema->num_args && len + 40 < sizeof names; k++)
        len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", k ? ", " : "", schema->args[k].name);
      LADLE_CHECK(0, LADLE_ERROR_INVALID_ARGUMENT, "%s: unknown argument '%s' (arguments: %s)", op_name,
                  args[i].name, names);
    }
    const ladle_arg_schema *as = &schema->args[a];
    LADLE_CHECK(!n->args[a].given, LADLE_ERROR_INVALID_ARGUMENT, "%s: argument '%s' given twice", op_name,
                as->name);
    if (args[i].node >= 0) {
      LADLE_CHECK(as->per_sample, LADLE_ERROR_INVALID_ARGUMENT,
                  "%s: argument '%s' must be a constant, not a node", op_name, as->name);
      LADLE_CHECK(args[i].node < p->num_values, LADLE_ERROR_INVALID_ARGUMENT,
                  "%s: argument '%s' refers to node %d, which does not exist", op_name, as->name, args[i].node);
      LADLE_CHECK(n->num_sources < LADLE_MAX_INPUTS, LADLE_ERROR_INVALID_ARGUMENT,
                  "%s: too many per-sample arguments", op_name);
      n->args[a].source = n->num_sources;
      n->sources[n->num_sources++] = args[i].node;
    } else {
      LADLE_TRY(convert_value(schema, as, &args[i].value, &n->args[a].value));
    }
    n->args[a].given = 1;
  }
  for (int a = 0; a < schema->num_args; a++)
    LADLE_CHECK(n->args[a].given || !schema->args[a].required, LADLE_ERROR_INVALID_ARGUMENT,
                "%s: argument '%s' is required", op_name, schema->args[a].name);
  if (schema->num_outputs < 0 && schema->args[-1 - schema->num_outputs].type == LADLE_ARG_INT) {
    /* As many outputs as an int argument says (python_function's num_outputs); its range is the schema's. */
    n->num_outputs = (int)n->args[-1 - schema->num_outputs].value.u.i;
  } else if (schema->num_outputs < 0) {
    /* One output per element of a list argument (readers.webdataset's ext). */
    const ladle_arg_schema *as = &schema->args[-1 - schema->num_outputs];
    int count = n->args[-1 - schema->num_outputs].value.count;
    LADLE_CHECK(count >= 1 && count <= LADLE_MAX_OUTPUTS, LADLE_ERROR_INVALID_ARGUMENT,
                "%s: argument '%s' has %d entries; give 1 to %d (one per output)", op_name, as->name, count,
                LADLE_MAX_OUTPUTS);
    n->num_outputs = count;
  }
  if (schema->one_output_if_arg > 0) {
    const ladle_arg_schema *as = &schema->args[schema->one_output_if_arg - 1];
    const ladle_value *v = &n->args[schema->one_output_if_arg - 1].value;
    if (v->type == LADLE_ARG_STRING && v->u.s && ladle__choice(v->u.s, as->choices, NULL) == schema->one_output_choice)
      n->num_outputs = 1;
  }
  n->num_outputs += schema->outputs_per_extra_input * (num_inputs - schema->min_inputs);
  for (int a = 0; a < schema->num_args; a++) /* outputs that bool arguments switch on (readers.coco's masks) */
    if (schema->args[a].adds_outputs > 0 && n->args[a].value.count && n->args[a].value.u.i)
      n->num_outputs += schema->args[a].adds_outputs;
  LADLE_CHECK(n->num_outputs <= LADLE_MAX_OUTPUTS, LADLE_ERROR_INVALID_ARGUMENT,
              "%s: these arguments ask for %d outputs; at most %d", op_name, n->num_outputs, LADLE_MAX_OUTPUTS);
  LADLE_TRY(ladle__grow_array((void **)&p->nodes, &p->cap_nodes, p->num_nodes + 1, sizeof *p->nodes));
  LADLE_TRY(ladle__grow_array((void **)&p->values, &p->cap_values, p->num_values + n->num_outputs, sizeof *p->values));
  n->first_output = p->num_values;
  for (int k = 0; k < n->num_outputs; k++) p->values[p->num_values++] = (ladle__value_ref){p->num_nodes, k};
  p->nodes[p->num_nodes++] = n;
  p->num_computing += !(def->schema.flags & LADLE_OP_MOVES_DATA);
  *first_output = n->first_output;
  return LADLE_OK;
done:
  node_free(n);
  if (callback && callback->release) callback->release(callback->ctx);
  return st;
}

ladle_status ladle_pipeline_add_op(ladle_pipeline *p, const char *op_name, const char *device, const int *inputs,
                                   int num_inputs, const ladle_arg *args, int num_args, const char *instance_name,
                                   int *first_output) {
  return add_node(p, op_name, device, inputs, num_inputs, args, num_args, instance_name, NULL, first_output);
}

ladle_status ladle_pipeline_add_callback_op(ladle_pipeline *p, const char *op_name, const char *device,
                                            const int *inputs, int num_inputs, const ladle_arg *args, int num_args,
                                            const char *instance_name, const ladle_callback *callback,
                                            int *first_output) {
  if (!callback || !callback->call) {
    if (callback && callback->release) callback->release(callback->ctx);
    return LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT, "%s: NULL callback", op_name ? op_name : "(null)");
  }
  return add_node(p, op_name, device, inputs, num_inputs, args, num_args, instance_name, callback, first_output);
}

ladle_status ladle_pipeline_set_outputs(ladle_pipeline *p, const int *nodes, int num_nodes) {
  if (p->built) return LADLE_FAIL(LADLE_ERROR_STATE, "the pipeline is built: outputs can no longer change");
  if (num_nodes < 1) return LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT, "a pipeline needs at least one output");
  for (int i = 0; i < num_nodes; i++)
    if (nodes[i] < 0 || nodes[i] >= p->num_values)
      return LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT, "output %d refers to node %d, which does not exist", i, nodes[i]);
  int *copy = malloc(sizeof *copy * (size_t)num_nodes);
  if (!copy) return LADLE_FAIL(LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  memcpy(copy, nodes, sizeof *copy * (size_t)num_nodes);
  free(p->outputs);
  p->outputs = copy;
  p->num_outputs = num_nodes;
  return LADLE_OK;
}

int ladle_pipeline_num_outputs(const ladle_pipeline *p) { return p->num_outputs; }

int ladle_pipeline_num_ops(const ladle_pipeline *p) { return p ? p->num_nodes : 0; }

void *ladle_pipeline_cuda_stream(const ladle_pipeline *p) {
  ladle__gpu *g = p && p->gpu ? ladle__gpu_of(p->gpu) : NULL;
  return g ? g->stream : NULL;
}

ladle_status ladle_pipeline_get_op_stats(const ladle_pipeline *p, int index, ladle_op_stats *stats) {
  if (!p || !stats) return LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT, "NULL argument");
  if (index < 0 || index >= p->num_nodes)
    return LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT, "operator index %d out of range (the pipeline has %d)", index,
                      p->num_nodes);
  const ladle__node *n = p->nodes[index];
  stats->op_name = n->def->schema.name;
  stats->instance_name = n->name;
  stats->device = n->device == LADLE_ON_GPU ? "gpu" : n->device == LADLE_ON_MIXED ? "mixed" : "cpu";
  stats->seconds = (double)atomic_load(&n->busy_ns) * 1e-9;
  stats->setup_seconds = (double)atomic_load(&n->setup_ns) * 1e-9;
  stats->cpu_passes = atomic_load(&n->cpu_passes);
  stats->inline_passes = atomic_load(&n->inline_passes);
  stats->fused = n->fused_into != NULL;
  stats->stage = !p->built || p->split == p->num_nodes ? NULL : n->config == &p->config_b ? "device" : "host";
  stats->num_counters = n->def->counters ? n->def->counters(n, stats->counter_names, stats->counters) : 0;
  return LADLE_OK;
}

static const ladle__out_desc *value_desc(const ladle_pipeline *p, int value) {
  ladle__value_ref r = p->values[value];
  return &p->nodes[r.node]->out[r.output];
}

ladle_status ladle__node_init_late(ladle_pipeline *p, ladle__node *n) {
  for (int k = 0; k < n->num_inputs; k++) {
    n->in[k] = *value_desc(p, n->inputs[k]);
    if (n->in[k].ndim < 0) /* cannot happen: producers run first, and each sets its descs */
      return LADLE_FAIL(LADLE_ERROR_INTERNAL, "%s: input %d is still of unknown type", n->def->schema.name, k);
  }
  ladle_status st = n->def->init(n);
  if (st == LADLE_OK) {
    n->deferred = 0;
  } else if (n->def->fini) { /* tried again by the next iteration */
    n->def->fini(n);
    n->state = NULL;
  }
  return st;
}

static int on_gpu(const ladle_pipeline *p, int value) { return p->nodes[p->values[value].node]->device != LADLE_ON_CPU; }

/* Where data lives: CPU operators read host memory, GPU operators device
 * memory, mixed operators take host data and give device data; per-sample
 * arguments are read on the host. Creates the GPU resources when needed. */
static ladle_status check_placement(ladle_pipeline *p) {
  int gpu = 0;
  for (int i = 0; i < p->num_nodes; i++) {
    const ladle__node *n = p->nodes[i];
    const char *op = n->def->schema.name;
    gpu |= n->device != LADLE_ON_CPU;
    for (int k = 0; k < n->num_inputs; k++) {
      int host_input = n->def->schema.host_inputs_from > 0 && k >= n->def->schema.host_inputs_from;
      int want_gpu = n->device == LADLE_ON_GPU && !host_input;
      if (on_gpu(p, n->inputs[k]) == want_gpu) continue;
      if (host_input)
        return LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT, "%s: input %d is read on the host: it must come from a CPU operator",
                          op, k);
      if (want_gpu)
        return LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT,
                          "%s (device=\"gpu\"): input %d is in host memory: move it with .gpu(), or use "
                          "device=\"mixed\" where the operator has it",
                          op, k);
      return LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT,
                        "%s (device=\"%s\"): input %d is in GPU memory, which it cannot read", op,
                        n->device == LADLE_ON_MIXED ? "mixed" : "cpu", k);
    }
    for (int k = 0; k < n->num_sources; k++)
      if (on_gpu(p, n->sources[k]))
        return LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT,
                          "%s: a per-sample argument must come from a CPU operator (it is read on the host)", op);
  }
  if (!gpu) return LADLE_OK;
  ladle_status st = ladle__gpu_state_create(p->params.device_id, p->params.prefetch_queue_depth + 1,
                                            p->params.host_pool_cap, p->pool, &p->gpu);
  if (st != LADLE_OK) return st;
  /* Host outputs go to pinned memory, so copies to the GPU are asynchronous. */
  ladle__pool_release(p->host_pool);
  p->host_pool = ladle__gpu_of(p->gpu)->pinned_pool;
  ladle__pool_retain(p->host_pool);
  return LADLE_OK;
}

ladle_status ladle_pipeline_build(ladle_pipeline *p) {
  ladle_status st = LADLE_OK;
  LADLE_CHECK(p, LADLE_ERROR_INVALID_ARGUMENT, "NULL argument");
  LADLE_TRY(ladle__pipeline_check_process(p));
  if (p->built) return LADLE_OK;
  LADLE_CHECK(p->num_outputs > 0, LADLE_ERROR_STATE, "no outputs were set");
  int batch = p->params.batch_size;
  LADLE_TRY(check_placement(p));
  for (int i = 0; i < p->num_nodes; i++) {
    ladle__node *n = p->nodes[i];
    for (int k = 0; k < n->num_inputs; k++) {
      n->in[k] = *value_desc(p, n->inputs[k]);
      n->deferred |= n->in[k].ndim < 0;
    }
    for (int k = 0; k < n->num_sources; k++) n->deferred |= value_desc(p, n->sources[k])->ndim < 0;
    if (n->deferred) {
      for (int k = 0; k < n->num_outputs; k++) n->out[k] = (ladle__out_desc){.ndim = -1};
    } else {
      LADLE_TRY(n->def->init(n));
    }
    LADLE_ALLOC(n->out_shapes, (size_t)batch * n->num_outputs * LADLE_MAX_NDIM);
    LADLE_ALLOC(n->scratch, p->config.num_workers);
    LADLE_ALLOC(n->scratch_size, p->config.num_workers);
    if (n->def->sample_state_size) LADLE_ALLOC(n->sample_states, (size_t)batch * n->def->sample_state_size);
    if (n->def->plan && !p->reader) p->reader = n;
    if ((n->def->schema.flags & LADLE_OP_EXTERNAL)) {
      if (!p->fed) LADLE_ALLOC(p->fed, p->num_nodes);
      p->fed[p->num_fed++] = n;
    }
  }
  ladle__plan_graph(p);
  ladle_reader_meta meta = {0};
  if (p->params.skip_bad_samples && p->params.max_skipped_fraction > 0) {
    LADLE_CHECK(p->reader, LADLE_ERROR_INVALID_ARGUMENT,
                "a fraction of the epoch as max_skipped_samples needs a reader in the pipeline");
    LADLE_TRY(p->reader->def->reader_meta(p->reader, &meta));
  }
  LADLE_TRY(ladle__skip_init(&p->skip, &p->params, meta.epoch_size));
  LADLE_TRY(ladle__executor_start(p));
  p->built = 1;
  return LADLE_OK;
done:
  return st;
}

int64_t ladle_pipeline_num_skipped(const ladle_pipeline *p) {
  if (!p) return 0;
  pthread_mutex_lock((pthread_mutex_t *)&p->lock);
  int64_t n = p->skip.num_log;
  pthread_mutex_unlock((pthread_mutex_t *)&p->lock);
  return n;
}

ladle_status ladle_pipeline_get_skipped(const ladle_pipeline *p, int64_t index, ladle_skipped_sample *out) {
  ladle_status st = LADLE_OK;
  LADLE_CHECK(p && out, LADLE_ERROR_INVALID_ARGUMENT, "NULL argument");
  pthread_mutex_lock((pthread_mutex_t *)&p->lock);
  if (index >= 0 && index < p->skip.num_log) *out = p->skip.log[index].info;
  else st = LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT, "skipped sample %lld of %d", (long long)index, p->skip.num_log);
  pthread_mutex_unlock((pthread_mutex_t *)&p->lock);
done:
  return st;
}

ladle_status ladle_pipeline_feed(ladle_pipeline *p, const char *source_name, ladle_batch *batch) {
  ladle_status st = LADLE_OK;
  LADLE_CHECK(p && source_name && batch, LADLE_ERROR_INVALID_ARGUMENT, "NULL argument");
  LADLE_TRY(ladle_pipeline_build(p));
  ladle__node *n = NULL;
  for (int i = 0; i < p->num_fed && !n; i++)
    if (p->fed[i]->name && strcmp(p->fed[i]->name, source_name) == 0) n = p->fed[i];
  LADLE_CHECK(n, LADLE_ERROR_INVALID_ARGUMENT, "no external_source named '%s' in the pipeline", source_name);
  LADLE_TRY(ladle__external_check(n, batch, p->params.batch_size));
  LADLE_CHECK(!p->reader || ladle_batch_num_samples(batch) == p->params.batch_size, LADLE_ERROR_INVALID_ARGUMENT,
              "external_source '%s': fed %d samples; with a reader in the pipeline every iteration has batch_size = %d",
              source_name, ladle_batch_num_samples(batch), p->params.batch_size);
  pthread_mutex_lock(&p->lock);
  int queued = ladle__external_count(n), limit = p->params.prefetch_queue_depth + LADLE__FEED_MARGIN;
  if (queued >= limit) {
    pthread_mutex_unlock(&p->lock);
    return LADLE_FAIL(LADLE_ERROR_LIMIT, "external_source '%s' already holds %d fed batches that no iteration has "
                      "taken (at most prefetch_queue_depth + %d = %d): call run() to consume them before feeding more",
                      source_name, queued, LADLE__FEED_MARGIN, limit);
  }
  st = ladle__external_push(n, batch);
  pthread_cond_broadcast(&p->space);
  pthread_mutex_unlock(&p->lock);
done:
  return st;
}

ladle_status ladle_pipeline_feed_seed(ladle_pipeline *p, uint64_t seed) {
  ladle_status st = LADLE_OK;
  LADLE_CHECK(p, LADLE_ERROR_INVALID_ARGUMENT, "NULL argument");
  LADLE_CHECK(p->params.fed_seeds, LADLE_ERROR_STATE, "the pipeline was not created with fed_seeds >= 1");
  LADLE_TRY(ladle_pipeline_build(p));
  int limit = p->seeds_cap;
  pthread_mutex_lock(&p->lock);
  int waiting = p->seeds_count; /* read under the lock: the executor takes seeds concurrently */
  if (waiting >= limit) {
    pthread_mutex_unlock(&p->lock);
    return LADLE_FAIL(LADLE_ERROR_LIMIT, "%d fed seeds wait already (at most (prefetch_queue_depth + %d) x fed_seeds "
                      "= %d): call run() to consume them before feeding more", waiting, LADLE__FEED_MARGIN, limit);
  }
  p->seeds[(p->seeds_head + p->seeds_count++) % limit] = seed;
  pthread_cond_broadcast(&p->space);
  pthread_mutex_unlock(&p->lock);
done:
  return st;
}

ladle_status ladle_pipeline_set_node_seed(ladle_pipeline *p, int first_output, int slot, int64_t stream) {
  ladle_status st = LADLE_OK;
  LADLE_CHECK(p, LADLE_ERROR_INVALID_ARGUMENT, "NULL argument");
  LADLE_CHECK(!p->built, LADLE_ERROR_STATE, "set_node_seed: the pipeline is built");
  LADLE_CHECK(p->params.fed_seeds, LADLE_ERROR_STATE, "set_node_seed: the pipeline was not created with fed_seeds >= 1");
  LADLE_CHECK(slot >= 0 && slot < p->params.fed_seeds, LADLE_ERROR_INVALID_ARGUMENT,
              "set_node_seed: slot %d is not in [0, fed_seeds = %d)", slot, p->params.fed_seeds);
  LADLE_CHECK(stream >= 0, LADLE_ERROR_INVALID_ARGUMENT, "set_node_seed: stream must be >= 0, got %lld",
              (long long)stream);
  for (int i = 0; i < p->num_nodes; i++) {
    ladle__node *n = p->nodes[i];
    if (n->first_output != first_output) continue;
    LADLE_CHECK(n->def->schema.flags & LADLE_OP_RANDOM, LADLE_ERROR_INVALID_ARGUMENT,
                "set_node_seed: %s draws no random numbers", n->def->schema.name);
    n->seed_slot = slot;
    n->rng_stream = stream;
    return LADLE_OK;
  }
  st = LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT, "set_node_seed: no operator has first output %d", first_output);
done:
  return st;
}

ladle_status ladle_pipeline_reader_meta(ladle_pipeline *p, const char *reader_name, ladle_reader_meta *meta) {
  for (int i = 0; i < p->num_nodes; i++) {
    ladle__node *n = p->nodes[i];
    if (n->def->reader_meta && n->name && reader_name && strcmp(n->name, reader_name) == 0) {
      if (!p->built) return LADLE_FAIL(LADLE_ERROR_STATE, "build the pipeline first");
      *meta = (ladle_reader_meta){0};
      return n->def->reader_meta(n, meta);
    }
  }
  return LADLE_FAIL(LADLE_ERROR_INVALID_ARGUMENT, "no reader named '%s' in the pipeline",
                    reader_name ? reader_name : "(null)");
}

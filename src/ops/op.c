/* The helpers operator code calls: inputs, outputs, arguments, randomness. */
#include "ops/op.h"

#include "ops/kernels/dtype.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ladle__tensor tensor_of(const ladle_batch *b, int slot) {
  ladle__tensor t = {ladle_batch_data(b, slot), ladle_batch_shape(b, slot), b->ndim, b->dtype};
  return t;
}

ladle__tensor ladle__input(const ladle__node *node, const ladle__sample *s, int k) {
  return tensor_of(node->in_batches[k], s->slot);
}

ladle__tensor ladle__output(const ladle__node *node, const ladle__sample *s, int k) {
  return tensor_of(node->out_batches[k], s->slot);
}

void ladle__set_shape(ladle__node *node, const ladle__sample *s, int k, const int64_t *shape) {
  int64_t *dst = node->out_shapes + ((size_t)s->slot * node->num_outputs + k) * LADLE_MAX_NDIM;
  if (node->out[k].ndim > 0) memcpy(dst, shape, sizeof(int64_t) * node->out[k].ndim);
}

int ladle__arg_given(const ladle__node *node, int arg) { return node->args[arg].given; }

/* The first element of a per-sample argument's sample, as a double. */
static double source_value(const ladle__node *node, const ladle__sample *s, int source) {
  const ladle_batch *b = node->source_batches[source];
  return ladle__load_as_f64(ladle_batch_data(b, s->slot), 0, b->dtype);
}

ladle_status ladle__check_arg_sources(const ladle__node *node, int num_samples, const char *const *names) {
  const ladle_op_schema *op = &node->def->schema;
  for (int a = 0; a < op->num_args; a++) {
    int src = node->args[a].source;
    if (src < 0) continue;
    const ladle_arg_schema *as = &op->args[a];
    const ladle_batch *b = node->source_batches[src];
    if (ladle_batch_device(b) == LADLE_DEVICE_CUDA) /* host and pinned host memory are fine */
      return LADLE_OP_FAIL(node, LADLE_ERROR_INVALID_ARGUMENT,
                           "argument '%s': per-sample values must be in host memory (a CPU operator's output)",
                           as->name);
    for (int i = 0; i < num_samples; i++) {
      if (node->active && !node->active[i]) continue; /* not computed in this iteration */
      char name[LADLE_ERROR_MAX / 2] = "";
      if (names && names[i]) snprintf(name, sizeof name, " (%s)", names[i]);
      if (ladle__batch_sample_elems(b, i) < 1)
        return LADLE_OP_FAIL(node, LADLE_ERROR_INVALID_ARGUMENT, "argument '%s': sample %d%s has no value",
                             as->name, i, name);
      ladle__sample s = {.slot = i};
      double x = source_value(node, &s, src);
      int bad = as->type == LADLE_ARG_BOOL ? !(x == 0 || x == 1) : !(x == x) || (as->has_range && (x < as->min || x > as->max));
      if (bad && as->has_range)
        return LADLE_OP_FAIL(node, LADLE_ERROR_INVALID_ARGUMENT,
                             "argument '%s' = %g for sample %d%s is out of range [%g, %g]", as->name, x, i, name,
                             as->min, as->max);
      if (bad)
        return LADLE_OP_FAIL(node, LADLE_ERROR_INVALID_ARGUMENT, "argument '%s' = %g for sample %d%s is not %s",
                             as->name, x, i, name, as->type == LADLE_ARG_BOOL ? "0 or 1" : "a number");
    }
  }
  return LADLE_OK;
}

int64_t ladle__arg_int(const ladle__node *node, const ladle__sample *s, int arg) {
  const ladle__arg *a = &node->args[arg];
  if (a->source >= 0 && s) return (int64_t)source_value(node, s, a->source);
  if (a->value.type == LADLE_ARG_FLOAT) return (int64_t)a->value.u.f;
  return a->value.count > 0 ? a->value.u.i : 0;
}

double ladle__arg_float(const ladle__node *node, const ladle__sample *s, int arg) {
  const ladle__arg *a = &node->args[arg];
  if (a->source >= 0 && s) return source_value(node, s, a->source);
  if (a->value.type == LADLE_ARG_FLOAT) return a->value.count > 0 ? a->value.u.f : 0;
  return a->value.count > 0 ? (double)a->value.u.i : 0;
}

const ladle_value *ladle__arg_value(const ladle__node *node, int arg) {
  return &node->args[arg].value;
}

const char *ladle__arg_string(const ladle__node *node, int arg) {
  const ladle_value *v = &node->args[arg].value;
  return v->count > 0 ? v->u.s : NULL;
}

ladle_status ladle__scratch(ladle__node *node, const ladle__sample *s, size_t size, void **out) {
  int w = s->worker;
  if (node->scratch_size[w] < size) {
    free(node->scratch[w]);
    node->scratch_size[w] = 0;
    node->scratch[w] = malloc(size);
    if (!node->scratch[w]) return LADLE_OP_FAIL(node, LADLE_ERROR_OUT_OF_MEMORY, "cannot allocate %zu bytes of scratch", size);
    node->scratch_size[w] = size;
  }
  *out = node->scratch[w];
  return LADLE_OK;
}

/* An operator given its own seed draws from (seed, epoch, sample) alone, so
 * that its numbers do not move when operators are added before it; the
 * stream key 2^63 keeps it apart from every positional stream. */
void ladle__sample_rng(const ladle__node *node, const ladle__sample *s, ladle__rng *rng) {
  if (node->seed_slot >= 0) /* as sample `slot` of a fed-seed pipeline's first iteration (ladle_pipeline_set_node_seed) */
    ladle__rng_init(rng, node->config->seeds[node->seed_slot], (uint64_t)node->rng_stream, 0, (uint64_t)s->slot);
  else if (node->seed >= 0)
    ladle__rng_init(rng, (uint64_t)node->seed, UINT64_C(1) << 63, (uint64_t)s->ref->epoch, (uint64_t)s->ref->index);
  else
    ladle__rng_init(rng, node->config->seed, (uint64_t)node->id, (uint64_t)s->ref->epoch, (uint64_t)s->ref->index);
}

int ladle__arg_choice(const ladle__node *node, int arg) {
  const ladle_arg_schema *a = &node->def->schema.args[arg];
  return a->choices ? ladle__choice(ladle__arg_string(node, arg), a->choices, "INTERP_") : -1;
}

ladle_status ladle__op_fail(const ladle__node *node, ladle_status status, const char *fmt, ...) {
  char text[LADLE_ERROR_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  /* Python names unnamed instances "__<op>_<k>": not the user's names. */
  const char *op = node->def->schema.name;
  if (node->name && strncmp(node->name, "__", 2) != 0)
    return ladle__set_error(status, NULL, "%s: (instance \"%s\") %s", op, node->name, text);
  return ladle__set_error(status, NULL, "%s: %s", op, text);
}

int ladle__choice(const char *text, const char *const *choices, const char *prefix) {
  if (!text) return -1;
  size_t plen = prefix ? strlen(prefix) : 0;
  if (plen && strncasecmp(text, prefix, plen) == 0) text += plen;
  for (int i = 0; choices[i]; i++)
    if (strcasecmp(text, choices[i]) == 0) return i;
  return -1;
}

/* Per-sample list arguments of the geometry operators (geom_args.h). */
#include "ops/geometry/geom_args.h"

#include "core/batch.h"

static int batch_list(const ladle_batch *b, int slot, double *out, int max) {
  int64_t count = ladle__batch_sample_elems(b, slot);
  const void *p = ladle_batch_data(b, slot);
  for (int64_t i = 0; i < count && i < max; i++) {
    switch (b->dtype) {
      case LADLE_UINT8: out[i] = ((const uint8_t *)p)[i]; break;
      case LADLE_INT32: out[i] = ((const int32_t *)p)[i]; break;
      case LADLE_INT64: out[i] = (double)((const int64_t *)p)[i]; break;
      case LADLE_FLOAT32: out[i] = ((const float *)p)[i]; break;
      default: out[i] = 0; break; /* float16 sources are refused before run (ladle__check_arg_sources) */
    }
  }
  return count > 1000000 ? 1000000 : (int)count;
}

int ladle__arg_list(const ladle__node *n, const ladle__sample *s, int arg, double *out, int max) {
  const ladle__arg *a = &n->args[arg];
  if (a->source >= 0 && s) return batch_list(n->source_batches[a->source], s->slot, out, max);
  const ladle_value *v = &a->value;
  for (int i = 0; i < v->count && i < max; i++) {
    if (v->type == LADLE_ARG_FLOATS) out[i] = v->u.floats[i];
    else if (v->type == LADLE_ARG_INTS) out[i] = (double)v->u.ints[i];
    else if (v->type == LADLE_ARG_FLOAT) out[i] = v->u.f;
    else out[i] = (double)v->u.i;
  }
  return v->count;
}

int ladle__input_list(const ladle__node *n, const ladle__sample *s, int k, double *out, int max) {
  return batch_list(n->in_batches[k], s->slot, out, max);
}

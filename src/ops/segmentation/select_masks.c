/* segmentation.select_masks: the polygons (and their vertices) of the masks
 * whose ids a sample lists, in readers.coco's polygon format. */
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"

enum { ARG_REINDEX, ARG_COUNT };

static const ladle_arg_schema args[ARG_COUNT] = {
    [ARG_REINDEX] = {LADLE_BOOL_ARG("reindex_masks", 0),
        .doc = "Replace each output polygon's mask id by the position of that id in mask_ids."},
};

static ladle_status sm_init(ladle__node *n) {
  static const char *const names[] = {"mask_ids", "polygons", "vertices"};
  static const int ranks[] = {1, 2, 2};
  for (int k = 0; k < 3; k++)
    if (n->in[k].ndim != ranks[k])
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input %d (%s) must have %d dimension%s, not %d", k,
                           names[k], ranks[k], ranks[k] > 1 ? "s" : "", n->in[k].ndim);
  for (int k = 0; k < 2; k++)
    if (n->in[k].dtype != LADLE_INT32)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input %d (%s) must be int32, not %s", k, names[k],
                           ladle_dtype_name(n->in[k].dtype));
  n->out[0] = (ladle__out_desc){LADLE_INT32, 2, ""};
  n->out[1] = n->in[2];
  return LADLE_OK;
}

/* The output's polygon count and vertex count of sample s, checking the
 * inputs. Selected polygons keep all of a mask's polygons (DALI 2.4 keeps
 * only the last polygon of each mask id). */
static ladle_status sm_count(ladle__node *n, ladle__sample *s, int64_t *num_polys, int64_t *num_verts) {
  ladle__tensor ids = ladle__input(n, s, 0), polys = ladle__input(n, s, 1), verts = ladle__input(n, s, 2);
  const int32_t *id = ids.data, *p = polys.data;
  if (polys.shape[1] != 3)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "sample %d: polygons must have 3 columns (mask_id, start_vertex, end_vertex), not %lld",
                         s->slot, (long long)polys.shape[1]);
  for (int64_t i = 0; i < ids.shape[0]; i++)
    for (int64_t j = 0; j < i; j++)
      if (id[i] == id[j])
        return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "sample %d: mask_ids lists %d twice", s->slot, id[i]);
  *num_polys = *num_verts = 0;
  for (int64_t i = 0; i < ids.shape[0]; i++) {
    int found = 0;
    for (int64_t q = 0; q < polys.shape[0]; q++) {
      if (p[q * 3] != id[i]) continue;
      int32_t lo = p[q * 3 + 1], hi = p[q * 3 + 2];
      if (hi < lo)
        return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "sample %d: polygon %lld of mask %d ends (%d) before it "
                             "starts (%d)", s->slot, (long long)q, id[i], hi, lo);
      if (lo < 0 || hi > verts.shape[0])
        return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "sample %d: polygon %lld of mask %d has vertices [%d, "
                             "%d), outside the %lld vertices", s->slot, (long long)q, id[i], lo, hi,
                             (long long)verts.shape[0]);
      found = 1;
      (*num_polys)++;
      *num_verts += hi - lo;
    }
    if (!found)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "sample %d: mask id %d (mask_ids) is not in the polygons",
                           s->slot, id[i]);
  }
  return LADLE_OK;
}

static ladle_status sm_setup(ladle__node *n, ladle__sample *s) {
  int64_t np = 0, nv = 0;
  ladle_status st = sm_count(n, s, &np, &nv);
  if (st != LADLE_OK) return st;
  int64_t ps[2] = {np, 3}, vs[2] = {nv, ladle__input(n, s, 2).shape[1]};
  ladle__set_shape(n, s, 0, ps);
  ladle__set_shape(n, s, 1, vs);
  return LADLE_OK;
}

static ladle_status sm_run(ladle__node *n, ladle__sample *s) {
  ladle__tensor ids = ladle__input(n, s, 0), polys = ladle__input(n, s, 1), verts = ladle__input(n, s, 2);
  const int32_t *id = ids.data, *p = polys.data;
  int32_t *op = ladle__output(n, s, 0).data;
  uint8_t *ov = ladle__output(n, s, 1).data;
  size_t row = (size_t)verts.shape[1] * ladle_dtype_size(verts.dtype);
  int reindex = (int)ladle__arg_int(n, NULL, ARG_REINDEX);
  int32_t at = 0;
  for (int64_t i = 0; i < ids.shape[0]; i++)
    for (int64_t q = 0; q < polys.shape[0]; q++) {
      if (p[q * 3] != id[i]) continue;
      int32_t lo = p[q * 3 + 1], hi = p[q * 3 + 2];
      op[0] = reindex ? (int32_t)i : id[i];
      op[1] = at;
      op[2] = at + (hi - lo);
      op += 3;
      if (hi > lo) memcpy(ov + (size_t)at * row, (const uint8_t *)verts.data + (size_t)lo * row, (size_t)(hi - lo) * row);
      at += hi - lo;
    }
  return LADLE_OK;
}

const ladle__op_def ladle__op_segmentation_select_masks = {
    .schema = {.name = "segmentation.select_masks",
               .doc = "Selects the polygons of the masks listed in mask_ids (input 0, int32 1-D, no repeats; every id "
                      "must have a polygon) from polygons (input 1, int32 [N, 3]: mask_id, start_vertex, end_vertex) "
                      "and vertices (input 2, [M, D] of any type), as readers.coco gives them. Outputs the selected "
                      "polygons in mask_ids order (a mask's polygons in input order; their vertex ranges renumbered "
                      "into the output vertices) and their vertices. Unlike DALI 2.4, which keeps only the last "
                      "polygon of each mask, every polygon of a selected mask is kept.",
               .min_inputs = 3, .max_inputs = 3, .num_outputs = 2,
               .devices = LADLE_ON_CPU,
               .num_args = ARG_COUNT, .args = args},
    .init = sm_init,
    .setup = sm_setup,
    .run = sm_run,
};

/* Per-sample demand (demand.h). Each refresh is one backward sweep over the
 * nodes not yet run: a node's sample is needed when a consumer's sample is
 * and the consumer reads it there (a merge with a computed predicate reads
 * only the chosen input). Refreshed whenever another merge's predicate has
 * become available. */
#include <stdlib.h>
#include <string.h>

#include "pipeline/demand.h"

/* One stage's iteration (the host and device stages run different iterations). */
typedef struct stage_demand {
  unsigned char *need;  /* num_nodes * batch_size */
  int batch, from;      /* this iteration's batch size; where the last sweep started (-1: none yet) */
  ladle_batch **values; /* this iteration's value batches */
  /* num_nodes: for each merge, a copy of its node whose per-sample arguments
   * are this stage's iteration's, so that a sweep reads a merge's predicate
   * without touching the node, which the other stage may be running. */
  ladle__node *merges;
} stage_demand;

struct ladle__demand {
  unsigned char *force; /* num_nodes: computes every sample */
  int *merge_pred;      /* num_nodes: the last node producing a merge's arguments (its predicate), or -1 */
  unsigned char *is_pred; /* num_nodes: produces some merge's predicate */
  stage_demand stages[2];
};

/* A merge: reads one input per sample, chosen by per-sample arguments
 * (ops/op.h, selects_input). */
static int is_merge(const ladle__node *n) { return n->def->selects_input && n->num_sources > 0; }

ladle_status ladle__demand_init(ladle_pipeline *p) {
  ladle_status st = LADLE_OK;
  int merges = 0;
  for (int i = 0; i < p->num_nodes; i++) {
    merges += is_merge(p->nodes[i]);
    if (p->nodes[i]->deferred) return LADLE_OK; /* inits that run late could still need every sample */
  }
  if (!merges || getenv("LADLE_NO_DEMAND")) return LADLE_OK;
  struct ladle__demand *d = calloc(1, sizeof *d);
  LADLE_CHECK(d, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  p->demand = d;
  int n = p->num_nodes, slots = p->params.batch_size;
  for (int k = 0; k < 2; k++) {
    LADLE_ALLOC(d->stages[k].need, (size_t)n * (size_t)slots);
    LADLE_ALLOC(d->stages[k].merges, n);
    for (int i = 0; i < n; i++)
      if (is_merge(p->nodes[i])) d->stages[k].merges[i] = *p->nodes[i];
  }
  LADLE_ALLOC(d->force, n);
  LADLE_ALLOC(d->merge_pred, n);
  LADLE_ALLOC(d->is_pred, n);
  unsigned char *consumed = NULL;
  LADLE_ALLOC(consumed, n);
  for (int i = 0; i < n; i++) {
    const ladle__node *c = p->nodes[i];
    for (int k = 0; k < c->num_inputs; k++) consumed[p->values[c->inputs[k]].node] = 1;
    for (int k = 0; k < c->num_sources; k++) consumed[p->values[c->sources[k]].node] = 1;
  }
  for (int k = 0; k < p->num_outputs; k++) d->force[p->values[p->outputs[k]].node] = 1;
  for (int i = 0; i < n; i++) {
    const ladle__node *c = p->nodes[i];
    unsigned flags = c->def->schema.flags;
    d->force[i] |= !consumed[i] || c->all_samples || c->device != LADLE_ON_CPU || c->def->views_input || c->fused_into || c->fused_from ||
                   (flags & (LADLE_OP_READER | LADLE_OP_EXTERNAL | LADLE_OP_STATEFUL | LADLE_OP_CALLBACK));
    d->merge_pred[i] = -1;
    if (is_merge(c))
      for (int k = 0; k < c->num_sources; k++)
        if (p->values[c->sources[k]].node > d->merge_pred[i]) d->merge_pred[i] = p->values[c->sources[k]].node;
  }
  for (int i = 0; i < n; i++)
    if (d->merge_pred[i] >= 0) d->is_pred[d->merge_pred[i]] = 1;
  free(consumed);
done:
  return st;
}

void ladle__demand_fini(ladle_pipeline *p) {
  struct ladle__demand *d = p->demand;
  if (!d) return;
  for (int k = 0; k < 2; k++) {
    free(d->stages[k].need);
    free(d->stages[k].merges);
  }
  free(d->force);
  free(d->merge_pred);
  free(d->is_pred);
  free(d);
  p->demand = NULL;
}

void ladle__demand_begin(ladle_pipeline *p, int stage, int batch, ladle_batch **values) {
  if (!p->demand) return;
  stage_demand *sd = &p->demand->stages[stage];
  sd->batch = batch;
  sd->from = -1;
  sd->values = values;
}

/* Whether merge c (its arguments computed; the stage's copy) reads input value v for slot s. */
static int merge_reads(ladle__node *c, ladle_batch **values, int v, int s) {
  for (int k = 0; k < c->num_sources; k++) c->source_batches[k] = values[c->sources[k]];
  ladle__sample smp = {.slot = s};
  return c->inputs[c->def->selects_input(c, &smp)] == v;
}

/* Recomputes the rows of nodes from `from` on: each depends on its
 * consumers' rows only, so one stage's sweep from its first node gives the
 * rows a sweep from an earlier node would. */
static void sweep(ladle_pipeline *p, stage_demand *sd, int from) {
  struct ladle__demand *d = p->demand;
  int batch = sd->batch, slots = p->params.batch_size;
  for (int j = from; j < p->num_nodes; j++) {
    memset(sd->need + (size_t)j * slots, d->force[j], (size_t)batch);
  }
  for (int c = p->num_nodes - 1; c >= from; c--) {
    ladle__node *cn = p->nodes[c];
    const unsigned char *nc = sd->need + (size_t)c * slots;
    int known = d->merge_pred[c] >= 0 && d->merge_pred[c] < from;
    for (int k = 0; k < cn->num_inputs + cn->num_sources; k++) {
      int v = k < cn->num_inputs ? cn->inputs[k] : cn->sources[k - cn->num_inputs];
      int j = p->values[v].node;
      if (j < from || d->force[j]) continue;
      unsigned char *nj = sd->need + (size_t)j * slots;
      for (int s = 0; s < batch; s++)
        if (nc[s] && !nj[s]) nj[s] = !(known && k < cn->num_inputs) || merge_reads(&sd->merges[c], sd->values, v, s);
    }
  }
}

int ladle__demand_forced(const ladle_pipeline *p, int i) { return !p->demand || p->demand->force[i]; }

const unsigned char *ladle__demand_mask(ladle_pipeline *p, int stage, int i) {
  struct ladle__demand *d = p->demand;
  if (!d || d->force[i]) return NULL;
  stage_demand *sd = &d->stages[stage];
  /* Masks only shrink as predicates become known; resweep when one has since the last sweep. */
  int stale = sd->from < 0;
  for (int j = sd->from < 0 ? 0 : sd->from; j < i && !stale; j++) stale = d->is_pred[j];
  if (stale) {
    sweep(p, sd, i);
    sd->from = i;
  }
  const unsigned char *m = sd->need + (size_t)i * p->params.batch_size;
  for (int s = 0; s < sd->batch; s++)
    if (!m[s]) return m;
  return NULL;
}

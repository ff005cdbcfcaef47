/* Graph-level planning at build: decisions that need to see more than one
 * operator, all declared by the operators' schemas (ops/op.h), none naming
 * an operator:
 *  - fusion: a GPU node whose kernel accepts a per-pixel epilogue
 *    (LADLE_OP_ACCEPTS_EPILOGUE) and whose output's only reader is an
 *    epilogue it can apply (LADLE_OP_EPILOGUE: crop_mirror_normalize after
 *    resize) run as one kernel, which reads each input pixel once and writes
 *    the final tensor once, with the same bytes as the two kernels;
 *  - merging: an element-wise node (LADLE_OP_ELEMENTWISE) whose input is
 *    the output of another, on the same device, that nothing else reads and
 *    that is no pipeline output, takes it into its own pass (merge_producer):
 *    x * 0.5 + 1 is one loop on the CPU and one kernel on the GPU, with the
 *    bytes of the two; chains merge step by step, in graph order;
 *  - size hints: a node whose only reader makes a fixed-size output whatever
 *    its input's resolution (resize to a fixed size) may make its output
 *    smaller, down to that size (a random-crop decoder's reduced DCT scale,
 *    which skips most of the IDCT work for large crops), except for a node
 *    given a seed slot: it replays a separate call's output exactly. */
#include <stdlib.h>

#include "pipeline/pipeline.h"

static int is_output(const ladle_pipeline *p, int value) {
  for (int k = 0; k < p->num_outputs; k++)
    if (p->outputs[k] == value) return 1;
  return 0;
}

/* The one node reading `value` (as input or argument), or NULL when there
 * are none or several. */
static ladle__node *only_consumer(const ladle_pipeline *p, int value) {
  ladle__node *found = NULL;
  for (int i = 0; i < p->num_nodes; i++) {
    ladle__node *n = p->nodes[i];
    int uses = 0;
    for (int k = 0; k < n->num_inputs; k++) uses += n->inputs[k] == value;
    for (int k = 0; k < n->num_sources; k++) uses += n->sources[k] == value;
    if (uses && found) return NULL;
    if (uses) found = n;
  }
  return found;
}

static void plan_fusion(ladle_pipeline *p) {
  for (int i = 0; i < p->num_nodes; i++) {
    ladle__node *r = p->nodes[i];
    const ladle__op_def *rd = r->def;
    if (!(rd->schema.flags & LADLE_OP_ACCEPTS_EPILOGUE) || !rd->accepts_epilogue || !rd->run_batch_epilogue ||
        r->deferred || r->device != LADLE_ON_GPU || r->fused_from || is_output(p, r->first_output))
      continue;
    ladle__node *c = only_consumer(p, r->first_output);
    if (!c || !(c->def->schema.flags & LADLE_OP_EPILOGUE) || !c->def->epilogue_params || c->device != LADLE_ON_GPU ||
        c->inputs[0] != r->first_output || !rd->accepts_epilogue(r, c))
      continue;
    r->fused_into = c;
    c->fused_from = r;
  }
}

static void plan_merges(ladle_pipeline *p) {
  for (int i = 0; i < p->num_nodes; i++) {
    ladle__node *c = p->nodes[i];
    if (!(c->def->schema.flags & LADLE_OP_ELEMENTWISE) || !c->def->merge_producer || c->deferred) continue;
    for (int k = 0; k < c->num_inputs; k++) {
      int v = c->inputs[k];
      ladle__node *r = p->nodes[p->values[v].node];
      int as_source = 0;
      for (int j = 0; j < c->num_sources; j++) as_source |= c->sources[j] == v;
      if (!(r->def->schema.flags & LADLE_OP_ELEMENTWISE) || r->deferred || r->device != c->device ||
          r->num_outputs != 1 || r->fused_into || r->fused_from || as_source || is_output(p, v) ||
          only_consumer(p, v) != c || !c->def->merge_producer(c, k, r))
        continue;
      r->fused_into = c;
      r->merged = 1;
    }
  }
}

static void plan_sizes(ladle_pipeline *p) {
  for (int i = 0; i < p->num_nodes; i++) {
    ladle__node *n = p->nodes[i];
    /* A node replaying a separate call (ladle_pipeline_set_node_seed) makes what that call makes. */
    if (!n->def->allow_smaller_output || is_output(p, n->first_output) || n->seed_slot >= 0) continue;
    ladle__node *consumer = only_consumer(p, n->first_output);
    int w = 0, h = 0;
    if (!consumer || !consumer->def->fixed_output_size || !consumer->def->fixed_output_size(consumer, &w, &h))
      continue;
    n->def->allow_smaller_output(n, w, h);
  }
}

void ladle__plan_graph(ladle_pipeline *p) {
  for (int i = 0; i < p->num_nodes; i++) { /* a build tried again has run every init again */
    p->nodes[i]->fused_into = p->nodes[i]->fused_from = NULL;
    p->nodes[i]->merged = 0;
  }
  if (!getenv("LADLE_NO_FUSION")) {
    plan_fusion(p);
    plan_merges(p);
  }
  plan_sizes(p);
}

/* Graph-level planning at build: decisions that need to see more than one
 * operator. Today one: a random-crop decoder whose only consumer is a resize
 * to a fixed size may decode at a reduced DCT scale (never below the resize's
 * output), which skips most of the IDCT work for large crops. */
#include "ops/decoders.h"
#include "pipeline/plan.h"

extern const ladle__op_def ladle__op_resize;

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

void ladle__plan_graph(ladle_pipeline *p) {
  for (int i = 0; i < p->num_nodes; i++) {
    ladle__node *dec = p->nodes[i];
    if (dec->def != &ladle__op_decoders_image_random_crop || is_output(p, dec->first_output)) continue;
    ladle__node *consumer = only_consumer(p, dec->first_output);
    int w = 0, h = 0;
    if (!consumer || consumer->def != &ladle__op_resize || !ladle__resize_fixed_size(consumer, &w, &h)) continue;
    ladle__decoder_state *d = dec->state;
    d->min_width = w;
    d->min_height = h;
  }
}

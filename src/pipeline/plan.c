/* Graph-level planning at build: decisions that need to see more than one
 * operator. Today one: a random-crop decoder whose only consumer is a resize
 * to a fixed size may decode at a reduced DCT scale (never below the resize's
 * output), which skips most of the IDCT work for large crops. */
#include <stdlib.h>

#include "ops/geometry/resize.h"
#include "ops/image/decoders.h"
#include "pipeline/pipeline.h"

extern const ladle__op_def ladle__op_resize;
extern const ladle__op_def ladle__op_random_resized_crop;
extern const ladle__op_def ladle__op_crop_mirror_normalize;

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

/* On the GPU, resize (or random_resized_crop) of uint8 images followed by
 * crop_mirror_normalize, the resize's output read by nothing else, becomes
 * one kernel that reads each decoded pixel once and writes the final tensor
 * once. The result is the same bytes: the fused kernel rounds the resized
 * pixels to uint8 exactly where the resize would have stored them. */
static void plan_fusion(ladle_pipeline *p) {
  for (int i = 0; i < p->num_nodes; i++) {
    ladle__node *r = p->nodes[i];
    int resizes = r->def == &ladle__op_resize || r->def == &ladle__op_random_resized_crop;
    if (!resizes || r->device != LADLE_ON_GPU || r->in[0].dtype != LADLE_UINT8 || is_output(p, r->first_output))
      continue;
    ladle__node *c = only_consumer(p, r->first_output);
    if (!c || c->def != &ladle__op_crop_mirror_normalize || c->device != LADLE_ON_GPU || c->inputs[0] != r->first_output)
      continue;
    r->fused_into = c;
    c->fused_from = r;
  }
}

void ladle__plan_graph(ladle_pipeline *p) {
  if (!getenv("LADLE_NO_FUSION")) plan_fusion(p);
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

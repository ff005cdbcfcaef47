/* Checks the bbox operators share. */
#ifndef LADLE_OPS_BBOX_BBOX_COMMON_H
#define LADLE_OPS_BBOX_BBOX_COMMON_H

#include <math.h>

#include "ops/op.h"

/* Input k of node n must be float32 of 2 dimensions (`what`: "boxes [N, 4]"). */
ladle_status ladle__bbox_input_init(ladle__node *n, int k, const char *what);

/* Sample s's input k must be [N, 4] boxes, each ordered: ltrb right >= left
 * and bottom >= top, or xywh w, h >= 0 (finite). Boxes in device memory are
 * checked for their shape only. */
ladle_status ladle__bbox_check(ladle__node *n, ladle__sample *s, int k, int ltrb);

#endif

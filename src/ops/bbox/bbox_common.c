/* Checks the bbox operators share (bbox_common.h). */
#include "ops/bbox/bbox_common.h"

ladle_status ladle__bbox_input_init(ladle__node *n, int k, const char *what) {
  if (n->in[k].dtype != LADLE_FLOAT32 || n->in[k].ndim != 2)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input %d must be float32 %s of 2 dimensions, got %s of %d",
                         k, what, ladle_dtype_name(n->in[k].dtype), n->in[k].ndim);
  return LADLE_OK;
}

ladle_status ladle__bbox_check(ladle__node *n, ladle__sample *s, int k, int ltrb) {
  ladle__tensor in = ladle__input(n, s, k);
  if (in.shape[1] != 4)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input %d (boxes) must be [N, 4], got [%lld, %lld]", k,
                         (long long)in.shape[0], (long long)in.shape[1]);
  if (n->device != LADLE_ON_CPU) return LADLE_OK;
  const float *b = in.data;
  for (int64_t i = 0; i < in.shape[0]; i++, b += 4) {
    float w = ltrb ? b[2] - b[0] : b[2], h = ltrb ? b[3] - b[1] : b[3];
    if (!(w >= 0 && h >= 0 && w < INFINITY && h < INFINITY && b[0] == b[0] && b[1] == b[1]))
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                           "box %lld of sample %d%s%s is [%g, %g, %g, %g]: with ltrb=%s it needs %s", (long long)i,
                           s->slot, s->name ? " " : "", s->name ? s->name : "", b[0], b[1], b[2], b[3],
                           ltrb ? "True" : "False", ltrb ? "right >= left and bottom >= top" : "w >= 0 and h >= 0");
  }
  return LADLE_OK;
}

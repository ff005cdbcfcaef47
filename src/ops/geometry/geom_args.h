/* Reading list arguments that may be per-sample (a node's sample of any
 * number type, e.g. a transforms.* matrix) or constants, for the geometry
 * operators. */
#ifndef LADLE_OPS_GEOMETRY_GEOM_ARGS_H
#define LADLE_OPS_GEOMETRY_GEOM_ARGS_H

#include "ops/op.h"

/* The values of argument `arg` for sample s (NULL: the constant), at most
 * `max` written to out; returns how many there are (may exceed max), 0 when
 * the argument was not given and has no default. */
int ladle__arg_list(const ladle__node *n, const ladle__sample *s, int arg, double *out, int max);

/* The same for a sample of input k (a host batch of numbers). */
int ladle__input_list(const ladle__node *n, const ladle__sample *s, int k, double *out, int max);

#endif

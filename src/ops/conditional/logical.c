/* The operands of `and`, `or` and `not` on DataNodes (enable_conditionals):
 * DALI restricts them to scalars (0-d samples) in host memory, and `and`/`or`
 * to bool ones, so that the result is always a scalar bool usable as an `if`
 * condition. validate_logical checks an operand and passes it on (a view);
 * not_ computes the negation. The checks run when the graph is built, or at
 * the first iteration for operands computed from a Python function. */
#include <string.h>

#include "ops/geometry/normalize_kernel.h"
#include "ops/op.h"

enum { ARG_EXPRESSION_NAME, ARG_EXPRESSION_SIDE, ARG_COUNT };

static const ladle_arg_schema validate_args[ARG_COUNT] = {
    [ARG_EXPRESSION_NAME] = {LADLE_REQUIRED_ARG("expression_name", LADLE_ARG_STRING), LADLE_CHOICES("and", "or"),
                             .doc = "The expression the operand belongs to, for the message."},
    [ARG_EXPRESSION_SIDE] = {LADLE_REQUIRED_ARG("expression_side", LADLE_ARG_STRING),
                             LADLE_CHOICES("left", "right"), .doc = "Which operand it is, for the message."},
};

#define LOGICAL_HINT                                                                                             \
  " This input restriction allows the logical expressions to always return scalar boolean outputs and to be "    \
  "used in unambiguous way in conditionals (`if` statements): set the `dtype` of an operator to types.BOOL or "  \
  "use a comparison, which always gives booleans."

static ladle_status validate_init(ladle__node *n) {
  const char *expr = ladle__arg_string(n, ARG_EXPRESSION_NAME), *side = ladle__arg_string(n, ARG_EXPRESSION_SIDE);
  if (n->in[0].dtype != LADLE_BOOL)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "Logical expression `%s` is restricted to scalar (0-d tensors) inputs of `bool` type, that "
                         "are placed on CPU. Got an input of type `%s` as the %s argument in logical expression." LOGICAL_HINT,
                         expr, ladle_dtype_name(n->in[0].dtype), side);
  if (n->in[0].ndim != 0)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "Logical expression `%s` is restricted to scalar (0-d tensors) inputs of `bool` type, that "
                         "are placed on CPU. Got a %d-d input as the %s argument in logical expression." LOGICAL_HINT,
                         expr, n->in[0].ndim, side);
  n->out[0] = n->in[0];
  return LADLE_OK;
}

static ladle_status scalar_setup(ladle__node *n, ladle__sample *s) {
  ladle__set_shape(n, s, 0, ladle__input(n, s, 0).shape);
  return LADLE_OK;
}

static ladle_status not_init(ladle__node *n) {
  if (n->in[0].ndim != 0)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                         "Logical expression `not` is restricted to scalar (0-d tensors) inputs, that are placed on "
                         "CPU. Got a %d-d input in logical expression." LOGICAL_HINT,
                         n->in[0].ndim);
  n->out[0] = (ladle__out_desc){.dtype = LADLE_BOOL, .ndim = 0};
  return LADLE_OK;
}

static ladle_status not_run(ladle__node *n, ladle__sample *s) {
  ladle__tensor in = ladle__input(n, s, 0), out = ladle__output(n, s, 0);
  double x = 0;
  ladle__convert(&x, LADLE_FLOAT64, in.data, in.dtype, 1);
  *(uint8_t *)out.data = x == 0;
  return LADLE_OK;
}

const ladle__op_def ladle__op_conditional_validate_logical = {
    .schema = {.name = "_conditional.validate_logical",
               .doc = "Checks an operand of `and`/`or` on DataNodes (a bool scalar on the cpu) and passes it on "
                      "(made by enable_conditionals=True; not called directly).",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1, .devices = LADLE_ON_CPU,
               .num_args = ARG_COUNT, .args = validate_args},
    .init = validate_init,
    .setup = scalar_setup,
    .views_input = 1,
};

const ladle__op_def ladle__op_conditional_not = {
    .schema = {.name = "_conditional.not_",
               .doc = "`not` of a DataNode: a bool scalar, true where the input scalar is zero (made by "
                      "enable_conditionals=True; not called directly).",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1, .devices = LADLE_ON_CPU},
    .init = not_init,
    .setup = scalar_setup,
    .run = not_run,
};

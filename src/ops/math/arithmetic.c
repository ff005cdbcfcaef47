/* math.arithmetic: DALI's arithmetic expressions (DataNode operators and
 * nvidia.dali.math) as one element-wise operator: `op` names the operation,
 * `operands` says where each operand comes from (an input or a constant),
 * and the rules of math_scalar.h compute it. Shapes broadcast as in NumPy
 * (DALI 2.4 does the same): a per-sample scalar ([] or [1]) against any
 * tensor, [3, 1] against [1, 4], and so on.
 *
 * A node whose input is the output of another math.arithmetic node that
 * nothing else reads takes that node's operation into its own program
 * (arithmetic_merge, called by pipeline/plan.c): the chain runs as one loop
 * on the CPU, one kernel on the GPU, with the unfused chain's bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/math/math_op.h"
#include "ops/math/math_scalar.h"
#include "ops/op.h"

enum { ARG_OP, ARG_OPERANDS, ARG_INTEGER_CONSTANTS, ARG_REAL_CONSTANTS };

#define MATH_NAME(e, name, arity, rule) name,
#define MATH_ARITY(e, name, arity, rule) arity,
#define MATH_RULE(e, name, arity, rule) RULE_##rule,
enum { RULE_SAME, RULE_INT, RULE_FLOAT, RULE_CMP };
static const int op_arity[] = {LADLE_MATH_OPS(MATH_ARITY)};
static const int op_rule[] = {LADLE_MATH_OPS(MATH_RULE)};
static const char *const op_names[] = {LADLE_MATH_OPS(MATH_NAME) NULL};

static const ladle_arg_schema arithmetic_args[] = {
    {LADLE_REQUIRED_ARG("op", LADLE_ARG_STRING), .choices = op_names,
     .doc = "The operation (DALI's names): add sub mul div (//: integer division truncates toward 0, on floats "
            "it divides) fdiv (/: ints give float32) mod (C's %, fmod on floats) pow (ints: integer power) fpow "
            "(float power) min max atan2 clamp (3 operands: value, lo, hi) eq neq lt leq gt geq (boolean "
            "result) bitand bitor bitxor lshift rshift bitnot (integers only) plus minus abs fabs floor ceil sqrt "
            "rsqrt cbrt exp log log2 log10 sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh "
            "(integers give float32). The result type is the operands' promoted type (DALI's rules)."},
    {LADLE_OPTIONAL_ARG("operands", LADLE_ARG_STRINGS),
     .doc = "Where each operand comes from, in order: \"&k\" is input k, \"$j:type\" is integer_constants[j] (an "
            "integer type or bool) or real_constants[j] (a float type) as that type, e.g. [\"&0\", \"$0:int32\"]. "
            "Default: the inputs in order."},
    {LADLE_OPTIONAL_ARG("integer_constants", LADLE_ARG_INTS), .doc = "The integer constants operands name."},
    {LADLE_OPTIONAL_ARG("real_constants", LADLE_ARG_FLOATS), .doc = "The float constants operands name."},
};

/* --- element types: what the type rules need to know ------------------------ */

static int is_float(int t) { return t == LADLE_FLOAT16 || t == LADLE_FLOAT32; }
static int is_signed(int t) { return t != LADLE_UINT8 && t != LADLE_BOOL; }
static int bits(int t) { return (int)ladle_dtype_size((ladle_dtype)t) * 8; }

/* DALI's promotion of two types: a float wins over an integer, the wider of
 * two floats or two integers of one signedness wins, and a signed/unsigned
 * pair gives the signed type when it is wider, else the signed type of twice
 * the unsigned one's width (uint8 + int8 -> int16 once those types exist). */
static int promote(int a, int b) {
  if (a == b) return a;
  if (a == LADLE_BOOL || b == LADLE_BOOL) return a == LADLE_BOOL ? b : a; /* bool joins any type as that type */
  if (is_float(a) != is_float(b)) return is_float(a) ? a : b;
  if (is_float(a) || is_signed(a) == is_signed(b)) return bits(a) >= bits(b) ? a : b;
  int s = is_signed(a) ? a : b, u = is_signed(a) ? b : a;
  if (bits(s) > bits(u)) return s;
  return bits(u) >= 32 ? LADLE_INT64 : LADLE_INT32;
}

/* --- build ----------------------------------------------------------------- */

/* A tensor operand of the program: input `input` of `node` (this node, or
 * one merged into it, whose inputs the executor has set by the time this
 * node runs), the pipeline's value `value`. */
typedef struct arith_leaf {
  const ladle__node *node;
  int input, value;
} arith_leaf;

typedef struct arith_state {
  ladle__math_expr e;
  int input_of[LADLE_MATH_MAX_OPERANDS]; /* the input operand k reads, or -1 for a constant */
  ladle__math_prog prog;                 /* e, after the operations merged into this node */
  arith_leaf leaf[LADLE_MATH_MAX_LEAVES];
} arith_state;

static int dtype_by_name(const char *name) {
  for (int t = 0; t < LADLE_DTYPE_COUNT; t++)
    if (strcmp(name, ladle_dtype_name((ladle_dtype)t)) == 0) return t;
  return -1;
}

/* Operand k from its description ("&0", "$1:float32"). */
static ladle_status parse_operand(ladle__node *n, arith_state *st, int k, const char *text) {
  const char *op = op_names[st->e.op];
  int idx = -1, used = 0;
  char type[16] = "";
  if (sscanf(text, "&%d%n", &idx, &used) == 1 && text[used] == '\0') {
    if (idx < 0 || idx >= n->num_inputs)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'operands': \"%s\" names input %d, but '%s' "
                           "has %d input(s)", text, idx, op, n->num_inputs);
    st->input_of[k] = idx;
    st->e.in_dtype[k] = n->in[idx].dtype;
    return LADLE_OK;
  }
  if (!(sscanf(text, "$%d:%15[a-z0-9]%n", &idx, type, &used) == 2 && text[used] == '\0' && idx >= 0))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'operands': cannot read \"%s\"; expected \"&k\" "
                         "(input k) or \"$j:type\" (constant j as that type, e.g. \"$0:int32\")", text);
  int t = dtype_by_name(type);
  if (t < 0 || ladle__math_class_of(t) < 0)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'operands': \"%s\": unknown type '%s'", text, type);
  const ladle_value *list = ladle__arg_value(n, is_float(t) ? ARG_REAL_CONSTANTS : ARG_INTEGER_CONSTANTS);
  if (idx >= list->count)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'operands': \"%s\" names %s constant %d, but "
                         "%d were given", text, is_float(t) ? "real" : "integer", idx, list->count);
  st->input_of[k] = -1;
  st->e.in_dtype[k] = t;
  st->e.is_constant[k] = 1;
  /* The constant as one element of its type: what a kernel's load reads. */
  void *dst = &st->e.constant[k];
  if (is_float(t)) {
    float f = (float)list->u.floats[idx];
    if (t == LADLE_FLOAT16) {
      uint16_t h = ladle__f32_to_f16(f);
      memcpy(dst, &h, sizeof h);
    } else {
      memcpy(dst, &f, sizeof f);
    }
  } else {
    ladle__math_store_int(dst, 0, t, list->u.ints[idx]);
  }
  return LADLE_OK;
}

static ladle_status arithmetic_init(ladle__node *n) {
  arith_state *st = calloc(1, sizeof *st);
  if (!st) return LADLE_OP_FAIL(n, LADLE_ERROR_OUT_OF_MEMORY, "out of memory");
  n->state = st;
  ladle__math_expr *e = &st->e;
  e->op = ladle__arg_choice(n, ARG_OP);
  e->arity = op_arity[e->op];
  const char *op = op_names[e->op];
  const ladle_value *operands = ladle__arg_value(n, ARG_OPERANDS);
  int count = ladle__arg_given(n, ARG_OPERANDS) ? operands->count : n->num_inputs;
  if (count != e->arity)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "'%s' takes %d operand(s), got %d", op, e->arity, count);
  int used[LADLE_MAX_INPUTS] = {0};
  for (int k = 0; k < count; k++) {
    if (ladle__arg_given(n, ARG_OPERANDS)) {
      LADLE_MATH_PASS(parse_operand(n, st, k, operands->u.strings[k]));
    } else {
      st->input_of[k] = k;
      e->in_dtype[k] = n->in[k].dtype;
    }
    if (st->input_of[k] >= 0) used[st->input_of[k]] = 1;
    if (ladle__math_class_of(e->in_dtype[k]) < 0)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "'%s': operand %d has type %s, which arithmetic does not "
                           "support", op, k, ladle_dtype_name((ladle_dtype)e->in_dtype[k]));
  }
  for (int i = 0; i < n->num_inputs; i++)
    if (!used[i]) return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "argument 'operands': input %d is not used", i);
  int type = e->in_dtype[0];
  for (int k = 1; k < count; k++) type = promote(type, e->in_dtype[k]);
  int rule = op_rule[e->op];
  if (rule == RULE_INT && is_float(type))
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "'%s' takes integers; the operands' type is %s", op,
                         ladle_dtype_name((ladle_dtype)type));
  if (rule == RULE_FLOAT && !is_float(type)) type = LADLE_FLOAT32;
  e->cls = ladle__math_class_of(type);
  e->out_dtype = rule == RULE_CMP ? LADLE_BOOL : type; /* DALI's: comparisons give bool */
  /* The program of e alone: one leaf per distinct input. */
  st->prog = (ladle__math_prog){.num_steps = 1, .step = {{.e = *e}}};
  for (int i = 0; i < n->num_inputs; i++) {
    int j = 0;
    while (j < st->prog.num_leaves && st->leaf[j].value != n->inputs[i]) j++;
    if (j == st->prog.num_leaves) st->leaf[st->prog.num_leaves++] = (arith_leaf){n, i, n->inputs[i]};
    for (int k = 0; k < count; k++)
      if (st->input_of[k] == i) st->prog.step[0].ref[k] = j;
  }
  /* The output has the largest rank of the inputs, and the layout of the
   * first input of that rank that has one. */
  n->out[0] = (ladle__out_desc){.dtype = (ladle_dtype)e->out_dtype};
  for (int i = 0; i < n->num_inputs; i++)
    if (n->in[i].ndim > n->out[0].ndim) n->out[0].ndim = n->in[i].ndim;
  for (int i = 0; i < n->num_inputs && !n->out[0].layout[0]; i++)
    if (n->in[i].ndim == n->out[0].ndim) memcpy(n->out[0].layout, n->in[i].layout, sizeof n->out[0].layout);
  return LADLE_OK;
}

static void arithmetic_fini(ladle__node *n) { free(n->state); }

/* --- per sample ------------------------------------------------------------- */

static void shape_text(char *buf, size_t size, const int64_t *shape, int ndim) {
  size_t at = (size_t)snprintf(buf, size, "[");
  for (int d = 0; d < ndim && at < size; d++)
    at += (size_t)snprintf(buf + at, size - at, d ? ", %lld" : "%lld", (long long)shape[d]);
  if (at < size) snprintf(buf + at, size - at, "]");
}

/* The broadcast shape of the sample's inputs (rank out[0].ndim, the inputs
 * right-aligned), or an error naming the two shapes that clash. */
static ladle_status broadcast_shape(ladle__node *n, const int64_t *const *shapes, const int *ndims, int64_t *out) {
  const int nd = n->out[0].ndim;
  for (int d = 0; d < nd; d++) out[d] = 1;
  int from[LADLE_MAX_NDIM] = {0};
  for (int i = 0; i < n->num_inputs; i++) {
    for (int d = 0; d < ndims[i]; d++) {
      int64_t x = shapes[i][d];
      int od = nd - ndims[i] + d;
      if (x == out[od] || x == 1) continue;
      if (out[od] != 1) {
        char a[96], b[96];
        shape_text(a, sizeof a, shapes[from[od]], ndims[from[od]]);
        shape_text(b, sizeof b, shapes[i], ndims[i]);
        return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "'%s': input shapes %s and %s cannot be broadcast "
                             "together", op_names[((arith_state *)n->state)->e.op], a, b);
      }
      out[od] = x;
      from[od] = i;
    }
  }
  return LADLE_OK;
}

/* The kernel's descriptor of sample `slot`: data pointers, the output's
 * shape (setup's) and every leaf's strides (0 along broadcast dimensions).
 * Leaves of merged nodes broadcast against the output directly: a leaf's
 * extent is 1 or its node's output extent, which is 1 or this one's. */
static ladle_status describe(ladle__node *n, int slot, ladle__math_sample *d) {
  const arith_state *st = n->state;
  const ladle_batch *out = n->out_batches[0];
  memset(d, 0, sizeof *d);
  d->ndim = out->ndim;
  memcpy(d->shape, out->shapes + (size_t)slot * out->ndim, sizeof(int64_t) * (size_t)out->ndim);
  d->out = ladle_batch_data(n->out_batches[0], slot);
  for (int k = 0; k < st->prog.num_leaves; k++) {
    ladle_batch *in = st->leaf[k].node->in_batches[st->leaf[k].input];
    const int64_t *shape = in->shapes + (size_t)slot * in->ndim;
    d->in[k] = ladle_batch_data(in, slot);
    int64_t stride = 1;
    for (int dd = in->ndim - 1; dd >= 0; dd--) {
      d->strides[k][d->ndim - in->ndim + dd] = shape[dd] == 1 ? 0 : stride;
      stride *= shape[dd];
    }
  }
  ladle__math_collapse(d, st->prog.num_leaves);
  return LADLE_OK;
}

static ladle_status arithmetic_setup(ladle__node *n, ladle__sample *s) {
  int64_t shape[LADLE_MAX_NDIM];
  const int64_t *shapes[LADLE_MAX_INPUTS];
  int ndims[LADLE_MAX_INPUTS];
  for (int i = 0; i < n->num_inputs; i++) {
    shapes[i] = n->in_batches[i]->shapes + (size_t)s->slot * n->in_batches[i]->ndim;
    ndims[i] = n->in_batches[i]->ndim;
  }
  LADLE_MATH_PASS(broadcast_shape(n, shapes, ndims, shape));
  ladle__set_shape(n, s, 0, shape);
  return LADLE_OK;
}

static ladle_status arithmetic_run(ladle__node *n, ladle__sample *s) {
  const arith_state *st = n->state;
  ladle__math_sample d;
  LADLE_MATH_PASS(describe(n, s->slot, &d));
  int failed = ladle__math_run_prog(&st->prog, &d);
  if (failed)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "'%s': integer division by zero%s%s",
                         op_names[st->prog.step[failed - 1].e.op], s->name ? " in sample " : "", s->name ? s->name : "");
  return LADLE_OK;
}

/* Leaf `l` in table `leaf` of *count: its index, added unless a leaf reads
 * the same value; -1 when the table is full. */
static int add_leaf(arith_leaf *leaf, int *count, arith_leaf l) {
  for (int j = 0; j < *count; j++)
    if (leaf[j].value == l.value) return j;
  if (*count == LADLE_MATH_MAX_LEAVES) return -1;
  leaf[*count] = l;
  return (*count)++;
}

/* The op_def's merge_producer: `producer`'s program, then this node's, which
 * reads producer's result (its input `input`) from the register of its last
 * step instead of memory. */
static int arithmetic_merge(ladle__node *n, int input, const ladle__node *producer) {
  if (producer->def != n->def) return 0;
  arith_state *c = n->state;
  const arith_state *r = producer->state;
  const int rs = r->prog.num_steps, value = n->inputs[input];
  if (rs + c->prog.num_steps > LADLE_MATH_MAX_STEPS) return 0;
  ladle__math_prog p = {.num_steps = rs + c->prog.num_steps};
  arith_leaf leaf[LADLE_MATH_MAX_LEAVES];
  int map_r[LADLE_MATH_MAX_LEAVES], map_c[LADLE_MATH_MAX_LEAVES]; /* old leaf -> new operand ref */
  for (int j = 0; j < r->prog.num_leaves; j++)
    if ((map_r[j] = add_leaf(leaf, &p.num_leaves, r->leaf[j])) < 0) return 0;
  for (int j = 0; j < c->prog.num_leaves; j++) {
    if (c->leaf[j].value == value)
      map_c[j] = -rs; /* the register of step rs - 1 */
    else if ((map_c[j] = add_leaf(leaf, &p.num_leaves, c->leaf[j])) < 0)
      return 0;
  }
  for (int t = 0; t < p.num_steps; t++) {
    const int mine = t >= rs;
    const ladle__math_step *from = mine ? &c->prog.step[t - rs] : &r->prog.step[t];
    p.step[t] = *from;
    for (int k = 0; k < from->e.arity; k++) {
      int ref = from->ref[k];
      if (from->e.is_constant[k]) continue;
      p.step[t].ref[k] = ref >= 0 ? (mine ? map_c : map_r)[ref] : mine ? ref - rs : ref;
    }
  }
  c->prog = p;
  memcpy(c->leaf, leaf, sizeof leaf);
  return 1;
}

#ifdef LADLE_HAVE_CUDA
static ladle_status arithmetic_run_batch(ladle__node *n, ladle__gpu *g) {
  return ladle__math_run_batch(n, g, &((const arith_state *)n->state)->prog, describe);
}
#define ARITHMETIC_RUN_BATCH arithmetic_run_batch
#else
#define ARITHMETIC_RUN_BATCH NULL
#endif

const ladle__op_def ladle__op_math_arithmetic = {
    .schema = {.name = "math.arithmetic",
               .doc = "Element-wise arithmetic (DALI's arithmetic expressions: the DataNode operators + - * / // "
                      "% ** == != < <= > >= & | ^ << >> ~ and ladle.math's functions call it). Inputs broadcast "
                      "against each other as in NumPy; constants are scalars.",
               .min_inputs = 1, .max_inputs = LADLE_MATH_MAX_OPERANDS, .num_outputs = 1,
               .devices = LADLE_ON_CPU_GPU, .flags = LADLE_OP_ELEMENTWISE,
               .num_args = 4, .args = arithmetic_args},
    .init = arithmetic_init,
    .fini = arithmetic_fini,
    .setup = arithmetic_setup,
    .run = arithmetic_run,
    .run_batch = ARITHMETIC_RUN_BATCH,
    .merge_producer = arithmetic_merge,
};

/* The CPU side of the element-wise kernel (math_kernel.h). */
#include "ops/math/math_kernel.h"

#include "ops/math/math_scalar.h"

int64_t ladle__math_count(const ladle__math_sample *s) {
  int64_t n = 1;
  for (int d = 0; d < s->ndim; d++) n *= s->shape[d];
  return n;
}

void ladle__math_collapse(ladle__math_sample *s, int arity) {
  int nd = 0;
  for (int d = 0; d < s->ndim; d++) {
    if (s->shape[d] == 1) continue; /* its index is always 0 */
    int merge = nd > 0;
    for (int k = 0; merge && k < arity; k++)
      merge = s->strides[k][nd - 1] == s->strides[k][d] * s->shape[d];
    if (merge) {
      s->shape[nd - 1] *= s->shape[d];
      for (int k = 0; k < arity; k++) s->strides[k][nd - 1] = s->strides[k][d];
    } else {
      s->shape[nd] = s->shape[d];
      for (int k = 0; k < arity; k++) s->strides[k][nd] = s->strides[k][d];
      nd++;
    }
  }
  if (s->ndim > 0 && ladle__math_count(s) == 0) {
    s->shape[0] = 0;
    nd = 1;
  }
  s->ndim = nd;
}

int ladle__math_run(const ladle__math_expr *e, const ladle__math_sample *s) {
  const int arity = e->arity, nd = s->ndim;
  const int64_t count = ladle__math_count(s);
  const int checks_zero = e->cls != LADLE_MATH_F32 && (e->op == LADLE_MATH_DIV || e->op == LADLE_MATH_MOD);
  /* The innermost dimension is a plain loop; an odometer walks the others. */
  const int64_t inner = nd > 0 ? s->shape[nd - 1] : 1;
  int64_t step[LADLE_MATH_MAX_OPERANDS] = {0, 0, 0}, idx[LADLE_MAX_NDIM] = {0};
  int64_t base[LADLE_MATH_MAX_OPERANDS] = {0, 0, 0};
  const void *in[LADLE_MATH_MAX_OPERANDS];
  for (int k = 0; k < arity; k++) {
    step[k] = nd > 0 && !e->is_constant[k] ? s->strides[k][nd - 1] : 0;
    in[k] = e->is_constant[k] ? (const void *)&e->constant[k] : s->in[k];
  }
  for (int64_t o = 0; o < count; o += inner) {
    for (int64_t j = 0; j < inner; j++) {
      int64_t off[LADLE_MATH_MAX_OPERANDS];
      for (int k = 0; k < arity; k++) off[k] = base[k] + j * step[k];
      if (checks_zero && ladle__math_load_int(in[1], off[1], e->in_dtype[1]) == 0) return 1;
      ladle__math_element(e->op, e->cls, arity, s->out, o + j, e->out_dtype, in, e->in_dtype, off);
    }
    for (int d = nd - 2; d >= 0; d--) { /* next row */
      for (int k = 0; k < arity; k++) base[k] += e->is_constant[k] ? 0 : s->strides[k][d];
      if (++idx[d] < s->shape[d]) break;
      for (int k = 0; k < arity; k++) base[k] -= e->is_constant[k] ? 0 : s->strides[k][d] * s->shape[d];
      idx[d] = 0;
    }
  }
  return 0;
}

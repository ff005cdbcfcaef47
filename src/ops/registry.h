/* The list of every operator compiled into ladle. */
#ifndef LADLE_OPS_REGISTRY_H
#define LADLE_OPS_REGISTRY_H

#include "ops/op.h"

const ladle__op_def *ladle__op_def_find(const char *name);

#endif

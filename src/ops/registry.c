/* The registry: every operator compiled into ladle, gathered from the
 * families' lists (ops/families.inc), and DALI's deprecated names for them.
 * Python picks everything up from the schemas. */
#include "ops/registry.h"

#include <string.h>

#define LADLE_OP(sym) extern const ladle__op_def ladle__op_##sym;
#include "ops/families.inc"
#undef LADLE_OP

static const ladle__op_def *const registry[] = {
#define LADLE_OP(sym) &ladle__op_##sym,
#include "ops/families.inc"
#undef LADLE_OP
};

#define REGISTRY_SIZE ((int)(sizeof registry / sizeof registry[0]))

/* DALI's old names (still accepted by DALI 2.4, with a DeprecationWarning). */
static const struct {
  const char *alias, *target;
} aliases[] = {
    {"image_decoder", "decoders.image"},
    {"image_decoder_random_crop", "decoders.image_random_crop"},
    {"image_decoder_crop", "decoders.image_crop"},
    {"image_decoder_slice", "decoders.image_slice"},
    {"file_reader", "readers.file"},
    {"coco_reader", "readers.coco"},
    {"numpy_reader", "readers.numpy"},
    {"tfrecord_reader", "readers.tfrecord"},
    {"coin_flip", "random.coin_flip"},
    {"uniform", "random.uniform"},
    {"normal_distribution", "random.normal"},
    {"transform_translation", "transforms.translation"},
    {"experimental.equalize", "equalize"},
    {"experimental.filter", "filter"},
};

#define ALIAS_COUNT ((int)(sizeof aliases / sizeof aliases[0]))

int ladle_op_count(void) { return REGISTRY_SIZE; }

const ladle_op_schema *ladle_op_get(int i) {
  return i >= 0 && i < REGISTRY_SIZE ? &registry[i]->schema : NULL;
}

const ladle__op_def *ladle__op_def_find(const char *name) {
  for (int i = 0; name && i < REGISTRY_SIZE; i++)
    if (strcmp(registry[i]->schema.name, name) == 0) return registry[i];
  for (int i = 0; name && i < ALIAS_COUNT; i++)
    if (strcmp(aliases[i].alias, name) == 0) return ladle__op_def_find(aliases[i].target);
  return NULL;
}

const ladle_op_schema *ladle_op_find(const char *name) {
  const ladle__op_def *def = ladle__op_def_find(name);
  return def ? &def->schema : NULL;
}

int ladle_op_alias_count(void) { return ALIAS_COUNT; }

int ladle_arg_is_named(const ladle_arg_schema *arg, const char *name) {
  return strcmp(arg->name, name) == 0 || (arg->deprecated_name && strcmp(arg->deprecated_name, name) == 0);
}

const char *ladle_op_alias_get(int i, const char **target) {
  if (i < 0 || i >= ALIAS_COUNT) return NULL;
  if (target) *target = aliases[i].target;
  return aliases[i].alias;
}

const char *ladle_arg_type_name(ladle_arg_type type) {
  static const char *const names[] = {"int", "float", "bool", "str", "list of int", "list of float",
                                      "list of str", "dtype"};
  return (unsigned)type < sizeof names / sizeof names[0] ? names[type] : "invalid";
}

/* The registry: one line per operator. Adding an operator means writing its
 * ladle__op_def and listing it here; Python picks it up from the schema. */
#include "ops/registry.h"

#include <string.h>

extern const ladle__op_def ladle__op_readers_file;
extern const ladle__op_def ladle__op_readers_webdataset;
extern const ladle__op_def ladle__op_readers_tfrecord;
extern const ladle__op_def ladle__op_decoders_image;
extern const ladle__op_def ladle__op_decoders_image_random_crop;
extern const ladle__op_def ladle__op_resize;
extern const ladle__op_def ladle__op_random_resized_crop;
extern const ladle__op_def ladle__op_crop;
extern const ladle__op_def ladle__op_flip;
extern const ladle__op_def ladle__op_crop_mirror_normalize;
extern const ladle__op_def ladle__op_cast;
extern const ladle__op_def ladle__op_random_coin_flip;
extern const ladle__op_def ladle__op_random_uniform;
extern const ladle__op_def ladle__op_transfer_to_gpu;
extern const ladle__op_def ladle__op_external_source;

static const ladle__op_def *const registry[] = {
    &ladle__op_readers_file,
    &ladle__op_readers_webdataset,
    &ladle__op_readers_tfrecord,
    &ladle__op_decoders_image,
    &ladle__op_decoders_image_random_crop,
    &ladle__op_resize,
    &ladle__op_random_resized_crop,
    &ladle__op_crop,
    &ladle__op_flip,
    &ladle__op_crop_mirror_normalize,
    &ladle__op_cast,
    &ladle__op_random_coin_flip,
    &ladle__op_random_uniform,
    &ladle__op_transfer_to_gpu,
    &ladle__op_external_source,
};

#define REGISTRY_SIZE ((int)(sizeof registry / sizeof registry[0]))

int ladle_op_count(void) { return REGISTRY_SIZE; }

const ladle_op_schema *ladle_op_get(int i) {
  return i >= 0 && i < REGISTRY_SIZE ? &registry[i]->schema : NULL;
}

const ladle__op_def *ladle__op_def_find(const char *name) {
  for (int i = 0; name && i < REGISTRY_SIZE; i++)
    if (strcmp(registry[i]->schema.name, name) == 0) return registry[i];
  return NULL;
}

const ladle_op_schema *ladle_op_find(const char *name) {
  const ladle__op_def *def = ladle__op_def_find(name);
  return def ? &def->schema : NULL;
}

const char *ladle_arg_type_name(ladle_arg_type type) {
  static const char *const names[] = {"int", "float", "bool", "str", "list of int", "list of float",
                                      "list of str", "dtype"};
  return (unsigned)type < sizeof names / sizeof names[0] ? names[type] : "invalid";
}

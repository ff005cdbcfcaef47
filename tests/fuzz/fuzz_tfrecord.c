/* libFuzzer target for the tf.train.Example parser behind readers.tfrecord
 * (src/io/tfrecord_index.h): each input is a serialized Example; three
 * features are looked up and each found one decoded twice (sizes, then the
 * values into a buffer of exactly the announced size, so ASan sees any
 * overrun). A status other than OK or CORRUPT_DATA, or sizes that do not
 * agree with the kind, are findings. Build and run: see README.md. */
#include <stdio.h>
#include <stdlib.h>

#include "io/tfrecord_index.h"

static void expect(int ok, const char *what) {
  if (ok) return;
  fprintf(stderr, "fuzz_tfrecord: %s (last error: %s)\n", what, ladle_last_error());
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *names[3] = {"image/encoded", "label", "x"};
  ladle__tfrecord_feature found[3];
  ladle_status st = ladle__tfrecord_example_find(data, size, names, 3, found);
  expect(st == LADLE_OK || st == LADLE_ERROR_CORRUPT_DATA, "example_find returned an undocumented status");
  for (int k = 0; st == LADLE_OK && k < 3; k++) {
    if (!found[k].data) continue;
    ladle__tfrecord_kind kind;
    int64_t count = 0, bytes = 0;
    ladle_status d = ladle__tfrecord_feature_decode(found[k], &kind, &count, &bytes, NULL);
    expect(d == LADLE_OK || d == LADLE_ERROR_CORRUPT_DATA, "feature_decode returned an undocumented status");
    if (d != LADLE_OK) continue;
    expect(count >= 0 && bytes >= 0, "negative count or size");
    expect(kind != LADLE__TFRECORD_FLOAT || bytes == 4 * count, "float sizes disagree");
    expect(kind != LADLE__TFRECORD_INT64 || bytes == 8 * count, "int64 sizes disagree");
    expect((size_t)bytes <= size * 8 + 8, "more output than the input can hold");
    void *dst = malloc(bytes ? (size_t)bytes : 1);
    ladle__tfrecord_kind kind2;
    int64_t count2 = 0, bytes2 = 0;
    expect(ladle__tfrecord_feature_decode(found[k], &kind2, &count2, &bytes2, dst) == LADLE_OK,
           "the second decode failed");
    expect(kind2 == kind && count2 == count && bytes2 == bytes, "the two decodes disagree");
    free(dst);
  }
  return 0;
}

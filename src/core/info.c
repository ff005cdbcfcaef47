/* Versions and the build-info JSON. */
#include <pthread.h>
#include <stdio.h>

#include "ladle/ladle.h"

#ifndef LADLE_CUDA_ARCHS
#define LADLE_CUDA_ARCHS ""
#endif

#ifdef LADLE_HAVE_CUDA
#include "cuda/runtime.h"
#endif

unsigned ladle_version_number(void) { return LADLE_VERSION_NUMBER; }
const char *ladle_version_string(void) { return LADLE_VERSION_TEXT; }

static char info[1024];
static pthread_once_t info_once = PTHREAD_ONCE_INIT;

static void make_info(void) {
#ifdef LADLE_HAVE_CUDA
  const char *cuda = "true";
#else
  const char *cuda = "false";
#endif
#ifdef LADLE_HAVE_CUDA
  const char *runtime = ladle__cuda_runtime_info(); /* what this machine has */
#else
  const char *runtime = "\"cuda_devices\": 0, \"nvjpeg\": false";
#endif
  snprintf(info, sizeof info,
           "{\"version\": \"%s\", \"libjpeg_turbo\": \"%s\", \"libpng\": \"%s\", "
           "\"cuda_compiled\": %s, \"cuda_archs\": \"%s\", %s}",
           LADLE_VERSION_TEXT, LADLE_JPEG_VERSION, LADLE_PNG_VERSION, cuda, LADLE_CUDA_ARCHS, runtime);
}

const char *ladle_build_info(void) {
  pthread_once(&info_once, make_info);
  return info;
}

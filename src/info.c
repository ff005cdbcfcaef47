/* Versions and the build-info JSON. It sits above every folder of src/: it
 * reports what each optional part (libjpeg, libpng, CUDA, nvJPEG) has. */
#include <pthread.h>
#include <stdio.h>

#include <jpeglib.h> /* after stdio.h: it needs FILE */

#include "ladle/ladle.h"

#ifndef LADLE_CUDA_ARCHS
#define LADLE_CUDA_ARCHS ""
#endif

#ifdef LADLE_HAVE_CUDA
#include "codec/nvjpeg.h"
#include "cuda/runtime.h"
#endif

/* libjpeg-turbo's own version where its headers say it (jconfig.h), else the
 * libjpeg API version CMake found. */
#define LADLE__STRING2(x) #x
#define LADLE__STRING(x) LADLE__STRING2(x)
#ifdef LIBJPEG_TURBO_VERSION
#define LADLE__JPEG_TEXT LADLE__STRING(LIBJPEG_TURBO_VERSION)
#else
#define LADLE__JPEG_TEXT "libjpeg API " LADLE_JPEG_VERSION
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
  char nvjpeg[128] = "\"nvjpeg\": false";
  ladle__nvjpeg_facts nj;
  if (ladle__cuda_device_count() > 0 && (ladle__nvjpeg_get_facts(0, &nj), nj.loaded))
    snprintf(nvjpeg, sizeof nvjpeg, "\"nvjpeg\": true, \"nvjpeg_version\": \"%d.%d.%d\", \"nvjpeg_hw_decoder\": %s",
             nj.major, nj.minor, nj.patch, nj.hw_decoder ? "true" : "false");
#else
  const char *runtime = "\"cuda_devices\": 0";
  const char *nvjpeg = "\"nvjpeg\": false";
#endif
  snprintf(info, sizeof info,
           "{\"version\": \"%s\", \"libjpeg_turbo\": \"%s\", \"libpng\": \"%s\", "
           "\"cuda_compiled\": %s, \"cuda_archs\": \"%s\", %s, %s}",
           LADLE_VERSION_TEXT, LADLE__JPEG_TEXT, LADLE_PNG_VERSION, cuda, LADLE_CUDA_ARCHS, runtime, nvjpeg);
}

const char *ladle_build_info(void) {
  pthread_once(&info_once, make_info);
  return info;
}

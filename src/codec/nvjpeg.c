/* nvJPEG through dlopen: one table of function pointers filled once, a batched
 * decoder object (hardware engines or GPU-hybrid backend), and the translation
 * of nvJPEG statuses into ladle errors. A stub without CUDA or without nvjpeg.h. */
#include "codec/nvjpeg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

void ladle__nvjpeg_params_init(ladle__nvjpeg_params *p) {
  memset(p, 0, sizeof *p);
  p->device_id = 0;
  p->backend = LADLE__NVJPEG_AUTO;
  p->max_batch = 256;
  p->num_workers = 1;
  p->prealloc_width = 640;
  p->prealloc_height = 640;
  p->fancy_upsampling = 1;
}

const char *ladle__nvjpeg_status_text(int status) {
  switch (status) {
    case 0: return "NVJPEG_STATUS_SUCCESS (0)";
    case 1: return "NVJPEG_STATUS_NOT_INITIALIZED (1)";
    case 2: return "NVJPEG_STATUS_INVALID_PARAMETER (2)";
    case 3: return "NVJPEG_STATUS_BAD_JPEG (3)";
    case 4: return "NVJPEG_STATUS_JPEG_NOT_SUPPORTED (4)";
    case 5: return "NVJPEG_STATUS_ALLOCATOR_FAILURE (5)";
    case 6: return "NVJPEG_STATUS_EXECUTION_FAILED (6)";
    case 7: return "NVJPEG_STATUS_ARCH_MISMATCH (7)";
    case 8: return "NVJPEG_STATUS_INTERNAL_ERROR (8)";
    case 9: return "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED (9)";
    case 10: return "NVJPEG_STATUS_INCOMPLETE_BITSTREAM (10)";
    default: return "unknown nvJPEG status";
  }
}

#if defined(LADLE_HAVE_CUDA) && defined(LADLE_HAVE_NVJPEG_HEADER)

#include <dlfcn.h>
#include <pthread.h>

#include <nvjpeg.h>

#include "core/clock.h"
#include "cuda/runtime.h"

/* ------------------------------------------------------------------------ */
/* Loading                                                                    */
/* ------------------------------------------------------------------------ */

/* Functions every decoder needs. */
#define LADLE_NVJPEG_REQUIRED(X)        \
  X(nvjpegGetProperty)                  \
  X(nvjpegCreateEx)                     \
  X(nvjpegDestroy)                      \
  X(nvjpegJpegStateCreate)              \
  X(nvjpegJpegStateDestroy)             \
  X(nvjpegDecodeBatchedInitialize)      \
  X(nvjpegDecodeBatched)                \
  X(nvjpegJpegStreamCreate)             \
  X(nvjpegJpegStreamDestroy)            \
  X(nvjpegJpegStreamParse)              \
  X(nvjpegJpegStreamGetFrameDimensions) \
  X(nvjpegJpegStreamGetComponentsNum)   \
  X(nvjpegJpegStreamGetChromaSubsampling)

/* Functions used when present (newer versions, or the hardware backend). */
#define LADLE_NVJPEG_OPTIONAL(X)          \
  X(nvjpegJpegStreamParseHeader)          \
  X(nvjpegJpegStreamGetJpegEncoding)      \
  X(nvjpegJpegStreamGetSamplePrecision)   \
  X(nvjpegGetHardwareDecoderInfo)         \
  X(nvjpegDecodeBatchedPreAllocate)       \
  X(nvjpegDecodeBatchedSupported)         \
  X(nvjpegDecodeBatchedSupportedEx)       \
  X(nvjpegDecodeBatchedEx)                \
  X(nvjpegDecodeParamsCreate)             \
  X(nvjpegDecodeParamsDestroy)            \
  X(nvjpegDecodeParamsSetOutputFormat)    \
  X(nvjpegDecodeParamsSetROI)             \
  X(nvjpegSetDeviceMemoryPadding)         \
  X(nvjpegSetPinnedMemoryPadding)

/* Each member has the type of a pointer to the function of the same name,
 * taken from the real nvjpeg.h, so a signature cannot drift. */
static struct {
#define LADLE_NVJPEG_MEMBER(name) __typeof__(name) *name;
  LADLE_NVJPEG_REQUIRED(LADLE_NVJPEG_MEMBER)
  LADLE_NVJPEG_OPTIONAL(LADLE_NVJPEG_MEMBER)
#undef LADLE_NVJPEG_MEMBER
} nj;

static int nj_loaded;
static char nj_error[512];
static pthread_once_t nj_once = PTHREAD_ONCE_INIT;

static void load_library(void) {
  const char *names[4] = {getenv("LADLE_NVJPEG_LIBRARY"), "libnvjpeg.so.13", "libnvjpeg.so.12",
                          "libnvjpeg.so"};
  void *lib = NULL;
  char why[256] = ""; /* the first failure's reason: that of the preferred name */
  for (int i = 0; i < 4 && !lib; i++) {
    if (!names[i] || !names[i][0]) continue;
    lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    const char *e = lib ? NULL : dlerror(); /* dlerror's text is overwritten by the next failure */
    if (e && !why[0]) snprintf(why, sizeof why, "%s", e);
  }
  if (!lib) {
    snprintf(nj_error, sizeof nj_error,
             "cannot load nvJPEG (tried $LADLE_NVJPEG_LIBRARY, libnvjpeg.so.13, .so.12, .so): %s", why);
    return;
  }
  /* Never dlclosed: decoders and other threads may hold its functions. */
#define LADLE_NVJPEG_RESOLVE(name) nj.name = (__typeof__(nj.name))dlsym(lib, #name);
  LADLE_NVJPEG_REQUIRED(LADLE_NVJPEG_RESOLVE)
  LADLE_NVJPEG_OPTIONAL(LADLE_NVJPEG_RESOLVE)
#undef LADLE_NVJPEG_RESOLVE
#define LADLE_NVJPEG_NEED(name)                                                             \
  if (!nj.name) {                                                                           \
    snprintf(nj_error, sizeof nj_error, "the nvJPEG library found lacks %s (too old?)", #name); \
    return;                                                                                 \
  }
  LADLE_NVJPEG_REQUIRED(LADLE_NVJPEG_NEED)
#undef LADLE_NVJPEG_NEED
  nj_loaded = 1;
}

int ladle__nvjpeg_available(void) {
  pthread_once(&nj_once, load_library);
  return nj_loaded;
}

ladle_status ladle__nvjpeg_load(void) {
  if (ladle__nvjpeg_available()) return LADLE_OK;
  return LADLE_FAIL(LADLE_ERROR_NOT_AVAILABLE, "%s", nj_error);
}

/* ------------------------------------------------------------------------ */
/* Errors                                                                     */
/* ------------------------------------------------------------------------ */

static int is_data_error(nvjpegStatus_t s) {
  return s == NVJPEG_STATUS_BAD_JPEG || s == NVJPEG_STATUS_INCOMPLETE_BITSTREAM;
}

/* The ladle status for an nvJPEG status. */
static ladle_status status_of(nvjpegStatus_t s) {
  if (is_data_error(s)) return LADLE_ERROR_CORRUPT_DATA;
  if (s == NVJPEG_STATUS_JPEG_NOT_SUPPORTED) return LADLE_ERROR_UNSUPPORTED;
  return LADLE_ERROR_CUDA;
}

/* In a function with `st`, `done:` and `fn` (the name to report, the public
 * entry point's also inside static helpers): an nvJPEG call that must succeed. */
#define NVJPEG_CHECK(call)                                                                     \
  do {                                                                                         \
    nvjpegStatus_t nvjpeg_st_ = (call);                                                        \
    if (nvjpeg_st_ != NVJPEG_STATUS_SUCCESS) {                                                 \
      st = ladle__set_error(status_of(nvjpeg_st_), fn, "%s failed: %s", #call,                 \
                            ladle__nvjpeg_status_text((int)nvjpeg_st_));                       \
      goto done;                                                                               \
    }                                                                                          \
  } while (0)

/* ------------------------------------------------------------------------ */
/* Facts                                                                      */
/* ------------------------------------------------------------------------ */

/* Hardware handle creation with fallbacks for the flags; NULL on failure. */
static nvjpegHandle_t create_handle(nvjpegBackend_t backend, int fancy) {
  nvjpegHandle_t h = NULL;
#ifdef NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION
  if (fancy && nj.nvjpegCreateEx(backend, NULL, NULL, NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION, &h) ==
                   NVJPEG_STATUS_SUCCESS)
    return h;
  h = NULL;
#endif
  if (nj.nvjpegCreateEx(backend, NULL, NULL, NVJPEG_FLAGS_DEFAULT, &h) == NVJPEG_STATUS_SUCCESS) return h;
  return NULL;
}

/* Engines of a hardware handle; 0 when none or unknown. */
static void hw_info(nvjpegHandle_t h, unsigned *engines, unsigned *cores) {
  *engines = *cores = 0;
  /* Without the query (old nvJPEG), a hardware handle that could be created is
   * taken to have an engine. */
  if (!nj.nvjpegGetHardwareDecoderInfo) {
    *engines = *cores = 1;
    return;
  }
  if (nj.nvjpegGetHardwareDecoderInfo(h, engines, cores) != NVJPEG_STATUS_SUCCESS) *engines = *cores = 0;
}

void ladle__nvjpeg_get_facts(int device, ladle__nvjpeg_facts *f) {
  memset(f, 0, sizeof *f);
  if (!ladle__nvjpeg_available()) return;
  f->loaded = 1;
  nj.nvjpegGetProperty(MAJOR_VERSION, &f->major);
  nj.nvjpegGetProperty(MINOR_VERSION, &f->minor);
  nj.nvjpegGetProperty(PATCH_LEVEL, &f->patch);
  char saved[LADLE_ERROR_MAX];
  snprintf(saved, sizeof saved, "%s", ladle_last_error());
  int prev = -1;
  if (ladle__cuda_use_device(device, &prev) == LADLE_OK) {
    nvjpegHandle_t h = create_handle(NVJPEG_BACKEND_HARDWARE, 0);
    if (h) {
      unsigned e, c;
      hw_info(h, &e, &c);
      f->hw_decoder = e > 0;
      f->hw_engines = (int)e;
      f->hw_cores_per_engine = (int)c;
      nj.nvjpegDestroy(h);
    }
    ladle__cuda_restore_device(prev);
  }
  ladle__restore_error(saved);
}

/* ------------------------------------------------------------------------ */
/* Decoder                                                                    */
/* ------------------------------------------------------------------------ */

struct ladle__nvjpeg_decoder {
  int device;
  int hardware;
  int roi;            /* nvjpegDecodeBatchedEx usable */
  int max_batch;
  int num_workers;
  int gpu_huffman_only;
  nvjpegHandle_t handle;
  /* One state: two taking turns (the next batch parsed and queued while the
   * engines decode this one) measured slower on the H200, 18.9k-21.3k
   * against 22.0k-22.5k images/s at hw_decoder_load 0.99 (README). */
  nvjpegJpegState_t state;
  nvjpegJpegStream_t *streams;     /* num_workers + 1: the last one for ladle__nvjpeg_decode */
  nvjpegDecodeParams_t *wparams;   /* num_workers, for ROI support checks (NULL without ROI) */
  nvjpegDecodeParams_t *params;    /* max_batch, for nvjpegDecodeBatchedEx (NULL without ROI) */
  void *event;                     /* recorded after each decode */
  int pending;                     /* event recorded and maybe not complete */
  int64_t waited_ns;               /* in event syncs, since ladle__nvjpeg_take_wait_ns */
  pthread_mutex_t lock;            /* serializes decodes */
  /* Per-call arrays, max_batch each. */
  const unsigned char **data;
  size_t *lengths;
  nvjpegImage_t *dest;
};

int ladle__nvjpeg_decoder_is_hardware(const ladle__nvjpeg_decoder *d) { return d->hardware; }
int ladle__nvjpeg_decoder_supports_roi(const ladle__nvjpeg_decoder *d) { return d->roi; }

void ladle__nvjpeg_decoder_destroy(ladle__nvjpeg_decoder *d) {
  if (!d) return;
  char saved[LADLE_ERROR_MAX];
  snprintf(saved, sizeof saved, "%s", ladle_last_error());
  int prev = -1;
  if (ladle__cuda_use_device(d->device, &prev) != LADLE_OK) prev = -1;
  if (d->event) {
    /* nvJPEG's buffers must outlive the GPU work that uses them. */
    if (d->pending) (void)ladle__cuda_event_sync(d->event);
    ladle__cuda_event_destroy(d->event);
  }
  if (d->params)
    for (int i = 0; i < d->max_batch; i++)
      if (d->params[i]) nj.nvjpegDecodeParamsDestroy(d->params[i]);
  if (d->wparams)
    for (int i = 0; i < d->num_workers; i++)
      if (d->wparams[i]) nj.nvjpegDecodeParamsDestroy(d->wparams[i]);
  if (d->streams)
    for (int i = 0; i <= d->num_workers; i++)
      if (d->streams[i]) nj.nvjpegJpegStreamDestroy(d->streams[i]);
  if (d->state) nj.nvjpegJpegStateDestroy(d->state);
  if (d->handle) nj.nvjpegDestroy(d->handle);
  if (prev >= 0) ladle__cuda_restore_device(prev);
  pthread_mutex_destroy(&d->lock);
  free(d->params);
  free(d->wparams);
  free(d->streams);
  free(d->data);
  free(d->lengths);
  free(d->dest);
  free(d);
  ladle__restore_error(saved);
}

ladle_status ladle__nvjpeg_decoder_create(const ladle__nvjpeg_params *p, ladle__nvjpeg_decoder **out) {
  const char *fn = __func__;
  ladle_status st = LADLE_OK;
  ladle__nvjpeg_decoder *d = NULL;
  int prev = -1;
  LADLE_CUDA_ENTER();
  LADLE_TRY(ladle__nvjpeg_load());
  LADLE_CHECK(p->max_batch >= 1 && p->num_workers >= 1 && p->prealloc_width >= 1 && p->prealloc_height >= 1,
              LADLE_ERROR_INVALID_ARGUMENT,
              "max_batch (%d), num_workers (%d) and the pre-allocation size (%dx%d) must be >= 1",
              p->max_batch, p->num_workers, p->prealloc_width, p->prealloc_height);
  LADLE_CHECK(p->backend >= LADLE__NVJPEG_AUTO && p->backend <= LADLE__NVJPEG_GPU_HYBRID,
              LADLE_ERROR_INVALID_ARGUMENT, "unknown backend %d", (int)p->backend);
  if (ladle__cuda_device_count() == 0) {
    st = LADLE_FAIL(LADLE_ERROR_NOT_AVAILABLE, "no CUDA device");
    goto done;
  }
  LADLE_TRY(ladle__cuda_use_device(p->device_id, &prev));

  d = calloc(1, sizeof *d);
  LADLE_CHECK(d != NULL, LADLE_ERROR_OUT_OF_MEMORY, "cannot allocate a decoder");
  pthread_mutex_init(&d->lock, NULL);
  d->device = p->device_id;
  d->max_batch = p->max_batch;
  d->num_workers = p->num_workers;
  d->gpu_huffman_only = p->gpu_huffman_only;

  if (p->backend != LADLE__NVJPEG_GPU_HYBRID) {
    d->handle = create_handle(NVJPEG_BACKEND_HARDWARE, p->fancy_upsampling);
    unsigned engines = 0, cores = 0;
    if (d->handle) hw_info(d->handle, &engines, &cores);
    if (d->handle && engines > 0) {
      d->hardware = 1;
    } else if (d->handle) {
      nj.nvjpegDestroy(d->handle);
      d->handle = NULL;
    }
    LADLE_CHECK(d->hardware || p->backend == LADLE__NVJPEG_AUTO, LADLE_ERROR_NOT_AVAILABLE,
                "device %d has no hardware JPEG decoder", p->device_id);
  }
  if (!d->handle) {
    d->handle = create_handle(NVJPEG_BACKEND_GPU_HYBRID, p->fancy_upsampling);
    LADLE_CHECK(d->handle != NULL, LADLE_ERROR_CUDA,
                "nvjpegCreateEx(NVJPEG_BACKEND_GPU_HYBRID) failed on device %d", p->device_id);
  }
  /* Padding: buffers grow in steps instead of for every larger image. */
  if (nj.nvjpegSetDeviceMemoryPadding) NVJPEG_CHECK(nj.nvjpegSetDeviceMemoryPadding((size_t)16 << 20, d->handle));
  if (nj.nvjpegSetPinnedMemoryPadding) NVJPEG_CHECK(nj.nvjpegSetPinnedMemoryPadding((size_t)8 << 20, d->handle));
  NVJPEG_CHECK(nj.nvjpegJpegStateCreate(d->handle, &d->state));
  if (d->hardware && nj.nvjpegDecodeBatchedPreAllocate)
    NVJPEG_CHECK(nj.nvjpegDecodeBatchedPreAllocate(d->handle, d->state, p->max_batch, p->prealloc_width,
                                                   p->prealloc_height, NVJPEG_CSS_444, NVJPEG_OUTPUT_RGBI));

  LADLE_ALLOC(d->streams, (size_t)p->num_workers + 1);
  for (int i = 0; i <= p->num_workers; i++) NVJPEG_CHECK(nj.nvjpegJpegStreamCreate(d->handle, &d->streams[i]));

  d->roi = d->hardware && nj.nvjpegDecodeBatchedEx && nj.nvjpegDecodeBatchedSupportedEx &&
           nj.nvjpegDecodeParamsCreate && nj.nvjpegDecodeParamsDestroy && nj.nvjpegDecodeParamsSetROI &&
           nj.nvjpegDecodeParamsSetOutputFormat && nj.nvjpegJpegStreamParseHeader;
  if (d->roi) {
    LADLE_ALLOC(d->params, p->max_batch);
    for (int i = 0; i < p->max_batch; i++) NVJPEG_CHECK(nj.nvjpegDecodeParamsCreate(d->handle, &d->params[i]));
    LADLE_ALLOC(d->wparams, p->num_workers);
    for (int i = 0; i < p->num_workers; i++) NVJPEG_CHECK(nj.nvjpegDecodeParamsCreate(d->handle, &d->wparams[i]));
  }
  LADLE_ALLOC(d->data, p->max_batch);
  LADLE_ALLOC(d->lengths, p->max_batch);
  LADLE_ALLOC(d->dest, p->max_batch);
  LADLE_TRY(ladle__cuda_event_create(p->device_id, &d->event));
  *out = d;
  d = NULL;

done:
  if (prev >= 0) ladle__cuda_restore_device(prev);
  if (d) {
    /* Keep this call's message: destroy restores it. */
    ladle__nvjpeg_decoder_destroy(d);
  }
  return st;
}

/* ------------------------------------------------------------------------ */
/* Support checks                                                             */
/* ------------------------------------------------------------------------ */

static const char *name_or(const char *name) { return name ? name : "<unnamed>"; }

/* Parses the headers into js; 0 when nvJPEG rejects the data. */
static int parse_header(ladle__nvjpeg_decoder *d, nvjpegJpegStream_t js, const uint8_t *data, size_t size) {
  nvjpegStatus_t s = nj.nvjpegJpegStreamParseHeader
                         ? nj.nvjpegJpegStreamParseHeader(d->handle, data, size, js)
                         : nj.nvjpegJpegStreamParse(d->handle, data, size, 0, 0, js);
  return s == NVJPEG_STATUS_SUCCESS;
}

ladle_status ladle__nvjpeg_supported(ladle__nvjpeg_decoder *d, int worker, const uint8_t *data, size_t size,
                                     const char *name, const ladle__nvjpeg_roi *roi, int *supported) {
  const char *fn = __func__;
  ladle_status st = LADLE_OK;
  int ok = 0;
  LADLE_CUDA_ENTER();
  LADLE_CHECK(worker >= 0 && worker < d->num_workers, LADLE_ERROR_INVALID_ARGUMENT,
              "%s: worker %d out of range (decoder made for %d)", name_or(name), worker, d->num_workers);
  LADLE_CHECK(!roi || d->roi, LADLE_ERROR_INVALID_ARGUMENT,
              "%s: this decoder cannot decode regions of interest", name_or(name));
  nvjpegJpegStream_t js = d->streams[worker];
  if (!data || size < 4 || !parse_header(d, js, data, size)) goto done; /* the CPU decoder will say why */

  unsigned w = 0, h = 0, comps = 0;
  nvjpegChromaSubsampling_t css = NVJPEG_CSS_UNKNOWN;
  NVJPEG_CHECK(nj.nvjpegJpegStreamGetFrameDimensions(js, &w, &h));
  NVJPEG_CHECK(nj.nvjpegJpegStreamGetComponentsNum(js, &comps));
  NVJPEG_CHECK(nj.nvjpegJpegStreamGetChromaSubsampling(js, &css));
  if (w == 0 || h == 0 || (comps != 1 && comps != 3) || css == NVJPEG_CSS_UNKNOWN) goto done;
  if (nj.nvjpegJpegStreamGetSamplePrecision) {
    unsigned prec = 0;
    if (nj.nvjpegJpegStreamGetSamplePrecision(js, &prec) != NVJPEG_STATUS_SUCCESS || prec != 8) goto done;
  }
  if (roi) {
    LADLE_CHECK(roi->w >= 1 && roi->h >= 1 && roi->x >= 0 && roi->y >= 0 && (unsigned)roi->x + roi->w <= w &&
                    (unsigned)roi->y + roi->h <= h,
                LADLE_ERROR_INVALID_ARGUMENT, "%s: region %d,%d %dx%d is not inside the %ux%u image",
                name_or(name), roi->x, roi->y, roi->w, roi->h, w, h);
  }

  if (d->hardware) {
    int is = 1; /* nvJPEG: 0 means supported */
    if (roi) {
      nvjpegDecodeParams_t prm = d->wparams[worker];
      NVJPEG_CHECK(nj.nvjpegDecodeParamsSetROI(prm, roi->x, roi->y, roi->w, roi->h));
      NVJPEG_CHECK(nj.nvjpegDecodeBatchedSupportedEx(d->handle, js, prm, &is));
    } else if (nj.nvjpegDecodeBatchedSupported) {
      NVJPEG_CHECK(nj.nvjpegDecodeBatchedSupported(d->handle, js, &is));
    } else {
      is = 0; /* no query: trust the checks above */
    }
    ok = is == 0;
  } else {
    /* GPU hybrid: Huffman JPEGs, baseline, extended or progressive; only
     * baseline where the caller wants the Huffman decoding on the GPU. */
    ok = !d->gpu_huffman_only;
    if (nj.nvjpegJpegStreamGetJpegEncoding) {
      nvjpegJpegEncoding_t enc = NVJPEG_ENCODING_UNKNOWN;
      int known = nj.nvjpegJpegStreamGetJpegEncoding(js, &enc) == NVJPEG_STATUS_SUCCESS;
      ok = known && (enc == NVJPEG_ENCODING_BASELINE_DCT ||
                     (!d->gpu_huffman_only && (enc == NVJPEG_ENCODING_EXTENDED_SEQUENTIAL_DCT_HUFFMAN ||
                                               enc == NVJPEG_ENCODING_PROGRESSIVE_DCT_HUFFMAN)));
    }
  }

done:
  if (st == LADLE_OK) *supported = ok;
  return st;
}

/* ------------------------------------------------------------------------ */
/* Decoding                                                                   */
/* ------------------------------------------------------------------------ */

/* After a failed batch: name the image nvJPEG's host-side parser rejects, or
 * list the batch when it accepts them all (the bad data is then in the
 * entropy-coded part, which only decoding reaches). Sets the message. */
static ladle_status blame(ladle__nvjpeg_decoder *d, const ladle__nvjpeg_image *im, int m, const char *call,
                          nvjpegStatus_t s) {
  static const char fn[] = "ladle__nvjpeg_decode";
  nvjpegJpegStream_t js = d->streams[d->num_workers];
  const char *text = ladle__nvjpeg_status_text((int)s);
  int bad = -1, nbad = 0;
  for (int i = 0; i < m; i++) {
    if (nj.nvjpegJpegStreamParse(d->handle, im[i].data, im[i].size, 0, 0, js) != NVJPEG_STATUS_SUCCESS) {
      if (bad < 0) bad = i;
      nbad++;
    }
  }
  if (m == 1) bad = 0, nbad = 1;
  if (nbad == 1) return ladle__set_error(status_of(s), fn, "%s: %s failed: %s", name_or(im[bad].name), call, text);
  if (nbad > 1)
    return ladle__set_error(status_of(s), fn, "%s: %s failed: %s (and %d more of the batch's %d images are bad)",
                            name_or(im[bad].name), call, text, nbad - 1, m);
  char list[LADLE_ERROR_MAX / 2];
  size_t used = 0;
  list[0] = '\0';
  for (int i = 0; i < m; i++) {
    int n = snprintf(list + used, sizeof list - used, "%s\"%s\"", i ? ", " : "", name_or(im[i].name));
    if (n < 0 || (size_t)n >= sizeof list - used) { /* truncated: end with an ellipsis */
      snprintf(list + (used < sizeof list - 6 ? used : sizeof list - 6), 6, ", ...");
      break;
    }
    used += (size_t)n;
  }
  return ladle__set_error(status_of(s), fn, "%s failed: %s for one of these %d images: %s", call, text, m, list);
}

static nvjpegOutputFormat_t output_format(ladle__nvjpeg_format f) {
  switch (f) {
    case LADLE__NVJPEG_BGR: return NVJPEG_OUTPUT_BGRI;
    case LADLE__NVJPEG_GRAY: return NVJPEG_OUTPUT_Y;
    default: return NVJPEG_OUTPUT_RGBI;
  }
}

int64_t ladle__nvjpeg_take_wait_ns(ladle__nvjpeg_decoder *d) {
  int64_t w = d->waited_ns;
  d->waited_ns = 0;
  return w;
}

/* One chunk of at most max_batch images. */
static ladle_status decode_chunk(ladle__nvjpeg_decoder *d, const ladle__nvjpeg_image *im, int m,
                                 nvjpegOutputFormat_t fmt, cudaStream_t stream) {
  static const char fn[] = "ladle__nvjpeg_decode";
  ladle_status st = LADLE_OK;
  int any_roi = 0;
  for (int i = 0; i < m; i++) {
    if (!im[i].data || im[i].size == 0 || !im[i].out || im[i].pitch == 0 || (im[i].has_roi && !d->roi)) {
      st = ladle__set_error(LADLE_ERROR_INVALID_ARGUMENT, fn, "%s: %s", name_or(im[i].name),
                            im[i].has_roi && !d->roi ? "this decoder cannot decode regions of interest"
                                                     : "missing data or output");
      goto done;
    }
    d->data[i] = im[i].data;
    d->lengths[i] = im[i].size;
    memset(&d->dest[i], 0, sizeof d->dest[i]);
    d->dest[i].channel[0] = im[i].out;
    d->dest[i].pitch[0] = im[i].pitch;
    any_roi |= im[i].has_roi;
  }
  /* The previous decode's GPU work may still read the state's buffers. */
  if (d->pending) {
    int64_t t0 = ladle__now_ns();
    LADLE_TRY(ladle__cuda_event_sync(d->event));
    d->waited_ns += ladle__now_ns() - t0;
    d->pending = 0;
  }
  NVJPEG_CHECK(nj.nvjpegDecodeBatchedInitialize(d->handle, d->state, m, 1, fmt));
  nvjpegStatus_t s;
  const char *call;
  if (any_roi) {
    for (int i = 0; i < m; i++) {
      const ladle__nvjpeg_roi *r = &im[i].roi;
      NVJPEG_CHECK(nj.nvjpegDecodeParamsSetOutputFormat(d->params[i], fmt));
      if (im[i].has_roi)
        NVJPEG_CHECK(nj.nvjpegDecodeParamsSetROI(d->params[i], r->x, r->y, r->w, r->h));
      else
        NVJPEG_CHECK(nj.nvjpegDecodeParamsSetROI(d->params[i], 0, 0, -1, -1));
    }
    call = "nvjpegDecodeBatchedEx";
    s = nj.nvjpegDecodeBatchedEx(d->handle, d->state, d->data, d->lengths, d->dest, d->params, stream);
  } else {
    call = "nvjpegDecodeBatched";
    s = nj.nvjpegDecodeBatched(d->handle, d->state, d->data, d->lengths, d->dest, stream);
  }
  if (s != NVJPEG_STATUS_SUCCESS) {
    /* The failed call may have queued work on the state's buffers: the next
     * call waits for it as after a success (the message is set below). */
    if (ladle__cuda_event_record(d->event, stream) == LADLE_OK) d->pending = 1;
    if (is_data_error(s) || s == NVJPEG_STATUS_JPEG_NOT_SUPPORTED) {
      st = blame(d, im, m, call, s);
    } else {
      st = ladle__set_error(LADLE_ERROR_CUDA, fn, "%s failed: %s (batch of %d, first image \"%s\")", call,
                            ladle__nvjpeg_status_text((int)s), m, name_or(im[0].name));
      /* nvJPEG has its own CUDA runtime: ask ours whether the context broke,
       * so that the latch sees a sticky error. */
      cudaError_t e = cudaStreamQuery(stream);
      if (e != cudaSuccess && e != cudaErrorNotReady) {
        char msg[LADLE_ERROR_MAX];
        snprintf(msg, sizeof msg, "%s", ladle_last_error());
        ladle__cuda_fail(e, fn, "cudaStreamQuery(stream) after a failed decode");
        ladle__restore_error(msg);
      } else if (e == cudaErrorNotReady) {
        (void)cudaGetLastError();
      }
    }
    goto done;
  }
  LADLE_TRY(ladle__cuda_event_record(d->event, stream));
  d->pending = 1;
done:
  return st;
}

ladle_status ladle__nvjpeg_decode(ladle__nvjpeg_decoder *d, const ladle__nvjpeg_image *images, int n,
                                  ladle__nvjpeg_format format, void *stream) {
  ladle_status st = LADLE_OK;
  int locked = 0;
  LADLE_CUDA_ENTER();
  LADLE_CHECK(d && images && n >= 1, LADLE_ERROR_INVALID_ARGUMENT, "no decoder or no images (n = %d)", n);
  LADLE_CHECK(format >= LADLE__NVJPEG_RGB && format <= LADLE__NVJPEG_GRAY, LADLE_ERROR_INVALID_ARGUMENT,
              "unknown output format %d", (int)format);
  pthread_mutex_lock(&d->lock);
  locked = 1;
  LADLE_TRY(ladle__cuda_use_device(d->device, NULL));
  for (int done_n = 0; done_n < n; done_n += d->max_batch) {
    int m = n - done_n < d->max_batch ? n - done_n : d->max_batch;
    LADLE_TRY(decode_chunk(d, images + done_n, m, output_format(format), ladle__cuda_stream(stream)));
  }
done:
  if (locked) pthread_mutex_unlock(&d->lock);
  return st;
}

#else /* no CUDA or no nvjpeg.h: a stub */

#define LADLE_NVJPEG_MISSING "nvJPEG support was not compiled in"

int ladle__nvjpeg_available(void) { return 0; }

ladle_status ladle__nvjpeg_load(void) { return LADLE_FAIL(LADLE_ERROR_NOT_AVAILABLE, LADLE_NVJPEG_MISSING); }

void ladle__nvjpeg_get_facts(int device, ladle__nvjpeg_facts *facts) { memset(facts, 0, sizeof *facts); }

ladle_status ladle__nvjpeg_decoder_create(const ladle__nvjpeg_params *p, ladle__nvjpeg_decoder **out) {
  return LADLE_FAIL(LADLE_ERROR_NOT_AVAILABLE, LADLE_NVJPEG_MISSING);
}

void ladle__nvjpeg_decoder_destroy(ladle__nvjpeg_decoder *d) {}

int ladle__nvjpeg_decoder_is_hardware(const ladle__nvjpeg_decoder *d) { return 0; }

int ladle__nvjpeg_decoder_supports_roi(const ladle__nvjpeg_decoder *d) { return 0; }

int64_t ladle__nvjpeg_take_wait_ns(ladle__nvjpeg_decoder *d) { return 0; }

ladle_status ladle__nvjpeg_supported(ladle__nvjpeg_decoder *d, int worker, const uint8_t *data, size_t size,
                                     const char *name, const ladle__nvjpeg_roi *roi, int *supported) {
  return LADLE_FAIL(LADLE_ERROR_NOT_AVAILABLE, LADLE_NVJPEG_MISSING);
}

ladle_status ladle__nvjpeg_decode(ladle__nvjpeg_decoder *d, const ladle__nvjpeg_image *images, int n,
                                  ladle__nvjpeg_format format, void *stream) {
  return LADLE_FAIL(LADLE_ERROR_NOT_AVAILABLE, LADLE_NVJPEG_MISSING);
}

#endif

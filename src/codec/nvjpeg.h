/* nvJPEG, loaded at run time (dlopen), as a batched JPEG decoder into device
 * memory: the hardware engines (A100/H100/H200) when present, else the CUDA
 * "GPU hybrid" backend. Images it declines go to the CPU decoder (codec/image.h).
 *
 * Built with LADLE_HAVE_CUDA and LADLE_HAVE_NVJPEG_HEADER (nvjpeg.h found at
 * configure time, e.g. from the nvidia-nvjpeg wheel). Without them every function
 * below exists and reports "nvJPEG support was not compiled in"
 * (LADLE_ERROR_NOT_AVAILABLE); ladle__nvjpeg_available() returns 0.
 *
 * Loading: $LADLE_NVJPEG_LIBRARY (a path) when set, else libnvjpeg.so.13, .so.12,
 * .so, from the usual search path (a library already loaded by the process, e.g.
 * by Python from the nvidia-nvjpeg wheel, is found by its soname). The library is
 * never unloaded.
 */
#ifndef LADLE_CODEC_NVJPEG_H
#define LADLE_CODEC_NVJPEG_H

#include <stddef.h>
#include <stdint.h>

#include "ladle/ladle.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when nvJPEG could be loaded and has every function ladle needs. The first
 * call loads it (thread-safe, once). */
int ladle__nvjpeg_available(void);

/* The same as a status: LADLE_OK, or LADLE_ERROR_NOT_AVAILABLE with a message
 * that says why (not compiled in, library not found, a missing symbol). */
ladle_status ladle__nvjpeg_load(void);

/* Facts for ladle_build_info. */
typedef struct ladle__nvjpeg_facts {
  int loaded;              /* ladle__nvjpeg_available() */
  int major, minor, patch; /* nvjpegGetProperty */
  int hw_decoder;          /* `device` has hardware JPEG decode engines */
  int hw_engines, hw_cores_per_engine;
} ladle__nvjpeg_facts;

/* Fills `facts` (zeros where unknown). Creates and destroys a hardware-backend
 * handle on `device` to ask for the engines. Never fails. */
void ladle__nvjpeg_get_facts(int device, ladle__nvjpeg_facts *facts);

/* "NVJPEG_STATUS_BAD_JPEG (3)". Static. */
const char *ladle__nvjpeg_status_text(int status);

/* ------------------------------------------------------------------------ */
/* Decoder                                                                    */
/* ------------------------------------------------------------------------ */

typedef enum ladle__nvjpeg_backend {
  LADLE__NVJPEG_AUTO = 0,   /* HARDWARE when the device has engines, else GPU_HYBRID */
  LADLE__NVJPEG_HARDWARE,   /* fails with LADLE_ERROR_NOT_AVAILABLE without engines */
  LADLE__NVJPEG_GPU_HYBRID  /* Huffman decoding on the GPU for baseline JPEGs (batches > ~50) */
} ladle__nvjpeg_backend;

typedef enum ladle__nvjpeg_format {
  LADLE__NVJPEG_RGB = 0, /* interleaved RGB (NVJPEG_OUTPUT_RGBI), 3 bytes per pixel */
  LADLE__NVJPEG_BGR,     /* interleaved BGR (NVJPEG_OUTPUT_BGRI) */
  LADLE__NVJPEG_GRAY     /* the Y (luma) channel (NVJPEG_OUTPUT_Y), 1 byte per pixel */
} ladle__nvjpeg_format;

typedef struct ladle__nvjpeg_params {
  int device_id;                 /* CUDA device; required */
  ladle__nvjpeg_backend backend; /* default AUTO */
  int max_batch;                 /* images per decode call, for pre-allocation; default 256 */
  int num_workers;               /* threads that may call ladle__nvjpeg_supported at once
                                    (each with its own worker index); default 1 */
  int prealloc_width, prealloc_height; /* expected image size, for the hardware backend's
                                          pre-allocation; default 640 x 640 */
  int fancy_upsampling;          /* 1 (default): ask for interpolated chroma upsampling
                                    (NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION), closer to
                                    libjpeg-turbo's output; silently off where this nvJPEG
                                    does not accept the flag */
  int gpu_huffman_only;          /* GPU_HYBRID: 1 accepts only baseline JPEGs, the ones whose Huffman
                                    decoding nvJPEG runs on the GPU (in batches of more than 50
                                    images, nvjpeg.h says; smaller batches and other encodings are
                                    Huffman-decoded on the calling thread); default 0 */
} ladle__nvjpeg_params;

/* The defaults above, device 0. */
void ladle__nvjpeg_params_init(ladle__nvjpeg_params *p);

typedef struct ladle__nvjpeg_decoder ladle__nvjpeg_decoder;

/*
 * Creates a decoder on p->device_id: an nvJPEG handle, one decode state, one
 * event, num_workers parse objects. For the hardware backend it calls
 * nvjpegDecodeBatchedPreAllocate (without it, the first batched decode fails
 * with NVJPEG_STATUS_ALLOCATOR_FAILURE, measured on the H200). The calling
 * thread's current device is left as it was. Errors: NOT_AVAILABLE (no nvJPEG,
 * no device, no engines for HARDWARE), CUDA (any nvJPEG or CUDA failure),
 * INVALID_ARGUMENT. The caller owns the decoder.
 *
 * Threads: ladle__nvjpeg_supported may be called from num_workers threads at
 * once (distinct worker indices); ladle__nvjpeg_decode from one thread at a time.
 * Several decoders with the hardware backend in one process, driven from
 * several threads, hung in one test on the H200 (GPU-NOTES.md): use one
 * hardware decoder per device.
 */
ladle_status ladle__nvjpeg_decoder_create(const ladle__nvjpeg_params *p, ladle__nvjpeg_decoder **out);

/* Waits for the decoder's last decode to finish, then frees it. NULL allowed. */
void ladle__nvjpeg_decoder_destroy(ladle__nvjpeg_decoder *d);

/* 1 for the hardware backend. */
int ladle__nvjpeg_decoder_is_hardware(const ladle__nvjpeg_decoder *d);

/* 1 when decodes may carry a region of interest: the hardware backend with
 * nvjpegDecodeBatchedEx (nvJPEG >= 11.6 or so; ROI decoding is a hardware-
 * backend feature: DecodeBatchedEx is documented for it, and older DALI notes
 * say ROI and the hardware decoder did not mix before it). Other backends decode
 * whole images; crop afterwards (the fused kernel's source window does it). */
int ladle__nvjpeg_decoder_supports_roi(const ladle__nvjpeg_decoder *d);

/* A region of interest in stored (not EXIF-rotated) pixel coordinates; w, h >= 1,
 * inside the image. */
typedef struct ladle__nvjpeg_roi {
  int x, y, w, h;
} ladle__nvjpeg_roi;

/*
 * Whether this decoder can decode the JPEG in data/size (with `roi`, when not
 * NULL, which needs ladle__nvjpeg_decoder_supports_roi): *supported = 1 or 0.
 * Parses the headers on the host (nvjpegJpegStreamParseHeader), then asks
 * nvJPEG (nvjpegDecodeBatchedSupported[Ex]) for the hardware backend; for the
 * GPU-hybrid backend it accepts 8-bit baseline, extended and progressive
 * Huffman JPEGs with 1 or 3 components and a known chroma subsampling
 * (baseline only with gpu_huffman_only, or none where this nvJPEG cannot
 * tell the encoding).
 * Data nvJPEG cannot parse gives *supported = 0 and LADLE_OK: the CPU decoder
 * then reports it properly. EXIF orientation is not looked at: route images
 * with an orientation other than 1 to the CPU decoder (it applies orientation).
 * `worker` in [0, num_workers) picks a parse object; `name` names the image in
 * messages. Errors: LADLE_ERROR_CUDA for an nvJPEG failure unrelated to the data,
 * INVALID_ARGUMENT. Thread-safe across distinct workers.
 */
ladle_status ladle__nvjpeg_supported(ladle__nvjpeg_decoder *d, int worker, const uint8_t *data,
                                     size_t size, const char *name, const ladle__nvjpeg_roi *roi,
                                     int *supported);

/* One image of a batched decode. */
typedef struct ladle__nvjpeg_image {
  const uint8_t *data; /* the whole JPEG file, host memory */
  size_t size;
  const char *name;    /* for messages; NULL: "<unnamed>" */
  uint8_t *out;        /* device memory: the image (or roi) as rows of `pitch` bytes */
  size_t pitch;        /* >= width * channels (3, or 1 for GRAY) */
  int has_roi;         /* 1: decode only roi (needs ladle__nvjpeg_decoder_supports_roi) */
  ladle__nvjpeg_roi roi;
} ladle__nvjpeg_image;

/*
 * Decodes n (1 <= n, any number: larger batches are split by max_batch) JPEGs,
 * every one accepted by ladle__nvjpeg_supported, into their `out` buffers, with
 * the GPU work queued on `stream` (a cudaStream_t of the decoder's device; NULL
 * is the legacy default stream). Output: stored orientation (no EXIF rotation),
 * the whole image or the roi, HWC uint8 in `format`.
 *
 * Asynchrony: returns once the work is queued; the outputs are ready when work
 * queued on `stream` afterwards runs. The encoded data may be reused when the
 * call returns (nvJPEG copies it to its own buffers during the call). Before
 * reusing its decode state this call waits (on the host) for the previous
 * call's GPU work to finish.
 *
 * Errors: LADLE_ERROR_CORRUPT_DATA when nvJPEG reports bad or truncated data,
 * naming the image when the batch's images can be told apart (a host-side parse
 * of each finds the bad one), else listing the batch's names; the decoder stays
 * usable, and decoding the images one by one on the CPU gives each its own
 * verdict. LADLE_ERROR_CUDA for anything else; NOT_AVAILABLE, INVALID_ARGUMENT.
 * The thread's current device is set to the decoder's device.
 */
ladle_status ladle__nvjpeg_decode(ladle__nvjpeg_decoder *d, const ladle__nvjpeg_image *images, int n,
                                  ladle__nvjpeg_format format, void *stream);

/* Nanoseconds ladle__nvjpeg_decode spent waiting for earlier decodes' GPU
 * work since the last call of this (the engines were the bottleneck then);
 * resets the count. Call it under the lock that serializes the decodes. */
int64_t ladle__nvjpeg_take_wait_ns(ladle__nvjpeg_decoder *d);

#ifdef __cplusplus
}
#endif

#endif

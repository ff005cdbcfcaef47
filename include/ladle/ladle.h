/*
 * ladle.h — the public C API of ladle, a GPU data-loading library.
 *
 * This header is the manual. Everything ladle exports is declared here; every
 * other symbol in libladle is hidden.
 *
 * Conventions (they hold for every function below unless its comment says
 * otherwise):
 *  - Fallible functions return a ladle_status; LADLE_OK (0) is success.
 *    Results come back through out-parameters, which are left untouched on
 *    failure.
 *  - On failure, ladle_last_error() on the same thread returns a message that
 *    names the function and, where there is one, the sample (file path,
 *    record index) involved.
 *  - Handles are opaque. ladle_<noun>_create has a ladle_<noun>_destroy that
 *    accepts NULL. Shared objects (batches) are reference counted.
 *  - Strings passed in are copied; the caller keeps ownership of its memory.
 *  - The library never prints, never aborts, never exits.
 *
 * Thread safety: distinct handles may be used from distinct threads at once.
 * One pipeline handle must not be used from two threads at once. Batches may
 * be read, retained and released from any thread.
 *
 * fork(): threads do not survive a fork, so a pipeline or thread pool made
 * before it belongs to the parent. In the child, calls that would run it
 * fail with LADLE_ERROR_STATE (build a new pipeline in the child), and
 * destroying it releases nothing the parent shares (its memory is the
 * parent's copy; it is left as it is), so a child exits cleanly.
 */
#ifndef LADLE_LADLE_H
#define LADLE_LADLE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define LADLE_API __declspec(dllexport)
#else
#define LADLE_API __attribute__((visibility("default")))
#endif

/* ------------------------------------------------------------------------ */
/* Versions and build facts                                                  */
/* ------------------------------------------------------------------------ */

#define LADLE_VERSION_MAJOR 0
#define LADLE_VERSION_MINOR 1
#define LADLE_VERSION_PATCH 0
#define LADLE_VERSION_NUMBER \
  (LADLE_VERSION_MAJOR * 10000 + LADLE_VERSION_MINOR * 100 + LADLE_VERSION_PATCH)

/** The version of the library actually loaded, as MAJOR*10000+MINOR*100+PATCH. */
LADLE_API unsigned ladle_version_number(void);
/** The same as a static string, "MAJOR.MINOR.PATCH". */
LADLE_API const char *ladle_version_string(void);

/**
 * What this build of ladle has, as a static JSON object: the version, whether
 * libjpeg-turbo and libpng were compiled in, whether CUDA kernels were
 * compiled (and for which architectures), and, found at run time, whether a
 * CUDA device and nvJPEG can be used. The string stays valid for the life of
 * the process. Thread-safe.
 */
LADLE_API const char *ladle_build_info(void);

/* ------------------------------------------------------------------------ */
/* Status codes and errors                                                   */
/* ------------------------------------------------------------------------ */

/* One table defines every code, its name and its description. */
#define LADLE_STATUS_LIST(X)                                                   \
  X(LADLE_OK, 0, "success")                                                    \
  X(LADLE_ERROR_INVALID_ARGUMENT, 1, "invalid argument")                       \
  X(LADLE_ERROR_OUT_OF_MEMORY, 2, "out of memory")                             \
  X(LADLE_ERROR_IO, 3, "input/output error")                                   \
  X(LADLE_ERROR_CORRUPT_DATA, 4, "corrupt or truncated data")                  \
  X(LADLE_ERROR_UNSUPPORTED, 5, "unsupported format or feature")               \
  X(LADLE_ERROR_LIMIT, 6, "a configured limit was exceeded")                   \
  X(LADLE_ERROR_STATE, 7, "the call is not valid in this state")               \
  X(LADLE_ERROR_CUDA, 8, "CUDA error")                                         \
  X(LADLE_ERROR_NOT_AVAILABLE, 9, "an optional component is not available")    \
  X(LADLE_ERROR_INTERNAL, 10, "internal error")

typedef enum ladle_status {
#define LADLE_X_ENUM(name, value, text) name = value,
  LADLE_STATUS_LIST(LADLE_X_ENUM)
#undef LADLE_X_ENUM
} ladle_status;

/** The code's name ("LADLE_ERROR_IO"), or "LADLE_UNKNOWN_STATUS". Static. */
LADLE_API const char *ladle_status_name(ladle_status status);
/** A one-line description of the code. Static. */
LADLE_API const char *ladle_status_description(ladle_status status);

/**
 * The message of the last failure on the calling thread: the function that
 * failed, what went wrong, and the sample (file path, record index) where
 * there is one. "" when no call has failed. Valid until the next ladle call
 * on the same thread.
 */
LADLE_API const char *ladle_last_error(void);

/* ------------------------------------------------------------------------ */
/* Element types, devices                                                    */
/* ------------------------------------------------------------------------ */

typedef enum ladle_dtype {
  LADLE_UINT8 = 0,
  LADLE_INT32 = 1,
  LADLE_FLOAT32 = 2,
  LADLE_FLOAT16 = 3,
  LADLE_INT64 = 4,
  LADLE_INT8 = 5,
  LADLE_INT16 = 6,
  LADLE_UINT16 = 7,
  LADLE_UINT32 = 8,
  LADLE_UINT64 = 9,
  LADLE_FLOAT64 = 10,
  LADLE_BOOL = 11, /* one byte, 0 or 1 */
  LADLE_DTYPE_COUNT
} ladle_dtype;

/** Bytes per element of the type, 0 for an invalid value. */
LADLE_API size_t ladle_dtype_size(ladle_dtype dtype);
/** "uint8", "int32", "float32", "float16", "int64", "int8", "int16", "uint16",
 * "uint32", "uint64", "float64", "bool" (NumPy's names). Static. */
LADLE_API const char *ladle_dtype_name(ladle_dtype dtype);

/* Values match DLPack's DLDeviceType. */
typedef enum ladle_device {
  LADLE_DEVICE_CPU = 1,
  LADLE_DEVICE_CUDA = 2,
  LADLE_DEVICE_CUDA_HOST = 3 /* pinned host memory */
} ladle_device;

/* ------------------------------------------------------------------------ */
/* Batches                                                                    */
/* ------------------------------------------------------------------------ */

/**
 * A batch: N samples of one dtype, one layout and one device. Shapes may differ
 * per sample (a "ragged" batch); all samples have the same number of
 * dimensions. When every sample has the same shape, the samples lie back to
 * back in one buffer and the batch can be viewed as one [N, ...] tensor
 * (ladle_batch_is_dense).
 *
 * Batches are reference counted. A batch returned by a ladle function carries
 * one reference that the caller owns and must release. The memory of a batch
 * is never reused while a reference to it is held.
 */
typedef struct ladle_batch ladle_batch;

#define LADLE_MAX_NDIM 6

/** Adds a reference. Thread-safe. */
LADLE_API void ladle_batch_retain(ladle_batch *batch);
/** Drops a reference; the last one returns the memory to its pool. NULL is allowed. Thread-safe. */
LADLE_API void ladle_batch_release(ladle_batch *batch);

LADLE_API int ladle_batch_num_samples(const ladle_batch *batch);
LADLE_API ladle_dtype ladle_batch_dtype(const ladle_batch *batch);
/** Dimensions per sample (the same for all samples). */
LADLE_API int ladle_batch_ndim(const ladle_batch *batch);
/** The layout letters, e.g. "HWC", "CHW", "" when none. Valid while the batch is. */
LADLE_API const char *ladle_batch_layout(const ladle_batch *batch);
LADLE_API ladle_device ladle_batch_device(const ladle_batch *batch);
/** The CUDA device ordinal of a CUDA batch, 0 otherwise. */
LADLE_API int ladle_batch_device_id(const ladle_batch *batch);
/** The shape of sample i (ndim values). Valid while the batch is. */
LADLE_API const int64_t *ladle_batch_shape(const ladle_batch *batch, int i);
/** The first byte of sample i (device memory for a CUDA batch). Valid while the batch is. */
LADLE_API void *ladle_batch_data(const ladle_batch *batch, int i);
/** 1 when all samples have one shape and lie back to back from ladle_batch_data(b, 0). */
LADLE_API int ladle_batch_is_dense(const ladle_batch *batch);

/**
 * Makes work submitted to `stream` (a cudaStream_t; NULL is the legacy default
 * stream) wait until the batch's data is ready, without blocking the host.
 * A CPU batch is always ready: the call does nothing. Fails with
 * LADLE_ERROR_CUDA if the wait cannot be recorded.
 */
LADLE_API ladle_status ladle_batch_wait(const ladle_batch *batch, void *stream);

/**
 * A batch over memory the caller owns, without a copy: `num_samples` samples
 * of one shape (`sample_shape`, ndim values) stored back to back at `data`,
 * in host memory (LADLE_DEVICE_CPU) or in the memory of CUDA device
 * `device_id` (LADLE_DEVICE_CUDA). When the last reference goes,
 * `release(release_ctx)` is called (from whichever thread drops it, possibly
 * a pipeline's), so the owner can free the memory; release may be NULL. The
 * caller must have finished writing the data in stream order before a
 * pipeline reads it (see ladle_pipeline_cuda_stream). `layout` may be NULL.
 */
LADLE_API ladle_status ladle_batch_wrap(ladle_dtype dtype, int num_samples, int ndim, const int64_t *sample_shape,
                                        const char *layout, ladle_device device, int device_id, void *data,
                                        void (*release)(void *release_ctx), void *release_ctx, ladle_batch **out);

/**
 * As ladle_batch_wrap, with a shape per sample: `shapes` holds num_samples *
 * ndim values and the samples lie back to back at `data` (a ragged batch when
 * the shapes differ; ladle_batch_is_dense tells).
 */
LADLE_API ladle_status ladle_batch_wrap_samples(ladle_dtype dtype, int num_samples, int ndim, const int64_t *shapes,
                                                const char *layout, ladle_device device, int device_id, void *data,
                                                void (*release)(void *release_ctx), void *release_ctx,
                                                ladle_batch **out);

/**
 * Orders the readers of a CUDA batch made by ladle_batch_wrap(_samples) after
 * the work queued so far on `stream` (the producer's stream, on the batch's
 * device; stream values as in ladle_batch_wait): a pipeline fed the batch and
 * ladle_batch_wait wait for that point on the GPU, without blocking the host.
 * Call it once, after the producer queued its writes and before the batch is
 * fed. A CPU batch needs nothing (LADLE_OK). Fails with
 * LADLE_ERROR_INVALID_ARGUMENT for a batch ladle made (it orders its own), and
 * LADLE_ERROR_CUDA if the event cannot be recorded. Not thread-safe for one batch.
 */
LADLE_API ladle_status ladle_batch_record_ready(ladle_batch *batch, void *stream);

/**
 * Creates a CPU batch of `num_samples` samples with the given shapes
 * (num_samples * ndim values) and copies `data` (the samples back to back)
 * into it. `layout` may be NULL. The new batch has one reference, owned by
 * the caller. Used to feed external data (dynamic mode, tests).
 */
LADLE_API ladle_status ladle_batch_create_cpu(ladle_dtype dtype, int num_samples, int ndim,
                                              const int64_t *shapes, const char *layout,
                                              const void *data, ladle_batch **out);

/* ------------------------------------------------------------------------ */
/* Operator schemas                                                           */
/* ------------------------------------------------------------------------ */

/* The types an operator argument can have. */
typedef enum ladle_arg_type {
  LADLE_ARG_INT = 0,    /* int64 */
  LADLE_ARG_FLOAT = 1,  /* double */
  LADLE_ARG_BOOL = 2,   /* int64 0 or 1 */
  LADLE_ARG_STRING = 3,
  LADLE_ARG_INTS = 4,   /* list of int64 */
  LADLE_ARG_FLOATS = 5, /* list of double */
  LADLE_ARG_STRINGS = 6,
  LADLE_ARG_DTYPE = 7   /* a ladle_dtype, carried as int64 */
} ladle_arg_type;

/** "int", "float", "bool", "str", "list of int", ... Static. */
LADLE_API const char *ladle_arg_type_name(ladle_arg_type type);

/* A typed value. Lists point to `count` elements. Strings are NUL-terminated. */
typedef struct ladle_value {
  ladle_arg_type type;
  int count; /* elements of a list; 1 for a scalar */
  union {
    int64_t i;
    double f;
    const char *s;
    const int64_t *ints;
    const double *floats;
    const char *const *strings;
  } u;
} ladle_value;

/* The devices an operator can run on, as bits. */
#define LADLE_ON_CPU 1u   /* inputs and outputs in host memory */
#define LADLE_ON_GPU 2u   /* inputs and outputs in device memory */
#define LADLE_ON_MIXED 4u /* inputs in host memory, outputs in device memory */

/* One argument of an operator's schema. Rows are written with named fields
 * (src/ops/op.h has the shorthands); a field left out is 0/NULL. */
typedef struct ladle_arg_schema {
  const char *name;
  ladle_arg_type type;
  ladle_value default_value; /* count 0: no default (the argument is optional, or required) */
  int required;              /* 1: must be given */
  int per_sample;            /* 1: a tensor argument: may be a node giving one value per sample (DALI's
                                DataNode arguments); its per-sample values get the same checks */
  int has_range;             /* 1: numbers (and list elements) must lie in [min, max] */
  double min, max;
  const char *const *choices; /* string arguments: the accepted values, NULL-terminated (matched without
                                 regard to case); NULL: any string */
  int no_effect;             /* 1: accepted for DALI scripts and cannot change results here (a memory or
                                speed hint); the doc says why */
  const char *doc;
  int adds_outputs;          /* > 0: a bool argument that, when true, adds this many outputs after the
                                operator's num_outputs and those added by earlier arguments (readers.coco's
                                polygon_masks, image_ids) */
  const char *deprecated_name; /* DALI's earlier name for this argument (crop_mirror_normalize's output_dtype
                                  for dtype), still taken by add_op; Python warns (DeprecationWarning), as DALI
                                  does. NULL: none */
} ladle_arg_schema;

/* What an operator is, as bits (ladle_op_schema.flags). */
#define LADLE_OP_RANDOM 1u      /* draws random numbers: one stream per (seed, operator, epoch, sample) */
#define LADLE_OP_READER 2u      /* produces the samples of an epoch (readers.*): has an epoch and a position */
#define LADLE_OP_MOVES_DATA 4u  /* only moves data between devices (.gpu()): takes no random stream */
#define LADLE_OP_EXTERNAL 8u    /* its batches are fed by the application (external_source) */
#define LADLE_OP_STATEFUL 16u   /* keeps state across iterations beyond its position (none today) */
#define LADLE_OP_CALLBACK 32u   /* its work is the application's function (python_function): added with
                                   ladle_pipeline_add_callback_op */
#define LADLE_OP_EPILOGUE 64u   /* on the GPU, can run per output pixel inside the kernel of the operator before
                                   it (crop_mirror_normalize after resize), when that one accepts it */
#define LADLE_OP_ACCEPTS_EPILOGUE 128u /* its GPU kernel can apply the operator after it (one flagged
                                          LADLE_OP_EPILOGUE, its output's only reader) per output pixel */
#define LADLE_OP_ELEMENTWISE 256u /* element-wise: when it reads the output of another such operator that nothing
                                     else reads, it computes both in one pass (one CPU loop, one GPU kernel) */

/* An operator's schema: everything Python needs to expose it. Static data. */
typedef struct ladle_op_schema {
  const char *name;      /* "decoders.image", "readers.file", "random.coin_flip" */
  const char *doc;
  int min_inputs, max_inputs;
  int num_outputs;       /* < 0: one output per element of the list argument
                            args[-1 - num_outputs] (readers.webdataset's ext); bool arguments with
                            adds_outputs may add more */
  unsigned devices;      /* LADLE_ON_* bits */
  unsigned flags;        /* LADLE_OP_* bits */
  int num_args;
  const ladle_arg_schema *args;
  /* Outputs after the num_outputs fixed ones, as DALI adds them: one per input
   * given beyond min_inputs when outputs_per_extra_input is 1 (a labels input
   * gets a labels output), then those of bool arguments with adds_outputs. */
  int outputs_per_extra_input;
  /* When the string argument args[one_output_if_arg - 1] is its choice
   * number one_output_choice, the num_outputs fixed outputs are one
   * (random_object_bbox's format="box"); 0: never. */
  int one_output_if_arg;
  int one_output_choice;
  /* > 0: inputs from this index on are read on the host whatever the
   * operator's device (slice's anchor and shape inputs, filter's kernel, as in
   * DALI): a GPU operator takes them from CPU operators. */
  int host_inputs_from;
} ladle_op_schema;

/** Number of registered operators. */
LADLE_API int ladle_op_count(void);
/** Schema i (0 <= i < ladle_op_count()), or NULL. Static. */
LADLE_API const ladle_op_schema *ladle_op_get(int i);
/** The schema named `name`, or NULL. Static. */
LADLE_API const ladle_op_schema *ladle_op_find(const char *name);
/**
 * The arguments every operator takes besides its own (DALI's base schema):
 * `seed` (honoured by random operators: their draws come from (seed,
 * epoch, sample) instead of the pipeline's seed and the operator's
 * position) and hints that cannot change results. `*count` gets their
 * number. Static.
 */
LADLE_API const ladle_arg_schema *ladle_op_common_args(int *count);
/**
 * DALI's deprecated operator names (fn.image_decoder, fn.coin_flip, ...):
 * alias i (0 <= i < ladle_op_alias_count()) is the name returned, and
 * *target gets the name of the operator it stands for; NULL past the end.
 * add_op takes either name. Static.
 */
LADLE_API int ladle_op_alias_count(void);
LADLE_API const char *ladle_op_alias_get(int i, const char **target);
/** 1 when `name` is the argument's name or its deprecated_name. */
LADLE_API int ladle_arg_is_named(const ladle_arg_schema *arg, const char *name);

/* ------------------------------------------------------------------------ */
/* Thread pools                                                               */
/* ------------------------------------------------------------------------ */

/**
 * A pool of worker threads. A pipeline creates its own pool of num_threads
 * workers unless given one; several pipelines may share one pool, which must
 * then outlive them all.
 */
typedef struct ladle_thread_pool ladle_thread_pool;

/**
 * Starts `num_threads` (>= 1) workers. When `cpus` is not NULL, worker k is
 * pinned to core cpus[k % num_cpus] (Linux; elsewhere ignored). On Linux the
 * workers run at a niceness 10 above the caller's, so that a training loop's
 * own threads win the cores when both want them; the environment variable
 * LADLE_WORKER_NICE=n sets another offset (0: the caller's priority).
 */
LADLE_API ladle_status ladle_thread_pool_create(int num_threads, const int *cpus, int num_cpus,
                                                ladle_thread_pool **out);
/** Stops and joins the workers. NULL is allowed. No pipeline may still use the pool. */
LADLE_API void ladle_thread_pool_destroy(ladle_thread_pool *pool);
LADLE_API int ladle_thread_pool_num_threads(const ladle_thread_pool *pool);

/* ------------------------------------------------------------------------ */
/* Pipelines                                                                  */
/* ------------------------------------------------------------------------ */

/**
 * A pipeline: a graph of operators, built once and run many times. Each run
 * yields one batch per pipeline output.
 *
 * Threads: a pipeline runs its CPU work on its thread pool (num_threads
 * workers, or a shared pool) and owns exactly one more thread, the executor,
 * which prepares up to prefetch_queue_depth iterations ahead of the consumer.
 *
 * Determinism: every random choice is drawn from a counter-based generator
 * keyed by (seed, epoch, sample, operator), so the bytes of every batch are
 * the same for any num_threads and prefetch_queue_depth.
 */
typedef struct ladle_pipeline ladle_pipeline;

typedef struct ladle_pipeline_params {
  int batch_size;            /* samples per iteration, >= 1; no default */
  int num_threads;           /* CPU workers, >= 1; default 4; ignored when pool is set */
  int device_id;             /* CUDA device, or -1 for none; default -1 */
  uint64_t seed;             /* default 0 */
  int prefetch_queue_depth;  /* iterations prepared ahead, >= 1; default 2 */
  int64_t max_pixels;        /* decoded pixels allowed per image; default 512 Mpx */
  size_t host_pool_cap;      /* bytes of idle host buffers kept for reuse; default 1 GiB */
  ladle_thread_pool *pool;   /* a shared pool, or NULL to own one */
  const int *cpus;           /* cores to pin the own pool's workers to, or NULL */
  int num_cpus;
  /* Bad data (see ladle_pipeline_num_skipped). skip_bad_samples = 1: a
   * sample of a reader whose reading, decoding or processing fails with a
   * data error (LADLE_ERROR_IO, _CORRUPT_DATA, _UNSUPPORTED, _LIMIT; never a
   * wrong argument, CUDA or memory error) is dropped: its slot takes the next
   * good sample of the same batch (a duplicate), so the batch stays full and
   * every shard keeps its number of batches. The replacement depends only on
   * which samples are bad, so output stays a function of (seed, position).
   * A record found bad is replaced without a new attempt in later epochs.
   * In a pipeline fed only by external sources (no reader) a bad sample is
   * dropped instead: that iteration's batch is smaller by one (fed data
   * cannot be replaced; a batch with no good sample fails). Fed GPU batches
   * cannot be shrunk: their failures are not skipped. With both a reader and
   * external sources, nothing is skipped (the iteration fails as by default).
   * Default 0: the iteration fails, naming the sample. */
  int skip_bad_samples;
  int64_t max_skipped;        /* distinct bad records allowed, < 0: no limit (default -1); past it the */
  double max_skipped_fraction; /* iteration fails listing them. > 0: the limit is ceil(fraction x the
                                 reader's epoch_size) instead */
  /* >= 1: every iteration waits for fed_seeds seeds from ladle_pipeline_feed_seed (as it
   * waits for fed batches) and draws its random numbers as the first iteration of a pipeline
   * created with the first of them would: one built graph gives new, reproducible draws per run
   * (ladle.dynamic's cached operators). Operators given a seed slot (ladle_pipeline_set_node_seed)
   * draw from their own seed of the iteration instead. Readers still shuffle with `seed`.
   * At most 64. Default 0. */
  int fed_seeds;
} ladle_pipeline_params;

/** Fills `params` with the defaults. */
LADLE_API void ladle_pipeline_params_init(ladle_pipeline_params *params);

/** Creates an empty pipeline. The caller owns it and destroys it. */
LADLE_API ladle_status ladle_pipeline_create(const ladle_pipeline_params *params,
                                             ladle_pipeline **out);

/**
 * Stops the pipeline and frees it. Work in flight is abandoned: the call
 * waits for the running iteration's tasks to return (each checks for
 * cancellation between samples) and never for the consumer. Batches the
 * caller still holds stay valid. NULL is allowed.
 */
LADLE_API void ladle_pipeline_destroy(ladle_pipeline *pipeline);

/* An argument given to an operator: a constant, or a node's output (per sample). */
typedef struct ladle_arg {
  const char *name;
  ladle_value value; /* ignored when node >= 0 */
  int node;          /* a node id giving one value per sample, or -1 */
} ladle_arg;

/**
 * Adds an operator instance. `device` is "cpu", "gpu" or "mixed". Inputs are
 * node ids returned by earlier calls. Arguments are checked against the
 * schema now: an unknown name, a wrong type or a value out of range fails
 * with LADLE_ERROR_INVALID_ARGUMENT naming the operator and the argument.
 * `instance_name` may be NULL; readers are found by it (reader_meta).
 * On success the operator's outputs get the node ids first_output,
 * first_output+1, ... (as many as the schema has outputs).
 */
LADLE_API ladle_status ladle_pipeline_add_op(ladle_pipeline *pipeline, const char *op_name,
                                             const char *device, const int *inputs,
                                             int num_inputs, const ladle_arg *args, int num_args,
                                             const char *instance_name, int *first_output);

/* What a callback operator's function gets, once per iteration (on the
 * executor thread, never on two threads at once for one operator). */
typedef struct ladle_callback_call {
  int64_t iteration;
  int batch_size;               /* this iteration's samples: every output must hold as many */
  int num_inputs;
  ladle_batch *const *inputs;   /* borrowed: retain what is kept past the call */
  int num_outputs;
  ladle_batch **outputs;        /* the function stores one new reference per output */
  void *cuda_stream;            /* GPU operators: the pipeline's stream, synchronized before the call (its
                                   inputs are ready); GPU outputs must be ready in this stream's order */
  char *error;                  /* on failure: the message, at most error_size bytes with the NUL */
  size_t error_size;
} ladle_callback_call;

typedef struct ladle_callback {
  /* Returns LADLE_OK with every output set, or a failure status with `error`
   * written (outputs it set are released by the pipeline). */
  ladle_status (*call)(void *ctx, ladle_callback_call *call);
  /* Called once when the pipeline lets go of ctx (destroy, or a failed add); may be NULL. */
  void (*release)(void *ctx);
  void *ctx;
} ladle_callback;

/**
 * ladle_pipeline_add_op for an operator with LADLE_OP_CALLBACK: its outputs
 * are what `callback` returns. Their dtype, rank and layout are known from
 * the first iteration on: operators reading them check their inputs then
 * (the first run() reports what build would have), and every later
 * iteration must give the same dtype and rank. The callback's release runs
 * also when adding fails.
 */
LADLE_API ladle_status ladle_pipeline_add_callback_op(ladle_pipeline *pipeline, const char *op_name,
                                                      const char *device, const int *inputs, int num_inputs,
                                                      const ladle_arg *args, int num_args,
                                                      const char *instance_name, const ladle_callback *callback,
                                                      int *first_output);

/** Declares which nodes run() returns, in order. */
LADLE_API ladle_status ladle_pipeline_set_outputs(ladle_pipeline *pipeline, const int *nodes,
                                                  int num_nodes);

/**
 * Checks the graph, places operators, allocates what does not depend on the
 * data, and starts the executor. Idempotent. After it, no op may be added.
 */
LADLE_API ladle_status ladle_pipeline_build(ladle_pipeline *pipeline);

/** The number of outputs declared. */
LADLE_API int ladle_pipeline_num_outputs(const ladle_pipeline *pipeline);

/**
 * Returns the next iteration's outputs: one new batch reference per output,
 * written to outputs[0 .. num_outputs-1], owned by the caller. Builds the
 * pipeline first if needed. Blocks until the iteration is ready. If the
 * iteration failed, returns its status and ladle_last_error() names the
 * sample; the pipeline then moves on to the next iteration.
 */
LADLE_API ladle_status ladle_pipeline_run(ladle_pipeline *pipeline, ladle_batch **outputs);

/**
 * Waits until run() would return without blocking (an iteration is ready, or
 * run() would fail at once), for at most `timeout_ms` milliseconds (< 0: no
 * limit). Returns 1 when ready, 0 on timeout. Lets a caller wait in slices
 * and handle signals in between (Python's Ctrl-C) without losing the
 * iteration. Builds the pipeline first if needed (build errors: 1, run()
 * reports them).
 */
LADLE_API int ladle_pipeline_wait_ready(ladle_pipeline *pipeline, int timeout_ms);

/**
 * Feeds `batch` to the external_source operator named `source_name`, for a
 * coming iteration: each fed batch is used by exactly one iteration, first in
 * first out, without a copy (a new reference is taken; the caller keeps its
 * own). The batch must match the source's dtype and rank, be in host memory
 * for a "cpu" source or GPU memory for a "gpu" one, and hold 1 to batch_size
 * samples. An iteration runs once every source has a batch; all sources must
 * then have the same number of samples N, and the iteration's outputs have N
 * samples (with a reader in the graph, N must be batch_size). run() on a
 * pipeline whose sources have nothing left fails with LADLE_ERROR_STATE
 * instead of waiting. A source holds at most prefetch_queue_depth + 8 batches
 * no iteration has taken yet: feeding more fails with LADLE_ERROR_LIMIT (so
 * a producer that never runs the pipeline cannot fill memory). Builds the
 * pipeline first if needed; once built, it may
 * be called from any thread, also while another thread waits in run().
 */
LADLE_API ladle_status ladle_pipeline_feed(ladle_pipeline *pipeline, const char *source_name, ladle_batch *batch);

/**
 * Queues a seed for a coming iteration of a pipeline created with fed_seeds
 * = K >= 1, first in first out; each iteration takes K of them. Its random
 * operators draw from (the first seed, operator, epoch 0, sample 0..N-1),
 * the numbers of the first iteration of a pipeline created with
 * params.seed = that seed (operators given a slot by
 * ladle_pipeline_set_node_seed: from their seed). At most
 * (prefetch_queue_depth + 8) x K seeds may wait (LADLE_ERROR_LIMIT beyond),
 * as for fed batches. Fails with LADLE_ERROR_STATE without fed_seeds. Builds
 * the pipeline first if needed. Thread-safe with run().
 */
LADLE_API ladle_status ladle_pipeline_feed_seed(ladle_pipeline *pipeline, uint64_t seed);

/**
 * Gives the random operator whose first output is node `first_output` its own seed: in every
 * iteration it draws from (fed seed number `slot` of the iteration, 0 <= slot < fed_seeds,
 * random stream `stream`, epoch 0, its slot in the batch) -- the numbers an operator with
 * stream id `stream` draws in the first iteration of a pipeline fed that seed, whatever else
 * the graph holds (ladle.dynamic's captured loops replay separate calls in one graph this way).
 * Its output is then also never made smaller for its reader (the planner's size hints), so it
 * is byte for byte what the separate call gives.
 * Before build; fails with LADLE_ERROR_STATE without fed_seeds or after build.
 */
LADLE_API ladle_status ladle_pipeline_set_node_seed(ladle_pipeline *pipeline, int first_output, int slot,
                                                    int64_t stream);

/**
 * The CUDA stream (a cudaStream_t) the pipeline's GPU work runs on, or NULL
 * when it has no GPU operators or is not built. A producer of fed GPU data
 * orders its writes before this stream (DLPack's `stream` argument does).
 */
LADLE_API void *ladle_pipeline_cuda_stream(const ladle_pipeline *pipeline);

/* What a reader knows about its epoch (DALI's reader metadata). */
typedef struct ladle_reader_meta {
  int64_t epoch_size;        /* samples in the whole data set */
  int64_t epoch_size_padded; /* epoch_size rounded so every shard has the same count of full batches when pad_last_batch, else epoch_size */
  int number_of_shards;
  int shard_id;
  int pad_last_batch;
  int stick_to_shard;
  int64_t index_bytes;       /* host memory the reader's index of its data set holds (readers.coco's
                                annotations); 0 where a reader does not report it */
} ladle_reader_meta;

/** The metadata of the reader named `reader_name`. */
LADLE_API ladle_status ladle_pipeline_reader_meta(ladle_pipeline *pipeline, const char *reader_name,
                                                  ladle_reader_meta *meta);

/**
 * The reader's record index of each sample of the iteration run() returned
 * last (after any skip_bad_samples substitution): up to `capacity` values
 * are written to `records`, their number to *count (0 without a reader or
 * before the first run). Thread-safe with run(). With
 * ladle_pipeline_record_name this names the file a sample came from.
 */
LADLE_API ladle_status ladle_pipeline_last_records(ladle_pipeline *pipeline, int64_t *records, int capacity,
                                                   int *count);

/**
 * The name (file path or record name) of record `index` of the reader
 * instance `reader_name`, or NULL when there is no such reader or record.
 * The string belongs to the pipeline and stays valid until it is destroyed.
 */
LADLE_API const char *ladle_pipeline_record_name(ladle_pipeline *pipeline, const char *reader_name,
                                                 int64_t index);

/* Where a pipeline is in its stream of iterations: enough to resume. */
typedef struct ladle_pipeline_position {
  int64_t iteration; /* iterations handed out by run() so far */
} ladle_pipeline_position;

/** The position after the last iteration run() returned. */
LADLE_API ladle_status ladle_pipeline_get_position(const ladle_pipeline *pipeline,
                                                   ladle_pipeline_position *position);

/**
 * Moves the pipeline so that the next run() returns the iteration at
 * `position`, discarding iterations prepared ahead. Since all randomness is
 * keyed by sample and epoch, the batches are identical to an uninterrupted
 * run's. Not for pipelines with external sources (LADLE_ERROR_STATE): fed
 * data has no position to return to.
 */
LADLE_API ladle_status ladle_pipeline_set_position(ladle_pipeline *pipeline,
                                                   const ladle_pipeline_position *position);

/* Where a pipeline's time went since it was built: counters the executor
 * keeps, cheap enough to be always on. wait_seconds is the consumer's side:
 * a training loop that never waits in run() is not slowed by the loader. */
typedef struct ladle_memory_stats {
  uint64_t used_bytes;          /* in blocks handed out now (to iterations in flight and to batches the user holds) */
  uint64_t peak_used_bytes;     /* the high-water mark of used_bytes */
  uint64_t reserved_bytes;      /* obtained from the system and not given back: used, and idle kept for reuse */
  uint64_t peak_reserved_bytes; /* the high-water mark of reserved_bytes */
} ladle_memory_stats;

typedef struct ladle_pipeline_stats {
  int64_t iterations;     /* iterations the executor prepared (including ones dropped by set_position) */
  double prepare_seconds; /* the executor's wall time preparing them (with two stages: both threads' busy time) */
  double wait_seconds;    /* wall time run() blocked waiting for a prepared iteration */
  int64_t skipped;        /* bad records skipped (skip_bad_samples) */
  /* The pipeline's memory pools (all zero for the GPU ones without GPU operators). */
  ladle_memory_stats host_pageable, host_pinned, device;
  /* With two executor stages (a pipeline with GPU or mixed operators): the
   * busy time of the host stage's thread (readers, CPU operators) and of the
   * device stage's thread (the rest); both 0 with one stage. */
  double host_stage_seconds, device_stage_seconds;
  /* Of the device stage's time: blocked until the GPU finished an earlier
   * iteration (every slot of iterations in flight was taken). Near the device
   * stage's time: the GPU, not the host, is what the pipeline waits for. */
  double gpu_wait_seconds;
} ladle_pipeline_stats;

/** The pipeline's counters so far (all zero before build). */
LADLE_API ladle_status ladle_pipeline_get_stats(const ladle_pipeline *pipeline, ladle_pipeline_stats *stats);

/** Gives the idle memory of the pipeline's pools (host, pinned and device)
 * back to the system; *released (may be NULL) gets the bytes. Memory in use
 * stays: the iterations prepared ahead and the batches the caller still holds.
 * Meant for between run() calls (after an epoch, before evaluation): the
 * iterations that follow allocate again, so they are slower until the pools
 * are warm. Thread-safe. */
LADLE_API ladle_status ladle_pipeline_release_memory(ladle_pipeline *pipeline, uint64_t *released);

#define LADLE_OP_MAX_COUNTERS 8

/* One operator's share of the executor's time. */
typedef struct ladle_op_stats {
  const char *op_name;       /* the schema's name, e.g. "resize" */
  const char *instance_name; /* as given to add_op, or NULL */
  const char *device;        /* "cpu", "gpu" or "mixed" after placement */
  double seconds;            /* executor wall time in it: its parallel passes over the samples on the CPU;
                              * for GPU operators the time to queue the work, including any host wait */
  double setup_seconds;      /* of it, in its setup pass (output shapes, per-sample decisions) */
  int64_t cpu_passes;        /* its passes over the samples on the CPU (setup and run), */
  int64_t inline_passes;     /* of them, those its stage's thread ran alone: cheap ones, which the workers
                              * would slow down (LADLE_EXECUTOR_INLINE_US, pipeline/executor.c) */
  int fused;                 /* 1 when it runs inside its consumer: in its GPU kernel (an epilogue), or in its
                              * pass, CPU or GPU (an element-wise chain); its time is counted there */
  const char *stage;         /* the executor stage that runs it, "host" or "device" (a pipeline with GPU or
                              * mixed operators, built); NULL with one stage or before build */
  /* Counts the operator keeps, by name (e.g. the image decoders' images per decoder: "cpu", "hw",
   * "gpu_hybrid", "retried_on_cpu"); num_counters of them, 0 for most operators. Names are static. */
  int num_counters;
  const char *counter_names[LADLE_OP_MAX_COUNTERS];
  int64_t counters[LADLE_OP_MAX_COUNTERS];
} ladle_op_stats;

/* A sample skipped as bad (skip_bad_samples). */
typedef struct ladle_skipped_sample {
  int64_t record;     /* the reader's record index */
  int64_t epoch;      /* the epoch it was found in */
  int64_t iteration;  /* the iteration it was found in */
  const char *name;   /* its file path or record name ("" when it has none) */
  const char *error;  /* why it failed */
} ladle_skipped_sample;

/** Bad records skipped so far (each counted once). Thread-safe. */
LADLE_API int64_t ladle_pipeline_num_skipped(const ladle_pipeline *pipeline);
/** Skipped record `index` (0 <= index < num_skipped), in the order found. The strings live as long as the
 * pipeline. Thread-safe. */
LADLE_API ladle_status ladle_pipeline_get_skipped(const ladle_pipeline *pipeline, int64_t index,
                                                  ladle_skipped_sample *out);

/** The number of operators added to the pipeline. */
LADLE_API int ladle_pipeline_num_ops(const ladle_pipeline *pipeline);

/** Operator `index` (in the order added): names, placement and time. The strings live as long as the pipeline. */
LADLE_API ladle_status ladle_pipeline_get_op_stats(const ladle_pipeline *pipeline, int index, ladle_op_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* LADLE_LADLE_H */

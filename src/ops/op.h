/* How an operator is written. Each operator is one ladle__op_def: its schema
 * (name, inputs, outputs, typed arguments with defaults and docs: the only
 * place these are written down; Python's fn.* is generated from it) and its
 * CPU kernel in two steps per sample: setup (output shapes, so that a batch's
 * memory can be taken in one block) and run (write the outputs). */
#ifndef LADLE_OPS_OP_H
#define LADLE_OPS_OP_H

#include <stdatomic.h>

#include "core/batch.h"
#include "core/error.h"
#include "core/rng.h"
#include "io/sampler.h"

#define LADLE_MAX_INPUTS 4
#define LADLE_MAX_OUTPUTS 6 /* readers.coco: images, boxes, labels, polygons, vertices, image ids */

typedef struct ladle__node ladle__node;

/* Where a sample of an iteration comes from: ladle__sample_ref (io/sampler.h).
 * Without a reader, index = position = iteration * batch_size + slot. */

/* What an operator sees of one sample while it runs. */
typedef struct ladle__sample {
  int slot;          /* index in the batch */
  int worker;        /* the worker thread, for per-worker scratch */
  const ladle__sample_ref *ref;
  const char *name;  /* the sample's file path or record name, for error messages */
  void *state;       /* the op's per-sample state (sample_state_size bytes), kept from setup to run */
} ladle__sample;

/* A sample's tensor: input or output. */
typedef struct ladle__tensor {
  void *data;
  const int64_t *shape;
  int ndim;
  ladle_dtype dtype;
} ladle__tensor;

/* The element type, rank and layout of an output, fixed at build; ndim < 0:
 * known only once the first iteration has run (a callback operator's
 * outputs, and what is computed from them: see ladle__node.deferred). */
typedef struct ladle__out_desc {
  ladle_dtype dtype;
  int ndim;
  char layout[8];
} ladle__out_desc;

/* What a GPU or mixed operator gets for its batch-wide run: the pipeline's
 * stream and memory, and a way to keep host memory alive until the
 * iteration's GPU work has completed. */
typedef struct ladle__gpu ladle__gpu;

/* The per-pixel epilogues a GPU kernel can apply (ladle__op_def.epilogue),
 * each with its per-sample parameter struct. */
typedef enum ladle__epilogue_kind {
  LADLE__EPILOGUE_NONE,
  LADLE__EPILOGUE_CMN /* ladle__cmn_params (ops/geometry/normalize_kernel.h): crop, mirror, normalize, cast,
                         layout of uint8 HWC pixels */
} ladle__epilogue_kind;

typedef struct ladle__op_def {
  /* schema.flags: LADLE_OP_MOVES_DATA operators (transfer.to_gpu) take no
   * random stream, so adding .gpu() does not change other operators' draws;
   * a LADLE_OP_EXTERNAL operator's output is the batch the application fed:
   * the executor takes it as is and runs nothing per sample. */
  ladle_op_schema schema;
  size_t sample_state_size;
  /* Build time: check argument combinations and input descs (node->in[k]),
   * set every node->out[k]; may set node->state. Required. */
  ladle_status (*init)(ladle__node *node);
  /* Frees node->state. Optional. */
  void (*fini)(ladle__node *node);
  /* Readers only: the samples of an iteration (batch_size refs). */
  ladle_status (*plan)(ladle__node *node, int64_t iteration, ladle__sample_ref *refs);
  /* Readers only: the name of record `index` (its path), for messages. */
  const char *(*sample_name)(ladle__node *node, int64_t index);
  /* Readers only: DALI's reader metadata. */
  ladle_status (*reader_meta)(ladle__node *node, ladle_reader_meta *meta);
  /* Per sample: set each output's shape with ladle__set_shape. Required. */
  ladle_status (*setup)(ladle__node *node, ladle__sample *s);
  /* 1: setup reads only the node's inputs, per-sample arguments, config and
   * what init (and planning) left in node->state, and writes only the
   * sample's state and output shapes (no scratch, no node state): when the
   * node starts the executor's device stage, the host stage may run its setup
   * an iteration ahead of run/run_batch (pipeline/executor.c: a CPU node, or
   * LADLE_EXECUTOR_SETUP_AHEAD=1). */
  int setup_ahead;
  /* Per sample: write the outputs. Required for operators that run on the CPU. */
  ladle_status (*run)(ladle__node *node, ladle__sample *s);
  /* GPU and mixed operators: queue the whole batch's work on the pipeline's
   * stream, after setup has run for every sample on the host. */
  ladle_status (*run_batch)(ladle__node *node, ladle__gpu *g);
  /* 1: run_batch gets the side stream (pipeline/gpu.h, ladle__gpu_side) and
   * its outputs come from the side pool: for nodes whose inputs are host
   * memory and whose GPU work is long and not kernels (the JPEG engines),
   * which then overlaps the previous iteration's kernels. */
  int own_stream;
  /* 1: output 0 is input 0's memory seen with the dtype, shapes (setup) and
   * layout (init) of output 0, every sample keeping its size in bytes
   * (reshape, squeeze...): the executor makes a view (ladle__batch_view) and
   * calls neither run nor run_batch. */
  int views_input;
  /* Operators that make their own output batches (LADLE_OP_CALLBACK):
   * called once per iteration instead of setup/run/run_batch; sets every
   * node->out_batches[k] to a new reference of `batch` samples, or fails
   * having set none. host_pool: for batch headers (views). */
  ladle_status (*produce)(ladle__node *node, ladle__gpu *g, ladle__pool *host_pool, int64_t iteration, int batch);

  /* Fusion, as the schema's flags declare it (pipeline/plan.c decides).
   * LADLE_OP_EPILOGUE: the kind of epilogue the operator is, and sample
   * `slot`'s parameters (a struct of that kind) once setup has run. */
  ladle__epilogue_kind epilogue;
  ladle_status (*epilogue_params)(ladle__node *node, int slot, void *params);
  /* LADLE_OP_ACCEPTS_EPILOGUE: whether this GPU node's kernel can apply
   * `consumer`'s epilogue (its kind, this node's input types); and the batch
   * run with it, which writes consumer's output. The executor then runs
   * neither this node's run_batch nor the consumer's. */
  int (*accepts_epilogue)(const ladle__node *node, const ladle__node *consumer);
  ladle_status (*run_batch_epilogue)(ladle__node *node, ladle__node *consumer, ladle__gpu *g);
  /* LADLE_OP_ELEMENTWISE: takes `producer` (on this node's device, whose
   * output is this node's input `input` and read by nothing else) into this
   * node's own computation; 1 when it did, 0 when it cannot (another kind of
   * operator, or limits of its kernel). The producer then only runs setup
   * (its output's shapes and checks), and this node reads producer's inputs
   * (producer->in_batches, set by the time this node runs) itself. */
  int (*merge_producer)(ladle__node *node, int input, const ladle__node *producer);

  /* Operators that read only one of their inputs per sample (the join of an
   * `if`): the index of the input sample `s` reads, from the node's
   * per-sample arguments. The executor then computes only the samples
   * that are read (pipeline/demand.h). */
  int (*selects_input)(const ladle__node *node, const ladle__sample *s);

  /* Planning hints (pipeline/plan.c). fixed_output_size: 1 and the size when
   * output 0 has the same width x height for every sample whatever the
   * input's resolution (resize to a fixed size). allow_smaller_output: this
   * node may make its output smaller, not below min_width x min_height (a
   * decoder's reduced DCT scale), since its only reader is such a node. */
  int (*fixed_output_size)(const ladle__node *node, int *width, int *height);
  void (*allow_smaller_output)(ladle__node *node, int min_width, int min_height);

  /* Optional: the operator's counts for ladle_op_stats, at most
   * LADLE_OP_MAX_COUNTERS (static names); returns how many. Called from any
   * thread while the pipeline runs (read atomics); node->state may be NULL. */
  int (*counters)(const ladle__node *node, const char **names, int64_t *values);
} ladle__op_def;

/* The devices an operator built into this library can run on: GPU variants
 * exist only when CUDA was compiled in. */
#ifdef LADLE_HAVE_CUDA
#define LADLE_ON_CPU_GPU (LADLE_ON_CPU | LADLE_ON_GPU)
#define LADLE_ON_CPU_MIXED (LADLE_ON_CPU | LADLE_ON_MIXED)
#else
#define LADLE_ON_CPU_GPU LADLE_ON_CPU
#define LADLE_ON_CPU_MIXED LADLE_ON_CPU
#endif

/* An argument as resolved for a node: the given value or the default, or a
 * per-sample source. */
typedef struct ladle__arg {
  int given;        /* 1: the user gave it (by value or by node) */
  ladle_value value;/* a deep copy owned by the node, or the schema default */
  int source;       /* index into the node's arg_sources, or -1 */
} ladle__arg;

struct ladle__node {
  const ladle__op_def *def;
  int id;                    /* position among the pipeline's operators that compute: keys the RNG */
  int64_t seed;              /* the operator's own seed (the common argument `seed`), or -1 */
  int seed_slot;             /* >= 0: draws from the iteration's fed seed of that slot (ladle_pipeline_set_node_seed) */
  int64_t rng_stream;        /* with seed_slot: the random stream it draws as */
  unsigned device;           /* one LADLE_ON_* bit */
  char *name;                /* instance name, or NULL */
  int num_inputs;
  int inputs[LADLE_MAX_INPUTS];  /* producer value ids */
  ladle__out_desc in[LADLE_MAX_INPUTS];
  int num_outputs;
  int first_output;              /* value id of output 0 */
  ladle__out_desc out[LADLE_MAX_OUTPUTS];
  ladle__arg *args;              /* schema.num_args, in schema order */
  int num_sources;
  int sources[LADLE_MAX_INPUTS]; /* value ids of per-sample arguments */
  void *state;                   /* the op's own, from init */
  int all_samples;               /* set by init when setup/run read other samples' state (normalize with
                                    batch=True): the executor then computes every sample (pipeline/demand.h) */
  /* GPU fusion (pipeline/plan.c): fused_into runs inside the kernel of
   * fused_from (its producer, which accepts it as an epilogue). */
  ladle__node *fused_into, *fused_from;
  /* 1: fused_into computes this node's output itself (merge_producer): the
   * executor runs this node's setup, gives its output shapes but no memory,
   * and runs nothing else. */
  int merged;
  const struct ladle__pipeline_config *config;
  ladle_callback callback;       /* LADLE_OP_CALLBACK operators: the application's function */
  /* 1: an input's desc is known only at run time (it comes from a callback
   * operator), so init runs on the executor before the first iteration uses
   * the node (ladle__node_init_late). */
  int deferred;

  /* Per iteration, owned by the executor. */
  ladle_batch *in_batches[LADLE_MAX_INPUTS];
  ladle_batch *source_batches[LADLE_MAX_INPUTS];
  ladle_batch *out_batches[LADLE_MAX_OUTPUTS];
  int64_t *out_shapes;           /* batch_size * num_outputs * LADLE_MAX_NDIM */
  void **scratch;                /* per worker, grown on demand, kept for reuse */
  size_t *scratch_size;
  uint8_t *sample_states;        /* batch_size * sample_state_size */
  const unsigned char *active;   /* NULL, or per slot 1: computed, 0: left empty (pipeline/demand.h) */
  _Atomic int64_t busy_ns;       /* the executor's wall time in this node (ladle_op_stats) */
  _Atomic int64_t setup_ns;      /* of it, in the setup pass */
  int64_t pass_work_ns[2];       /* the samples' own time in the last run [0] and setup [1] pass; 0: none yet
                                    (the executor runs a cheap pass on its own thread) */
  _Atomic int64_t cpu_passes, inline_passes; /* ladle_op_stats */
};

/* Pipeline-wide settings an operator may read. */
typedef struct ladle__pipeline_config {
  int batch_size;
  int device_id;
  uint64_t seed;
  const uint64_t *seeds; /* fed_seeds: this iteration's seeds (seeds[0] == seed) */
  int64_t max_pixels;
  int num_workers;
} ladle__pipeline_config;

/* --- helpers for operator code ------------------------------------------ */

ladle__tensor ladle__input(const ladle__node *node, const ladle__sample *s, int k);
ladle__tensor ladle__output(const ladle__node *node, const ladle__sample *s, int k);
/* In setup: the shape of output k for this sample (node->out[k].ndim values). */
void ladle__set_shape(ladle__node *node, const ladle__sample *s, int k, const int64_t *shape);

/* Argument values. The per-sample forms read the argument's node for this
 * sample when it has one; the plain forms read constants. */
int ladle__arg_given(const ladle__node *node, int arg);
/* The executor's check of per-sample argument values against the schema
 * (range, bool, host memory), the same checks as constants get. `names`:
 * the samples' names for the message, or NULL. */
ladle_status ladle__check_arg_sources(const ladle__node *node, int num_samples, const char *const *names);
int64_t ladle__arg_int(const ladle__node *node, const ladle__sample *s, int arg);
double ladle__arg_float(const ladle__node *node, const ladle__sample *s, int arg);
const ladle_value *ladle__arg_value(const ladle__node *node, int arg);
const char *ladle__arg_string(const ladle__node *node, int arg);

/* GPU helpers (pipeline/gpu.c). */
struct ladle__gpu {
  void *stream;               /* the pipeline's cudaStream_t */
  int device_id;
  ladle__pool *device_pool;   /* device memory: stream-ordered reuse */
  ladle__pool *pinned_pool;   /* pinned host memory */
  ladle_thread_pool *workers; /* the pipeline's workers, for CPU work inside run_batch */
  void *state;                /* the executor's, per iteration */
  /* Skipping bad samples (on_error="skip"): per slot, set by
   * ladle__gpu_sample_failed; NULL when the pipeline does not skip. */
  unsigned char *failed;
  char **messages;
};

/* In run_batch, after sample `slot` failed with `st` (message in
 * ladle_last_error()): 1 when the pipeline skips bad samples and `st` is a
 * data error, so the slot is noted for replacement (run_batch still returns
 * an error: the executor retries the batch without it); 0 otherwise. */
int ladle__gpu_sample_failed(ladle__gpu *g, int slot, ladle_status st);

/* Pinned host memory and device memory of `bytes` each, for one launch's
 * parameters: both stay valid until the iteration's GPU work has completed. */
ladle_status ladle__gpu_params(ladle__gpu *g, size_t bytes, void **host, void **dev);
/* Keeps a host batch (read by queued copies) alive until the iteration's GPU
 * work has completed. */
ladle_status ladle__gpu_keep(ladle__gpu *g, ladle_batch *batch);
/* Pinned host scratch, and device scratch, of `bytes`, alive until the
 * iteration's GPU work completes. */
ladle_status ladle__gpu_host_scratch(ladle__gpu *g, size_t bytes, void **host);
ladle_status ladle__gpu_device_scratch(ladle__gpu *g, size_t bytes, void **dev);

/* A per-worker buffer of at least `size` bytes, reused across samples and
 * iterations (so a warm pipeline allocates nothing). Fails with OOM. */
ladle_status ladle__scratch(ladle__node *node, const ladle__sample *s, size_t size, void **out);

/* The random stream of this operator for this sample. */
void ladle__sample_rng(const ladle__node *node, const ladle__sample *s, ladle__rng *rng);

/* Fails with a message naming the operator, e.g. in init. */
#define LADLE_OP_FAIL(node, status, ...) ladle__op_fail((node), (status), __VA_ARGS__)
ladle_status ladle__op_fail(const ladle__node *node, ladle_status status, const char *fmt, ...)
    LADLE__PRINTF(3, 4);


/* Schema-building shorthands: an argument row is
 *   {LADLE_FLOAT_ARG("crop_w", 0), .per_sample = 1, LADLE_RANGE(0, 1e9), .doc = "..."}
 * the macro giving name, type and default, named fields the rest. */
#define LADLE_INT_VALUE(v) {LADLE_ARG_INT, 1, {.i = (v)}}
#define LADLE_BOOL_VALUE(v) {LADLE_ARG_BOOL, 1, {.i = (v)}}
#define LADLE_FLOAT_VALUE(v) {LADLE_ARG_FLOAT, 1, {.f = (v)}}
#define LADLE_STRING_VALUE(v) {LADLE_ARG_STRING, 1, {.s = (v)}}
#define LADLE_DTYPE_VALUE(v) {LADLE_ARG_DTYPE, 1, {.i = (v)}}
#define LADLE_FLOATS_VALUE(arr) {LADLE_ARG_FLOATS, (int)(sizeof(arr) / sizeof((arr)[0])), {.floats = (arr)}}
#define LADLE_INTS_VALUE(arr) {LADLE_ARG_INTS, (int)(sizeof(arr) / sizeof((arr)[0])), {.ints = (arr)}}
#define LADLE_NONE_VALUE(type) {(type), 0, {.i = 0}}

#define LADLE_INT_ARG(nm, v) .name = (nm), .type = LADLE_ARG_INT, .default_value = LADLE_INT_VALUE(v)
#define LADLE_BOOL_ARG(nm, v) .name = (nm), .type = LADLE_ARG_BOOL, .default_value = LADLE_BOOL_VALUE(v)
#define LADLE_FLOAT_ARG(nm, v) .name = (nm), .type = LADLE_ARG_FLOAT, .default_value = LADLE_FLOAT_VALUE(v)
#define LADLE_STRING_ARG(nm, v) .name = (nm), .type = LADLE_ARG_STRING, .default_value = LADLE_STRING_VALUE(v)
#define LADLE_DTYPE_ARG(nm, v) .name = (nm), .type = LADLE_ARG_DTYPE, .default_value = LADLE_DTYPE_VALUE(v)
#define LADLE_FLOATS_ARG(nm, arr) .name = (nm), .type = LADLE_ARG_FLOATS, .default_value = LADLE_FLOATS_VALUE(arr)
#define LADLE_INTS_ARG(nm, arr) .name = (nm), .type = LADLE_ARG_INTS, .default_value = LADLE_INTS_VALUE(arr)
/* No default: the operator decides what leaving it out means. */
#define LADLE_OPTIONAL_ARG(nm, tp) .name = (nm), .type = (tp), .default_value = LADLE_NONE_VALUE(tp)
#define LADLE_REQUIRED_ARG(nm, tp) LADLE_OPTIONAL_ARG(nm, tp), .required = 1
#define LADLE_RANGE(lo, hi) .has_range = 1, .min = (lo), .max = (hi)
/* A string argument's accepted values, e.g. LADLE_CHOICES("error", "pad"). */
#define LADLE_CHOICES(...) .choices = (const char *const[]){__VA_ARGS__, NULL}

/* Finds `text` (case-insensitive, an optional "INTERP_"-style prefix allowed)
 * among `choices` (NULL-terminated); returns its index or -1. */
int ladle__choice(const char *text, const char *const *choices, const char *prefix);

/* The index of a string argument's value among its schema's choices (the
 * schema checked it when the operator was added); -1 when not given. */
int ladle__arg_choice(const ladle__node *node, int arg);

#endif

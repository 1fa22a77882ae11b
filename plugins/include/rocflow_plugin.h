/*
 * rocflow_plugin.h: the rocflow plugin ABI, version 1.
 *
 * A plugin is a shared library that exports one function, `rocflow_plugin_v1`, returning a
 * descriptor: the ABI version it was built for, its name, and a table of functions for each
 * kind it provides (a transform, a sink, or both). rocflow loads it when a pipeline names it
 * (`kind = "plugin"`, `plugin = "NAME"` finds `librocflow_plugin_NAME.so` on
 * ROCFLOW_PLUGIN_PATH or next to the rocflow binary) and runs or replays it; `rocflow
 * validate` and `explain` only read its dynamic symbols, and run none of its code.
 *
 * Records cross the boundary as Arrow record batches, through the Arrow C Data Interface
 * (https://arrow.apache.org/docs/format/CDataInterface.html): a batch is a struct array with
 * one child per column, and its schema. One batch holds records of one kind, named by its
 * table (`kernel_dispatch`, `api`, `memory_copy`, `counter_sample`, ...), with the columns
 * rocflow's CSV sink writes: stored fields, then columns resolved from the run's metadata
 * (`kernel_name`, `duration_ns`, `domain`, `operation`, `direction`, `counter`), then those
 * earlier transforms added. The schema's metadata holds `rocflow.hostname`, the host of the
 * process the records come from.
 *
 * Calls:
 * - Every function returning RocflowStatus returns ROCFLOW_OK, or another status and leaves
 *   a message for `last_error`, which returns the message of the last failed call on the
 *   calling thread (valid until the next call into the plugin on that thread), or NULL.
 * - `create` receives the pipeline's `options` as a JSON object (UTF-8, NUL-terminated,
 *   `{}` when there are none), valid during the call, and stores an opaque instance
 *   pointer (NULL is allowed). `rocflow run` and `replay`, before they start, create each
 *   instance once to check the options and destroy it again: a
 *   failing `create` is reported as an error of the pipeline. `destroy` is always called,
 *   once, for every instance `create` made.
 * - One instance is called from one thread at a time (not always the same thread);
 *   different instances may be called concurrently.
 * - An input batch is lent for the call. A plugin may keep its arrays by moving them out
 *   (copy the struct, then set the original's `release` to NULL); rocflow releases what is
 *   left when the call returns.
 *
 * Transforms: `process` receives a batch and fills `out_schema` and `out_array` (passed in
 * released, all zero) with a batch that says what becomes of the records:
 * - the records it keeps: if the output has the column ROCFLOW_ROW_COLUMN (uint32), its
 *   values are the input rows kept, in increasing order; otherwise it must have as many
 *   rows as the input, and all are kept. Every input batch carries that column (row
 *   numbers 0, 1, ...), so a plugin that filters the whole batch keeps it right;
 * - the columns it adds: every output column the input does not have (integers, floats,
 *   booleans or strings, dictionary-encoded or not; nulls allowed) is added to the kept
 *   records. Output columns the input has are ignored (records' own fields cannot be
 *   changed), so returning the input batch with one more column is the easy way.
 * Returning the input unchanged passes every record on. `rocflow run` and `replay` also run
 * a new instance on one sample record of each kind the transform takes, to check it and
 * learn its columns (which later filters and derived columns may then use).
 *
 * Sinks: `open` receives the path to write the output at before the first `write`: in a
 * hidden directory rocflow stages, under the final name (placeholders filled in). Then
 * `write` is called with each batch of the kinds the sink takes, and `finish` completes
 * the output and lists the paths written, in `written` (the strings belong to the
 * instance and must stay valid until `destroy`). Once `finish` succeeded, rocflow moves
 * what the sink wrote in that directory beside the pipeline's path; when the run stops
 * early, it removes it.
 * A failing sink stops alone; the pipeline's other sinks go on.
 */
#ifndef ROCFLOW_PLUGIN_H
#define ROCFLOW_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The Arrow C Data Interface, as its specification gives it. */
#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE

#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4

struct ArrowSchema {
  const char *format;
  const char *name;
  const char *metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema **children;
  struct ArrowSchema *dictionary;
  void (*release)(struct ArrowSchema *);
  void *private_data;
};

struct ArrowArray {
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void **buffers;
  struct ArrowArray **children;
  struct ArrowArray *dictionary;
  void (*release)(struct ArrowArray *);
  void *private_data;
};

#endif /* ARROW_C_DATA_INTERFACE */

/* The ABI version this header describes; a plugin's descriptor must carry it. */
#define ROCFLOW_PLUGIN_ABI_VERSION 1u

/* The name of the function every plugin exports. */
#define ROCFLOW_PLUGIN_ENTRY "rocflow_plugin_v1"

/* The row-number column of a transform's input, and of its output when it drops rows. */
#define ROCFLOW_ROW_COLUMN "rocflow.row"

/* The schema metadata key of the records' host name. */
#define ROCFLOW_HOSTNAME_KEY "rocflow.hostname"

typedef int32_t RocflowStatus;
#define ROCFLOW_OK 0
#define ROCFLOW_ERROR 1
/* A Rust plugin panicked; the panic was caught at the boundary. */
#define ROCFLOW_PANIC 2

/* Records of one kind. */
typedef struct RocflowBatch {
  /* The record kind, e.g. "kernel_dispatch"; an aggregate transform's name for its table. */
  const char *table;
  /* A struct type, one child per column. */
  struct ArrowSchema schema;
  /* A struct array of that type, one element per record. */
  struct ArrowArray array;
} RocflowBatch;

/* The paths a sink wrote. */
typedef struct RocflowPaths {
  const char *const *paths;
  size_t count;
} RocflowPaths;

typedef struct RocflowTransform {
  RocflowStatus (*create)(const char *options_json, void **instance);
  RocflowStatus (*process)(void *instance, RocflowBatch *input, struct ArrowSchema *out_schema,
                           struct ArrowArray *out_array);
  void (*destroy)(void *instance);
} RocflowTransform;

typedef struct RocflowSink {
  RocflowStatus (*create)(const char *options_json, void **instance);
  RocflowStatus (*open)(void *instance, const char *path);
  RocflowStatus (*write)(void *instance, RocflowBatch *batch);
  RocflowStatus (*finish)(void *instance, RocflowPaths *written);
  void (*destroy)(void *instance);
} RocflowSink;

typedef struct RocflowPlugin {
  /* ROCFLOW_PLUGIN_ABI_VERSION, as the plugin was built. */
  uint32_t abi_version;
  /* What `rocflow plugins list` shows: a short name, the plugin's own version, a line on
     what it does. */
  const char *name;
  const char *version;
  const char *description;
  /* NULL for a plugin that is not a transform. */
  const RocflowTransform *transform;
  /* NULL for a plugin that is not a sink. */
  const RocflowSink *sink;
  const char *(*last_error)(void);
} RocflowPlugin;

#if defined(__GNUC__) || defined(__clang__)
#define ROCFLOW_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define ROCFLOW_PLUGIN_EXPORT
#endif

/* The entry point: returns the plugin's descriptor, which must stay valid while the
   library is loaded (rocflow never unloads a plugin). */
ROCFLOW_PLUGIN_EXPORT const RocflowPlugin *rocflow_plugin_v1(void);

#ifdef __cplusplus
}
#endif

#endif /* ROCFLOW_PLUGIN_H */

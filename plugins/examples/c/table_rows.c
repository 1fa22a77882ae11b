/*
 * A rocflow sink plugin in C: for each table, the number of records and the sum of their
 * `duration_ns` column (where they have one), written as CSV to the sink's path when the
 * run ends.
 *
 *   cc -shared -fPIC -O2 -I plugins/include plugins/examples/c/table_rows.c \
 *      -o librocflow_plugin_table_rows.so
 *
 *   [[sink]]
 *   name = "rows"
 *   kind = "plugin"
 *   plugin = "table_rows"
 *   path = "rocflow-out/rows.csv"
 */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rocflow_plugin.h"

enum { MAX_TABLES = 64 };

struct table {
  char name[64];
  int64_t records;
  int64_t duration_ns;
};

struct table_rows {
  char *path;
  const char *written[1];
  size_t count;
  struct table tables[MAX_TABLES];
};

static _Thread_local char last_error[256];

static RocflowStatus fail(const char *message) {
  snprintf(last_error, sizeof last_error, "%s", message);
  return ROCFLOW_ERROR;
}

/* A failed file operation on `path`, with the system's reason. */
static RocflowStatus fail_at(const char *what, const char *path) {
  snprintf(last_error, sizeof last_error, "%s %s: %s", what, path, strerror(errno));
  return ROCFLOW_ERROR;
}

static const char *get_last_error(void) { return last_error; }

static RocflowStatus create(const char *options_json, void **instance) {
  if (strcmp(options_json, "{}") != 0) return fail("table_rows takes no options");
  struct table_rows *self = calloc(1, sizeof *self);
  if (self == NULL) return fail("out of memory");
  *instance = self;
  return ROCFLOW_OK;
}

static RocflowStatus open_output(void *instance, const char *path) {
  struct table_rows *self = instance;
  self->path = strdup(path);
  return self->path != NULL ? ROCFLOW_OK : fail("out of memory");
}

/* The sum of an int64 column (Arrow format "l") named `name`, 0 if there is none. */
static int64_t sum(const RocflowBatch *batch, const char *name) {
  for (int64_t c = 0; c < batch->schema.n_children; c++) {
    const struct ArrowSchema *field = batch->schema.children[c];
    if (strcmp(field->name, name) != 0 || strcmp(field->format, "l") != 0) continue;
    const struct ArrowArray *column = batch->array.children[c];
    const int64_t *values = column->buffers[1];
    /* A struct array's offset applies to its children, on top of their own. */
    int64_t first = batch->array.offset + column->offset, total = 0;
    for (int64_t r = 0; r < batch->array.length; r++) total += values[first + r];
    return total;
  }
  return 0;
}

static RocflowStatus write_batch(void *instance, RocflowBatch *batch) {
  struct table_rows *self = instance;
  size_t t = 0;
  while (t < self->count && strcmp(self->tables[t].name, batch->table) != 0) t++;
  if (t == self->count) {
    if (self->count == MAX_TABLES) return fail("too many tables");
    snprintf(self->tables[t].name, sizeof self->tables[t].name, "%s", batch->table);
    self->count++;
  }
  self->tables[t].records += batch->array.length;
  self->tables[t].duration_ns += sum(batch, "duration_ns");
  return ROCFLOW_OK;
}

static RocflowStatus finish(void *instance, RocflowPaths *written) {
  struct table_rows *self = instance;
  FILE *out = fopen(self->path, "w");
  if (out == NULL) return fail_at("cannot create", self->path);
  fprintf(out, "table,records,duration_ns\n");
  for (size_t t = 0; t < self->count; t++) {
    const struct table *table = &self->tables[t];
    fprintf(out, "%s,%lld,%lld\n", table->name, (long long)table->records,
            (long long)table->duration_ns);
  }
  if (fclose(out) != 0) return fail_at("cannot write", self->path);
  self->written[0] = self->path;
  written->paths = self->written;
  written->count = 1;
  return ROCFLOW_OK;
}

static void destroy(void *instance) {
  struct table_rows *self = instance;
  free(self->path);
  free(self);
}

static const RocflowSink sink = {create, open_output, write_batch, finish, destroy};

static const RocflowPlugin plugin = {
    .abi_version = ROCFLOW_PLUGIN_ABI_VERSION,
    .name = "table_rows",
    .version = "1.0",
    .description = "Counts each table's records and sums their durations, as CSV",
    .transform = NULL,
    .sink = &sink,
    .last_error = get_last_error,
};

ROCFLOW_PLUGIN_EXPORT const RocflowPlugin *rocflow_plugin_v1(void) { return &plugin; }

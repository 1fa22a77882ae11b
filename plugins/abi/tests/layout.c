/* Prints the size and alignment of every type of rocflow_plugin.h, the offset of each field
   and the value of each constant, one "name value" line each, for tests/header.rs to
   compare with the Rust types. */
#include <stdalign.h>
#include <stdio.h>
#include <string.h>

#include "rocflow_plugin.h"

#define LAYOUT(name, t) printf(name " size %zu align %zu\n", sizeof(t), alignof(t))
#define TYPE(t) LAYOUT(#t, t)
#define FIELD(t, f) printf(#t "." #f " %zu\n", offsetof(t, f))

int main(void) {
  TYPE(RocflowPlugin);
  FIELD(RocflowPlugin, abi_version);
  FIELD(RocflowPlugin, name);
  FIELD(RocflowPlugin, version);
  FIELD(RocflowPlugin, description);
  FIELD(RocflowPlugin, transform);
  FIELD(RocflowPlugin, sink);
  FIELD(RocflowPlugin, last_error);
  TYPE(RocflowTransform);
  FIELD(RocflowTransform, create);
  FIELD(RocflowTransform, process);
  FIELD(RocflowTransform, destroy);
  TYPE(RocflowSink);
  FIELD(RocflowSink, create);
  FIELD(RocflowSink, open);
  FIELD(RocflowSink, write);
  FIELD(RocflowSink, finish);
  FIELD(RocflowSink, destroy);
  TYPE(RocflowBatch);
  FIELD(RocflowBatch, table);
  FIELD(RocflowBatch, schema);
  FIELD(RocflowBatch, array);
  TYPE(RocflowPaths);
  FIELD(RocflowPaths, paths);
  FIELD(RocflowPaths, count);
  LAYOUT("ArrowSchema", struct ArrowSchema);
  LAYOUT("ArrowArray", struct ArrowArray);
  printf("ROCFLOW_PLUGIN_ABI_VERSION %u\n", ROCFLOW_PLUGIN_ABI_VERSION);
  printf("ROCFLOW_PLUGIN_ENTRY %s\n", ROCFLOW_PLUGIN_ENTRY);
  printf("ROCFLOW_ROW_COLUMN %s\n", ROCFLOW_ROW_COLUMN);
  printf("ROCFLOW_HOSTNAME_KEY %s\n", ROCFLOW_HOSTNAME_KEY);
  printf("ROCFLOW_OK %d\n", ROCFLOW_OK);
  printf("ROCFLOW_ERROR %d\n", ROCFLOW_ERROR);
  printf("ROCFLOW_PANIC %d\n", ROCFLOW_PANIC);
  return 0;
}

/* A sink that writes nothing, and whose constructor leaves a file behind at the path
 * ROCFLOW_TEST_MARKER names: the file tells whether rocflow loaded the library. */
#include <stdio.h>
#include <stdlib.h>

#include "rocflow_plugin.h"

__attribute__((constructor)) static void mark(void) {
    const char *path = getenv("ROCFLOW_TEST_MARKER");
    FILE *file = path ? fopen(path, "w") : NULL;
    if (file) {
        fclose(file);
    }
}

static int instance;

static RocflowStatus create(const char *options_json, void **out) {
    (void)options_json;
    *out = &instance;
    return ROCFLOW_OK;
}

static RocflowStatus open_path(void *self, const char *path) {
    (void)self;
    (void)path;
    return ROCFLOW_OK;
}

static RocflowStatus write_batch(void *self, RocflowBatch *batch) {
    (void)self;
    (void)batch;
    return ROCFLOW_OK;
}

static RocflowStatus finish(void *self, RocflowPaths *written) {
    (void)self;
    written->paths = NULL;
    written->count = 0;
    return ROCFLOW_OK;
}

static void destroy(void *self) { (void)self; }

static const char *no_error(void) { return NULL; }

static const RocflowSink sink = {create, open_path, write_batch, finish, destroy};

static const RocflowPlugin plugin = {
    .abi_version = ROCFLOW_PLUGIN_ABI_VERSION,
    .name = "constructor",
    .sink = &sink,
    .last_error = no_error,
};

ROCFLOW_PLUGIN_EXPORT const RocflowPlugin *rocflow_plugin_v1(void) { return &plugin; }

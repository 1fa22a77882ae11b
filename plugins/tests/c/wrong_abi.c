/* A plugin built for an ABI version rocflow does not speak. */
#include "rocflow_plugin.h"

static const char *no_error(void) { return NULL; }

static const RocflowPlugin plugin = {
    .abi_version = ROCFLOW_PLUGIN_ABI_VERSION + 1,
    .name = "wrong_abi",
    .last_error = no_error,
};

ROCFLOW_PLUGIN_EXPORT const RocflowPlugin *rocflow_plugin_v1(void) { return &plugin; }

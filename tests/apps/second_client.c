/* second_client.c: another rocprofiler-sdk client, shaped like PyTorch's Kineto: one
 * context with buffer tracing of kernel dispatches and of the HIP runtime API, started in
 * its initialize. At finalize it writes what it got to $SECOND_CLIENT_OUT, one line a
 * record kind: "kernel_dispatch N" and "hip_runtime_api N", then "finalized". With
 * $SECOND_CLIENT_COUNT set, the context counts dispatches too (choosing no counters), so
 * that another client's counting context conflicts with it.
 *
 * Built as a shared library (-shared -fPIC), it is a tool found through
 * ROCP_TOOL_LIBRARIES. Built with -DSECOND_CLIENT_MAIN as a program, it is an application
 * that starts the SDK itself with rocprofiler_force_configure, as frameworks do, and
 * prints the status it got, loading librocprofiler-sdk.so.1 first where the process has no
 * SDK yet.
 *
 * It takes the SDK's functions from the process (dlsym), so it runs on AMD's SDK and on
 * rocflow's simulated one alike. The declarations are the few it needs, with the SDK 1.0
 * headers' types and values. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct { uint64_t handle; } handle_t;
typedef struct { size_t size; const char *name; uint32_t handle; } client_id_t;
typedef struct { uint32_t category; uint32_t kind; void *payload; } record_header_t;
typedef void (*client_finalize_t)(client_id_t);
typedef struct {
    size_t size;
    int (*initialize)(client_finalize_t, void *);
    void (*finalize)(void *);
    void *tool_data;
} configure_result_t;
typedef void (*buffer_callback_t)(handle_t, handle_t, record_header_t **, size_t, void *, uint64_t);

enum { CATEGORY_TRACING = 1, HIP_RUNTIME_API = 5, KERNEL_DISPATCH = 11, POLICY_LOSSLESS = 2 };

static uint64_t kernel_dispatches, hip_calls;
static handle_t buffer;
static int failures;

static void *sdk(const char *name) {
    void *f = dlsym(RTLD_DEFAULT, name);
    if (!f) fprintf(stderr, "second-client: no %s in this process\n", name);
    return f;
}

/* Calls an SDK function and says when it fails, with the SDK's status. */
#define CALL(NAME, TYPE, ...)                                                        \
    do {                                                                             \
        void *f = sdk(#NAME);                                                        \
        int status = f ? ((TYPE)f)(__VA_ARGS__) : -1;                                \
        if (status != 0) {                                                           \
            fprintf(stderr, "second-client: " #NAME " -> %d\n", status);             \
            failures++;                                                              \
        }                                                                            \
    } while (0)

/* The dispatch counting callback: it chooses no counters, and reads none of its arguments. */
static void no_counters(void) {}

static void on_records(handle_t context, handle_t buf, record_header_t **headers, size_t count,
                       void *data, uint64_t dropped) {
    (void)context, (void)buf, (void)data, (void)dropped;
    for (size_t i = 0; i < count; i++) {
        if (headers[i]->category != CATEGORY_TRACING) continue;
        if (headers[i]->kind == KERNEL_DISPATCH) kernel_dispatches++;
        if (headers[i]->kind == HIP_RUNTIME_API) hip_calls++;
    }
}

static int initialize(client_finalize_t finalize, void *data) {
    (void)finalize, (void)data;
    handle_t context = {0};
    CALL(rocprofiler_create_context, int (*)(handle_t *), &context);
    CALL(rocprofiler_create_buffer,
         int (*)(handle_t, size_t, size_t, int, buffer_callback_t, void *, handle_t *), context,
         1 << 16, 1 << 15, POLICY_LOSSLESS, on_records, NULL, &buffer);
    CALL(rocprofiler_configure_buffer_tracing_service,
         int (*)(handle_t, int, const int32_t *, size_t, handle_t), context, KERNEL_DISPATCH,
         NULL, 0, buffer);
    CALL(rocprofiler_configure_buffer_tracing_service,
         int (*)(handle_t, int, const int32_t *, size_t, handle_t), context, HIP_RUNTIME_API,
         NULL, 0, buffer);
    if (getenv("SECOND_CLIENT_COUNT"))
        CALL(rocprofiler_configure_buffer_dispatch_counting_service,
             int (*)(handle_t, handle_t, void (*)(void), void *), context, buffer, no_counters,
             NULL);
    CALL(rocprofiler_start_context, int (*)(handle_t), context);
    return failures != 0;
}

static void finalize(void *data) {
    (void)data;
    CALL(rocprofiler_flush_buffer, int (*)(handle_t), buffer);
    const char *path = getenv("SECOND_CLIENT_OUT");
    FILE *out = path ? fopen(path, "w") : NULL;
    if (!out) return;
    fprintf(out, "kernel_dispatch %llu\nhip_runtime_api %llu\nfinalized\n",
            (unsigned long long)kernel_dispatches, (unsigned long long)hip_calls);
    fclose(out);
}

__attribute__((visibility("default"))) configure_result_t *
rocprofiler_configure(uint32_t version, const char *runtime, uint32_t priority, client_id_t *id) {
    (void)version, (void)runtime;
    static configure_result_t result = {sizeof(configure_result_t), initialize, finalize, NULL};
    id->name = "second-client";
    fprintf(stderr, "second-client: configured with priority %u\n", priority);
    return &result;
}

#ifdef SECOND_CLIENT_MAIN
int main(int argc, char **argv) {
    /* A framework loads the SDK when it starts profiling, unless the process has one. */
    if (!dlsym(RTLD_DEFAULT, "rocprofiler_force_configure"))
        dlopen("librocprofiler-sdk.so.1", RTLD_LAZY | RTLD_GLOBAL);
    typedef int (*force_t)(configure_result_t *(*)(uint32_t, const char *, uint32_t, client_id_t *));
    force_t force = (force_t)sdk("rocprofiler_force_configure");
    if (!force) return 2;
    int status = force(rocprofiler_configure);
    fprintf(stderr, "second-client: rocprofiler_force_configure -> %d\n", status);
    /* The process lives on a while, as an application does after it starts profiling. */
    if (argc > 1) sleep((unsigned)atoi(argv[1]));
    return 0;
}
#endif

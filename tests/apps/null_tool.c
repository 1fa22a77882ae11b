/* null_tool.c: the least a rocprofiler-sdk tool can do to trace ROCTx, the baseline of the
 * overhead benchmark (engine/benches/overhead.rs). Built as a shared library, found through
 * ROCP_TOOL_LIBRARIES, it asks the SDK for the services rocflow's marker-trace pipeline
 * asks for, and does nothing with what they give:
 *
 * - a context with a buffer of rocflow's default size and watermark (32 MiB, 7/8),
 *   lossless, and buffer tracing of ROCTx's thread ranges, names and control calls and of
 *   kernel dispatches; its buffer callback discards every record;
 * - on that context, callback tracing of the ROCTx calls that carry a message (a range's
 *   or a mark's), which buffered records leave out: how tools learn the messages,
 *   rocprofv3 and rocflow alike;
 * - a second context, never stopped, with callback tracing of ROCTx's profiler control
 *   calls, as rocflow's tool keeps to pause and resume.
 *
 * With NULL_TOOL_RECORDS_ONLY=1 in the environment it asks for the buffered records only.
 * Both contexts start in its initialize. At finalize it flushes the buffer and prints
 * "null-tool: N records" on stderr.
 *
 * It takes the SDK's functions from the process (dlsym), so it runs on AMD's SDK and on
 * rocflow's simulated one alike. The declarations are the few it needs, with the SDK 1.0
 * headers' types and values. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

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
typedef struct {
    handle_t context;
    uint64_t thread;
    uint64_t correlation_internal;
    uint64_t correlation_external;
    int32_t kind, operation, phase;
    void *payload;
} callback_record_t;
typedef void (*callback_t)(callback_record_t, void *, void *);
typedef void (*buffer_callback_t)(handle_t, handle_t, record_header_t **, size_t, void *, uint64_t);

enum {
    MARKER_CONTROL_API = 8,
    MARKER_NAME_API = 9,
    KERNEL_DISPATCH = 11,
    MARKER_CORE_RANGE_API = 32,
    CALLBACK_MARKER_CONTROL_API = 8,
    CALLBACK_MARKER_CORE_RANGE_API = 21,
    POLICY_LOSSLESS = 2,
};
static const size_t BUFFER_BYTES = 32u << 20;

static uint64_t records;
static handle_t buffer;
static int failures;

/* Calls an SDK function and says when it fails, with the SDK's status. */
#define CALL(NAME, TYPE, ...)                                                        \
    do {                                                                             \
        void *f = dlsym(RTLD_DEFAULT, #NAME);                                        \
        int status = f ? ((TYPE)f)(__VA_ARGS__) : -1;                                \
        if (status != 0) {                                                           \
            fprintf(stderr, "null-tool: " #NAME " -> %d\n", status);                 \
            failures++;                                                              \
        }                                                                            \
    } while (0)

static void discard(handle_t context, handle_t buf, record_header_t **headers, size_t count,
                    void *data, uint64_t dropped) {
    (void)context, (void)buf, (void)headers, (void)data, (void)dropped;
    records += count;
}

static void ignore(callback_record_t record, void *user, void *data) {
    (void)record, (void)user, (void)data;
}

/* Callback tracing of `kind`'s `count` operations (every one without any) in `context`. */
static void trace_calls(handle_t context, int kind, const int32_t *operations, size_t count) {
    CALL(rocprofiler_configure_callback_tracing_service,
         int (*)(handle_t, int, const int32_t *, size_t, callback_t, void *), context, kind,
         operations, count, ignore, NULL);
}

static int initialize(client_finalize_t finalize, void *data) {
    (void)finalize, (void)data;
    const char *records_only = getenv("NULL_TOOL_RECORDS_ONLY");
    int services = !(records_only && records_only[0] == '1');
    handle_t context = {0}, control = {0};
    CALL(rocprofiler_create_context, int (*)(handle_t *), &context);
    CALL(rocprofiler_create_buffer,
         int (*)(handle_t, size_t, size_t, int, buffer_callback_t, void *, handle_t *), context,
         BUFFER_BYTES, BUFFER_BYTES / 8 * 7, POLICY_LOSSLESS, discard, NULL, &buffer);
    const int kinds[] = {MARKER_CORE_RANGE_API, MARKER_NAME_API, MARKER_CONTROL_API,
                         KERNEL_DISPATCH};
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        CALL(rocprofiler_configure_buffer_tracing_service,
             int (*)(handle_t, int, const int32_t *, size_t, handle_t), context, kinds[i], NULL,
             0, buffer);
    if (services) {
        /* roctxMarkA, roctxThreadRangeA (a push and its pop), roctxProcessRangeA */
        const int32_t with_message[] = {0, 1, 2};
        trace_calls(context, CALLBACK_MARKER_CORE_RANGE_API, with_message, 3);
        CALL(rocprofiler_create_context, int (*)(handle_t *), &control);
        trace_calls(control, CALLBACK_MARKER_CONTROL_API, NULL, 0);
        CALL(rocprofiler_start_context, int (*)(handle_t), control);
    }
    CALL(rocprofiler_start_context, int (*)(handle_t), context);
    return failures != 0;
}

static void finalize(void *data) {
    (void)data;
    CALL(rocprofiler_flush_buffer, int (*)(handle_t), buffer);
    fprintf(stderr, "null-tool: %llu records\n", (unsigned long long)records);
}

__attribute__((visibility("default"))) configure_result_t *
rocprofiler_configure(uint32_t version, const char *runtime, uint32_t priority, client_id_t *id) {
    (void)version, (void)runtime, (void)priority;
    static configure_result_t result = {sizeof(configure_result_t), initialize, finalize, NULL};
    id->name = "null-tool";
    return &result;
}

/* legacy_roctx.c: a stand-in for roctracer's legacy ROCTx library (libroctx64.so), which
 * never reaches rocprofiler-sdk: each call goes to the one tracer callback a tool
 * registered with roctxRegisterTracerCallback, as (domain 6 = ROCTx, operation, data),
 * where data holds the call's message and a process range's id. Operations: 0 mark,
 * 1 push, 2 pop, 3 start, 4 stop. Built as a shared library for programs such as
 * roctx_markers.c, which use the ROCTx calls only. */
#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>

typedef int (*tracer_callback_t)(uint32_t domain, uint32_t operation, void *data);
struct call_data { const char *message; uint64_t id; };

static _Atomic(tracer_callback_t) tracer;
static _Atomic uint64_t next_range = 1;
static _Thread_local int depth;

static void report(uint32_t operation, const char *message, uint64_t id) {
    tracer_callback_t callback = atomic_load(&tracer);
    struct call_data data = {message, id};
    if (callback) callback(6, operation, &data);
}

void roctxRegisterTracerCallback(tracer_callback_t callback) { atomic_store(&tracer, callback); }

void roctxMarkA(const char *message) { report(0, message, 0); }

int roctxRangePushA(const char *message) {
    report(1, message, 0);
    return depth++;
}

int roctxRangePop(void) {
    report(2, NULL, 0);
    return depth > 0 ? --depth : -1;
}

uint64_t roctxRangeStartA(const char *message) {
    uint64_t id = atomic_fetch_add(&next_range, 1);
    report(3, message, id);
    return id;
}

void roctxRangeStop(uint64_t id) { report(4, NULL, id); }

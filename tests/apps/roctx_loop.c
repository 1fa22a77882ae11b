/* roctx_loop.c: ROCTx at the highest rate a program can call it, for the overhead
 * benchmark (engine/benches/overhead.rs). Calls roctxRangePushA/roctxRangePop in a tight
 * loop on one thread: WARMUP pairs first (the tool's first records, lazy setup), then
 * PAIRS timed ones; prints "ns_per_pair X" on stdout.
 *
 *   roctx_loop PAIRS [WARMUP]
 *
 * On rocflow's simulated SDK (preloaded) it calls the simulated ROCTx's two functions
 * (rocflow_sim_roctxRangePushA, rocflow_sim_roctxRangePop); elsewhere those of AMD's ROCTx
 * library (librocprofiler-sdk-roctx.so.1 on the loader path), which registers with
 * rocprofiler-register when it loads: the path every ROCm program takes. The declarations
 * are ROCTx's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int (*push_t)(const char *);
typedef int (*pop_t)(void);

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: roctx_loop PAIRS [WARMUP]\n");
        return 2;
    }
    long pairs = atol(argv[1]), warmup = argc > 2 ? atol(argv[2]) : pairs / 10;
    void *push = dlsym(RTLD_DEFAULT, "rocflow_sim_roctxRangePushA");
    void *pop = dlsym(RTLD_DEFAULT, "rocflow_sim_roctxRangePop");
    if (!push || !pop) {
        void *roctx = dlopen("librocprofiler-sdk-roctx.so.1", RTLD_NOW | RTLD_GLOBAL);
        if (!roctx) {
            fprintf(stderr, "roctx_loop: %s\n", dlerror());
            return 1;
        }
        push = dlsym(roctx, "roctxRangePushA");
        pop = dlsym(roctx, "roctxRangePop");
    }
    if (!push || !pop) {
        fprintf(stderr, "roctx_loop: no roctxRangePushA/roctxRangePop\n");
        return 1;
    }
    push_t range_push = (push_t)push;
    pop_t range_pop = (pop_t)pop;
    for (long i = 0; i < warmup; i++) {
        range_push("roctx_loop");
        range_pop();
    }
    uint64_t start = now_ns();
    for (long i = 0; i < pairs; i++) {
        range_push("roctx_loop");
        range_pop();
    }
    uint64_t elapsed = now_ns() - start;
    printf("ns_per_pair %.2f\n", (double)elapsed / (double)pairs);
    return 0;
}

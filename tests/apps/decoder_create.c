/* Asks the rocprofiler-sdk at argv[1] to create a trace decoder from each folder after it
 * (rocprofiler_thread_trace_decoder_create) and prints the status of each, a line each:
 * how the thread-trace tests compare the simulated SDK's statuses with the real SDK's. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

typedef int (*create_fn)(uint64_t*, const char*);

int main(int argc, char** argv) {
    if (argc < 2) return 2;
    void* sdk = dlopen(argv[1], RTLD_LAZY | RTLD_LOCAL);
    if (!sdk) {
        fprintf(stderr, "%s\n", dlerror());
        return 2;
    }
    create_fn create = (create_fn)dlsym(sdk, "rocprofiler_thread_trace_decoder_create");
    if (!create) return 2;
    for (int i = 2; i < argc; i++) {
        uint64_t handle = 0;
        printf("%d\n", create(&handle, argv[i]));
    }
    return 0;
}

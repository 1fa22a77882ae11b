/* roctx_markers.c: an application that only uses ROCTx, for the conformance suite. ROCTx
 * registers itself with rocprofiler-register, which loads rocprofiler-sdk and the tool
 * named by ROCP_TOOL_LIBRARIES: the path every ROCm runtime takes, with no GPU involved.
 * Makes 1 mark, 3 push/pop ranges and 2 start/stop ranges: 6 marker records. */
#include <rocprofiler-sdk-roctx/roctx.h>

int main(void) {
    roctxMarkA("setup done");
    for (int step = 0; step < 3; step++) {
        roctxRangePushA("step");
        if (step < 2) {
            roctx_range_id_t io = roctxRangeStartA("io");
            roctxRangeStop(io);
        }
        roctxRangePop();
    }
    return 0;
}

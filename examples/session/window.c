/*
 * Profiles a window of the program's own work with an in-process rocflow session
 * (plugins/include/rocflow_session.h): the three iterations of its solver from the fourth
 * on, and nothing before or after.
 *
 * On the simulated device the work is the scenario the simulated SDK replays in the
 * program; `duration_ms` spreads its iterations over real time, one every PERIOD_MS:
 *
 *   cc -o window examples/session/window.c -Iplugins/include -L target/release \
 *      -lrocflow_tool -Wl,-rpath,"$PWD/target/release"
 *   # a scenario of 10 iterations over 2 s: one every 200 ms
 *   sed 's/^iterations = 100$/iterations = 10\nduration_ms = 2000/' examples/sim/mi300x.toml > paced.toml
 *   LD_PRELOAD=target/release/librocflow_sim.so ROCFLOW_SIM_SCENARIO=paced.toml \
 *      ./window csv window-out 200
 *
 * The outputs of `rocflow run csv` follow, of the window only, in window-out/final/. On a
 * GPU node, the HIP runtime brings rocprofiler-sdk: call the session around real work.
 */
#include <rocflow_session.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Sleeps until `ms` milliseconds after `t0`. */
static void sleep_until(const struct timespec *t0, double ms) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double elapsed = (now.tv_sec - t0->tv_sec) * 1e3 + (now.tv_nsec - t0->tv_nsec) / 1e6;
    if (elapsed >= ms) return;
    double left = ms - elapsed;
    struct timespec wait = {(time_t)(left / 1e3), (long)((left - (time_t)(left / 1e3) * 1e3) * 1e6)};
    nanosleep(&wait, NULL);
}

static int check(int status, const char *what) {
    if (status != ROCFLOW_SESSION_OK) {
        fprintf(stderr, "window: %s: %s (status %d)\n", what, rocflow_session_last_error(), status);
        exit(1);
    }
    return status;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: window PIPELINE OUTPUT_DIR PERIOD_MS\n");
        return 2;
    }
    double period = atof(argv[3]);
    rocflow_session_t *session = NULL;
    check(rocflow_session_open(argv[1], NULL, 0, argv[2], &session), "open");
    /* The device's work starts as the session starts the SDK. */
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* Between iterations 2 and 3, then between 5 and 6: iterations 3, 4 and 5. */
    sleep_until(&t0, 2.5 * period);
    check(rocflow_session_start(session), "start");
    sleep_until(&t0, 5.5 * period);
    check(rocflow_session_stop(session), "stop");
    check(rocflow_session_close(session), "close");
    /* A closed session refuses further calls. */
    if (rocflow_session_start(session) != ROCFLOW_SESSION_ERROR_STATE) {
        fprintf(stderr, "window: a closed session started\n");
        return 1;
    }
    printf("profiled iterations 3 to 5 into %s/final\n", argv[2]);
    return 0;
}

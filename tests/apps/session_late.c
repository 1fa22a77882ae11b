/*
 * A program that starts, initializes (its first rocprofiler-sdk call is its own), and only
 * then opens an in-process rocflow session: the SDK starts late, through
 * rocprofiler_force_configure. Says each step on stderr, between the call logger's lines.
 *
 *   session_late PIPELINE OUTPUT_DIR
 */
#include <rocflow_session.h>

#include <stdint.h>
#include <stdio.h>

/* rocprofiler-sdk's, from rocprofiler-sdk/rocprofiler.h. */
int rocprofiler_get_timestamp(uint64_t *ts);

static void say(const char *step, int status) {
    fprintf(stderr, "session_late: %s %d%s%s\n", step, status, status ? ": " : "",
            status ? rocflow_session_last_error() : "");
}

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    uint64_t now = 0;
    say("initialized", rocprofiler_get_timestamp(&now));
    rocflow_session_t *session = NULL;
    int status = rocflow_session_open(argv[1], NULL, 0, argv[2], &session);
    say("opened", status);
    if (status) return 1;
    say("started", rocflow_session_start(session));
    say("stopped", rocflow_session_stop(session));
    say("closed", rocflow_session_close(session));
    return 0;
}

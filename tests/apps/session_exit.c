/*
 * Opens a session, starts it, says so on stdout, and waits for a line on stdin (or its
 * end); then stops and returns without closing, so the session's last phase ends at the
 * process's exit.
 *
 *   session_exit PIPELINE OUTPUT_DIR
 */
#include <rocflow_session.h>

#include <stdio.h>

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    rocflow_session_t *session = NULL;
    int status = rocflow_session_open(argv[1], NULL, 0, argv[2], &session);
    if (status == ROCFLOW_SESSION_OK) status = rocflow_session_start(session);
    if (status != ROCFLOW_SESSION_OK) {
        fprintf(stderr, "session_exit: %s (status %d)\n", rocflow_session_last_error(), status);
        return 1;
    }
    printf("started\n");
    fflush(stdout);
    char line[16];
    /* A line, or the end of the input. */
    (void)!fgets(line, sizeof line, stdin);
    if (rocflow_session_stop(session) != ROCFLOW_SESSION_OK) {
        fprintf(stderr, "session_exit: stop: %s\n", rocflow_session_last_error());
        return 1;
    }
    return 0;
}

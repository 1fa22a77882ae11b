/*
 * Opens a session, forks, and checks that the child holds none: its calls fail with
 * ROCFLOW_SESSION_ERROR_STATE, and its exit does not end the parent's phase. The parent
 * then collects half a second and closes.
 *
 *   session_fork PIPELINE OUTPUT_DIR
 */
#include <rocflow_session.h>

#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    rocflow_session_t *session = NULL;
    if (rocflow_session_open(argv[1], NULL, 0, argv[2], &session) != ROCFLOW_SESSION_OK) {
        fprintf(stderr, "session_fork: open: %s\n", rocflow_session_last_error());
        return 1;
    }
    pid_t child = fork();
    if (child == 0) {
        int status = rocflow_session_start(session);
        fprintf(stderr, "session_fork: child start %d: %s\n", status, rocflow_session_last_error());
        /* Without the exit handlers: the simulated SDK would replay its scenario first. */
        _exit(status == ROCFLOW_SESSION_ERROR_STATE ? 0 : 1);
    }
    int child_status = 0;
    waitpid(child, &child_status, 0);
    if (!WIFEXITED(child_status) || WEXITSTATUS(child_status) != 0) return 1;
    int failed = rocflow_session_start(session);
    usleep(500000);
    failed = failed || rocflow_session_stop(session) || rocflow_session_close(session);
    if (failed) {
        fprintf(stderr, "session_fork: parent: %s\n", rocflow_session_last_error());
        return 1;
    }
    return 0;
}

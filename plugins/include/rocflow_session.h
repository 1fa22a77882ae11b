/*
 * rocflow_session.h: in-process profiling sessions, exported by rocflow's tool library
 * (librocflow_tool.so; link with -lrocflow_tool, or dlopen it).
 *
 * An application, or a framework inside it, profiles windows of its own work with a rocflow
 * pipeline:
 *
 *     rocflow_session_t *s;
 *     const char *set[] = {"top=5"};
 *     if (rocflow_session_open("kernel-trace", set, 1, "profile", &s) != ROCFLOW_SESSION_OK)
 *         fprintf(stderr, "%s\n", rocflow_session_last_error());
 *     rocflow_session_start(s);   ... the work to profile ...   rocflow_session_stop(s);
 *     rocflow_session_close(s);   // outputs complete in profile/final/
 *
 * Opening starts a rocflow runner (the `rocflow` binary: $ROCFLOW_BIN, else the one beside
 * this library, else the first on PATH) and then rocprofiler-sdk, by
 * rocprofiler_force_configure, with this library as its tool: the process must have loaded
 * the SDK (the HIP runtime brings it; on the simulated device, librocflow_sim.so), and
 * nothing may have configured it yet. The pipeline's contexts are set up as `rocflow run`
 * sets them up but collect only between start and stop (the pipeline's own timing, a delay
 * or collection period, does not apply); kernel names are traced throughout. Records go to
 * the runner as a run's do, so the outputs are those of `rocflow run` with the same
 * pipeline, limited to the started windows. Counters that need several passes are refused.
 * The pipeline writes under its `output_dir` parameter (every shipped template does; a
 * pipeline of your own declares it, or extends `base`), which the session sets.
 *
 * Phases: each phase's outputs are a directory of the output directory. rocflow_session_phase
 * ends the current phase as NAME: when it returns, OUTPUT/NAME holds its complete outputs
 * (and its raw spool, session.rfraw) while the process goes on, and a new runner takes the
 * next phase, so memory stays bounded however long the process runs. close (or the
 * process's exit, if the SDK finalizes) ends the last phase as OUTPUT/final. A phase of the
 * same name from an earlier process is replaced.
 *
 * Under `rocflow run` (the tool already configured by the run), a session starts and stops
 * the run's contexts (stopped when it opens), and the run's pipeline and outputs hold; the
 * pipeline and output given here are unused, and phases are refused.
 *
 * Rules:
 * - One session per process (the SDK sets contexts up once); a second open fails.
 * - Every function may be called from any thread; calls on one session are serialized.
 * - The handle is never freed: after close, calls on it fail with ROCFLOW_SESSION_ERROR_STATE.
 * - close and the process's exit never call into the SDK once it has begun finalizing.
 * - A forked child holds no session: its calls fail, and it keeps no phase open.
 * - A failed call returns a status other than ROCFLOW_SESSION_OK and leaves a message for
 *   rocflow_session_last_error, on the calling thread.
 */
#ifndef ROCFLOW_SESSION_H
#define ROCFLOW_SESSION_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rocflow_session_status_t {
    ROCFLOW_SESSION_OK = 0,
    /* A NULL or malformed argument, or a phase name that cannot name a directory. */
    ROCFLOW_SESSION_ERROR_ARGUMENT = 1,
    /* Not now: closed, already started (or not started), another process's session, or
     * the process already opened one. */
    ROCFLOW_SESSION_ERROR_STATE = 2,
    /* The runner could not be found or started, refused the pipeline, or failed to complete
     * a phase's outputs; it says why on stderr. */
    ROCFLOW_SESSION_ERROR_RUNNER = 3,
    /* rocprofiler-sdk could not be started for the session. */
    ROCFLOW_SESSION_ERROR_SDK = 4,
    /* The tool switched itself off after an internal error (it said so on stderr). */
    ROCFLOW_SESSION_ERROR_INTERNAL = 5
} rocflow_session_status_t;

typedef struct rocflow_session rocflow_session_t;

/* Opens the process's session on `pipeline` (a pipeline file or a template name) with
 * `set_count` parameters `set` ("NAME=VALUE", as `rocflow run --set` takes them), writing
 * under `output_dir` (NULL: "rocflow-out"). Stores the session in `*session`. */
int rocflow_session_open(const char *pipeline, const char *const *set, size_t set_count,
                         const char *output_dir, rocflow_session_t **session);

/* Starts the pipeline's contexts. */
int rocflow_session_start(rocflow_session_t *session);

/* Stops them; their records stay buffered until a flush, a phase's end or close. */
int rocflow_session_stop(rocflow_session_t *session);

/* Hands every buffered record to the runner. */
int rocflow_session_flush(rocflow_session_t *session);

/* Ends the current phase as `name` (a plain file name, not starting with '.', not "final"):
 * OUTPUT/name holds its complete outputs when this returns. */
int rocflow_session_phase(rocflow_session_t *session, const char *name);

/* Stops the contexts and ends the last phase as OUTPUT/final, complete on return. */
int rocflow_session_close(rocflow_session_t *session);

/* The message of the calling thread's last failed call, or NULL; valid until its next
 * call into this API. */
const char *rocflow_session_last_error(void);

#ifdef __cplusplus
}
#endif

#endif

"""Profiles windows of this script's own work with an in-process rocflow session.

Two windows, each its own phase: iteration 1 of the solver (a warm-up, in `with session:`)
and iterations 6 to 8 (the calls of a decorated function). On the simulated device the
work is the scenario the simulated SDK replays in the process; `duration_ms` spreads its
iterations over real time, one every PERIOD_MS:

    sed 's/^iterations = 100$/iterations = 10\\nduration_ms = 4000/' examples/sim/mi300x.toml > paced.toml
    LD_PRELOAD=$HOME/.cargo/bin/librocflow_sim.so ROCFLOW_SIM_SCENARIO=paced.toml \\
        python examples/session/window.py csv window-out 400

The outputs of `rocflow run csv` follow for each window: window-out/warmup/ and
window-out/final/. On a GPU node, import torch (or anything that loads the HIP runtime)
first, and put the session around real work.
"""

import sys
import time

from rocflow.session import Session


def main() -> int:
    pipeline, output, period_ms = sys.argv[1], sys.argv[2], float(sys.argv[3])
    session = Session(pipeline, output=output)
    # The device's work starts as the session starts the SDK.
    t0 = time.monotonic()

    def until(periods: float) -> None:
        left = t0 + periods * period_ms / 1000 - time.monotonic()
        if left < 0:
            sys.exit(f"window.py: {-left:.3f} s late for {periods} periods: a window would be wrong")
        time.sleep(left)

    # Between iterations 0 and 1, then 1 and 2: iteration 1.
    until(0.5)
    with session:
        until(1.5)
    session.phase("warmup")

    @session
    def solve(last: float) -> None:
        until(last)

    # Between iterations 5 and 6, then 8 and 9: iterations 6 to 8, in two calls. Ending
    # the warm-up's phase (its outputs written, the next runner started) takes the time
    # between.
    until(5.5)
    solve(7.5)
    solve(8.5)
    session.close()
    print(f"profiled iteration 1 into {output}/warmup and iterations 6 to 8 into {output}/final")
    return 0


if __name__ == "__main__":
    sys.exit(main())

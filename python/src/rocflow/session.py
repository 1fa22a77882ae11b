"""In-process sessions: profile windows of this process's own work with a rocflow pipeline.

    from rocflow.session import Session

    session = Session("kernel-trace", set={"top": 5}, output="profile")
    with session:                # the pipeline's contexts collect inside the block
        train_step()

    @session                     # ... and in each call
    def evaluate(): ...

    session.phase("epoch-1")     # profile/epoch-1/ is complete now
    session.close()              # profile/final/ (also at the interpreter's exit)

The session starts rocprofiler-sdk in this process (the HIP runtime must be loaded), and a
`rocflow` runner that writes the outputs `rocflow run` writes with the same pipeline,
limited to the windows. One session per process. The rules are the C API's
(plugins/include/rocflow_session.h); the extension finds rocflow's tool library through
ROCFLOW_TOOL_LIBRARY, or beside the `rocflow` binary (ROCFLOW_BIN, or on PATH).
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from rocflow._session import SessionError, _Session

__all__ = ["Session", "SessionError"]

F = TypeVar("F", bound=Callable[..., Any])


def _value(value: Any) -> str:
    """A parameter's value as `rocflow run --set` takes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    return json.dumps(value)


def _sets(set: Mapping[str, Any] | Iterable[str] | None) -> list[str]:
    if set is None:
        return []
    if isinstance(set, Mapping):
        return [f"{name}={_value(value)}" for name, value in set.items()]
    return list(set)


class Session:
    """The process's session on `pipeline` (a pipeline file or a template name).

    `set` gives parameters (a mapping, or `NAME=VALUE` strings); `output` is where each
    phase's outputs go (default `rocflow-out`). As a context manager, and as a decorator,
    it collects inside the block or the call; windows may nest and come from several
    threads: the contexts run while any is open.
    """

    def __init__(
        self,
        pipeline: str | os.PathLike[str],
        *,
        set: Mapping[str, Any] | Iterable[str] | None = None,
        output: str | os.PathLike[str] | None = None,
    ) -> None:
        self._session = _Session(
            os.fspath(pipeline), _sets(set), None if output is None else os.fspath(output)
        )
        self._lock = threading.Lock()
        self._windows = 0
        atexit.register(self.close)

    def start(self) -> None:
        """Starts the pipeline's contexts."""
        self._session.start()

    def stop(self) -> None:
        """Stops them."""
        self._session.stop()

    def flush(self) -> None:
        """Hands every buffered record to the runner."""
        self._session.flush()

    def phase(self, name: str) -> None:
        """Ends the current phase as `name`: `OUTPUT/name` is complete on return."""
        self._session.phase(name)

    def close(self) -> None:
        """Stops the contexts and ends the last phase (`OUTPUT/final`); again does nothing."""
        self._session.close()

    def __enter__(self) -> Session:
        with self._lock:
            if self._windows == 0:
                self.start()
            self._windows += 1
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._windows -= 1
            if self._windows == 0:
                self.stop()

    def __call__(self, function: F) -> F:
        """Decorates `function`: each call is a window."""

        @functools.wraps(function)
        def windowed(*args: Any, **kwargs: Any) -> Any:
            with self:
                return function(*args, **kwargs)

        return windowed  # type: ignore[return-value]

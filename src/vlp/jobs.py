"""Forked worker processes for ``vlp validate --jobs``: a worker computes one value (the
decoded, validated columns of a part of a file) and hands it back pickled through a pipe.

Fork, not a pool: the worker inherits the compiled decoders and needs no start-up of its
own, and nothing but the result crosses between the processes. A worker that dies (a
signal, an exception, an exit) is reported as :class:`WorkerFailed`, never waited on
forever and never taken for a result.
"""

from __future__ import annotations

import os
import pickle
import signal
from collections.abc import Callable
from typing import Any

_READ_BYTES = 1 << 20


class WorkerFailed(RuntimeError):
    """A worker process ended without handing back its whole result."""


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the system has one)."""
    affinity = getattr(os, "sched_getaffinity", None)
    if affinity is not None:
        return len(affinity(0))
    return os.cpu_count() or 1


def can_fork() -> bool:
    return hasattr(os, "fork")


class Worker:
    """One forked process computing ``work()``; :meth:`result` waits for it."""

    def __init__(self, work: Callable[[], Any], what: str) -> None:
        self.what = what
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: compute, write, and leave without running any cleanup
            os.close(read_end)
            _run_child(work, write_end)
        os.close(write_end)
        self._pid: int | None = pid
        self._read_end = read_end

    def result(self) -> Any:
        """The worker's value; WorkerFailed when it died or handed back something broken."""
        pieces = []
        try:
            while piece := os.read(self._read_end, _READ_BYTES):
                pieces.append(piece)
        finally:
            os.close(self._read_end)
            self._read_end = -1
        status = self._reap()
        if status != 0:
            how = f"killed by signal {-status}" if status < 0 else f"exit status {status}"
            raise WorkerFailed(f"the worker process for {self.what} died ({how})")
        try:
            return pickle.loads(b"".join(pieces))
        except Exception as error:  # noqa: BLE001 - a truncated or garbled hand-back
            raise WorkerFailed(
                f"the worker process for {self.what} handed back a broken result ({error})"
            ) from None

    def stop(self) -> None:
        """End the worker if it still runs (the main process failed or was interrupted)."""
        if self._pid is not None:
            try:
                os.kill(self._pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._reap()
        if self._read_end >= 0:
            os.close(self._read_end)
            self._read_end = -1

    def _reap(self) -> int:
        assert self._pid is not None
        _, status = os.waitpid(self._pid, 0)
        self._pid = None
        return os.waitstatus_to_exitcode(status)


def _run_child(work: Callable[[], Any], write_end: int) -> None:
    code = 1
    try:
        data = memoryview(pickle.dumps(work(), protocol=pickle.HIGHEST_PROTOCOL))
        while data:
            data = data[os.write(write_end, data) :]
        code = 0
    except BaseException:  # noqa: BLE001, S110 - the exit status tells the parent
        pass
    finally:
        os._exit(code)

"""Forked worker processes for ``vlp validate --jobs``: a worker computes a series of
values (the decoded, validated columns of a part of a file, batch by batch) and hands
them back pickled, through an unnamed temporary file.

Fork, not a pool: the worker inherits the compiled decoders and needs no start-up of its
own. A file, not a pipe: the worker runs ahead of the main process (which reads the
values only once its own part is done) without holding them in memory, so memory stays
bounded by a batch whatever the file's size. A worker that dies (a signal, an exception,
an exit) is reported as :class:`WorkerFailed`, never taken for a result.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import IO, Any

Emit = Callable[[Any], None]


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


def _scratch_file() -> IO[bytes]:
    """An unnamed file that disappears with its last descriptor."""
    try:  # Linux: no name ever, and no import of tempfile (~10 ms)
        fd = os.open(os.environ.get("TMPDIR") or "/tmp", os.O_TMPFILE | os.O_RDWR, 0o600)
    except (AttributeError, OSError):
        import tempfile

        return tempfile.TemporaryFile()
    return open(fd, "w+b")


class Worker:
    """One forked process running ``work(emit)``: each value it emits, then what it
    returns, come back in order from :meth:`results`."""

    def __init__(self, work: Callable[[Emit], Any], what: str) -> None:
        self.what = what
        self._file = _scratch_file()
        self._pid: int | None = None
        try:
            self._pid = os.fork()
        except BaseException:
            self._file.close()
            raise
        if self._pid == 0:  # the child: compute, write, and leave without any cleanup
            _run_child(work, self._file)

    def results(self) -> Iterator[Any]:
        """Wait for the worker, then its values; WorkerFailed when it died or wrote
        something broken."""
        status = self._reap()
        if status != 0:
            how = f"killed by signal {-status}" if status < 0 else f"exit status {status}"
            raise WorkerFailed(f"the worker process for {self.what} died ({how})")
        import pickle  # only a run with workers needs it (start-up of `vlp validate`)

        self._file.seek(0)
        load = pickle.Unpickler(self._file).load
        while True:
            try:
                yield load()
            except EOFError:
                return
            except Exception as error:  # noqa: BLE001 - a truncated or garbled hand-back
                raise WorkerFailed(
                    f"the worker process for {self.what} handed back a broken result ({error})"
                ) from None

    def stop(self) -> None:
        """End the worker if it still runs (the main process failed or was interrupted)."""
        if self._pid is not None:
            import signal

            try:
                os.kill(self._pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._reap()
        self._file.close()

    def _reap(self) -> int:
        if self._pid is None:
            raise WorkerFailed(f"the worker process for {self.what} was stopped")
        _, status = os.waitpid(self._pid, 0)
        self._pid = None
        return os.waitstatus_to_exitcode(status)


def _run_child(work: Callable[[Emit], Any], out: IO[bytes]) -> None:
    import pickle

    code = 1
    try:
        dump = pickle.Pickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump
        dump(work(dump))
        out.flush()
        code = 0
    except BaseException:  # noqa: BLE001, S110 - the exit status tells the parent
        pass
    finally:
        os._exit(code)

"""Analyses run on a worker thread so that a newer version can cancel an older one mid-way.

The analysis is pure Python (scanner, parser, checker), so it can be interrupted at any
bytecode boundary: `Job.cancel` raises `Cancelled` inside the worker thread
(``PyThreadState_SetAsyncExc``). The event loop keeps reading the editor's messages while a
job runs; a change to the document cancels the job analysing its previous version, so a
keystroke never waits behind the analysis of a text that no longer exists.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Generic, TypeVar

T = TypeVar("T")
_STACK_BYTES = 64 * 1024 * 1024
_CURRENT = threading.local()  # .job: the Job running on this thread


class Cancelled(BaseException):
    """Raised inside a worker thread whose job was cancelled (a BaseException: the
    analysis's own ``except Exception`` handlers must not swallow it)."""


class Job(Generic[T]):
    """``work`` running on a thread of its own; ``future`` holds its result, or None when
    the job was cancelled before it finished."""

    def __init__(self, work: Callable[[], T], version: int | None) -> None:
        self.version = version
        self.future: Future[T | None] = Future()
        self._work = work
        self._lock = threading.Lock()
        self._running = True
        self._shielded = False
        self._deferred = False  # cancelled while shielded: raised when the shield ends
        self._thread = threading.Thread(target=self._run, name="lsp-analysis", daemon=True)
        # The tree walks recurse once or more per nesting level (openprose.depth): give the
        # worker at least the main thread's usual stack.
        previous = threading.stack_size(_STACK_BYTES)
        try:
            self._thread.start()
        finally:
            threading.stack_size(previous)

    def cancel(self) -> bool:
        """Stop the work where it is; a job already finished is left as it is. True when the
        job is inside `shielded` work: it stops when that ends (wait on ``future``)."""
        with self._lock:
            if not self._running:
                return False
            self._running = False
            if self._shielded:
                self._deferred = True
                return True
            ident = self._thread.ident
            if ident is not None:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(ident), ctypes.py_object(Cancelled)
                )
        return False

    def _run(self) -> None:
        result: T | None = None
        failure: BaseException | None = None
        _CURRENT.job = self
        try:
            try:
                result = self._work()
            except Cancelled:
                result = None
            except Exception as error:  # noqa: BLE001  # handed to whoever waits on the future
                failure = error
            finally:
                with self._lock:
                    self._running = False  # from here on, cancel() raises nothing
                _checkpoint()  # a cancellation still pending is raised here, not later
        except Cancelled:  # raised between the work's end and the flag above
            result = None
        if failure is not None:
            self.future.set_exception(failure)
        else:
            self.future.set_result(result)


@contextmanager
def shielded() -> Iterator[None]:
    """Work that must not stop half-way (changing shared state in place): a cancellation
    arriving meanwhile is raised when it ends; one that came before is raised on entry, so
    the work never starts. Outside a job (the event loop's thread) it does nothing."""
    job: Job[object] | None = getattr(_CURRENT, "job", None)
    if job is None:
        yield
        return
    with job._lock:
        if not job._running:
            raise Cancelled
        job._shielded = True
    try:
        yield
    finally:
        with job._lock:
            job._shielded = False
            deferred = job._deferred
    if deferred:
        raise Cancelled


def _checkpoint() -> None:
    """A Python call: the interpreter delivers pending asynchronous exceptions on entry."""

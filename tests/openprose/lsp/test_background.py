"""Jobs on a worker thread: their result, their failure, and cancellation mid-way."""

from __future__ import annotations

import threading
import time

import pytest

from openprose.lsp.background import Job, shielded


def test_a_job_hands_back_its_result() -> None:
    job = Job(lambda: sum(range(1000)), 7)
    assert job.future.result(timeout=10) == 499500
    assert job.version == 7
    job.cancel()  # finished: nothing to stop
    assert job.future.result() == 499500


def test_a_failing_job_hands_back_its_exception() -> None:
    def broken() -> int:
        raise ValueError("no such thing")

    job = Job(broken, 1)
    with pytest.raises(ValueError, match="no such thing"):
        job.future.result(timeout=10)


def test_cancel_stops_pure_python_work_where_it_is() -> None:
    started = threading.Event()
    reached: list[int] = []

    def endless() -> int:
        started.set()
        count = 0
        while True:  # would never end on its own
            count += 1
            if count % 100_000 == 0:
                reached.append(count)

    job = Job(endless, 2)
    assert started.wait(10)
    begun = time.perf_counter()
    job.cancel()
    assert job.future.result(timeout=10) is None
    assert time.perf_counter() - begun < 5
    seen = len(reached)
    time.sleep(0.05)
    assert len(reached) == seen  # the loop really stopped


def test_cancel_reaches_a_job_catching_exceptions() -> None:
    """The analysis has ``except Exception`` handlers; cancellation is not one of those."""
    started = threading.Event()

    def stubborn() -> int:
        started.set()
        while True:
            try:
                time.sleep(0.001)
            except Exception:  # noqa: BLE001, S110  # what the job must not be able to swallow
                pass

    job = Job(stubborn, 3)
    assert started.wait(10)
    job.cancel()
    assert job.future.result(timeout=10) is None


def test_a_cancellation_waits_for_the_shielded_work_to_end() -> None:
    inside = threading.Event()
    finished: list[int] = []
    after: list[bool] = []

    def work() -> int:
        with shielded():
            inside.set()
            count = 0
            for count in range(3_000_000):  # pure Python: a cancellation would land here
                pass
            finished.append(count)
        after.append(True)  # never reached: the deferred cancellation is raised first
        return count

    job = Job(work, 1)
    assert inside.wait(timeout=10)
    assert job.cancel()  # it says the job stops when the shielded work ends
    assert job.future.result(timeout=30) is None
    assert finished == [2_999_999]
    assert after == []


def test_a_cancelled_job_never_starts_shielded_work() -> None:
    release = threading.Event()
    started: list[bool] = []

    def work() -> None:
        release.wait(timeout=10)  # blocked in C: the cancellation is not delivered here
        with shielded():
            started.append(True)

    job = Job(work, 1)
    assert not job.cancel()  # stopped at once: nothing to wait for
    release.set()
    assert job.future.result(timeout=10) is None
    assert started == []


def test_shielded_does_nothing_outside_a_job() -> None:
    with shielded():
        ran = True
    assert ran

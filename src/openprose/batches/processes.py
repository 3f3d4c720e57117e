"""The local executor on more than one core: worker processes beside the batch's own, each
running its share of the runs with its own provider and its own run log.

A run costs the batch a few hundred microseconds of Python (the VM, the HTTP client): one
process is one core. Each worker is `python -m openprose.batches.processes`, fed jobs as
JSON lines on stdin, answering rows as JSON lines on stdout; it keeps its runs in
`runs.{k}.ndjson` of the batch folder (read with the batch's own log: `runlog.log_files`)
and sends a row only after that run's records are written (its log's group commit). The
batch process writes every row, as with one process.

A worker never outlives the batch process: the kernel kills it when its parent dies
(`PR_SET_PDEATHSIG`), and it holds the batch's lock with it (the same open lock file), so
no `prose batch --resume` can start while it might still write.
"""

from __future__ import annotations

import asyncio
import ctypes
import math
import os
import signal
import sys
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import orjson

from openprose.batches.job import BatchSpec, CaseRunner, Job, row_of
from openprose.session.options import RunOptions

__all__ = ["run_in_processes"]


class WorkerDied(RuntimeError):
    pass


class _Worker:
    """The batch process's side of one worker process."""

    def __init__(self, index: int, process: asyncio.subprocess.Process) -> None:
        self.index = index
        self.process = process
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._outbox: list[bytes] = []
        self._write_error: OSError | None = None  # its run log could not be written
        self._reader = asyncio.create_task(self._read_rows())

    @classmethod
    async def start(
        cls, index: int, spec: BatchSpec, log: Path | None, max_runs: int, lock_fd: int | None
    ) -> _Worker:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "openprose.batches.processes",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            pass_fds=() if lock_fd is None else (lock_fd,),
        )
        worker = cls(index, process)
        header = {"spec": asdict(spec), "log": None if log is None else str(log)}
        worker._send({**header, "max_runs": max_runs, "parent": os.getpid()})
        return worker

    def _send(self, message: dict[str, Any]) -> None:
        """Queue a line for the worker; the lines of one event-loop turn go in one write."""
        self._outbox.append(
            orjson.dumps(message, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE)
        )
        if len(self._outbox) == 1:
            asyncio.get_running_loop().call_soon(self._send_queued)

    def _send_queued(self) -> None:
        assert self.process.stdin is not None
        lines, self._outbox = self._outbox, []
        if not self.process.stdin.is_closing():
            self.process.stdin.write(b"".join(lines))

    async def run(self, job: Job) -> dict[str, Any]:
        if self._reader.done():
            raise self._write_error or WorkerDied(self._died())
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[job.line] = future
        self._send(
            {"line": job.line, "run_id": job.run_id, "inputs": job.inputs, "resume": job.resume}
        )
        return await future

    async def _read_rows(self) -> None:
        assert self.process.stdout is not None
        try:
            async for line in self.process.stdout:
                row = orjson.loads(line)
                if "ready" in row:
                    if not self.ready.done():  # cancelled when the batch stopped meanwhile
                        self.ready.set_result(None)
                    continue
                if "write_error" in row:  # it stopped: the batch stops as for its own log
                    failed = row["write_error"]
                    self._write_error = OSError(
                        failed["errno"], failed["strerror"], failed["filename"]
                    )
                    continue
                future = self._waiting.pop(row["line"], None)
                if future is not None and not future.done():
                    future.set_result(row)
        finally:
            await self.process.wait()
            pending: list[asyncio.Future[Any]] = [self.ready, *self._waiting.values()]
            for waiting in pending:
                if not waiting.done():
                    waiting.set_exception(self._write_error or WorkerDied(self._died()))
            self._waiting.clear()

    def _died(self) -> str:
        code = self.process.returncode
        return f"worker process {self.index} exited" + (f" with {code}" if code else "")

    async def close(self) -> None:
        """No more jobs: it ends its runs and exits."""
        assert self.process.stdin is not None
        if self._outbox:
            self._send_queued()
        if not self.process.stdin.is_closing():
            self.process.stdin.close()
        await asyncio.shield(self._reader)


async def run_in_processes(
    runner: CaseRunner,
    jobs: Iterator[Job],
    deliver: Callable[[dict[str, Any]], None],
    max_runs: int,
    *,
    processes: int,
    batch_root: Path,
    lock_fd: int | None,
) -> None:
    """`processes` processes (this one included) share the jobs; each runs its part of
    `max_runs` at once. `runner` must hold this process's share of the provider limit."""
    from openprose.batches.in_process import run_in_process

    share = max(1, math.ceil(max_runs / processes))
    logged = runner.log is not None
    workers = [
        await _Worker.start(
            k,
            runner.spec,
            batch_root / f"runs.{k}.ndjson" if logged else None,
            share,
            lock_fd,
        )
        for k in range(1, processes)
    ]

    async def feed(worker: _Worker) -> None:
        try:
            await worker.ready
        except WorkerDied:
            return  # it never started (its stderr says why): the others take its share
        for job in jobs:
            try:
                deliver(await worker.run(job))
            except WorkerDied as died:
                deliver(row_of(job.line, job.run_id, "error", error=f"internal error: {died}"))

    try:
        await asyncio.gather(
            run_in_process(runner, jobs, deliver, share),
            *(feed(worker) for worker in workers for _ in range(share)),
        )
    finally:
        for worker in workers:
            await worker.close()


# --- the worker process ---------------------------------------------------------------------


def _die_with_parent(parent: int) -> None:
    """Ask the kernel for SIGKILL when the batch process dies (Linux; elsewhere the worker
    ends when its stdin closes)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # it died before the request took effect
        os._exit(1)


async def _serve(header: dict[str, Any]) -> None:
    from openprose.record.runlog import RunLog

    spec_fields = dict(header["spec"])
    options = dict(spec_fields.pop("options"))
    options["models"] = tuple(options.get("models") or ())
    runner = CaseRunner(BatchSpec(**spec_fields, options=RunOptions(**options)))
    log = (
        None if header["log"] is None else RunLog(Path(header["log"]), durable=runner.spec.durable)
    )
    runner.log = log
    out = sys.stdout.fileno()
    os.write(out, b'{"ready":true}\n')
    if log is not None:
        log.on_error = lambda error: _stop_on_write_error(out, error)

    def send(row: dict[str, Any]) -> None:
        data = orjson.dumps(row, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE)
        if log is not None:
            log.write_after(out, data)  # after the run's records
        else:
            os.write(out, data)

    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader(limit=1 << 26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    queue: asyncio.Queue[Job | None] = asyncio.Queue()
    share = int(header["max_runs"])

    async def read_jobs() -> None:
        async for line in stdin:
            job = orjson.loads(line)
            await queue.put(Job(job["line"], job["run_id"], job["inputs"], bool(job["resume"])))
        for _ in range(share):
            await queue.put(None)

    async def work() -> None:
        while (job := await queue.get()) is not None:
            send(await runner.run(job))

    try:
        await asyncio.gather(read_jobs(), *(work() for _ in range(share)))
    finally:
        await runner.aclose()
        if log is not None:
            await log.aclose()


def _stop_on_write_error(out: int, error: OSError) -> None:
    """The run log cannot be written (a full disk): tell the batch process, which stops the
    batch, and end at once — no more runs, no more requests."""
    failed = {"errno": error.errno, "strerror": error.strerror, "filename": error.filename}
    os.write(out, orjson.dumps({"write_error": failed}) + b"\n")
    os._exit(1)


def main() -> None:
    # Read ahead of the header is safe: no job is sent before this process says it is ready.
    header = orjson.loads(sys.stdin.buffer.readline())
    _die_with_parent(int(header["parent"]))
    from openprose.batches.event_loop import run_batch_loop
    from openprose.batches.in_process import fewer_collections

    with fewer_collections():
        run_batch_loop(_serve(header))


if __name__ == "__main__":
    main()

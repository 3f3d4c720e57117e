"""One case of a batch as a run: the code every executor runs, in process or on a worker.

`BatchSpec` is plain, picklable data (it travels to Ray workers); `CaseRunner` turns it into a
checked program and an open provider once per process and runs cases with them.
"""

from __future__ import annotations

import errno
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openprose import nodes as n
from openprose.session.options import DEFAULT_OPTIONS, RunOptions

if TYPE_CHECKING:
    from openprose.batches.tracing import RunTraces
    from openprose.record.logged_runs import LoggedRun
    from openprose.record.runlog import RunLog

__all__ = ["FINISHED", "WRITE_ERRNOS", "BatchSpec", "CaseRunner", "Job", "logged_row", "row_of"]

FINISHED = ("succeeded", "failed", "stopped")  # rows of their own; "aborted" is resumed
# A run that cannot write its files: the disk, not the run, is at fault; every later run
# would fail the same way, so the batch stops instead of making one failed row each.
WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG, errno.EROFS})


@dataclass(frozen=True, slots=True)
class BatchSpec:
    """What every run of a batch shares: the program and the `prose run` options."""

    program_path: str  # absolute; recorded in each run.json, the base of relative `use`
    program_text: str
    project_dir: str  # absolute: run folders go under {project_dir}/.prose/runs/
    # provider, models, evaluator, budgets (per run), yes (else `prompt` runs stop `waiting`)
    options: RunOptions = DEFAULT_OPTIONS
    durable: bool = False  # fsync each run's journal (`prose run` does; see docs/batch.md)
    # each run exports its trace: decided once by the driver (`--trace`, an OTLP endpoint in
    # its environment), so that workers elsewhere follow the same decision
    trace: bool = False


@dataclass(frozen=True, slots=True)
class Job:
    """Run `inputs` as run `run_id`; `resume` when the batch started that run before."""

    line: int
    run_id: str
    inputs: dict[str, Any] = field(default_factory=dict)
    resume: bool = False


def row_of(line: int, run_id: str | None, status: str, **rest: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "line": line,
        "run_id": run_id,
        "status": status,
        "outputs": {},
        "usage": {},
    }
    row["error"] = None
    row.update(rest)
    return row


class CaseRunner:
    """Runs jobs of one batch; `open` checks the program and opens the provider once."""

    def __init__(self, spec: BatchSpec) -> None:
        from openprose.session.launch import RunError, check_text, open_run
        from openprose.session.opening import UsageError

        self.spec = spec
        self.log: RunLog | None = None  # the batch's run log, when its runs are kept there
        project = Path(spec.project_dir)
        try:
            parsed = check_text(spec.program_text, spec.program_path, project)
        except UsageError as error:
            raise RunError(str(error), error.diagnostics) from None
        self.prepared = open_run(
            parsed.program,
            spec.program_text,
            program_dir=Path(spec.program_path).parent,
            project=project,
            options=spec.options,
        )
        from openprose.vm.runtime import ModelRouter

        # One router for all the runs: a provider that a `--model` override routes to is
        # opened once per batch (one connection pool, one limit), not once per run.
        self.router = ModelRouter(self.prepared.provider, self.prepared.settings)
        self.traces = _run_traces(spec.trace)

    def can_log(self) -> bool:
        """Whether the runs can be kept in a run log: not when an agent keeps its memory
        inside the run folder (`persist: true` writes it there as the run goes)."""
        from openprose.vm.agents import agent_spec
        from openprose.vm.memory import keeps_memory_in_run

        programs = [self.prepared.program, *_imported(self.prepared.imports)]
        return not any(
            keeps_memory_in_run(agent_spec(stmt).persist)
            for program in programs
            for stmt in program.body
            if isinstance(stmt, n.AgentDef)
        )

    async def run(self, job: Job) -> dict[str, Any]:
        """The job's row. A run that fails is a row with its error; so is a VM bug in one run
        (the batch goes on; the run folder stays resumable)."""
        try:
            if job.resume:
                row = await self._resume(job)
            else:
                row = self._row(job, await self._start(job))
            if self.traces is not None and (ids := self.traces.ids.pop(job.run_id, None)):
                row["trace"] = ids  # the batch's case span links to the run's
            return row
        except OSError as error:
            if error.errno in WRITE_ERRNOS:
                raise  # the disk, not the run: the batch stops (`driver`)
            message = f"internal error: {type(error).__name__}: {error}"
            return row_of(job.line, job.run_id, "error", error=message)
        except Exception as error:  # noqa: BLE001 - one run's bug must not end the batch
            message = f"internal error: {type(error).__name__}: {error}"
            return row_of(job.line, job.run_id, "error", error=message)

    def _start(self, job: Job) -> Awaitable[Any]:
        # the run's coroutine itself, not one more awaiting it: every coroutine between a
        # model call and the batch's worker is entered again each time the call resumes
        from openprose.session.launch import execute

        return execute(
            self.prepared,
            inputs=job.inputs,
            run_id=job.run_id,
            durable=self.spec.durable,
            log=self.log,
            router=self.router,
            tracer=self.traces,
        )

    async def _resume(self, job: Job) -> dict[str, Any]:
        from openprose.record.runstore import RUNS_DIR, RunStore
        from openprose.vm.runner import resume_run

        run_dir = self.prepared.project / RUNS_DIR / job.run_id
        if not (run_dir / "run.json").is_file():  # killed before the run wrote anything
            return self._row(job, await self._start(job))
        store = RunStore.open(run_dir)
        meta = store.read_meta()
        if meta.get("status") in FINISHED:  # it ended; only its row was not written
            return _finished_row(
                job.line,
                job.run_id,
                str(meta["status"]),
                store.read_outputs() or {},
                meta.get("usage") or {},
                meta.get("error"),
                meta.get("result"),
            )
        p = self.prepared
        result = await resume_run(
            run_dir,
            p.program,
            provider=p.provider,
            project_dir=p.project,
            imports=p.imports,
            settings=p.settings,
            config=p.config,
            prices=p.prices,
            tools=p.tools,
            durable=self.spec.durable,
            router=self.router,
            tracer=self.traces,
        )
        return self._row(job, result)

    @staticmethod
    def _row(job: Job, result: Any) -> dict[str, Any]:
        return _finished_row(
            job.line,
            result.run_id,
            result.status,
            result.outputs,
            result.usage,
            result.error,
            result.result,
        )

    async def aclose(self) -> None:
        await self.router.aclose()
        await self.prepared.provider.aclose()
        if self.traces is not None:
            self.traces.shutdown()  # export the last spans


def _run_traces(flag: bool) -> RunTraces | None:
    """The runs' tracer when the batch traces (`BatchSpec.trace`)."""
    from openprose.session.launch import RunError
    from openprose.telemetry.spans import TracingUnavailable, open_tracer

    if not flag:
        return None
    from openprose.batches.tracing import RunTraces

    try:
        return RunTraces(open_tracer())
    except TracingUnavailable as error:
        raise RunError(str(error)) from None


def logged_row(line: int, run: LoggedRun) -> dict[str, Any]:
    """The row of a run its batch's run log holds as ended."""
    meta = run.meta
    return _finished_row(
        line,
        run.run_id,
        str(meta["status"]),
        run.outputs(),
        meta.get("usage") or {},
        meta.get("error"),
        meta.get("result"),
    )


def _imported(imports: Any) -> list[Any]:
    """The programs of an import tree, nested ones included."""
    found = []
    for loaded in (imports or {}).values():
        found.append(loaded.program)
        found.extend(_imported(loaded.imports))
    return found


def _finished_row(
    line: int,
    run_id: str,
    status: str,
    outputs: dict[str, Any],
    usage: dict[str, Any],
    error: str | None,
    result: str | None,
) -> dict[str, Any]:
    """The row of a run that ended; `result` only for a program without outputs."""
    row = {
        "line": line,
        "run_id": run_id,
        "status": status,
        "outputs": outputs,
        "usage": usage,
        "error": error,
    }
    if result is not None:
        row["result"] = result
    return row

"""`run_batch` / `resume_batch`: one run per case of an inputs file, each a normal run folder,
rows appended to the output file as runs end, resumable after any crash.

The driver owns the batch folder: it reads cases lazily, writes the `started` record of a run
before handing it to an executor, and writes each row as it arrives, so no executor writes
batch files and both executors produce the same rows.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openprose.batches.cases import Case, CasesError, Invalid, read_cases
from openprose.batches.job import FINISHED, BatchSpec, CaseRunner, Job, logged_row, row_of
from openprose.batches.store import BatchStore, file_sha256, find_batch
from openprose.files import unreadable_reason
from openprose.record.logged_runs import materialize
from openprose.session.options import DEFAULT_OPTIONS, RunOptions

if TYPE_CHECKING:
    from openprose.batches.tracing import BatchTrace

__all__ = [
    "INVALID_LINES",
    "BatchError",
    "BatchResult",
    "BatchStats",
    "resume_batch",
    "run_batch",
]

EXECUTORS = ("local", "ray")
# A batch's status when every run succeeded but some input lines could not be run: the
# problem is in the inputs file, not in the program or the provider.
INVALID_LINES = "invalid_lines"
DEFAULT_MAX_RUNS = 64


class BatchError(Exception):
    """The batch could not start or continue (usage error: exit 2)."""


@dataclass(slots=True)
class BatchStats:
    """Counts as rows arrive; what the progress view and the summary show."""

    total: int | None = None  # cases in the file, when counted
    done_before: int = 0  # rows a resumed batch already had
    succeeded: int = 0
    failed: int = 0
    invalid: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0  # parts of input_tokens the prompt cache served
    cache_write_tokens: int = 0
    by_model: dict[str, dict[str, int]] = field(default_factory=dict)
    cost: float = 0.0  # USD of the priced calls
    unpriced: dict[str, int] = field(default_factory=dict)  # model -> tokens with no price
    started: float = field(default_factory=time.monotonic)

    @property
    def done(self) -> int:
        return self.succeeded + self.failed + self.invalid

    def add(self, row: dict[str, Any]) -> None:
        status = row["status"]
        if status == "succeeded":
            self.succeeded += 1
        elif status == "invalid":
            self.invalid += 1
        else:
            self.failed += 1
        usage = row.get("usage")
        if not usage:  # an invalid line, a run that could not start
            return
        self.input_tokens += int(usage.get("input_tokens", 0))
        self.output_tokens += int(usage.get("output_tokens", 0))
        self.cache_read_tokens += int(usage.get("cache_read_tokens", 0))
        self.cache_write_tokens += int(usage.get("cache_write_tokens", 0))
        for model, counts in (usage.get("by_model") or {}).items():
            mine = self.by_model.get(model)
            if mine is None:
                mine = self.by_model[model] = {"input_tokens": 0, "output_tokens": 0}
            mine["input_tokens"] += int(counts.get("input_tokens", 0))
            mine["output_tokens"] += int(counts.get("output_tokens", 0))
        cost = usage.get("cost_usd")
        if cost:
            self.cost += float(cost)
        unpriced = usage.get("unpriced_models")
        if unpriced:
            for model, tokens in unpriced.items():
                self.unpriced[model] = self.unpriced.get(model, 0) + int(tokens)


@dataclass(slots=True)
class BatchResult:
    batch_id: str
    batch_dir: Path
    output: Path
    # "succeeded": every case succeeded; "failed": some run did not (invalid lines or not);
    # "invalid_lines": every run succeeded, some input lines were invalid and never ran
    status: str
    stats: BatchStats

    def to_json(self) -> dict[str, Any]:
        s = self.stats
        return {
            "batch_id": self.batch_id,
            "status": self.status,
            "output": str(self.output),
            "cases": s.done + s.done_before,
            "succeeded": s.succeeded,
            "failed": s.failed,
            "invalid": s.invalid,
            "done_before": s.done_before,
            "usage": {
                "input_tokens": s.input_tokens,
                "output_tokens": s.output_tokens,
                **({"cache_read_tokens": s.cache_read_tokens} if s.cache_read_tokens else {}),
                **({"cache_write_tokens": s.cache_write_tokens} if s.cache_write_tokens else {}),
                "by_model": s.by_model,
                "cost_usd": round(s.cost, 6),
                "unpriced_models": s.unpriced,
            },
            "seconds": round(time.monotonic() - s.started, 3),
        }


Listener = Callable[[dict[str, Any], BatchStats], None]


def _check_output(output: Path) -> None:
    """The rows file can be written, checked before the batch folder is made."""
    if output.is_dir():
        raise BatchError(f"-o {output}: is a folder; give the rows file's name")
    folder = output.parent
    if not folder.is_dir():
        raise BatchError(f"-o {output}: no such folder {folder}")
    if not os.access(folder, os.W_OK) or (output.exists() and not os.access(output, os.W_OK)):
        raise BatchError(f"-o {output}: cannot write there (read-only or no permission)")


async def run_batch(
    program: str | Path,
    inputs: str | Path,
    *,
    output: str | Path | None = None,
    options: RunOptions = DEFAULT_OPTIONS,
    max_runs: int = DEFAULT_MAX_RUNS,
    durable: bool = False,
    trace: bool | None = None,
    executor: str = "local",
    ray_address: str | None = None,
    project_dir: str | os.PathLike[str] | None = None,
    on_row: Listener | None = None,
    on_start: Callable[[str, Path], None] | None = None,
    processes: int = 1,
) -> BatchResult:
    """Run `program` once per case of `inputs` (.jsonl, or .csv with a header), each run with
    `options` (provider, models, evaluator, budgets, yes; not `record`, `permission_mode`,
    `offline`). `processes` (local executor): how many processes run the runs, this one
    included. `trace`: True exports a trace (`--trace`), None as the environment says (an
    OTLP endpoint), False never."""
    from openprose.project import find_project
    from openprose.session.launch import RunError

    base = Path(project_dir).resolve() if project_dir is not None else Path.cwd()
    program_path = Path(program)
    program_path = program_path if program_path.is_absolute() else base / program_path
    inputs_path = Path(inputs)
    inputs_path = inputs_path if inputs_path.is_absolute() else base / inputs_path
    # As `prose run`: without `project_dir`, the nearest prose.toml above the program.
    project = base if project_dir is not None else find_project(program_path.parent).root
    _check_options(executor, max_runs, processes)
    if output is not None:
        _check_output(Path(output))
    try:
        text = program_path.read_text(encoding="utf-8")
    except OSError as error:
        raise BatchError(_unreadable(program_path, error)) from None
    except UnicodeDecodeError as error:
        raise BatchError(
            f"{program_path}: not valid UTF-8 (byte 0x{error.object[error.start]:02x} at offset "
            f"{error.start}); OpenProse source must be UTF-8"
        ) from None
    try:
        sha = file_sha256(inputs_path)
    except OSError as error:
        raise BatchError(_unreadable(inputs_path, error)) from None
    spec = BatchSpec(
        program_path=str(program_path.resolve()),
        program_text=text,
        project_dir=str(project),
        options=options,
        durable=durable,
        trace=_tracing(trace),
    )
    _preflight(executor, ray_address)
    try:
        runner = CaseRunner(spec)  # checks the program and the provider before any folder
    except RunError as error:
        raise BatchError(str(error)) from None
    meta = {
        "program": spec.program_path,
        "inputs": str(inputs_path.resolve()),
        "inputs_sha256": sha,
        "output": str(Path(output).resolve()) if output is not None else None,
        "options": {
            "provider": runner.prepared.launch["provider"],
            "models": list(options.models),
            "max_concurrency": options.max_concurrency,
            "evaluator": options.evaluator,
            "max_runs": max_runs,
            "budgets": dict(options.budgets),
            "yes": options.yes,
            "durable": durable,
            "executor": executor,
            "ray_address": ray_address,
            "processes": processes,
        },
        "status": "running",
    }
    store = BatchStore.create(project, meta, text)
    if on_start is not None:
        on_start(store.batch_id, store.root)
    return await _drive(store, spec, runner, executor, max_runs, ray_address, on_row, processes)


async def resume_batch(
    batch: str,
    *,
    max_runs: int | None = None,
    executor: str | None = None,
    ray_address: str | None = None,
    project_dir: str | os.PathLike[str] | None = None,
    on_row: Listener | None = None,
    on_start: Callable[[str, Path], None] | None = None,
    processes: int | None = None,
    trace: bool | None = None,
) -> BatchResult:
    """Run the cases of a batch that have no row yet; a run the batch had started is resumed
    (its finished sessions come from its journal), never started again. `trace`: as
    `run_batch`'s."""
    from openprose.batches.store import BatchBusy
    from openprose.project import runs_home
    from openprose.session.launch import RunError

    project = Path(project_dir).resolve() if project_dir is not None else runs_home()
    try:
        root = find_batch(project, batch)
    except ValueError as error:
        raise BatchError(str(error)) from None
    if root is None:
        raise BatchError(f"no batch {batch!r} under {project / '.prose' / 'batches'}")
    store = BatchStore(root)
    try:
        store.lock()
        meta = store.read_meta()
    except BatchBusy as error:
        raise BatchError(str(error)) from None
    except (OSError, ValueError) as error:
        raise BatchError(f"{store.meta_path}: damaged ({error})") from None
    inputs_path = Path(meta["inputs"])
    try:
        changed = file_sha256(inputs_path) != meta["inputs_sha256"]
    except OSError as error:
        raise BatchError(_unreadable(inputs_path, error)) from None
    if changed:
        raise BatchError(
            f"{inputs_path} changed since batch {store.batch_id} started; its line numbers "
            f"no longer name the same cases: start a new batch"
        )
    options = meta.get("options") or {}
    project = root.resolve().parent.parent.parent  # {project}/.prose/batches/{id}
    spec = BatchSpec(
        program_path=str(meta["program"]),
        program_text=store.program_text,
        project_dir=str(project),
        options=RunOptions(
            provider=options.get("provider"),
            models=tuple(options.get("models") or ()),
            max_concurrency=options.get("max_concurrency"),
            evaluator=options.get("evaluator"),
            budgets=dict(options.get("budgets") or {}),
            yes=bool(options.get("yes")),
        ),
        durable=bool(options.get("durable")),
        trace=_tracing(trace),
    )
    executor = executor or options.get("executor") or "local"
    if max_runs is None:
        max_runs = int(options.get("max_runs") or DEFAULT_MAX_RUNS)
    if processes is None:
        processes = int(options.get("processes") or 1)
    _check_options(executor, max_runs, processes)
    ray_address = ray_address or options.get("ray_address")
    try:
        _preflight(executor, ray_address)
        runner = CaseRunner(spec)
    except (RunError, BatchError) as error:
        store.close()
        raise BatchError(str(error)) from None
    store.update_meta(status="running")
    if on_start is not None:
        on_start(store.batch_id, store.root)
    return await _drive(store, spec, runner, executor, max_runs, ray_address, on_row, processes)


def _tracing(trace: bool | None) -> bool:
    """Whether a batch traces: `trace` True as `--trace`, None as this process's environment
    says (an OTLP endpoint, as `prose run`), False never. Decided here, once: the runs
    follow it wherever they run."""
    from openprose.telemetry.spans import wanted

    return trace is not False and wanted(bool(trace))


def _preflight(executor: str, ray_address: str | None) -> None:
    if executor != "ray":
        return
    from openprose.batches.on_ray import RayUnavailable, preflight

    try:
        preflight(ray_address)
    except RayUnavailable as error:
        raise BatchError(str(error)) from None


def _check_options(executor: str, max_runs: int, processes: int) -> None:
    if executor not in EXECUTORS:
        raise BatchError(f"unknown executor {executor!r}; choose one of: {', '.join(EXECUTORS)}")
    for name, value in (("max_runs", max_runs), ("processes", processes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise BatchError(f"{name} must be a positive integer, got {value!r}")


async def _drive(
    store: BatchStore,
    spec: BatchSpec,
    runner: CaseRunner,
    executor: str,
    max_runs: int,
    ray_address: str | None,
    on_row: Listener | None,
    processes: int,
) -> BatchResult:
    from openprose.record.logged_runs import read_log
    from openprose.record.runstore import RUNS_DIR

    stats = BatchStats()
    done = set()
    for row in store.rows():
        done.add(row["line"])
        stats.done_before += 1
    traced = _batch_trace(store, spec, resumed=bool(done))
    logged = read_log(store.root)
    log = store.open_for_append(durable=spec.durable)
    declared = _declared_inputs(runner.prepared.program)
    runs_dir = Path(spec.project_dir) / RUNS_DIR
    # The run folders there are now: a live batch's unfinished runs get none meanwhile.
    folders = set(os.listdir(runs_dir)) if runs_dir.is_dir() else set()
    inputs_path = Path(store.read_meta()["inputs"])
    if executor == "local" and runner.can_log():
        runner.log = log

    def deliver(row: dict[str, Any]) -> None:
        if log.error is not None:
            return  # its row cannot be written: neither counted nor shown
        store.write_row(row)
        stats.add(row)
        if traced is not None:
            traced.case_ended(row)
        if on_row is not None:
            on_row(row, stats)

    def jobs() -> Iterator[Job]:
        for case in read_cases(inputs_path):
            if log.error is not None:
                return  # the disk is full: no more runs (the executor is being stopped)
            if case.line in done:
                continue
            problem = _problem(case, declared)
            if problem is not None:
                deliver(row_of(case.line, None, "invalid", error=problem))
                continue
            assert isinstance(case, Case)
            run_id = store.run_id(case.line)
            if traced is not None:
                traced.case_started(case.line, run_id)
            if run_id in folders:  # a folder run (Ray), or one materialized since
                yield Job(case.line, run_id, case.inputs, resume=True)
                continue
            earlier = logged.get(run_id)
            if earlier is None:
                yield Job(case.line, run_id, case.inputs)
            elif earlier.meta.get("status") in FINISHED:  # it ended; its row was not written
                deliver(logged_row(case.line, earlier))
            else:  # in flight at the kill: resumed from its journal, as a folder
                materialize(store.root, run_id, runs_dir)
                yield Job(case.line, run_id, case.inputs, resume=True)

    async def execute(runner: CaseRunner, processes: int) -> None:
        cases = jobs()
        try:
            if executor == "ray":
                from openprose.batches.on_ray import RayUnavailable, run_on_ray

                await runner.aclose()  # the workers open their own
                # the limit prose.toml or --max-concurrency set, for the workers to share
                limit = runner.prepared.settings.max_concurrency
                shared = replace(spec, options=replace(spec.options, max_concurrency=limit))
                try:
                    await run_on_ray(shared, cases, deliver, max_runs, address=ray_address)
                except RayUnavailable as error:
                    raise BatchError(str(error)) from None
                return
            from openprose.batches.in_process import fewer_collections, run_in_process

            # each process needs one request of the provider limit at least
            processes = min(processes, runner.prepared.settings.max_concurrency)
            if processes > 1:
                runner = await _with_limit_share(runner, processes)
            try:
                with fewer_collections():
                    if processes > 1:
                        from openprose.batches.processes import run_in_processes

                        await run_in_processes(
                            runner,
                            cases,
                            deliver,
                            max_runs,
                            processes=processes,
                            batch_root=store.root,
                            lock_fd=store.lock_fd,
                        )
                    else:
                        await run_in_process(runner, cases, deliver, max_runs)
            finally:
                await runner.aclose()
        except CasesError as error:
            raise BatchError(str(error)) from None

    executing = asyncio.ensure_future(execute(runner, processes))

    def stop(_error: OSError) -> None:
        executing.cancel()  # the first failed write of the log or a row stops every run

    log.on_error = stop
    try:
        await executing
    except BaseException as error:
        if traced is not None:
            traced.end(
                "stopped", stats.done_before + stats.done, str(error) or type(error).__name__
            )
            traced = None
        if not isinstance(error, asyncio.CancelledError) or log.error is None:
            raise  # cancelled from outside (Ctrl-C), or not cancelled
    finally:
        await store.aclose()
    if log.error is not None:
        if traced is not None:
            traced.end("stopped", stats.done_before + stats.done, str(log.error))
        raise log.error
    everything = stats.done_before + stats.done
    failed, invalid = stats.failed, stats.invalid
    for row in _old_rows(store, done) if done else ():  # a resume: earlier rows count too
        if row.get("status") == "invalid":
            invalid += 1
        elif row.get("status") != "succeeded":
            failed += 1
    status = "failed" if failed else INVALID_LINES if invalid else "succeeded"
    store.update_meta(status="finished", cases=everything)
    if traced is not None:
        traced.end(status, everything)
    output = store.output_path
    return BatchResult(store.batch_id, store.root, output, status, stats)


def _batch_trace(store: BatchStore, spec: BatchSpec, *, resumed: bool) -> BatchTrace | None:
    """The batch's trace when tracing is on (the `CaseRunner` made before the batch folder
    has found the SDK and the settings usable)."""
    if not spec.trace:
        return None
    from openprose.batches.tracing import BatchTrace

    return BatchTrace(store.batch_id, Path(spec.program_path).name, resumed=resumed)


async def _with_limit_share(runner: CaseRunner, processes: int) -> CaseRunner:
    """A runner for this process's share of the provider limit: each of `processes`
    processes has its own provider (connection pool), and together they keep the limit."""
    share = runner.prepared.settings.max_concurrency // processes
    await runner.aclose()
    options = replace(runner.spec.options, max_concurrency=share)
    shared = CaseRunner(replace(runner.spec, options=options))
    shared.log = runner.log
    return shared


def _old_rows(store: BatchStore, lines: set[int]) -> Iterator[dict[str, Any]]:
    return (row for row in store.rows() if row["line"] in lines)


def _declared_inputs(program: Any) -> dict[str, Any]:
    from openprose import nodes as n

    return {s.name.id: s for s in program.body if isinstance(s, n.Input)}


def _problem(case: Case | Invalid, declared: dict[str, Any]) -> str | None:
    """Why a case cannot run (E026 / E027, as `prose run` says them), else None."""
    if isinstance(case, Invalid):
        return case.error
    if case.inputs.keys() == declared.keys():
        return None
    missing = [name for name in declared if name not in case.inputs]
    unknown = [name for name in case.inputs if name not in declared]
    problems = [f"E026 missing required input '{name}'" for name in missing]
    if unknown:
        known = ", ".join(declared) or "none"
        problems += [
            f"E027 unknown input '{name}'; the program declares: {known}" for name in unknown
        ]
    return "; ".join(problems) or None


def _unreadable(path: Path, error: OSError) -> str:
    """`PATH: why`, as the other commands say it (`unreadable_reason`)."""
    what = error.strerror or str(error)
    return f"{path}: {unreadable_reason(path) or f'cannot read ({what[:1].lower()}{what[1:]})'}"

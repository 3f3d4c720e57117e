"""Run programs from Python: the same runs `prose run` and `prose resume` make.

    import openprose
    result = openprose.run("examples/hello.prose", provider="openai",
                           models={"sonnet": "openai:gpt-4.1"})
    print(result.run_id, result.status, result.outputs)

`run` / `resume` block; `arun` / `aresume` are their coroutines; `events` runs a program and
yields each run event as it happens (the events the live view and `prose run` show). A
program that cannot be started (it does not check, an input is missing, no provider is
configured) raises `RunError` carrying the diagnostics; a program that starts and fails
returns a `RunResult` with `status == "failed"`, like `prose run` exits 1.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from openprose.record.events import Event, Streamed
from openprose.session.launch import (
    Budget,
    Prepared,
    ProgramRef,
    RunError,
    budgets_of,
    execute,
    model_flags,
    prepare,
)
from openprose.session.options import RunOptions
from openprose.vm.runner import RunResult

if TYPE_CHECKING:
    from openprose.telemetry.spans import Tracer
    from openprose.ui.server import UIServer
    from openprose.vm.estimates import Estimate
    from openprose.vm.subscribers import Observer

# `trace=`: True (as `--trace`), False (never), None (as the OTLP environment says), a tracer.
Trace: TypeAlias = "bool | None | Tracer"

__all__ = [
    "RunError",
    "RunEvent",
    "RunEvents",
    "RunResult",
    "abatch",
    "afork",
    "answer",
    "approve",
    "aresume",
    "arun",
    "atest",
    "batch",
    "deny",
    "events",
    "fork",
    "resume",
    "run",
    "serve_ui",
    "test",
]

T = TypeVar("T")


# What `events()` yields: a journal event (`openprose.record.events`, one frozen dataclass
# each: `SessionFinished`, `Decision`, `RunFinished`, ...) or, while an answer streams, a
# `Streamed` piece of it (never journaled).
RunEvent = Event | Streamed


def _blocking(
    name: str,
    coroutine: Coroutine[Any, Any, T],
    loop_factory: Callable[[], asyncio.AbstractEventLoop] | None = None,
) -> T:
    """Run `coroutine` to its end on a new event loop (one `loop_factory` makes, when given);
    inside running async code that would block the caller's loop, so the error names the
    coroutine to await instead."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            return runner.run(coroutine)
    coroutine.close()
    raise RuntimeError(
        f"openprose.{name}() blocks; inside async code use `await openprose.a{name}(...)`"
    )


async def arun(
    program: ProgramRef,
    *,
    inputs: Mapping[str, Any] | None = None,
    provider: str | None = None,
    models: Mapping[str, str] | list[str] | None = None,
    max_concurrency: int | None = None,
    evaluator: str | None = None,
    record: str | os.PathLike[str] | None = None,
    project_dir: str | os.PathLike[str] | None = None,
    max_sessions: Budget = None,
    max_tokens: Budget = None,
    max_cost: Budget = None,
    yes: bool = False,
    permission_mode: str = "default",
    trace: Trace = None,
    observer: Observer | None = None,
) -> RunResult:
    """Run a program (a `.prose` path or program text) to its end; see `run`."""
    options = RunOptions(
        provider=provider,
        models=tuple(model_flags(models)),
        max_concurrency=max_concurrency,
        evaluator=evaluator,
        record=None if record is None else os.fspath(record),
        budgets=budgets_of(max_sessions, max_tokens, max_cost),
        yes=yes,
        permission_mode=permission_mode,
    )
    prepared = prepare(program, options, inputs=inputs, project_dir=project_dir)
    return await start(prepared, observer, trace)


async def start(
    prepared: Prepared, observer: Observer | None = None, trace: Trace = False
) -> RunResult:
    """Run what `prepare` built, closing its provider (and exporting its trace) at the end."""
    return await _closing(
        prepared.provider, trace, lambda tracer: execute(prepared, observer, tracer)
    )


async def _closing(
    provider: Any, trace: Trace, go: Callable[[Tracer | None], Awaitable[RunResult]]
) -> RunResult:
    """`go` with the run's tracer; the provider is closed and the trace exported at the end,
    however it ends (also when the tracer cannot be opened)."""
    try:
        tracer = tracer_for(trace)
    except BaseException:
        await provider.aclose()
        raise
    try:
        return await go(tracer)
    finally:
        await provider.aclose()
        if tracer is not None:
            await asyncio.to_thread(tracer.shutdown)  # the last spans exported


async def _with_tools(
    provider: Any,
    project: Path,
    options: RunOptions,
    trace: Trace,
    go: Callable[[Any, Tracer | None], Awaitable[RunResult]],
) -> RunResult:
    """`go` with the project's tool runtime and the run's tracer (`_closing`); a tool
    runtime that cannot be made closes the provider and is one RunError."""
    from openprose.session import opening

    try:
        tools = opening.run_tools(project, options)
    except opening.UsageError as error:
        await provider.aclose()
        raise RunError(str(error), error.diagnostics) from None
    return await _closing(provider, trace, lambda tracer: go(tools, tracer))


def run(
    program: ProgramRef,
    *,
    inputs: Mapping[str, Any] | None = None,
    provider: str | None = None,
    models: Mapping[str, str] | list[str] | None = None,
    max_concurrency: int | None = None,
    evaluator: str | None = None,
    record: str | os.PathLike[str] | None = None,
    project_dir: str | os.PathLike[str] | None = None,
    max_sessions: Budget = None,
    max_tokens: Budget = None,
    max_cost: Budget = None,
    yes: bool = False,
    permission_mode: str = "default",
    trace: Trace = None,
) -> RunResult:
    """Run a program to its end and return its `RunResult` (`run_id`, `run_dir`, `status`,
    `outputs`, `usage`, `error`). Keywords mirror `prose run`'s options: `inputs` is
    `--input`/`--inputs`, `models` is `--model` as a mapping alias -> "provider:model",
    `max_sessions`/`max_tokens`/`max_cost` are the run's budgets (`"none"` lifts one),
    `yes=True` approves every `prompt` permission (otherwise such a run stops `waiting`
    for `prose approve`; library code never asks at the terminal),
    `permission_mode="plan"` is `--permission-mode plan` (read-only: every write, command
    and network call refused and reported),
    `project_dir` is where `.prose/` and `prose.toml` are (default: the working folder);
    `trace` is `--trace`: True traces (OpenTelemetry, the `[otel]` extra), False never,
    None as the OTLP environment variables say, or a tracer of your own
    (`openprose.telemetry.otel.OtelTracer`)."""
    return _blocking(
        "run",
        arun(
            program,
            inputs=inputs,
            provider=provider,
            models=models,
            max_concurrency=max_concurrency,
            evaluator=evaluator,
            record=record,
            project_dir=project_dir,
            max_sessions=max_sessions,
            max_tokens=max_tokens,
            max_cost=max_cost,
            yes=yes,
            permission_mode=permission_mode,
            trace=trace,
        ),
    )


async def aresume(
    run_id: str,
    *,
    provider: str | None = None,
    models: Mapping[str, str] | list[str] | None = None,
    max_concurrency: int | None = None,
    evaluator: str | None = None,
    project_dir: str | os.PathLike[str] | None = None,
    max_sessions: Budget = None,
    max_tokens: Budget = None,
    max_cost: Budget = None,
    yes: bool = False,
    permission_mode: str = "default",
    trace: Trace = None,
    observer: Observer | None = None,
) -> RunResult:
    """Continue a run (id, unique prefix or folder) as `prose resume` does: finished work is
    served from its journal; options default to what the run was started with (a budget
    given now replaces the recorded one)."""
    from openprose.project import runs_home
    from openprose.session import opening
    from openprose.session.resume import NothingToResume, prepare_resume

    project = Path(project_dir) if project_dir is not None else runs_home()
    try:
        options = RunOptions(
            provider=provider,
            models=tuple(model_flags(models)),
            max_concurrency=max_concurrency,
            evaluator=evaluator,
            budgets=budgets_of(max_sessions, max_tokens, max_cost),
            yes=yes,
            permission_mode=permission_mode,
        )
        resuming = prepare_resume(project, run_id, options)
    except NothingToResume as done:  # it succeeded before: its result, nothing run again
        from openprose.record.runstore import RunStore

        meta = done.meta
        return RunResult(
            done.run_dir.name,
            done.run_dir,
            "succeeded",
            RunStore.open(done.run_dir).read_outputs() or {},
            meta.get("usage") or {},
            None,
            meta.get("result"),
        )
    except opening.UsageError as error:
        raise RunError(str(error), error.diagnostics) from None
    return await _with_tools(
        resuming.provider,
        resuming.project,
        options,
        trace,
        lambda tools, tracer: resuming.resume(observer, tools, tracer),
    )


def estimate(
    program: ProgramRef,
    *,
    inputs: Mapping[str, Any] | None = None,
    provider: str | None = None,
    models: Mapping[str, str] | list[str] | None = None,
    evaluator: str | None = None,
    project_dir: str | os.PathLike[str] | None = None,
) -> Estimate:
    """The bounds of a run of `program` before it starts, as `prose run --estimate` prints
    them: `.sessions`, `.requests`, `.input_tokens`, `.output_tokens` (each a `Range` with
    `low` and `high`, `high` None when unbounded), `.cost`, per model `.models`, and
    `.unbounded` (why a bound is missing); `.table()` and `.to_json()` show it. No model is
    asked and no provider opened. Keywords as `run`'s; `RunError` when the program has
    errors."""
    import io

    from openprose.project import find_project
    from openprose.session import opening
    from openprose.session.estimate import estimate_run
    from openprose.session.launch import check_text, program_source

    base = Path(project_dir) if project_dir is not None else Path.cwd()
    path, text = program_source(program, base)
    if path is not None and not path.is_absolute():
        path = base / path
    program_dir = path.parent if path is not None else base
    project = find_project(program_dir).root if project_dir is None else base
    try:
        if path is not None:
            parsed = opening.parse_and_check(path, project, io.StringIO())
        else:
            assert text is not None
            parsed = check_text(text, "<string>", project)
        given = dict(inputs or {})  # an input not given leaves what depends on it unbounded
        return estimate_run(
            parsed.program,
            given,
            project=project,
            program_dir=program_dir,
            provider=provider,
            models=model_flags(models),
            evaluator=evaluator,
        )
    except opening.UsageError as error:
        raise RunError(str(error), error.diagnostics) from None


def resume(
    run_id: str,
    *,
    provider: str | None = None,
    models: Mapping[str, str] | list[str] | None = None,
    max_concurrency: int | None = None,
    evaluator: str | None = None,
    project_dir: str | os.PathLike[str] | None = None,
    max_sessions: Budget = None,
    max_tokens: Budget = None,
    max_cost: Budget = None,
    yes: bool = False,
    permission_mode: str = "default",
    trace: Trace = None,
) -> RunResult:
    """`aresume`, blocking."""
    return _blocking(
        "resume",
        aresume(
            run_id,
            provider=provider,
            models=models,
            max_concurrency=max_concurrency,
            evaluator=evaluator,
            project_dir=project_dir,
            max_sessions=max_sessions,
            max_tokens=max_tokens,
            max_cost=max_cost,
            yes=yes,
            permission_mode=permission_mode,
            trace=trace,
        ),
    )


async def afork(
    run_id: str,
    at: str,
    *,
    inputs: Mapping[str, Any] | None = None,
    bindings: Mapping[str, str] | None = None,
    provider: str | None = None,
    models: Mapping[str, str] | list[str] | None = None,
    max_concurrency: int | None = None,
    evaluator: str | None = None,
    project_dir: str | os.PathLike[str] | None = None,
    max_sessions: Budget = None,
    max_tokens: Budget = None,
    max_cost: Budget = None,
    yes: bool = False,
    permission_mode: str = "default",
    trace: Trace = None,
    observer: Observer | None = None,
) -> RunResult:
    """Fork a run (id, unique prefix or folder) at step `at`, as `prose fork` does: a new
    run that takes the run's answers to identical requests before `at`, with `inputs`
    changed and the sessions that bound `bindings` answered with the values given (as
    `--set`), and continues live.
    Options default to the run's; a bad run, step, input or binding raises `RunError`."""
    from openprose.project import runs_home
    from openprose.session import opening
    from openprose.session.fork import prepare_fork

    project = Path(project_dir) if project_dir is not None else runs_home()
    options = RunOptions(
        provider=provider,
        models=tuple(model_flags(models)),
        max_concurrency=max_concurrency,
        evaluator=evaluator,
        budgets=budgets_of(max_sessions, max_tokens, max_cost),
        yes=yes,
        permission_mode=permission_mode,
    )
    try:
        forking = prepare_fork(project, run_id, at, inputs=inputs, values=bindings, options=options)
    except opening.UsageError as error:
        raise RunError(str(error), error.diagnostics) from None
    return await _with_tools(
        forking.provider,
        forking.project,
        options,
        trace,
        lambda tools, tracer: forking.start(observer, tools, tracer),
    )


def fork(
    run_id: str,
    at: str,
    *,
    inputs: Mapping[str, Any] | None = None,
    bindings: Mapping[str, str] | None = None,
    provider: str | None = None,
    models: Mapping[str, str] | list[str] | None = None,
    project_dir: str | os.PathLike[str] | None = None,
    max_sessions: Budget = None,
    max_tokens: Budget = None,
    max_cost: Budget = None,
    yes: bool = False,
    trace: Trace = None,
) -> RunResult:
    """`afork`, blocking."""
    return _blocking(
        "fork",
        afork(
            run_id,
            at,
            inputs=inputs,
            bindings=bindings,
            provider=provider,
            models=models,
            project_dir=project_dir,
            max_sessions=max_sessions,
            max_tokens=max_tokens,
            max_cost=max_cost,
            yes=yes,
            trace=trace,
        ),
    )


def approve(
    run_id: str,
    ids: Sequence[str] = (),
    *,
    for_run: bool = False,
    all: bool = False,
    project_dir: str | os.PathLike[str] | None = None,
) -> list[dict[str, Any]]:
    """Answer a waiting run's permission requests with yes, as `prose approve` does (the
    answer is sealed with the user's approval key and recorded `by` "api"); `for_run`
    allows the same action for the rest of the run. Returns the requests answered;
    `RunError` when there is nothing to answer. `resume` then continues the run."""
    return _answer(run_id, "run" if for_run else "once", ids, all, project_dir)


def deny(
    run_id: str,
    ids: Sequence[str] = (),
    *,
    all: bool = False,
    project_dir: str | os.PathLike[str] | None = None,
) -> list[dict[str, Any]]:
    """Refuse a waiting run's permission requests, as `prose deny` does."""
    return _answer(run_id, "deny", ids, all, project_dir)


def answer(
    run_id: str,
    text: str,
    question: str | None = None,
    *,
    project_dir: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Answer a waiting run's question (an `ask` statement), as `prose answer` does: `text`
    is the answer, or an option's number or text; `question` its id ("q1"), needed only
    when several wait. The answer is sealed with the user's approval key and recorded `by`
    "api" with the login name and the time. Returns the question with the answer taken
    (`{"id", "question", "options", "default", "timeout", "digest", "answer", "by",
    "user"}`); `RunError` when there is nothing to answer or the answer is not one of the
    options. `resume` then continues the run."""
    from openprose.project import runs_home
    from openprose.record.runstore import DamagedRun
    from openprose.session.answers import answer_question
    from openprose.session.opening import UsageError
    from openprose.session.resume import locate_run
    from openprose.vm.questions import AnswerError

    project = Path(project_dir) if project_dir is not None else runs_home()
    try:
        run_dir = locate_run(project, run_id)
        return answer_question(run_dir, text, question, by="api")
    except (UsageError, AnswerError, DamagedRun) as error:
        raise RunError(str(error)) from None


def _answer(
    run_id: str,
    answer: str,
    ids: Sequence[str],
    all_pending: bool,
    project_dir: str | os.PathLike[str] | None,
) -> list[dict[str, Any]]:
    from openprose.project import runs_home
    from openprose.record.runstore import DamagedRun
    from openprose.session.answers import answer_requests
    from openprose.session.opening import UsageError
    from openprose.session.resume import locate_run
    from openprose.vm.approvals import ApprovalError

    if isinstance(ids, str):
        ids = [ids]
    project = Path(project_dir) if project_dir is not None else runs_home()
    try:
        run_dir = locate_run(project, run_id)
        return answer_requests(run_dir, answer, list(ids), all_pending=all_pending, by="api")
    except (UsageError, ApprovalError, DamagedRun) as error:
        raise RunError(str(error)) from None


def tracer_for(trace: Trace) -> Tracer | None:
    """The tracer a `trace=` keyword asks for (see `run`); `RunError` as `--trace` would fail."""
    if trace is None or isinstance(trace, bool):
        if trace is False:
            return None
        from openprose.session.opening import UsageError, open_tracer_or_fail

        try:
            return open_tracer_or_fail(trace is True)
        except UsageError as error:
            raise RunError(str(error)) from None
    return trace


class RunEvents:
    """`async for event in openprose.events(...)`: each event as it happens; after the
    loop, `.result` holds the `RunResult`. Leaving the loop early cancels the run (it stays
    resumable, like an interrupted `prose run`)."""

    def __init__(self, program: ProgramRef, options: dict[str, Any]) -> None:
        self._program = program
        self._options = options
        self.result: RunResult | None = None

    async def __aiter__(self) -> AsyncIterator[RunEvent]:
        queue: asyncio.Queue[RunEvent | None] = asyncio.Queue()
        observer = _Queued(queue)
        task = asyncio.ensure_future(arun(self._program, observer=observer, **self._options))
        task.add_done_callback(lambda _: queue.put_nowait(None))
        try:
            while (item := await queue.get()) is not None:
                yield item
            self.result = task.result()  # raises RunError when the run could not start
        finally:
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)


class _Queued:
    """A subscriber putting each event in a queue, and each piece of a streaming answer
    (having `answer_text` makes the VM ask for streamed answers)."""

    def __init__(self, queue: asyncio.Queue[RunEvent | None]) -> None:
        self._queue = queue

    def __call__(self, event: Event, t: float) -> None:
        self._queue.put_nowait(event)

    def answer_text(self, step: str, text: str) -> None:
        self._queue.put_nowait(Streamed(step, text))


def events(program: ProgramRef, **options: Any) -> RunEvents:
    """Run a program, yielding its typed events as they happen (and `Streamed` pieces of
    answers while they stream); takes `arun`'s keywords (except `observer`)."""
    return RunEvents(program, options)


async def abatch(
    program: ProgramRef | None = None,
    inputs: str | os.PathLike[str] | None = None,
    *,
    resume: str | None = None,
    output: str | os.PathLike[str] | None = None,
    provider: str | None = None,
    models: Mapping[str, str] | list[str] | None = None,
    max_concurrency: int | None = None,
    evaluator: str | None = None,
    max_runs: int | None = None,
    executor: str | None = None,
    ray_address: str | None = None,
    processes: int | None = None,
    project_dir: str | os.PathLike[str] | None = None,
    max_sessions: Budget = None,
    max_tokens: Budget = None,
    max_cost: Budget = None,
    yes: bool = False,
    trace: bool | None = None,
) -> Any:
    """Run `program` once per case of `inputs` (`prose batch`), or continue the batch
    `resume`; returns a `BatchResult` (`batch_id`, `status`, `output`, `stats`). A batch
    that cannot start raises `openprose.batches.BatchError`. `trace`: True as `--trace` (a
    span for the batch, one per case, each run's own trace), None as the OTLP environment
    says, False never."""
    from openprose.batches import resume_batch, run_batch

    if resume is not None:
        return await resume_batch(
            resume,
            max_runs=max_runs,
            executor=executor,
            ray_address=ray_address,
            processes=processes,
            project_dir=project_dir,
            trace=trace,
        )
    if program is None or inputs is None:
        raise TypeError("batch() needs a program and an inputs file, or resume=BATCH_ID")
    return await run_batch(
        os.fspath(program),
        os.fspath(inputs),
        output=None if output is None else os.fspath(output),
        options=RunOptions(
            provider=provider,
            models=tuple(model_flags(models)),
            max_concurrency=max_concurrency,
            evaluator=evaluator,
            budgets=budgets_of(max_sessions, max_tokens, max_cost),
            yes=yes,
        ),
        max_runs=max_runs or 64,
        executor=executor or "local",
        ray_address=ray_address,
        processes=processes or 1,
        project_dir=project_dir,
        trace=trace,
    )


def batch(
    program: ProgramRef | None = None,
    inputs: str | os.PathLike[str] | None = None,
    **options: Any,
) -> Any:
    """`abatch`, blocking."""
    from openprose.batches.event_loop import batch_loop_factory

    return _blocking("batch", abatch(program, inputs, **options), batch_loop_factory())


def serve_ui(project_dir: str | os.PathLike[str] | None = None, *, port: int = 0) -> UIServer:
    """Serve the live web view of `prose ui` in a background thread of this process and
    return it running: `server.url` (127.0.0.1, with its token) to open, `server.close()`
    to stop it (or use it as a context manager). `port=0` takes any free port; a port in
    use raises `openprose.ui.PortInUse` (an `OSError`). `project_dir` is the project whose
    `.prose/runs/` it shows (default: the working folder's project)."""
    from openprose.project import runs_home
    from openprose.ui.server import serve

    return serve(Path(project_dir) if project_dir is not None else runs_home(), port)


async def atest(
    paths: Sequence[str | os.PathLike[str]] = (),
    *,
    keyword: str | None = None,
    record: bool = False,
    update: bool = False,
    provider: str | None = None,
    models: Mapping[str, str] | list[str] | None = None,
    jobs: int | None = None,
) -> Any:
    """Run the cases of the test files under `paths`, as `prose test` does; returns a
    `SuiteResult` (`.passed`, `.outcomes` each with `.id`, `.outcome`, `.failures`;
    `.count("failed")`). A bad path, test file or `keyword` raises `RunError`."""
    from openprose.testing.case import Mode
    from openprose.testing.suite import (
        DEFAULT_JOBS,
        SuiteError,
        TestFileError,
        discover,
        keyword_filter,
        load_files,
        run_suite,
    )

    try:
        files = load_files(discover([Path(p) for p in paths]))
        if keyword:
            keyword_filter(keyword)
    except (SuiteError, TestFileError) as error:
        raise RunError(str(error)) from None
    mode = Mode(record=record, provider=provider, models=tuple(model_flags(models)))
    return await run_suite(files, mode, keyword=keyword, update=update, jobs=jobs or DEFAULT_JOBS)


def test(paths: Sequence[str | os.PathLike[str]] = (), **options: Any) -> Any:
    """`atest`, blocking."""
    return _blocking("test", atest(paths, **options))


test.__test__ = False  # type: ignore[attr-defined]  # a test runner, not a pytest test

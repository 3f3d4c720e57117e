"""Public entry points: `run_program` starts a run, `resume_run` continues one.

Both take an open `Provider` (the CLI opens it from settings); the settings, when given, route
model aliases to other providers and are recorded in `run.json` (secrets excepted) so a resume
can default to them.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openprose import nodes as n
from openprose.depth import deep_recursion
from openprose.providers.base import Provider
from openprose.providers.prices import Prices
from openprose.record import events as ev
from openprose.record.approval_seal import approval_key, seal_grant
from openprose.record.audit import AUDIT_FILE, AuditTrail
from openprose.record.journal import Journal, read_journal
from openprose.record.runstore import DamagedRun, RunStore, process_started, utc_now
from openprose.vm.approvals import Honoured, honoured_answers, run_id_of
from openprose.vm.budget import FLAGS, BudgetExhausted
from openprose.vm.errors import ProseError, RunAborted
from openprose.vm.heap import give_big_blocks_back
from openprose.vm.interpreter import Interpreter
from openprose.vm.questions import QuestionPending
from openprose.vm.runtime import (
    LoadedProgram,
    ModelRouter,
    Replay,
    RunStats,
    Shared,
    ToolRuntime,
    VMConfig,
)
from openprose.vm.subscribers import Observer
from openprose.vm.tools.approvals import (
    ApprovalPending,
    ApprovalRequest,
    RecordedAnswer,
    RecordedApprover,
)
from openprose.vm.values import Value, to_json

if TYPE_CHECKING:
    from openprose.providers.settings import ProviderSettings
    from openprose.record.runlog import RunLog
    from openprose.telemetry.spans import Tracer
    from openprose.vm.forking import Fork

__all__ = ["RunResult", "VMConfig", "resume_run", "run_program"]


@dataclass(slots=True)
class RunResult:
    run_id: str
    run_dir: Path
    status: str  # "succeeded" | "failed" | "aborted" | "stopped" (a budget) | "waiting"
    outputs: dict[str, Any] = field(default_factory=dict)
    usage: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    result: str | None = None  # the final result, for a program that declares no output

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "status": self.status,
            "outputs": self.outputs,
            "usage": self.usage,
            **({"result": self.result} if self.result is not None else {}),
            **({"error": self.error} if self.error else {}),
        }


async def run_program(
    program: n.Program,
    text: str,
    *,
    provider: Provider,
    project_dir: Path,
    inputs: Mapping[str, Value] | None = None,
    imports: Mapping[str, LoadedProgram] | None = None,
    settings: ProviderSettings | None = None,
    config: VMConfig | None = None,
    observer: Observer | None = None,
    launch: Mapping[str, Any] | None = None,
    prices: Prices | None = None,
    tools: ToolRuntime | None = None,
    run_id: str | None = None,
    durable: bool = True,
    tracer: Tracer | None = None,
    log: RunLog | None = None,
    router: ModelRouter | None = None,
    fork: Fork | None = None,
) -> RunResult:
    """Run a checked program in a new run folder under `project_dir/.prose/runs/`.

    `launch` is recorded in run.json for `prose resume` (the CLI puts its options there).
    `run_id`, when given, is one `reserve_run_id` made, or a batch's own id for the run;
    `durable=False` writes the journal without fsync (see `Journal`). With `log` (and
    `run_id`) the run is recorded in a batch's run log instead of a folder (`runlog`).
    `router`, when given, is shared with other runs (a batch's) and left open. `fork`: the
    run is a fork of another (`prose fork`), recorded in run.json as `forked_from`."""
    config = config or VMConfig()
    shared = _shared_meta(program, imports, config, launch)
    pid, pid_started = _this_process()
    meta = {
        "program": shared["program"],
        "status": "running",
        "started": utc_now(),
        "pid": pid,
        "pid_started": pid_started,
        "inputs": to_json(dict(inputs or {})),
        **shared,
        **({"forked_from": fork.origin} if fork is not None else {}),
    }
    store: RunStore
    journal: Journal
    if log is not None and run_id is not None:
        store, journal = log.open_run(run_id, os.path.basename(program.path), meta)
    else:

        def lay_out() -> tuple[RunStore, Journal]:
            store = RunStore.create(project_dir, text, Path(program.path).name, run_id)
            store.write_meta({"run_id": store.run_id, **meta})
            store.open_state()
            return store, Journal(store.journal_path, durable=durable)

        # A dozen file-system calls: on a thread, so that a batch's other runs go on.
        store, journal = await asyncio.to_thread(lay_out)
    return await _execute(
        program,
        text,
        store,
        provider=provider,
        project_dir=project_dir,
        inputs=inputs,
        imports=imports,
        settings=settings,
        config=config,
        observer=observer,
        replay=Replay(inherited=fork.answers if fork is not None else None),
        prices=prices,
        journal=journal,
        tracer=tracer,
        tools=tools,
        router=router,
    )


async def resume_run(
    run_dir: Path,
    program: n.Program,
    *,
    provider: Provider,
    project_dir: Path,
    imports: Mapping[str, LoadedProgram] | None = None,
    settings: ProviderSettings | None = None,
    config: VMConfig | None = None,
    observer: Observer | None = None,
    prices: Prices | None = None,
    tools: ToolRuntime | None = None,
    durable: bool = True,
    tracer: Tracer | None = None,
    router: ModelRouter | None = None,
) -> RunResult:
    """Continue a run: finished sessions, decisions and tool results come from its journal,
    the rest runs. Approvals recorded while it waited (`prose approve`/`deny`) answer the
    requests they name; any other `prompt` goes to `tools.approver`.

    `program` must be the parse of the run's own `program.prose`."""
    store = RunStore.open(run_dir)
    store.take_lock()  # RunBusy while another process writes the run
    try:
        meta = store.read_meta()
        try:
            replay = Replay.from_events(read_journal(store.journal_path))
        except OSError as error:
            raise DamagedRun(f"{store.journal_path}: cannot read ({error.strerror})") from None
        except ValueError as error:
            raise DamagedRun(
                f"{store.journal_path}: {error}; the run cannot be resumed as it is"
            ) from None
        from openprose.vm.forking import resumed_fork_answers  # forks only, and rare

        replay.inherited = resumed_fork_answers(run_dir, meta)
        recorded = meta.get("config") or {}
        config = config or VMConfig(
            **{k: v for k, v in recorded.items() if k in VMConfig.__dataclass_fields__}
        )
        store.update_meta(
            status="running",
            pid=os.getpid(),
            pid_started=process_started(os.getpid()),
            resumed=utc_now(),
        )
        store.state(f"---resume {utc_now()}")
        text = (run_dir / "program.prose").read_text(encoding="utf-8")
        journal = Journal(store.journal_path, durable=durable)
    except BaseException:
        store.close()
        raise
    return await _execute(
        program,
        text,
        store,
        provider=provider,
        project_dir=project_dir,
        inputs=meta.get("inputs") or {},
        imports=imports,
        settings=settings,
        config=config,
        observer=observer,
        replay=replay,
        prices=prices,
        tracer=tracer,
        tools=tools,
        journal=journal,
        router=router,
    )


def _seal_grant(run_id: str, kind: str, action: str) -> str:
    return seal_grant(approval_key(), run_id, kind, action)


def _serve_recorded_answers(shared: Shared, honoured: Honoured) -> None:
    """Journal the recorded answers a resume will not use (forged, another run's, altered),
    and serve the others: each only to the request, kind and exact action it answered."""
    for ignored in honoured.ignored:
        shared.emit(
            ev.ApprovalIgnored(step="", id=ignored.id, what=ignored.what, reason=ignored.why)
        )
    if not honoured.answers:
        return

    def mismatch(request: ApprovalRequest, recorded: RecordedAnswer) -> None:
        shared.emit(
            ev.ApprovalIgnored(
                step="",
                id=request.id,
                what=f"answer {recorded.answer} to {request.id} ({honoured.shown[request.id]})",
                reason="the action asked for now differs from the one answered; asked again",
            )
        )

    tools = shared.tools
    tools.approver = RecordedApprover(honoured.answers, tools.approver, mismatch)


async def _execute(
    program: n.Program,
    text: str,
    store: RunStore,
    *,
    provider: Provider,
    project_dir: Path,
    inputs: Mapping[str, Value] | None,
    imports: Mapping[str, LoadedProgram] | None,
    settings: ProviderSettings | None,
    config: VMConfig,
    observer: Observer | None,
    replay: Replay,
    prices: Prices | None,
    tools: ToolRuntime | None = None,
    journal: Journal | None = None,
    tracer: Tracer | None = None,
    router: ModelRouter | None = None,
) -> RunResult:
    give_big_blocks_back()  # a run's big texts (outputs, journal lines) must not pile up
    tools = tools.for_one_run() if tools else ToolRuntime()
    # a run kept in a batch's run log has no folder yet; its folder will be named its id
    run_id = run_id_of(store.root) if store.writes_files else store.run_id
    tools.seal_grant = functools.partial(_seal_grant, run_id)
    tools.run_id = run_id
    honoured = honoured_answers(replay.tools, run_id)
    tools.grants.update(honoured.grants)
    fresh = not (replay.sessions or replay.decisions or store.has_journal_events())
    meta = store.written_meta() if fresh else await asyncio.to_thread(store.read_meta)
    program_name = os.path.basename(str(meta.get("program") or program.path))
    audit = None
    if config.audit and fresh and store.keeps_audit_trail:
        audit = AuditTrail(store.root / AUDIT_FILE, store.run_id, program_name)
    elif config.audit and store.keeps_audit_trail:
        # A resumed run first writes what its journal holds beyond the trail on disk.
        audit = await asyncio.to_thread(
            AuditTrail.resume,
            store.root / AUDIT_FILE,
            store.run_id,
            program_name,
            read_journal(store.journal_path),
        )
    trace_ids: dict[str, Any] = {}
    if tracer is not None:
        earlier = meta.get("trace")
        trace_ids = tracer.start_run(store.run_id, program_name, earlier)
        # A resume links its run span to this attempt's (the latest attempt: a chain).
        await asyncio.to_thread(store.update_meta, trace=trace_ids)
    journal = journal or Journal(store.journal_path)
    journal.start()
    own_router = router is None
    if router is None:
        router = ModelRouter(provider, settings)
    shared = Shared(
        router=router,
        journal=journal,
        config=config,
        replay=replay,
        project_dir=project_dir,
        stats=RunStats(prices=prices or Prices.default()),
        observer=observer,
        audit=audit,
        tracer=tracer,
        tools=tools,
    )
    if store.writes_files:
        store.hold_state()
        journal.when_written(store.write_held_state)
    shared.emit(
        ev.RunStarted(
            step="",
            run_id=store.run_id,
            resumed=bool(replay.sessions or replay.decisions),
            inputs=to_json(dict(inputs or {})),
        )
    )
    _serve_recorded_answers(shared, honoured)
    interpreter = Interpreter(program, text, shared, store, inputs=inputs, imports=imports)
    status, error = "succeeded", None
    outputs: dict[str, Any] = {}
    try:
        with deep_recursion():  # a statement nests a few coroutine frames a level
            values = await interpreter.run()
        outputs = {k: to_json(v) for k, v in values.items()}
    except ProseError as failure:
        status, error = "failed", str(failure)
    except RunAborted as abort:
        status, error = "aborted", str(abort)
    except BudgetExhausted as stop:
        status, error = "stopped", _stopped(stop, store.run_id)
    except QuestionPending as pending:
        status = "waiting"
        error = (
            f"waiting for an answer to {pending.question.describe()} "
            f"(prose answer {store.run_id} {pending.question.id} TEXT, then prose resume)"
        )
        store.state(f"{pending.question.step}→ waiting: {pending.question.describe()}")
    except ApprovalPending as pending:
        status = "waiting"
        error = (
            f"waiting for approval: {pending.request.describe()} "
            f"(prose approve {store.run_id} / prose deny {store.run_id}, then prose resume)"
        )
        store.state(f"{pending.request.id}→ waiting: {pending.request.describe()}")
    except BaseException:
        # A VM bug or an interrupt: keep what was journaled (the run stays resumable).
        await journal.close()
        if tracer is not None:  # the run's span is ended below: a resume does not write it
            store.update_meta(trace={**trace_ids, "ended": True})
        store.close()
        if audit is not None:
            audit.close()
        if tracer is not None:
            tracer.end_run("interrupted", None)
        raise
    finally:
        if own_router:
            await router.aclose()
    stamp = utc_now()

    def write_end() -> None:
        if status == "succeeded":
            store.write_outputs(outputs)
            store.state(f"---end {stamp}")
        elif status == "waiting":
            store.state(f"---waiting {stamp}")
        else:
            store.state(f"---error {stamp} {error}")

    if store.writes_files:  # outputs.json and state.md's end say what the journal must hold
        shared.commit()
        store.hold_state(False)
    await store.offload(write_end)
    usage = shared.stats.usage()
    shared.emit(ev.RunFinished(step="", status=status, error=error, usage=usage, outputs=outputs))
    await journal.close()
    if audit is not None:
        await audit.aclose()  # its last batch
    if tracer is not None:
        tracer.end_run(status, error)
    result = interpreter.final_result if status == "succeeded" else None
    finished: dict[str, Any] = {}
    if audit is not None and audit.error is not None:
        finished["audit_error"] = str(audit.error)  # the journal still holds every event

    await store.aflush()  # the binding files, without holding a worker thread

    def close_store() -> None:
        if tracer is not None:  # the run's span was ended: a resume does not write it again
            finished["trace"] = {**trace_ids, "ended": True}
        store.update_meta(
            status=status, finished=stamp, error=error, usage=usage, result=result, **finished
        )
        store.close()

    await store.offload(close_store)
    return RunResult(store.run_id, store.root, status, outputs, usage, error, result)


_last_shared: tuple[tuple[Any, ...], dict[str, Any]] | None = None


def _shared_meta(
    program: n.Program,
    imports: Mapping[str, LoadedProgram] | None,
    config: VMConfig,
    launch: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The run.json fields a program, its imports, config and launch options decide. A
    batch starts thousands of runs with the same four objects: they get the same dict
    (built once; `asdict(config)` alone cost ~90 µs a run), which its run log records once."""
    global _last_shared
    if _last_shared is not None:
        last = _last_shared[0]
        if last[0] is program and last[1] is imports and last[2] is config and last[3] is launch:
            return _last_shared[1]
    shared = {
        "program": program.path,
        "imports": {
            name: {"spec": p.spec, "sha256": p.content_hash, "namespace": p.namespace}
            for name, p in (imports or {}).items()
        },
        "import_pins": _pins(imports or {}),
        "config": asdict(config),
        "launch": dict(launch or {}),
    }
    _last_shared = ((program, imports, config, launch), shared)
    return shared


@functools.cache
def _this_process() -> tuple[int, int | None]:
    """(pid, start time) of this process, asked once: `os.getpid` is a system call, and a
    batch starts thousands of runs. A forked child asks again."""
    pid = os.getpid()
    return pid, process_started(pid)


os.register_at_fork(after_in_child=_this_process.cache_clear)


def _stopped(stop: BudgetExhausted, run_id: str) -> str:
    flag = FLAGS[stop.limit]
    return (
        f"stopped: budget — {stop} ({flag}); the run is resumable with a larger budget: "
        f"prose resume {run_id} {flag} N"
    )


def _pins(imports: Mapping[str, LoadedProgram]) -> dict[str, str]:
    """spec -> sha256 for every program in the import tree, nested ones included."""
    pins: dict[str, str] = {}
    for loaded in imports.values():
        pins[loaded.spec] = loaded.content_hash
        pins.update(_pins(loaded.imports))
    return pins

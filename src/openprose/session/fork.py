"""Forking a run from a step (`prose fork RUN --at STEP`, `openprose.fork`, the web view's
"fork from here"): a new run of RUN's recorded program, with its own id and folder, that
takes RUN's answers up to STEP (see `openprose.vm.forking` for exactly which), with inputs
changed and bindings set, and continues live. Options not given default to RUN's."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openprose.session.opening import UsageError
from openprose.session.options import DEFAULT_OPTIONS, RunOptions
from openprose.session.resume import Resuming, locate_run, program_of, read_run_meta, reopen

__all__ = ["Forking", "pairs", "prepare_fork"]

STEPS_SHOWN = 12  # of the valid steps, in the message for an unknown one


@dataclass(slots=True)
class Forking:
    """What `run_program` needs to start the fork, checked and opened."""

    parent: Resuming
    text: str
    inputs: dict[str, Any]
    launch: dict[str, Any]
    fork: Any  # vm.forking.Fork

    @property
    def provider(self) -> Any:
        return self.parent.provider

    @property
    def project(self) -> Path:
        return self.parent.project

    async def start(
        self,
        observer: Any = None,
        tools: Any = None,
        tracer: Any = None,
        run_id: str | None = None,
    ) -> Any:
        """Run the fork (`run_program`; `run_id`: one `reserve_run_id` made); the caller
        closes the provider."""
        from openprose.vm.runner import run_program

        opened = self.parent
        return await run_program(
            opened.program,
            self.text,
            provider=opened.provider,
            project_dir=opened.project,
            inputs=self.inputs,
            imports=opened.imports,
            settings=opened.settings,
            config=opened.config,
            observer=observer,
            launch=self.launch,
            prices=opened.prices,
            tools=tools,
            tracer=tracer,
            run_id=run_id,
            fork=self.fork,
        )


def pairs(given: list[str], flag: str) -> dict[str, str]:
    """`NAME=VALUE` flags as a mapping; a malformed one is a usage error."""
    found: dict[str, str] = {}
    for pair in given:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"bad {flag} {pair!r}: write NAME=VALUE")
        found[name.strip()] = value
    return found


def prepare_fork(
    project: Path,
    run_ref: str,
    step: str,
    *,
    inputs: Mapping[str, Any] | None = None,
    values: Mapping[str, str] | None = None,
    options: RunOptions = DEFAULT_OPTIONS,
) -> Forking:
    """Find RUN, check STEP, the inputs and the bindings to set, and open what the fork
    needs. Every problem is a `UsageError` of one line; nothing is started."""
    from openprose.vm.forking import Fork, ParentAnswers

    run_dir = locate_run(project, run_ref)
    meta = read_run_meta(run_dir)
    cut = _cut(run_dir, step)
    inputs, values = dict(inputs or {}), dict(values or {})
    unbound = sorted(set(values) - set(cut.bound_at))
    if unbound:
        bound = ", ".join(sorted(cut.bound_at)) or "none"
        raise UsageError(
            f"--set {unbound[0]}: no session bound {unbound[0]!r} before step {step} of run "
            f"{run_dir.name} (bound before it: {bound})"
        )
    recorded = program_of(run_dir, None)
    changed = _changed_inputs(recorded.program, meta, inputs)
    parent = reopen(run_dir, meta, options, resuming=False)
    origin: dict[str, Any] = {"run": run_dir.name, "step": step}
    if inputs:
        origin["inputs"] = inputs
    if values:
        origin["set"] = values
    launch = dict(meta.get("launch") or {})
    launch.update(
        {
            key: value
            for key, value in (
                ("provider", options.provider),
                ("models", list(options.models)),
                ("max_concurrency", options.max_concurrency),
                ("evaluator", options.evaluator),
            )
            if value
        }
    )
    fork = Fork(origin, ParentAnswers(run_dir.name, cut, values))
    return Forking(parent, recorded.source.text, changed, launch, fork)


def _cut(run_dir: Path, step: str) -> Any:
    """The parent's journal up to STEP; an unknown STEP or an unreadable journal is a usage
    error (the valid steps listed)."""
    from openprose.record.journal import JOURNAL_FILE, read_journal
    from openprose.vm.forking import UnknownStep, cut_at

    journal = run_dir / JOURNAL_FILE
    try:
        return cut_at(read_journal(journal), step)
    except UnknownStep as unknown:
        if not unknown.steps:
            raise UsageError(
                f"no step {step!r} in run {run_dir.name}: it has no steps to fork from"
            ) from None
        shown = ", ".join(unknown.steps[:STEPS_SHOWN])
        more = len(unknown.steps) - STEPS_SHOWN
        if more > 0:
            shown += f" and {more} more (prose show {run_dir.name})"
        raise UsageError(f"no step {step!r} in run {run_dir.name}; its steps: {shown}") from None
    except OSError as error:
        raise UsageError(f"{journal}: cannot read ({error.strerror or error})") from None
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as error:
        raise UsageError(f"{journal}: damaged ({type(error).__name__}: {error})") from None


def _changed_inputs(program: Any, meta: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """The parent's inputs with those given replacing them; an input the program does not
    declare is a usage error naming the ones it does."""
    from openprose import nodes as n

    declared = [s.name.id for s in program.body if isinstance(s, n.Input)]
    for name in given:
        if name not in declared:
            raise UsageError(
                f"--input {name}: the program declares no input {name!r} "
                f"(it declares: {', '.join(declared) or 'none'})"
            )
    recorded = meta.get("inputs")
    return {**(recorded if isinstance(recorded, dict) else {}), **given}

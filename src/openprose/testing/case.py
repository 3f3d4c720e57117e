"""Running one case: a fresh working folder, the program run against the case's answers, the
expectations checked, and (when recording) the cassette saved."""

from __future__ import annotations

import contextlib
import io
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from openprose.testing.answering import CaseAnswers, answer_and_resume
from openprose.testing.cassette import CassetteProvider, PathMask, save_masked
from openprose.testing.checks import check_expectation
from openprose.testing.observe import observe
from openprose.testing.spec import Case, TestFile, shown_path

__all__ = ["CaseOutcome", "Mode", "run_case"]

SETTINGS_FILES = ("prose.toml", "prose.lock")  # copied into each case's working folder
JUDGMENT_MAX_TOKENS = 200


@dataclass(frozen=True, slots=True)
class Mode:
    """How the cases of a suite answer: from cassettes (the default), or live."""

    record: bool = False  # run cassette cases live and save their cassettes
    provider: str | None = None  # the live provider (`--provider`), else the configured one
    models: tuple[str, ...] = ()


@dataclass(slots=True)
class CaseOutcome:
    file: TestFile
    case: Case
    outcome: str  # "passed" | "failed" | "error"
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0
    stale: bool = False  # the cassette no longer matches the program (or is missing)
    recorded: bool = False  # a cassette was written
    kept_run: Path | None = None  # the run folder of a failed case, kept to be looked at

    @property
    def id(self) -> str:
        return f"{shown_path(self.file.path)}::{self.case.name}"


async def run_case(test_file: TestFile, case: Case, mode: Mode) -> CaseOutcome:
    started = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix="prose-test-"))
    outcome: CaseOutcome | None = None
    try:
        outcome = await _run_in(scratch, test_file, case, mode)
    except OSError as error:  # a full disk, a cassette folder that cannot be written
        from cliconventions import os_error_text

        outcome = CaseOutcome(
            test_file, case, "error", [f"the case could not run: {os_error_text(error)}"]
        )
    finally:
        if outcome is None or outcome.kept_run is None:  # a failed run is kept to be read
            shutil.rmtree(scratch, ignore_errors=True)
    outcome.seconds = time.perf_counter() - started
    return outcome


async def _run_in(scratch: Path, test_file: TestFile, case: Case, mode: Mode) -> CaseOutcome:
    from openprose.providers.base import ProviderConfigError
    from openprose.session.launch import RunError, execute, prepare
    from openprose.session.options import RunOptions

    work = scratch / "work"
    _make_working_folder(work, test_file, case)
    source = case.source
    recording = source == "cassette" and mode.record
    if source == "cassette" and not recording:
        assert case.cassette is not None
        if not case.cassette.is_file():
            return CaseOutcome(
                test_file,
                case,
                "error",
                [f"no cassette {shown_path(case.cassette)}: record it with `prose test --record`"],
                stale=True,
            )
    spec = _provider_spec(scratch, case, mode, recording)
    options = RunOptions(
        provider=spec,
        models=mode.models,
        evaluator=case.evaluator,
        record=str(scratch / "cassette.jsonl") if recording else None,
        yes=case.approve,
    )
    try:
        # The checker's notes and warnings go to stderr; a suite's output is its summary.
        with contextlib.redirect_stderr(io.StringIO()):
            prepared = prepare(test_file.program, options, inputs=case.inputs, project_dir=work)
    except RunError as error:
        return CaseOutcome(test_file, case, "error", [str(error)])
    cassette: CassetteProvider | None = None
    if spec is not None and spec.startswith("replay:"):
        await prepared.provider.aclose()
        assert case.cassette is not None
        try:
            cassette = CassetteProvider.from_file(case.cassette, _mask(test_file, work))
        except ProviderConfigError as error:
            return CaseOutcome(test_file, case, "error", [str(error)], stale=True)
        prepared.provider = cassette
    from openprose.vm.runtime import ModelRouter

    router = ModelRouter(prepared.provider, prepared.settings)
    answers = CaseAnswers(case.answers)
    try:
        result = await execute(prepared)
        result, unanswered = await answer_and_resume(
            result, answers, _resumer(prepared, test_file, case)
        )
        judge = _judge(router, prepared.config.evaluator_model)
        failures = unanswered or await _check(test_file, case, result, judge)
        failures += [
            f"{shown_path(test_file.path)}:{case.line}: the case answers {key!r}, "
            "which the program never asked" + _asked(result)
            for key in answers.unused()
        ]
    finally:
        await router.aclose()
        await prepared.provider.aclose()
    outcome = CaseOutcome(test_file, case, "failed" if failures else "passed", failures)
    if cassette is not None:
        _stale(outcome, cassette)
    if outcome.outcome == "failed" and not outcome.stale:
        outcome.kept_run = Path(result.run_dir)  # its journal, bindings, state: `prose show`
    if recording and case.cassette is not None:
        save_masked(scratch / "cassette.jsonl", case.cassette, _mask(test_file, work))
        outcome.recorded = True
    return outcome


def _resumer(prepared: Any, test_file: TestFile, case: Case) -> Any:
    """Continues a case's run after its questions are answered, as `prose resume` would:
    the run's own program, the case's provider (its cassette goes on from where it was)."""
    from openprose.session.opening import tool_runtime
    from openprose.session.resume import program_of
    from openprose.vm.runner import resume_run

    async def resume(run_dir: Path) -> Any:
        return await resume_run(
            run_dir,
            program_of(run_dir, str(test_file.program)).program,
            provider=prepared.provider,
            project_dir=prepared.project,
            imports=prepared.imports,
            settings=prepared.settings,
            config=prepared.config,
            prices=prepared.prices,
            tools=tool_runtime(prepared.project, case.approve, interactive=False),
        )

    return resume


def _asked(result: Any) -> str:
    asked = observe(result).questions
    return f" (it asked: {'; '.join(repr(q) for q in asked)})" if asked else " (it asked none)"


def _mask(test_file: TestFile, work: Path) -> PathMask:
    return PathMask(test_file.program.parent, work)


def _make_working_folder(work: Path, test_file: TestFile, case: Case) -> None:
    """The project's settings and the case's files, in a folder of the case's own, so that
    a program writing files cannot touch the project and cases cannot see each other's."""
    from openprose.project import find_project

    work.mkdir()
    project = find_project(test_file.program.parent)
    if project.settings_file is not None:
        for name in SETTINGS_FILES:
            source = project.settings_file.parent / name
            if source.is_file():
                shutil.copy(source, work / name)
        if project.settings_file.name == "pyproject.toml":
            shutil.copy(project.settings_file, work / "pyproject.toml")
    for relative, text in case.files.items():
        target = work / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def _provider_spec(scratch: Path, case: Case, mode: Mode, recording: bool) -> str | None:
    if case.source == "scripted":
        if case.scripted is not None:
            return f"scripted:{case.scripted.resolve()}"
        rules = scratch / "rules.json"  # outside the working folder: the program cannot read it
        rules.write_bytes(orjson.dumps({"rules": list(case.rules)}))
        return f"scripted:{rules}"
    if case.source == "live" or recording:
        return mode.provider
    assert case.cassette is not None
    return f"replay:{case.cassette.resolve()}"


async def _check(test_file: TestFile, case: Case, result: Any, judge: Any) -> list[str]:
    seen = observe(result)
    failures: list[str] = []
    if result.status != "succeeded" and not any(e.of == "status" for e in case.expect):
        because = f": {result.error}" if result.error else ""
        failures.append(f"the run {result.status}{because}")
    for expectation in case.expect:
        found = await check_expectation(expectation, seen, judge)
        where = f"{shown_path(test_file.path)}:{expectation.line}"
        failures += [f"{where}: {problem}" for problem in found]
    return failures


def _judge(router: Any, evaluator: str) -> Any:
    """Asks the evaluator model a judged expectation as the VM asks a condition, through the
    case's provider: a recording saves the question and answer, a replay serves them."""
    from openprose.providers.base import Message, ModelRequest, ProviderError
    from openprose.vm import judgments

    async def judge(text: str, criterion: str) -> tuple[bool, str]:
        provider, model = router.route(evaluator)
        request = ModelRequest(
            model=model,
            messages=(Message("user", judgments.condition_question(criterion, text)),),
            system=judgments.SYSTEM,
            max_tokens=JUDGMENT_MAX_TOKENS,
            temperature=0.0,
            response_schema=judgments.VERDICT_SCHEMA,
        )
        try:
            response = await provider.complete(request)
        except ProviderError as error:
            return False, f"the evaluator could not be asked ({error})"
        verdict = judgments.parse_verdict(response.text)
        if verdict is None:
            return False, f"the evaluator's answer is no verdict: {response.text[:120]!r}"
        return verdict.value, verdict.reason

    return judge


def _stale(outcome: CaseOutcome, cassette: CassetteProvider) -> None:
    """A replay that asked for a request the cassette lacks, or left answers unasked."""
    if cassette.mismatch is not None:
        outcome.stale = True
        outcome.outcome = "failed"
        outcome.failures = [
            "the cassette no longer matches the program (a request changed); "
            "`prose test --update` records it again:\n" + cassette.mismatch
        ]
    elif cassette.unused:
        outcome.stale = True
        outcome.outcome = "failed"
        outcome.failures.insert(
            0,
            f"the run asked for {cassette.unused} answer(s) fewer than the cassette holds "
            f"(the program changed); `prose test --update` records it again",
        )

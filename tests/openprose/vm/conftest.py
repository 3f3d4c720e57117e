"""Helpers for VM tests: run .prose source on a scripted provider and see what it was sent."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from openprose.parser import parse_text
from openprose.providers import ModelRequest, ModelResponse, ScriptedProvider, ScriptRule
from openprose.vm.loader import load_imports
from openprose.vm.runner import RunResult, VMConfig, resume_run, run_program
from openprose.vm.runtime import ToolRuntime


@dataclass
class Spy:
    """A ScriptedProvider that remembers every request it was sent."""

    inner: ScriptedProvider
    requests: list[ModelRequest] = field(default_factory=list)
    name: str = "scripted"
    in_flight: int = 0
    peak: int = 0
    cancelled: int = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            return await self.inner.complete(request)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        finally:
            self.in_flight -= 1

    async def aclose(self) -> None:
        return None

    def prompts(self) -> list[str]:
        return [r.last_user_text() for r in self.requests]

    def sent(self, pattern: str) -> list[ModelRequest]:
        import re

        return [r for r in self.requests if re.search(pattern, r.last_user_text())]


def spy(
    rules: Sequence[Mapping[str, Any]] = (), default: str | None = "ok", latency: float = 0.0
) -> Spy:
    built = [
        ScriptRule(answer=r["answer"], match=r.get("match", ""), failures=r.get("failures", ()))
        if callable(r.get("answer"))
        else r
        for r in rules
    ]
    return Spy(ScriptedProvider(built, default=default, latency=latency))


def verdicts(*pairs: tuple[str, Any]) -> list[dict[str, Any]]:
    """Evaluator rules: (condition regex, answer or list of answers)."""
    rules = []
    for pattern, answer in pairs:
        if isinstance(answer, bool):
            answer = f'{{"verdict": {str(answer).lower()}, "reason": "scripted"}}'
        elif isinstance(answer, list):
            answer = [
                f'{{"verdict": {str(a).lower()}, "reason": "scripted"}}'
                if isinstance(a, bool)
                else a
                for a in answer
            ]
        rules.append({"match": pattern, "answer": answer})
    return rules


FAST = VMConfig(retry_base_delay=0.001)


def run(
    project: Path,
    source: str,
    provider: Any,
    *,
    inputs: Mapping[str, Any] | None = None,
    config: VMConfig = FAST,
    imports: Any = None,
    path: str = "main.prose",
    tools: Any = None,
) -> RunResult:
    parsed = parse_text(source, str(project / path))
    assert parsed.ok, [d.message for d in parsed.diagnostics]
    return asyncio.run(
        run_program(
            parsed.program,
            source,
            provider=provider,
            project_dir=project,
            inputs=inputs,
            config=config,
            imports=imports,
            tools=tools,
        )
    )


def resume(project: Path, run_dir: Path, provider: Any, *, imports: Any = None) -> RunResult:
    text = (run_dir / "program.prose").read_text()
    parsed = parse_text(text, str(project / "main.prose"))
    return asyncio.run(
        resume_run(run_dir, parsed.program, provider=provider, project_dir=project, imports=imports)
    )


class VM:
    """The helpers above, bound to one project folder (the `vm` fixture)."""

    FAST = FAST

    def __init__(self, project: Path) -> None:
        self.project = project

    spy = staticmethod(spy)
    verdicts = staticmethod(verdicts)

    def run(self, source: str, provider: Any, **kwargs: Any) -> RunResult:
        return run(self.project, source, provider, **kwargs)

    def resume(self, run_dir: Path, provider: Any, **kwargs: Any) -> RunResult:
        return resume(self.project, run_dir, provider, **kwargs)

    def events(self, result: RunResult, kind: str | None = None) -> list[dict[str, Any]]:
        return self.events_in(result.run_dir, kind)

    def events_in(self, run_dir: Path, kind: str | None = None) -> list[dict[str, Any]]:
        from openprose.record.journal import read_journal

        found = read_journal(run_dir / "journal.jsonl")
        return [e for e in found if kind is None or e["ev"] == kind]


@pytest.fixture
def vm(tmp_path: Path) -> VM:
    return VM(tmp_path)


class FirstOptionAsker:
    """A person at the terminal who takes the first option (or says "yes") to every `ask`."""

    def __init__(self) -> None:
        self.asked: list[Any] = []

    async def ask(self, question: Any) -> str | None:
        self.asked.append(question)
        return question.options[0] if question.options else "yes"


EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
# A verdict and an option at once, so conditions, filters and choices all read it.
UNIVERSAL = '{"verdict": true, "option": 1, "reason": "scripted"}'


def run_example(vm: VM, folder: Path, name: str) -> RunResult:
    """Run `folder/name` with every input given, its imports loaded, every judgment answered
    by UNIVERSAL and every `ask` by a person taking the first option."""
    path = folder / name
    source = path.read_text()
    program = parse_text(source, str(path)).program
    inputs = {
        s.name.id: f"value of {s.name.id}" for s in program.body if type(s).__name__ == "Input"
    }
    imports = load_imports(program, base_dir=folder, project_dir=vm.project)
    return vm.run(
        source,
        vm.spy(default=UNIVERSAL),
        inputs=inputs,
        imports=imports,
        path=name,
        tools=ToolRuntime(asker=FirstOptionAsker()),
    )

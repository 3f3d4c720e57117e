"""The goal of `--estimate`: a real run falls inside the printed bounds. Every example and
programs with loops, pipelines, retries, races, branches and blocks run against the loopback
fake of the model APIs, under several evaluators' moods (which branch, how many loop turns)
and answer lengths; the sessions, requests and tokens measured must lie within the bounds
(the lower ones when the run ended well: a failed run stops early)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from openprose.parser import parse_text
from openprose.providers import ProviderSettings, RetryPolicy, open_provider
from openprose.vm.estimates import Estimate, estimate_program
from openprose.vm.judgments import SYSTEM as JUDGE_SYSTEM
from openprose.vm.runner import VMConfig, run_program
from openprose.vm.runtime import LoadedProgram
from tests.support.fake_llm_server import FakeAnswer, FakeLLMServer, FakeToolCall, Fault

EXAMPLES = Path(__file__).parents[3] / "examples"
EXAMPLE_INPUTS = {
    "haiku.prose": {"topic": "autumn rain over the old harbour"},
    "program-composition.prose": {"topic": "tides", "depth": "shallow"},
}
# program-composition.prose imports @alice/research from the registry: a stand-in here.
RESEARCH = (
    'input topic: "what to research"\n'
    'output findings = session "Find the facts about {topic}"\n'
    'output sources = session "List the sources on {topic}"\n'
)
CONFIG = VMConfig(max_tokens=40, retry_base_delay=0.0, max_turns=3)

PROGRAMS: dict[str, tuple[str, dict[str, Any], tuple[str, ...]]] = {
    # name: (program, inputs, faults scripted for the first requests)
    "repeat": ('repeat 3:\n  session "Write idea"\nsession "Pick one"\n', {}, ()),
    "loop-until": (
        'loop until **the plan is done** (max: 4):\n  session "Improve the plan"\n',
        {},
        (),
    ),
    "loop-while-as": (
        'loop while **questions remain** (max: 3) as i:\n  session "Answer question {i}"\n',
        {},
        (),
    ),
    "loop-max": ('loop (max: 2):\n  session "Check numbers"\n  session "Fix numbers"\n', {}, ()),
    "for-literal": ('for x in ["a", "b", "c"]:\n  session "Describe {x} in detail"\n', {}, ()),
    "parallel-for-input": (
        'input items: "things"\nparallel for x in items:\n  session "Study {x}"\n',
        {"items": ["red", "green", "blue", "cyan"]},
        (),
    ),
    "parallel-for-first": (
        'parallel ("first") for x in ["a", "b", "c"]:\n  session "Race {x}"\n',
        {},
        (),
    ),
    "pipeline": (
        (
            'let kept = ["alpha", "beta", "gamma"] | map:\n  session "Expand {item}"\n'
            '| filter:\n  session "Is this worth keeping: {item}"\n'
            '| reduce(acc, x):\n  session "Merge {acc} with {x}"\n'
            'session "Summarize"\n  context: kept\n'
        ),
        {},
        (),
    ),
    "pmap-input": (
        (
            'input files: "files"\nlet notes = files | pmap:\n  session "Review {item}"\n'
            'session "Combine the notes"\n  context: notes\n'
        ),
        {"files": ["a.py", "b.py", "c.py", "d.py", "e.py"]},
        (),
    ),
    "retry": (
        'session "Call the flaky service"\n  retry: 2\nsession "Report"\n',
        {},
        ("500", "500"),
    ),
    "retry-gives-up-caught": (
        (
            'try:\n  session "Call the broken service"\n    retry: 1\ncatch as err:\n'
            '  session "Handle the failure"\n    context: err\nfinally:\n  session "Clean up"\n'
        ),
        {},
        ("500", "500"),
    ),
    "parallel": (
        (
            'parallel:\n  a = session "Security review"\n  b = session "Style review"\n'
            '  c = session "Speed review"\nsession "Merge reviews"\n  context: { a, b, c }\n'
        ),
        {},
        (),
    ),
    "parallel-any": (
        'parallel ("any", count: 2):\n  session "One"\n  session "Two"\n  session "Three"\n',
        {},
        (),
    ),
    "if-elif": (
        (
            'let a = session "Analyze"\nif **it is broken**:\n  session "Fix"\n'
            'elif **it is slow**:\n  session "Speed up"\n  session "Measure"\nelse:\n'
            '  session "Ship"\n'
        ),
        {},
        (),
    ),
    "choice": (
        (
            'session "Assess"\nchoice **severity**:\n  option "High":\n    session "Stop"\n'
            '    session "Page someone"\n  option "Low":\n    session "Log it"\n'
            '  option "None":\n    session "Carry on"\n'
        ),
        {},
        (),
    ),
    "blocks-in-loop": (
        (
            'block review(topic):\n  session "Research {topic}"\n  session "Sum up {topic}"\n'
            'for t in ["x", "y"]:\n  do review(t)\n'
        ),
        {},
        (),
    ),
    "persistent-agent": (
        (
            'agent scribe:\n  model: haiku\n  persist: true\n  prompt: "You keep notes"\n'
            'session: scribe\n  prompt: "Note the first fact"\nresume: scribe\n'
            '  prompt: "Note the second fact"\n'
        ),
        {},
        (),
    ),
    "nested-loops": (
        'repeat 2:\n  loop until **good enough** (max: 2):\n    session "Polish"\n',
        {},
        (),
    ),
    "arrows-and-context": (
        (
            'let draft = session "Draft a long essay" -> session "Edit it"\n'
            'session "Review {draft} again"\n  context: draft\n'
        ),
        {},
        (),
    ),
    "models-and-evaluator": (
        (
            "agent fast:\n  model: haiku\nagent deep:\n  model: opus\n"
            'let q = session: fast\n  prompt: "Quick take"\n'
            'if **the quick take is enough**:\n  session "Done"\nelse:\n'
            '  session: deep\n    prompt: "Deep take"\n'
        ),
        {},
        (),
    ),
    "tool-loop": (
        (
            'agent reader:\n  permissions:\n    read: ["notes.txt"]\n'
            'session: reader\n  prompt: "Read notes.txt and sum it up"\nsession "Thank the reader"\n'
        ),
        {},
        (),
    ),
    "do-blocks": (
        'let r = do:\n  session "Gather"\n  session "Analyze"\nsession "Report"\n  context: r\n',
        {},
        (),
    ),
}


def reply_for(seed: int) -> Any:
    """An evaluator whose verdicts and choices follow `seed`; answers of varied length."""

    def reply(api: str, body: dict[str, Any]) -> str | FakeAnswer:
        text = json.dumps(body.get("messages"), sort_keys=True)
        roll = int(hashlib.sha256(f"{seed}:{text}".encode()).hexdigest(), 16)
        system = body.get("system")
        if isinstance(system, list):  # Anthropic's blocks
            system = " ".join(str(b.get("text", "")) for b in system)
        if system == JUDGE_SYSTEM:
            if "Pick exactly one option" in text:
                return json.dumps({"option": roll % 3 + 1, "reason": "r"})
            return json.dumps({"verdict": bool(roll % 2), "reason": "r"})
        if body.get("tools"):  # a tool agent: some turns read a file before answering
            turns = sum(1 for m in body.get("messages") or [] if m.get("role") == "assistant")
            if turns < roll % 4:  # up to past max_turns: the session fails, still bounded
                return FakeAnswer("", (FakeToolCall("read_file", {"path": "notes.txt"}),))
        words = roll % 90  # up to over max_tokens: the server cuts the answer
        return " ".join(["word"] * words)

    return reply


def research() -> LoadedProgram:
    program = parse_text(RESEARCH, "@alice/research").program
    return LoadedProgram(
        "research", "@alice/research", "alice--research", program, RESEARCH, "0" * 64
    )


async def measure(
    program_text: str,
    path: Path,
    inputs: dict[str, Any],
    faults: tuple[str, ...],
    seed: int,
    imports: dict[str, LoadedProgram] | None = None,
) -> tuple[Any, int]:
    async with FakeLLMServer(reply=reply_for(seed)) as server:
        server.script(*(Fault(kind) for kind in faults))
        settings = ProviderSettings(
            provider="anthropic",
            base_url=server.base_url,
            api_key="k",
            timeout=5.0,
            retry=RetryPolicy(max_attempts=1, base_delay=0.0, max_delay=0.0),
        )
        provider = open_provider(settings)
        (path.parent / "notes.txt").write_text("the notes " * 500, encoding="utf-8")
        program = parse_text(program_text, str(path)).program
        try:
            result = await run_program(
                program,
                program_text,
                provider=provider,
                project_dir=path.parent,
                inputs=inputs,
                imports=imports,
                config=CONFIG,
                settings=settings,
            )
        finally:
            await provider.aclose()
        return result, server.stats.attempts


def assert_brackets(estimate: Estimate, result: Any, attempts: int) -> None:
    usage = result.usage
    ended_well = result.status == "succeeded"
    measured = {
        "sessions": (estimate.sessions, usage["requests_sent"]),
        "requests": (estimate.requests, attempts),
        "input tokens": (estimate.input_tokens, usage["input_tokens"]),
        "output tokens": (estimate.output_tokens, usage["output_tokens"]),
    }
    for what, (bounds, value) in measured.items():
        assert bounds.high is None or value <= bounds.high, (what, value, bounds, result.error)
        if ended_well:
            assert value >= bounds.low, (what, value, bounds)
    cost = estimate.cost
    assert cost is not None
    assert cost.high is None or usage["cost_usd"] <= cost.high + 1e-6
    if ended_well:
        assert usage["cost_usd"] >= cost.low - 1e-6


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
async def test_a_run_falls_inside_its_estimate(name: str, seed: int, tmp_path: Path) -> None:
    text, inputs, faults = PROGRAMS[name]
    path = tmp_path / f"{name}.prose"
    path.write_text(text, encoding="utf-8")
    program = parse_text(text, str(path)).program
    estimate = estimate_program(program, inputs=inputs, config=CONFIG)
    assert estimate.sessions.high is not None and not estimate.unbounded, estimate.unbounded
    result, attempts = await measure(text, path, inputs, faults, seed)
    assert result.status in ("succeeded", "failed"), result.error
    assert_brackets(estimate, result, attempts)


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.prose")))
async def test_an_example_run_falls_inside_its_estimate(
    example: str, seed: int, tmp_path: Path
) -> None:
    source = EXAMPLES / example
    text = source.read_text(encoding="utf-8")
    path = tmp_path / example
    path.write_text(text, encoding="utf-8")
    inputs = EXAMPLE_INPUTS.get(example, {})
    imports = {"research": research()} if "@alice/research" in text else {}
    estimate = estimate_program(
        parse_text(text, str(path)).program,
        inputs=inputs,
        config=CONFIG,
        imports={name: loaded.program for name, loaded in imports.items()},
    )
    # every example is bounded but loops.prose, which shows a `loop until` without `max:`
    assert (estimate.sessions.high is None) == (example == "loops.prose"), estimate.unbounded
    result, attempts = await measure(text, path, inputs, (), seed, imports)
    assert_brackets(estimate, result, attempts)

"""A reviewer with nothing but `audit.ndjson` rebuilds the run: its inputs, every prompt and
answer, every retry, the binding each answer became and the outputs — and each is checked
against the run folder and against what the provider really received and answered."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest

from openprose.parser import parse_text
from openprose.providers import ModelRequest, ModelResponse, ProviderError
from openprose.vm.audit import AUDIT_FILE, LARGE_VALUE
from openprose.vm.loader import load_imports

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
UNIVERSAL = '{"verdict": true, "option": 1, "reason": "scripted"}'
NEEDS_REGISTRY = {"program-composition.prose"}
VM = "prose-vm"


@dataclass
class Recorder:
    """The provider's side of the run: every request it answered (and with what) or failed."""

    inner: Any
    name: str = "scripted"
    answered: list[tuple[str, str]] = field(default_factory=list)  # (prompt, answer)
    failed: list[str] = field(default_factory=list)  # prompts of failed requests

    async def complete(self, request: ModelRequest) -> ModelResponse:
        try:
            response = await self.inner.complete(request)
        except ProviderError:
            self.failed.append(request.last_user_text())
            raise
        self.answered.append((request.last_user_text(), response.text))
        return response

    async def aclose(self) -> None:
        return None


@dataclass
class Exchange:
    step: str
    prompt: str | None  # None: a tool turn (the trail names the turn it continues)
    answer: str | None
    binding: str | None
    failures: int


@dataclass
class Rebuilt:
    inputs: dict[str, Any]
    outputs: dict[str, Any] | None
    exchanges: list[Exchange]
    retried_requests: int  # provider-level retries (`request_retried`)
    bindings: dict[str, str]  # binding -> the last answer it got


def rebuild(messages: list[dict[str, Any]]) -> Rebuilt:
    """The run as the trail alone tells it."""
    starts = [m for m in messages if m["type"] == "session_context"]
    inputs = starts[0]["payload"]["inputs"]
    queries = [
        m
        for m in messages
        if m["type"] == "query" and m["sender"] == VM and m.get("topic") != "approval"
    ]
    answers: dict[str, dict[str, Any]] = {}
    failures: Counter[str] = Counter()
    for m in messages:
        refers = m.get("refers_to")
        if m["type"] == "response" and isinstance(refers, str):
            answers[refers] = m
        elif m["type"] == "correction":
            answers[m["payload"]["answers"]] = m
        elif m["type"] == "notice" and m["content"].startswith("attempt "):
            failures[refers] += 1
    exchanges = []
    bindings: dict[str, str] = {}
    for query in queries:
        answer = answers.get(query["id"])
        binding = answer["payload"]["binding"] if answer else None
        if answer is not None and binding is not None:
            bindings[binding] = answer["content"]
        exchanges.append(
            Exchange(
                step=query["payload"]["step"],
                prompt=None if "continues" in query["payload"] else query["content"],
                answer=None if answer is None else answer["content"],
                binding=binding,
                failures=failures[query["id"]],
            )
        )
    finals = [m for m in messages if m["type"] == "claim" and "outputs" in m.get("payload", {})]
    return Rebuilt(
        inputs=inputs,
        outputs=finals[-1]["payload"]["outputs"] if finals else None,
        exchanges=exchanges,
        retried_requests=sum(m.get("topic") == "request_retried" for m in messages),
        bindings=bindings,
    )


def same_value(shown: Any, value: Any) -> bool:
    """`shown` (the trail's) is `value`, or the digest of `value`."""
    if isinstance(shown, dict) and set(shown) == {"digest"}:
        data = orjson.dumps(value)
        return shown["digest"]["sha256"] == hashlib.sha256(data).hexdigest() and shown["digest"][
            "bytes"
        ] == len(data)
    return bool(shown == value)


def binding_values(run_dir: Path, name: str) -> set[str]:
    """The values the run folder's binding files of `name` hold (one per scope)."""
    values = set()
    for path in (run_dir / "bindings").glob(f"{name}*.md"):
        if path.stem == name or path.stem.startswith(f"{name}__"):
            values.add(path.read_text().split("\n---\n\n", 1)[1][:-1])
    return values


def check_against_the_run(run_dir: Path, recorder: Recorder) -> Rebuilt:
    messages = [orjson.loads(line) for line in (run_dir / AUDIT_FILE).read_bytes().splitlines()]
    rebuilt = rebuild(messages)
    meta = orjson.loads((run_dir / "run.json").read_bytes())
    given = meta.get("inputs") or {}
    assert set(rebuilt.inputs) == set(given)
    assert all(same_value(rebuilt.inputs[k], v) for k, v in given.items())
    # Every prompt and answer, as the provider received and gave them.
    answered = [e for e in rebuilt.exchanges if e.answer is not None]
    assert Counter(e.answer for e in answered) == Counter(a for _, a in recorder.answered)
    assert Counter(e.prompt for e in answered if e.prompt is not None) <= Counter(
        p for p, _ in recorder.answered
    )
    assert sum(e.prompt is None for e in answered) == len(recorder.answered) - sum(
        e.prompt is not None for e in answered
    )
    # Every retry: each failed request is in the trail.
    assert sum(e.failures for e in rebuilt.exchanges) + rebuilt.retried_requests == len(
        recorder.failed
    )
    # The binding each answer became holds that answer in the run folder.
    for name, answer in rebuilt.bindings.items():
        assert answer in binding_values(run_dir, name), name
    outputs_file = run_dir / "outputs.json"
    if outputs_file.exists():
        outputs = orjson.loads(outputs_file.read_bytes())
        assert rebuilt.outputs is not None and set(rebuilt.outputs) == set(outputs)
        assert all(same_value(rebuilt.outputs[k], v) for k, v in outputs.items())
    return rebuilt


@pytest.mark.parametrize(
    "name", sorted(p.name for p in EXAMPLES.glob("*.prose") if p.name not in NEEDS_REGISTRY)
)
def test_every_example_run_is_rebuilt_from_its_trail(vm: Any, name: str) -> None:
    path = EXAMPLES / name
    source = path.read_text()
    program = parse_text(source, str(path)).program
    inputs = {
        s.name.id: f"value of {s.name.id}" for s in program.body if type(s).__name__ == "Input"
    }
    imports = load_imports(program, base_dir=EXAMPLES, project_dir=vm.project)
    recorder = Recorder(vm.spy(default=UNIVERSAL))
    result = vm.run(source, recorder, inputs=inputs, imports=imports, path=name)
    rebuilt = check_against_the_run(result.run_dir, recorder)
    assert rebuilt.exchanges, "a program that asks nothing proves nothing"


OWN_PROGRAM = """input topic: "what to research"
input api_token: "a credential the program is given"
input corpus: "a long text"
let notes = session "research {topic}"
  retry: 2
let draft = session "draft from the notes"
  context: notes
parallel:
  a = session "angle one"
  b = session "angle two"
let verdict = session "judge"
  context: [draft, a, b]
if **the draft is good**:
  output summary = session "summarize"
    context: [draft, verdict]
output corpus_size = corpus
"""


def test_a_program_of_every_link_is_rebuilt_and_linked(vm: Any) -> None:
    corpus = "x" * (LARGE_VALUE + 1)
    recorder = Recorder(
        vm.spy(
            [
                {"match": "research", "answer": "the notes", "failures": ["transient"]},
                {"match": "draft is good", "answer": '{"verdict": true, "reason": "ok"}'},
            ]
        )
    )
    result = vm.run(
        OWN_PROGRAM,
        recorder,
        inputs={"topic": "cats", "api_token": "s3cr3t-v4lue", "corpus": corpus},
    )
    assert result.status == "succeeded", result.error
    rebuilt = check_against_the_run(result.run_dir, recorder)
    assert rebuilt.inputs["topic"] == "cats"
    assert rebuilt.inputs["api_token"]["digest"]["secret"] is True  # never the value itself
    assert "s3cr3t" not in (result.run_dir / AUDIT_FILE).read_text()
    assert rebuilt.inputs["corpus"]["digest"]["bytes"] == len(corpus) + 2
    assert [e.failures for e in rebuilt.exchanges if e.step == "4"] == [1, 0]
    assert rebuilt.bindings["notes"] == "the notes"
    messages = [orjson.loads(x) for x in (result.run_dir / AUDIT_FILE).read_bytes().splitlines()]
    by_id = {m["id"]: m for m in messages}

    def answer_of(binding: str) -> str:
        return next(
            m["id"]
            for m in messages
            if m["type"] == "response" and m["payload"].get("binding") == binding
        )

    # A query refers to the answers its `context:` holds.
    judged = by_id[by_id[answer_of("verdict")]["refers_to"]]
    assert judged["content"].startswith("judge")
    assert judged["refers_to"] == [answer_of("draft"), answer_of("a"), answer_of("b")]
    assert judged["payload"]["context"] == ["draft", "a", "b"]
    # The final claim refers to the answers the outputs hold.
    final = messages[-1]
    assert final["type"] == "claim"
    assert final["refers_to"] == [answer_of("summary")]
    assert final["payload"]["output_answers"] == {"summary": answer_of("summary")}
    assert by_id[answer_of("summary")]["content"] == final["payload"]["outputs"]["summary"]


def test_a_failed_attempts_query_is_stamped_when_it_was_sent(vm: Any) -> None:
    def slow_failure(request: ModelRequest) -> str:
        import time

        time.sleep(0.05)
        raise ProviderError("scripted: down")

    result = vm.run(
        'session "ask"\n', vm.spy([{"match": "ask", "answer": slow_failure}], default=None)
    )
    assert result.status == "failed"
    messages = [orjson.loads(x) for x in (result.run_dir / AUDIT_FILE).read_bytes().splitlines()]
    query = next(m for m in messages if m["type"] == "query")
    failure = next(m for m in messages if m["type"] == "notice" and m["refers_to"] == query["id"])
    assert query["timestamp"] < failure["timestamp"]  # sent 50 ms before it failed
    assert failure["payload"]["elapsed"] >= 0.05

"""A reviewer with nothing but `audit.ndjson` rebuilds the run: its inputs, every prompt and
answer, every retry, the binding each answer became and the outputs — and each is checked
against the run folder and against what the provider really received and answered."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest

from openprose.parser import parse_text
from openprose.providers import (
    ModelRequest,
    ModelResponse,
    ProviderError,
    ProviderSettings,
    RetryPolicy,
    open_provider,
)
from openprose.record.audit import AUDIT_FILE, LARGE_VALUE
from openprose.vm.loader import load_imports
from tests.openprose.record.test_audit import assert_sound
from tests.support.fake_llm_server import (
    Fault,
    fetch_stats,
    reset_server,
    script_faults,
    start_in_subprocess,
)
from vlp import read_records

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
UNIVERSAL = '{"verdict": true, "option": 1, "reason": "scripted"}'
NEEDS_REGISTRY = {"program-composition.prose"}
VM = "prose-vm"


def read_trail(run_dir: Path) -> list[dict[str, Any]]:
    """The trail, checked as `vlp validate` checks it (each message, then the thread)."""
    records = list(read_records(run_dir / AUDIT_FILE))
    assert [r.problems for r in records if r.problems] == []
    messages = [orjson.loads(x) for x in (run_dir / AUDIT_FILE).read_bytes().splitlines()]
    assert_sound(messages)
    return messages


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
    messages = read_trail(run_dir)
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
    messages = read_trail(result.run_dir)
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
    messages = read_trail(result.run_dir)
    query = next(m for m in messages if m["type"] == "query")
    failure = next(m for m in messages if m["type"] == "notice" and m["refers_to"] == query["id"])
    assert query["timestamp"] < failure["timestamp"]  # sent 50 ms before it failed
    assert failure["payload"]["elapsed"] >= 0.05


@pytest.fixture(scope="module")
def llm_server() -> Iterator[str]:
    """The loopback fake OpenAI server in its own process (the VM runs its own loop)."""
    base_url, stop = start_in_subprocess()
    try:
        yield base_url
    finally:
        stop()


def http_provider(base_url: str) -> Any:
    settings = ProviderSettings(
        provider="openai",
        base_url=base_url + "/v1",
        api_key="test-key-123",
        timeout=2.0,
        retry=RetryPolicy(max_attempts=4, base_delay=0.01, max_delay=0.02, max_retry_after=2.0),
    )
    return open_provider(settings)


def test_every_http_request_is_in_the_trail_and_the_usage(vm: Any, llm_server: str) -> None:
    """The provider's own retries reached the server: the trail says each (status, timing)
    after its call's query, and the usage counts them all."""
    reset_server(llm_server)
    script_faults(llm_server, Fault("500"), Fault("429"), Fault("500"))
    source = 'let a = session "one"\nlet b = session "two"\n  retry: 1\n'
    result = vm.run(source, http_provider(llm_server))
    assert result.status == "succeeded", result.error
    reached = fetch_stats(llm_server)["attempts"]
    assert reached == 5
    messages = read_trail(result.run_dir)
    retried = [m for m in messages if m.get("topic") == "request_retried"]
    answers = [m for m in messages if m["type"] == "response"]
    assert len(retried) + len(answers) == reached
    assert [m["payload"]["status"] for m in retried] == [500, 429, 500]
    assert [m["payload"]["request"] for m in retried] == [1, 2, 3]
    assert all(m["payload"]["elapsed"] >= 0 and m["payload"]["delay"] > 0 for m in retried)
    query = next(m for m in messages if m["type"] == "query")
    assert all(m["refers_to"] == query["id"] for m in retried)
    assert query["timestamp"] <= retried[0]["timestamp"]  # the query is stamped at send time
    usage = messages[-1]["payload"]["usage"]
    assert usage["requests_sent"] + usage["requests_failed"] == reached


def test_a_call_that_gives_up_shows_each_request_then_its_failure(vm: Any, llm_server: str) -> None:
    reset_server(llm_server)
    script_faults(llm_server, *(Fault("500") for _ in range(4)))
    result = vm.run('session "one"\n', http_provider(llm_server))
    assert result.status == "failed"
    messages = read_trail(result.run_dir)
    kinds = [(m["type"], m.get("topic")) for m in messages[1:-1]]
    assert kinds == [("query", "session")] + [("notice", "request_retried")] * 3 + [
        ("notice", None)
    ]
    assert messages[-2]["payload"]["status"] == 500  # the last request's own failure
    usage = messages[-1]["payload"]["usage"]
    assert usage["requests_sent"] + usage["requests_failed"] == fetch_stats(llm_server)["attempts"]


HANGING_RUN = """
import asyncio, sys
from pathlib import Path
from openprose.parser import parse_text
from vlp import read_records
from openprose.providers import ModelResponse, Usage
from openprose.vm.runner import run_program

class Hangs:
    name = "scripted"
    async def complete(self, request):
        if "step 3" in request.last_user_text():
            await asyncio.sleep(3600)  # killed while this request is out
        return ModelResponse(text="ok", usage=Usage(1, 1), model="m")
    async def aclose(self):
        pass

project = Path(sys.argv[1])
source = Path(sys.argv[2]).read_text()
program = parse_text(source, str(project / "main.prose")).program
asyncio.run(run_program(program, source, provider=Hangs(), project_dir=project))
"""


def test_a_call_in_flight_at_a_kill_is_said_lost_on_resume(vm: Any, tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    source = "".join(f'let s{i} = session "step {i}"\n  context: []\n' for i in range(5))
    program = tmp_path / "main.prose"
    program.write_text(source)
    script = tmp_path / "run.py"
    script.write_text(HANGING_RUN)
    child = subprocess.Popen([sys.executable, str(script), str(vm.project), str(program)])
    runs = vm.project / ".prose" / "runs"
    deadline = time.monotonic() + 60
    journal: Path | None = None
    while time.monotonic() < deadline and child.poll() is None:
        found = list(runs.glob("*/journal.jsonl")) if runs.exists() else []
        if found and found[0].read_bytes().count(b'"session_started"') == 4:
            journal = found[0]
            break
        time.sleep(0.01)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert journal is not None, "the run never reached the hanging call"
    result = vm.resume(journal.parent, vm.spy(default="ok"))
    assert result.status == "succeeded", result.error
    messages = read_trail(journal.parent)
    lost = [m for m in messages if m.get("topic") == "answer_lost"]
    assert [m["payload"]["step"] for m in lost] == ["4"]  # the fourth statement: "step 3"
    assert lost[0]["payload"]["binding"] == "s3"
    assert "sent at" in lost[0]["content"] and "answer lost" in lost[0]["content"]
    resumed = next(
        m for m in messages if m["type"] == "session_context" and m["payload"]["resumed"]
    )
    assert messages.index(resumed) < messages.index(lost[0])
    assert lost[0]["payload"]["sent"] < resumed["timestamp"]
    # The resumed run's request of that step answers the loss.
    again = next(
        m
        for m in messages
        if m["type"] == "query" and m["payload"]["step"] == "4" and m["seq"] > lost[0]["seq"]
    )
    assert again["refers_to"] == lost[0]["id"]


def test_a_tool_loop_run_is_rebuilt_from_its_trail(vm: Any, tmp_path: Path) -> None:
    from tests.openprose.vm.test_vm_tools import REVIEW_TURNS, REVIEWER, _project, _run

    project = _project(tmp_path)
    recorder = Recorder(vm.spy([{"match": "Review the code", "turns": REVIEW_TURNS}]))
    result = _run(project, REVIEWER, recorder)
    assert result.status == "succeeded", result.error
    rebuilt = check_against_the_run(result.run_dir, recorder)
    turns = [e for e in rebuilt.exchanges if e.prompt is None]
    assert len(turns) == 3 and len(recorder.answered) == 4


def test_only_a_call_a_kill_left_open_is_said_lost() -> None:
    """A call open when the run ended (an aborted run: the provider's configuration was
    refused) was not lost; one open when the journal stops (a kill) is, once, on resume."""
    from openprose.record.audit import Translator
    from tests.support.events import make

    def lost(events: list[tuple[str, str, dict[str, Any]]]) -> list[str]:
        translator = Translator("20260101-000000-abcdef", "main.prose")
        for t, (event, step, fields) in enumerate(events):
            translator.add(make(event, step, fields), float(t))
        return [m["payload"]["step"] for m in translator.take() if m.get("topic") == "answer_lost"]

    start = ("session_started", "1", {"agent": None, "model": "sonnet", "kind": "session"})
    resumed = ("run_started", "", {"resumed": True, "inputs": {}})
    ended = ("run_finished", "", {"status": "aborted", "error": "no key"})
    assert lost([start, ended, resumed]) == []
    assert lost([start, resumed]) == ["1"]
    assert lost([start, resumed, resumed]) == ["1"]  # said once

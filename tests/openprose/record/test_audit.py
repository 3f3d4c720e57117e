"""The VLP audit trail: every run writes `audit.ndjson`, valid VLP 1.1, one message per
request, answer, verdict, error and retry, linked with `refers_to`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from openprose.record.audit import AUDIT_FILE, ROWS, Translator, translate
from openprose.record.codec import encode
from openprose.record.events import REGISTRY
from openprose.record.journal import read_journal
from tests.openprose.vm.conftest import EXAMPLES, run_example
from tests.support.events import make
from vlp import Thread, effective, read_records
from vlp.cli import main as vlp_main

VM_SRC = Path(__file__).resolve().parents[3] / "src" / "openprose" / "vm"
NEEDS_REGISTRY = {"program-composition.prose"}


def trail(run_dir: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (run_dir / AUDIT_FILE).read_bytes().splitlines()]


def vlp_validate(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    code = vlp_main(["validate", str(path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert " 0 problem(s)" in out, out
    return out


def assert_sound(messages: list[dict[str, Any]]) -> None:
    """One session per run, seq 1..N with no gap, ids unique, every reference earlier."""
    assert [m["seq"] for m in messages] == list(range(1, len(messages) + 1))
    assert len({m["id"] for m in messages}) == len(messages)
    assert len({m["session_id"] for m in messages}) == 1
    assert Thread(messages).problems() == []


@pytest.mark.parametrize(
    "name", sorted(p.name for p in EXAMPLES.glob("*.prose") if p.name not in NEEDS_REGISTRY)
)
def test_every_example_trail_passes_vlp_validate(
    vm: Any, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_example(vm, EXAMPLES, name)  # a person answers release-gate.prose's `ask`
    vlp_validate(result.run_dir / AUDIT_FILE, capsys)
    messages = trail(result.run_dir)
    assert_sound(messages)
    answers = vm.events(result, "session_finished")
    # An `ask` is a query to a person, its answer a response (release-gate.prose asks one).
    asked = vm.events(result, "question_asked")
    replies = vm.events(result, "question_answered")
    responses = sum(m["type"] in ("response", "correction") for m in messages)
    assert responses == len(answers) + len(replies)
    assert sum(m["type"] == "query" for m in messages) == len(answers) + len(asked)
    # The trail is the journal's translation, message for message, of the kinds in ROWS.
    events = list(read_journal(result.run_dir / "journal.jsonl"))
    assert list(translate(events, result.run_id, name)) == messages
    translator = Translator(result.run_id, name)
    for event in events:
        translator.feed(event)
        made = [m["type"] for m in translator.take()]
        allowed = [set(kinds.split("|")) for kinds in ROWS[REGISTRY[event["ev"]]]]
        assert len(made) == len(allowed), event["ev"]
        assert all(kind in ok for kind, ok in zip(made, allowed, strict=True)), event["ev"]


def test_requests_answers_retries_and_verdicts_are_linked(vm: Any) -> None:
    source = (
        'let draft = session "write the draft"\n'
        "  retry: 2\n"
        "if **the draft is good**:\n"
        '  session "publish {draft}"\n'
    )
    provider = vm.spy(
        [
            {"match": "write the draft", "answer": "the draft", "failures": ["transient"]},
            # The first verdict does not parse: the evaluator is asked again.
            {"match": "draft is good", "answer": ["no idea", '{"verdict": true, "reason": "ok"}']},
        ]
    )
    result = vm.run(source, provider)
    assert result.status == "succeeded", result.error
    messages = trail(result.run_dir)
    assert_sound(messages)
    by_id = {m["id"]: m for m in messages}
    failure = next(m for m in messages if m["type"] == "notice" and "failed" in m["content"])
    first_query = by_id[failure["refers_to"]]
    assert first_query["type"] == "query" and first_query["content"] == "write the draft"
    retried = next(
        m for m in messages if m["type"] == "query" and m.get("refers_to") == failure["id"]
    )
    answer = next(m for m in messages if m.get("refers_to") == retried["id"])
    assert answer["type"] == "response" and answer["content"] == "the draft"
    assert answer["provenance"] == ["model:sonnet", "step:1"]
    assert answer["payload"]["usage"]["output_tokens"] > 0
    # The re-asked judgment: its answer corrects the unparsable one, so `effective` of the
    # first answer is the verdict the run used.
    unparsable = next(m for m in messages if m["content"] == "no idea")
    correction = next(m for m in messages if m["type"] == "correction")
    assert correction["refers_to"] == unparsable["id"]
    assert by_id[correction["payload"]["answers"]]["refers_to"] == unparsable["id"]
    assert effective(messages, unparsable["id"]).content == '{"verdict": true, "reason": "ok"}'
    verdict = next(m for m in messages if m["type"] == "claim" and m["sender"] == "evaluator")
    assert verdict["refers_to"] == correction["id"]
    assert verdict["payload"] == {
        "step": "2?c1",
        "kind": "condition",
        "verdict": True,
        "reason": "ok",
    }
    assert messages[-1]["type"] == "claim" and messages[-1]["content"].endswith("succeeded")


def test_a_failed_run_ends_with_a_notice_held_for_review(vm: Any) -> None:
    result = vm.run('throw "stop here"\n', vm.spy())
    assert result.status == "failed"
    last = trail(result.run_dir)[-1]
    assert last["type"] == "notice" and "stop here" in last["content"]
    assert last["safety"]["level"] == "review"


def test_audit_can_be_turned_off(vm: Any) -> None:
    from dataclasses import replace

    result = vm.run('session "x"\n', vm.spy(), config=replace(vm.FAST, audit=False))
    assert not (result.run_dir / AUDIT_FILE).exists()


def _add(translator: Translator, name: str, step: str, t: float, fields: Any) -> None:
    """An event as the VM emits it, typed (the fields these tests leave out neutral)."""
    translator.add(make(name, step, fields), t)


def _line(name: str, step: str, t: float, fields: dict[str, Any]) -> dict[str, Any]:
    """The same event as its journal line, read back."""
    line: dict[str, Any] = orjson.loads(encode(make(name, step, fields), t))
    return line


def test_every_event_the_vm_emits_has_a_row() -> None:
    """A new journal event must say what it becomes in the trail (possibly nothing)."""
    assert len(REGISTRY) >= 30
    assert set(REGISTRY.values()) - set(ROWS) == set()


KILLED_RUN = """
import asyncio, sys
from pathlib import Path
from openprose.parser import parse_text
from openprose.providers import ScriptedProvider
from openprose.vm.runner import VMConfig, run_program

project = Path(sys.argv[1])
source = Path(sys.argv[2]).read_text()
program = parse_text(source, str(project / "main.prose")).program
provider = ScriptedProvider([], default="ok", latency=0.02)
asyncio.run(run_program(program, source, provider=provider, project_dir=project,
                        config=VMConfig(retry_base_delay=0.001)))
"""


def test_kill_9_then_resume_keeps_one_continuous_trail(
    vm: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    lines = []
    for i in range(60):
        lines += [f'let s{i} = session "step {i}"', "  context: []"]
    source = "\n".join(lines) + "\n"
    program = tmp_path / "main.prose"
    program.write_text(source)
    script = tmp_path / "run.py"
    script.write_text(KILLED_RUN)
    child = subprocess.Popen([sys.executable, str(script), str(vm.project), str(program)])
    runs = vm.project / ".prose" / "runs"
    deadline = time.monotonic() + 60
    journal: Path | None = None
    while time.monotonic() < deadline:
        found = list(runs.glob("*/journal.jsonl")) if runs.exists() else []
        if found and found[0].read_bytes().count(b"session_finished") >= 20:
            journal = found[0]
            break
        time.sleep(0.01)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert journal is not None, "the run never got going"
    run_dir = journal.parent
    before = (run_dir / AUDIT_FILE).read_bytes() if (run_dir / AUDIT_FILE).exists() else b""
    result = vm.resume(run_dir, vm.spy(default="ok"))
    assert result.status == "succeeded", result.error
    after = (run_dir / AUDIT_FILE).read_bytes()
    complete = before[: before.rfind(b"\n") + 1]
    assert after.startswith(complete)  # what was written stays, nothing is rewritten
    vlp_validate(run_dir / AUDIT_FILE, capsys)
    messages = trail(run_dir)
    assert_sound(messages)
    answers = [m for m in messages if m["type"] == "response"]
    assert sorted(int(m["payload"]["step"]) for m in answers) == list(range(1, 61))
    assert [m["type"] for m in messages].count("session_context") == 2  # started, resumed
    assert list(translate(read_journal(journal), result.run_id, "main.prose")) == messages


def test_a_trail_torn_by_a_crash_is_cut_at_its_last_whole_line(vm: Any) -> None:
    result = vm.run('session "a"\nsession "b"\n', vm.spy())
    path = result.run_dir / AUDIT_FILE
    whole = path.read_bytes()
    kept = whole.splitlines(keepends=True)[:3]
    path.write_bytes(b"".join(kept) + whole.splitlines()[3][:17])  # killed mid-write
    from openprose.record.audit import AuditTrail

    AuditTrail.resume(
        path, result.run_id, "main.prose", read_journal(result.run_dir / "journal.jsonl")
    ).close()
    assert path.read_bytes() == whole
    records = list(read_records(path))
    assert all(not r.problems for r in records)


@given(st.floats(min_value=0, max_value=4e9, allow_nan=False).map(lambda t: round(t, 6)))
def test_timestamps_are_those_vlp_makes(t: float) -> None:
    from datetime import UTC, datetime

    from openprose.record.audit.messages import _timestamp
    from vlp import utc_timestamp

    assert _timestamp(t) == utc_timestamp(datetime.fromtimestamp(t, UTC))


@given(st.floats(min_value=0, max_value=4e9, allow_nan=False, allow_infinity=False))
def test_timestamps_of_any_time_round_to_the_microsecond_as_datetime_does(t: float) -> None:
    """Journal times are whole microseconds; any other time is rounded to one first (half
    to even, as `datetime`), except that a time rounding up to the next second keeps .999."""
    from datetime import UTC, datetime

    from openprose.record.audit.messages import _timestamp
    from vlp import utc_timestamp

    moment = datetime.fromtimestamp(t, UTC)
    if moment.second != datetime.fromtimestamp(int(t), UTC).second:  # rounded up a second
        assert _timestamp(t).endswith(".999Z")
    else:
        assert _timestamp(t) == utc_timestamp(moment)


def test_prose_show_vlp_prints_the_trail_or_derives_it(
    vm: Any, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    from openprose.cli import main as prose_main

    result = vm.run('session "a"\n', vm.spy())
    monkeypatch.chdir(vm.project)
    written = (result.run_dir / AUDIT_FILE).read_bytes()
    assert prose_main(["show", result.run_id, "--vlp"]) == 0
    assert capsysbinary.readouterr().out == written
    # A run from before the trail existed: the same messages, from its journal.
    (result.run_dir / AUDIT_FILE).unlink()
    assert prose_main(["show", result.run_id[:12], "--vlp"]) == 0
    assert capsysbinary.readouterr().out == written


def test_prose_show_vlp_of_a_damaged_journal_stops_with_one_line(
    vm: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    from openprose.cli import main as prose_main

    result = vm.run('session "a"\n', vm.spy())
    monkeypatch.chdir(vm.project)
    (result.run_dir / AUDIT_FILE).unlink()
    journal = result.run_dir / "journal.jsonl"
    journal.write_bytes(journal.read_bytes().replace(b'"step":"1"', b'"step":5'))
    assert prose_main(["show", result.run_id, "--vlp"]) == 2
    shown = capsysbinary.readouterr()
    assert shown.out.count(b"\n") == 1  # the run's start, written before the damaged event
    assert b"holds a damaged event" in shown.err and b"Traceback" not in shown.err
    assert str(journal).encode() in shown.err


def test_tool_calls_permissions_and_approvals_become_linked_messages() -> None:
    """The tool loop's events (shapes as the tool loop journals them) in the trail."""
    run = "20260101-000000-abcdef"
    call = {"id": "call_1", "name": "bash", "arguments": {"command": "rm -rf build"}}
    at = {"turn": 1, "index": 0}
    request = {"id": "1~t1.0:bash", "kind": "bash", "action": "rm -rf build", "tool": "bash"}
    permission = {
        "call_id": "call_1", "tool": "bash", "kind": "bash", "action": "rm -rf build",
        "decision": "asked", "reason": "ask first",
    }  # fmt: skip
    decided = {"id": request["id"], "answer": "once", "kind": "bash", "action": "rm -rf build"}
    result = {"call_id": "call_1", "tool": "bash", "content": "removed", "omitted_bytes": 0}
    events = [
        _line("run_started", "", 1.0, {"run_id": run, "resumed": False}),
        _line("session_started", "1", 1.1, {"agent": "ops", "model": "sonnet"}),
        _line("tool_call", "1", 1.2, {**at, "call": call}),
        _line("permission", "1", 1.3, {**at, **permission}),
        _line("approval_requested", "1", 1.4, {**at, **request, "agent": "ops"}),
        # written later by `prose approve`, read on resume
        _line("approval_decided", "1", 2.0, {**decided, "by": "cli"}),
        _line("tool_result", "1", 2.1, {**at, **result}),
    ]
    messages = list(translate(events, run, "main.prose"))
    assert_sound(messages)
    kinds = [(m["type"], m.get("topic")) for m in messages[1:]]
    assert kinds == [
        ("query", "tool_call"),
        ("notice", "permission"),
        ("query", "approval"),
        ("response", "approval"),
        ("response", "tool_result"),
    ]
    tool_query, asked, approval, decided, result = messages[1:]
    assert tool_query["sender"] == "ops" and tool_query["receiver"] == "tool:bash"
    assert asked["refers_to"] == tool_query["id"] and asked["safety"]["requires_human"] is True
    assert approval["refers_to"] == tool_query["id"]
    assert decided["refers_to"] == approval["id"] and decided["content"].startswith("once")
    assert result["refers_to"] == tool_query["id"] and result["content"] == "removed"


def test_a_real_tool_loop_trail_validates_and_links_calls(
    vm: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.openprose.vm.test_vm_tools import REVIEW_TURNS, REVIEWER, _project, _run

    project = _project(tmp_path)
    result = _run(project, REVIEWER, vm.spy([{"match": "Review the code", "turns": REVIEW_TURNS}]))
    assert result.status == "succeeded", result.error
    vlp_validate(result.run_dir / AUDIT_FILE, capsys)
    messages = trail(result.run_dir)
    assert_sound(messages)
    by_id = {m["id"]: m for m in messages}
    calls = [m for m in messages if m.get("topic") == "tool_call"]
    results = [m for m in messages if m.get("topic") == "tool_result"]
    assert [m["receiver"] for m in calls] == [
        "tool:list_files", "tool:read_file", "tool:read_file", "tool:write_file",
    ]  # fmt: skip
    assert all(m["sender"] == "reviewer" for m in calls)
    assert sorted(by_id[m["refers_to"]]["id"] for m in results) == sorted(m["id"] for m in calls)
    permissions = [m for m in messages if m.get("topic") == "permission"]
    assert permissions and all(by_id[m["refers_to"]] in calls for m in permissions)
    # Each tool call answers the model turn that asked for it; each later turn's query
    # names the turn it continues (whose query holds the system prompt) and refers to the
    # tool results it sends back.
    answers = [m for m in messages if m["type"] == "response" and "topic" not in m]
    answer_of = {m["payload"]["step"]: m for m in answers}
    turn_of = {"list_files": "2", "write_file": "2~t2"}
    for call in calls:
        tool = call["receiver"].removeprefix("tool:")
        assert by_id[call["refers_to"]] is answer_of[turn_of.get(tool, "2~t1")]
    turns = [m for m in messages if m["type"] == "query" and "continues" in m["payload"]]
    assert [m["payload"]["step"] for m in turns] == ["2~t1", "2~t2", "2~t3"]
    assert [m["payload"]["continues"] for m in turns] == ["2", "2~t1", "2~t2"]
    first = next(m for m in messages if m["type"] == "query" and m["payload"]["step"] == "2")
    assert first["payload"]["system"].startswith("You review code")
    sent = [[by_id[r]["content"] for r in m["refers_to"]] for m in turns]
    assert sent == [
        ["src/app.py\nsrc/util.py"],
        ["def main():\n    return 1\n", "X = 2\n"],
        ["wrote 12 bytes to output/review.md"],
    ]
    assert all("tool result(s)" in m["content"] for m in turns)


_text = st.text(max_size=40)
_name = st.none() | st.text(min_size=1, max_size=12)


@given(
    prompt=_text,
    answer=_text,
    system=st.none() | _text,
    agent=_name,
    alias=_name,
    kind=st.sampled_from(["session", "judgment", "memory", None]),
    step=st.sampled_from(["1", "2:1[0].1", "3?c1~1", "3?c1~2", "4~t2"]),
    attempt=st.integers(1, 5),
    failed_first=st.booleans(),
    binding=_name,
)
def test_a_sessions_messages_are_valid_by_construction(
    prompt: str,
    answer: str,
    system: str | None,
    agent: str | None,
    alias: str | None,
    kind: str | None,
    step: str,
    attempt: int,
    failed_first: bool,
    binding: str | None,
) -> None:
    """The query and answer of a session are built without the validator's check (it
    would cost as much as the rest of the trail): whatever the values, they pass it."""
    from openprose.record.audit import encode
    from vlp import message_problems

    request = {"model": "m-1", "messages": [{"role": "user", "content": prompt}], "system": system}
    started = {"agent": agent, "model": alias, "kind": kind}
    translator = Translator("20260101-000000-abcdef", "main.prose")
    _add(translator, "session_started", step, 10.0, started)
    if failed_first:
        _add(
            translator,
            "session_failed",
            step,
            10.5,
            {"attempt": 1, "error": "x", "request": request},
        )
    finished = {
        **started,
        "request": request,
        "response": {"text": answer, "usage": {"input_tokens": 1, "output_tokens": 2}},
        "attempt": attempt,
        "elapsed": 0.25,
        "binding": binding,
    }
    _add(translator, "session_finished", step, 11.0, finished)
    messages = translator.take()
    assert [m["type"] for m in messages][-2:] in (["query", "response"], ["query", "correction"])
    for message in messages:
        assert message_problems(message) == []
        assert encode(message) == orjson.dumps(message) + b"\n"


class _NoTemplates(dict[Any, Any]):
    """A translator's template cache that has none: every session is built message by
    message, the reference its templates must match byte for byte."""

    def get(self, key: Any, default: Any = None) -> None:
        return None


_odd = st.text(alphabet=st.sampled_from('ab%"\\\n\ue000\u00e9\U0001f600'), max_size=6)
_session_values = st.fixed_dictionaries(
    {
        "prompt": _text | _odd | st.integers(0, 3),
        "answer": _text | _odd | st.none(),
        "system": st.none() | _odd | st.just(""),
        "agent": _name | _odd,
        "alias": _name | _odd,
        "kind": st.sampled_from(["session", "judgment", None, ""]) | _odd,
        "model": st.none() | st.sampled_from(["m-1", "m-2"]) | _odd,
        "step": st.sampled_from(["1", "2:1[0].1", "3?c1~1", "3?c1~2", "4~t2"]) | _odd,
        "binding": _name | _odd,
        "attempt": st.integers(0, 3) | st.none(),
        "elapsed": st.none() | st.floats(0, 100) | st.sampled_from([6.5e-05, 1e-7, 0.0]),
        "usage": st.none() | st.fixed_dictionaries({"input_tokens": st.integers(0, 10**9)}),
        "finish_reason": st.none() | st.sampled_from(["stop", "length"]),
        "t": st.floats(0, 4e9).map(lambda t: round(t, 6)),
        "failed_first": st.booleans(),
        "started": st.booleans(),
    }
)


@given(
    run_id=st.sampled_from(["20260101-000000-abcdef", 'b%d-"1"', "r\ue000a"]),
    sessions=st.lists(_session_values, min_size=1, max_size=6),
    journaled=st.booleans(),
)
def test_templated_sessions_are_the_built_ones_byte_for_byte(
    run_id: str, sessions: list[dict[str, Any]], journaled: bool
) -> None:
    """A session statement's template (its constants encoded once, the session's own
    values put in) writes exactly the lines the builders make, whatever the values: text
    with `%`, quotes, the stand-ins' character; repeated and new statements; a retry before
    the answer; events live or read back from a journal."""
    templated = Translator(run_id, "main.prose")
    built = Translator(run_id, "main.prose")
    built._templates = _NoTemplates()
    for values in sessions:
        step = values["step"]
        request = {
            "model": values["model"],
            "messages": [{"role": "user", "content": values["prompt"]}],
            "system": values["system"],
            "max_tokens": 10,
            "temperature": None,
        }
        response = {
            "text": values["answer"],
            "usage": values["usage"],
            "finish_reason": values["finish_reason"],
            "request_id": None,
            "model": values["model"],
            "provider": "p",
        }
        started = {"agent": values["agent"], "model": values["alias"], "kind": values["kind"]}
        events: list[tuple[str, dict[str, Any]]] = []
        if values["started"]:
            events.append(("session_started", started))
        if values["failed_first"]:
            events.append(("session_failed", {"attempt": 1, "error": "x", "request": request}))
        finished = {
            "request": request,
            "response": response,
            **started,
            "binding": values["binding"],
            "attempt": values["attempt"],
            "elapsed": values["elapsed"],
        }
        events.append(("session_finished", finished))
        for event, fields in events:
            for translator in (templated, built):
                if journaled:
                    translator.feed(_line(event, step, values["t"], fields))
                else:
                    _add(translator, event, step, values["t"], fields)
            assert templated.take_bytes() == built.take_bytes()
    assert templated.seq == built.seq


def test_a_plain_session_is_written_from_its_template() -> None:
    """The byte-for-byte test above compares something: an ordinary session (its binding
    included) takes the template path."""
    translator = Translator("20260101-000000-abcdef", "main.prose")
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "system": None}
    response = {"text": "yo", "usage": None, "finish_reason": "stop", "model": "m"}
    fields = {"agent": None, "model": "sonnet", "kind": "session", "binding": "greeting"}
    _add(translator, "session_started", "1", 1.0, fields)
    _add(
        translator,
        "session_finished",
        "1",
        2.0,
        {**fields, "request": request, "response": response, "attempt": 1, "elapsed": 0.5},
    )
    assert len(translator._templates) == 1 and None not in translator._templates.values()
    query, answer = translator.take()
    assert answer["payload"]["binding"] == "greeting" and answer["refers_to"] == query["id"]


def test_a_query_takes_what_its_answer_event_lacks_from_the_sessions_start() -> None:
    """Only the start of a session is kept until its end: the query's agent, model and kind
    come from the answer's event, and from the start where the answer's event has none."""
    translator = Translator("20260101-000000-abcdef", "main.prose")
    _add(
        translator,
        "session_started",
        "1",
        10.0,
        {"agent": "critic", "model": "opus", "kind": "judgment"},
    )
    request = {"model": "m-1", "messages": [{"role": "user", "content": "Is it good?"}]}
    _add(
        translator, "session_finished", "1", 11.0, {"request": request, "response": {"text": "yes"}}
    )
    query, answer = translator.take()
    assert query["receiver"] == "critic" and query["topic"] == "judgment"
    assert query["payload"] == {"step": "1", "kind": "judgment", "model": "opus", "attempt": 1}
    assert answer["sender"] == "model" and answer["payload"]["kind"] == "session"
    assert translator._started == {}  # the start is dropped with the session's end


def test_the_trail_never_gets_ahead_of_the_journal(tmp_path: Path) -> None:
    """Events are translated as they are recorded, but their lines reach `audit.ndjson`
    only once the journal has written the events (its write hook hands them over)."""
    import asyncio

    from openprose.record.audit import AuditTrail
    from openprose.record.journal import Journal
    from openprose.record.writer import shared_writer

    async def scenario() -> None:
        journal = Journal(tmp_path / "journal.jsonl", durable=False)
        journal.start()
        audit = AuditTrail(tmp_path / AUDIT_FILE, "run-1", "main.prose")
        journal.when_written(audit.written)
        started = {"agent": None, "model": "sonnet", "kind": "session"}
        finished = {
            **started,
            "request": {"model": "m-1", "messages": [{"role": "user", "content": "Hi"}]},
            "response": {"text": "Hello", "usage": {"input_tokens": 1, "output_tokens": 1}},
            "attempt": 1,
            "elapsed": 0.5,
        }
        for event, fields in (("session_started", started), ("session_finished", finished)):
            typed = make(event, "1", {"binding": None, **fields})
            audit.add(typed, journal.record(typed))
        shared_writer().flush()
        assert not (tmp_path / AUDIT_FILE).exists()  # the journal has not written them yet
        await asyncio.sleep(0)  # the journal writes once per loop turn
        assert journal.writes == 1
        shared_writer().flush()
        messages = trail(tmp_path)
        assert [m["type"] for m in messages] == ["query", "response"]
        assert messages == list(translate(read_journal(journal.path), "run-1", "main.prose"))
        await journal.close()
        await audit.aclose()
        assert audit.error is None

    asyncio.run(scenario())


def test_a_sessions_bookkeeping_is_let_go_when_its_tool_loop_ends() -> None:
    """A tool call still finds its turn's answer and its session's agent; once a turn
    answers without tool calls, nothing of the session is kept (a big pmap stays flat)."""
    translator = Translator("20260101-000000-abcdef", "main.prose")
    fields = {"agent": "ops", "model": "sonnet", "kind": "session", "binding": None}
    request = {"model": "m", "messages": [{"role": "user", "content": "go"}], "system": None}
    asks = {"id": "c1", "name": "ls", "arguments": {}}
    answers = [
        ("1", {"text": "", "tool_calls": [asks], "usage": None, "finish_reason": "tool_calls"}),
        ("1~t1", {"text": "", "tool_calls": [asks], "usage": None, "finish_reason": "tool_calls"}),
        ("1~t2", {"text": "done", "usage": None, "finish_reason": "stop", "model": "m"}),
    ]
    for turn, (step, response) in enumerate(answers):
        _add(translator, "session_started", step, 1.0 + turn, fields)
        finished = {**fields, "request": request, "response": response}
        _add(translator, "session_finished", step, 1.1 + turn, {**finished, "attempt": 1})
        if response.get("tool_calls"):
            _add(translator, "tool_call", "1", 1.2 + turn, {"turn": turn, "index": 0, "call": asks})
    for item in range(3):  # plain sessions of a fan-out
        _add(translator, "session_started", f"2:1[{item}].1", 5.0, fields)
        finished = {**fields, "request": request, "response": answers[2][1], "attempt": 1}
        _add(translator, "session_finished", f"2:1[{item}].1", 5.1, {**finished, "elapsed": 0.1})
    messages = translator.take()
    calls = [m for m in messages if m.get("topic") == "tool_call"]
    answer_of = {m["payload"]["step"]: m["id"] for m in messages if m["type"] == "response"}
    assert [c["refers_to"] for c in calls] == [answer_of["1"], answer_of["1~t1"]]
    assert {c["sender"] for c in calls} == {"ops"}
    assert translator._answers == {} and translator._agents == {}

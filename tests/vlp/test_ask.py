"""`vlp.ask` and `vlp ask`: a model's reply becomes a valid VLP message, or is re-asked once."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from openprose.providers import ModelRequest, ScriptedProvider, ScriptRule, local_model_installed
from tests.support.fake_llm_server import FakeLLMServer, reset_server, start_in_subprocess
from vlp import is_valid, read_messages
from vlp.answer_grammar import answer_grammar
from vlp.ask import ASKABLE_TYPES, answer_schema, ask, ask_async
from vlp.cli import main

GOOD = {
    "content": "Paris is the capital of France.",
    "confidence": 0.8,
    "provenance": ["atlas"],
    "keywords": ["France"],
    "safety": {"level": "safe"},
}
OVERCONFIDENT = {**GOOD, "confidence": 0.95, "provenance": []}  # VLP204: no source, not flagged


def scripted(*answers: str) -> tuple[ScriptedProvider, list[ModelRequest]]:
    """A provider answering `answers` in order, and the requests it saw."""
    seen: list[ModelRequest] = []
    queue = list(answers)

    def answer(request: ModelRequest) -> str:
        seen.append(request)
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return ScriptedProvider([ScriptRule(answer=answer)]), seen


async def test_a_valid_reply_becomes_a_message_with_the_callers_envelope() -> None:
    provider, seen = scripted(json.dumps(GOOD))
    answer = await ask_async(
        provider, "Capital of France?", model="m1", refers_to="MSG-q", session_id="S-1"
    )
    assert answer.ok and len(answer.attempts) == 1
    msg = answer.message
    assert msg is not None and is_valid(msg)
    assert msg["type"] == "claim" and msg["sender"] == "m1" and msg["refers_to"] == "MSG-q"
    assert msg["session_id"] == "S-1" and msg["content"] == GOOD["content"]
    request = seen[0]
    assert request.response_schema == answer_schema("claim")
    assert request.grammar == answer_grammar(("safe", "review", "block"))
    assert request.system and "VLP/1.1" in request.system
    assert "Capital of France?" in request.last_user_text()


async def test_the_model_cannot_forge_the_envelope() -> None:
    forged = {**GOOD, "id": "X", "protocol": "VLP/0.9", "type": "query", "sender": "root"}
    provider, _ = scripted("```json\n" + json.dumps(forged) + "\n```")
    answer = await ask_async(provider, "q", model="m1", sender="agent")
    assert answer.message is not None
    assert answer.message["protocol"] == "VLP/1.1" and answer.message["type"] == "claim"
    assert answer.message["sender"] == "agent" and answer.message["id"].startswith("MSG-")


async def test_a_message_with_problems_is_reasked_once_naming_them() -> None:
    provider, seen = scripted(json.dumps(OVERCONFIDENT), json.dumps(GOOD))
    answer = await ask_async(provider, "q", model="m1")
    assert answer.ok and len(answer.attempts) == 2
    assert [p.code for p in answer.attempts[0].problems] == ["VLP204"]
    reask = seen[1]
    assert "VLP204" in reask.last_user_text()
    assert [m.role for m in reask.messages] == ["user", "assistant", "user"]
    assert reask.messages[1].content == json.dumps(OVERCONFIDENT)


async def test_two_bad_replies_give_no_message_and_keep_every_attempt() -> None:
    provider, seen = scripted("I think it is Paris.", json.dumps({**GOOD, "confidence": 7}))
    answer = await ask_async(provider, "q", model="m1")
    assert not answer.ok and len(seen) == 2
    assert [p.code for p in answer.attempts[0].problems] == ["VLP001"]
    assert "VLP108" in [p.code for p in answer.problems]
    assert answer.attempts[0].text == "I think it is Paris."


async def test_no_reask_when_asked_for_none() -> None:
    provider, seen = scripted("nonsense")
    answer = await ask_async(provider, "q", model="m1", max_reasks=0)
    assert not answer.ok and len(seen) == 1


async def test_unknown_type_and_missing_model_are_refused() -> None:
    provider, _ = scripted(json.dumps(GOOD))
    with pytest.raises(ValueError, match="type must be one of"):
        await ask_async(provider, "q", model="m", type="session_context")
    with pytest.raises(ValueError, match="model="):
        await ask_async(provider, "q")


@pytest.mark.parametrize("message_type", ASKABLE_TYPES)
def test_every_answer_the_schema_admits_makes_a_valid_message(message_type: str) -> None:
    """The grammar-constrained path: whatever the schema allows, the validator accepts."""
    schema = answer_schema(message_type)
    high = {**GOOD, "confidence": 0.95, "provenance": ["doc-1"]}
    for reply in (GOOD, high, {**high, "confidence": 0.1, "safety": {"level": "block"}}):
        jsonschema.validate(reply, schema)
        provider, _ = scripted(json.dumps(reply))
        answer = ask(provider, "q", model="m", type=message_type, refers_to="MSG-1")
        assert answer.ok, answer.problems
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(OVERCONFIDENT, schema)  # provenance must be filled


async def test_answers_over_http_from_an_openai_compatible_server(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bodies: list[dict[str, Any]] = []

    def reply(api: str, body: dict[str, Any]) -> str:
        bodies.append(body)
        return json.dumps(GOOD) if len(bodies) > 1 else "Paris, surely."

    monkeypatch.chdir(tmp_path)
    for name in ("PROSE_PROVIDER", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    async with FakeLLMServer(reply=reply) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        answer = await ask_async("openai", "Capital of France?", model="gpt-test")
    assert answer.ok and len(answer.attempts) == 2
    assert answer.message is not None and answer.message["sender"] == "gpt-test"
    assert bodies[0]["model"] == "gpt-test"


# --- the command line ------------------------------------------------------------------


def rules(tmp_path: Path, *answers: dict[str, Any] | str) -> str:
    texts = [a if isinstance(a, str) else json.dumps(a) for a in answers]
    path = tmp_path / "rules.json"
    path.write_text(json.dumps({"rules": [{"answer": texts}]}))
    return f"scripted:{path}"


def test_cli_prints_the_answer_as_one_ndjson_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ask", "--provider", rules(tmp_path, GOOD), "Capital of France?"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1
    msg = json.loads(out[0])
    assert is_valid(msg) and msg["type"] == "claim" and msg["content"] == GOOD["content"]


def test_cli_appends_question_and_answer_to_a_thread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    thread = tmp_path / "t.ndjson"
    provider = rules(tmp_path, OVERCONFIDENT, GOOD)
    assert main(["ask", "--provider", provider, "--thread", str(thread), "q1"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert main(["ask", "--provider", provider, "--thread", str(thread), "--type", "correction",
                 "--refers-to", first["id"], "q2"]) == 0  # fmt: skip
    messages = list(read_messages(thread))
    assert [m["type"] for m in messages] == ["query", "claim", "query", "correction"]
    assert messages[1]["refers_to"] == messages[0]["id"]
    assert messages[3]["refers_to"] == [first["id"], messages[2]["id"]]
    assert main(["validate", str(thread)]) == 0  # the thread checks pass too
    assert "attempt 1 rejected" in capsys.readouterr().err


def test_cli_reports_every_attempt_when_no_valid_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ask", "--provider", rules(tmp_path, "no json here"), "q"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("VLP001") == 2 and "no json here" in captured.err
    assert "after 2 attempt(s)" in captured.err


def test_cli_shows_a_rejected_reply_with_its_controls_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile = "nul\x00 \u202eevil \x1b[2Jclear \x1b]0;title\x07"
    assert main(["ask", "--provider", rules(tmp_path, hostile), "q"]) == 1
    err = capsys.readouterr().err
    assert "nul\\x00 \\u202eevil \\x1b[2Jclear \\x1b]0;title\\x07" in err
    assert not any(char in err for char in ("\x00", "\u202e", "\x1b", "\x07"))


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["ask", "--type", "response", "q"], "must refer to a message"),
        (["ask", "--provider", "nope", "q"], "unknown provider"),
        (["ask", "--thread", "T", "--refers-to", "MSG-x", "q"], "no such message"),
    ],
)
def test_cli_usage_errors_are_clear(
    argv: list[str],
    expected: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = [a if a != "T" else str(tmp_path / "t.ndjson") for a in argv]
    if "--provider" not in argv:
        argv += ["--provider", rules(tmp_path, GOOD)]
    assert main(argv) == 2
    assert expected in capsys.readouterr().err


@pytest.fixture(scope="module")
def echo_server() -> Iterator[str]:
    base_url, stop = start_in_subprocess()
    try:
        yield base_url
    finally:
        stop()


def test_cli_over_http_with_a_model_that_ignores_the_protocol(
    echo_server: str, tmp_path: Path
) -> None:
    """The whole command, a real HTTP provider, a reply that is not JSON: exit 1, nothing on
    stdout, the attempts on stderr."""
    reset_server(echo_server)
    env = {"PATH": "/usr/bin:/bin", "OPENAI_BASE_URL": echo_server + "/v1", "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "vlp.cli", "ask", "--provider", "openai", "q"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert done.stdout == "" and "echo:" in done.stderr and "Traceback" not in done.stderr


def test_importing_vlp_does_not_import_the_provider_layer() -> None:
    code = "import sys, vlp, vlp.cli, vlp.ask; print('openprose' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.stdout.strip() == "False", done.stderr


@pytest.mark.skipif(not local_model_installed(), reason="needs the [local] extra")
def test_the_embedded_model_answers_with_a_valid_message() -> None:
    answer = ask("local", "How many legs does a spider have?", temperature=0.0)
    assert answer.ok, [a.text for a in answer.attempts]
    assert answer.message is not None and answer.message["sender"] == "smollm2-135m-instruct"

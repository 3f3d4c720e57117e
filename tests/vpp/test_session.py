"""`vpp.session.Session` and `vpp chat`: a live model held to VPP by the runtime."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openprose.providers import ModelRequest, ScriptedProvider, ScriptRule, local_model_installed
from tests.support.fake_llm_server import FakeLLMServer, reset_server, start_in_subprocess
from vpp import build_footer, validate_transcript
from vpp.chat import messages_from_lines
from vpp.cli import main
from vpp.session import Session


def footer(tag: str, index: int, cycle: int = 1) -> str:
    return build_footer(tag, index, cycle=cycle, locus="default", version="1.5")


def scripted(*answers: str) -> tuple[ScriptedProvider, list[ModelRequest]]:
    seen: list[ModelRequest] = []
    queue = list(answers)

    def answer(request: ModelRequest) -> str:
        seen.append(request)
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return ScriptedProvider([ScriptRule(answer=answer)]), seen


async def test_a_compliant_reply_is_kept_as_is_and_the_header_is_sent() -> None:
    reply = f"<g>\nA plan.\n{footer('g', 1)}"
    provider, seen = scripted(reply)
    session = Session(provider, "1.5", model="m")
    turn = await session.send_async("!<g>\nPlan a trip")
    assert turn.outcome == "valid" and turn.first_try_ok and turn.reply == reply
    system = seen[0].system or ""
    assert system.startswith(session.header) and footer("g", 1) in system
    assert session.state.count("g") == 1


async def test_framing_is_repaired_without_asking_again() -> None:
    provider, seen = scripted("Just the answer, no tags.")
    session = Session(provider, "1.5", model="m")
    turn = await session.send_async("!<q>\nWho comes?")
    assert turn.outcome == "repaired" and not turn.first_try_ok and len(seen) == 1
    assert turn.reply == f"<q>\nJust the answer, no tags.\n{footer('q', 1)}"
    codes = {v.code for v in turn.attempts[0].violations}
    assert {"missing-or-invalid-header", "missing-or-malformed-footer"} <= codes


async def test_an_empty_reply_is_reasked_with_the_violations_named() -> None:
    provider, seen = scripted(f"<g>\n{footer('g', 1)}", "Now with content.")
    session = Session(provider, "1.5", model="m")
    turn = await session.send_async("!<g>\nPlan")
    assert turn.outcome == "reasked" and len(turn.attempts) == 2
    assert "empty-body" in seen[1].last_user_text()
    assert turn.reply == f"<g>\nNow with content.\n{footer('g', 1)}"
    # the re-ask is not part of the conversation the next turn sees
    await session.send_async("!<g>\nmore")
    assert [m.role for m in seen[-1].messages] == ["user", "assistant", "user"]
    # ...and the model is shown what it said, not the runtime's frame around it
    assert seen[-1].messages[1].content == turn.attempts[-1].text == "Now with content."


async def test_the_reasks_are_bounded_and_a_failure_is_reported() -> None:
    provider, seen = scripted("")
    session = Session(provider, "1.5", model="m", max_reasks=1)
    turn = await session.send_async("!<g>\nPlan")
    assert turn.outcome == "failed" and not turn.ok and len(seen) == 2
    assert "empty-body" in [v.code for v in turn.violations]
    assert turn.violations == turn.attempts[-1].violations


async def test_an_invalid_command_is_answered_by_the_runtime() -> None:
    provider, seen = scripted("never used")
    session = Session(provider, "1.5", model="m")
    turn = await session.send_async("hello, no command here")
    assert turn.outcome == "runtime" and not seen
    assert turn.reply.startswith("<c>\nInvalid VPP command") and session.state.count("c") == 1


async def test_the_state_follows_the_protocol_across_turns() -> None:
    provider, _ = scripted("Answer.")
    session = Session(provider, "1.5", model="m")
    for message in ("!<g>\na", "!<c>\nb", "!<g>\nc", "!<e> --<g>\nd"):
        await session.send_async(message)
    cycles = [t.state.cycle for t in session.turns]
    assert cycles == [1, 1, 2, 1] and session.state.locus == "locus-2"
    result = validate_transcript(session.messages(), "1.5")
    assert result.ok, [v for t in result.turns for v in t.violations]


def test_sync_use_and_1_4() -> None:
    provider, _ = scripted("Answer.")
    session = Session(provider, "1.4", model="m")
    try:
        assert session.send("!<g>\na").reply.endswith("Cycle=1/3 | Locus=default]")
        assert session.send("!<o> --incorrect\nno").state.cycle == 2
    finally:
        session.close()
    with pytest.raises(ValueError, match="max_reasks"):
        Session(provider, "1.5", max_reasks=-1)


async def test_over_http_against_an_openai_compatible_server() -> None:
    def reply(api: str, body: dict[str, Any]) -> str:
        return "Porto, in May."

    async with FakeLLMServer(reply=reply) as server:
        from openprose.providers.openai import OpenAIProvider

        provider = OpenAIProvider(api_key="k", base_url=server.openai_base_url, timeout=30)
        session = Session(provider, "1.5", model="gpt-test")
        turn = await session.send_async("!<g>\nWhere?")
        await session.aclose()
    assert turn.outcome == "repaired" and "Porto, in May." in turn.reply
    assert server.stats.attempts == 1


# --- vpp chat ------------------------------------------------------------------------------


def test_messages_start_at_command_lines() -> None:
    text = "preamble\n\n!<g>\nPlan\n\n!<q>\nWho?\n!<x> junk\n"
    assert list(messages_from_lines(io.StringIO(text))) == [
        "preamble",
        "!<g>\nPlan",
        "!<q>\nWho?",
        "!<x> junk",
    ]


def rules_file(tmp_path: Path) -> str:
    path = tmp_path / "rules.json"
    path.write_text(json.dumps({"default": "An answer."}))
    return f"scripted:{path}"


def run_chat(
    argv: list[str], stdin: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(["chat", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_chat_writes_a_transcript_vpp_check_accepts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    transcript = tmp_path / "t.jsonl"
    argv = ["--version", "1.5", "--provider", rules_file(tmp_path), "--transcript", str(transcript)]
    code, out, err = run_chat(argv, "!<g>\nPlan\n!<q>\nWho?\nnot a command\n", monkeypatch, capsys)
    assert code == 0
    assert out.count("[Version=v1.5") == 2 and "repaired" in err
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert [r["role"] for r in records] == ["system", "user", "assistant", "user", "assistant"]
    assert records[2]["vpp_session"]["outcome"] == "repaired"
    assert main(["check", "--version", "1.5", str(transcript)]) == 0
    assert "compliant with VPP 1.5" in capsys.readouterr().out


def test_chat_json_output_and_json_transcript(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    transcript = tmp_path / "t.json"
    argv = ["--provider", rules_file(tmp_path), "--json", "--transcript", str(transcript)]
    code, out, _ = run_chat(argv, "!<g>\na\n!<c>\nb\n", monkeypatch, capsys)
    turns = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [t["outcome"] for t in turns] == ["repaired", "repaired"]
    assert turns[1]["state"]["tag_counts"]["c"] == 1
    assert main(["check", str(transcript)]) == 0  # the default version, as chat's


def test_chat_refuses_to_overwrite_and_reports_bad_providers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = tmp_path / "t.jsonl"
    taken.write_text("keep me\n")
    argv = ["--provider", rules_file(tmp_path), "--transcript", str(taken)]
    code, _, err = run_chat(argv, "!<g>\na\n", monkeypatch, capsys)
    assert code == 2 and "exists" in err and taken.read_text() == "keep me\n"
    code, _, err = run_chat(["--provider", "nope"], "!<g>\na\n", monkeypatch, capsys)
    assert code == 2 and "unknown provider" in err


@pytest.fixture(scope="module")
def echo_server() -> Iterator[str]:
    base_url, stop = start_in_subprocess()
    try:
        yield base_url
    finally:
        stop()


def test_chat_end_to_end_over_http(echo_server: str, tmp_path: Path) -> None:
    reset_server(echo_server)
    env = {"PATH": "/usr/bin:/bin", "OPENAI_BASE_URL": echo_server + "/v1", "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "vpp.cli", "chat", "--version", "1.5", "--provider", "openai",
         "--transcript", "t.jsonl"],
        input="!<g>\nHello\n!<o>\nDone\n", cwd=tmp_path, env=env, capture_output=True,
        text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # The echo hands back the command (`!<g>`), a content fault the runtime may not frame away:
    # the session asks again, and the echo of that request, framed, is the kept reply.
    assert "body-echoes-command" in done.stderr and "reasked after 2 attempt(s)" in done.stderr
    assert "echo: Your reply broke the protocol" in done.stdout and "Tag=o_1" in done.stdout
    check = subprocess.run(
        [sys.executable, "-m", "vpp.cli", "check", "--version", "1.5", "t.jsonl"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert check.returncode == 0, check.stdout


def test_importing_vpp_does_not_import_the_provider_layer() -> None:
    code = "import sys, vpp, vpp.cli, vpp.session; print('openprose' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.stdout.strip() == "False", done.stderr


@pytest.mark.skipif(not local_model_installed(), reason="needs the [local] extra")
def test_the_embedded_model_holds_a_compliant_conversation() -> None:
    from openprose.providers.local import LocalProvider

    session = Session(LocalProvider(), "1.5", model="local", temperature=0.0, max_tokens=120)
    try:
        for message in ("!<g>\nName three colours.", "!<q>\nWhat should I ask about paint?"):
            assert session.send(message).ok
    finally:
        session.close()
    assert validate_transcript(session.messages(), "1.5").ok

"""Cassette replay and recording."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from openprose.providers import (
    Message,
    ModelRequest,
    ModelResponse,
    ProviderConfigError,
    ProviderError,
    ProviderSettings,
    RecordingProvider,
    ReplayProvider,
    ScriptedProvider,
    Usage,
    load_settings,
    open_provider,
)


def ask(prompt: str, model: str = "claude-sonnet-5-5") -> ModelRequest:
    return ModelRequest(model=model, messages=(Message("user", prompt),), system="sys")


def answer(text: str) -> ModelResponse:
    return ModelResponse(text, Usage(3, 4), "end_turn", "req_1", "claude-sonnet-5-5", "anthropic")


async def test_recorded_run_replays_identically(tmp_path: Path) -> None:
    cassette = tmp_path / "run.jsonl"
    live = ScriptedProvider([{"match": "capital", "answer": ["Paris", "Lyon"]}])
    recorder = RecordingProvider(live, cassette)
    first = [await recorder.complete(ask("capital?")) for _ in range(2)]
    await recorder.aclose()

    lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    assert [line["key"] for line in lines] == [ask("capital?").key()] * 2
    assert lines[0]["request"] == ask("capital?").to_dict()

    settings = load_settings(tmp_path, provider=f"replay:{cassette}", env={})
    replay = open_provider(settings)
    again = [await replay.complete(ask("capital?")) for _ in range(2)]
    # identical requests are answered in recorded order
    assert [r.text for r in again] == [r.text for r in first] == ["Paris", "Lyon"]
    assert again[0].usage == first[0].usage and again[0].provider == "replay"


async def test_recording_is_flushed_line_by_line(tmp_path: Path) -> None:
    cassette = tmp_path / "partial.jsonl"
    recorder = RecordingProvider(ScriptedProvider([{"answer": "ok"}]), cassette)
    await recorder.complete(ask("one"))
    # readable before close: a killed run keeps what it recorded
    assert len(cassette.read_text().splitlines()) == 1
    await recorder.complete(ask("two"))
    assert len(cassette.read_text().splitlines()) == 2
    await recorder.aclose()


async def test_missing_request_names_key_and_prompt() -> None:
    replay = ReplayProvider([(ask("known"), answer("yes"))], source="demo.jsonl")
    unknown = ask("What is the airspeed of an unladen swallow?")
    with pytest.raises(ProviderError) as caught:
        await replay.complete(unknown)
    message = str(caught.value)
    assert unknown.key()[:16] in message
    assert "What is the airspeed" in message and "demo.jsonl" in message


async def test_exhausted_recording_is_an_error() -> None:
    replay = ReplayProvider([(ask("once"), answer("only"))])
    assert (await replay.complete(ask("once"))).text == "only"
    with pytest.raises(ProviderError, match="no recorded response left"):
        await replay.complete(ask("once"))


async def test_model_id_mismatch_falls_back_to_the_prompt() -> None:
    # A replay run resolves `sonnet` to `sonnet`; the recording run sent the real id.
    replay = ReplayProvider(
        [(ask("q", model="claude-opus-5-5"), answer("exact")), (ask("q"), answer("loose"))]
    )
    assert (await replay.complete(ask("q", model="claude-opus-5-5"))).text == "exact"
    assert (await replay.complete(ask("q", model="sonnet"))).text == "loose"


async def test_a_model_mismatch_takes_the_next_unused_record_of_the_prompt() -> None:
    # The prompt index is made at the first miss, after an exact match used the first record.
    replay = ReplayProvider(
        [(ask("q", model="a"), answer("first")), (ask("q", model="b"), answer("second"))]
    )
    assert (await replay.complete(ask("q", model="a"))).text == "first"
    assert (await replay.complete(ask("q", model="c"))).text == "second"
    with pytest.raises(ProviderError, match="no recorded response left"):
        await replay.complete(ask("q", model="c"))


def test_the_replay_key_is_the_canonical_json_sha256_recorded_cassettes_hold() -> None:
    # Cassettes on disk hold this key: its bytes may never change (sorted keys, no spaces,
    # non-ASCII as UTF-8).
    request = ModelRequest(
        model="m", messages=(Message("user", 'caf\u00e9 "q"\n'),), system="s", temperature=0.5
    )
    text = (
        '{"max_tokens":1024,"messages":[{"content":"caf\u00e9 \\"q\\"\\n","role":"user"}],'
        '"model":"m","system":"s","temperature":0.5}'
    )
    assert request.key() == hashlib.sha256(text.encode("utf-8")).hexdigest()


async def test_different_prompts_do_not_match() -> None:
    replay = ReplayProvider([(ask("q"), answer("a"))])
    with pytest.raises(ProviderError):
        await replay.complete(ModelRequest(model="claude-sonnet-5-5", messages=ask("q").messages))


def record_line(prompt: str, text: str) -> str:
    record = {"key": ask(prompt).key(), "request": ask(prompt).to_dict()}
    return json.dumps({**record, "response": answer(text).to_dict()}) + "\n"


def test_bad_cassette_line_names_file_and_line(tmp_path: Path) -> None:
    cassette = tmp_path / "bad.jsonl"
    cassette.write_text(record_line("q", "a") + "{not json\n" + record_line("r", "b"))
    with pytest.raises(ProviderConfigError, match=r"bad.jsonl:2 is not a cassette record"):
        open_provider(ProviderSettings(provider="replay", path=cassette))


async def test_a_last_line_torn_by_a_killed_recording_is_skipped(tmp_path: Path) -> None:
    cassette = tmp_path / "killed.jsonl"
    cassette.write_text(record_line("q", "kept") + record_line("r", "torn")[:40])
    replay = ReplayProvider.from_file(cassette)
    assert (await replay.complete(ask("q"))).text == "kept"
    with pytest.raises(ProviderError, match="no recorded response left"):
        await replay.complete(ask("r"))
    # recording again into it starts on a fresh line, so the file stays readable
    recorder = RecordingProvider(ScriptedProvider([{"answer": "new"}]), cassette)
    await recorder.complete(ask("s"))
    await recorder.aclose()
    assert (await ReplayProvider.from_file(cassette).complete(ask("s"))).text == "new"


def test_missing_cassette_is_a_config_error_saying_what_replay_takes(tmp_path: Path) -> None:
    with pytest.raises(ProviderConfigError) as caught:
        ReplayProvider.from_file(tmp_path / "absent.jsonl")
    message = str(caught.value)
    assert "cannot read" in message and "absent.jsonl" in message
    assert "run folder or a run id" in message


def journal_event(event: str, prompt: str = "", text: str = "", **extra: object) -> str:
    record: dict[str, object] = {"ev": event, "step": f"s{prompt}", "t": 1.0, **extra}
    if event == "session_finished":  # every field the VM journals
        record.update(request=ask(prompt).to_dict(), response=answer(text).to_dict())
        record.update(agent=None, model="sonnet", binding=None, attempt=1, elapsed=0.1)
        record.update(kind="session")
    return json.dumps(record) + "\n"


def write_run(project: Path, run_id: str, *lines: str) -> Path:
    run = project / ".prose" / "runs" / run_id
    run.mkdir(parents=True)
    (run / "journal.jsonl").write_text("".join(lines))
    return run


async def test_a_run_journal_replays_its_finished_sessions(tmp_path: Path) -> None:
    run = write_run(
        tmp_path,
        "20260101-120000-abcdef",
        journal_event("run_started"),
        journal_event("session_started", "one"),
        journal_event("session_finished", "one", "first"),
        '{"ev": "session_fin',  # torn by a kill mid-write; the run then resumed
        "\n",
        journal_event("session_failed", "two", error="HTTP 500"),
        journal_event("session_finished", "two", "second"),
        journal_event("decision", "two", answer="yes"),
    )
    for source in (run, run / "journal.jsonl"):
        replay = ReplayProvider.from_file(source)
        assert (await replay.complete(ask("two"))).text == "second"
        assert (await replay.complete(ask("one"))).text == "first"
        with pytest.raises(ProviderError, match="journal.jsonl"):
            await replay.complete(ask("one"))


def test_a_folder_without_a_journal_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ProviderConfigError, match="folder without a journal.jsonl"):
        ReplayProvider.from_file(tmp_path)


async def test_answers_holding_unicode_line_separators_replay_whole(tmp_path: Path) -> None:
    # JSON writes U+2028, U+2029 and U+0085 raw; only "\n" ends a cassette line
    cassette = tmp_path / "separators.jsonl"
    text = "first\u2028second\u2029third\x85fourth"
    recorder = RecordingProvider(ScriptedProvider([{"answer": text}]), cassette)
    await recorder.complete(ask("q"))
    await recorder.aclose()

    replay = open_provider(load_settings(tmp_path, provider=f"replay:{cassette}", env={}))
    assert (await replay.complete(ask("q"))).text == text

"""Cassette replay and recording."""

from __future__ import annotations

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


async def test_different_prompts_do_not_match() -> None:
    replay = ReplayProvider([(ask("q"), answer("a"))])
    with pytest.raises(ProviderError):
        await replay.complete(ModelRequest(model="claude-sonnet-5-5", messages=ask("q").messages))


def test_bad_cassette_line_names_file_and_line(tmp_path: Path) -> None:
    cassette = tmp_path / "bad.jsonl"
    record = {"key": "k", "request": ask("q").to_dict(), "response": answer("a").to_dict()}
    cassette.write_text(json.dumps(record) + "\n{not json\n")
    with pytest.raises(ProviderConfigError, match=r"bad.jsonl:2"):
        open_provider(ProviderSettings(provider="replay", path=cassette))


def test_missing_cassette_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ProviderConfigError, match="cannot read cassette"):
        ReplayProvider.from_file(tmp_path / "absent.jsonl")

"""Issue 17, items 9 and 10 on the provider side: garbled 200 bodies are named and retried
within the transient policy; configured API keys never reach what a run writes or prints;
`api_key_env` names only API-key variables. Through the real providers and the loopback fake."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from openprose.cli import main
from openprose.providers import (
    ProviderConfigError,
    ProviderError,
    TransientProviderError,
    load_settings,
)
from openprose.providers.resilient import GarbledAnswerError, garbled_answer
from tests.openprose.providers.test_providers_http import REQUEST, SettingsFor, raised_by
from tests.support.fake_llm_server import FakeLLMServer, Fault

SECRET = "sk-test-ECHOED-BACK-9876"


@pytest.mark.parametrize(
    ("fault", "problem"),
    [
        ("garbage", "the body is not valid JSON|the server sent a non-JSON body"),
        ("cut_body", "the body is not valid JSON"),
        ("malformed", "the body is not valid JSON"),
        ("huge_number", "a number too long to read|the body is not valid JSON"),
        ("html", "the server sent a non-JSON body"),
    ],
)
async def test_a_garbled_200_body_is_named_and_retried_within_the_policy(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor, api: str, fault: str, problem: str
) -> None:
    fake_llm_server.script(*[Fault(fault)] * 5)
    caught = await raised_by(settings_for(), TransientProviderError)
    message = str(caught)
    assert message.startswith(f"{api} (model test-model): malformed response: "), message
    assert re.search(problem, message) and "SDK refused" not in message
    assert fake_llm_server.stats.attempts == 3  # FAST_RETRY's max_attempts, no more


async def test_a_garbled_body_then_a_good_one_succeeds(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor
) -> None:
    from openprose.providers import open_provider

    fake_llm_server.script(Fault("cut_body"), Fault("huge_number"))
    provider = open_provider(settings_for())
    try:
        response = await provider.complete(REQUEST)
    finally:
        await provider.aclose()
    assert response.text == "echo: hello fake"
    assert fake_llm_server.stats.attempts == 3


def test_only_decoding_errors_count_as_garbled() -> None:
    assert garbled_answer("p", "m", ValueError("max_tokens is too large")) is None
    assert garbled_answer("p", "m", KeyError("x")) is None  # type: ignore[arg-type]
    cut = garbled_answer("p", "m", json.JSONDecodeError("Unterminated string", '{"a', 1))
    assert isinstance(cut, GarbledAnswerError) and "not valid JSON" in str(cut)


async def test_an_echoed_key_is_redacted_from_the_error(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor
) -> None:
    fake_llm_server.script(Fault("echo_key"))
    caught = await raised_by(settings_for(api_key=SECRET), ProviderError)
    assert SECRET not in str(caught) and "[redacted]" in str(caught)


def test_an_echoed_key_reaches_no_file_and_no_output(
    fake_llm_server_process: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tests.support.fake_llm_server import script_faults

    monkeypatch.chdir(tmp_path)
    for name in ("PROSE_PROVIDER", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm_server_process + "/v1")
    (tmp_path / "p.prose").write_text('session "hello"\n')
    script_faults(fake_llm_server_process, Fault("echo_key"))
    code = main(["run", "p.prose", "--provider", "openai"])
    out, err = capsys.readouterr()
    assert code == 1 and "[redacted]" in err
    assert SECRET not in out + err
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {"journal.jsonl", "run.json", "state.md"} <= {p.name for p in written}
    for path in written:
        assert SECRET not in path.read_text(errors="replace"), f"key leaked into {path}"


@pytest.fixture(scope="module")
def fake_llm_server_process() -> Iterator[str]:
    from tests.support.fake_llm_server import start_in_subprocess

    base_url, stop = start_in_subprocess()
    try:
        yield base_url
    finally:
        stop()


@pytest.mark.parametrize(
    "variable", ["AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "HOME", "DATABASE_PASSWORD", "A-KEY"]
)
def test_api_key_env_must_name_an_api_key_variable(tmp_path: Path, variable: str) -> None:
    (tmp_path / "prose.toml").write_text(
        f'provider = "openai"\n[providers.openai]\napi_key_env = "{variable}"\n'
    )
    with pytest.raises(ProviderConfigError, match="must name an API key variable"):
        load_settings(tmp_path, env={variable: "s3cr3t-value"})


@pytest.mark.parametrize("variable", ["OPENAI_API_KEY", "MY_LLM_KEY", "groq_apikey"])
def test_api_key_env_accepts_api_key_names(tmp_path: Path, variable: str) -> None:
    (tmp_path / "prose.toml").write_text(
        f'provider = "openai"\n[providers.openai]\napi_key_env = "{variable}"\n'
    )
    assert load_settings(tmp_path, env={variable: "k-123456789"}).api_key == "k-123456789"

"""Provider selection, config files, aliases and `--model` overrides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openprose.providers import (
    ProviderConfigError,
    ProviderSettings,
    load_settings,
    open_provider,
    resolve_model,
)
from openprose.providers import settings as settings_module


@pytest.fixture
def no_local(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(settings_module, "local_model_installed", lambda: False)


@pytest.fixture
def with_local(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(settings_module, "local_model_installed", lambda: True)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# --- selection order -------------------------------------------------------------------


def test_explicit_provider_beats_everything(tmp_path: Path, with_local: None) -> None:
    write(tmp_path / "prose.toml", 'provider = "anthropic"\n')
    env = {"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "o", "PROSE_PROVIDER": "openai"}
    settings = load_settings(tmp_path, provider="local", env=env)
    assert (settings.provider, settings.source) == ("local", "--provider")


def test_prose_provider_env_beats_config(tmp_path: Path) -> None:
    write(tmp_path / "prose.toml", 'provider = "anthropic"\n')
    settings = load_settings(tmp_path, env={"PROSE_PROVIDER": "openai", "OPENAI_API_KEY": "o"})
    assert (settings.provider, settings.source) == ("openai", "PROSE_PROVIDER")


def test_config_beats_api_keys(tmp_path: Path) -> None:
    config = write(tmp_path / "prose.toml", 'provider = "openai"\n')
    settings = load_settings(tmp_path, env={"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "o"})
    assert (settings.provider, settings.api_key, settings.source) == ("openai", "o", str(config))


def test_anthropic_key_comes_before_openai(tmp_path: Path, with_local: None) -> None:
    settings = load_settings(tmp_path, env={"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "o"})
    assert (settings.provider, settings.api_key) == ("anthropic", "a")
    assert settings.endpoints["openai"].api_key == "o"


def test_openai_key_is_next(tmp_path: Path, with_local: None) -> None:
    settings = load_settings(tmp_path, env={"OPENAI_API_KEY": "o"})
    assert (settings.provider, settings.api_key, settings.base_url) == ("openai", "o", None)


def test_openai_base_url_alone_selects_openai(tmp_path: Path, with_local: None) -> None:
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"}
    settings = load_settings(tmp_path, env=env)
    assert (settings.provider, settings.source) == ("openai", "OPENAI_BASE_URL")
    assert settings.base_url == "http://127.0.0.1:11434/v1" and settings.api_key is None


def test_local_when_installed_and_nothing_else(tmp_path: Path, with_local: None) -> None:
    assert load_settings(tmp_path, env={}).provider == "local"


def test_nothing_configured_says_how_to_configure(tmp_path: Path, no_local: None) -> None:
    with pytest.raises(ProviderConfigError) as caught:
        load_settings(tmp_path, env={})
    message = str(caught.value)
    for hint in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "[local]'"):
        assert hint in message


def test_empty_key_variables_do_not_count(tmp_path: Path, no_local: None) -> None:
    with pytest.raises(ProviderConfigError):
        load_settings(tmp_path, env={"ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": ""})


def test_unknown_provider_names_the_choices(tmp_path: Path) -> None:
    with pytest.raises(ProviderConfigError, match="unknown provider 'gemini'.*anthropic"):
        load_settings(tmp_path, provider="gemini", env={})


def test_file_providers_need_a_path(tmp_path: Path) -> None:
    with pytest.raises(ProviderConfigError, match="replay:PATH"):
        load_settings(tmp_path, provider="replay", env={})
    settings = load_settings(tmp_path, provider="scripted:rules.yaml", env={})
    assert (settings.provider, settings.path) == ("scripted", Path("rules.yaml"))


def test_file_provider_path_in_config_is_relative_to_the_config(tmp_path: Path) -> None:
    write(tmp_path / "prose.toml", 'provider = "replay:fixtures/run.jsonl"\n')
    settings = load_settings(tmp_path, env={})
    assert settings.path == tmp_path / "fixtures" / "run.jsonl"


# --- config files ----------------------------------------------------------------------

PROSE_TOML = """
provider = "openai"
max_concurrency = 4
timeout = 30

[retry]
max_attempts = 2
base_delay = 0.25

[providers.openai]
base_url = "http://127.0.0.1:8000/v1"
api_key_env = "MY_LLM_KEY"

[providers.openai.models]
sonnet = "qwen2.5:7b"
opus = "anthropic:claude-opus-5-5"
"""


def test_prose_toml_sets_everything(tmp_path: Path) -> None:
    write(tmp_path / "prose.toml", PROSE_TOML)
    settings = load_settings(tmp_path, env={"MY_LLM_KEY": "secret", "ANTHROPIC_API_KEY": "a"})
    assert settings.provider == "openai"
    assert settings.base_url == "http://127.0.0.1:8000/v1"
    assert settings.api_key == "secret"
    assert (settings.max_concurrency, settings.timeout) == (4, 30.0)
    assert (settings.retry.max_attempts, settings.retry.base_delay) == (2, 0.25)
    assert settings.retry.max_delay == 30.0  # untouched default
    # colon inside an Ollama-style id is not a provider prefix
    assert resolve_model("sonnet", settings) == ("openai", "qwen2.5:7b")
    assert resolve_model("opus", settings) == ("anthropic", "claude-opus-5-5")
    assert resolve_model("haiku", settings) == ("openai", "gpt-4.1-nano")  # default alias
    assert settings.endpoint("anthropic").api_key == "a"


def test_pyproject_tool_prose_is_read_when_there_is_no_prose_toml(tmp_path: Path) -> None:
    write(
        tmp_path / "pyproject.toml",
        '[project]\nname = "x"\n\n[tool.prose]\nprovider = "anthropic"\n'
        '[tool.prose.providers.anthropic.models]\nsonnet = "claude-sonnet-4-5"\n',
    )
    settings = load_settings(tmp_path, env={"ANTHROPIC_API_KEY": "a"})
    assert settings.provider == "anthropic"
    assert resolve_model("sonnet", settings) == ("anthropic", "claude-sonnet-4-5")


def test_prose_toml_wins_over_pyproject(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.prose]\nprovider = "anthropic"\n')
    write(tmp_path / "prose.toml", 'provider = "openai"\n')
    assert load_settings(tmp_path, env={}).provider == "openai"


def test_api_key_in_config_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "prose.toml", '[providers.openai]\napi_key = "sk-live"\n')
    with pytest.raises(ProviderConfigError, match="api_key_env") as caught:
        load_settings(tmp_path, provider="openai", env={})
    assert "sk-live" not in str(caught.value)


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    config = write(tmp_path / "prose.toml", "provider = \n")
    with pytest.raises(ProviderConfigError, match=r"prose.toml:1:12: invalid TOML: "):
        load_settings(tmp_path, env={})
    assert config.exists()


def test_wrong_types_are_reported(tmp_path: Path) -> None:
    write(tmp_path / "prose.toml", 'max_concurrency = "lots"\nprovider = "local"\n')
    with pytest.raises(ProviderConfigError, match="max_concurrency.*number"):
        load_settings(tmp_path, env={})


# --- aliases and overrides -------------------------------------------------------------


def test_default_aliases_per_provider() -> None:
    anthropic = ProviderSettings(provider="anthropic")
    assert resolve_model("sonnet", anthropic) == ("anthropic", "claude-sonnet-5-5")
    assert resolve_model("opus", anthropic) == ("anthropic", "claude-opus-5-5")
    assert resolve_model("haiku", anthropic) == ("anthropic", "claude-haiku-5-5")
    assert resolve_model("sonnet", ProviderSettings(provider="openai")) == (
        "openai",
        "gpt-4.1-mini",
    )


def test_every_alias_maps_to_the_embedded_model_for_local() -> None:
    local = ProviderSettings(provider="local")
    assert {resolve_model(a, local) for a in ("sonnet", "opus", "x")} == {
        ("local", "smollm2-135m-instruct")
    }


def test_unknown_names_pass_through_as_model_ids() -> None:
    settings = ProviderSettings(provider="anthropic")
    assert resolve_model("claude-3-5-haiku-latest", settings) == (
        "anthropic",
        "claude-3-5-haiku-latest",
    )
    assert resolve_model("openai:gpt-4o", settings) == ("openai", "gpt-4o")


def test_model_overrides_beat_config(tmp_path: Path) -> None:
    write(tmp_path / "prose.toml", PROSE_TOML)
    settings = load_settings(
        tmp_path,
        model_overrides=["sonnet=anthropic:claude-haiku-5-5", "fast=llama3.2:1b"],
        max_concurrency=7,
        env={},
    )
    assert resolve_model("sonnet", settings) == ("anthropic", "claude-haiku-5-5")
    assert resolve_model("fast", settings) == ("openai", "llama3.2:1b")
    assert settings.max_concurrency == 7


def test_replay_and_scripted_runs_answer_every_alias_themselves(tmp_path: Path) -> None:
    settings = load_settings(
        tmp_path, provider="replay:run.jsonl", model_overrides=["opus=openai:gpt-4.1"], env={}
    )
    assert resolve_model("opus", settings) == ("replay", "gpt-4.1")
    assert resolve_model("sonnet", settings) == ("replay", "sonnet")
    scripted = ProviderSettings(provider="scripted", path=Path("rules.yaml"))
    assert resolve_model("anthropic:haiku", scripted) == ("scripted", "claude-haiku-5-5")


def test_an_override_to_another_provider_uses_that_providers_aliases(tmp_path: Path) -> None:
    write(
        tmp_path / "prose.toml",
        '[providers.anthropic.models]\nbig = "claude-opus-4-1"\n',
    )
    settings = load_settings(
        tmp_path, provider="openai", model_overrides=["opus=anthropic:big"], env={}
    )
    assert resolve_model("opus", settings) == ("anthropic", "claude-opus-4-1")
    assert resolve_model("anthropic:haiku", settings) == ("anthropic", "claude-haiku-5-5")
    assert resolve_model("big", settings) == ("openai", "big")  # not an openai alias


def test_an_override_naming_only_a_provider_uses_its_model_for_the_alias(
    tmp_path: Path,
) -> None:
    settings = load_settings(
        tmp_path,
        provider="anthropic",
        model_overrides=["haiku=local", "opus=openai", "sonnet=anthropic"],
        env={"ANTHROPIC_API_KEY": "k"},
    )
    assert resolve_model("haiku", settings) == ("local", "smollm2-135m-instruct")
    assert resolve_model("opus", settings) == ("openai", "gpt-4.1")
    assert resolve_model("sonnet", settings) == ("anthropic", "claude-sonnet-5-5")


@pytest.mark.parametrize("bad", ["sonnet", "=openai:gpt-4o", "sonnet="])
def test_malformed_model_override(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ProviderConfigError, match="ALIAS=PROVIDER:MODEL"):
        load_settings(tmp_path, provider="local", model_overrides=[bad], env={})


def test_api_keys_never_appear_in_repr_or_public_dict(tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": "sk-very-secret", "ANTHROPIC_API_KEY": "sk-ant-other-secret"}
    settings = load_settings(tmp_path, provider="openai", env=env)
    assert settings.endpoint("anthropic").api_key == "sk-ant-other-secret"
    public = json.dumps(settings.public_dict())
    for text in (repr(settings), public):
        assert "sk-very-secret" not in text and "sk-ant-other-secret" not in text
    assert json.loads(public)["provider"] == "openai"


# --- open_provider configuration errors -------------------------------------------------


def test_anthropic_without_key_says_which_variable() -> None:
    with pytest.raises(ProviderConfigError, match="ANTHROPIC_API_KEY"):
        open_provider(ProviderSettings(provider="anthropic"))


def test_openai_without_key_or_url_says_what_to_set() -> None:
    with pytest.raises(ProviderConfigError, match="OPENAI_API_KEY.*OPENAI_BASE_URL"):
        open_provider(ProviderSettings(provider="openai"))


async def test_openai_compatible_server_needs_no_key() -> None:
    provider = open_provider(ProviderSettings(provider="openai", base_url="http://127.0.0.1:9/v1"))
    try:
        assert provider.name == "openai"
    finally:
        await provider.aclose()


def test_override_to_a_file_provider_is_refused() -> None:
    with pytest.raises(ProviderConfigError, match="--provider replay:FILE"):
        open_provider(ProviderSettings(provider="anthropic", api_key="a"), "replay")


def test_default_aliases_name_a_model_of_their_own_tier() -> None:
    # Claude aliases name their family; the OpenAI stand-ins keep the tiers' order of price
    # (opus dearest, haiku cheapest), so `model: haiku` never costs more than `sonnet`.
    from openprose.providers.prices import Prices
    from openprose.providers.settings import DEFAULT_ALIASES

    for alias, model in DEFAULT_ALIASES["anthropic"].items():
        assert model.startswith(f"claude-{alias}-"), (alias, model)
    table = Prices.default()
    found = {alias: table.price_of(model) for alias, model in DEFAULT_ALIASES["openai"].items()}
    assert None not in found.values(), found
    cost = {alias: price.cost(1000, 1000) for alias, price in found.items() if price}
    assert cost["opus"] > cost["sonnet"] > cost["haiku"]


def test_the_documented_alias_table_is_the_one_in_use() -> None:
    import re

    from openprose.providers.settings import DEFAULT_ALIASES

    doc = (Path(__file__).parents[3] / "docs" / "providers.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+)` \| `([^`]+)` \| `([^`]+)` \|", doc, re.MULTILINE)
    documented = {alias: (claude, gpt) for alias, claude, gpt in rows}
    assert documented == {
        alias: (DEFAULT_ALIASES["anthropic"][alias], DEFAULT_ALIASES["openai"][alias])
        for alias in DEFAULT_ALIASES["anthropic"]
    }


def test_default_aliases_are_models_an_installed_sdk_knows() -> None:
    # The SDKs are no dependency; where one happens to be installed, its list of current
    # model ids (Literal types) is a second opinion on staleness.
    from typing import get_args

    from openprose.providers.settings import DEFAULT_ALIASES

    checked = 0
    try:
        from anthropic.types.model import Model
    except ImportError:
        pass
    else:
        assert set(DEFAULT_ALIASES["anthropic"].values()) <= set(get_args(get_args(Model)[0]))
        checked += 1
    try:
        from openai.types.chat_model import ChatModel
    except ImportError:
        pass
    else:
        assert set(DEFAULT_ALIASES["openai"].values()) <= set(get_args(ChatModel))
        checked += 1
    if not checked:
        pytest.skip("neither the anthropic nor the openai SDK is installed (not a dependency)")


# --- unknown keys ------------------------------------------------------------------------


def test_unknown_keys_warn_one_line_each_and_settings_still_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = write(
        tmp_path / "prose.toml",
        'provder = "openai"\nprovider = "scripted:r.yaml"\n[retry]\nmax_attempt = 2\n'
        '[providers.nope]\nx = 1\n[providers.openai]\nbase_ur = "http://x"\n'
        "[vm]\ncontext_budget = 5\n",
    )
    settings = load_settings(tmp_path, env={})
    assert settings.provider == "scripted"
    lines = capsys.readouterr().err.splitlines()
    unknown = [
        ("provder", "provider"),
        ("retry.max_attempt", "retry.max_attempts"),
        ("providers.nope", "providers.openai"),
        ("providers.openai.base_ur", "providers.openai.base_url"),
    ]
    assert lines == [
        f"prose: warning: {toml}: unknown key `{key}` ignored (did you mean `{close}`?)"
        for key, close in unknown
    ]


def test_known_keys_give_no_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(
        tmp_path / "prose.toml",
        'provider = "openai"\nmax_concurrency = 2\ntimeout = 5\nregistry = "https://r"\n'
        '[retry]\nmax_attempts = 2\n[providers.openai]\nbase_url = "http://x"\n'
        '[providers.openai.models]\nsonnet = "gpt"\n[vm]\nmax_depth = 3\n',
    )
    load_settings(tmp_path, env={})
    assert capsys.readouterr().err == ""

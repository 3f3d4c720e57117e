"""``prose config [PROGRAM]``: which settings file and which provider a run would use, and why.

The settings file is found as ``prose run`` finds it (see ``openprose.project``): walking up
from the program's folder (or the working directory), the nearest ``prose.toml`` or
``pyproject.toml`` with ``[tool.prose]``. The provider is chosen as ``prose run`` chooses it:
``--provider``, then ``PROSE_PROVIDER``, then the settings file, then API-key variables,
then the installed local model. Exit status 0 when a provider would be used; 2 when none
would (none configured, a settings file that cannot be read, a bad `--provider`: the reason
is printed) or for a PROGRAM that is not a file — as `prose run` exits 2 without a provider
(README.md, "Exit status").
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "program", nargs="?", metavar="PROGRAM", help="the program a run would start (optional)"
    )
    parser.add_argument("--provider", metavar="NAME", help="as `prose run --provider`")
    parser.add_argument(
        "--model", action="append", default=[], metavar="ALIAS=PROVIDER:MODEL", help="as run"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from openprose.project import find_project
    from openprose.providers import ProviderConfigError, load_settings
    from openprose.providers.settings import resolve_model

    if args.program and args.program != "-" and not Path(args.program).is_file():
        from openprose.files import unreadable_reason

        reason = unreadable_reason(Path(args.program)) or "not a regular file"
        print(f"prose: {args.program}: {reason}", file=sys.stderr)
        return 2
    start = Path(args.program).parent if args.program else Path.cwd()
    project = find_project(start)
    shown: dict[str, Any] = {
        "project": str(project.root),
        "settings_file": str(project.settings_file) if project.settings_file else None,
        "why": project.explain(),
    }
    status = 0
    try:
        settings = load_settings(project.root, provider=args.provider, model_overrides=args.model)
    except ProviderConfigError as error:
        shown["provider"] = None
        shown["provider_error"] = str(error)
        status = 2  # a run would not start: usage, as `prose run` says it
    else:
        aliases = (
            "sonnet",
            "opus",
            "haiku",
            *sorted(set(settings.aliases) - {"sonnet", "opus", "haiku"}),
        )
        shown["provider"] = settings.provider
        shown["provider_source"] = settings.source
        if settings.provider in ("openai", "anthropic"):  # where requests go, and the key
            shown["base_url"] = settings.base_url or _default_url(settings.provider)
            shown["api_key"] = "set" if settings.api_key else "not set"
        if settings.path is not None:
            shown["provider_file"] = str(settings.path)
        shown["models"] = {alias: ":".join(resolve_model(alias, settings)) for alias in aliases}
        shown["max_concurrency"] = settings.max_concurrency
    if args.json:
        print(json.dumps(shown, indent=2, ensure_ascii=False))
        return status
    print(f"project:   {shown['project']}")
    print(f"settings:  {shown['settings_file'] or 'none (defaults)'}")
    print(f"           {shown['why']}")
    if shown["provider"] is None:
        print("provider:  none")
        print(_indent(shown["provider_error"]), file=sys.stderr)
        return status
    source = shown["provider_source"]
    print(f"provider:  {shown['provider']}  (chosen by {source})")
    if "provider_file" in shown:
        print(f"           file {shown['provider_file']}")
    if "base_url" in shown:
        print(f"base_url:  {shown['base_url']}  (API key {shown['api_key']})")
    for alias, target in shown["models"].items():
        print(f"model:     {alias} -> {target}")
    print(f"max_concurrency: {shown['max_concurrency']}")
    return status


def _default_url(provider: str) -> str:
    """Where `provider` sends requests when no base URL is configured."""
    if provider == "anthropic":
        from openprose.providers import anthropic

        return anthropic.DEFAULT_BASE_URL
    from openprose.providers import openai

    return openai.DEFAULT_BASE_URL


def _indent(text: str) -> str:
    return "\n".join(
        "prose: " + line if i == 0 else "       " + line for i, line in enumerate(text.splitlines())
    )

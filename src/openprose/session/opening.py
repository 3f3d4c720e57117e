"""Opening a run from a user's settings: the program read and checked, its inputs, its
imports, the provider, the VM settings, prices and the tool runtime — each a step that fails
with a `UsageError` naming what to fix. `prose run`, `prose resume`, `prose batch` and the
Python API (`openprose.session.launch`) all open runs with these.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from openprose.project import Project as ProjectInfo
    from openprose.providers.base import Provider
    from openprose.providers.settings import ProviderSettings
    from openprose.session.options import RunOptions
    from openprose.telemetry.spans import Tracer

STDIN = "-"  # a program or inputs read from standard input


class UsageError(Exception):
    """Reported on stderr as `prose: ...`; exit status 2. `diagnostics` (as `prose check
    --format json` gives them) go into the `--json` object too."""

    def __init__(self, message: str, diagnostics: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.diagnostics = diagnostics or []


def launch_spec(spec: str | None, settings: ProviderSettings) -> str | None:
    """The `--provider` value recorded for `prose resume`, with the `replay:`/`scripted:` file
    made absolute (`scripted:rules.yaml` -> `scripted:/abs/rules.yaml`) so a resume from
    elsewhere finds it. A replay run id or prefix is recorded as the journal it resolved to:
    resolved again later, a prefix could match other runs, this one included."""
    if spec is None:
        return None
    name, sep, path = spec.partition(":")
    if sep and name in ("replay", "scripted") and path and settings.path is not None:
        return f"{name}:{settings.path.resolve()}"
    return spec


PERMISSION_MODES = ("default", "plan")


def run_tools(project: Path, options: RunOptions) -> Any:
    """The tool runtime of a run opened with `options`: `tool_runtime` with the options'
    `--yes`, interactivity and permission mode."""
    return tool_runtime(
        project,
        options.yes,
        interactive=options.interactive,
        permission_mode=options.permission_mode,
    )


def tool_runtime(
    project: Path, yes: bool, *, interactive: bool = True, permission_mode: str = "default"
) -> Any:
    """Who answers `prompt` permissions — `--yes`, else the person at the terminal, else
    nobody (the run then waits for `prose approve`) — and who answers an `ask` (the
    terminal, else nobody: the run waits for `prose answer`) — the project's default permissions
    (`[permissions]` of prose.toml), the sandbox's limits (`[sandbox]`) and the permission
    mode (`plan`: read-only). `interactive=False` (the Python API, batches) never asks at a
    terminal."""
    from openprose.vm.questions import NobodyAsker, TerminalAsker
    from openprose.vm.runtime import ToolRuntime
    from openprose.vm.tools import NobodyApprover, PreApprover, TerminalApprover

    if permission_mode not in PERMISSION_MODES:
        raise UsageError(
            f"unknown permission mode {permission_mode!r}; known: {', '.join(PERMISSION_MODES)}"
        )
    settings = project_settings(project)
    limits = None
    if "sandbox" in settings:
        from openprose.vm.tools.limits import LimitsProblem, limits_from_table

        try:
            limits = limits_from_table(settings["sandbox"])
        except LimitsProblem as error:
            raise UsageError(str(error)) from None
    table = settings.get("permissions", {})
    default: dict[str, Any] = {}
    if table != {}:  # the permission rules load only for a project that sets some
        from openprose.vm.tools.permissions import PermissionError_, validate_default

        try:
            default = validate_default(table, "prose.toml")
        except PermissionError_ as error:
            raise UsageError(str(error)) from None
    servers: dict[str, Any] = {}
    if "mcp" in settings:  # the MCP client loads only for a project that declares servers
        from openprose.vm.tools.mcp_config import McpConfigError, servers_from_settings

        try:
            servers = servers_from_settings(settings, "prose.toml")
        except McpConfigError as error:
            raise UsageError(str(error)) from None
    approver: Any
    at_terminal = interactive and sys.stdin.isatty() and sys.stderr.isatty()
    if yes:
        approver = PreApprover()
    elif at_terminal:
        approver = TerminalApprover()
    else:
        approver = NobodyApprover()
    # `--yes` approves tool calls only: an `ask` is still put to the person at the terminal
    asker = TerminalAsker() if at_terminal else NobodyAsker()
    return ToolRuntime(
        approver=approver,
        asker=asker,
        default_permissions=default,
        sandbox_limits=limits,
        plan=permission_mode == "plan",
        mcp_servers=servers,
    )


def parse_and_check(path: Path, project: Path, stream: TextIO) -> Any:
    """The parse of `path` when it has no errors; otherwise its diagnostics are printed on
    `stream` like `prose check` prints them, and a `UsageError` carrying them is raised."""
    from openprose.checker import diagnose
    from openprose.files import unreadable_reason
    from openprose.parser import PROGRAM_LIMIT, decode_source, parse, read_source

    if str(path) == STDIN:
        source, problems = decode_source(sys.stdin.buffer.read(PROGRAM_LIMIT + 1), "<stdin>")
    elif (reason := unreadable_reason(path)) is not None:
        raise UsageError(f"{path}: {reason}")
    else:
        source, problems = read_source(path)
    if source is not None and source.path != (shown := recordable_name(source.path)):
        # a file name that is not UTF-8 (legal on Linux) is recorded as shown, U+FFFD for
        # its undecodable bytes: run.json, state.md and the audit trail are UTF-8
        source = replace(source, path=shown)
    if source is None:
        print_diagnostics(list(problems), None, stream)
        why = problems[0].message if problems else "cannot be read"  # E100 / E118
        why = why[:1].lower() + why[1:]
        raise UsageError(f"{path}: {why}", [d.to_dict() for d in problems])
    parsed = parse(source)
    diagnostics = diagnose(parsed, project)
    errors = [d for d in diagnostics if d.is_error]
    if errors:
        print_diagnostics(diagnostics, source, stream)
        raise UsageError(
            f"{path}: {len(errors)} error(s); the program was not run",
            [d.to_dict() for d in diagnostics],
        )
    if diagnostics:
        print_diagnostics(diagnostics, source, sys.stderr)
    return parsed


def recordable_name(name: str) -> str:
    """`name` with the undecodable bytes of a non-UTF-8 file name (surrogate escapes) as
    U+FFFD, so that it can be written to the run's UTF-8 files."""
    try:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # a lone surrogate no file system gave (the Python API)
        return name.encode("utf-8", "replace").decode("utf-8")


def print_diagnostics(diagnostics: Any, source: Any, stream: Any) -> None:
    """As `prose check` prints them (its module loads only when there is something to say)."""
    from openprose.diagnostic_text import print_diagnostics as print_them

    print_them(list(diagnostics), source, stream)


def project_settings(project: Path) -> dict[str, Any]:
    """The OpenProse table of the project (see `read_config`), a bad file a usage error."""
    from openprose.providers import ProviderConfigError
    from openprose.providers.settings import read_config

    try:
        return read_config(project)[0]
    except ProviderConfigError as error:
        raise UsageError(str(error)) from None


def local_budget(settings: ProviderSettings) -> int | None:
    """The context budget cap of a run that may send to the embedded model, else None."""
    from openprose.providers.settings import LOCAL_CONTEXT_BUDGET, providers_in_use

    return LOCAL_CONTEXT_BUDGET if "local" in providers_in_use(settings) else None


def vm_config(
    project: Path,
    max_concurrency: int,
    evaluator: str | None,
    budget_cap: int | None = None,
    *,
    budgets: dict[str, Any] | None = None,
) -> Any:
    """VM settings: the `[vm]` table of prose.toml (or `[tool.prose.vm]` in pyproject.toml),
    e.g. `context_budget = 100000`, `retry_base_delay = 0.5`, `default_model = "haiku"`,
    `max_sessions = 200`; command-line options (`budgets`: --max-sessions...) win. Without
    a `context_budget` of the user's, `budget_cap` (the embedded model's window) lowers the
    default."""
    from dataclasses import fields, replace

    from openprose.vm.runner import VMConfig

    table = project_settings(project).get("vm", {})
    if not isinstance(table, dict):
        raise UsageError("the [vm] setting must be a table")
    defaults = VMConfig()
    if "max_concurrency" in table:
        # One limit, owned by the provider settings (docs/decisions.md, VM section).
        raise _placed(
            project,
            "max_concurrency",
            "max_concurrency is not a [vm] setting: write `max_concurrency = N` at the top "
            "level of prose.toml (or pass --max-concurrency N)",
        )
    known = [f.name for f in fields(VMConfig) if f.name != "max_concurrency"]
    unknown = sorted(set(table) - set(known))
    if unknown:
        raise _placed(
            project,
            unknown[0],
            f"unknown [vm] setting(s): {', '.join(unknown)}; known: {', '.join(known)}",
        )
    for key, value in table.items():
        try:
            check_vm_setting(key, value, getattr(defaults, key))
        except UsageError as error:
            raise _placed(project, key, str(error)) from None
    config = replace(defaults, **table, max_concurrency=max_concurrency)
    config = replace(config, **(budgets or {}))
    if budget_cap is not None and "context_budget" not in table:
        config = replace(config, context_budget=min(config.context_budget, budget_cap))
    return replace(config, evaluator_model=evaluator) if evaluator else config


def check_evaluator(evaluator: str | None, settings: ProviderSettings) -> None:
    """`--evaluator` names a model alias of the run or `PROVIDER:MODEL`: anything else (a
    typo, `gpt4`) would fail only at the first judgment, after sessions were paid for."""
    from cliconventions import did_you_mean
    from openprose.providers.settings import DEFAULT_ALIASES, PROVIDER_NAMES

    if evaluator is None:
        return
    standard = {alias for table in DEFAULT_ALIASES.values() for alias in table}
    aliases = sorted({*standard, *settings.aliases})
    provider, colon, model = evaluator.partition(":")
    if evaluator in aliases or (colon and provider in PROVIDER_NAMES and model):
        return
    guess = did_you_mean(evaluator, aliases)
    hint = f"did you mean '{guess}'? " if guess else ""
    raise UsageError(
        f"--evaluator {evaluator!r} is not a model alias of this run ({hint}aliases: "
        f"{', '.join(aliases)}); name a model as PROVIDER:MODEL (--evaluator "
        f"openai:{evaluator}) or map an alias to it (--model judge=openai:{evaluator} "
        "--evaluator judge)"
    )


def _placed(project: Path, key: str, problem: str) -> UsageError:
    """`problem` with the place of `[vm] key` in the project's settings file in front."""
    from openprose.providers.settings import read_config

    where = setting_place(read_config(project)[1], "vm", key)
    return UsageError(f"{where}: {problem}" if where else problem)


def setting_place(path: Path | None, table: str, key: str) -> str:
    """`FILE:LINE` of `key` in the `[table]` (or `[tool.prose.table]`) of a settings file;
    `FILE` when the line is not found (an inline table, a dotted key); "" without a file."""
    if path is None:
        return ""
    wanted = (f"[{table}]", f"[tool.prose.{table}]")
    inside = False
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return str(path)
    for number, line in enumerate(lines, 1):
        text = line.split("#")[0].strip()
        if text.startswith("["):
            inside = text in wanted
        elif inside and text.partition("=")[0].strip().strip("\"'") == key:
            return f"{path}:{number}"
    return str(path)


def check_vm_setting(key: str, value: object, default: object) -> None:
    """A [vm] value must have its default's type: true/false, text, or a positive number (an
    integer where the default is one; `retry_base_delay` may also be 0)."""
    if key in BUDGET_KINDS:
        default = BUDGET_KINDS[key](1)
    if isinstance(default, bool):  # before int: a bool is an int to Python
        if not isinstance(value, bool):
            raise UsageError(f"[vm] {key} must be true or false, got {value!r}")
        return
    if isinstance(default, str):
        if not isinstance(value, str) or not value.strip():
            raise UsageError(f"[vm] {key} must be a non-empty string, got {value!r}")
        return
    number = (int,) if isinstance(default, int) else (int, float)
    if isinstance(value, bool) or not isinstance(value, number):
        kind = "an integer" if isinstance(default, int) else "a number"
        raise UsageError(f"[vm] {key} must be {kind}, got {value!r}")
    from openprose.providers.settings import setting_out_of_range

    problem = setting_out_of_range(value)
    if problem:
        raise UsageError(f"[vm] {key} {problem}")
    if value < 0 or (value == 0 and key != "retry_base_delay"):
        raise UsageError(f"[vm] {key} must be positive, got {value!r}")


def run_prices(project: Path) -> Any:
    """The price table: the packaged one, extended by `[prices]` of prose.toml."""
    from openprose.providers import ProviderConfigError
    from openprose.providers.prices import Prices

    table = project_settings(project).get("prices")
    if table is None:
        return Prices.default()
    try:
        return Prices.default().extended(table)
    except ProviderConfigError as error:
        raise UsageError(str(error)) from None


def cost_is_enforceable(program: Any, config: Any, settings: Any, prices: Any) -> None:
    """`--max-cost` needs the price of every model the run may use: refuse it up front,
    naming each model without one and how to give it, rather than run unguarded."""
    if config.max_cost is None:
        return
    from openprose.providers import ProviderConfigError
    from openprose.providers.settings import resolve_model
    from openprose.vm.budget import models_named

    missing = []
    for alias in sorted(models_named(program, config)):
        try:
            provider, model = resolve_model(alias, settings)
        except ProviderConfigError as error:
            raise UsageError(str(error)) from None
        if prices.price_of(model) is None:
            shown = model if alias == model else f"{model} (alias {alias})"
            missing.append((model, f"{provider}:{shown}"))
    if missing:
        names = ", ".join(shown for _, shown in missing)
        first = missing[0][0]
        raise UsageError(
            f"--max-cost cannot be kept: no price for {names}; give each model a price in "
            f'prose.toml, e.g. [prices."{first}"] input = 1.0 output = 5.0 (USD per million '
            f"tokens), or drop --max-cost"
        )


def registry_base(project: Path) -> str:
    """Where `use "@handle/slug"` is fetched from: `$PROSE_REGISTRY`, else `registry = "URL"`
    in prose.toml (or `[tool.prose]`), else https://p.prose.md."""
    from openprose.imports import DEFAULT_REGISTRY

    configured = os.environ.get("PROSE_REGISTRY") or project_settings(project).get("registry")
    if configured is None:
        return DEFAULT_REGISTRY
    if not isinstance(configured, str) or not configured.startswith(("http://", "https://")):
        raise UsageError(f"registry must be an http(s):// URL, got {configured!r}")
    return configured


INPUTS_LIMIT = 64 * 1024 * 1024  # bytes of an --inputs file


def read_inputs(pairs: list[str], json_file: str | None) -> dict[str, Any]:
    inputs: dict[str, Any] = {}
    if json_file:
        data = _inputs_file(json_file)
        if not isinstance(data, dict):
            raise UsageError(f"--inputs {json_file}: expected a JSON object of inputs")
        inputs.update(data)
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"bad --input {pair!r}: write NAME=VALUE")
        inputs[name.strip()] = value
    _recordable(inputs, f"--inputs {json_file}" if json_file else "--input")
    return inputs


def _recordable(inputs: dict[str, Any], where: str) -> None:
    """Inputs are recorded in run.json: refuse what cannot be (a lone surrogate such as
    `"\\udd89"`, which is not text; nesting deeper than the run record allows)."""
    import orjson

    try:
        orjson.dumps(inputs)
    except orjson.JSONEncodeError as error:
        raise UsageError(f"{where}: cannot be recorded in the run: {error}") from None


def _inputs_file(json_file: str) -> Any:
    """The JSON value of an --inputs file; any problem is a usage error naming the file."""
    from openprose.files import FileProblem, MiB, read_limited
    from openprose.vm.heap import give_big_blocks_back

    give_big_blocks_back()  # the file's bytes and text are freed for good once parsed
    try:
        if json_file == STDIN:  # `--inputs -`
            data = sys.stdin.buffer.read(INPUTS_LIMIT + 1)
            if len(data) > INPUTS_LIMIT:
                raise FileProblem(f"<stdin>: larger than the {INPUTS_LIMIT // MiB} MiB limit")
        else:
            data = read_limited(Path(json_file), INPUTS_LIMIT)
        return json.loads(data.decode("utf-8"))
    except FileProblem as problem:
        raise UsageError(f"--inputs {problem}") from None
    except UnicodeDecodeError as error:
        raise UsageError(f"--inputs {json_file}: not UTF-8 (byte {error.start})") from None
    except json.JSONDecodeError as error:
        raise UsageError(
            f"--inputs {json_file}:{error.lineno}:{error.colno}: invalid JSON ({error.msg})"
        ) from None
    except ValueError as error:  # a number of over 4,300 digits
        raise UsageError(f"--inputs {json_file}: invalid JSON ({error})") from None
    except RecursionError:
        raise UsageError(f"--inputs {json_file}: JSON nested too deeply") from None


def ask_missing_inputs(parsed: Any, inputs: dict[str, Any], ask: TextIO, answer: TextIO) -> None:
    """The reference VM (prose.md, Input Binding Semantics): a top-level input with no value
    is asked for before execution begins. `prose run` at a terminal asks on `ask` and reads
    one line per input from `answer`; an empty line or the end of input leaves it missing
    (then E026 says how to pass it)."""
    from openprose import nodes as n

    for stmt in parsed.program.body:
        if not isinstance(stmt, n.Input) or stmt.name.id in inputs:
            continue
        ask.write(f"input {stmt.name.id} ({stmt.text}): ")
        ask.flush()
        line = answer.readline()
        if not line:
            ask.write("\n")
            return
        value = line.rstrip("\r\n")
        if value:
            inputs[stmt.name.id] = value


def inputs_match(parsed: Any, inputs: dict[str, Any], stream: TextIO) -> None:
    """Inputs the program declares but were not given (E026) and inputs given that it does
    not declare (E027) are printed as diagnostics on `stream` and raised as a `UsageError`."""
    from openprose import nodes as n

    declared = {s.name.id: s for s in parsed.program.body if isinstance(s, n.Input)}
    path = parsed.program.path
    # (line, column, end_line, end_column, code, message): the `prose check --format json` shape
    problems: list[tuple[int | None, int | None, int | None, int | None, str, str]] = [
        (
            s.span.line,
            s.span.column,
            s.span.end_line,
            s.span.end_column,
            "E026",
            f"missing required input '{name}' ({s.text}); pass --input {name}=VALUE",
        )
        for name, s in declared.items()
        if name not in inputs
    ]
    problems += [
        (
            None,
            None,
            None,
            None,
            "E027",
            f"unknown input '{name}'; the program declares: {', '.join(declared) or 'none'}",
        )
        for name in inputs
        if name not in declared
    ]
    if not problems:
        return
    for line, column, _, _, code, message in problems:
        where = f"{path}:{line}:{column}" if line is not None else path
        print(f"{where}: {code} {message}", file=stream)
    raise UsageError(
        f"{path}: {len(problems)} input error(s); the program was not run",
        [
            {
                "path": path,
                "line": line,
                "column": column,
                "end_line": end_line,
                "end_column": end_column,
                "code": code,
                "severity": "error",
                "message": message,
            }
            for line, column, end_line, end_column, code, message in problems
        ],
    )


def offline_wanted(flag: bool = False) -> bool:
    """`--offline`, or PROSE_OFFLINE set to anything but empty / 0 / false / no."""
    value = os.environ.get("PROSE_OFFLINE", "").strip().lower()
    return flag or value not in ("", "0", "false", "no")


def load_imports_or_fail(
    program: Any,
    base_dir: Path,
    project: Path,
    pinned: dict[str, str] | None = None,
    *,
    update_pins: bool = False,
    offline: bool | None = None,
) -> Any:
    """The programs `program` imports (fetched, cached, pinned) and the registry and URL
    skills its agents use, installed under `.prose/skills/` as pinned in prose.lock.
    `pinned` (a resume): the import hashes the run started with, read from the cache."""
    from openprose import nodes as n

    if not any(isinstance(s, n.Use) for s in program.body):
        return {}
    from openprose.imports import ImportFailed
    from openprose.vm.loader import load_imports

    offline = offline_wanted() if offline is None else offline
    policy = fetch_policy(project, update_pins=update_pins)
    try:
        imports = load_imports(
            program,
            base_dir=base_dir,
            project_dir=project,
            registry=None if pinned is not None else registry_base(project),
            pinned=pinned,
            offline=offline or pinned is not None,
            policy=policy,
        )
        install_skills_or_fail(
            program, imports, project, policy, offline=offline, update=update_pins
        )
    except ImportFailed as error:
        raise UsageError(f"use: {error}") from None
    return imports


def install_skills_or_fail(
    program: Any,
    imports: Any,
    project: Path,
    policy: Any,
    *,
    offline: bool,
    update: bool,
    report: Any = None,
) -> list[Any]:
    """Install the registry and URL skills agents of `program` (and of what it imports)
    use; `report(install)` is told about each. Raises `ImportFailed`."""
    from openprose.vm.tools.skill_registry import install_skills, remote_skill_specs

    specs = remote_skill_specs(program, imports.values())
    if not specs:
        return []
    done = install_skills(
        specs,
        project,
        registry=registry_base(project),
        policy=policy,
        limits=skill_limits(project),
        offline=offline,
        update=update,
    )
    for install in done:
        if report is not None:
            report(install)
    return done


def skill_limits(project: Path) -> Any:
    """`[skills]` in prose.toml: `max_bytes` (download), `max_unpacked_bytes`, `max_files`."""
    from openprose.vm.tools.skill_registry import SkillLimits

    table = project_settings(project).get("skills", {})
    if not isinstance(table, dict):
        raise UsageError("the [skills] setting must be a table")
    defaults = SkillLimits()
    values = {}
    for key in ("max_bytes", "max_unpacked_bytes", "max_files"):
        value = table.get(key, getattr(defaults, key))
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise UsageError(f"[skills] {key} must be a positive whole number, got {value!r}")
        values[key] = value
    unknown = sorted(set(table) - set(values))
    if unknown:
        raise UsageError(
            f"[skills] has no setting {unknown[0]!r}; known: max_bytes, max_unpacked_bytes, "
            f"max_files"
        )
    return SkillLimits(**values)


def fetch_policy(project: Path, *, update_pins: bool = False) -> Any:
    """How remote imports are fetched: the `[imports]` table of prose.toml, e.g.
    `max_bytes = 1048576`, `timeout = 30` (seconds, the whole download), `allow_http = false`."""
    from openprose.imports import FetchPolicy
    from openprose.providers.settings import setting_out_of_range

    table = project_settings(project).get("imports", {})
    if not isinstance(table, dict):
        raise UsageError("the [imports] setting must be a table")
    defaults = FetchPolicy()
    for key in ("max_bytes", "timeout"):
        value = table.get(key, getattr(defaults, key))
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise UsageError(f"[imports] {key} must be a positive number, got {value!r}")
        problem = setting_out_of_range(value)
        if problem:
            raise UsageError(f"[imports] {key} {problem}")
    allow_http = table.get("allow_http", False)
    if not isinstance(allow_http, bool):
        raise UsageError(f"[imports] allow_http must be true or false, got {allow_http!r}")
    if allow_http:
        from openprose.providers.settings import warn

        warn(
            "[imports] allow_http = true: programs fetched over plain http:// can be changed on the way"
        )
    return FetchPolicy(
        max_bytes=int(table.get("max_bytes", defaults.max_bytes)),
        timeout=float(table.get("timeout", defaults.timeout)),
        allow_http=allow_http,
        update_pins=update_pins,
        grants=import_grants(table.get("grants", {})),
    )


def import_grants(table: Any) -> dict[str, dict[str, Any]]:
    """`[imports.grants."SPEC"]` of prose.toml: what imported programs' agents may do beyond
    their cap (a remote program's agents get no bash, network, write or outside reads
    otherwise), each checked like `[permissions]`."""
    if table == {}:
        return {}
    from openprose.vm.tools.permissions import PermissionError_, validate_default

    if not isinstance(table, dict):
        raise UsageError('[imports.grants] must hold one table per import: [imports.grants."SPEC"]')
    try:
        return {
            str(spec): validate_default(grant, "prose.toml", f'[imports.grants."{spec}"]')
            for spec, grant in table.items()
        }
    except PermissionError_ as error:
        raise UsageError(str(error)) from None


def open_provider_or_fail(
    project: Path,
    provider: str | None,
    models: list[str],
    max_concurrency: int | None,
    *,
    record: str | None = None,
    resuming: Path | None = None,
    found: ProjectInfo | None = None,
) -> tuple[ProviderSettings, Provider]:
    """Settings and the opened provider. A `replay:` source given as a run id or prefix is
    resolved here, once, to its journal file (kept in the settings): before a new run's
    folder exists, and never to `resuming`, the run folder being resumed."""
    from dataclasses import replace

    from openprose.providers import (
        ProviderConfigError,
        RecordingProvider,
        check_credentials,
        load_settings,
        open_provider,
    )
    from openprose.providers.replay import cassette_problem
    from openprose.providers.settings import resolve_model
    from openprose.vm.replay_source import replay_source

    try:
        settings = load_settings(
            project, provider=provider, model_overrides=models, max_concurrency=max_concurrency
        )
        if settings.provider == "replay" and settings.path is not None:
            source = replay_source(settings.path, project, exclude=resuming)
            settings = replace(settings, path=source.resolve())
        for override in models:  # a key-less `--model x=anthropic:...` fails now, not mid-run
            check_credentials(settings, resolve_model(override.partition("=")[0], settings)[0])
        opened = open_provider(settings)
    except ProviderConfigError as error:
        unconfigured = str(error).startswith("No model provider")
        where = f"\n(settings: {found.explain()})" if found and unconfigured else ""
        raise UsageError(f"{error}{where}") from None
    if record:
        target = Path(record)
        if target.is_dir():
            raise UsageError(f"--record {record}: is a folder; give a cassette file")
        if not target.parent.is_dir():
            raise UsageError(f"--record {record}: no such folder {target.parent}")
        problem = cassette_problem(target)
        if problem is not None:
            raise UsageError(
                f"--record {record}: {problem}; recording appends to a cassette, so name a "
                "new file or one an earlier --record wrote"
            )
        try:
            opened = RecordingProvider(opened, target)
        except OSError as error:
            raise UsageError(f"--record {record}: cannot write ({error.strerror})") from None
    return settings, opened


# Budgets may be lifted (`max_cost = "none"` is not TOML's; leave the key out instead).
BUDGET_KINDS: dict[str, type] = {"max_sessions": int, "max_run_tokens": int, "max_cost": float}


def open_tracer_or_fail(flag: bool) -> Tracer | None:
    """The run's tracer, when `--trace` or the OTLP environment asks for one. Asked for with
    `--trace` but not installed: a usage error; asked for by the environment: a warning."""
    from openprose.telemetry.spans import TracingUnavailable, open_tracer, wanted

    if not wanted(flag):
        return None
    try:
        return open_tracer()
    except TracingUnavailable as error:
        if flag:
            raise UsageError(str(error)) from None
        print(f"prose: warning: not tracing: {error}", file=sys.stderr)
        return None

"""``prose run PROGRAM``: check a program, then run it against a model provider.

Exit status: 0 when the run succeeds; 1 when the program fails (an uncaught error or
`throw`, reported with the statement's `path:line:col`); 2 for usage and compile errors
(diagnostics printed as `prose check` prints them) and for provider configuration problems;
3 when the run stopped at a budget (`--max-sessions`, `--max-tokens`, `--max-cost`): it is
resumable with a larger one.

Helpers shared with ``prose resume`` live here too.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from openprose.project import Project as ProjectInfo
    from openprose.providers.base import Provider
    from openprose.providers.settings import ProviderSettings
    from openprose.vm.runner import RunResult
    from openprose.vm.runtime import Observer
    from openprose.vm.tracing import Tracer

OK, FAILED, USAGE_ERROR, STOPPED, WAITING = 0, 1, 2, 3, 4
STDIN = "-"


class UsageError(Exception):
    """Reported on stderr as `prose: ...`; exit status 2. `diagnostics` (as `prose check
    --format json` gives them) go into the `--json` object too."""

    def __init__(self, message: str, diagnostics: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.diagnostics = diagnostics or []


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "program", metavar="PROGRAM", help="the .prose file to run; - reads it from stdin"
    )
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a program input (text); repeat for several",
    )
    parser.add_argument(
        "--inputs",
        metavar="FILE.json",
        help="a JSON object of inputs ('-': stdin); values keep their JSON types (a list is a "
        "collection)",
    )
    parser.add_argument(
        "--update-pins",
        action="store_true",
        help="fetch remote imports and skills again and pin what they are now in prose.lock",
    )
    add_offline_argument(parser)
    add_provider_arguments(parser)
    add_budget_arguments(parser)
    add_trace_argument(parser)


def add_offline_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--offline",
        action="store_true",
        help="fetch nothing: remote programs and skills come from the cache as pinned in "
        "prose.lock (also PROSE_OFFLINE=1); what is not there is an error",
    )


def offline_wanted(flag: bool = False) -> bool:
    """`--offline`, or PROSE_OFFLINE set to anything but empty / 0 / false / no."""
    value = os.environ.get("PROSE_OFFLINE", "").strip().lower()
    return flag or value not in ("", "0", "false", "no")


def add_trace_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--trace",
        action="store_true",
        help="send OpenTelemetry traces (OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT, default "
        "localhost:4318; needs the [otel] extra); on by itself when that variable is set",
    )


def open_tracer_or_fail(flag: bool) -> Tracer | None:
    """The run's tracer, when `--trace` or the OTLP environment asks for one. Asked for with
    `--trace` but not installed: a usage error; asked for by the environment: a warning."""
    from openprose.vm.tracing import TracingUnavailable, open_tracer, wanted

    if not wanted(flag):
        return None
    try:
        return open_tracer()
    except TracingUnavailable as error:
        if flag:
            raise UsageError(str(error)) from None
        print(f"prose: warning: not tracing: {error}", file=sys.stderr)
        return None


def add_budget_arguments(parser: argparse.ArgumentParser) -> None:
    """Budgets of the whole run (`[vm]` keys max_sessions, max_run_tokens, max_cost);
    `none` lifts one. Hitting one stops the run, resumable with a larger budget."""
    parser.add_argument(
        "--max-sessions",
        type=_limit(int),
        metavar="N",
        help="model calls the run may make, judgments included (default 1000; none: no limit)",
    )
    parser.add_argument(
        "--max-tokens",
        type=_limit(int),
        metavar="N",
        help="tokens (input + output) the run may spend",
    )
    parser.add_argument(
        "--max-cost",
        type=_limit(float),
        metavar="USD",
        help="dollars the run may spend (every model it uses needs a price)",
    )


def _limit(kind: type[int | float]) -> Callable[[str], int | float | str]:
    def parse(text: str) -> int | float | str:
        if text.strip().lower() == "none":
            return "none"
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {'an integer' if kind is int else 'a number'} or none, got {text!r}"
            ) from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive (or none), got {text!r}")
        return value

    return parse


def budget_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The budgets given on the command line, as VMConfig fields (`none` -> no limit)."""
    given = {
        "max_sessions": args.max_sessions,
        "max_run_tokens": args.max_tokens,
        "max_cost": args.max_cost,
    }
    return {k: None if v == "none" else v for k, v in given.items() if v is not None}


def add_provider_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--provider",
        type=_provider_name,
        metavar="NAME",
        help="anthropic, openai, local, replay:CASSETTE.jsonl or scripted:RULES.yaml",
    )
    parser.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="ALIAS=PROVIDER:MODEL",
        help="route a model alias, e.g. sonnet=openai:gpt-4.1; repeat for several",
    )
    parser.add_argument(
        "--max-concurrency",
        type=_concurrency,
        metavar="N",
        help=f"sessions in flight at once (1-{MAX_CONCURRENCY_LIMIT})",
    )
    parser.add_argument(
        "--evaluator", metavar="ALIAS", help="model for AI judgments (default: haiku)"
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help='print one JSON object {"run_id", "status", "outputs", "usage"}',
    )
    parser.add_argument(
        "--record", metavar="FILE", help="append every model exchange sent to a replay cassette"
    )
    parser.add_argument(
        "--yes",
        action="store_true",
        help="approve every `prompt` permission without asking (unattended runs)",
    )


# Far above any provider's rate limit; a bigger number is a typo (and overflows the journal).
MAX_CONCURRENCY_LIMIT = 100_000


def _provider_name(text: str) -> str:
    """An empty `--provider ''` is a mistake (an unset shell variable), not "choose for me"."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            "empty provider name; give one of anthropic, openai, local, replay:FILE, "
            "scripted:FILE, or leave --provider out to use the configured one"
        )
    return text


def _concurrency(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 1 <= number <= MAX_CONCURRENCY_LIMIT:
        raise argparse.ArgumentTypeError(
            f"must be between 1 and {MAX_CONCURRENCY_LIMIT}, got {number}"
        )
    return number


def run(args: argparse.Namespace) -> int:
    return guarded(_run, args)


class RunNotice:
    """Says which run this is, so it can always be found again: one line on stderr when it
    starts (before any model call; a `kill -9` leaves that line behind), and the exact
    command that continues it when it is interrupted or fails."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.run_id: str | None = None
        self.project: Path | None = None
        self.provider: str | None = None  # the provider's name, for the summary's wording

    def __call__(self, event: str, step: str, fields: dict[str, Any]) -> None:
        if event != "run_started":
            return
        self.run_id = str(fields.get("run_id"))
        if not self.quiet:
            verb = "resuming" if fields.get("resumed") else "started"
            print(f"prose: run {self.run_id} {verb} ({self.run_dir()})", file=sys.stderr)

    def run_dir(self) -> Path:
        from openprose.vm.runstore import RUNS_DIR

        return (self.project or Path.cwd()) / RUNS_DIR / str(self.run_id)

    def resume_command(self) -> str:
        """`prose resume ID` from the project folder, else with the run folder's path."""
        project = (self.project or Path.cwd()).resolve()
        if project == Path.cwd().resolve():
            return f"prose resume {self.run_id}"
        return f"prose resume {self.run_dir().resolve()}"


def guarded(command: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run `prose run` or `prose resume`, turning every failure into a message and a status."""
    as_json = bool(getattr(args, "json", False))
    args.notice = notice = RunNotice(bool(getattr(args, "quiet", False)))
    try:
        return command(args)
    except KeyboardInterrupt:
        if notice.run_id is None:
            print("prose: interrupted before the run started", file=sys.stderr)
        else:
            print(
                f"prose: interrupted; run {notice.run_id} keeps what it finished. "
                f"Continue it with: {notice.resume_command()}",
                file=sys.stderr,
            )
        return 130
    except UsageError as error:
        return _not_run(str(error), USAGE_ERROR, as_json, error.diagnostics)
    except OSError as error:
        return _not_run(str(error), FAILED, as_json)
    except Exception as error:  # noqa: BLE001 - a VM bug: say so plainly; the run stays resumable
        from openprose.vm.runstore import DamagedRun

        if isinstance(error, DamagedRun):  # found once the run was opened (its journal)
            return _not_run(str(error), USAGE_ERROR, as_json)
        return _not_run(f"internal error: {type(error).__name__}: {error}", FAILED, as_json)


def _not_run(
    message: str, status: int, as_json: bool, diagnostics: list[dict[str, Any]] | None = None
) -> int:
    """The message on stderr; with --json also the one promised JSON object on stdout."""
    from openprose.terminal import printable

    print(f"prose: {printable(message, sys.stderr)}", file=sys.stderr)
    if as_json:
        shown: dict[str, Any] = {
            "run_id": None,
            "status": "not_run" if status == USAGE_ERROR else "error",
            "outputs": {},
            "usage": {},
            "error": message,
            **({"diagnostics": diagnostics} if diagnostics else {}),
        }
        print(json.dumps(shown, ensure_ascii=False))
    return status


def _run(args: argparse.Namespace) -> int:
    from openprose.project import find_project

    from_stdin = args.program == STDIN
    if from_stdin and args.inputs == STDIN:
        raise UsageError("the program and --inputs cannot both be read from stdin ('-')")
    program_path = Path(args.program)
    program_dir = Path.cwd() if from_stdin else program_path.parent
    found = find_project(program_dir)
    project = found.root
    if args.verbose:
        print(f"prose: project {project}: {found.explain()}", file=sys.stderr)
    # With --json, stdout holds only the JSON object: diagnostics text goes to stderr.
    text_out = sys.stderr if args.json else sys.stdout
    parsed = parse_and_check(program_path, project, text_out)
    inputs = read_inputs(args.input, args.inputs)
    inputs_match(parsed, inputs, text_out)
    imports = load_imports_or_fail(
        parsed.program,
        program_dir,
        project,
        update_pins=args.update_pins,
        offline=offline_wanted(args.offline),
    )
    settings, provider = open_provider_or_fail(
        project, args.provider, args.model, args.max_concurrency, record=args.record, found=found
    )
    from openprose.vm.runner import run_program

    config = vm_config(
        project,
        settings.max_concurrency,
        args.evaluator,
        local_budget(settings),
        budgets=budget_flags(args),
    )
    prices = run_prices(project)
    cost_is_enforceable(parsed.program, config, settings, prices)
    launch = {
        "provider": launch_spec(args.provider, settings),
        "models": args.model,
        "max_concurrency": args.max_concurrency,
        "evaluator": args.evaluator,
        "program_dir": str(program_dir.resolve()),
    }
    text = parsed.source.text
    tools = tool_runtime(project, args.yes)
    args.notice.project, args.notice.provider = project, settings.provider
    tracer = open_tracer_or_fail(args.trace)
    with progress(args.json, args.notice, args.quiet) as observer, shut_down(tracer):
        hold_progress(tools, observer)
        result = run_async(
            run_program(
                parsed.program,
                text,
                provider=provider,
                project_dir=project,
                inputs=inputs,
                imports=imports,
                settings=settings,
                config=config,
                observer=observer,
                launch=launch,
                prices=prices,
                tracer=tracer,
                tools=tools,
            ),
            provider,
        )
    return report(result, args.json, args.notice)


@contextmanager
def shut_down(tracer: Tracer | None) -> Iterator[None]:
    """Export the trace's last spans when the run ends, however it ends."""
    try:
        yield
    finally:
        if tracer is not None:
            tracer.shutdown()


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


# --- shared with `prose resume` ---------------------------------------------------------


def tool_runtime(project: Path, yes: bool, *, interactive: bool = True) -> Any:
    """Who answers `prompt` permissions — `--yes`, else the person at the terminal, else
    nobody (the run then waits for `prose approve`) — and the project's default permissions
    (`[permissions]` of prose.toml). `interactive=False` (the Python API, batches) never
    asks at a terminal."""
    from openprose.vm.toolloop import ToolRuntime
    from openprose.vm.tools import NobodyApprover, PreApprover, TerminalApprover
    from openprose.vm.tools.permissions import PermissionError_, validate_default

    table = project_settings(project).get("permissions", {})
    try:
        default = validate_default(table, "prose.toml")
    except PermissionError_ as error:
        raise UsageError(str(error)) from None
    approver: Any
    if yes:
        approver = PreApprover()
    elif interactive and sys.stdin.isatty() and sys.stderr.isatty():
        approver = TerminalApprover()
    else:
        approver = NobodyApprover()
    return ToolRuntime(approver=approver, default_permissions=default)


def hold_progress(tools: Any, observer: Any) -> None:
    """An approval prompt on the terminal pauses the live progress table while it asks."""
    paused = getattr(observer, "paused", None)
    if paused is not None and hasattr(tools.approver, "hold"):
        tools.approver.hold = paused


def parse_and_check(path: Path, project: Path, stream: TextIO) -> Any:
    """The parse of `path` when it has no errors; otherwise its diagnostics are printed on
    `stream` like `prose check` prints them, and a `UsageError` carrying them is raised."""
    from openprose.checker import diagnose
    from openprose.files import unreadable_reason
    from openprose.parser import decode_source, parse, read_source

    if str(path) == STDIN:
        source, problems = decode_source(sys.stdin.buffer.read(), "<stdin>")
    elif (reason := unreadable_reason(path)) is not None:
        raise UsageError(f"{path}: {reason}")
    else:
        source, problems = read_source(path)
    if source is None:
        print_diagnostics(list(problems), None, stream)
        raise UsageError(f"{path}: cannot be read", [d.to_dict() for d in problems])
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


def print_diagnostics(diagnostics: Any, source: Any, stream: Any) -> None:
    """As `prose check` prints them (its module loads only when there is something to say)."""
    from openprose.cli import check

    check.print_diagnostics(list(diagnostics), source, stream)


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
        raise UsageError(
            "max_concurrency is not a [vm] setting: write `max_concurrency = N` at the top "
            "level of prose.toml (or pass --max-concurrency N)"
        )
    known = [f.name for f in fields(VMConfig) if f.name != "max_concurrency"]
    unknown = sorted(set(table) - set(known))
    if unknown:
        raise UsageError(
            f"unknown [vm] setting(s): {', '.join(unknown)}; known: {', '.join(known)}"
        )
    for key, value in table.items():
        check_vm_setting(key, value, getattr(defaults, key))
    config = replace(defaults, **table, max_concurrency=max_concurrency)
    config = replace(config, **(budgets or {}))
    if budget_cap is not None and "context_budget" not in table:
        config = replace(config, context_budget=min(config.context_budget, budget_cap))
    return replace(config, evaluator_model=evaluator) if evaluator else config


# Budgets may be lifted (`max_cost = "none"` is not TOML's; leave the key out instead).
BUDGET_KINDS: dict[str, type] = {"max_sessions": int, "max_run_tokens": int, "max_cost": float}


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
            f"missing required input '{name}' ({s.description.value}); pass --input {name}=VALUE",
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
    )


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
    from openprose.providers.replay import replay_source
    from openprose.providers.settings import resolve_model

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
        try:
            opened = RecordingProvider(opened, target)
        except OSError as error:
            raise UsageError(f"--record {record}: cannot write ({error.strerror})") from None
    return settings, opened


def run_async(coroutine: Any, provider: Provider) -> RunResult:
    import asyncio

    async def main() -> RunResult:
        try:
            result: RunResult = await coroutine
            return result
        finally:
            await provider.aclose()

    return asyncio.run(main())


@contextmanager
def progress(as_json: bool, notice: RunNotice, quiet: bool = False) -> Iterator[Fanout]:
    """The run notice, plus a Rich live view on a terminal or plain lines on stderr
    otherwise; the notice alone with --json or -q."""
    if as_json or quiet:
        yield Fanout(notice)
        return
    if sys.stderr.isatty() and os.environ.get("TERM") != "dumb":
        from openprose.vm.progress import LiveView

        with LiveView() as view:
            yield Fanout(notice, view)
        return
    from openprose.vm.progress import PlainProgress

    yield Fanout(notice, PlainProgress(sys.stderr))


class Fanout:
    """Passes every VM event to each observer in turn."""

    def __init__(self, *observers: Observer) -> None:
        self.observers = observers

    def __call__(self, event: str, step: str, fields: dict[str, Any]) -> None:
        for observer in self.observers:
            observer(event, step, fields)

    def __getattr__(self, name: str) -> Any:
        """Optional observer hooks (`answer_text`: the live view streams answers) reach the
        first observer that has them; without one, the VM does not stream."""
        for observer in self.__dict__.get("observers", ()):
            hook = getattr(observer, name, None)
            if hook is not None:
                return hook
        raise AttributeError(name)


def report(result: RunResult, as_json: bool, notice: RunNotice | None = None) -> int:
    if as_json:
        print(json.dumps(result.to_json(), ensure_ascii=False))
    else:
        print_summary(result, notice.provider if notice is not None else None)
    if result.status == "succeeded":
        return OK
    if not as_json:
        from openprose.terminal import printable

        print(f"prose: {printable(result.error, sys.stderr)}", file=sys.stderr)
    if result.status == "stopped":  # its error line already names the resume command
        return STOPPED
    if result.status == "waiting":  # its error line says how to approve or deny
        return WAITING
    if notice is not None and notice.run_id is not None:
        print(
            f"prose: run {notice.run_id} {result.status}; after fixing the cause, continue it "
            f"with: {notice.resume_command()}",
            file=sys.stderr,
        )
    return USAGE_ERROR if result.status == "aborted" else FAILED


# Providers that answer without a model: nothing is sent and nothing is paid.
ANSWERED_LOCALLY = {"replay": "the replay cassette", "scripted": "the scripted rules"}


def print_summary(result: RunResult, provider: str | None = None) -> None:
    usage = result.usage
    lines = [f"run {result.run_id}: {result.status}  ({result.run_dir})"]
    for name, value in result.outputs.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        lines.append(f"output {name}: {text}")
    if result.result is not None:
        lines.append(f"result: {result.result}")
    answered_by = ANSWERED_LOCALLY.get(provider or "")
    sent = usage.get("requests_sent", 0)
    asked = f"{sent} answered by {answered_by}" if answered_by else f"{sent} sent"
    lines.append(
        f"tokens: {usage.get('input_tokens', 0)} in, {usage.get('output_tokens', 0)} out; "
        f"requests: {asked}, "
        f"{usage.get('requests_served_from_journal', 0)} served from the journal"
    )
    cost, unpriced = usage.get("cost_usd", 0.0), usage.get("unpriced_models") or {}
    if answered_by:
        pass  # nothing was sent to a model, nothing was paid
    elif unpriced:  # said, not hidden: the total would be wrong
        lines.append(
            f"cost: unknown — no price for {', '.join(sorted(unpriced))} (give it one under "
            f"[prices] in prose.toml); ${cost:.4f} for the priced calls"
        )
    elif usage.get("input_tokens") or usage.get("output_tokens"):
        lines.append(f"cost: ${cost:.4f}" if cost >= 0.0001 or cost == 0 else "cost: under $0.0001")
    from openprose.terminal import printable

    print(printable("\n".join(lines)))

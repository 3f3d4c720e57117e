"""``prose run PROGRAM``: check a program, then run it against a model provider.

Exit status: 0 when the run succeeds; 1 when the program fails (an uncaught error or
`throw`, reported with the statement's `path:line:col`); 2 for usage and compile errors
(diagnostics printed as `prose check` prints them) and for provider configuration problems;
3 when the run stopped at a budget (`--max-sessions`, `--max-tokens`, `--max-cost`): it is
resumable with a larger one; 4 waiting for an approval; 130 Ctrl-C and 143 SIGTERM (the run
stays resumable and the command that continues it is printed). README.md, "Exit status".

The steps that open a run are in `openprose.session.opening`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from cliconventions import interrupt_status
from cliconventions import interrupt_word as interrupted
from openprose.cli.estimate import print_estimates, refusal
from openprose.cli.json_out import write_json
from openprose.record.events import Event, RunStarted
from openprose.session.estimate import estimate_run
from openprose.session.opening import (
    STDIN,
    UsageError,
    ask_missing_inputs,
    inputs_match,
    open_tracer_or_fail,
    parse_and_check,
    read_inputs,
)
from openprose.session.options import RunOptions

if TYPE_CHECKING:
    from openprose.providers.base import Provider
    from openprose.telemetry.spans import Tracer
    from openprose.vm.estimates import Estimate
    from openprose.vm.runner import RunResult
    from openprose.vm.subscribers import Observer

OK, FAILED, USAGE_ERROR, STOPPED, WAITING = 0, 1, 2, 3, 4


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
    add_permission_mode_argument(parser)
    add_budget_arguments(parser)
    add_trace_argument(parser)
    parser.add_argument(
        "--estimate",
        action="store_true",
        help="print the lowest and highest sessions, tokens and cost of a run (a table, or "
        "JSON with --json) and run nothing; a run over --max-sessions/--max-cost by this "
        "estimate is refused unless --yes",
    )


def add_offline_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--offline",
        action="store_true",
        help="fetch nothing: remote programs and skills come from the cache as pinned in "
        "prose.lock (also PROSE_OFFLINE=1); what is not there is an error",
    )


def add_trace_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--trace",
        action="store_true",
        help="send OpenTelemetry traces (OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT, default "
        "localhost:4318; needs the [otel] extra); on by itself when that variable is set",
    )


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
    # Not a budget, but what it saves is: a VMConfig field given on the command line too.
    parser.add_argument(
        "--memo",
        action="store_true",
        help="answer calls asked before from .prose/memo/, remember new ones ([vm] memo)",
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
        if not 0 < value < float("inf"):  # nan and inf too: a typo, never a budget
            raise argparse.ArgumentTypeError(f"must be a positive number (or none), got {text!r}")
        return value

    return parse


def budget_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The budgets given on the command line, as VMConfig fields (`none` -> no limit)."""
    given = {
        "max_sessions": args.max_sessions,
        "max_run_tokens": args.max_tokens,
        "max_cost": args.max_cost,
    }
    flags: dict[str, Any] = {
        k: None if v == "none" else v for k, v in given.items() if v is not None
    }
    if getattr(args, "memo", False):
        flags["memo"] = True
    return flags


def run_options(args: argparse.Namespace) -> RunOptions:
    """The options `prose run` and `prose resume` share, read once from their flags."""
    return RunOptions(
        provider=args.provider,
        models=tuple(args.model),
        max_concurrency=args.max_concurrency,
        evaluator=args.evaluator,
        record=args.record,
        budgets=budget_flags(args),
        yes=args.yes,
        permission_mode=args.permission_mode,
        offline=args.offline,
        interactive=True,  # a person at the terminal may answer `prompt` permissions
    )


RUN_JSON = 'print one JSON object {"run_id", "status", "outputs", "usage"}'


def add_provider_arguments(parser: argparse.ArgumentParser, json_help: str = RUN_JSON) -> None:
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
        help=json_help,
    )
    parser.add_argument(
        "--record", metavar="FILE", help="append every model exchange sent to a replay cassette"
    )
    parser.add_argument(
        "--yes",
        action="store_true",
        help="approve every `prompt` permission without asking (unattended runs)",
    )


def add_permission_mode_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--permission-mode",
        choices=("default", "plan"),
        default="default",
        help="plan: read-only — every write, command and network call of an agent is "
        "refused and reported, whatever its permissions (default: the agents' permissions)",
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
        self.reporting = False  # the run is over; its summary is being written

    # Handed only the run's start when it is the observer itself (`Shared.subscribe`); a
    # `Fanout` with a view hands it every event.
    only_events: ClassVar[tuple[type[Event], ...]] = (RunStarted,)

    def __call__(self, event: Event, t: float) -> None:
        if not isinstance(event, RunStarted):
            return
        self.run_id = event.run_id
        from openprose.vm.crashes import record_native_crashes

        record_native_crashes(self.project or Path.cwd())
        if not self.quiet:
            verb = "resuming" if event.resumed else "started"
            print(f"prose: run {self.run_id} {verb} ({self.run_dir()})", file=sys.stderr)

    def run_dir(self) -> Path:
        from openprose.record.runstore import RUNS_DIR

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
    except KeyboardInterrupt as interrupt:
        how = interrupted(interrupt)
        if notice.run_id is None:
            print(f"prose: {how} before the run started", file=sys.stderr)
        else:
            _record_interrupt(notice.run_dir(), interrupt)
            print(
                f"prose: {how}; run {notice.run_id} keeps what it finished. "
                f"Continue it with: {notice.resume_command()}",
                file=sys.stderr,
            )
        if as_json:  # still the one promised object on stdout
            print(json.dumps({"run_id": notice.run_id, "status": "interrupted", "error": how}))
        return interrupt_status(interrupt)
    except UsageError as error:
        return _not_run(str(error), USAGE_ERROR, as_json, error.diagnostics)
    except OSError as error:  # the run folder cannot be written: a full disk, read-only...
        from cliconventions import os_error_text

        if isinstance(error, BrokenPipeError) or notice.reporting:
            raise  # writing the output failed (a closed pipe, a full disk): guard_output says so
        if notice.run_id is None:
            return _not_run(
                f"the run could not start: {os_error_text(error)}", USAGE_ERROR, as_json
            )
        _not_run(f"cannot write the run: {os_error_text(error)}", FAILED, as_json)
        print(
            f"prose: run {notice.run_id} keeps what it finished; after fixing the cause, "
            f"continue it with: {notice.resume_command()}",
            file=sys.stderr,
        )
        return FAILED
    except Exception as error:  # noqa: BLE001 - a VM bug: say so plainly; the run stays resumable
        from openprose.record.runstore import DamagedRun

        if isinstance(error, DamagedRun):  # found once the run was opened (its journal)
            return _not_run(str(error), USAGE_ERROR, as_json)
        return _not_run(f"internal error: {type(error).__name__}: {error}", FAILED, as_json)


def _record_interrupt(run_dir: Path, interrupt: KeyboardInterrupt) -> None:
    """run.json says the run was interrupted on purpose (Ctrl-C, SIGTERM), so that it is
    told from one whose process died (`crashed`, or killed). Best effort: a run folder that
    cannot be written keeps `running`, shown as `interrupted` once the process is gone."""
    from openprose.record.runstore import DamagedRun, RunBusy, RunStore, utc_now

    signal = "SIGTERM" if interrupt_status(interrupt) == 143 else "Ctrl-C"
    try:
        store = RunStore.open(run_dir)
        if store.read_meta().get("status") == "running":
            store.update_meta(
                status="interrupted",
                error=f"{interrupted(interrupt)} ({signal})",
                finished=utc_now(),
            )
    except (OSError, DamagedRun, RunBusy):
        pass


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
    from openprose.session.launch import RunError, execute, open_run

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

    def estimated() -> Estimate:
        return estimate_run(
            parsed.program,
            inputs,
            project=project,
            program_dir=program_dir,
            provider=args.provider,
            models=args.model,
            evaluator=args.evaluator,
            budgets=budget_flags(args),
        )

    if args.estimate:  # an input not given leaves what depends on it unbounded
        print_estimates([estimated()], args.json, sys.stdout)
        return OK
    if at_a_terminal(args, from_stdin):
        ask_missing_inputs(parsed, inputs, sys.stderr, sys.stdin)
    inputs_match(parsed, inputs, text_out)
    if _budgeted(args):
        refused = refusal(estimated(), budget_flags(args))
        if refused is not None and not args.yes:
            raise UsageError(refused)
    try:
        prepared = open_run(
            parsed.program,
            parsed.source.text,
            program_dir=program_dir,
            project=project,
            options=replace(run_options(args), update_pins=args.update_pins),
            found=found,
        )
    except RunError as error:
        raise UsageError(str(error), error.diagnostics) from None
    prepared.inputs = inputs
    args.notice.project, args.notice.provider = project, prepared.settings.provider
    tracer = open_tracer_or_fail(args.trace)
    with progress(args.json, args.notice, args.quiet) as observer, shut_down(tracer):
        hold_progress(prepared.tools, observer)
        result = run_async(execute(prepared, observer, tracer), prepared.provider)
    return report(result, args.json, args.notice)


def _budgeted(args: argparse.Namespace) -> bool:
    """A session or cost budget given on the command line: the run is estimated first."""
    budgets = budget_flags(args)
    return budgets.get("max_sessions") is not None or budgets.get("max_cost") is not None


@contextmanager
def shut_down(tracer: Tracer | None) -> Iterator[None]:
    """Export the trace's last spans when the run ends, however it ends."""
    try:
        yield
    finally:
        if tracer is not None:
            tracer.shutdown()


# --- shared with `prose resume` ---------------------------------------------------------


def hold_progress(tools: Any, observer: Any) -> None:
    """An approval prompt or a question on the terminal pauses the live progress table
    while it asks."""
    paused = getattr(observer, "paused", None)
    if paused is not None and hasattr(tools.approver, "hold"):
        tools.approver.hold = paused
    if paused is not None and hasattr(tools.asker, "hold"):
        tools.asker.hold = paused


def run_async(coroutine: Any, provider: Provider) -> RunResult:
    async def main() -> RunResult:
        try:
            result: RunResult = await coroutine
            return result
        finally:
            await provider.aclose()

    from cliconventions import run_async as run_terminable

    with lean_collector():
        result: RunResult = run_terminable(main())  # SIGTERM: as Ctrl-C
        return result


# Container allocations between young collections while a run goes on (CPython's default is
# 700); the older generations keep their ratios.
YOUNG_COLLECTION_EVERY = 50_000


@contextmanager
def lean_collector() -> Iterator[None]:
    """Fewer garbage collections while a run goes on. A session leaves ~20 container objects
    alive until the run ends (history, scopes, results) and a model call makes hundreds of
    short-lived ones: at the default threshold the collector ran ~280 times per 10,000
    sessions and cost ~50 us of CPU per session, about a third of what the VM adds to a call.
    What start-up built (modules, the program's syntax tree) is moved out of the collector's
    sight (`gc.freeze`), and young collections come every `YOUNG_COLLECTION_EVERY`
    allocations: cyclic garbage waits longer (a few MB at most), reference counting frees
    the rest as before. Restored afterwards (tests run many commands in one process)."""
    import gc

    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION_EVERY, thresholds[1], thresholds[2])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def at_a_terminal(args: argparse.Namespace, from_stdin: bool) -> bool:
    """Whether someone can be asked for missing inputs: stdin and stderr are a terminal and
    neither the program nor --inputs is read from stdin; --json runs are for scripts."""
    if args.json or from_stdin or args.inputs == STDIN:
        return False
    return sys.stdin.isatty() and sys.stderr.isatty()


@contextmanager
def progress(as_json: bool, notice: RunNotice, quiet: bool = False) -> Iterator[Observer]:
    """The run notice, plus a Rich live view on a terminal or plain lines on stderr
    otherwise; the notice alone with --json or -q (itself: a `Fanout` of one is one call
    more for each of a run's events)."""
    if as_json or quiet:
        yield notice
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

    def __call__(self, event: Event, t: float) -> None:
        for observer in self.observers:
            observer(event, t)

    def __getattr__(self, name: str) -> Any:
        """Optional observer hooks (`answer_text`: the live view streams answers) reach the
        first observer that has them; without one, the VM does not stream."""
        for observer in self.__dict__.get("observers", ()):
            hook = getattr(observer, name, None)
            if hook is not None:
                return hook
        raise AttributeError(name)


def report(result: RunResult, as_json: bool, notice: RunNotice | None = None) -> int:
    if notice is not None:
        notice.reporting = True  # from here an OSError is the output's, not the run folder's
    if as_json:
        # in pieces: a 100,000-item result is never one string here
        write_json(result.to_json(), sys.stdout)
        sys.stdout.write("\n")
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
        from openprose.session.runs import asks_again

        if result.status == "failed" and not asks_again(result.run_dir):
            print(
                f"prose: resuming run {notice.run_id} would fail the same way (every answer it "
                "got is replayed from its journal): change the program, or the model that "
                "answered (--model, --evaluator), and start it again with prose run",
                file=sys.stderr,
            )
        else:
            print(
                f"prose: run {notice.run_id} {result.status}; after fixing the cause, continue "
                f"it with: {notice.resume_command()}",
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
    # every request the server received, the failed ones too ("0 sent" when it got 5)
    failed = usage.get("requests_failed", 0)
    sent = usage.get("requests_sent", 0) + failed
    asked = f"{sent} answered by {answered_by}" if answered_by else f"{sent} sent"
    if failed:
        asked += f" ({failed} failed)"
    from openprose.providers.prices import cache_text

    cached = cache_text(usage.get("cache_read_tokens", 0), usage.get("cache_write_tokens", 0))
    lines.append(
        f"tokens: {usage.get('input_tokens', 0)} in{cached}, {usage.get('output_tokens', 0)} out; "
        f"requests: {asked}, "
        f"{usage.get('requests_served_from_journal', 0)} served from the journal"
    )
    cost, unpriced = usage.get("cost_usd", 0.0), usage.get("unpriced_models") or {}
    if answered_by:
        pass  # nothing was sent to a model, nothing was paid
    elif unpriced:  # said, not hidden: the total would be wrong
        from openprose.providers.prices import cost_amount

        priced = [m for m in usage.get("by_model") or {} if m not in unpriced]
        lines.append(
            f"cost: unknown — no price for {', '.join(sorted(unpriced))} (give it one under "
            "[prices] in prose.toml)"
            + (f"; {cost_amount(cost, priced)} for the priced calls" if priced else "")
        )
    elif usage.get("input_tokens") or usage.get("output_tokens"):
        from openprose.providers.prices import cost_amount

        lines.append(f"cost: {cost_amount(cost, usage.get('by_model') or {})}")
    from openprose.terminal import printable

    print(printable("\n".join(lines)))

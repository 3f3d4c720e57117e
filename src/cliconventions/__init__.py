"""Conventions shared by the four command lines (prose, vlp, vpp, plsp).

A user who knows one of them knows the others: ``--version``; ``--json`` wherever
``--format json`` is; ``-`` reads standard input; ``-q``/``-v``; "did you mean" for a
mistyped subcommand or choice; shell completion (``--completion bash|zsh|fish``); colour
that honours ``NO_COLOR`` and ``FORCE_COLOR``.

This package depends on nothing but the standard library, so the protocol packages can use
it without depending on openprose. It is imported at start-up: keep it light (difflib and
the completion generator load only when needed).
"""

from __future__ import annotations

import argparse
import os
import sys

TYPE_CHECKING = False  # `typing` costs start-up time that `prose --version` should not pay
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any, NoReturn, TextIO

# The version of the distribution: the one place it is written. setuptools reads it from here
# (pyproject.toml), `--version` of the four commands prints it, and openprose, vlp, vpp and
# plsp give it as their __version__.
__version__ = "0.1.0"

__all__ = [
    "OUTPUT_ERRNOS",
    "ConventionalParser",
    "Terminated",
    "add_command_options",
    "add_version",
    "apply",
    "color_enabled",
    "did_you_mean",
    "guard_output",
    "interrupt_status",
    "interrupt_word",
    "os_error_text",
    "paint",
    "run_async",
    "subcommands",
    "terminated_as_interrupt",
    "version_line",
]

SHELLS = ("bash", "zsh", "fish")
# Errors only writing can raise: a full disk or quota (a closed pipe is handled apart).
OUTPUT_ERRNOS = frozenset({28, 122})  # ENOSPC, EDQUOT


def guard_output(program: str, run: Callable[[], int]) -> int:
    """``run()``, with stdout flushed inside, so that the output failing never ends in a
    traceback: a reader that closed the pipe (``| head``) ends the command quietly (exit 0,
    as there is no one left to tell), a full disk with one line on stderr (exit 2). Ctrl-C
    and SIGTERM that the command does not handle itself end it with one line on stderr
    (exit 130 and 143)."""
    try:
        with terminated_as_interrupt():
            code = run()
            sys.stdout.flush()
    except KeyboardInterrupt as interrupt:
        sys.stderr.write(f"{program}: {interrupt_word(interrupt)}\n")
        return interrupt_status(interrupt)
    except BrokenPipeError:
        _stdout_to_devnull()
        return 0
    except OSError as error:
        if error.errno not in OUTPUT_ERRNOS:
            raise
        _stdout_to_devnull()
        sys.stderr.write(f"{program}: error: cannot write the output: {error.strerror}\n")
        return 2
    return code


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, ``timeout``, a service manager stopping the command), raised where
    Ctrl-C's KeyboardInterrupt would be, so that it is handled as Ctrl-C is: work in hand is
    closed properly and the command says how to continue. Exit status 143 (128 + 15)."""

    exit_status = 143


class terminated_as_interrupt:
    """While inside: SIGTERM raises `Terminated` in the main thread (as SIGINT raises
    KeyboardInterrupt). The handler before is restored on leaving; elsewhere than the main
    thread this does nothing (only the main thread may set signal handlers)."""

    def __enter__(self) -> None:
        import signal

        try:
            self._previous: Any = signal.signal(signal.SIGTERM, _raise_terminated)
        except ValueError:  # not the main thread
            self._previous = None

    def __exit__(self, *_: object) -> None:
        import signal

        if self._previous is not None:
            signal.signal(signal.SIGTERM, self._previous)


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated()


def interrupt_word(interrupt: BaseException) -> str:
    """``interrupted`` (Ctrl-C) or ``terminated`` (SIGTERM)."""
    return "terminated" if isinstance(interrupt, Terminated) else "interrupted"


def interrupt_status(interrupt: BaseException) -> int:
    """130 for Ctrl-C, 143 for SIGTERM: 128 + the signal's number, as shells report it."""
    return int(getattr(interrupt, "exit_status", 130))


def run_async(coroutine: Any, loop_factory: Callable[[], Any] | None = None) -> Any:
    """``asyncio.run(coroutine)``, where SIGTERM cancels the main task as Ctrl-C does
    (asyncio's own SIGINT handling) and then raises `Terminated`: the coroutine's cleanup
    (``finally``, ``except CancelledError``) runs inside the loop, never cut short at an
    arbitrary point. A second SIGTERM while cleaning up raises `Terminated` at once.
    `loop_factory`: makes the event loop (`prose batch`'s is uvloop's); asyncio's if None."""
    import asyncio
    import signal

    received: list[int] = []

    async def main() -> Any:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()

        def cancel(signum: int, frame: object) -> None:
            if received or task is None:
                raise Terminated()
            received.append(signum)
            task.cancel()
            # The handler runs between two waits of the selector, which would go on waiting
            # (until the next I/O: a model call of minutes) before running the cancellation;
            # wake it, as asyncio's own SIGINT handler does.
            loop.call_soon_threadsafe(lambda: None)

        try:
            previous: Any = signal.signal(signal.SIGTERM, cancel)
        except ValueError:  # not the main thread: SIGTERM keeps its handler
            previous = None
        try:
            return await coroutine
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)

    try:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            return runner.run(main())
    except asyncio.CancelledError:
        if received:
            raise Terminated() from None
        raise


def os_error_text(error: OSError) -> str:
    """``PATH: what went wrong`` in words, with what to do about the common causes: a full
    disk, a read-only file system, no permission. No ``[Errno N]``, no Python repr."""
    import errno

    where = f"{error.filename}: " if error.filename else ""
    what = error.strerror or str(error)
    what = what[:1].lower() + what[1:]
    hint = {
        errno.ENOSPC: "free some space, then try again",
        errno.EDQUOT: "the disk quota is used up: free some space, then try again",
        errno.EROFS: "work in a writable folder",
        errno.EACCES: "check the owner and permissions of the file or folder",
        errno.EPERM: "check the owner and permissions of the file or folder",
    }.get(error.errno or 0)
    return f"{where}{what}" + (f" ({hint})" if hint else "")


def _stdout_to_devnull() -> None:
    """Point stdout at devnull, so the interpreter's final flush of what is still buffered
    cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """The choice closest to ``word`` when one is close enough to be a likely typo."""
    from difflib import get_close_matches

    matches = get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return matches[0] if matches else None


class ConventionalParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose "invalid choice" errors name the likely intended word
    (``vlp valdate`` -> ``did you mean 'validate'?``), and whose usage errors exit 2."""

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        choices = action.choices
        if choices is None or value in choices or not isinstance(value, str):
            super()._check_value(action, value)
            return
        names = [str(choice) for choice in choices]
        guess = did_you_mean(value, names)
        hint = f"did you mean '{guess}'? " if guess else ""
        raise argparse.ArgumentError(
            action, f"invalid choice: '{value}' ({hint}choose from {', '.join(names)})"
        )

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        # Kept for `error`: a missing required option may be a mistyped one.
        self._given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(self._given, namespace)

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        """As argparse's, with "did you mean" after an unrecognized option
        (``--provder`` -> ``--provider``), among the options of the subcommand given."""
        given = list(sys.argv[1:] if args is None else args)
        parsed, extras = self.parse_known_args(given, namespace)
        if extras:
            hints = _option_hints(_options_in_use(self, given), extras)
            self.error(f"unrecognized arguments: {' '.join(extras)}{hints}")
        return parsed

    def error(self, message: str) -> NoReturn:
        if message.startswith("the following arguments are required"):  # mistyped, perhaps
            known = self._option_string_actions
            unknown = [w for w in getattr(self, "_given", []) if w.split("=", 1)[0] not in known]
            message += _option_hints(list(known), unknown)
        self.usage_error(message)

    def usage_error(self, message: str) -> NoReturn:
        """Print the usage and `message`, exit 2 (a command may name itself otherwise)."""
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


def _option_hints(known: list[str], words: list[str]) -> str:
    """``" (did you mean '--provider' for '--provder'?)"`` for each option among `words`
    close to one of the `known` option strings."""
    guesses = []
    for word in words:
        option = word.split("=", 1)[0]
        if option.startswith("-") and (guess := did_you_mean(option, known)) is not None:
            guesses.append(f"did you mean '{guess}' for '{option}'?")
    return f" ({'; '.join(guesses)})" if guesses else ""


def _options_in_use(parser: argparse.ArgumentParser, given: list[str]) -> list[str]:
    """The option strings of `parser` and of each subcommand `given` descends into."""
    options: list[str] = []
    while True:
        options += [o for action in parser._actions for o in action.option_strings]
        chosen = subcommands(parser)
        name = next((word for word in given if word in chosen), None)
        if name is None:
            return options
        parser, given = chosen[name], given[given.index(name) + 1 :]


def add_version(parser: argparse.ArgumentParser) -> None:
    """``--version``: the distribution's version (read only when asked)."""
    parser.add_argument(
        "--version", action=_VersionAction, nargs=0, help="print the version and exit"
    )


class _VersionAction(argparse.Action):
    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(version_line(parser.prog.split()[0]))
        parser.exit(0)


def version_line(program: str) -> str:
    # From the source, not importlib.metadata: reading the installed metadata would cost
    # `prose --version` more than all the rest of its start-up.
    return f"{program} {__version__}"


def apply(parser: argparse.ArgumentParser) -> None:
    """Give ``parser`` and each of its subcommands the shared options: ``-q``/``-v``,
    ``--json`` beside every ``--format text|json``, ``--version`` and ``--completion`` on
    the top level. Options a command already has are left as they are."""
    _add_verbosity(parser, top=True)
    add_version(parser)
    parser.add_argument(
        "--completion",
        action=_CompletionAction,
        choices=SHELLS,
        help="print a shell completion script (bash, zsh or fish) and exit",
    )
    _add_json_alias(parser)
    for sub in subcommands(parser).values():
        add_command_options(sub)


def add_command_options(parser: argparse.ArgumentParser) -> None:
    """A subcommand's shared options: ``-q``/``-v`` and ``--json`` beside ``--format``. When
    the top level has ``-q``/``-v`` too, an unset one here leaves the top level's value."""
    _add_verbosity(parser, top=False)
    _add_json_alias(parser)


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _has_option(parser: argparse.ArgumentParser, option: str) -> bool:
    return option in parser._option_string_actions


def _add_verbosity(parser: argparse.ArgumentParser, *, top: bool) -> None:
    # On a subcommand the default is SUPPRESS, so `vlp -q validate x` keeps the top-level value.
    default_quiet: Any = False if top else argparse.SUPPRESS
    default_verbose: Any = 0 if top else argparse.SUPPRESS
    if not _has_option(parser, "-q"):
        names = ["-q"] + ([] if _has_option(parser, "--quiet") else ["--quiet"])
        parser.add_argument(
            *names,
            dest="quiet",
            action="store_true",
            default=default_quiet,
            help="print only results and errors",
        )
    if not _has_option(parser, "-v"):
        names = ["-v"] + ([] if _has_option(parser, "--verbose") else ["--verbose"])
        parser.add_argument(
            *names,
            dest="verbose",
            action="count",
            default=default_verbose,
            help="say more about what is done (repeat for more)",
        )


def _add_json_alias(parser: argparse.ArgumentParser) -> None:
    action = parser._option_string_actions.get("--format")
    if action is None or _has_option(parser, "--json"):
        return
    if action.choices is None or "json" not in action.choices:
        return
    parser.add_argument(
        "--json",
        dest=action.dest,
        action="store_const",
        const="json",
        help="the same as --format json",
    )


class _CompletionAction(argparse.Action):
    def __call__(
        self, parser: argparse.ArgumentParser, namespace: Any, values: Any, option: Any = None
    ) -> None:
        from cliconventions.completion import script, tree_of

        print(script(str(values), parser.prog, tree_of(parser)), end="")
        parser.exit(0)


def color_enabled(stream: TextIO) -> bool:
    """Colour on terminals only; ``NO_COLOR`` (any non-empty value) turns it off everywhere
    and wins over ``FORCE_COLOR``, which turns it on even when output is piped
    (https://no-color.org, https://force-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


_SGR = {"red": "31", "yellow": "33", "blue": "34", "green": "32", "bold": "1", "dim": "2"}


def paint(text: str, style: str, enabled: bool) -> str:
    """``text`` in an ANSI style (``red``, ``bold``...) when ``enabled``."""
    return f"\x1b[{_SGR[style]}m{text}\x1b[0m" if enabled else text

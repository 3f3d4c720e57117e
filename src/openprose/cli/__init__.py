"""The `prose` command. Each subcommand lives in its own module, imported only when used so
that start-up stays fast (`prose run` must reach its first request within half a second).

A subcommand module defines ``add_arguments(parser)`` and ``run(args) -> int`` (the exit code).
"""

import os
import sys

TYPE_CHECKING = False  # argparse is imported by the parsers' builders: `--version` skips it
if TYPE_CHECKING:
    import argparse

# name -> (module, one-line help). Order is the order `prose --help` lists them in.
COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("openprose.cli.check", "validate programs and print diagnostics"),
    "compile": ("openprose.cli.compile", "print a program in canonical compiled form"),
    "fmt": ("openprose.cli.fmt", "rewrite programs in canonical layout, keeping comments"),
    "run": ("openprose.cli.run", "run a program against a model provider"),
    "resume": ("openprose.cli.resume", "continue an interrupted run"),
    "fork": ("openprose.cli.fork", "start a new run from a step of another, changing inputs"),
    "test": ("openprose.cli.test", "run the cases of test files (NAME.test.toml) and report"),
    "install": (
        "openprose.cli.install",
        "fetch, verify and pin the remote programs and skills programs import",
    ),
    "batch": ("openprose.cli.batch", "run a program once per case of a JSONL or CSV file"),
    "runs": ("openprose.cli.runs", "list runs and their status"),
    "show": ("openprose.cli.show", "show a run's steps, decisions, bindings and outputs"),
    "ui": ("openprose.cli.ui", "serve a live web view of the runs on 127.0.0.1"),
    "approve": ("openprose.cli.approve", "approve a waiting run's pending permission requests"),
    "deny": ("openprose.cli.deny", "deny a waiting run's pending permission requests"),
    "answer": ("openprose.cli.answer", "answer a waiting run's question (an `ask`)"),
    "explain": ("openprose.cli.explain", "print what a diagnostic code means and how to fix it"),
    "config": ("openprose.cli.config", "show which settings file and provider would be used"),
    "cache": ("openprose.cli.cache", "show or clear the answer cache of earlier runs (memo)"),
    "lsp": ("openprose.cli.lsp", "language server for editors, over stdio (extra [lsp])"),
}

USAGE_ERROR = 2
# Options before the command name, for every command (`prose -q check .`).
GLOBAL_FLAGS = {"-q": "quiet", "--quiet": "quiet", "-v": "verbose", "--verbose": "verbose"}


def _overview() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = ["usage: prose [-q | -v] COMMAND [ARGS]...", "", "commands:"]
    lines += [f"  {name.ljust(width)}  {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += [
        "",
        "options: --version, --completion {bash,zsh,fish} (print a completion script),",
        "-q (only results and errors), -v (say more). Every FILE may be - for stdin.",
        "",
        "Run `prose COMMAND --help` (or `prose help COMMAND`) for a command's options; the",
        "language guide is docs/guide.md.",
    ]
    return "\n".join(lines)


def command_parser(name: str) -> "argparse.ArgumentParser":
    """The parser of one subcommand, its module's options plus the shared ones."""
    import importlib

    from cliconventions import ConventionalParser, add_command_options

    module = importlib.import_module(COMMANDS[name][0])
    parser = ConventionalParser(prog=f"prose {name}", description=COMMANDS[name][1])
    module.add_arguments(parser)
    add_command_options(parser)
    return parser


def full_parser() -> "argparse.ArgumentParser":
    """Every command in one argparse tree: for shell completion only (it imports them all)."""
    import importlib

    from cliconventions import ConventionalParser, add_command_options, add_version

    parser = ConventionalParser(prog="prose")
    add_version(parser)
    parser.add_argument("--completion", choices=("bash", "zsh", "fish"))
    parser.add_argument("-q", "--quiet", action="store_true")
    parser.add_argument("-v", "--verbose", action="count")
    commands = parser.add_subparsers(dest="command")
    for name, (module_name, help_) in COMMANDS.items():
        sub = commands.add_parser(name, help=help_)
        importlib.import_module(module_name).add_arguments(sub)
        add_command_options(sub)
    return parser


QUOTES = "\"'"


def version_line() -> str:
    """``prose VERSION``, the version read from the line of cliconventions' source that
    setuptools reads too, without importing it: its argparse (with gettext, enum) would be
    most of `prose --version`'s start-up."""
    source = os.path.join(
        os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "cliconventions", "__init__.py"
    )
    try:
        with open(source, encoding="utf-8") as lines:
            for line in lines:
                if line.startswith("__version__ = "):
                    version = line.partition("=")[2].split("#")[0].strip()
                    return f"prose {version.strip(QUOTES)}"
    except OSError:  # an install that does not keep the source beside us
        pass
    from cliconventions import version_line as imported_version_line

    return imported_version_line("prose")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--version"]:  # first: completion scripts and editors call it constantly
        print(version_line())
        return 0
    for stream in (sys.stdout, sys.stderr):  # a terminal that cannot show a character (an
        reconfigure = getattr(stream, "reconfigure", None)  # answer, a path) gets an escape
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    if argv is None:  # the process is `prose`: a native crash of its runs is recorded
        from openprose.vm.crashes import this_process_is_the_command

        this_process_is_the_command()
    flags: dict[str, int] = {"quiet": 0, "verbose": 0}
    while args and args[0] in GLOBAL_FLAGS:
        flags[GLOBAL_FLAGS[args[0]]] += 1
        args = args[1:]
    if not args or args[0] in {"-h", "--help"}:
        print(_overview())
        return 0 if args else USAGE_ERROR
    if args[0] == "--version":  # after global flags (`prose -q --version`)
        print(version_line())
        return 0
    if args[0] == "--completion" or args[0].startswith("--completion="):
        return _completion(args)
    name = args[0]
    if name == "help":  # `prose help` and `prose help run`, as git and cargo take them
        if len(args) > 1 and args[1] in COMMANDS:
            command_parser(args[1]).print_help()
            return 0
        if len(args) > 1:
            return _unknown_command(args[1])
        print(_overview())
        return 0
    if name not in COMMANDS:
        return _unknown_command(name)
    parser = command_parser(name)
    try:
        namespace = parser.parse_args(args[1:])
    except SystemExit as exit_:  # argparse exits 2 on usage errors and 0 on --help
        return int(exit_.code or 0)
    namespace.quiet = bool(getattr(namespace, "quiet", False) or flags["quiet"])
    namespace.verbose = int(getattr(namespace, "verbose", 0) or 0) + flags["verbose"]
    import importlib

    from cliconventions import guard_output

    module = importlib.import_module(COMMANDS[name][0])

    # Ctrl-C and SIGTERM the command does not handle itself: one line, exit 130 / 143.
    return guard_output("prose", lambda: int(module.run(namespace)))


def _unknown_command(name: str) -> int:
    from cliconventions import did_you_mean

    guess = did_you_mean(name, COMMANDS)
    hint = f" (did you mean '{guess}'?)" if guess else ""
    print(f"prose: unknown command '{name}'{hint}\n\n{_overview()}", file=sys.stderr)
    return USAGE_ERROR


def _completion(args: list[str]) -> int:
    from cliconventions.completion import script, tree_of

    shell = args[0].partition("=")[2] or (args[1] if len(args) > 1 else "")
    if shell not in ("bash", "zsh", "fish"):
        print("prose: --completion takes bash, zsh or fish", file=sys.stderr)
        return USAGE_ERROR
    print(script(shell, "prose", tree_of(full_parser())), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The `prose` command. Each subcommand lives in its own module, imported only when used so
that start-up stays fast (`prose run` must reach its first request within half a second).

A subcommand module defines ``add_arguments(parser)`` and ``run(args) -> int`` (the exit code).
"""

from __future__ import annotations

import argparse
import importlib
import sys

# name -> (module, one-line help). Order is the order `prose --help` lists them in.
COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("openprose.cli.check", "validate programs and print diagnostics"),
    "compile": ("openprose.cli.compile", "print a program in canonical compiled form"),
    "fmt": ("openprose.cli.fmt", "rewrite programs in canonical layout, keeping comments"),
    "run": ("openprose.cli.run", "run a program against a model provider"),
    "resume": ("openprose.cli.resume", "continue an interrupted run"),
    "runs": ("openprose.cli.runs", "list runs and their status"),
    "show": ("openprose.cli.show", "show a run's steps, decisions, bindings and outputs"),
    "lsp": ("openprose.cli.lsp", "language server for editors, over stdio (extra [lsp])"),
}

USAGE_ERROR = 2


def _overview() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = ["usage: prose COMMAND [ARGS]...", "", "commands:"]
    lines += [f"  {name.ljust(width)}  {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += ["", "Run `prose COMMAND --help` for a command's options."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # a terminal that cannot show a character (an
        reconfigure = getattr(stream, "reconfigure", None)  # answer, a path) gets an escape
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in {"-h", "--help"}:
        print(_overview())
        return 0 if args else USAGE_ERROR
    if args[0] == "--version":
        from importlib.metadata import version

        print(f"prose {version('openprose')}")
        return 0
    name = args[0]
    if name not in COMMANDS:
        print(f"prose: unknown command '{name}'\n\n{_overview()}", file=sys.stderr)
        return USAGE_ERROR
    module = importlib.import_module(COMMANDS[name][0])
    parser = argparse.ArgumentParser(prog=f"prose {name}", description=COMMANDS[name][1])
    module.add_arguments(parser)
    try:
        namespace = parser.parse_args(args[1:])
    except SystemExit as exit_:  # argparse exits 2 on usage errors and 0 on --help
        return int(exit_.code or 0)
    try:
        return int(module.run(namespace))
    except KeyboardInterrupt:
        print("prose: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())

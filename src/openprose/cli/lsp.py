"""``prose lsp``: the language server, speaking LSP over stdin/stdout (see docs/editors.md).

It needs pygls, which is the ``[lsp]`` extra (``pip install 'openprose[lsp]'``): it is kept
out of the core because importing it costs ~0.7 s, which every other command would pay.
"""

from __future__ import annotations

import argparse
import sys

MISSING = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--stdio",
        action="store_true",
        help="talk over stdin/stdout (the default and only transport; accepted for clients "
        "that pass it)",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help="log everything the server does to stderr, with tracebacks",
    )


def run(args: argparse.Namespace) -> int:
    try:
        from openprose.lsp.server import serve
    except ImportError as error:
        missing = error.name or "pygls"
        print(
            f"prose lsp: {missing} is not installed; install the language server with "
            "`pip install 'openprose[lsp]'`",
            file=sys.stderr,
        )
        return MISSING
    return serve(debug=args.debug)

"""``prose ui [--port N]``: serve a live web view of the project's runs on 127.0.0.1.

The first line printed is the page's URL, with the random token every request must carry;
``--url-file PATH`` also writes it to a file a script can wait for (a pipe from ``prose ui``
never closes while the server runs). Ctrl-C stops the server (exit 0). See docs/ui.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--port", type=int, default=0, metavar="N", help="port on 127.0.0.1 (default: any free one)"
    )
    parser.add_argument("--open", action="store_true", help="open the page in a web browser")
    parser.add_argument(
        "--url-file",
        metavar="PATH",
        help="also write the URL to PATH (mode 600, whole once it exists; removed on exit)",
    )


def run(args: argparse.Namespace) -> int:
    import asyncio
    import sys

    from openprose.project import runs_home
    from openprose.ui.server import PortInUse

    if not 0 <= args.port <= 65535:
        print(f"prose ui: --port {args.port}: a port is 0 to 65535", file=sys.stderr)
        return 2
    url_file = Path(args.url_file) if args.url_file else None
    if url_file is not None and not url_file.parent.is_dir():
        print(f"prose ui: --url-file {url_file}: no folder {url_file.parent}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(_serve(runs_home(), args.port, args.open, args.quiet, url_file))
    except PortInUse as error:
        print(f"prose ui: {error.strerror}", file=sys.stderr)
        return 2
    except OSError as error:
        print(
            f"prose ui: cannot listen on 127.0.0.1:{args.port}: {error.strerror}", file=sys.stderr
        )
        return 2


async def _serve(
    project: Path, port: int, open_browser: bool, quiet: bool, url_file: Path | None
) -> int:
    import asyncio
    import signal
    import sys

    from openprose.ui.server import start

    serving = await start(project, port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    # before the URL is printed: a caller may stop the server as soon as it has read it
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    if url_file is not None:
        try:
            _write_url(url_file, serving.url)
        except OSError as error:
            await serving.runner.cleanup()
            print(f"prose ui: --url-file {url_file}: {error.strerror}", file=sys.stderr)
            return 2
    print(serving.url, flush=True)
    if not quiet:
        print(
            f"prose ui: serving the runs of {project} (Ctrl-C to stop)", file=sys.stderr, flush=True
        )
    if open_browser:
        import webbrowser

        webbrowser.open(serving.url)
    try:
        await stop.wait()
    finally:
        await serving.runner.cleanup()
        if url_file is not None:
            url_file.unlink(missing_ok=True)  # a stale URL would name a server that is gone
    if not quiet:
        print("prose ui: stopped", file=sys.stderr)
    return 0


def _write_url(path: Path, url: str) -> None:
    """The URL and a newline, in a file only its owner reads (the token is a password),
    renamed into place so a reader never sees half of it."""
    import os

    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, (url + "\n").encode("ascii"))
    finally:
        os.close(fd)
    os.replace(temp, path)

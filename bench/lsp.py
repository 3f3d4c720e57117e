"""`prose lsp`: didChange on a 10,000-line program -> its published diagnostics, and memory.

Starts the real server (`python -m openprose.cli lsp`) with pygls's client over stdio, opens a
generated program of ``--lines`` lines (bench/frontend.py's chunk: every construct), then times
``--repeat`` edits: each is one incremental didChange (a word of a prompt, alternating so every
version differs), timed from the moment it is sent to the arrival of the publishDiagnostics
for that version. The figure includes the server's debounce (openprose.lsp.server.QUIET_S),
the parse and check, serialising the diagnostics and both pipes.
Baseline in the same run: `check_source` of the same text in this process (parse + checker,
what the server must do at least). **Goal:** <= 150 ms.

Memory: the server's resident set (VmRSS) right after initialisation and after opening every
program in examples/ (diagnostics of each received), and after the large program too.

    python bench/lsp.py [--quick] [--lines 10000] [--repeat 15]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

from frontend import _PROSE_CHUNK, _build  # bench/frontend.py: the shared program generator
from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

from openprose import check_source
from openprose.lsp.server import QUIET_S
from openprose.source import SourceFile

GOAL_MS = 150.0
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
_WORDS = ("Approach A", "Approach Z")  # same length: the edit never moves a line


class Client:
    def __init__(self) -> None:
        self.lsp = LanguageClient("prose-bench", "1")
        self.arrivals: dict[tuple[str, int | None], float] = {}
        self.counts: dict[tuple[str, int | None], int] = {}
        self.event = asyncio.Event()

        @self.lsp.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def published(params: lsp.PublishDiagnosticsParams) -> None:
            key = (params.uri, params.version)
            self.arrivals[key] = time.perf_counter()
            self.counts[key] = len(params.diagnostics)
            self.event.set()

    async def start(self) -> None:
        await self.lsp.start_io(sys.executable, "-m", "openprose.cli", "lsp")
        await self.lsp.initialize_async(lsp.InitializeParams(capabilities=lsp.ClientCapabilities()))
        self.lsp.initialized(lsp.InitializedParams())

    async def wait(self, uri: str, version: int) -> float:
        while (uri, version) not in self.arrivals:
            self.event.clear()
            await asyncio.wait_for(self.event.wait(), 60)
        return self.arrivals[(uri, version)]

    def open(self, uri: str, text: str) -> None:
        self.lsp.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                lsp.TextDocumentItem(uri=uri, language_id="prose", version=1, text=text)
            )
        )

    def rss_mib(self) -> float:
        server = self.lsp._server  # the server's process (pygls keeps it here)
        assert server is not None
        with open(f"/proc/{server.pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    async def stop(self) -> None:
        await self.lsp.shutdown_async(None)
        self.lsp.exit(None)
        await self.lsp.stop()


async def measure(lines: int, repeat: int) -> None:
    text = _build(_PROSE_CHUNK, lines)
    where = text.index(_WORDS[0])
    line = text.count("\n", 0, where)
    column = where - (text.rfind("\n", 0, where) + 1)
    start = time.perf_counter()
    expected = check_source(SourceFile.from_text(text, "<big>"))
    check_ms = (time.perf_counter() - start) * 1000
    checks = [check_ms]
    for _ in range(2):
        start = time.perf_counter()
        check_source(SourceFile.from_text(text, "<big>"))
        checks.append((time.perf_counter() - start) * 1000)

    client = Client()
    await client.start()
    rss_start = client.rss_mib()
    for number, path in enumerate(sorted(EXAMPLES.glob("*.prose"))):
        client.open(path.resolve().as_uri(), path.read_text(encoding="utf-8"))
        await client.wait(path.resolve().as_uri(), 1)
    examples = len(list(EXAMPLES.glob("*.prose")))
    rss_examples = client.rss_mib()

    uri = "untitled:big.prose"
    client.open(uri, text)
    await client.wait(uri, 1)
    latencies: list[float] = []
    for version in range(2, repeat + 2):
        word = _WORDS[version % 2]
        change = lsp.TextDocumentContentChangePartial(
            range=lsp.Range(lsp.Position(line, column), lsp.Position(line, column + len(word))),
            text=word,
        )
        sent = time.perf_counter()
        client.lsp.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                lsp.VersionedTextDocumentIdentifier(version=version, uri=uri), [change]
            )
        )
        arrived = await client.wait(uri, version)
        latencies.append((arrived - sent) * 1000)
        await asyncio.sleep(0.05)  # an idle editor between edits, as when someone types
    rss_big = client.rss_mib()
    published = client.counts[(uri, repeat + 1)]
    await client.stop()

    best_check = min(checks)
    best, median = min(latencies), statistics.median(latencies)
    print(
        f"program: {text.count(chr(10)):,} lines, {len(expected)} diagnostics "
        f"({published} published); {repeat} edits; debounce {QUIET_S * 1000:.0f} ms"
    )
    print(f"{'':34}{'min':>9}{'median':>9}{'max':>9}")
    print(f"{'didChange -> diagnostics (ms)':34}{best:9.1f}{median:9.1f}{max(latencies):9.1f}")
    print(
        f"{'baseline: check_source here (ms)':34}{best_check:9.1f}"
        f"{statistics.median(checks):9.1f}{max(checks):9.1f}"
    )
    print(f"ratio (median latency / best in-process check): {median / best_check:.2f}x")
    verdict = "PASS" if median <= GOAL_MS else "FAIL"
    print(f"goal: median <= {GOAL_MS:.0f} ms -> {median:.1f} ms {verdict}")
    print(
        f"server memory (VmRSS): {rss_start:.1f} MiB after initialize, "
        f"{rss_examples:.1f} MiB after opening all {examples} examples "
        f"(+{rss_examples - rss_start:.1f}), {rss_big:.1f} MiB with the large program too"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--lines", "--n", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="1,000 lines, 3 edits")
    args = parser.parse_args()
    if args.quick:
        args.lines, args.repeat = 1_000, 3
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    asyncio.run(measure(args.lines, args.repeat))
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()

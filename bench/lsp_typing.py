"""`prose lsp` while someone types: a burst of keystrokes into a 10,000-line program.

Starts the real server over stdio (pygls's client), opens a generated program of ``--lines``
lines (bench/frontend.py's chunk: every construct) and, after a pause, measures:

* **single edit**: one keystroke after a pause -> the publishDiagnostics of that version;
* **burst**: ``--keys`` keystrokes ``--gap`` ms apart (each inserts one character into a
  prompt) -> the publishDiagnostics of the final version, timed from the last keystroke; the
  diagnostics published during the burst, and the analyses started (the server's
  ``prose/analysisStats``; a server without it shows "-").

A publish is timed when its bytes reach the client (the JSON parser's first object): the
bench's pygls client then spends tens of ms structuring ~540 diagnostics with cattrs, work of
this Python client, not of the server nor of an editor's (``decoded`` columns: that time
included, as the figures before lsp34d were).

**Where the time goes**: the server's ``prose/analysisStats`` also returns its recent trace
(`openprose.lsp.trace`): for the single edits and the burst's last keystroke, the median ms
after the keystroke at which the server received it, queued and started its analysis, had it
parsed and checked, handed it back to the event loop, built and wrote the message; and the
CPU time of the thread doing each step (wall minus CPU is waiting for a core).
* **CPU**: the server process's CPU time (user + system, from ``/proc``, 10 ms ticks) spent
  on the single edit and on the whole burst. On a shared machine the wall times above grow
  with the load (another process's turn on the core is time the edit waits); the CPU time
  is the work itself, so it is the figure to compare across runs.

Baseline in the same run: the same measurements on ``--baseline`` (default ``main``), whose
``src/`` is exported with `git archive` and put first on the server's PYTHONPATH.
**Goals:** burst: final diagnostics <= 300 ms after the last keystroke, <= 2 analyses per
burst; single edit <= 150 ms.

    python bench/lsp_typing.py [--quick] [--lines 10000] [--repeat 3] [--baseline main]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _git_baseline import export
from frontend import _PROSE_CHUNK, _build  # bench/frontend.py: the shared program generator
from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

ROOT = Path(__file__).resolve().parents[1]
GOAL_FINAL_MS, GOAL_SINGLE_MS, GOAL_ANALYSES = 300.0, 150.0, 2
_ANCHOR = "Approach A"  # a prompt's word in every chunk of the generated program


class Client:
    def __init__(self) -> None:
        self.lsp = LanguageClient("prose-bench", "1")
        self.arrivals: dict[int | None, float] = {}
        self.raw_arrivals: dict[int | None, float] = {}  # before the client decoded it
        self.event = asyncio.Event()
        self.version = 1
        self._decoding: float | None = None  # when the message being decoded began
        self._decoded: float = float("nan")
        structure = self.lsp.protocol.structure_message

        def timed(data: dict[str, object]) -> object:
            # json.loads calls this for every object, innermost first: the first call of a
            # message comes as soon as its bytes are being parsed.
            if self._decoding is None:
                self._decoding = time.perf_counter()
            found = structure(data)
            if "jsonrpc" in data:  # the message itself: the last object of its text
                self._decoded, self._decoding = self._decoding, None
            return found

        self.lsp.protocol.structure_message = timed  # type: ignore[method-assign]

        @self.lsp.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def published(params: lsp.PublishDiagnosticsParams) -> None:
            self.arrivals[params.version] = time.perf_counter()
            self.raw_arrivals[params.version] = self._decoded
            self.event.set()

    async def start(self, src: Path) -> None:
        env = dict(os.environ, PYTHONPATH=str(src))
        await self.lsp.start_io(sys.executable, "-m", "openprose.cli", "lsp", env=env)
        await self.lsp.initialize_async(lsp.InitializeParams(capabilities=lsp.ClientCapabilities()))
        self.lsp.initialized(lsp.InitializedParams())

    async def wait(self, version: int) -> float:
        while version not in self.arrivals:
            self.event.clear()
            await asyncio.wait_for(self.event.wait(), 120)
        return self.arrivals[version]

    async def stats(self) -> Any:
        try:
            return await self.lsp.protocol.send_request_async("prose/analysisStats", None)
        except Exception:  # noqa: BLE001  # the baseline has no such request
            return None

    async def analyses(self) -> int | None:
        found = await self.stats()
        return None if found is None else int(found.started)

    async def trace(self, uri: str) -> list[tuple[str, int | None, float, float]]:
        """The server's recent events for ``uri`` (`openprose.lsp.trace`); none from a
        server without."""
        found = await self.stats()
        events = getattr(found, "trace", None) or []
        return [(str(e[0]), e[2], float(e[3]), float(e[4])) for e in events if e[1] == uri]

    def open(self, uri: str, text: str) -> None:
        self.lsp.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                lsp.TextDocumentItem(uri=uri, language_id="prose", version=1, text=text)
            )
        )

    def type(self, uri: str, at: lsp.Position, char: str) -> int:
        self.version += 1
        change = lsp.TextDocumentContentChangePartial(range=lsp.Range(at, at), text=char)
        self.lsp.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                lsp.VersionedTextDocumentIdentifier(version=self.version, uri=uri), [change]
            )
        )
        return self.version

    def cpu_ms(self) -> float:
        """The server process's CPU time so far (user + system), in ms; NaN off Linux."""
        try:
            fields = Path(f"/proc/{self.lsp._server.pid}/stat").read_text().rsplit(")", 1)[1]
        except (OSError, AttributeError):
            return float("nan")
        utime, stime = fields.split()[11:13]  # fields 14 and 15 of proc(5)
        return (int(utime) + int(stime)) * 1000 / os.sysconf("SC_CLK_TCK")

    async def stop(self) -> None:
        await self.lsp.shutdown_async(None)
        self.lsp.exit(None)
        await self.lsp.stop()


# An edit's way through the server (`openprose.lsp.trace`), then the client's side.
STEPS = (
    "received",
    "queued",
    "analysing",
    "parsed",
    "checked",
    "handed-back",
    "converted",
    "written",
    "client: bytes",
    "client: decoded",
)

# Steps done by the thread that did the step before (worker: analysing -> parsed -> checked;
# event loop: handed-back -> converted -> written): their CPU difference is that step's work.
_SAME_THREAD_AS_PREVIOUS = frozenset(("parsed", "checked", "converted", "written"))


async def timeline(client: Client, uri: str, version: int, sent: float) -> dict[str, float]:
    """ms from ``sent`` to each step of ``version`` (the last time it happened); under
    "cpu: STEP", the CPU time its thread spent since its previous step."""
    found: dict[str, float] = {}
    thread_cpu: dict[str, float] = {}  # a step's thread CPU time, for the next step's thread
    for event, number, at, cpu in await client.trace(uri):
        if number != version:
            continue
        found[event] = (at - sent) * 1000
        previous = STEPS[STEPS.index(event) - 1] if event in STEPS[1:] else None
        if previous in thread_cpu and event in _SAME_THREAD_AS_PREVIOUS:
            found[f"cpu: {event}"] = (cpu - thread_cpu[previous]) * 1000
        thread_cpu[event] = cpu
    found["client: bytes"] = (client.raw_arrivals.get(version, float("nan")) - sent) * 1000
    found["client: decoded"] = (client.arrivals.get(version, float("nan")) - sent) * 1000
    return found


async def measure(
    src: Path, text: str, keys: int, gap_s: float, repeat: int
) -> tuple[dict[str, float], dict[str, list[dict[str, float]]]]:
    where = text.index(_ANCHOR) + len(_ANCHOR)
    line = text.count("\n", 0, where)
    column = where - (text.rfind("\n", 0, where) + 1)
    client = Client()
    await client.start(src)
    uri = "untitled:typing.prose"
    client.open(uri, text)
    await client.wait(1)
    singles: list[float] = []
    finals: list[float] = []
    singles_decoded: list[float] = []  # the same, once the bench's pygls client decoded them
    finals_decoded: list[float] = []
    published: list[int] = []
    analyses: list[float] = []
    single_cpu: list[float] = []
    burst_cpu: list[float] = []
    traces: dict[str, list[dict[str, float]]] = {"single": [], "final": []}
    for _ in range(repeat):
        await asyncio.sleep(1.0)  # a pause: the next keystroke is a single edit
        cpu = client.cpu_ms()
        sent = time.perf_counter()
        version = client.type(uri, lsp.Position(line, column), "x")
        column += 1
        await client.wait(version)
        singles.append((client.raw_arrivals[version] - sent) * 1000)
        singles_decoded.append((client.arrivals[version] - sent) * 1000)
        single_cpu.append(client.cpu_ms() - cpu)
        traces["single"].append(await timeline(client, uri, version, sent))
        await asyncio.sleep(1.0)
        before_count = await client.analyses()
        first = client.version + 1
        cpu = client.cpu_ms()
        begun = time.perf_counter()
        for key in range(keys):
            await asyncio.sleep(max(0.0, begun + key * gap_s - time.perf_counter()))
            last_sent = time.perf_counter()
            version = client.type(uri, lsp.Position(line, column), "y")
            column += 1
        await client.wait(version)
        finals.append((client.raw_arrivals[version] - last_sent) * 1000)
        finals_decoded.append((client.arrivals[version] - last_sent) * 1000)
        burst_cpu.append(client.cpu_ms() - cpu)
        await asyncio.sleep(0.5)  # anything still coming for the burst
        published.append(sum(1 for v in client.arrivals if v is not None and v >= first))
        traces["final"].append(await timeline(client, uri, version, last_sent))
        after_count = await client.analyses()
        if before_count is not None and after_count is not None:
            analyses.append(after_count - before_count)
    await client.stop()
    return traces, {
        "single": statistics.median(singles),
        "final": statistics.median(finals),
        "final_max": max(finals),
        "single_decoded": statistics.median(singles_decoded),
        "final_decoded": statistics.median(finals_decoded),
        "published": max(published),
        "analyses": max(analyses) if analyses else float("nan"),
        "single_cpu": statistics.median(single_cpu),
        "burst_cpu": statistics.median(burst_cpu),
    }


def show_timelines(traces: dict[str, list[dict[str, float]]]) -> None:
    """Median ms after the keystroke at which each step happened (single edit; the burst's
    last keystroke)."""
    print(
        f"{'  where the time goes (ms after the keystroke)':48}{'single':>8}{'final':>8}"
        f"{'CPU: single':>13}{'final':>8}"
    )
    for step in STEPS:
        row = []
        for key in (step, f"cpu: {step}"):
            for kind in ("single", "final"):
                values = [t[key] for t in traces[kind] if key in t and t[key] == t[key]]
                width = 13 if key != step and kind == "single" else 8
                row.append(
                    f"{statistics.median(values):{width}.1f}" if values else f"{'':>{width}}"
                )
        print(f"    {step:44}{''.join(row)}")


async def run(options: argparse.Namespace) -> None:
    text = _build(_PROSE_CHUNK, options.lines)
    print(
        f"program: {text.count(chr(10)):,} lines; {options.keys} keystrokes "
        f"{options.gap:.0f} ms apart; median of {options.repeat} bursts"
    )
    with tempfile.TemporaryDirectory() as folder:
        variants = {
            f"baseline {options.baseline}": export(options.baseline, Path(folder)),
            "this tree": ROOT / "src",
        }
        print(
            f"{'':22}{'single edit ms':>15}{'final ms':>10}{'(max)':>8}"
            f"{'published':>11}{'analyses':>10}{'CPU: single':>13}{'burst':>7}"
            f"{'decoded: single':>17}{'final':>7}"
        )
        results = {}
        timelines = {}
        for name, src in variants.items():
            traces, found = await measure(
                src, text, options.keys, options.gap / 1000, options.repeat
            )
            results[name] = found
            timelines[name] = traces
            analyses = "-" if found["analyses"] != found["analyses"] else f"{found['analyses']:.0f}"
            print(
                f"{name:22}{found['single']:15.1f}{found['final']:10.1f}{found['final_max']:8.1f}"
                f"{found['published']:11.0f}{analyses:>10}"
                f"{found['single_cpu']:13.0f}{found['burst_cpu']:7.0f}"
                f"{found['single_decoded']:17.1f}{found['final_decoded']:7.1f}"
            )
            print(f"{'':22}load average now: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for name, traces in timelines.items():
        if any(len(t) > 2 for t in traces["single"]):  # the server keeps a trace
            print(name)
            show_timelines(traces)
    mine = results["this tree"]
    for label, value, decoded, goal in (
        ("final diagnostics after the burst", mine["final"], mine["final_decoded"], GOAL_FINAL_MS),
        ("single edit", mine["single"], mine["single_decoded"], GOAL_SINGLE_MS),
    ):
        verdict = "PASS" if value <= goal else "FAIL"
        print(
            f"goal: {label} <= {goal:.0f} ms -> {value:.1f} ms {verdict} "
            f"({decoded:.1f} ms once the bench's pygls client decoded them)"
        )
    verdict = "PASS" if mine["analyses"] <= GOAL_ANALYSES else "FAIL"
    print(f"goal: analyses per burst <= {GOAL_ANALYSES} -> {mine['analyses']:.0f} {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--lines", "--n", type=int, default=10_000)
    parser.add_argument("--keys", type=int, default=30)
    parser.add_argument("--gap", type=float, default=50.0, help="ms between keystrokes")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", default="main", help="git ref (default main)")
    parser.add_argument("--quick", action="store_true", help="1,000 lines, 10 keys, 1 burst")
    options = parser.parse_args()
    if options.quick:
        options.lines, options.keys, options.repeat = 1_000, 10, 1
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    asyncio.run(run(options))
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()

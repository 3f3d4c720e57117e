"""Shared by the VM benchmarks (`bench/vm_*.py`): the loopback fake server, the baseline
clients (a plain aiohttp + orjson loop; the official SDK for reference, when it happens to be
installed), running a program through the VM in-process or as a whole `prose run` process,
and the result table.

Nothing here asserts: the benchmarks report figures, ratios and PASS/FAIL against the goals
of issue 3, and exit 0.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # for tests.support.fake_llm_server
sys.path.insert(0, str(REPO / "src"))  # runnable without an editable install too

from tests.support.fake_llm_server import fetch_stats, start_in_subprocess

__all__ = [
    "PlainClient",
    "Table",
    "fetch_stats",
    "load_note",
    "parse_program",
    "project_dir",
    "prose_process",
    "reset_server",
    "sdk_client",
    "set_project_root",
    "start_in_subprocess",
    "summary",
    "vm_openai_provider",
    "vm_run",
]

API_KEY = "bench"
TIMEOUT_S = 300.0


# --- machine -----------------------------------------------------------------------------


def load_note() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f} (1 min) {five:.2f} (5 min) on {os.cpu_count()} cores"


# --- the loopback server -------------------------------------------------------------------


def reset_server(base_url: str) -> None:
    """Zero the fake server's counters (attempts, peak in flight) between timed runs."""
    request = urllib.request.Request(f"{base_url}/_control/reset", data=b"{}", method="POST")
    with urllib.request.urlopen(request, timeout=5):
        pass


class PlainClient:
    """The baseline: what a careful programmer writes by hand to call an OpenAI-compatible
    server — one aiohttp session (pool and keep-alive), bodies as orjson bytes, no checks
    beyond reading the answer's text."""

    def __init__(self, base_url: str, concurrency: int = 256) -> None:
        import aiohttp

        self.url = f"{base_url}/v1/chat/completions"
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=concurrency),
            headers={"authorization": f"Bearer {API_KEY}", "content-type": "application/json"},
            timeout=aiohttp.ClientTimeout(total=TIMEOUT_S),
        )

    async def ask(self, model: str, prompt: str) -> str:
        import orjson

        body = {
            "model": model,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": 1024,
        }
        async with self.session.post(self.url, data=orjson.dumps(body)) as answer:
            data = orjson.loads(await answer.read())
        return str(data["choices"][0]["message"]["content"] or "")

    async def close(self) -> None:
        await self.session.close()


def sdk_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("openai") is not None


def sdk_client(base_url: str) -> Any:
    """The official SDK on its aiohttp transport, no retries, same timeout: for a reference
    figure only (it is no dependency; callers check `sdk_installed()` first)."""
    import openai

    return openai.AsyncOpenAI(
        api_key=API_KEY,
        base_url=f"{base_url}/v1",
        max_retries=0,
        timeout=TIMEOUT_S,
        http_client=openai.DefaultAioHttpClient(),
    )


def prose_process(
    argv: Sequence[str],
    cwd: Path,
    base_url: str,
    src: Path | None = None,
    prefix: Sequence[str] = (),
) -> tuple[float, float, float, str]:
    """Run `prose ARGV` as a user would (a fresh interpreter, the console script's entry
    point) with the openai provider pointed at the loopback server: (wall seconds from spawn
    to exit, CPU seconds, peak RSS in MB, stdout). `src`: another tree's src/ to run (a
    baseline exported from git), instead of this one's. `prefix`: a command the interpreter
    runs under (valgrind, to count its instructions)."""
    import subprocess

    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PROSE_", "ANTHROPIC_", "OPENAI_")) and k != "PYTHONDONTWRITEBYTECODE"
    }
    env.update(OPENAI_BASE_URL=f"{base_url}/v1", OPENAI_API_KEY=API_KEY, TERM="dumb")
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(src or REPO / "src"), env.get("PYTHONPATH")])
    )
    code = "import sys; from openprose.cli import main; sys.argv[0] = 'prose'; raise SystemExit(main())"
    with tempfile.TemporaryFile() as errors:
        started = time.perf_counter()
        process = subprocess.Popen(
            [*prefix, sys.executable, "-c", code, *argv],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=errors,
        )
        assert process.stdout is not None
        out = process.stdout.read()
        _, status, usage = os.wait4(process.pid, 0)  # this child's own rusage
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        errors.seek(0)
        err = errors.read().decode(errors="replace")
    if process.returncode != 0:
        raise SystemExit(
            f"prose {' '.join(argv)} failed ({process.returncode}): {err or out.decode()[:2000]}"
        )
    cpu = usage.ru_utime + usage.ru_stime
    return wall, cpu, usage.ru_maxrss / 1024, out.decode()


# --- the VM --------------------------------------------------------------------------------


PROJECT_ROOT: str | None = None  # where project folders go; None: the system temp dir


def set_project_root(root: str | None) -> str:
    """Choose the file system the run folders are written to (`--project-root`); returns a
    description for the report. /dev/shm (tmpfs) takes the disk out of the figure."""
    global PROJECT_ROOT
    PROJECT_ROOT = root
    where = root or tempfile.gettempdir()
    return f"run folders under {where} ({_fs_type(where)})"


def _fs_type(path: str) -> str:
    best, kind = "", "?"
    try:
        with open("/proc/mounts", encoding="utf-8") as mounts:
            for line in mounts:
                fields = line.split()
                if len(fields) > 2 and path.startswith(fields[1]) and len(fields[1]) > len(best):
                    best, kind = fields[1], fields[2]
    except OSError:
        pass
    return kind


@contextmanager
def project_dir() -> Iterator[Path]:
    """A fresh project folder per VM run: run folders land in `.prose/runs/` inside it."""
    with tempfile.TemporaryDirectory(prefix="prose-bench-", dir=PROJECT_ROOT) as folder:
        yield Path(folder)


def parse_program(source: str, project: Path) -> tuple[Any, float]:
    """(program, parse seconds); the benchmarks time the run, not the parse."""
    from openprose.parser import parse_text

    started = time.perf_counter()
    parsed = parse_text(source, str(project / "bench.prose"))
    elapsed = time.perf_counter() - started
    if not parsed.ok:
        raise SystemExit(f"benchmark program does not parse: {parsed.diagnostics[:3]}")
    return parsed.program, elapsed


def vm_openai_provider(base_url: str, project: Path, concurrency: int) -> tuple[Any, Any]:
    """(settings, provider) as `prose run --provider openai --max-concurrency N` opens them,
    pointed at the loopback server."""
    from openprose.providers import load_settings, open_provider

    settings = load_settings(
        project,
        provider="openai",
        max_concurrency=concurrency,
        env={"OPENAI_BASE_URL": f"{base_url}/v1", "OPENAI_API_KEY": API_KEY},
    )
    return settings, open_provider(settings)


async def vm_run(
    program: Any,
    source: str,
    *,
    provider: Any,
    project: Path,
    concurrency: int,
    inputs: Mapping[str, Any] | None = None,
    settings: Any = None,
    expect_requests: int | None = None,
) -> tuple[float, float, Any]:
    """Run through `run_program`; (wall seconds, CPU seconds, RunResult). The provider is
    closed by the caller (the bare loops' client close is not timed either)."""
    from openprose.vm.runner import VMConfig, run_program

    cpu = time.process_time()
    started = time.perf_counter()
    result = await run_program(
        program,
        source,
        provider=provider,
        project_dir=project,
        inputs=inputs,
        settings=settings,
        # The benchmarks make up to 100,000 calls on purpose: no session budget.
        config=VMConfig(max_concurrency=concurrency, max_sessions=None),
    )
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu
    if result.status != "succeeded":
        raise SystemExit(f"VM run {result.status}: {result.error}")
    sent = result.usage.get("requests_sent")
    if expect_requests is not None and sent != expect_requests:
        raise SystemExit(f"VM run sent {sent} requests, expected {expect_requests}")
    return elapsed, cpu, result


# --- reporting -----------------------------------------------------------------------------


def summary(samples: Sequence[float]) -> tuple[float, float]:
    """(min, median): min is the figure (least disturbed by other load), median the check."""
    return min(samples), statistics.median(samples)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


@dataclass
class Table:
    title: str
    rows: list[tuple[str, ...]]

    def __init__(self, title: str, header: Sequence[str]) -> None:
        self.title = title
        self.header = tuple(header)
        self.rows = []

    def add(self, *cells: Any) -> None:
        self.rows.append(tuple(_cell(c) for c in cells))

    def print(self) -> None:
        widths = [
            max(len(str(row[i])) for row in (self.header, *self.rows) if i < len(row))
            for i in range(len(self.header))
        ]
        print(f"\n{self.title}")
        print("  ".join(h.ljust(w) for h, w in zip(self.header, widths, strict=True)).rstrip())
        print("  ".join("-" * w for w in widths))
        for row in self.rows:
            print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)).rstrip())
        sys.stdout.flush()


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.1f}"
    return str(value)


def dump_json(path: str | None, data: Any) -> None:
    if path:
        Path(path).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")

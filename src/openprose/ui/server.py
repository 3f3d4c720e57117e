"""The `prose ui` web server: aiohttp on 127.0.0.1, every route behind a random token.

Routes (each needs the token: `?token=` on GETs, the `X-Prose-Token` header on the POST):

    GET  /                                   the page (static/index.html)
    GET  /static/{app.js,batches.js,style.css}  its scripts and style sheet
    GET  /api/runs                           the runs, as `prose runs --json` lists them
    GET  /api/runs/{run}                     one run: header, statements, sessions (previews), …
    GET  /api/runs/{run}/session?step=S      one session in full: messages, system, answer
    GET  /api/batches                        the batches: progress, failures, tokens, cost, rows file
    GET  /api/batches/{batch}/rows[?status=S]  a batch's rows in line order, of one status
    GET  /api/events[?run=RUN]               server-sent events: `runs` when the list changes,
                                             `run` with what changed in RUN (the first one whole)
    POST /api/runs/{run}/approvals           {"answer": "once"|"run"|"deny", "ids": [...] | "all": true}
    POST /api/runs/{run}/fork                {"step": S, "inputs": {...}, "set": {...}} (`ui.forks`)
    POST /api/runs/{run}/answers             {"text": "...", "id": "q1"}: answer an `ask`

Everything read from a run goes out as JSON data; the page only ever puts it in the document
as text. A run is named by its folder name, which must be one of the folders `list_runs`
finds under the project's `.prose/runs/` (resolved, so a symlink cannot lead out of it).
"""

from __future__ import annotations

import asyncio
import errno
import hmac
import secrets
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Self

import orjson
from aiohttp import web

from openprose.batches.summary import batch_rows, batch_summaries
from openprose.record.journal import (
    JOURNAL_FILE,
    events_of,
    read_journal_between,
    read_journal_from,
)
from openprose.record.live import CLOSED, LiveJournal, live_journal
from openprose.record.runstore import RUNS_DIR, DamagedRun, RunStore, list_runs
from openprose.record.runview import RunDigest, in_full, statements
from openprose.session.answers import answer_question, answer_requests
from openprose.session.runs import read_meta, run_row, status_of
from openprose.statefiles import read_state_file
from openprose.ui.forks import FORKS_KEY, cancel_forks, start_fork
from openprose.vm.approvals import ANSWERS, ApprovalError
from openprose.vm.questions import AnswerError

__all__ = ["PortInUse", "UIServer", "make_app", "serve", "start"]

HOST = "127.0.0.1"
TOKEN_HEADER = "X-Prose-Token"
POLL_SECONDS = 0.25  # how often a live view looks at its run's journal
LIST_SECONDS = 2.0  # how often it looks for new runs
HEARTBEAT_SECONDS = 15.0  # an SSE comment so proxies and browsers keep the stream open
STATIC = {"app.js": "text/javascript", "batches.js": "text/javascript", "style.css": "text/css"}
# The page loads nothing from elsewhere, runs no inline script and is never framed.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",  # the token is in the URL: never send it on
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
TOKEN_KEY = web.AppKey("token", str)
CLOSING_KEY = web.AppKey("closing", asyncio.Event)


class PortInUse(OSError):
    """Another process listens on the port asked for."""

    def __init__(self, port: int) -> None:
        super().__init__(
            errno.EADDRINUSE,
            f"port {port} on {HOST} is in use (choose another with --port, or --port 0 for any "
            f"free port)",
        )
        self.port = port


# --- the runs -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Seen:
    """What a page was last sent of a run: the digest, its version then, and the header."""

    digest: RunDigest
    version: int
    header: dict[str, Any]


@dataclass
class RunWatch:
    """One run folder and its digest, kept current: `refresh` feeds it what the journal
    gained since the last look and re-reads run.json when it changed."""

    run_dir: Path
    price_of: Any = None
    digest: RunDigest = field(init=False)
    offset: int = 0
    meta: dict[str, Any] = field(default_factory=dict)
    meta_stamp: tuple[int, int] | None = None
    body: tuple[Any, ...] | None = None
    program_text: str = ""
    # Pages look from worker threads: one look at a time, so no digest changes under a reader.
    lock: threading.Lock = field(default_factory=threading.Lock)
    # A run this process is writing: its batches as written (`record.live`), not the file.
    live: LiveJournal | None = None
    batches: deque[tuple[bytes, int]] = field(default_factory=deque)  # appended by the run

    def __post_init__(self) -> None:
        self.digest = RunDigest(str(self.run_dir / JOURNAL_FILE), self.price_of)

    def _written(self, data: bytes, size: int) -> None:
        """A batch the run's journal wrote (on the run's thread: only appended here)."""
        self.batches.append((data, size))

    async def look(self, seen: Seen | None = None) -> tuple[dict[str, Any] | None, Seen]:
        """Catch up with the run's files, then what changed since `seen` (what a page was
        last sent): None when nothing did, everything when `seen` is None or the journal
        was rewritten since. Returns it with what the page has seen after it."""
        return await asyncio.to_thread(self._look, seen)

    async def session(self, step: str) -> dict[str, Any] | None:
        """One session in full, as it is now."""
        return await asyncio.to_thread(self._session, step)

    def _look(self, seen: Seen | None) -> tuple[dict[str, Any] | None, Seen]:
        with self.lock:
            self._refresh()
            header = self.header()
            since = 0
            if seen is not None and seen.digest is self.digest:
                if self.digest.version <= seen.version and header == seen.header:
                    return None, seen
                since = seen.version
            return self.view(since, header), Seen(self.digest, self.digest.version, header)

    def _session(self, step: str) -> dict[str, Any] | None:
        with self.lock:
            self._refresh()
            session = self.digest.sessions.get(step)
            return None if session is None else in_full(session)

    def _refresh(self) -> None:
        journal = self.run_dir / JOURNAL_FILE
        if self.live is None and self._listen(journal):
            return self._refresh_meta()
        if self.live is not None:
            self._take_batches()
            return self._refresh_meta()
        try:
            if journal.stat().st_size < self.offset:  # rewritten: start over
                self.digest, self.offset = RunDigest(str(journal), self.price_of), 0
        except FileNotFoundError:
            pass
        events, self.offset = read_journal_from(journal, self.offset)
        self.digest.add_all(events)
        self._refresh_meta()

    def _listen(self, journal: Path) -> bool:
        """Listen to the run's journal in memory when this process writes it: the file up
        to the size attaching gave, then the batches."""
        live = live_journal(journal)
        if live is None:
            return False
        self.live = live
        size = live.attach(self._written)
        self.digest.add_all(read_journal_between(journal, self.offset, size))
        self.offset = max(self.offset, size)
        return True

    def _take_batches(self) -> None:
        while self.batches:
            data, size = self.batches.popleft()
            if size == CLOSED:  # the run ended here: from now on the file is tailed
                self.live = None
                events, self.offset = read_journal_from(self.run_dir / JOURNAL_FILE, self.offset)
                self.digest.add_all(events)
                return
            if size > self.offset:  # not in what was read from the file
                self.digest.add_all(events_of(data))
                self.offset = size

    def _refresh_meta(self) -> None:
        meta_path = self.run_dir / "run.json"
        try:
            info = meta_path.stat()
        except FileNotFoundError:
            return
        stamp = (info.st_mtime_ns, info.st_size)
        if stamp != self.meta_stamp:
            self.meta_stamp = stamp
            try:
                self.meta = RunStore.open(self.run_dir).read_meta()
            except DamagedRun as error:
                self.meta = {"status": "damaged", "error": str(error)}
        if self.body is None:
            self._read_program()

    def _read_program(self) -> None:
        from openprose.parser import parse_text

        try:
            data = read_state_file(self.run_dir / "program.prose")  # never a FIFO's wait
            self.program_text = data.decode("utf-8", errors="replace")
        except OSError:
            self.program_text = ""
        self.body = parse_text(self.program_text, "program.prose").program.body

    def header(self) -> dict[str, Any]:
        """The run's status and what run.json says of it, with totals over its sessions."""
        status = "damaged" if self.meta.get("status") == "damaged" else status_of(self.meta)
        sessions = self.digest.sessions.values()
        costs = [s["cost"] for s in sessions if s["cost"] is not None]
        by_status: dict[str, int] = {}
        for session in sessions:
            by_status[session["status"]] = by_status.get(session["status"], 0) + 1
        return {
            "run_id": self.run_dir.name,
            "status": status,
            "program": self.meta.get("program"),
            "started": self.meta.get("started"),
            "finished": self.meta.get("finished"),
            "error": self.meta.get("error"),
            "result": self.meta.get("result"),
            "usage": self.meta.get("usage"),
            "inputs": self.meta.get("inputs") if isinstance(self.meta.get("inputs"), dict) else {},
            "forked_from": (
                parent if isinstance(parent := self.meta.get("forked_from"), dict) else None
            ),
            "totals": {
                "sessions": len(self.digest.sessions),
                "by_status": by_status,
                "tokens": sum(s["tokens"] for s in sessions),
                "cache_read_tokens": sum(s["cache_read_tokens"] for s in sessions),
                "cache_write_tokens": sum(s["cache_write_tokens"] for s in sessions),
                "cost": sum(costs) if costs else None,
                "unpriced": sum(1 for s in sessions if s["cost"] is None and s["tokens"]),
            },
        }

    def view(self, since: int, header: dict[str, Any]) -> dict[str, Any]:
        """What changed after digest version `since`; with 0, the whole run and its program."""
        shown = {
            "full": since == 0,
            "run": header,
            "statements": statements(self.body or (), self.digest, header["status"]),
            **self.digest.summary(since),
        }
        if since == 0:
            shown["program_text"] = self.program_text
        return shown


@dataclass
class Runs:
    """The project's runs folder: listing and the watches of runs opened in the page."""

    project: Path
    price_of: Any = None
    watches: dict[str, RunWatch] = field(default_factory=dict)
    metas: dict[str, tuple[tuple[int, int] | None, object]] = field(default_factory=dict)
    logged: tuple[object, list[Any]] = ((), [])  # batches' run logs: (their stamps, runs)

    @property
    def folder(self) -> Path:
        return self.project / RUNS_DIR

    def listing(self) -> list[dict[str, str]]:
        """`prose runs --json`'s rows; a run.json is read again only when it has changed
        (a batch leaves thousands), a running run's process is looked at each time."""
        rows = []
        for folder in list_runs(self.project):
            try:
                info = (folder / "run.json").stat()
                stamp: tuple[int, int] | None = (info.st_mtime_ns, info.st_size)
            except OSError:
                stamp = None
            cached = self.metas.get(folder.name)
            if cached is None or cached[0] != stamp or stamp is None:
                cached = self.metas[folder.name] = (stamp, read_meta(folder))
            rows.append(run_row(folder, cached[1]))
        # A batch's runs not yet asked for live in its run logs (`find` makes the folder).
        rows += [run_row(self.folder / run.run_id, run.meta) for run in self._logged_runs()]
        rows.sort(key=lambda row: row["run_id"])
        return rows

    def _logged_runs(self) -> list[Any]:
        """`logged_runs`, read again only when a batch's run log has changed."""
        from openprose.record.logged_runs import BATCHES_DIR, log_files, logged_runs

        stamps = []
        for batch in sorted((self.project / BATCHES_DIR).glob("*")):
            for log in log_files(batch):
                try:
                    info = log.stat()
                except OSError:
                    continue
                stamps.append((str(log), info.st_mtime_ns, info.st_size))
        folders = {p.name for p in list_runs(self.project)}
        if self.logged[0] != stamps:
            self.logged = (stamps, list(logged_runs(self.project)))
        return [run for run in self.logged[1] if run.run_id not in folders]

    def find(self, name: str) -> Path | None:
        """The run folder called `name`, only when it is a run directly inside the runs
        folder: names with separators, `..`, or links leading elsewhere find nothing."""
        if not name or name.startswith(".") or "/" in name or "\\" in name or "\0" in name:
            return None
        candidate = self.folder / name
        if not candidate.exists():
            self._materialize(name)
        try:
            if candidate.resolve().parent != self.folder.resolve():
                return None
        except (OSError, RuntimeError):
            return None
        return candidate if (candidate / "run.json").is_file() else None

    def _materialize(self, name: str) -> None:
        """A batch's run kept in its run log gets its folder now (as `prose show` does)."""
        from openprose.record.logged_runs import BATCHES_DIR, resolve_run
        from openprose.record.runstore import AmbiguousRun, RunBusy

        if not (self.project / BATCHES_DIR / name.rpartition("-")[0]).is_dir():
            return  # a batch's run is "{batch id}-{line}"
        try:
            resolve_run(self.project, name)
        except (AmbiguousRun, RunBusy, DamagedRun, OSError):
            pass  # not found as a folder, then

    def watch(self, name: str) -> RunWatch | None:
        watch = self.watches.get(name)
        if watch is None:
            run_dir = self.find(name)
            if run_dir is None:
                return None
            watch = self.watches[name] = RunWatch(run_dir, self.price_of)
        return watch


RUNS_KEY = web.AppKey("runs", Runs)


# --- the app ------------------------------------------------------------------------------


def make_app(project: Path, token: str) -> web.Application:
    """The aiohttp application serving `project`'s runs to whoever holds `token`."""
    app = web.Application(middlewares=[_guard])
    app[TOKEN_KEY] = token
    app[RUNS_KEY] = Runs(project, _prices_of(project))
    app[CLOSING_KEY] = asyncio.Event()
    app[FORKS_KEY] = set()
    app.on_shutdown.append(_closing)
    app.on_shutdown.append(cancel_forks)
    app.router.add_get("/", _page)
    app.router.add_get("/static/{name}", _static)
    app.router.add_get("/api/runs", _list)
    app.router.add_get("/api/runs/{run}", _run)
    app.router.add_get("/api/runs/{run}/session", _session)
    app.router.add_post("/api/runs/{run}/approvals", _approvals)
    app.router.add_post("/api/runs/{run}/fork", _fork)
    app.router.add_post("/api/runs/{run}/answers", _answers)
    app.router.add_get("/api/events", _events)
    app.router.add_get("/api/batches", _batches)
    app.router.add_get("/api/batches/{batch}/rows", _batch_rows)
    return app


def _prices_of(project: Path) -> Any:
    """The run's price table (packaged prices plus prose.toml's), as `prose run` charges."""
    from openprose.session.opening import UsageError, run_prices

    try:
        return run_prices(project).price_of
    except (UsageError, OSError, ValueError):  # a broken prose.toml: costs unknown, still shown
        return None


async def _closing(app: web.Application) -> None:
    app[CLOSING_KEY].set()  # live streams end, so shutdown does not wait for them


@web.middleware
async def _guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every route: a loopback Host (no DNS rebinding), the token, security headers."""
    try:
        if (request.host.rpartition(":")[0] or request.host) not in (HOST, "localhost"):
            raise web.HTTPForbidden(text="prose ui answers only to 127.0.0.1\n")
        if not _token_ok(request):
            raise web.HTTPUnauthorized(
                text="missing or wrong token: open the URL `prose ui` printed\n"
            )
        response = await handler(request)
    except web.HTTPException as error:
        response = web.Response(
            status=error.status, text=error.text, content_type=error.content_type
        )
    response.headers.update(SECURITY_HEADERS)
    return response


def _token_ok(request: web.Request) -> bool:
    expected = request.app[TOKEN_KEY].encode()
    if request.method == "GET":
        given = request.headers.get(TOKEN_HEADER) or request.query.get("token", "")
    else:  # a change only with the header: a form or link from another page cannot send it
        given = request.headers.get(TOKEN_HEADER, "")
    return hmac.compare_digest(given.encode(), expected)


def _static_text(name: str) -> str:
    return resources.files("openprose.ui").joinpath("static", name).read_text(encoding="utf-8")


async def _page(request: web.Request) -> web.Response:
    # The token (URL-safe characters only) goes into the asset links, as they need it too.
    html = _static_text("index.html").replace("{{TOKEN}}", request.app[TOKEN_KEY])
    return web.Response(text=html, content_type="text/html")


async def _static(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    if name not in STATIC:
        raise web.HTTPNotFound(text="no such file\n")
    return web.Response(text=_static_text(name), content_type=STATIC[name])


def _json(data: Any, status: int = 200) -> web.Response:
    body = orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS, default=str)
    return web.Response(body=body, status=status, content_type="application/json")


def _error(status: int, message: str) -> web.Response:
    return _json({"error": message}, status)


async def _list(request: web.Request) -> web.Response:
    return _json(await asyncio.to_thread(request.app[RUNS_KEY].listing))


async def _batches(request: web.Request) -> web.Response:
    return _json(await asyncio.to_thread(batch_summaries, request.app[RUNS_KEY].project))


async def _batch_rows(request: web.Request) -> web.Response:
    name, status = request.match_info["batch"], request.query.get("status") or None
    try:
        rows = await asyncio.to_thread(batch_rows, request.app[RUNS_KEY].project, name, status)
    except KeyError:
        return _error(404, f"no batch {name!r}")
    return _json(rows)


def _watched(request: web.Request, name: str) -> RunWatch:
    watch = request.app[RUNS_KEY].watch(name)
    if watch is None:
        raise web.HTTPNotFound(
            text=orjson.dumps({"error": f"no run {name!r}"}).decode(),
            content_type="application/json",
        )
    return watch


async def _run(request: web.Request) -> web.Response:
    view, _ = await _watched(request, request.match_info["run"]).look()
    return _json(view)


async def _session(request: web.Request) -> web.Response:
    watch = _watched(request, request.match_info["run"])
    step = request.query.get("step", "")
    session = await watch.session(step)
    if session is None:
        return _error(404, f"run {watch.run_dir.name} has no session {step!r}")
    return _json(session)


async def _approvals(request: web.Request) -> web.Response:
    """Answer pending requests exactly as `prose approve` / `prose deny` does (the journal
    records the answer as given `by` the ui)."""
    run_dir = request.app[RUNS_KEY].find(request.match_info["run"])
    if run_dir is None:
        return _error(404, f"no run {request.match_info['run']!r}")
    try:
        asked = await request.json(loads=orjson.loads)
    except (ValueError, orjson.JSONDecodeError):
        return _error(400, 'send a JSON object: {"answer": "once"|"run"|"deny", "ids": [...]}')
    answer = asked.get("answer") if isinstance(asked, dict) else None
    ids = asked.get("ids", []) if isinstance(asked, dict) else None
    if (
        answer not in ANSWERS
        or not isinstance(ids, list)
        or not all(isinstance(i, str) for i in ids)
    ):
        return _error(400, f"answer is one of {', '.join(ANSWERS)}; ids a list of request ids")
    try:
        answered = await asyncio.to_thread(
            answer_requests, run_dir, answer, ids, all_pending=bool(asked.get("all")), by="ui"
        )
    except (ApprovalError, DamagedRun) as error:
        return _error(409, str(error))
    return _json({"answered": answered, "next": f"prose resume {run_dir.name}"})


async def _fork(request: web.Request) -> web.Response:
    """Start a fork of the run at a step, as `prose fork` does (`ui.forks`)."""
    run_dir = request.app[RUNS_KEY].find(request.match_info["run"])
    if run_dir is None:
        return _error(404, f"no run {request.match_info['run']!r}")
    return await start_fork(request, run_dir)


async def _answers(request: web.Request) -> web.Response:
    """Answer a question exactly as `prose answer` does (recorded as given `by` the ui)."""
    run_dir = request.app[RUNS_KEY].find(request.match_info["run"])
    if run_dir is None:
        return _error(404, f"no run {request.match_info['run']!r}")
    try:
        asked = await request.json(loads=orjson.loads)
    except (ValueError, orjson.JSONDecodeError):
        return _error(400, 'send a JSON object: {"text": "...", "id": "q1"}')
    text = asked.get("text") if isinstance(asked, dict) else None
    question = asked.get("id") if isinstance(asked, dict) else None
    if not isinstance(text, str) or not (question is None or isinstance(question, str)):
        return _error(400, "text is the answer (a string); id the question's id")
    try:
        answered = await asyncio.to_thread(answer_question, run_dir, text, question, by="ui")
    except (AnswerError, DamagedRun) as error:
        return _error(409, str(error))
    return _json({"answered": answered, "next": f"prose resume {run_dir.name}"})


async def _events(request: web.Request) -> web.StreamResponse:
    """Server-sent events: `runs` (the listing, when it changes) and, with `?run=`, `run`
    (first the whole run, then what changed, as the journal grows)."""
    runs: Runs = request.app[RUNS_KEY]
    closing: asyncio.Event = request.app[CLOSING_KEY]
    name = request.query.get("run")
    watch = _watched(request, name) if name else None
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "X-Accel-Buffering": "no"}
    )
    response.headers.update(SECURITY_HEADERS)
    await response.prepare(request)
    listed: list[dict[str, str]] | None = None
    listed_at = beat_at = 0.0
    seen: Seen | None = None
    try:
        while not closing.is_set():
            now = time.monotonic()
            if now - listed_at >= LIST_SECONDS:
                listed_at = now
                rows = await asyncio.to_thread(runs.listing)
                if rows != listed:
                    listed = rows
                    await _send(response, "runs", rows)
            if watch is not None:
                changed, seen = await watch.look(seen)
                if changed is not None:
                    await _send(response, "run", changed)
            if now - beat_at >= HEARTBEAT_SECONDS:
                beat_at = now
                await response.write(b": keep-alive\n\n")
            try:
                await asyncio.wait_for(closing.wait(), POLL_SECONDS)
            except TimeoutError:
                pass
    except (ConnectionResetError, ConnectionError):
        pass  # the page went away
    return response


async def _send(response: web.StreamResponse, event: str, data: Any) -> None:
    payload = orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS, default=str)
    await response.write(b"event: " + event.encode() + b"\ndata: " + payload + b"\n\n")


# --- serving ------------------------------------------------------------------------------


@dataclass
class Started:
    runner: web.AppRunner
    url: str
    port: int


async def start(project: Path, port: int = 0, token: str | None = None) -> Started:
    """Serve `project`'s runs on 127.0.0.1:`port` (0: any free port); `PortInUse` when taken."""
    token = token or secrets.token_urlsafe(24)
    runner = web.AppRunner(make_app(project, token), access_log=None, shutdown_timeout=2.0)
    await runner.setup()
    site = web.TCPSite(runner, HOST, port)
    try:
        await site.start()
    except OSError as error:
        await runner.cleanup()
        if error.errno == errno.EADDRINUSE:
            raise PortInUse(port) from None
        raise
    bound = runner.addresses[0][1]
    return Started(runner, f"http://{HOST}:{bound}/?token={token}", bound)


class UIServer:
    """`prose ui` running in a background thread of this process (`openprose.serve_ui`):
    `url` to open, `close()` to stop it; also a context manager."""

    def __init__(self, project: Path, port: int = 0) -> None:
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        ready: list[Started | BaseException] = []
        started = threading.Event()

        async def main() -> None:
            self._stop = asyncio.Event()
            try:
                serving = await start(project, port)
            except BaseException as error:  # noqa: BLE001 - raised again in the caller's thread
                ready.append(error)
                started.set()
                return
            ready.append(serving)
            started.set()
            await self._stop.wait()
            await serving.runner.cleanup()

        self._thread = threading.Thread(
            target=self._loop.run_until_complete, args=(main(),), name="prose-ui", daemon=True
        )
        self._thread.start()
        started.wait()
        if isinstance(ready[0], BaseException):
            self._thread.join()
            self._loop.close()
            raise ready[0]
        self.url = ready[0].url
        self.port = ready[0].port

    def close(self) -> None:
        if self._thread.is_alive() and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join()
            self._loop.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve(project: Path, port: int = 0) -> UIServer:
    """Start serving `project`'s runs in the background; returns the running `UIServer`."""
    return UIServer(project, port)

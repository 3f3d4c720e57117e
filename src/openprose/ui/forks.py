"""The web view's "fork from here": `POST /api/runs/{run}/fork` with
`{"step": S, "inputs": {name: value}, "set": {name: value}}` starts `prose fork RUN --at S`
in this server's process and answers with the new run's id as soon as the run is open (its
`run.json` written: before that the page's watch of it would find no run); the page then
watches it like any other run. A `prompt` permission makes the fork wait for the page's buttons."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web

__all__ = ["FORKS_KEY", "cancel_forks", "start_fork"]

# The forks this server is running: kept so that none is garbage-collected mid-run, and
# cancelled when the server stops (each stays resumable with `prose resume`).
FORKS_KEY = web.AppKey("forks", set)
OPEN_WAIT_SECONDS = 60.0  # a fork opens in milliseconds; a loaded machine may take seconds


def _strings(value: object) -> dict[str, str] | None:
    """A JSON object of strings, or None."""
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        return None
    return value


def _object(value: object) -> dict[str, Any] | None:
    """A JSON object (inputs keep their JSON types, as `--inputs FILE.json` gives them)."""
    return value if isinstance(value, dict) else None


async def start_fork(request: web.Request, run_dir: Any) -> web.Response:
    """Check the fork as `prose fork` does (a problem: 400 with its one line) and start it."""
    try:
        asked = await request.json(loads=orjson.loads)
    except (ValueError, orjson.JSONDecodeError):
        asked = None
    step = asked.get("step") if isinstance(asked, dict) else None
    inputs = _object(asked.get("inputs", {})) if isinstance(asked, dict) else None
    values = _strings(asked.get("set", {})) if isinstance(asked, dict) else None
    if not isinstance(step, str) or not step or inputs is None or values is None:
        return _error(
            400,
            'send a JSON object: {"step": "S", "inputs": {"name": value}, "set": {"name": "text"}}',
        )
    from openprose.session.opening import UsageError

    try:
        started = await asyncio.to_thread(_prepare, run_dir, step, inputs, values)
    except UsageError as error:
        return _error(400, str(error))
    forking, tools, run_id = started
    task = asyncio.get_running_loop().create_task(_run(forking, tools, run_id))
    forks: set[asyncio.Task[None]] = request.app[FORKS_KEY]
    forks.add(task)
    task.add_done_callback(forks.discard)
    if not await _opened(forking.project, run_id, task):
        return _error(500, f"fork {run_id} stopped before it started (the server's log says why)")
    return _json({"run_id": run_id, "parent": run_dir.name, "step": step}, 202)


async def _opened(project: Path, run_id: str, task: asyncio.Task[None]) -> bool:
    """Whether the fork's run is open (its run.json written) before its task ends."""
    from openprose.record.runstore import RUNS_DIR

    meta = project / RUNS_DIR / run_id / "run.json"
    deadline = time.monotonic() + OPEN_WAIT_SECONDS
    while not meta.is_file():
        if task.done() or time.monotonic() > deadline:
            return meta.is_file()
        await asyncio.sleep(0.01)
    return True


def _prepare(
    run_dir: Any, step: str, inputs: Mapping[str, Any], values: Mapping[str, str]
) -> tuple[Any, Any, str]:
    """The fork opened, its tool runtime (nobody at a terminal: `prompt` waits) and the
    id reserved for it."""
    from openprose.record.runstore import reserve_run_id
    from openprose.session.fork import prepare_fork
    from openprose.session.opening import UsageError, tool_runtime

    project = run_dir.resolve().parent.parent.parent  # {project}/.prose/runs/{id}
    forking = prepare_fork(project, str(run_dir), step, inputs=inputs, values=values)
    try:
        tools = tool_runtime(forking.project, False, interactive=False)
        return forking, tools, reserve_run_id(forking.project)
    except (UsageError, OSError) as error:
        asyncio.run(forking.provider.aclose())
        raise UsageError(str(error)) from None


async def _run(forking: Any, tools: Any, run_id: str) -> None:
    try:
        await forking.start(tools=tools, run_id=run_id)
    except Exception as error:  # noqa: BLE001 - one line; the server and its other runs go on
        print(f"prose ui: fork {run_id} stopped: {type(error).__name__}: {error}", file=sys.stderr)
    finally:
        await forking.provider.aclose()


async def cancel_forks(app: web.Application) -> None:
    """On shutdown: stop the forks still running (their journals keep what they finished)."""
    forks: set[asyncio.Task[None]] = app[FORKS_KEY]
    for task in list(forks):
        task.cancel()
    if forks:
        await asyncio.gather(*forks, return_exceptions=True)


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(data), status=status, content_type="application/json")


def _error(status: int, message: str) -> web.Response:
    return _json({"error": message}, status)

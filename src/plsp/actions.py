"""Action registry with typed signatures, and the built-in `wait`, `page` and `fetch`."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol, TextIO
from urllib.parse import unquote, urlsplit

from cliconventions.terminal import printable
from plsp.files import JSON_INT_DIGITS, read_head
from plsp.syntax import LiteralValue, Num

__all__ = [
    "ActionRegistry",
    "ActionResult",
    "FetchPolicy",
    "FilePageSink",
    "LogFileSink",
    "PageSink",
    "StdoutPageSink",
    "WebhookPageSink",
    "builtin_actions",
    "page_sink",
]

_ACTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PARAMETER_TYPES: dict[Any, str] = {
    str: "a string",
    int: "an integer",
    float: "a number",
    Decimal: "a number",
}


@dataclass(frozen=True)
class ActionResult:
    """What running one `!action` gave: a JSON-friendly value or an error."""

    name: str
    args: tuple[Any, ...]
    ok: bool
    value: Any = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "args": list(self.args), "ok": self.ok}
        if self.ok:
            data["result"] = self.value
        else:
            data["error"] = self.error
        return data


def _convert(param: inspect.Parameter, value: LiteralValue) -> Any:
    kind = param.annotation
    if kind is str:
        return value.text
    if isinstance(value, Num):
        if kind is int and value.is_integer:
            if len(value.text) > JSON_INT_DIGITS:  # int() itself stops at 4,300 digits
                raise TypeError(
                    f"parameter '{param.name}' expects a number of at most "
                    f"{JSON_INT_DIGITS:,} digits, got {len(value.text):,}"
                )
            return int(value.text)
        if kind is float:
            return float(value.text)
        if kind is Decimal:
            return value.value
    raise TypeError(
        f"parameter '{param.name}' expects {_PARAMETER_TYPES[kind]}, got {value.dumps()}"
    )


@dataclass(frozen=True)
class _Registered:
    function: Callable[..., Any]
    parameters: tuple[inspect.Parameter, ...]

    def bind(self, values: Sequence[LiteralValue]) -> list[Any]:
        required = sum(1 for p in self.parameters if p.default is inspect.Parameter.empty)
        if not required <= len(values) <= len(self.parameters):
            expected = (
                str(required)
                if required == len(self.parameters)
                else f"{required} to {len(self.parameters)}"
            )
            raise TypeError(f"takes {expected} parameters, got {len(values)}")
        return [_convert(p, v) for p, v in zip(self.parameters, values, strict=False)]


class ActionRegistry:
    """Actions by name. Parameters are typed `str`, `int`, `float` or `Decimal`."""

    def __init__(self) -> None:
        self._actions: dict[str, _Registered] = {}

    def register(self, name: str, function: Callable[..., Any]) -> None:
        if not _ACTION_NAME.fullmatch(name):
            raise ValueError(
                f"action name {name!r} is not a PLSP action name "
                "(a letter or '_', then letters, digits or '_')"
            )
        signature = inspect.signature(function, eval_str=True)
        parameters = tuple(signature.parameters.values())
        for param in parameters:
            if param.kind not in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
                raise TypeError(f"action {name}: parameter '{param.name}' must be positional")
            if param.annotation not in _PARAMETER_TYPES:
                raise TypeError(
                    f"action {name}: parameter '{param.name}' must be annotated "
                    "str, int, float or Decimal"
                )
        self._actions[name] = _Registered(function, parameters)

    def action(self, name: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator form of `register`; the name defaults to the function's."""

        def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
            self.register(name or function.__name__, function)
            return function

        return decorate

    def __contains__(self, name: object) -> bool:
        return name in self._actions

    def names(self) -> list[str]:
        return sorted(self._actions)

    async def run(self, name: str, values: Sequence[LiteralValue]) -> ActionResult:
        """Run an action; wrong arguments and raised errors become a failed result."""
        shown = tuple(v.python() for v in values)
        registered = self._actions.get(name)
        if registered is None:
            return ActionResult(name, shown, False, error=f"unknown action !{name}")
        try:
            args = registered.bind(values)
            outcome = registered.function(*args)
            if inspect.isawaitable(outcome):
                outcome = await outcome
        except Exception as error:  # noqa: BLE001 - an action's failure is data for the policy
            return ActionResult(name, shown, False, error=f"{type(error).__name__}: {error}")
        return ActionResult(name, shown, True, value=outcome)


class PageSink(Protocol):
    async def send(self, recipient: str, message: str) -> str: ...


class StdoutPageSink:
    """Pages printed to a stream (stdout by default)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream

    async def send(self, recipient: str, message: str) -> str:
        stream = self.stream or sys.stdout  # a model's page: escaped on a terminal
        print(printable(f"PAGE {recipient}: {message}", stream), file=stream, flush=True)
        return "stdout"


class FilePageSink:
    """Pages appended as JSON lines to a file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    async def send(self, recipient: str, message: str) -> str:
        line = json.dumps({"time": time.time(), "recipient": recipient, "message": message})
        with self.path.open("a", encoding="utf-8") as file:
            file.write(line + "\n")
        return f"file:{self.path}"


class WebhookPageSink:
    """Pages POSTed as JSON `{"recipient", "message"}` to a URL; non-2xx fails the page."""

    def __init__(self, url: str, *, timeout_s: float = 10.0) -> None:
        import aiohttp  # here, not at the top: it costs `plsp` start-up 0.2 s CPU

        self.url = url
        self.timeout = aiohttp.ClientTimeout(total=timeout_s)

    async def send(self, recipient: str, message: str) -> str:
        import aiohttp

        payload = {"recipient": recipient, "message": message}
        async with (
            aiohttp.ClientSession(timeout=self.timeout) as session,
            session.post(self.url, json=payload) as response,
        ):
            if response.status >= 300:
                raise RuntimeError(f"webhook answered HTTP {response.status}")
            return f"webhook:{response.status}"


def page_sink(spec: str, *, base: Path | None = None) -> PageSink:
    """`stdout`, `file:PATH` (relative to `base`) or an http(s) URL."""
    if spec == "stdout":
        return StdoutPageSink()
    if spec.startswith("file:"):
        path = Path(spec[len("file:") :])
        return FilePageSink(path if path.is_absolute() or base is None else base / path)
    if urlsplit(spec).scheme in ("http", "https"):
        return WebhookPageSink(spec)
    raise ValueError(f"page sink must be 'stdout', 'file:PATH' or an http(s) URL: {spec!r}")


class LogFileSink:
    """`>` logs appended as JSON lines `{"time", "cycle", "values"}` (a `Loop` log sink)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __call__(self, cycle: int, values: list[Any]) -> None:
        line = json.dumps(
            {"time": time.time(), "cycle": cycle, "values": values}, ensure_ascii=False
        )
        with self.path.open("a", encoding="utf-8") as file:
            file.write(line + "\n")


def _plain_path(path: str) -> bool:
    """No dot segments, encoded separators or backslashes: HTTP clients normalise
    `/api/../x` and `/api/%2e%2e/x` to `/x`, which would escape the allowed prefix."""
    lowered = path.lower()
    if "\\" in path or "%2f" in lowered or "%5c" in lowered:
        return False
    return all(unquote(segment) not in (".", "..") for segment in path.split("/"))


@dataclass(frozen=True)
class FetchPolicy:
    """What `!fetch` may read: files under `folder`, URLs under the `urls` prefixes."""

    folder: Path | None = None
    urls: tuple[str, ...] = ()
    max_bytes: int = 65536
    timeout_s: float = 10.0

    def url_allowed(self, url: str) -> bool:
        target = urlsplit(url)
        if not _plain_path(target.path):
            return False
        for prefix in map(urlsplit, self.urls):
            same_origin = (target.scheme, target.hostname, target.port) == (
                prefix.scheme,
                prefix.hostname,
                prefix.port,
            )
            base = prefix.path if prefix.path.endswith("/") else prefix.path + "/"
            if (
                same_origin
                and not target.username
                and (target.path == prefix.path or target.path.startswith(base))
            ):
                return True
        return False

    async def fetch(self, source: str) -> str:
        if urlsplit(source).scheme in ("http", "https"):
            return await self._fetch_url(source)
        return self._fetch_file(source)

    def _fetch_file(self, source: str) -> str:
        if self.folder is None:
            raise PermissionError("no fetch folder is configured")
        root = self.folder.resolve()
        path = (root / source).resolve()
        if not path.is_relative_to(root):
            raise PermissionError(f"{source!r} is outside the allowed folder")
        # A device or FIFO is refused: /dev/zero would fill the state, a FIFO with no
        # writer would hang the loop.
        return read_head(path, self.max_bytes).decode("utf-8", errors="replace")

    async def _fetch_url(self, url: str) -> str:
        if not self.url_allowed(url):
            raise PermissionError(f"{url!r} is not under an allowed URL")
        import aiohttp  # only a URL fetch needs it

        timeout = aiohttp.ClientTimeout(total=self.timeout_s)
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.get(url, allow_redirects=False) as response,
        ):
            if response.status >= 300:
                raise RuntimeError(f"HTTP {response.status}")
            body = await response.content.read(self.max_bytes)
            return body.decode("utf-8", errors="replace")


def builtin_actions(
    *,
    max_wait_ms: int = 60000,
    pages: PageSink | None = None,
    fetching: FetchPolicy | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> ActionRegistry:
    """A registry with `wait,ms`, `page,recipient,message` and `fetch,source`."""
    if max_wait_ms < 0:
        raise ValueError(f"max_wait_ms must be >= 0, got {max_wait_ms}")
    registry = ActionRegistry()
    sink = pages or StdoutPageSink()
    policy = fetching or FetchPolicy()

    async def wait(ms: int) -> int:
        waited = min(ms, max_wait_ms)  # a model must not stall the loop indefinitely
        await sleep(waited / 1000)
        return waited

    async def page(recipient: str, message: str) -> str:
        return await sink.send(recipient, message)

    async def fetch(source: str) -> str:
        return await policy.fetch(source)

    registry.register("wait", wait)
    registry.register("page", page)
    registry.register("fetch", fetch)
    return registry

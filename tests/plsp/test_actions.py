from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from decimal import Decimal
from pathlib import Path

import pytest
from aiohttp import web

from plsp.actions import (
    ActionRegistry,
    FetchPolicy,
    FilePageSink,
    StdoutPageSink,
    WebhookPageSink,
    builtin_actions,
    page_sink,
)
from plsp.syntax import Num, Str


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, list[dict[str, object]]]]:
    """A loopback HTTP server: POST /hook records JSON, GET /data/* serves text."""
    received: list[dict[str, object]] = []

    async def hook(request: web.Request) -> web.Response:
        received.append(await request.json())
        return web.Response(status=204)

    async def broken(request: web.Request) -> web.Response:
        return web.Response(status=500)

    async def data(request: web.Request) -> web.Response:
        return web.Response(text=f"value of {request.match_info['name']}")

    async def redirect(request: web.Request) -> web.Response:
        raise web.HTTPFound("/data/x")

    app = web.Application()
    app.add_routes(
        [
            web.post("/hook", hook),
            web.post("/broken", broken),
            web.get("/data/{name}", data),
            web.get("/data-moved", redirect),
        ]
    )
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield f"http://127.0.0.1:{port}", received
    await runner.cleanup()


# --- registry -------------------------------------------------------------------------------


async def test_custom_action_gets_typed_arguments() -> None:
    registry = ActionRegistry()
    calls: list[tuple[object, ...]] = []

    @registry.action()
    def heat(zone: str, level: int, ratio: float = 1.0, exact: Decimal = Decimal(0)) -> str:
        calls.append((zone, level, ratio, exact))
        return "on"

    result = await registry.run("heat", [Str("hall"), Num("3"), Num("0.5"), Num("2.25")])
    assert result.ok and result.value == "on"
    assert calls == [("hall", 3, 0.5, Decimal("2.25"))]
    assert "heat" in registry and registry.names() == ["heat"]


@pytest.mark.parametrize(
    ("values", "error"),
    [
        ([Str("hall")], "takes 2 to 4 parameters, got 1"),
        ([Str("hall"), Num("1.5")], "parameter 'level' expects an integer, got 1.5"),
        ([Str("hall"), Str("3")], "parameter 'level' expects an integer, got \"3\""),
    ],
)
async def test_bad_arguments_fail_without_calling(values: list[Str | Num], error: str) -> None:
    registry = ActionRegistry()
    called: list[int] = []

    def heat(zone: str, level: int, ratio: float = 1.0, exact: Decimal = Decimal(0)) -> None:
        called.append(level)

    registry.register("heat", heat)
    result = await registry.run("heat", values)
    assert not result.ok and result.error is not None and error in result.error
    assert called == []


def test_lambda_without_annotations_is_refused() -> None:
    registry = ActionRegistry()
    with pytest.raises(TypeError, match="must be annotated"):
        registry.register("x", lambda a: a)


@pytest.mark.parametrize("name", ["my-act", "", "9x", "a b", "wait!"])
def test_action_names_must_be_plsp_names(name: str) -> None:
    def act(text: str) -> str:
        return text

    with pytest.raises(ValueError, match="not a PLSP action name"):
        ActionRegistry().register(name, act)
    ActionRegistry().register("_ok_1", act)


def test_negative_wait_bound_is_refused() -> None:
    with pytest.raises(ValueError, match="max_wait_ms must be >= 0"):
        builtin_actions(max_wait_ms=-1)


async def test_async_action_and_raised_error() -> None:
    registry = ActionRegistry()

    async def fail(reason: str) -> None:
        raise RuntimeError(reason)

    registry.register("fail", fail)
    result = await registry.run("fail", [Str("disk full")])
    assert (result.ok, result.error) == (False, "RuntimeError: disk full")
    assert (await registry.run("nothing", [])).error == "unknown action !nothing"


def test_builtins_are_registered() -> None:
    assert builtin_actions().names() == ["fetch", "page", "wait"]


# --- wait -------------------------------------------------------------------------------------


async def test_wait_is_bounded() -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    registry = builtin_actions(max_wait_ms=250, sleep=sleep)
    assert (await registry.run("wait", [Num("5000")])).value == 250
    assert (await registry.run("wait", [Num("100")])).value == 100
    assert slept == [0.25, 0.1]


# --- page sinks -------------------------------------------------------------------------------


async def test_stdout_page_sink() -> None:
    stream = io.StringIO()
    registry = builtin_actions(pages=StdoutPageSink(stream))
    result = await registry.run("page", [Str("op"), Num("81.5")])
    assert result.ok and stream.getvalue() == "PAGE op: 81.5\n"


async def test_file_page_sink_appends_json_lines(tmp_path: Path) -> None:
    sink = page_sink("file:pages.ndjson", base=tmp_path)
    assert isinstance(sink, FilePageSink)
    await sink.send("op", "hot")
    await sink.send("boss", "very hot")
    lines = [json.loads(line) for line in (tmp_path / "pages.ndjson").read_text().splitlines()]
    assert [(line["recipient"], line["message"]) for line in lines] == [
        ("op", "hot"),
        ("boss", "very hot"),
    ]


async def test_webhook_page_sink_posts_json(server: tuple[str, list[dict[str, object]]]) -> None:
    base, received = server
    registry = builtin_actions(pages=page_sink(f"{base}/hook"))
    result = await registry.run("page", [Str("op"), Str("CPU High")])
    assert result.ok and result.value == "webhook:204"
    assert received == [{"recipient": "op", "message": "CPU High"}]


async def test_webhook_error_status_fails_the_page(
    server: tuple[str, list[dict[str, object]]],
) -> None:
    base, _ = server
    result = await builtin_actions(pages=WebhookPageSink(f"{base}/broken")).run(
        "page", [Str("op"), Str("x")]
    )
    assert not result.ok and result.error == "RuntimeError: webhook answered HTTP 500"


def test_page_sink_spec_errors() -> None:
    with pytest.raises(ValueError, match="page sink must be"):
        page_sink("smtp://mail")


# --- fetch ------------------------------------------------------------------------------------


async def test_fetch_reads_files_under_the_folder_only(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "t.txt").write_text("75")
    (tmp_path / "secret.txt").write_text("nope")
    (folder / "link.txt").symlink_to(tmp_path / "secret.txt")
    registry = builtin_actions(fetching=FetchPolicy(folder=folder))
    assert (await registry.run("fetch", [Str("sub/t.txt")])).value == "75"
    for escape in ("../secret.txt", str(tmp_path / "secret.txt"), "link.txt"):
        result = await registry.run("fetch", [Str(escape)])
        assert not result.ok and "outside the allowed folder" in str(result.error)
    missing = await registry.run("fetch", [Str("none.txt")])
    assert not missing.ok and "FileNotFoundError" in str(missing.error)


async def test_fetch_is_capped(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("x" * 100)
    policy = FetchPolicy(folder=tmp_path, max_bytes=10)
    assert await policy.fetch("big.txt") == "x" * 10


async def test_fetch_urls_only_when_allow_listed(
    server: tuple[str, list[dict[str, object]]],
) -> None:
    base, _ = server
    registry = builtin_actions(fetching=FetchPolicy(urls=(f"{base}/data",)))
    assert (await registry.run("fetch", [Str(f"{base}/data/t")])).value == "value of t"
    for refused in (
        f"{base}/hook",
        f"{base}/data-moved",
        "http://example.com/data/t",
        f"http://user@{base[7:]}/data/t",
    ):
        result = await registry.run("fetch", [Str(refused)])
        assert not result.ok and "not under an allowed URL" in str(result.error), refused


async def test_fetch_url_dot_segments_cannot_escape_the_prefix(
    server: tuple[str, list[dict[str, object]]],
) -> None:
    base, _ = server
    registry = builtin_actions(fetching=FetchPolicy(urls=(f"{base}/data/",)))
    # The HTTP client would normalise each of these to /hook, outside /data/.
    for escape in (
        "/data/../hook",
        "/data/%2e%2e/hook",
        "/data/.%2E/hook",
        "/data/..%2fhook",
        "/data/x\\..\\..\\hook",
        "/data/./t",
    ):
        result = await registry.run("fetch", [Str(base + escape)])
        assert not result.ok and "not under an allowed URL" in str(result.error), escape
    assert (await registry.run("fetch", [Str(f"{base}/data/t")])).value == "value of t"


def test_fetch_url_prefix_is_host_exact() -> None:
    policy = FetchPolicy(urls=("http://allowed.example.com/",))
    assert policy.url_allowed("http://allowed.example.com/a..b/c.txt")
    for refused in (
        "http://allowed.example.com.evil/",
        "http://allowed.example.com.evil/x",
        "https://allowed.example.com/x",
        "http://allowed.example.com:8080/x",
        "http://evil.example/http://allowed.example.com/x",
    ):
        assert not policy.url_allowed(refused), refused


async def test_fetch_does_not_follow_redirects(server: tuple[str, list[dict[str, object]]]) -> None:
    base, _ = server
    policy = FetchPolicy(urls=(f"{base}/",))
    with pytest.raises(RuntimeError, match="HTTP 302"):
        await policy.fetch(f"{base}/data-moved")


def test_without_folder_files_are_refused() -> None:
    with pytest.raises(PermissionError, match="no fetch folder"):
        FetchPolicy()._fetch_file("x")


async def test_fetch_refuses_a_fifo_and_a_device_without_hanging(tmp_path: Path) -> None:
    import asyncio
    import os

    os.mkfifo(tmp_path / "pipe")  # no writer: a plain open() would block the loop forever
    (tmp_path / "zero").symlink_to("/dev/zero")
    registry = builtin_actions(fetching=FetchPolicy(folder=tmp_path))
    for name in ("pipe",):
        result = await asyncio.wait_for(registry.run("fetch", [Str(name)]), timeout=5)
        assert not result.ok and "not a regular file" in str(result.error)
    # A link out of the folder stays refused for where it points, before being opened.
    outside = await asyncio.wait_for(registry.run("fetch", [Str("zero")]), timeout=5)
    assert not outside.ok


async def test_an_integer_parameter_beyond_4300_digits_is_a_failed_action() -> None:
    result = await builtin_actions().run("wait", [Num("9" * 5000)])
    assert not result.ok and "at most 4,000 digits" in str(result.error)

"""The built-in tools doing their jobs (the refusals are in tests/security/)."""

from __future__ import annotations

import asyncio
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from openprose.providers.base import ToolCall
from openprose.vm.tools import Permissions, PreApprover, Toolbox, ToolOutcome
from openprose.vm.tools.approvals import Answer, ApprovalPending, ApprovalRequest
from openprose.vm.tools.web import html_to_text


def _box(root: Path, approver: object = None, **rules: object) -> Toolbox:
    box = Toolbox(root, Permissions.from_mapping(rules), agent="a")
    if approver is not None:
        box.approver = approver  # type: ignore[assignment]
    return box


async def _call(box: Toolbox, tool: str, /, **arguments: object) -> ToolOutcome:
    return await box.call(ToolCall("c", tool, dict(arguments)))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    (tmp_path / "src" / "b.py").write_text("TODO: fix\nok\n")
    return tmp_path


async def test_read_with_offset_and_limit(root: Path) -> None:
    out = await _call(_box(root, read=["src/"]), "read_file", path="src/a.py", offset=3, limit=2)
    assert out.content.startswith("line 3\nline 4\n")
    assert "lines 3-4 of 10" in out.content


async def test_list_and_search(root: Path) -> None:
    box = _box(root, read=["src/"])
    assert (await _call(box, "list_files", pattern="src/*.py")).content == "src/a.py\nsrc/b.py"
    found = await _call(box, "search_files", regex=r"TODO|line 1\b")
    assert found.content.splitlines() == ["src/a.py:1: line 1", "src/b.py:1: TODO: fix"]
    bad = await _call(box, "search_files", regex="(")
    assert bad.is_error and "bad regex" in bad.content


async def test_write_makes_folders_and_edit_replaces_exactly(root: Path) -> None:
    box = _box(root, read=["src/", "out/"], write=["out/", "src/"])
    assert not (await _call(box, "write_file", path="out/x/r.md", content="a a")).is_error
    assert (root / "out" / "x" / "r.md").read_text() == "a a"
    twice = await _call(box, "edit_file", path="out/x/r.md", old_text="a", new_text="b")
    assert twice.is_error and "occurs 2 times" in twice.content
    assert not (
        await _call(
            box, "edit_file", path="out/x/r.md", old_text="a", new_text="b", replace_all=True
        )
    ).is_error
    assert (root / "out" / "x" / "r.md").read_text() == "b b"
    missing = await _call(box, "edit_file", path="src/b.py", old_text="nope", new_text="x")
    assert missing.is_error and "not found" in missing.content
    assert list(root.rglob("*.prose-tmp-*")) == []  # no temp file left behind


async def test_prompt_asks_and_remembers_for_the_run(root: Path) -> None:
    asked: list[ApprovalRequest] = []

    class Once:
        async def ask(self, request: ApprovalRequest) -> Answer:
            asked.append(request)
            return "run"

    box = _box(root, approver=Once(), read="prompt")
    assert (await _call(box, "read_file", path="src/a.py")).content.startswith("line 1")
    assert (await _call(box, "read_file", path="src/a.py")).content.startswith("line 1")
    assert len(asked) == 1 and asked[0].action == "src/a.py" and asked[0].kind == "read"
    pending = _box(root, read="prompt")
    with pytest.raises(ApprovalPending, match="wants to read src/a.py"):
        await _call(pending, "read_file", path="src/a.py")


async def test_denied_by_the_person(root: Path) -> None:
    class No:
        async def ask(self, request: ApprovalRequest) -> Answer:
            return "deny"

    out = await _call(
        _box(root, approver=No(), write="prompt"), "write_file", path="n.md", content="x"
    )
    assert out.is_error and "refused" in out.content
    assert not (root / "n.md").exists()


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = (
            b"<html><head><title>T</title><script>var x=1;</script></head>"
            b"<body><h1>Hello</h1><p>World &amp; more</p>" + b"x" * 3000 + b"</body></html>"
        )
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture
def page_url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/page"
    server.shutdown()
    server.server_close()


async def test_fetch_turns_html_into_text_and_caps_size(root: Path, page_url: str) -> None:
    box = _box(root, network=["127.0.0.1"])  # a loopback server is reached only when named
    box.limits = type(box.limits)(fetch_cap=200)
    out = await _call(box, "fetch_url", url=page_url)
    assert out.content.startswith("HTTP 200 text/html")
    assert "Hello" in out.content and "World & more" in out.content
    assert "var x" not in out.content
    assert "more bytes not downloaded (cap 200)" in out.content
    bad = await _call(box, "fetch_url", url="file:///etc/passwd")
    assert bad.is_error and "only http" in bad.content


async def test_fetch_with_prompt_asks_for_the_url(
    root: Path, page_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from openprose.vm.tools import network

    # `prompt` never reaches loopback: here the test server stands in for a public host.
    monkeypatch.setattr(network, "internal_kind", lambda address: None)
    box = _box(root, approver=PreApprover(), network="prompt")
    decisions: list[dict[str, object]] = []
    out = await box.call(
        ToolCall("c", "fetch_url", {"url": page_url}), on_decision=decisions.append
    )
    assert "Hello" in out.content
    assert [d["decision"] for d in decisions] == ["asked", "approved"]
    assert decisions[0]["action"] == page_url


def test_html_to_text_keeps_blocks_apart() -> None:
    assert html_to_text("<p>a</p><p>b<br>c</p><style>x{}</style>") == "a\n\nb\nc"


async def test_concurrent_calls_keep_their_decisions_apart(root: Path) -> None:
    box = _box(root, read=["src/"])
    seen: dict[str, list[str]] = {"1": [], "2": []}
    await asyncio.gather(
        box.call(
            ToolCall("1", "read_file", {"path": "src/a.py"}),
            on_decision=lambda d: seen["1"].append(str(d["action"])),
        ),
        box.call(
            ToolCall("2", "read_file", {"path": "src/b.py"}),
            on_decision=lambda d: seen["2"].append(str(d["action"])),
        ),
    )
    assert seen == {"1": ["src/a.py"], "2": ["src/b.py"]}


async def test_special_files_are_refused_without_blocking(root: Path) -> None:
    import os
    import socket

    os.mkfifo(root / "src" / "pipe")
    with socket.socket(socket.AF_UNIX) as unix:
        unix.bind(str(root / "src" / "sock"))
    box = _box(root, read=["src/", "/dev/**"], write=["src/"])
    pipe = await asyncio.wait_for(_call(box, "read_file", path="src/pipe"), 5)
    assert pipe.is_error and "FIFO" in pipe.content and "regular files only" in pipe.content
    sock = await _call(box, "read_file", path="src/sock")
    assert sock.is_error and "socket" in sock.content
    device = await _call(box, "read_file", path="/dev/zero")
    assert device.is_error and "device" in device.content
    edit = await asyncio.wait_for(
        _call(box, "edit_file", path="src/pipe", old_text="a", new_text="b"), 5
    )
    assert edit.is_error and "FIFO" in edit.content
    found = await asyncio.wait_for(_call(box, "search_files", regex="TODO"), 5)
    assert found.content == "src/b.py:1: TODO: fix"  # the FIFO is passed over


async def test_file_io_leaves_the_event_loop_free(root: Path) -> None:
    """While a read is in progress (on a thread), other coroutines keep running."""
    (root / "src" / "big.txt").write_bytes(b"x" * (8 << 20))
    box = _box(root, read=["src/"])
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.ensure_future(ticker())
    await _call(box, "read_file", path="src/big.txt", limit=1)
    task.cancel()
    assert ticks > 1


async def test_edit_refuses_a_file_over_the_limit_and_keeps_it_whole(root: Path) -> None:
    from openprose.vm.tools.toolbox import MAX_READ_BYTES

    big = root / "src" / "big.txt"
    data = b"head\n" + b"x" * MAX_READ_BYTES + b"\ntail\n"
    big.write_bytes(data)
    box = _box(root, read=["src/"], write=["src/"])
    out = await _call(box, "edit_file", path="src/big.txt", old_text="head", new_text="HEAD")
    assert out.is_error and "16 MiB" in out.content and "nothing changed" in out.content
    assert big.read_bytes() == data
    read = await _call(box, "read_file", path="src/big.txt", limit=1)
    assert read.content.startswith("head\n") and f"is {len(data)} bytes" in read.content


async def test_search_with_a_catastrophic_regex_stops_at_its_time_limit(root: Path) -> None:
    import time

    from openprose.vm.tools.toolbox import ToolLimits

    (root / "src" / "a.txt").write_text("a" * 40 + "!\n")
    box = Toolbox(
        root, Permissions.from_mapping({"read": ["src/"]}), limits=ToolLimits(search_timeout=0.3)
    )
    started = time.monotonic()
    out = await _call(box, "search_files", regex="(a|aa)+$", pattern="src/a.txt")
    assert time.monotonic() - started < 5
    assert out.is_error and "[vm] search_timeout = 0.3" in out.content

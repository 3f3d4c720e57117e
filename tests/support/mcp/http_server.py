"""A streamable HTTP MCP server on loopback, started in a thread by a test."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp, Receive, Scope, Send

WORDS = {"prose": "written language in its ordinary form", "verse": "metrical writing"}


def _server(calls: list[str]) -> MCPServer:
    server = MCPServer("dictionary")

    @server.tool()
    def define(word: str) -> str:
        """The meaning of an English word."""
        calls.append(word)
        return WORDS.get(word, f"no entry for {word!r}")

    return server


class _NeedsToken:
    """Refuses a request without `Authorization: Bearer TOKEN` (when a token is set)."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app, self.token = app, token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.token is not None and scope["type"] == "http":
            headers = dict(scope["headers"])
            if headers.get(b"authorization") != f"Bearer {self.token}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"no token"})
                return
        await self.app(scope, receive, send)


@contextmanager
def http_mcp_server(token: str | None = None) -> Iterator[tuple[str, list[str]]]:
    """(the server's URL, the words `define` was called with), for the `with` block."""
    calls: list[str] = []
    app: Any = _NeedsToken(_server(calls).streamable_http_app(), token)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="error", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/mcp", calls
    finally:
        server.should_exit = True
        thread.join(5)
        sock.close()

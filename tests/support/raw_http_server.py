"""A loopback TCP server that answers HTTP requests with whatever bytes a test writes.

For tests of the HTTP client (`openprose.net`): the test's `respond` gets each
request (head and body, parsed just enough) and the stream writer, writes any bytes it likes,
and says whether the connection stays open for another request. The server counts
connections and keeps every request it read.

    async def respond(request: RawRequest) -> bool:
        request.writer.write(b"HTTP/1.1 200 OK\\r\\ncontent-length: 2\\r\\n\\r\\nok")
        return True  # keep the connection for the next request

    async with RawHttpServer(respond) as server:
        ... server.url ..., server.connections, server.requests
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Self

__all__ = ["LoopbackServer", "RawHttpServer", "RawRequest", "answer", "respond_with"]


@dataclass
class RawRequest:
    head: bytes  # request line and headers, without the blank line
    body: bytes
    connection: int  # 1 for the first connection the server accepted
    number: int  # 1 for the first request on its connection
    writer: asyncio.StreamWriter

    @property
    def request_line(self) -> str:
        return self.head.split(b"\r\n", 1)[0].decode("latin-1")

    def header(self, name: str) -> str | None:
        for line in self.head.split(b"\r\n")[1:]:
            key, _, value = line.decode("latin-1").partition(":")
            if key.strip().lower() == name.lower():
                return value.strip()
        return None


Respond = Callable[[RawRequest], Awaitable[bool]]


def answer(body: bytes = b"ok", *, status: str = "200 OK", headers: str = "") -> bytes:
    """A well-formed answer with a content-length."""
    return f"HTTP/1.1 {status}\r\ncontent-length: {len(body)}\r\n{headers}\r\n".encode() + body


class LoopbackServer:
    """A TCP (or TLS, with `tls`) server on 127.0.0.1 for the length of an `async with`:
    each connection is handed to `serve`; at the end the handlers still running are
    cancelled and the server is closed. Subclasses say what a connection gets (`serve`)."""

    def __init__(self, *, tls: ssl.SSLContext | None = None) -> None:
        self.tls = tls
        self.port = 0
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0, ssl=self.tls)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self._server.wait_closed()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            await self.serve(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        except asyncio.CancelledError:
            return  # the server is closing (a cancelled handler would be logged as an error)
        finally:
            writer.close()
            self._handlers.discard(task)


class RawHttpServer(LoopbackServer):
    def __init__(self, respond: Respond, *, tls: ssl.SSLContext | None = None) -> None:
        super().__init__(tls=tls)
        self.respond = respond
        self.connections = 0
        self.requests: list[RawRequest] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        connection = self.connections
        for number in range(1, 1_000_000):
            try:
                head = (await reader.readuntil(b"\r\n\r\n"))[:-4]
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            length = 0
            for line in head.split(b"\r\n")[1:]:
                key, _, value = line.partition(b":")
                if key.strip().lower() == b"content-length":
                    length = int(value)
            body = await reader.readexactly(length) if length else b""
            request = RawRequest(head, body, connection, number, writer)
            self.requests.append(request)
            keep = await self.respond(request)
            await writer.drain()
            if not keep:
                return


def respond_with(*replies: bytes, keep: bool = True) -> Respond:
    """A server that answers its n-th request with replies[n] (the last one repeats)."""
    count = 0

    async def respond(request: RawRequest) -> bool:
        nonlocal count
        request.writer.write(replies[min(count, len(replies) - 1)])
        count += 1
        return keep

    return respond

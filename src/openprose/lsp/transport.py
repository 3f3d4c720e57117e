"""LSP's stdio framing (``Content-Length`` headers), read on a thread of its own.

pygls's own loop reads one message at a time and skips any header it does not understand,
so ``Content-Length: abc`` left it waiting for ever. Here a header that cannot be understood
ends the server with one log line. The reader thread reads ahead into ``Inbox``, so the
server knows when more messages are waiting (diagnostics of a version already superseded are
not computed: `ProseServer.publish`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from typing import Any, BinaryIO

from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

logger = logging.getLogger("openprose.lsp")

# A message bigger than this is not an editor's (a 2,000-line document is ~100 KB).
MAX_BODY_BYTES = 256 * 1024 * 1024
_MAX_HEADER_LINE = 4096
# Messages read ahead of the one being handled; the reader waits beyond that.
_READ_AHEAD = 10_000


class FramingError(Exception):
    """The input is not LSP's framing: nothing after it can be trusted to start a message."""


def read_message(stream: BinaryIO) -> bytes | None:
    """The next message's body, or None at the end of the input before a message starts."""
    length: int | None = None
    started = False
    while True:
        line = stream.readline(_MAX_HEADER_LINE)
        if not line:
            if started:
                raise FramingError("the input ended inside a message's headers")
            return None
        started = True
        if line in (b"\r\n", b"\n"):
            if length is None:
                raise FramingError("a message without a Content-Length header")
            body = stream.read(length)
            if len(body) < length:
                raise FramingError(f"the input ended {length - len(body)} bytes into a message")
            return body
        if not line.endswith(b"\n"):
            raise FramingError(f"a header line longer than {_MAX_HEADER_LINE} bytes")
        name, colon, value = line.partition(b":")
        if not colon:
            raise FramingError(f"not a header line: {_shown(line)}")
        if name.strip().lower() == b"content-length":
            digits = value.strip()
            if not digits.isdigit() or len(digits) > 12:
                raise FramingError(f"Content-Length {_shown(digits)} is not a byte count")
            length = int(digits)
            if length > MAX_BODY_BYTES:
                raise FramingError(f"Content-Length {length} is over {MAX_BODY_BYTES} bytes")


def _shown(data: bytes) -> str:
    return repr(data.rstrip(b"\r\n")[:60].decode("utf-8", "replace"))


class Inbox:
    """Messages read by the reader thread, waiting to be handled on the event loop."""

    def __init__(self, stream: BinaryIO, loop: asyncio.AbstractEventLoop) -> None:
        self._queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self._room = threading.BoundedSemaphore(_READ_AHEAD)
        self._stream = stream
        self._loop = loop
        # A daemon: the server may end (exit) while this still waits for input.
        threading.Thread(target=self._read, name="lsp-reader", daemon=True).start()

    def waiting(self) -> int:
        """How many messages arrived that were not handled yet."""
        return self._queue.qsize()

    async def next(self) -> tuple[str, Any]:
        """("message", body), ("end", None) or ("error", why)."""
        item = await self._queue.get()
        self._room.release()
        return item

    def _read(self) -> None:
        while True:
            self._room.acquire()
            try:
                body = read_message(self._stream)
            except FramingError as error:
                self._put(("error", str(error)))
                return
            except (OSError, ValueError) as error:  # stdin closed under us
                self._put(("error", f"cannot read the input ({error})"))
                return
            if body is None:
                self._put(("end", None))
                return
            self._put(("message", body))

    def _put(self, item: tuple[str, Any]) -> None:
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)
        except RuntimeError:  # the loop closed: the server ended meanwhile
            pass


class Writer:
    """pygls's writer on our stdout. ``close`` (pygls calls it on `exit`) only flushes:
    closing stdout made the interpreter's own flush at exit fail (ValueError)."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream

    def write(self, data: bytes) -> None:
        self._stream.write(data)
        self._stream.flush()

    def close(self) -> None:
        self._stream.flush()


async def serve_stdio(server: LanguageServer, inbox: Inbox, stdout: BinaryIO) -> int:
    """Handle the messages of ``inbox`` until `exit` (its exit status: 0 after `shutdown`,
    else 1), the end of the input (0) or a framing error (1, after one log line)."""
    protocol = server.protocol
    protocol.set_writer(Writer(stdout))
    while True:
        kind, payload = await inbox.next()
        if kind == "end":
            return 0
        if kind == "error":
            logger.error("stopping: bad message framing (%s)", payload)
            return 1
        try:
            message = json.loads(payload, object_hook=protocol.structure_message)
            protocol.handle_message(message)
        except SystemExit as done:  # pygls ends the server this way on `exit`
            return done.code if isinstance(done.code, int) else 1
        except Exception as error:
            logger.exception("Unable to handle message")
            server._report_server_error(error, JsonRpcException)

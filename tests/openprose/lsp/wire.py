"""A bare LSP client over a subprocess's pipes: framing written and read by hand, so tests
can send what a real client never would (bad framing, a storm of changes)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from typing import Any

SERVER = [sys.executable, "-m", "openprose.cli", "lsp"]


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


class Wire:
    """`prose lsp` started as a subprocess; what it sends is collected on a thread."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.received: list[dict[str, Any]] = []
        self._arrived = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0

    def send_raw(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def notify(self, method: str, params: Any) -> None:
        self.send_raw(frame({"jsonrpc": "2.0", "method": method, "params": params}))

    def request(self, method: str, params: Any) -> int:
        self.next_id += 1
        self.send_raw(
            frame({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        )
        return self.next_id

    def wait_for(self, test: Any, timeout: float = 60.0) -> dict[str, Any]:
        """The first message received that passes ``test``."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while True:
                for message in self.received:
                    if test(message):
                        return message
                left = deadline - time.monotonic()
                assert left > 0, f"nothing arrived that passes the test in {timeout} s"
                self._arrived.wait(left)

    def response(self, request_id: int, timeout: float = 60.0) -> dict[str, Any]:
        return self.wait_for(lambda m: m.get("id") == request_id and "method" not in m, timeout)

    def initialize(self) -> None:
        self.response(
            self.request("initialize", {"processId": None, "capabilities": {}, "rootUri": None})
        )
        self.notify("initialized", {})

    def finish(self, timeout: float = 60.0) -> tuple[int, str]:
        """Close stdin (if still open) and wait: (exit status, stderr)."""
        assert self.process.stdin is not None
        if not self.process.stdin.closed:
            try:
                self.process.stdin.close()
            except BrokenPipeError:
                pass
        code = self.process.wait(timeout)
        assert self.process.stderr is not None
        return code, self.process.stderr.read().decode("utf-8", "replace")

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            assert length is not None
            message = json.loads(stream.read(length))
            with self._arrived:
                self.received.append(message)
                self._arrived.notify_all()

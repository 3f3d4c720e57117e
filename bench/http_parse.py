"""Response parsing: CPU time per answer of `openprose.net.parser` (llhttp through httptools)
beside the hand-written parser it replaced (`providers/http_wire.py` as of BASELINE, read
from git history), in the same run, on the same bytes.

    python bench/http_parse.py                # 20,000 answers per sample, 7 samples
    python bench/http_parse.py --n 5000 --repeat 3

Three answers a provider gets: a whole chat completion (content-length, the headers OpenAI
sends: 16 of them), the same gzip-encoded, and a streamed answer (chunked, 40 server-sent
events, one chunk each). Each sample makes a parser per answer and feeds it the bytes as
they would arrive (the whole answer in one piece; the stream a chunk at a time), as the
pool does. The figure is the minimum over samples (least disturbed by other load).
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from _loopback import Table, summary

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from openprose.net.parser import ResponseParser

BASELINE = "c0460b9"  # main before net/: the last commit with providers/http_wire.py

HEADERS = (
    b"date: Mon, 07 Dec 2026 06:00:00 GMT\r\ncontent-type: application/json\r\n"
    b"connection: keep-alive\r\naccess-control-expose-headers: X-Request-ID\r\n"
    b"openai-organization: org-x\r\nopenai-processing-ms: 412\r\nopenai-version: 2020-10-01\r\n"
    b"x-ratelimit-limit-requests: 10000\r\nx-ratelimit-limit-tokens: 30000000\r\n"
    b"x-ratelimit-remaining-requests: 9999\r\nx-ratelimit-remaining-tokens: 29999950\r\n"
    b"x-ratelimit-reset-requests: 6ms\r\nx-ratelimit-reset-tokens: 0s\r\n"
    b"x-request-id: req_0123456789abcdef\r\nstrict-transport-security: max-age=31536000\r\n"
)
COMPLETION = (
    b'{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4.1-mini",'
    b'"choices":[{"index":0,"message":{"role":"assistant","content":"'
    + b"An answer of a few sentences. " * 12
    + b'"},"finish_reason":"stop"}],"usage":{"prompt_tokens":120,"completion_tokens":90}}'
)


def whole(body: bytes, extra: bytes = b"") -> list[bytes]:
    head = b"HTTP/1.1 200 OK\r\n" + HEADERS + extra + b"content-length: %d\r\n\r\n" % len(body)
    return [head + body]


def streamed() -> list[bytes]:
    head = b"HTTP/1.1 200 OK\r\n" + HEADERS.replace(b"application/json", b"text/event-stream")
    pieces = [head + b"transfer-encoding: chunked\r\n\r\n"]
    for i in range(40):
        event = b'data: {"choices":[{"index":0,"delta":{"content":"word %d "}}]}\n\n' % i
        pieces.append(b"%x\r\n%s\r\n" % (len(event), event))
    pieces.append(b"0\r\n\r\n")
    return pieces


ANSWERS = {
    "completion (content-length)": whole(COMPLETION),
    "completion (gzip)": whole(gzip.compress(COMPLETION), b"content-encoding: gzip\r\n"),
    "stream (40 chunks)": streamed(),
}


class Sink:
    __slots__ = ("ended",)

    def __init__(self) -> None:
        self.ended = False

    def on_head(self, head: object) -> None:
        pass

    def on_body(self, piece: bytes) -> None:
        pass

    def on_end(self) -> None:
        self.ended = True


def old_parser() -> ModuleType:
    """The hand-written parser's module as of BASELINE, loaded under its own name."""
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{BASELINE}:src/openprose/providers/http_wire.py"],
        check=True,
        capture_output=True,
    ).stdout
    folder = Path(tempfile.mkdtemp(prefix="old-http-wire-"))
    path = folder / "old_http_wire.py"
    path.write_bytes(source)
    spec = importlib.util.spec_from_file_location("old_http_wire", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_http_wire"] = module
    spec.loader.exec_module(module)
    return module


def per_answer_us(make: Callable[[Sink], object], pieces: list[bytes], n: int) -> float:
    started = time.process_time()
    for _ in range(n):
        sink = Sink()
        parser = make(sink)
        feed = parser.feed  # type: ignore[attr-defined]
        for piece in pieces:
            feed(piece)
    elapsed = time.process_time() - started
    assert sink.ended
    return elapsed / n * 1e6


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("--n", type=int, default=20_000)
    options.add_argument("--repeat", type=int, default=7)
    args = options.parse_args()
    old = old_parser().ResponseParser
    table = Table(
        f"response parse, CPU µs per answer (min of {args.repeat} x {args.n:,})",
        ["answer", "llhttp (net.parser)", f"hand-written ({BASELINE})", "ratio"],
    )
    for name, pieces in ANSWERS.items():
        new_samples, old_samples = [], []
        for _ in range(args.repeat):  # alternate, so both see the same load
            new_samples.append(per_answer_us(ResponseParser, pieces, args.n))
            old_samples.append(per_answer_us(old, pieces, args.n))
        new_us, _ = summary(new_samples)
        old_us, _ = summary(old_samples)
        table.add(name, f"{new_us:.2f}", f"{old_us:.2f}", f"{new_us / old_us:.2f}x")
    table.print()


if __name__ == "__main__":
    main()

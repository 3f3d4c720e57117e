"""A loopback registry for skills and programs: tests start it, put answers at paths, and
count what was asked. Nothing leaves the machine."""

from __future__ import annotations

import http.server
import io
import tarfile
import threading
import time
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass
class Answer:
    body: bytes
    content_type: str = "application/zip"
    status: int = 200
    drip: bool = False  # one byte every 0.2 s, never finishing


class FakeRegistry:
    def __init__(self) -> None:
        self.answers: dict[str, Answer] = {}
        self.hits: list[tuple[str, str]] = []  # (path, Accept header)
        registry = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                registry.hits.append((self.path, self.headers.get("Accept", "")))
                answer = registry.answers.get(self.path)
                if answer is None:
                    self.send_error(404)
                    return
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.content_type)
                if answer.drip:
                    self.end_headers()
                    try:
                        while True:
                            self.wfile.write(b"P")
                            self.wfile.flush()
                            time.sleep(0.2)
                    except OSError:
                        return
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)

            def log_message(self, *args: object) -> None:
                return None

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def put(
        self, path: str, body: bytes, content_type: str = "application/zip", **kw: object
    ) -> None:
        self.answers[path] = Answer(body, content_type, **kw)  # type: ignore[arg-type]

    def asked(self, path: str) -> int:
        return sum(1 for hit, _ in self.hits if hit == path)


@contextmanager
def running_registry() -> Iterator[FakeRegistry]:
    registry = FakeRegistry()
    thread = threading.Thread(target=registry.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield registry
    finally:
        registry.server.shutdown()
        registry.server.server_close()
        thread.join(5)


def skill_md(name: str, description: str = "Does a thing", body: str = "Do it well.") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}\n"


def zip_of(files: Mapping[str, bytes | str], modes: Mapping[str, int] | None = None) -> bytes:
    """A zip holding `files` (name -> content); `modes` gives Unix modes (links included)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = ((modes or {}).get(name, 0o100644)) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            data = content.encode() if isinstance(content, str) else content
            archive.writestr(info, data)
    return buffer.getvalue()


def tar_of(
    files: Mapping[str, bytes | str],
    *,
    links: Mapping[str, str] | None = None,
    hard_links: Mapping[str, str] | None = None,
    gzip: bool = True,
    modes: Mapping[str, int] | None = None,
) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz" if gzip else "w") as archive:
        for name, content in files.items():
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = (modes or {}).get(name, 0o644)
            archive.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            archive.addfile(info)
        for name, target in (hard_links or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.LNKTYPE
            info.linkname = target
            archive.addfile(info)
    return buffer.getvalue()

"""TLS certificates made for a test, and a loopback HTTP proxy (absolute-form requests and
CONNECT tunnels; with `tls`, an https:// proxy)."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
from pathlib import Path

import pytest

from tests.support.raw_http_server import LoopbackServer

__all__ = ["ProxyServer", "certificate", "server_context"]


def certificate(folder: Path, names: str) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed: no test certificate can be made")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=test",
            "-addext",
            f"subjectAltName={names}",
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def server_context(cert: Path, key: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context


class ProxyServer(LoopbackServer):
    """A loopback HTTP proxy: forwards absolute-form requests and tunnels CONNECT. With
    `tls`, clients speak TLS to the proxy itself (an https:// proxy URL)."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        super().__init__(tls=tls)
        self.seen: list[bytes] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        self.seen.append(head)
        method, target, _ = head.split(b"\r\n", 1)[0].split(b" ")
        if method == b"CONNECT":
            address, _, port_text = target.decode().rpartition(":")
            upstream_reader, upstream_writer = await asyncio.open_connection(
                address, int(port_text)
            )
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            url = target.decode().removeprefix("http://")
            authority, _, path = url.partition("/")
            host, _, port = authority.rpartition(":")
            upstream_reader, upstream_writer = await asyncio.open_connection(host, int(port))
            upstream_writer.write(head.replace(target, b"/" + path.encode(), 1))

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            except ConnectionError:
                pass
            finally:
                sink.close()

        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))

"""Calls on a `net.pool.ConnectionPool` as the provider makes them, for the net tests."""

from __future__ import annotations

from openprose.net.connection import Response
from openprose.net.pool import ConnectionPool
from openprose.net.timeouts import Timeouts
from tests.support.raw_http_server import RawHttpServer

__all__ = ["HEADERS", "fetch", "fetch_from"]

HEADERS = {"content-type": "application/json", "authorization": "Bearer k"}


async def fetch(pool: ConnectionPool, body: bytes = b"{}", timeout: float = 5.0) -> Response:
    request = pool.prepare("POST", "/v1/chat/completions", HEADERS)
    return await pool.fetch(request, body, Timeouts.overall(timeout))


async def fetch_from(server: RawHttpServer, **options: object) -> Response:
    pool = ConnectionPool(server.url, **options)  # type: ignore[arg-type]
    try:
        return await fetch(pool)
    finally:
        await pool.aclose()

"""`net.timeouts` as the pool applies them to a whole answer: the head within `first_byte`,
no silence of `read` once it began, all of it within `total` — each failure saying which
ran out, the connection closed and its slot freed; an answer that keeps coming is not cut."""

from __future__ import annotations

import asyncio
import time
from typing import Any
from unittest.mock import patch

import pytest

from openprose.net.pool import ConnectionPool
from openprose.net.timeouts import TimedOut, Timeouts
from openprose.providers import ProviderSettings, RetryPolicy, open_provider
from openprose.providers.base import Message, ModelRequest, TransientProviderError
from tests.support.pool_calls import HEADERS
from tests.support.raw_http_server import RawHttpServer, RawRequest

HEAD = b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n"


async def _timed(pool: ConnectionPool, timeouts: Timeouts) -> tuple[BaseException | bytes, float]:
    request = pool.prepare("POST", "/v1/x", HEADERS)
    started = time.monotonic()
    try:
        outcome: BaseException | bytes = (await pool.fetch(request, b"{}", timeouts)).body
    except TimeoutError as failure:
        outcome = failure
    return outcome, time.monotonic() - started


async def test_a_server_that_never_begins_its_answer_meets_the_first_byte_timeout() -> None:
    async def respond(request: RawRequest) -> bool:
        await asyncio.sleep(3)
        return False

    async with RawHttpServer(respond) as server:
        pool = ConnectionPool(server.url)
        failure, took = await _timed(pool, Timeouts(total=5, first_byte=0.2))
        assert pool._open == 0  # the connection closed, its slot freed
        await pool.aclose()
    assert isinstance(failure, TimedOut) and failure.which == "first_byte"
    assert str(failure) == "no answer began within the 0.2 s first-byte timeout"
    assert took < 1.5


async def test_an_answer_that_stalls_mid_body_meets_the_read_timeout() -> None:
    async def respond(request: RawRequest) -> bool:
        request.writer.write(HEAD + b"12345")
        await asyncio.sleep(3)
        return False

    async with RawHttpServer(respond) as server:
        pool = ConnectionPool(server.url)
        failure, took = await _timed(pool, Timeouts(total=5, first_byte=5, read=0.2))
        await pool.aclose()
    assert isinstance(failure, TimedOut) and failure.which == "read"
    assert took < 1.5


async def test_an_answer_that_keeps_coming_is_not_cut_by_the_read_timeout() -> None:
    async def respond(request: RawRequest) -> bool:
        request.writer.write(HEAD)
        for digit in b"0123456789":
            await asyncio.sleep(0.06)  # 0.6 s in all: three read timeouts, never one silence
            request.writer.write(bytes([digit]))
        return True

    async with RawHttpServer(respond) as server:
        pool = ConnectionPool(server.url)
        body, _ = await _timed(pool, Timeouts(total=5, first_byte=1, read=0.2))
        await pool.aclose()
    assert body == b"0123456789"


async def test_an_answer_that_trickles_forever_meets_the_total_timeout() -> None:
    async def respond(request: RawRequest) -> bool:
        request.writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
        while True:
            await asyncio.sleep(0.03)
            request.writer.write(b"1\r\nx\r\n")

    async with RawHttpServer(respond) as server:
        pool = ConnectionPool(server.url)
        failure, took = await _timed(pool, Timeouts(total=0.4, first_byte=1, read=1))
        await pool.aclose()
    assert isinstance(failure, TimedOut) and failure.which == "total"
    assert 0.3 < took < 1.5


async def test_exchanges_in_flight_share_one_timer() -> None:
    async def respond(request: RawRequest) -> bool:
        request.writer.write(HEAD + b"0123456789")  # no timer of the server's own
        return True

    loop = asyncio.get_running_loop()
    timers: list[float] = []
    call_at = loop.call_at

    def counted(when: float, callback: Any, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
        timers.append(when)
        return call_at(when, callback, *args, **kwargs)

    async with RawHttpServer(respond) as server:
        pool = ConnectionPool(server.url)
        timeouts = Timeouts(total=30, first_byte=30, read=10)
        # 20 connections opened (each connect has its timer), the exchanges' timer set
        outcomes = await asyncio.gather(*(_timed(pool, timeouts) for _ in range(20)))
        with patch.object(loop, "call_at", counted):
            outcomes += await asyncio.gather(*(_timed(pool, timeouts) for _ in range(20)))
            outcomes += [await _timed(pool, timeouts) for _ in range(5)]  # one after another
        await pool.aclose()
    assert [body for body, _ in outcomes] == [b"0123456789"] * 45
    assert timers == []  # the timer set at the first exchange watches these 25 too


async def test_a_shorter_timeout_than_those_in_flight_still_runs_out_on_time() -> None:
    async def respond(request: RawRequest) -> bool:
        await asyncio.sleep(3)
        return False

    async with RawHttpServer(respond) as server:
        pool = ConnectionPool(server.url)
        patient = asyncio.ensure_future(_timed(pool, Timeouts(total=5, first_byte=2)))
        await asyncio.sleep(0.05)  # its watch is made first, for 2 s
        failure, took = await _timed(pool, Timeouts(total=5, first_byte=0.2))
        assert not patient.done()
        patient.cancel()
        await pool.aclose()
    assert isinstance(failure, TimedOut) and failure.which == "first_byte"
    assert took < 1.5


async def test_only_the_exchange_that_stalls_runs_out_of_time() -> None:
    async def respond(request: RawRequest) -> bool:
        if request.connection == 1:
            request.writer.write(HEAD + b"12345")  # and nothing more
            await asyncio.sleep(3)
            return False
        for digit in b"0123456789":
            await asyncio.sleep(0.06)  # 0.6 s in all, never one silence of 0.2
            request.writer.write(bytes([digit]) if digit != 48 else HEAD + b"0")
        return True

    async with RawHttpServer(respond) as server:
        pool = ConnectionPool(server.url)
        timeouts = Timeouts(total=5, first_byte=5, read=0.2)
        stalled = asyncio.ensure_future(_timed(pool, timeouts))
        await asyncio.sleep(0.05)  # the stalled one takes the first connection
        outcomes = await asyncio.gather(*(_timed(pool, timeouts) for _ in range(3)))
        failure, took = await stalled
        await pool.aclose()
    assert [body for body, _ in outcomes] == [b"0123456789"] * 3
    assert isinstance(failure, TimedOut) and failure.which == "read"
    assert took < 1.5


async def test_a_pool_closed_with_an_exchange_in_flight_keeps_its_timeout() -> None:
    async def respond(request: RawRequest) -> bool:
        await asyncio.sleep(3)
        return False

    async with RawHttpServer(respond) as server:
        pool = ConnectionPool(server.url)
        waiting = asyncio.ensure_future(_timed(pool, Timeouts(total=5, first_byte=0.3)))
        await asyncio.sleep(0.05)
        await pool.aclose()  # closes idle connections; the busy one goes on
        failure, took = await waiting
    assert isinstance(failure, TimedOut) and failure.which == "first_byte"
    assert took < 1.5


async def test_a_provider_says_a_stalled_unstreamed_answer_stalled() -> None:
    async def respond(request: RawRequest) -> bool:
        request.writer.write(HEAD + b'{"cho')
        await asyncio.sleep(3)
        return False

    async with RawHttpServer(respond) as server:
        settings = ProviderSettings(
            provider="openai",
            base_url=server.url + "/v1",
            api_key="k",
            timeout=5.0,
            read_timeout=0.2,
            retry=RetryPolicy(max_attempts=1),
        )
        provider = open_provider(settings)
        request = ModelRequest(model="m", messages=(Message("user", "hi"),), max_tokens=8)
        started = time.monotonic()
        with pytest.raises(TransientProviderError, match="the answer stalled: nothing arrived"):
            await provider.complete(request)
        await provider.aclose()
    assert time.monotonic() - started < 2


def test_overall_bounds_every_phase_by_one_figure() -> None:
    assert Timeouts.overall(3, read=1) == Timeouts(connect=3, first_byte=3, read=1, total=3)

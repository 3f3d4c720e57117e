"""What the hosted providers share: JSON over HTTP/1.1, plain or SSE, through a transport.

`HttpProvider` speaks to one `net.transport.Transport` for its whole life (by default an
`HttpTransport`: keep-alive connections, at most `max_connections`, the environment's proxy;
tests pass a `MockTransport`). The request is prepared once (its head encoded once); each
request sends its body as orjson bytes and either reads
the whole JSON answer or, when a text sink is set (see `streaming`), reads the server-sent
events and hands the text deltas to the sink. A subclass says only what its wire format looks like: `request_body` builds the JSON
body, `read_answer` reads a whole answer, `assembler` builds a stream reader.

Every failure leaves here as one of the contract's errors: non-2xx statuses and transport
failures through `http_errors`, an unusable answer as a permanent "malformed response".
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol
from urllib.parse import urlsplit

import orjson

from openprose.net.errors import HttpFailure
from openprose.net.timeouts import Timeouts
from openprose.net.transport import HttpTransport, StreamedAnswer, Transport
from openprose.providers.base import (
    ModelRequest,
    ModelResponse,
    ProviderConfigError,
    ProviderError,
)
from openprose.providers.http_errors import (
    BadAnswer,
    StreamCut,
    malformed_response,
    shown,
    status_error,
    transport_error,
    undecodable,
)
from openprose.providers.streaming import AnswerStream, TextSink, current_sink

__all__ = ["HttpProvider", "StreamAssembler"]
# Statuses with which a server refuses a request form it does not know.
STREAM_REFUSALS = frozenset({400, 422})


class StreamAssembler(Protocol):
    """Reads one streamed answer, event by event, into the `ModelResponse` a whole answer
    would have given."""

    def feed(self, event: str, data: bytes) -> str:
        """Take one server-sent event; return the answer text it adds ("" for none).
        Raises `BadAnswer` for an event of the wrong shape, `ProviderError` for an error
        the server reports inside the stream."""
        ...

    @property
    def finished(self) -> bool:
        """True once the closing event has arrived."""
        ...

    def response(self, request_id: str | None) -> ModelResponse: ...


class HttpProvider:
    name = "http"
    key_hint = "the API key"  # the variable a credential error names
    request_id_header = "x-request-id"

    def __init__(
        self,
        *,
        base_url: str,
        path: str,
        headers: Mapping[str, str],
        timeout: float,
        read_timeout: float | None = None,
        max_connections: int = 0,
        transport: Transport | None = None,
    ) -> None:
        try:
            parts = urlsplit(base_url)
            host = parts.hostname
        except ValueError:  # `http://[::1/v1`: an unclosed IPv6 bracket
            host = None
        if host is None or parts.scheme not in ("http", "https"):
            raise ProviderConfigError(
                f"{self.name}: the base URL must be an http:// or https:// URL with a host, "
                f"got {base_url!r}"
            )
        url = self.url = base_url.rstrip("/") + path
        self._timeout = timeout
        # the silence tolerated once an answer streams (`read_timeout` in prose.toml)
        self._read_timeout = timeout if read_timeout is None else min(read_timeout, timeout)
        # Unstreamed, the head comes after the whole generation: only the request's timeout
        # bounds it. Streamed, the head may come late too (a server reads a long prompt
        # first), but once it streams what must not last is silence between chunks.
        self._whole_timeouts = Timeouts.overall(timeout, read=self._read_timeout)
        self._stream_timeouts = Timeouts(
            connect=timeout, first_byte=timeout, read=self._read_timeout
        )
        # 0: no cap on connections (the retry layer limits calls)
        self._transport = transport or HttpTransport(max_connections=max_connections)
        headers = {"content-type": "application/json", **headers}
        try:  # a bad proxy URL or header fails here, not at the first call
            self._prepared = self._transport.prepare("POST", url, headers)
        except ValueError as exc:
            raise ProviderConfigError(f"{self.name}: {exc}") from None
        self._streams = True  # False once the server refused a streamed request

    # --- the wire format (subclasses) ----------------------------------------------------

    def request_body(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        raise NotImplementedError

    def read_answer(
        self, answer: dict[str, Any], request: ModelRequest, request_id: str | None
    ) -> ModelResponse:
        raise NotImplementedError

    def assembler(self, request: ModelRequest) -> StreamAssembler:
        raise NotImplementedError

    # --- the provider contract -----------------------------------------------------------

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """One request: streamed when a text sink is set for this call, whole otherwise."""
        sink = current_sink()
        if sink is None:
            return await self._complete_whole(request)
        return await self.stream(request, sink)

    async def stream(self, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        """One streamed request: each piece of answer text goes to `on_text` as it arrives;
        the result is the `ModelResponse` the whole answer would have been.

        A server that refuses the streamed form (400/422: an older compatible server that
        knows no `stream_options`) is asked again unstreamed, and this provider streams no
        more: streaming only shows the answer sooner, it must never cost the answer."""
        if not self._streams:
            return _in_one_piece(await self._complete_whole(request), on_text)
        body = orjson.dumps(self.request_body(request, stream=True))
        try:
            async with self._transport.stream(
                self._prepared, body, self._stream_timeouts
            ) as answer:
                if answer.status in STREAM_REFUSALS:
                    self._streams = False
                    await answer.read()  # the rest of the refusal: the connection stays usable
                elif answer.status >= 300:
                    raise self._status_error(
                        answer.status, answer.headers, await answer.read(), request
                    )
                else:
                    try:
                        return await self._read_stream(answer, request, on_text)
                    except TimeoutError:
                        raise StreamCut(
                            f"the answer stream stalled: nothing arrived for "
                            f"{self._read_timeout:g} s (read_timeout in prose.toml)"
                        ) from None
        except ProviderError:
            raise
        except BadAnswer as problem:
            raise malformed_response(
                self.name, request.model, f"in the stream: {problem}"
            ) from None
        except (TimeoutError, HttpFailure, StreamCut) as exc:
            raise transport_error(
                exc, provider=self.name, model=request.model, timeout=self._timeout, url=self.url
            ) from exc
        return _in_one_piece(await self._complete_whole(request), on_text)

    async def _read_stream(
        self, answer: StreamedAnswer, request: ModelRequest, on_text: TextSink
    ) -> ModelResponse:
        request_id = answer.headers.get(self.request_id_header)
        if "text/event-stream" not in answer.headers.get("content-type", ""):
            # A server that ignored `stream: true` and answered in one piece.
            whole = self._read_whole(await answer.read(), request, request_id)
            return _in_one_piece(whole, on_text)
        assembler = self.assembler(request)
        if isinstance(on_text, AnswerStream):
            on_text.begin()
        async for event, data in _server_sent_events(aiter(answer)):
            text = assembler.feed(event, data)
            if text:
                on_text(text)
            if assembler.finished:
                break
        if not assembler.finished:
            raise StreamCut("the answer stream ended before its closing event")
        return assembler.response(request_id)

    async def aclose(self) -> None:
        await self._transport.aclose()

    # --- internals -----------------------------------------------------------------------

    async def _complete_whole(self, request: ModelRequest) -> ModelResponse:
        body = orjson.dumps(self.request_body(request, stream=False))
        try:
            answer = await self._transport.fetch(self._prepared, body, self._whole_timeouts)
        except (TimeoutError, HttpFailure) as exc:
            raise transport_error(
                exc, provider=self.name, model=request.model, timeout=self._timeout, url=self.url
            ) from exc
        if answer.status >= 300:
            raise self._status_error(answer.status, answer.headers, answer.body, request)
        return self._read_whole(answer.body, request, answer.headers.get(self.request_id_header))

    def _read_whole(
        self, raw: bytes, request: ModelRequest, request_id: str | None
    ) -> ModelResponse:
        try:
            answer = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise malformed_response(self.name, request.model, undecodable(raw)) from None
        if not isinstance(answer, dict):
            problem = f"the server sent {shown(answer)} instead of a JSON object"
            raise malformed_response(self.name, request.model, problem)
        try:
            return self.read_answer(answer, request, request_id)
        except BadAnswer as problem:
            raise malformed_response(self.name, request.model, str(problem)) from None

    def _status_error(
        self, status: int, headers: Mapping[str, str], raw: bytes, request: ModelRequest
    ) -> ProviderError:
        return status_error(
            status, headers, raw, provider=self.name, model=request.model, key_hint=self.key_hint
        )


def _in_one_piece(response: ModelResponse, on_text: TextSink) -> ModelResponse:
    """An answer that came unstreamed still reaches the watcher, as one piece."""
    if isinstance(on_text, AnswerStream):
        on_text.begin()
    if response.text:
        on_text(response.text)
    return response


async def _server_sent_events(chunks: AsyncIterator[bytes]) -> AsyncIterator[tuple[str, bytes]]:
    """(event name, data) per event of a `text/event-stream` body arriving in chunks of any
    size (no line-length limit); the name is "message" when the event names none. Comment
    lines (`: ping`), ids and retry hints are skipped."""
    pending = b""
    event = b""
    data: list[bytes] = []
    async for chunk in chunks:
        lines = (pending + chunk).split(b"\n")
        pending = lines.pop()  # the start of a line still arriving
        for raw_line in lines:
            line = raw_line.removesuffix(b"\r")
            if not line:
                if data:
                    yield (event or b"message").decode(), b"\n".join(data)
                event, data = b"", []
                continue
            field, _, value = line.partition(b":")
            if field == b"data":
                data.append(value.removeprefix(b" "))
            elif field == b"event":
                event = value.removeprefix(b" ")
    if pending.strip():
        field, _, value = pending.removesuffix(b"\r").partition(b":")
        if field == b"data":
            data.append(value.removeprefix(b" "))
    if data:  # a last event without its blank line
        yield (event or b"message").decode(), b"\n".join(data)

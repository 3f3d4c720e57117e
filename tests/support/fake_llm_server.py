"""A loopback fake of the OpenAI chat.completions and Anthropic messages APIs.

For tests and benchmarks only. One base URL serves both SDKs:
  * Anthropic: POST {base}/v1/messages          (AsyncAnthropic(base_url=base))
  * OpenAI:    POST {base}/v1/chat/completions  (AsyncOpenAI(base_url=base + "/v1"))

In-process (tests):

    async with FakeLLMServer(latency_ms=5) as server:
        server.script(Fault("429", retry_after=0.2), Fault("500"))
        ... point a client at server.base_url ...
        assert server.stats.attempts == 3

Out-of-process (benchmarks, so client and server do not share a core):

    base_url, stop = start_in_subprocess(latency_ms=20)
    ...; print(fetch_stats(base_url)); stop()

The default reply echoes the last user message: "echo: <text>". A reply function may also
answer with tool calls (`FakeAnswer(text, (FakeToolCall(name, arguments), ...))`), sent in
each API's own shape. A request with `"stream": true` is answered with server-sent events as
the real APIs send them (text a word per event, tool-call arguments in pieces, usage last).
Every answer carries a request id header (`request-id` for Anthropic, `x-request-id` for
OpenAI).
With `prompt_cache=True` (`--prompt-cache` out of process) the usage says what the APIs'
prompt caches would have served (`fake_prompt_cache.py`): Anthropic's cache reads and writes
at `cache_control` breakpoints, OpenAI's `prompt_tokens_details.cached_tokens`.
Faults are consumed one per request, in order, across both APIs:
  "429" (with optional retry-after seconds), "500", "hang" (sleep past the client's
  timeout), "malformed" (200 with a broken JSON body), "401", and the shapes a misbehaving
  server or proxy sends: "html" (200 with an HTML page), "wrong_shape" (200 with JSON that
  is not a completion), "bad_usage" (200 whose token counts are not numbers), "502_html"
  (a proxy's HTML error page), "404_text" (Ollama's `{"error": "..."}` for an unknown model),
  "400" (a request the server does not understand, e.g. an older server refusing
  `stream_options`), "truncated" (the connection closes part-way through the body or stream), "stream_cut" (a
  stream that ends cleanly but without its closing event), "stream_error" (an error event
  in the middle of a stream: Anthropic's `overloaded_error`, an OpenAI-style `{"error"}`),
  "garbage" (200 whose body is binary noise, not even UTF-8), "huge_number" (200 with JSON
  holding a 5,000-digit number, which Python's json refuses), "cut_body" (a complete 200
  whose JSON body stops halfway, as a misbehaving proxy passes it on) and "echo_key" (a 400
  whose message quotes the API key the request carried).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import subprocess
import sys
import time
import urllib.request
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Self

import orjson
from aiohttp import web

try:
    from tests.support.fake_prompt_cache import PromptCacheModel
except ModuleNotFoundError:  # run as a script (`start_in_subprocess`): its folder is on the path
    from fake_prompt_cache import PromptCacheModel  # type: ignore[no-redef]

__all__ = [
    "FAULT_KINDS",
    "FakeAnswer",
    "FakeLLMServer",
    "FakeToolCall",
    "Fault",
    "ServerStats",
    "fetch_stats",
    "reset_server",
    "script_faults",
    "start_in_subprocess",
]

FAULT_KINDS = (
    "429",
    "500",
    "hang",
    "malformed",
    "401",
    "html",
    "wrong_shape",
    "bad_usage",
    "502_html",
    "404_text",
    "400",
    "truncated",
    "stream_cut",
    "stream_error",
    "garbage",
    "huge_number",
    "cut_body",
    "echo_key",
)


@dataclass(frozen=True)
class FakeToolCall:
    name: str
    # A dict is sent as JSON; a string is sent as it is (OpenAI's arguments string, or an
    # Anthropic stream's input pieces), so a test can send arguments that are not JSON.
    arguments: dict[str, Any] | str


@dataclass(frozen=True)
class FakeAnswer:
    text: str = ""
    tool_calls: tuple[FakeToolCall, ...] = ()


# reply(api, body) -> assistant text or a FakeAnswer; api is "anthropic" or "openai".
Reply = Callable[[str, dict[str, Any]], "str | FakeAnswer"]


@dataclass(frozen=True)
class Fault:
    kind: str
    retry_after: float | None = None  # seconds, for "429"
    hang_seconds: float = 10.0  # for "hang"

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {self.kind!r}; use one of {FAULT_KINDS}")


@dataclass
class ServerStats:
    attempts: int = 0  # every request that reached a model endpoint, faults included
    completed: int = 0  # successful answers
    in_flight: int = 0
    max_in_flight: int = 0
    # the same per API ("anthropic", "openai"): one server can stand in for two providers
    in_flight_by_api: dict[str, int] = field(default_factory=dict)
    max_in_flight_by_api: dict[str, int] = field(default_factory=dict)
    attempt_times: list[float] = field(default_factory=list)  # time.monotonic() on arrival
    bodies: list[dict[str, Any]] = field(default_factory=list)  # request JSON, when kept
    headers: list[dict[str, str]] = field(default_factory=list)  # lower-cased, when kept
    connections: set[tuple[str, int]] = field(default_factory=set)  # client addresses, when kept

    def summary(self) -> dict[str, int]:
        return {
            "attempts": self.attempts,
            "completed": self.completed,
            "in_flight": self.in_flight,
            "max_in_flight": self.max_in_flight,
            **{f"max_in_flight_{api}": n for api, n in self.max_in_flight_by_api.items()},
        }


def echo_reply(api: str, body: dict[str, Any]) -> str:
    messages = body.get("messages") or []
    users = [m.get("content", "") for m in messages if m.get("role") == "user"]
    last = users[-1] if users else ""
    if isinstance(last, list) and all(
        isinstance(b, dict) and b.get("type") == "text" for b in last
    ):
        last = "".join(str(b.get("text", "")) for b in last)  # text split at a cache breakpoint
    return f"echo: {last if isinstance(last, str) else json.dumps(last)}"


class FakeLLMServer:
    def __init__(
        self,
        *,
        latency_ms: float = 0.0,
        reply: Reply = echo_reply,
        keep_requests: bool = True,
        host: str = "127.0.0.1",
        port: int = 0,
        prompt_cache: bool = False,
    ) -> None:
        self.latency = latency_ms / 1000.0
        # Answer with cache usage as the APIs do (`fake_prompt_cache`); off: none reported.
        self.prompt_cache = PromptCacheModel() if prompt_cache else None
        self.reply = reply
        self.keep_requests = keep_requests  # off for benchmarks: no per-request memory
        self.faults: deque[Fault] = deque()
        self.stats = ServerStats()
        self._host = host
        self._port = port
        self._ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    # --- lifecycle ---------------------------------------------------------------------

    async def start(self) -> str:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/messages", self._anthropic)
        app.router.add_post("/v1/chat/completions", self._openai)
        app.router.add_post("/chat/completions", self._openai)
        app.router.add_get("/_control/stats", self._get_stats)
        app.router.add_post("/_control/faults", self._post_faults)
        app.router.add_post("/_control/reset", self._post_reset)
        # handler_cancellation: a client that gives up (timeout) ends its "hang" handler.
        self._runner = web.AppRunner(
            app, access_log=None, handler_cancellation=True, shutdown_timeout=0.5
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, self._port, backlog=4096)
        await site.start()
        port = self._runner.addresses[0][1]
        self.base_url = f"http://{self._host}:{port}"
        return self.base_url

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # --- scripting ---------------------------------------------------------------------

    def script(self, *faults: Fault) -> None:
        self.faults.extend(faults)

    def reset(self) -> None:
        self.faults.clear()
        self.stats = ServerStats()

    @property
    def openai_base_url(self) -> str:
        return self.base_url + "/v1"

    # --- handlers ----------------------------------------------------------------------

    async def _anthropic(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, "anthropic")

    async def _openai(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, "openai")

    async def _serve(self, request: web.Request, api: str) -> web.StreamResponse:
        stats = self.stats
        stats.attempts += 1
        stats.attempt_times.append(time.monotonic())
        stats.in_flight += 1
        stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
        by_api = stats.in_flight_by_api[api] = stats.in_flight_by_api.get(api, 0) + 1
        stats.max_in_flight_by_api[api] = max(stats.max_in_flight_by_api.get(api, 0), by_api)
        try:
            body = orjson.loads(await request.read())
            if self.keep_requests:
                stats.bodies.append(body)
                stats.headers.append({k.lower(): v for k, v in request.headers.items()})
                peer = request.transport.get_extra_info("peername") if request.transport else None
                if peer:
                    stats.connections.add((str(peer[0]), int(peer[1])))
            fault = self.faults.popleft() if self.faults else None
            cache_usage: dict[str, Any] | None = None
            if self.prompt_cache is not None:
                cache_usage, written = self.prompt_cache.arrive(api, body)
            if self.latency:
                await asyncio.sleep(self.latency)
            if fault is not None and fault.kind not in STREAM_FAULTS:
                return await self._fault(fault, api, body, request)
            request_id = f"req_fake_{next(self._ids)}"
            reply = self.reply(api, body)
            answer = reply if isinstance(reply, FakeAnswer) else FakeAnswer(reply)
            header = "request-id" if api == "anthropic" else "x-request-id"
            if body.get("stream"):
                response = await self._stream(
                    request, api, body, answer, request_id, fault, cache_usage
                )
                stats.completed += fault is None
                if self.prompt_cache is not None and fault is None:
                    self.prompt_cache.commit(api, written)
                return response
            if fault is not None:  # a stream fault on a plain request: the body breaks off
                return await self._fault(Fault("truncated"), api, body, request)
            payload = (
                _anthropic_message(body, answer, request_id, cache_usage)
                if api == "anthropic"
                else _openai_completion(body, answer, request_id, cache_usage)
            )
            stats.completed += 1
            if self.prompt_cache is not None:
                self.prompt_cache.commit(api, written)
            return web.Response(
                body=orjson.dumps(payload),
                content_type="application/json",
                headers={header: request_id},
            )
        finally:
            stats.in_flight -= 1
            stats.in_flight_by_api[api] -= 1

    async def _stream(
        self,
        request: web.Request,
        api: str,
        body: dict[str, Any],
        answer: FakeAnswer,
        request_id: str,
        fault: Fault | None,
        cache_usage: dict[str, Any] | None = None,
    ) -> web.StreamResponse:
        header = "request-id" if api == "anthropic" else "x-request-id"
        response = web.StreamResponse(
            headers={
                "content-type": "text/event-stream",
                "cache-control": "no-cache",
                header: request_id,
            }
        )
        await response.prepare(request)
        events = (
            _anthropic_events(body, answer, request_id, cache_usage)
            if api == "anthropic"
            else _openai_chunks(body, answer, request_id, cache_usage)
        )
        half = max(1, len(events) // 2)
        for number, event in enumerate(events):
            if fault is not None and number == half:
                if fault.kind == "truncated":
                    assert request.transport is not None
                    request.transport.close()  # mid-chunk: the client sees a broken body
                    return response
                if fault.kind == "stream_cut":
                    break  # a clean end, without the closing event
                if fault.kind == "stream_error":
                    await response.write(_stream_error(api))
                    break
            await response.write(event)
        await response.write_eof()
        return response

    async def _fault(
        self, fault: Fault, api: str, body: dict[str, Any], request: web.Request
    ) -> web.StreamResponse:
        if fault.kind == "echo_key":  # a careless server quoting the credential it got
            key = request.headers.get("x-api-key") or request.headers.get("authorization") or ""
            message = f"invalid request made with key {key.removeprefix('Bearer ')}"
            return web.json_response(_error_body(api, 400, message), status=400)
        if fault.kind == "garbage":
            return web.Response(
                status=200, body=b"\x00\xff\xfe\x9c\x1b[2J garbage", content_type="application/json"
            )
        if fault.kind == "huge_number":  # JSON no parser will turn into an int
            return web.Response(
                status=200, body=b'{"id": ' + b"9" * 5000 + b"}", content_type="application/json"
            )
        if fault.kind == "cut_body":
            payload = (
                _anthropic_message(body, FakeAnswer("cut"), "req_cut")
                if api == "anthropic"
                else _openai_completion(body, FakeAnswer("cut"), "req_cut")
            )
            whole = orjson.dumps(payload)
            return web.Response(
                status=200, body=whole[: len(whole) // 2], content_type="application/json"
            )
        if fault.kind == "truncated":
            response = web.StreamResponse(headers={"content-type": "application/json"})
            response.content_length = 4096
            await response.prepare(request)
            await response.write(b'{"id": "cut", "content": [')
            assert request.transport is not None
            request.transport.close()
            return response
        if fault.kind == "html":
            return web.Response(
                status=200, text="<html><body>Welcome</body></html>", content_type="text/html"
            )
        if fault.kind == "wrong_shape":
            return web.json_response({"id": "x", "object": "list", "data": []})
        if fault.kind == "bad_usage":
            payload = (
                _anthropic_message(body, FakeAnswer("ok"), "req_bad_usage")
                if api == "anthropic"
                else _openai_completion(body, FakeAnswer("ok"), "req_bad_usage")
            )
            payload["usage"] = {key: "many" for key in payload["usage"]}
            return web.json_response(payload)
        if fault.kind == "502_html":
            return web.Response(
                status=502, text="<html><h1>502 Bad Gateway</h1></html>", content_type="text/html"
            )
        if fault.kind == "404_text":
            return web.json_response({"error": "model 'nope' not found"}, status=404)
        if fault.kind == "hang":
            await asyncio.sleep(fault.hang_seconds)
            return web.json_response(_error_body(api, 504, "hung"), status=504)
        if fault.kind == "malformed":
            return web.Response(
                status=200, body=b'{"id": "broken", "content": [', content_type="application/json"
            )
        status = int(fault.kind)
        headers = {}
        if fault.retry_after is not None:
            headers["retry-after"] = f"{fault.retry_after:g}"
        message = {
            429: "rate limited",
            500: "internal error",
            401: "invalid api key",
            400: "unrecognized request argument: stream_options",
        }[status]
        return web.json_response(_error_body(api, status, message), status=status, headers=headers)

    async def _get_stats(self, request: web.Request) -> web.StreamResponse:
        return web.json_response(self.stats.summary())

    async def _post_faults(self, request: web.Request) -> web.StreamResponse:
        items = await request.json()
        self.script(*(Fault(**item) for item in items))
        return web.json_response({"queued": len(self.faults)})

    async def _post_reset(self, request: web.Request) -> web.StreamResponse:
        self.reset()
        return web.json_response({"ok": True})


def _count_tokens(text: str) -> int:
    return len(text.split())


def _prompt_tokens(body: dict[str, Any]) -> int:
    parts = [str(m.get("content", "")) for m in body.get("messages") or []]
    system = body.get("system")
    if isinstance(system, str):
        parts.append(system)
    return sum(_count_tokens(p) for p in parts)


def _truncate(text: str, limit: int | None) -> tuple[str, bool]:
    words = text.split(" ")
    if limit is None or len(words) <= limit:
        return text, False
    return " ".join(words[:limit]), True


def _arguments_json(call: FakeToolCall) -> str:
    if isinstance(call.arguments, str):
        return call.arguments
    return json.dumps(call.arguments)


def _anthropic_message(
    body: dict[str, Any],
    answer: FakeAnswer,
    request_id: str,
    cache_usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    text, cut = _truncate(answer.text, body.get("max_tokens"))
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [
        {"type": "tool_use", "id": f"toolu_{i}", "name": c.name, "input": c.arguments}
        for i, c in enumerate(answer.tool_calls)
    ]
    stop = "max_tokens" if cut else ("tool_use" if answer.tool_calls else "end_turn")
    return {
        "id": f"msg_{request_id}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", ""),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            **(cache_usage or {"input_tokens": _prompt_tokens(body)}),
            "output_tokens": _count_tokens(text),
        },
    }


def _openai_completion(
    body: dict[str, Any],
    answer: FakeAnswer,
    request_id: str,
    cache_usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    limit = body.get("max_completion_tokens", body.get("max_tokens"))
    text, cut = _truncate(answer.text, limit)
    prompt, completion = _prompt_tokens(body), _count_tokens(text)
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if answer.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": c.name, "arguments": _arguments_json(c)},
            }
            for i, c in enumerate(answer.tool_calls)
        ]
    finish = "length" if cut else ("tool_calls" if answer.tool_calls else "stop")
    return {
        "id": f"chatcmpl-{request_id}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", ""),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            **(cache_usage or {}),
        },
    }


def _sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    payload = data if isinstance(data, bytes) else orjson.dumps(data)
    return head + b"data: " + payload + b"\n\n"


def _pieces(text: str) -> list[str]:
    """A text as the deltas a model streams: a word (with its space) at a time."""
    words = text.split(" ")
    return [w + " " for w in words[:-1]] + [words[-1]] if text else []


def _halves(text: str) -> list[str]:
    middle = len(text) // 2
    return [text[:middle], text[middle:]]


def _anthropic_events(
    body: dict[str, Any],
    answer: FakeAnswer,
    request_id: str,
    cache_usage: dict[str, Any] | None = None,
) -> list[bytes]:
    whole = _anthropic_message(body, answer, request_id, cache_usage)
    start = {**whole, "content": [], "stop_reason": None}
    start["usage"] = {**whole["usage"], "output_tokens": 1}  # the input counts come first
    events = [
        _sse({"type": "message_start", "message": start}, "message_start"),
        _sse({"type": "ping"}, "ping"),
    ]
    for index, block in enumerate(whole["content"]):
        if block["type"] == "text":
            opened: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"])]
        else:
            opened = {**block, "input": {}}
            call = answer.tool_calls[int(block["id"].split("_")[1])]
            deltas = [
                {"type": "input_json_delta", "partial_json": p}
                for p in _halves(_arguments_json(call))
            ]
        events.append(
            _sse(
                {"type": "content_block_start", "index": index, "content_block": opened},
                "content_block_start",
            )
        )
        events += [
            _sse({"type": "content_block_delta", "index": index, "delta": d}, "content_block_delta")
            for d in deltas
        ]
        events.append(_sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
    events.append(
        _sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": whole["usage"]["output_tokens"]},
            },
            "message_delta",
        )
    )
    events.append(_sse({"type": "message_stop"}, "message_stop"))
    return events


def _openai_chunks(
    body: dict[str, Any],
    answer: FakeAnswer,
    request_id: str,
    cache_usage: dict[str, Any] | None = None,
) -> list[bytes]:
    whole = _openai_completion(body, answer, request_id, cache_usage)
    choice = whole["choices"][0]
    base = {
        "id": whole["id"],
        "object": "chat.completion.chunk",
        "created": whole["created"],
        "model": whole["model"],
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": p}) for p in _pieces(choice["message"]["content"] or "")]
    for index, call in enumerate(choice["message"].get("tool_calls", ())):
        first, second = _halves(call["function"]["arguments"])
        opened = {"index": index, "id": call["id"], "type": "function"}
        chunks.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            **opened,
                            "function": {"name": call["function"]["name"], "arguments": first},
                        }
                    ]
                }
            )
        )
        chunks.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": second}}]}))
    chunks.append(chunk({}, choice["finish_reason"]))
    if (body.get("stream_options") or {}).get("include_usage"):
        chunks.append(_sse({**base, "choices": [], "usage": whole["usage"]}))
    chunks.append(b"data: [DONE]\n\n")
    return chunks


def _stream_error(api: str) -> bytes:
    if api == "anthropic":
        error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
        return _sse(error, "error")
    return _sse({"error": {"message": "the model crashed", "type": "server_error"}})


STREAM_FAULTS = frozenset({"truncated", "stream_cut", "stream_error"})


def _error_body(api: str, status: int, message: str) -> dict[str, Any]:
    if api == "anthropic":
        kinds = {429: "rate_limit_error", 401: "authentication_error"}
        return {
            "type": "error",
            "error": {"type": kinds.get(status, "api_error"), "message": message},
        }
    return {"error": {"message": message, "type": "fake_error", "code": str(status)}}


# --- out-of-process mode -------------------------------------------------------------------


def start_in_subprocess(
    latency_ms: float = 0.0, *, prompt_cache: bool = False
) -> tuple[str, Callable[[], None]]:
    """Run the server in its own process; returns (base_url, stop)."""
    process = subprocess.Popen(
        [sys.executable, __file__, "--latency-ms", str(latency_ms), "--exit-with-parent"]
        + ["--prompt-cache"] * prompt_cache,
        stdin=subprocess.PIPE,  # closed when this process dies, which ends the server
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if not line.startswith("http://"):
        process.kill()
        raise RuntimeError(f"fake LLM server failed to start: {line!r}")

    def stop() -> None:
        assert process.stdin is not None
        process.stdin.close()
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    return line, stop


def fetch_stats(base_url: str) -> dict[str, int]:
    with urllib.request.urlopen(f"{base_url}/_control/stats", timeout=5) as response:
        return dict(json.load(response))


def script_faults(base_url: str, *faults: Fault) -> None:
    data = json.dumps([asdict(f) for f in faults]).encode()
    request = urllib.request.Request(
        f"{base_url}/_control/faults", data=data, headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=5):
        pass


def reset_server(base_url: str) -> None:
    """Forget queued faults and counters (between tests sharing one server process)."""
    request = urllib.request.Request(f"{base_url}/_control/reset", data=b"{}", method="POST")
    with urllib.request.urlopen(request, timeout=5):
        pass


async def _serve_forever(
    latency_ms: float, port: int, exit_with_parent: bool, prompt_cache: bool
) -> None:
    server = FakeLLMServer(
        latency_ms=latency_ms, keep_requests=False, port=port, prompt_cache=prompt_cache
    )
    print(await server.start(), flush=True)
    try:
        if exit_with_parent:
            await asyncio.to_thread(sys.stdin.read)  # EOF: the parent is gone
        else:
            await asyncio.Event().wait()
    finally:
        await server.close()


def main() -> None:
    parser = argparse.ArgumentParser(description="fake OpenAI/Anthropic server on loopback")
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--exit-with-parent", action="store_true", help="stop at EOF on stdin")
    parser.add_argument("--prompt-cache", action="store_true", help="report prompt-cache usage")
    args = parser.parse_args()
    try:
        asyncio.run(
            _serve_forever(args.latency_ms, args.port, args.exit_with_parent, args.prompt_cache)
        )
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()

"""Anthropic's Messages API, spoken directly over HTTP (`POST {base}/v1/messages`).

Tools are `tools` entries with an `input_schema`; the model's calls come back as
`tool_use` content blocks, and their results go back as `tool_result` blocks at the start of
the next user message. `ModelRequest.temperature` is not sent: the Messages API version we
speak no longer takes sampling parameters.

Prompt caching: `cache_control` breakpoints go on the stable prefix (`cache_breakpoints`), and
the usage's cache reads and writes are counted as parts of the prompt's tokens.
"""

from __future__ import annotations

from typing import Any

import orjson

from openprose.net.transport import Transport
from openprose.providers.base import (
    Message,
    ModelRequest,
    ModelResponse,
    ProviderError,
    ToolCall,
    TransientProviderError,
    Usage,
)
from openprose.providers.cache_breakpoints import mark_breakpoints, plan_breakpoints
from openprose.providers.cache_warming import PrefixWarming
from openprose.providers.http_client import HttpProvider
from openprose.providers.http_errors import (
    BadAnswer,
    optional_text,
    required_text,
    shown,
    token_count,
)
from openprose.providers.structured import anthropic_answer_tool, from_answer_tool, wanted

__all__ = ["AnthropicProvider"]

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2026-10-21"  # the `anthropic-version` this wire format follows
# Errors a stream may report after its 200: the server's trouble, worth another attempt.
TRANSIENT_STREAM_ERRORS = frozenset({"overloaded_error", "api_error", "rate_limit_error"})


class AnthropicProvider(HttpProvider):
    name = "anthropic"
    key_hint = "ANTHROPIC_API_KEY"
    request_id_header = "request-id"

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None = None,
        timeout: float,
        read_timeout: float | None = None,
        max_connections: int = 0,
        transport: Transport | None = None,
        prompt_cache: bool = True,
    ) -> None:
        self.prompt_cache = prompt_cache  # place `cache_control` breakpoints
        self._warming = PrefixWarming()
        super().__init__(
            base_url=base_url or DEFAULT_BASE_URL,
            path="/v1/messages",
            # Bearer is what the current API version reads; x-api-key what older versions
            # and the compatible proxies in front of them read.
            headers={
                "authorization": f"Bearer {api_key}",
                "x-api-key": api_key,
                "anthropic-version": API_VERSION,
            },
            timeout=timeout,
            read_timeout=read_timeout,
            max_connections=max_connections,
            transport=transport,
        )

    def request_body(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": [_wire_message(m) for m in request.messages],
        }
        if request.system is not None:
            body["system"] = request.system
        if request.tools:
            body["tools"] = [
                {
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.parameters or {"type": "object", "properties": {}},
                }
                for t in request.tools
            ]
        schema = wanted(request)
        if schema is not None:  # a typed result: the answer is a forced tool call
            tool, choice = anthropic_answer_tool(schema)
            body["tools"] = [tool]
            body["tool_choice"] = choice
        if self.prompt_cache and request.messages:
            mark_breakpoints(body, request, plan_breakpoints(request))
        if stream:
            body["stream"] = True
        return body

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """One request; the first with a new cached prefix goes alone (`cache_warming`)."""
        if not self.prompt_cache or not request.messages:
            return await super().complete(request)
        async with self._warming.turn(plan_breakpoints(request).prefix_key(request)):
            return await super().complete(request)

    def read_answer(
        self, answer: dict[str, Any], request: ModelRequest, request_id: str | None
    ) -> ModelResponse:
        content = answer.get("content")
        if not isinstance(content, list):
            raise BadAnswer(f"no `content` list of blocks (found {shown(content)})")
        parts: list[str] = []
        calls: list[ToolCall] = []
        for index, block in enumerate(content):
            kind = block.get("type") if isinstance(block, dict) else None
            if not isinstance(kind, str):
                raise BadAnswer(f"a content block is {shown(block)}, not a typed block")
            if kind == "text":
                parts.append(required_text(block.get("text"), f"content[{index}].text"))
            elif kind == "tool_use":
                calls.append(_tool_call(block, block.get("input"), f"content[{index}]"))
            # other blocks (thinking, server tools' records) carry no answer text
        response = ModelResponse(
            text="".join(parts),
            usage=_usage(answer.get("usage")),
            finish_reason=optional_text(answer.get("stop_reason"), "stop_reason"),
            request_id=request_id or _text_id(answer.get("id")),
            model=optional_text(answer.get("model"), "model") or request.model,
            provider=self.name,
            tool_calls=tuple(calls),
        )
        return from_answer_tool(response, request)

    def assembler(self, request: ModelRequest) -> _EventAssembler:
        return _EventAssembler(request.model, request)


def _usage(usage: object) -> Usage:
    """The API counts uncached input apart from cache reads and writes; here `input_tokens`
    is the whole prompt, as OpenAI counts it, with the cache counts as parts of it."""
    read = token_count(usage, "cache_read_input_tokens")
    written = token_count(usage, "cache_creation_input_tokens")
    return Usage(
        token_count(usage, "input_tokens") + read + written,
        token_count(usage, "output_tokens"),
        read,
        written,
    )


def _wire_message(message: Message) -> dict[str, Any]:
    """A plain turn keeps the string form; a turn with tool calls or results becomes
    blocks (tool results first, as the API requires; empty text blocks are refused)."""
    if not message.tool_calls and not message.tool_results:
        return {"role": message.role, "content": message.content}
    blocks: list[dict[str, Any]] = [
        {
            "type": "tool_result",
            "tool_use_id": result.call_id,
            "content": result.content,
            **({"is_error": True} if result.is_error else {}),
        }
        for result in message.tool_results
    ]
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    blocks.extend(
        {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
        for call in message.tool_calls
    )
    return {"role": message.role, "content": blocks}


def _tool_call(block: dict[str, Any], arguments: object, where: str) -> ToolCall:
    name = required_text(block.get("name"), f"{where}.name")
    call_id = required_text(block.get("id"), f"{where}.id")
    if not isinstance(arguments, dict):
        raise BadAnswer(f"the input of tool call {name!r} is {shown(arguments)}, not a JSON object")
    return ToolCall(call_id, name, arguments)


def _text_id(value: object) -> str | None:
    return value if isinstance(value, str) else None


class _EventAssembler:
    """Messages API stream events into one answer: `message_start` (id, model, input
    usage), per block `content_block_start` / `_delta` (text, or a tool call's input as
    pieces of JSON) / `_stop`, `message_delta` (stop reason, output usage), `message_stop`."""

    def __init__(self, model: str, request: ModelRequest | None = None) -> None:
        self._request = request  # a typed request's answer comes as a tool call
        self._model = model
        self._blocks: dict[int, dict[str, Any]] = {}
        self._usage: dict[str, Any] = {}
        self._stop: str | None = None
        self._answer_model: str | None = None
        self._id: str | None = None
        self.finished = False

    def feed(self, event: str, data: bytes) -> str:
        try:
            payload = orjson.loads(data)
        except orjson.JSONDecodeError:
            raise BadAnswer(f"an event is not JSON: {shown(data.decode(errors='replace'))}")
        if not isinstance(payload, dict):
            raise BadAnswer(f"an event is {shown(payload)}, not a JSON object")
        kind = payload.get("type", event)
        if kind == "content_block_delta":
            block = self._block(payload)
            delta = payload.get("delta")
            if not isinstance(delta, dict):
                raise BadAnswer(f"a content_block_delta has delta {shown(delta)}")
            if delta.get("type") == "text_delta":
                text = required_text(delta.get("text"), "text_delta.text")
                block.setdefault("text", []).append(text)
                return text
            if delta.get("type") == "input_json_delta":
                piece = required_text(delta.get("partial_json"), "input_json_delta.partial_json")
                block.setdefault("json", []).append(piece)
            return ""
        if kind == "content_block_start":
            opened = payload.get("content_block")
            index = payload.get("index")
            if not isinstance(opened, dict) or not isinstance(index, int):
                raise BadAnswer(f"a content_block_start is {shown(payload)}")
            self._blocks[index] = {"start": opened}
            return ""
        if kind == "message_start":
            message = payload.get("message")
            if not isinstance(message, dict):
                raise BadAnswer(f"a message_start has message {shown(message)}")
            self._id = _text_id(message.get("id"))
            self._answer_model = optional_text(message.get("model"), "model")
            self._merge_usage(message.get("usage"))
        elif kind == "message_delta":
            delta = payload.get("delta")
            if isinstance(delta, dict):
                self._stop = optional_text(delta.get("stop_reason"), "stop_reason") or self._stop
            self._merge_usage(payload.get("usage"))
        elif kind == "message_stop":
            self.finished = True
        elif kind == "error":
            self._raise_stream_error(payload.get("error"))
        return ""  # ping, content_block_stop, and event types added later

    def _block(self, payload: dict[str, Any]) -> dict[str, Any]:
        index = payload.get("index")
        if not isinstance(index, int) or index not in self._blocks:
            raise BadAnswer(f"a delta for content block {shown(index)}, which never started")
        return self._blocks[index]

    def _merge_usage(self, usage: object) -> None:
        if usage is None:
            return
        if not isinstance(usage, dict):
            raise BadAnswer(f"usage is {shown(usage)}, not an object")
        self._usage.update({k: v for k, v in usage.items() if v is not None})

    def _raise_stream_error(self, error: object) -> None:
        kind = error.get("type") if isinstance(error, dict) else None
        message = error.get("message") if isinstance(error, dict) else error
        text = f"anthropic (model {self._model}): the server reported an error mid-stream: " + (
            message if isinstance(message, str) else shown(message)
        )
        if kind in TRANSIENT_STREAM_ERRORS:
            raise TransientProviderError(text, provider="anthropic")
        raise ProviderError(text, provider="anthropic")

    def response(self, request_id: str | None) -> ModelResponse:
        parts: list[str] = []
        calls: list[ToolCall] = []
        for index, block in sorted(self._blocks.items()):
            start = block["start"]
            if start.get("type") == "text":
                parts.append(str(start.get("text") or ""))
                parts.extend(block.get("text", ()))
            elif start.get("type") == "tool_use":
                pieces = "".join(block.get("json", ()))
                arguments: object = start.get("input") or {}
                if pieces:
                    try:
                        arguments = orjson.loads(pieces)
                    except orjson.JSONDecodeError as exc:
                        name = start.get("name")
                        raise BadAnswer(
                            f"the input of tool call {name!r} is not valid JSON ({exc}): "
                            f"{shown(pieces)}"
                        ) from None
                calls.append(_tool_call(start, arguments, f"content[{index}]"))
        response = ModelResponse(
            text="".join(parts),
            usage=_usage(self._usage),
            finish_reason=self._stop,
            request_id=request_id or self._id,
            model=self._answer_model or self._model,
            provider="anthropic",
            tool_calls=tuple(calls),
        )
        return response if self._request is None else from_answer_tool(response, self._request)

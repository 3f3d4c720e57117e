"""OpenAI chat completions, spoken directly over HTTP (`POST {base}/chat/completions`).

With a base URL it serves any OpenAI-compatible server (Ollama, vLLM, llama.cpp server,
LM Studio). Tools are function definitions; the model's calls come back as `tool_calls`
whose arguments are a JSON *string*, decoded and checked here; their results go back as
`role: "tool"` messages.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

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
from openprose.providers.http_client import HttpProvider
from openprose.providers.http_errors import (
    BadAnswer,
    optional_text,
    required_text,
    shown,
    token_count,
)
from openprose.providers.structured import openai_response_format, wanted

__all__ = ["OpenAIProvider"]

OPENAI_HOST = "api.openai.com"  # OPENAI_BASE_URL may name OpenAI itself
DEFAULT_BASE_URL = "https://api.openai.com/v1"
# OpenAI has no error flag on a tool result: a failed call's text says so itself.
TOOL_ERROR_PREFIX = "error: "
TRANSIENT_STREAM_ERRORS = frozenset({"server_error", "overloaded_error", "rate_limit_exceeded"})


class OpenAIProvider(HttpProvider):
    name = "openai"
    key_hint = "OPENAI_API_KEY"
    request_id_header = "x-request-id"

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None = None,
        timeout: float,
        read_timeout: float | None = None,
        max_connections: int = 0,
        transport: Transport | None = None,
    ) -> None:
        super().__init__(
            base_url=base_url or DEFAULT_BASE_URL,
            path="/chat/completions",
            headers={"authorization": f"Bearer {api_key}"},
            timeout=timeout,
            read_timeout=read_timeout,
            max_connections=max_connections,
            transport=transport,
        )
        # OpenAI's own API wants `max_completion_tokens` (newer models reject `max_tokens`);
        # compatible servers are more reliably served by the older `max_tokens`.
        official = not base_url or urlsplit(base_url).hostname == OPENAI_HOST
        self._max_tokens_param = "max_completion_tokens" if official else "max_tokens"

    def request_body(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        messages: list[dict[str, Any]] = []
        if request.system is not None:
            messages.append({"role": "system", "content": request.system})
        for message in request.messages:
            messages.extend(_wire_messages(message))
        body: dict[str, Any] = {
            "model": request.model,
            "messages": messages,
            self._max_tokens_param: request.max_tokens,
        }
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters or {"type": "object", "properties": {}},
                    },
                }
                for t in request.tools
            ]
        schema = wanted(request)
        if schema is not None:  # a typed result: decoding constrained to its schema
            body["response_format"] = openai_response_format(schema)
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}  # the usage comes last
        return body

    def read_answer(
        self, answer: dict[str, Any], request: ModelRequest, request_id: str | None
    ) -> ModelResponse:
        choices = answer.get("choices")
        if not isinstance(choices, list) or not choices:
            raise BadAnswer(f"no `choices` list with an answer (found {shown(choices)})")
        choice = choices[0]
        if not isinstance(choice, dict):
            raise BadAnswer(f"`choices[0]` is {shown(choice)}, not an object")
        message = choice.get("message")
        if not isinstance(message, dict):
            raise BadAnswer(f"`choices[0].message` is {shown(message)}, not a message object")
        text = optional_text(message.get("content"), "choices[0].message.content")
        calls = message.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            raise BadAnswer(f"choices[0].message.tool_calls is {shown(calls)}, not a list")
        if text is None and not calls:
            # null content goes with tool calls; alone it is no answer, not an empty one
            raise BadAnswer(_no_content(message, choice.get("finish_reason")))
        tool_calls = tuple(
            _tool_call(
                call.get("id") if isinstance(call, dict) else None,
                _function(call, f"tool_calls[{i}]"),
                f"tool_calls[{i}]",
                index=i,
            )
            for i, call in enumerate(calls or ())
        )
        return ModelResponse(
            text=text or "",
            usage=_usage(answer.get("usage")),
            finish_reason=optional_text(choice.get("finish_reason"), "finish_reason"),
            request_id=request_id or _text_id(answer.get("id")),
            model=optional_text(answer.get("model"), "model") or request.model,
            provider=self.name,
            tool_calls=tool_calls,
        )

    def assembler(self, request: ModelRequest) -> _ChunkAssembler:
        return _ChunkAssembler(request.model)


def _usage(usage: object) -> Usage:
    """`prompt_tokens` counts the whole prompt; OpenAI caches long prefixes by itself and
    says how much of the prompt it read from the cache (`prompt_tokens_details`). It bills
    no cache writes."""
    details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else None
    return Usage(
        token_count(usage, "prompt_tokens"),
        token_count(usage, "completion_tokens"),
        token_count(details, "cached_tokens"),
    )


def _no_content(message: dict[str, Any], finish_reason: object) -> str:
    """Why an answer with null content and no tool calls holds nothing, in words."""
    said = "choices[0].message.content is null and there are no tool calls"
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        return f"{said}: the model refused ({_short_text(refusal)})"
    if finish_reason == "length":
        return f"{said}: the token limit was reached before any answer (raise max_tokens)"
    if isinstance(finish_reason, str):
        return f"{said} (finish_reason {finish_reason!r})"
    return said


def _short_text(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _wire_messages(message: Message) -> list[dict[str, Any]]:
    """One contract message as chat-completions messages: tool results become `tool`
    messages (before the user's text, which follows them), tool calls an assistant's
    `tool_calls` with JSON-string arguments."""
    if message.tool_calls:
        return [
            {
                "role": "assistant",
                "content": message.content or None,
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {
                            "name": call.name,
                            "arguments": orjson.dumps(call.arguments).decode(),
                        },
                    }
                    for call in message.tool_calls
                ],
            }
        ]
    if not message.tool_results:
        return [{"role": message.role, "content": message.content}]
    wire: list[dict[str, Any]] = [
        {
            "role": "tool",
            "tool_call_id": result.call_id,
            "content": (TOOL_ERROR_PREFIX + result.content) if result.is_error else result.content,
        }
        for result in message.tool_results
    ]
    if message.content:
        wire.append({"role": "user", "content": message.content})
    return wire


def _function(call: object, where: str) -> dict[str, Any]:
    if not isinstance(call, dict):
        raise BadAnswer(f"{where} is {shown(call)}, not a tool call object")
    function = call.get("function")
    if not isinstance(function, dict):
        raise BadAnswer(f"{where}.function is {shown(function)}, not an object")
    return function


def _tool_call(call_id: object, function: dict[str, Any], where: str, *, index: int) -> ToolCall:
    name = required_text(function.get("name"), f"{where}.function.name")
    arguments = function.get("arguments")
    if arguments is None or arguments == "":
        decoded: Any = {}  # some compatible servers send nothing for a call without arguments
    elif isinstance(arguments, dict):
        decoded = arguments  # and some send the object itself
    elif isinstance(arguments, str):
        try:
            decoded = orjson.loads(arguments)
        except orjson.JSONDecodeError as exc:
            raise BadAnswer(
                f"the arguments of tool call {name!r} are not valid JSON ({exc}): {shown(arguments)}"
            ) from None
    else:
        raise BadAnswer(f"{where}.function.arguments is {shown(arguments)}, not a JSON string")
    if not isinstance(decoded, dict):
        raise BadAnswer(
            f"the arguments of tool call {name!r} are {shown(decoded)}, not a JSON object"
        )
    if call_id is not None and not isinstance(call_id, str):
        raise BadAnswer(f"{where}.id is {shown(call_id)}, not a string")
    return ToolCall(call_id or f"call_{index}", name, decoded)


def _raise_stream_error(error: object, model: str) -> None:
    """An error event: the server's trouble (a `server_error`, a 5xx code, overload, rate
    limit) is transient; anything else (a bad request found late) is not."""
    fields = error if isinstance(error, dict) else {"message": error}
    message = fields.get("message")
    kind = str(fields.get("type") or "")
    code = fields.get("code")
    text = f"openai (model {model}): the server reported an error mid-stream: " + (
        message if isinstance(message, str) else shown(message)
    )
    server_side = kind in TRANSIENT_STREAM_ERRORS or (
        isinstance(code, int | str) and str(code).isdigit() and int(code) >= 500
    )
    if server_side:
        raise TransientProviderError(text, provider="openai")
    raise ProviderError(text, provider="openai")


def _text_id(value: object) -> str | None:
    return value if isinstance(value, str) else None


class _ChunkAssembler:
    """Chat-completion chunks (`data: {...}` lines, then `data: [DONE]`) into one answer.
    Tool calls arrive in pieces keyed by `index`: the id and name first, the arguments
    string spread over later chunks."""

    def __init__(self, model: str) -> None:
        self._model = model
        self._text: list[str] = []
        self._content_seen = False  # a `content` string in some delta, empty or not
        self._refusal: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}
        self._finish: str | None = None
        self._usage: Any = None
        self._answer_model: str | None = None
        self._id: str | None = None
        self.finished = False

    def feed(self, event: str, data: bytes) -> str:
        if data.strip() == b"[DONE]":
            self.finished = True
            return ""
        try:
            chunk = orjson.loads(data)
        except orjson.JSONDecodeError:
            raise BadAnswer(f"an event is not JSON: {shown(data.decode(errors='replace'))}")
        if not isinstance(chunk, dict):
            raise BadAnswer(f"an event is {shown(chunk)}, not a JSON object")
        if "error" in chunk:  # OpenAI and compatible servers report a failure mid-stream
            _raise_stream_error(chunk["error"], self._model)
        self._id = self._id or _text_id(chunk.get("id"))
        self._answer_model = self._answer_model or optional_text(chunk.get("model"), "model")
        if chunk.get("usage") is not None:
            self._usage = chunk["usage"]
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise BadAnswer(f"`choices` is {shown(choices)}, not a list")
        added = ""
        for choice in choices:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if not isinstance(delta, dict):
                raise BadAnswer(f"`choices[0].delta` is {shown(delta)}, not an object")
            text = optional_text(delta.get("content"), "choices[0].delta.content")
            self._content_seen = self._content_seen or text is not None
            if text:
                self._text.append(text)
                added += text
            refusal = delta.get("refusal")
            if isinstance(refusal, str):
                self._refusal.append(refusal)
            for piece in delta.get("tool_calls") or ():
                self._add_call_piece(piece)
            finish = optional_text(choice.get("finish_reason"), "finish_reason")
            self._finish = finish or self._finish
        return added

    def _add_call_piece(self, piece: object) -> None:
        if not isinstance(piece, dict):
            raise BadAnswer(f"a tool call delta is {shown(piece)}, not an object")
        index = piece.get("index", len(self._calls))
        if not isinstance(index, int):
            raise BadAnswer(f"a tool call delta has index {shown(index)}")
        call = self._calls.setdefault(index, {"id": None, "name": "", "arguments": []})
        if isinstance(piece.get("id"), str):
            call["id"] = piece["id"]
        function = piece.get("function") or {}
        if not isinstance(function, dict):
            raise BadAnswer(f"a tool call delta's function is {shown(function)}")
        if isinstance(function.get("name"), str):
            call["name"] += function["name"]
        if isinstance(function.get("arguments"), str):
            call["arguments"].append(function["arguments"])

    def response(self, request_id: str | None) -> ModelResponse:
        calls = tuple(
            _tool_call(
                call["id"],
                {"name": call["name"] or None, "arguments": "".join(call["arguments"])},
                f"tool_calls[{index}]",
                index=index,
            )
            for index, call in sorted(self._calls.items())
        )
        if not self._content_seen and not calls:  # as a whole answer's null content
            raise BadAnswer(_no_content({"refusal": "".join(self._refusal)}, self._finish))
        return ModelResponse(
            text="".join(self._text),
            usage=_usage(self._usage),
            finish_reason=self._finish,
            request_id=request_id or self._id,
            model=self._answer_model or self._model,
            provider="openai",
            tool_calls=calls,
        )

"""Anthropic's Messages API through the official SDK, on the aiohttp transport.

`ModelRequest.temperature` is not sent: the Messages API of the SDK we target no longer
takes sampling parameters (its `messages.create` rejects `temperature`).
"""

from __future__ import annotations

from typing import Any

from openprose.providers.base import ModelRequest, ModelResponse, Usage
from openprose.providers.sdk_errors import (
    BadAnswer,
    malformed_response,
    optional_text,
    shown,
    token_count,
    translate_sdk_error,
)

__all__ = ["AnthropicProvider"]


class AnthropicProvider:
    name = "anthropic"

    def __init__(self, *, api_key: str, base_url: str | None = None, timeout: float) -> None:
        import anthropic  # lazily: the SDK takes most of a second to import

        self._timeout = timeout
        self._sdk = anthropic
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=0,  # ResilientProvider owns transient retries
            # measured: several times faster than the default httpx transport under load
            http_client=anthropic.DefaultAioHttpClient(),
        )

    async def complete(self, request: ModelRequest) -> ModelResponse:
        params: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        }
        if request.system is not None:
            params["system"] = request.system
        try:
            message = await self._client.messages.create(**params)
        except (self._sdk.APIError, ValueError) as exc:  # ValueError: not JSON, or refused
            raise translate_sdk_error(
                exc,
                sdk=self._sdk,
                provider=self.name,
                model=request.model,
                key_hint="ANTHROPIC_API_KEY",
                timeout=self._timeout,
            ) from exc
        try:
            return _response(message, request.model)
        except BadAnswer as exc:
            raise malformed_response(self.name, request.model, str(exc), message) from None

    async def aclose(self) -> None:
        await self._client.close()


def _response(message: Any, model: str) -> ModelResponse:
    """Read a Messages API answer, checking every field: the SDK does not validate it."""
    content = getattr(message, "content", None)
    if not isinstance(content, list):
        raise BadAnswer(f"no `content` list of blocks (found {shown(content)})")
    parts: list[str] = []
    for block in content:
        kind = getattr(block, "type", None)
        if not isinstance(kind, str):
            raise BadAnswer(f"a content block is {shown(block)}, not a typed block")
        if kind == "text":
            text = getattr(block, "text", None)
            if not isinstance(text, str):
                raise BadAnswer(f"a text block has text {shown(text)}")
            parts.append(text)
    usage = getattr(message, "usage", None)
    request_id = getattr(message, "_request_id", None) or getattr(message, "id", None)
    return ModelResponse(
        text="".join(parts),
        usage=Usage(token_count(usage, "input_tokens"), token_count(usage, "output_tokens")),
        finish_reason=optional_text(getattr(message, "stop_reason", None), "stop_reason"),
        request_id=None if request_id is None else str(request_id),
        model=optional_text(getattr(message, "model", None), "model") or model,
        provider="anthropic",
    )

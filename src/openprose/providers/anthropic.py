"""Anthropic's Messages API through the official SDK, on the aiohttp transport.

`ModelRequest.temperature` is not sent: the Messages API of the SDK we target no longer
takes sampling parameters (its `messages.create` rejects `temperature`).
"""

from __future__ import annotations

from typing import Any

from openprose.providers.base import ModelRequest, ModelResponse, ProviderError, Usage
from openprose.providers.sdk_errors import translate_sdk_error

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
        except (self._sdk.APIError, ValueError) as exc:  # ValueError: a body that is not JSON
            raise translate_sdk_error(
                exc,
                sdk=self._sdk,
                provider=self.name,
                model=request.model,
                key_hint="ANTHROPIC_API_KEY",
                timeout=self._timeout,
            ) from exc
        try:
            text = "".join(block.text for block in message.content if block.type == "text")
            usage = Usage(message.usage.input_tokens, message.usage.output_tokens)
        except (AttributeError, TypeError) as exc:
            raise ProviderError(
                f"anthropic (model {request.model}): malformed response: {exc}",
                provider=self.name,
            ) from exc
        return ModelResponse(
            text=text,
            usage=usage,
            finish_reason=message.stop_reason,
            request_id=message._request_id or message.id,
            model=message.model or request.model,
            provider=self.name,
        )

    async def aclose(self) -> None:
        await self._client.close()

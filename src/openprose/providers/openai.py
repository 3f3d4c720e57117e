"""OpenAI chat.completions through the official SDK, on the aiohttp transport.

With a base URL it serves any OpenAI-compatible server (Ollama, vLLM, llama.cpp server,
LM Studio).
"""

from __future__ import annotations

from typing import Any

from openprose.providers.base import ModelRequest, ModelResponse, ProviderError, Usage
from openprose.providers.sdk_errors import translate_sdk_error

__all__ = ["OpenAIProvider"]


class OpenAIProvider:
    name = "openai"

    def __init__(self, *, api_key: str, base_url: str | None = None, timeout: float) -> None:
        import openai  # lazily: keep `import openprose.providers` fast

        self._timeout = timeout
        self._sdk = openai
        self._client = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=0,  # ResilientProvider owns transient retries
            http_client=openai.DefaultAioHttpClient(),
        )
        # OpenAI's own API wants `max_completion_tokens` (newer models reject `max_tokens`);
        # compatible servers are more reliably served by the older `max_tokens`.
        self._max_tokens_param = "max_tokens" if base_url else "max_completion_tokens"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        messages: list[dict[str, str]] = []
        if request.system is not None:
            messages.append({"role": "system", "content": request.system})
        messages.extend({"role": m.role, "content": m.content} for m in request.messages)
        params: dict[str, Any] = {
            "model": request.model,
            "messages": messages,
            self._max_tokens_param: request.max_tokens,
        }
        if request.temperature is not None:
            params["temperature"] = request.temperature
        try:
            completion = await self._client.chat.completions.create(**params)
        except (self._sdk.APIError, ValueError) as exc:  # ValueError: a body that is not JSON
            raise translate_sdk_error(
                exc,
                sdk=self._sdk,
                provider=self.name,
                model=request.model,
                key_hint="OPENAI_API_KEY",
                timeout=self._timeout,
            ) from exc
        try:
            choice = completion.choices[0]
            text = choice.message.content or ""
            usage = completion.usage
        except (AttributeError, IndexError, TypeError) as exc:
            raise ProviderError(
                f"openai (model {request.model}): malformed response: {exc!r}",
                provider=self.name,
            ) from exc
        return ModelResponse(
            text=text,
            usage=Usage(usage.prompt_tokens, usage.completion_tokens) if usage else Usage(),
            finish_reason=choice.finish_reason,
            request_id=completion._request_id or completion.id,
            model=completion.model or request.model,
            provider=self.name,
        )

    async def aclose(self) -> None:
        await self._client.close()

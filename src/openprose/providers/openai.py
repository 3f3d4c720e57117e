"""OpenAI chat.completions through the official SDK, on the aiohttp transport.

With a base URL it serves any OpenAI-compatible server (Ollama, vLLM, llama.cpp server,
LM Studio).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from openprose.providers.base import ModelRequest, ModelResponse, Usage
from openprose.providers.sdk_errors import (
    BadAnswer,
    malformed_response,
    optional_text,
    shown,
    token_count,
    translate_sdk_error,
)

__all__ = ["OpenAIProvider"]

OPENAI_HOST = "api.openai.com"  # OPENAI_BASE_URL may name OpenAI itself


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
        official = not base_url or urlsplit(base_url).hostname == OPENAI_HOST
        self._max_tokens_param = "max_completion_tokens" if official else "max_tokens"

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
        except (self._sdk.APIError, ValueError) as exc:  # ValueError: not JSON, or refused
            raise translate_sdk_error(
                exc,
                sdk=self._sdk,
                provider=self.name,
                model=request.model,
                key_hint="OPENAI_API_KEY",
                timeout=self._timeout,
            ) from exc
        try:
            return _response(completion, request.model)
        except BadAnswer as exc:
            raise malformed_response(self.name, request.model, str(exc), completion) from None

    async def aclose(self) -> None:
        await self._client.close()


def _response(completion: Any, model: str) -> ModelResponse:
    """Read a chat.completions answer, checking every field: the SDK does not validate it."""
    choices = getattr(completion, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise BadAnswer(f"no `choices` list with an answer (found {shown(choices)})")
    choice = choices[0]
    message = getattr(choice, "message", None)
    if message is None or isinstance(message, str | int | float | list):
        raise BadAnswer(f"`choices[0].message` is {shown(message)}, not a message object")
    # null content is a real answer shape (a refusal, or every token spent on reasoning)
    text = optional_text(getattr(message, "content", None), "choices[0].message.content")
    usage = getattr(completion, "usage", None)
    request_id = getattr(completion, "_request_id", None) or getattr(completion, "id", None)
    return ModelResponse(
        text=text or "",
        usage=Usage(token_count(usage, "prompt_tokens"), token_count(usage, "completion_tokens")),
        finish_reason=optional_text(getattr(choice, "finish_reason", None), "finish_reason"),
        request_id=None if request_id is None else str(request_id),
        model=optional_text(getattr(completion, "model", None), "model") or model,
        provider="openai",
    )

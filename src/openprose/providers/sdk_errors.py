"""Translate the anthropic/openai SDK exceptions into our three error classes, and check
the shape of the answers they return.

Both SDKs share one generated exception layout (APIStatusError with `status_code` and
`response`, APITimeoutError, APIConnectionError), so one translation serves both. Neither
SDK validates a 200 answer (a body of the wrong shape, or not JSON at all, comes back as a
half-built model or a bare string), so the providers check every field they read with the
helpers at the end of this file and report a clear `ProviderError` instead.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from types import ModuleType
from typing import Any

from openprose.providers.base import ProviderConfigError, ProviderError, TransientProviderError
from openprose.providers.resilient import GarbledAnswerError, garbled_answer

__all__ = [
    "BadAnswer",
    "malformed_response",
    "optional_text",
    "parse_retry_after",
    "shown",
    "token_count",
    "translate_sdk_error",
]

TRANSIENT_STATUSES = frozenset({408, 429})
AUTH_STATUSES = frozenset({401, 403})
DETAIL_CHARS = 300


def translate_sdk_error(
    exc: Exception,
    *,
    sdk: ModuleType,
    provider: str,
    model: str,
    key_hint: str,
    timeout: float,
) -> ProviderError:
    where = f"{provider} (model {model})"
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__
        # The aiohttp transport reports a refused connection as a connect *timeout*.
        if isinstance(exc, sdk.APITimeoutError) and type(cause).__name__ != "ConnectTimeout":
            return TransientProviderError(
                f"{where}: no answer within the {timeout:g} s request timeout", provider=provider
            )
        return TransientProviderError(
            f"{where}: cannot connect to the server: {cause or exc}", provider=provider
        )
    if isinstance(exc, sdk.APIStatusError):
        status: int = exc.status_code
        detail = _short(_server_message(exc))
        if status in TRANSIENT_STATUSES or status >= 500:
            return TransientProviderError(
                f"{where}: HTTP {status}: {detail}",
                provider=provider,
                status=status,
                retry_after=parse_retry_after(exc.response.headers),
            )
        if status in AUTH_STATUSES:
            return ProviderConfigError(
                f"{where}: HTTP {status}, the server refused the credentials: {detail}; "
                f"check {key_hint}",
                provider=provider,
                status=status,
            )
        if status == 404:  # an unknown model, or a base URL missing its /v1
            detail += " (check the model id and the provider's base URL)"
        return ProviderError(f"{where}: HTTP {status}: {detail}", provider=provider, status=status)
    garbled = garbled_answer(provider, model, exc)  # a 200 body that could not be decoded
    if garbled is not None:
        return garbled
    # Another ValueError: the SDK refused the request before sending it.
    return ProviderError(
        f"{where}: the SDK refused the request: {_short(str(exc))}", provider=provider
    )


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from `retry-after-ms`, or `retry-after` as seconds or an HTTP date."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _server_message(exc: Exception) -> str:
    # Anthropic's SDK keeps the whole body ({"error": {"message": ...}}); OpenAI's keeps
    # only the inner error object ({"message": ...}).
    # Compatible servers also answer {"error": "text"} (Ollama) or a proxy's HTML page.
    body = getattr(exc, "body", None)
    if isinstance(body, dict) and isinstance(body.get("error"), dict | str):
        body = body["error"]
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])
    if isinstance(body, str) and body.strip():
        return body
    return str(getattr(exc, "message", "") or exc)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= DETAIL_CHARS else text[: DETAIL_CHARS - 3] + "..."


# --- answer checks ---------------------------------------------------------------------


class BadAnswer(Exception):
    """A field of a 200 answer is missing or of the wrong type."""


def malformed_response(provider: str, model: str, problem: str, answer: object) -> ProviderError:
    """A 200 answer we cannot use: say what was wrong with it. A body that is not JSON at all
    (a proxy's or captive portal's page) is garbled, so transient; JSON of the wrong shape
    is permanent."""
    if isinstance(answer, str):
        return GarbledAnswerError(
            f"{provider} (model {model}): malformed response: the server sent a non-JSON "
            f"body: {_short(answer)!r}",
            provider=provider,
        )
    if answer is None or isinstance(answer, int | float | list):
        problem = f"the server sent {shown(answer)} instead of a JSON object"
    return ProviderError(
        f"{provider} (model {model}): malformed response: {problem}", provider=provider
    )


def shown(value: object) -> str:
    """A value from an answer as JSON would write it, shortened, for an error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return _short(repr(value))


def token_count(usage: object, field: str) -> int:
    """A usage counter; absent or null counts as 0 (some compatible servers omit usage)."""
    value = getattr(usage, field, None)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise BadAnswer(f"usage.{field} is {shown(value)}, not a token count")
    return max(0, int(value))


def optional_text(value: Any, field: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise BadAnswer(f"{field} is {shown(value)}, not a string")

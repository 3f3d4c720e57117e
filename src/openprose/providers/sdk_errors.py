"""Translate the anthropic/openai SDK exceptions into our three error classes.

Both SDKs share one generated exception layout (APIStatusError with `status_code` and
`response`, APITimeoutError, APIConnectionError), so one translation serves both.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from types import ModuleType

from openprose.providers.base import ProviderConfigError, ProviderError, TransientProviderError

__all__ = ["parse_retry_after", "translate_sdk_error"]

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
        return ProviderError(f"{where}: HTTP {status}: {detail}", provider=provider, status=status)
    return ProviderError(f"{where}: unusable response: {_short(str(exc))}", provider=provider)


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
    body = getattr(exc, "body", None)
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])
    return str(getattr(exc, "message", "") or exc)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= DETAIL_CHARS else text[: DETAIL_CHARS - 3] + "..."

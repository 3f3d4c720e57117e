"""What a failed HTTP exchange with a model API means, shared by the hosted providers.

`status_error` turns a non-2xx answer into one of our three error classes (transient,
configuration, permanent) with the server's own message quoted; `transport_error` does the
same for a connection that failed or timed out. An answer that arrived but cannot be used
(not JSON, a field of the wrong type, tool arguments that are not a JSON object) is a
`BadAnswer` while it is being read, reported by `malformed_response` as a permanent
`ProviderError` that says what was wrong.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import Any

from openprose.net.errors import (
    AnswerTooLarge,
    CannotConnect,
    ConnectionBroke,
    NotHttp,
    TlsFailure,
)
from openprose.net.timeouts import TimedOut
from openprose.providers.base import (
    ProviderConfigError,
    ProviderError,
    TransientProviderError,
    UnreachableServerError,
)

__all__ = [
    "BadAnswer",
    "StreamCut",
    "malformed_response",
    "optional_text",
    "parse_retry_after",
    "server_message",
    "shown",
    "status_error",
    "token_count",
    "transport_error",
]

TRANSIENT_STATUSES = frozenset({408, 409, 429})
AUTH_STATUSES = frozenset({401, 403})
DETAIL_CHARS = 300


def status_error(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    provider: str,
    model: str,
    key_hint: str,
) -> ProviderError:
    """A non-2xx answer: 408/409/429/5xx are transient (with the server's `retry-after`),
    401/403 a credential problem, anything else permanent."""
    where = f"{provider} (model {model})"
    detail = _short(server_message(body))
    if status in TRANSIENT_STATUSES or status >= 500:
        return TransientProviderError(
            f"{where}: HTTP {status}: {detail}",
            provider=provider,
            status=status,
            retry_after=parse_retry_after(headers),
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


def transport_error(
    exc: BaseException, *, provider: str, model: str, timeout: float, url: str = ""
) -> ProviderError:
    """A connection that could not be made, broke, or stayed silent past the timeout: worth
    another attempt, except a TLS failure (a certificate the same server will show again)
    and an answer over the size limits (the same request would get it again)."""
    where = f"{provider} (model {model})"
    if isinstance(exc, TlsFailure):
        return ProviderError(
            f"{where}: the TLS connection failed: {_short(str(exc))} (check the base URL and "
            "the system's certificates)",
            provider=provider,
        )
    if isinstance(exc, AnswerTooLarge):
        return ProviderError(f"{where}: {_short(str(exc))}", provider=provider)
    if isinstance(exc, StreamCut):
        return TransientProviderError(f"{where}: {exc}", provider=provider)
    if isinstance(exc, CannotConnect):
        return UnreachableServerError(
            f"{where}: cannot connect to the server: {exc}", provider=provider
        )
    if isinstance(exc, TimedOut) and exc.which != "total":
        return TransientProviderError(f"{where}: {exc}", provider=provider)
    if isinstance(exc, TimeoutError):
        return TransientProviderError(
            f"{where}: no answer within the {timeout:g} s request timeout", provider=provider
        )
    if isinstance(exc, ConnectionBroke):
        # a port that speaks TLS closes a plain request unanswered (or with a TLS alert)
        hint = (
            "; if the server speaks TLS on this port, the base URL must start with https://"
            if exc.before_answer and url.startswith("http://")
            else ""
        )
        return TransientProviderError(
            f"{where}: the connection broke before the answer was complete "
            f"({_short(str(exc))}){hint}",
            provider=provider,
        )
    if isinstance(exc, NotHttp):
        return TransientProviderError(
            f"{where}: the server's answer is not valid HTTP: {_short(str(exc))} (check the "
            "base URL: its scheme, http:// or https://, and its port)",
            provider=provider,
        )
    return TransientProviderError(
        f"{where}: connection failed: {type(exc).__name__}: {_short(str(exc))}",
        provider=provider,
    )


class StreamCut(Exception):
    """A streamed answer ended (or broke off) before its closing event: worth a retry."""


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


def server_message(body: bytes) -> str:
    """The server's own words from an error body: `{"error": {"message": ...}}` (OpenAI,
    Anthropic), `{"error": "text"}` (Ollama), `{"message": ...}`, or the text itself (a
    proxy's HTML page)."""
    import orjson

    text = body.decode("utf-8", errors="replace")
    try:
        parsed: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        return text.strip() or "(empty body)"
    if isinstance(parsed, dict) and isinstance(parsed.get("error"), dict | str):
        parsed = parsed["error"]
    if isinstance(parsed, dict) and isinstance(parsed.get("message"), str):
        return str(parsed["message"])
    if isinstance(parsed, str) and parsed.strip():
        return parsed
    return text.strip() or "(empty body)"


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= DETAIL_CHARS else text[: DETAIL_CHARS - 3] + "..."


# --- answer checks ---------------------------------------------------------------------


class BadAnswer(Exception):
    """A field of a 200 answer is missing or of the wrong type."""


def malformed_response(provider: str, model: str, problem: str) -> ProviderError:
    """A 200 answer we cannot use: say what was wrong with it. Not retried: the same
    request would most likely get the same answer."""
    return ProviderError(
        f"{provider} (model {model}): malformed response: {problem}", provider=provider
    )


def undecodable(body: bytes) -> str:
    """Why a 200 body that should be a JSON object is unusable, quoting its start."""
    stripped = body.lstrip()
    if stripped[:1] in (b"{", b"["):
        import orjson

        try:
            orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            return f"the body is not valid JSON ({_short(str(exc))})"
        return "the server sent a JSON array instead of a JSON object"
    text = body.decode("utf-8", errors="replace")
    return f"the server sent a non-JSON body: {_short(text)!r}"


def shown(value: object) -> str:
    """A value from an answer as JSON would write it, shortened, for an error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return _short(repr(value))


# More tokens than any request could hold (a 64-bit field holds up to 9.2e18): a larger
# count is a broken server, and would overflow the journal's integers.
MAX_TOKEN_COUNT = 10**12


def token_count(usage: object, field: str) -> int:
    """A usage counter; absent or null counts as 0 (some compatible servers omit usage)."""
    if usage is None:
        return 0
    if not isinstance(usage, dict):
        raise BadAnswer(f"usage is {shown(usage)}, not an object")
    value = usage.get(field)
    if value is None:
        return 0
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or (isinstance(value, float) and not value.is_integer())  # NaN and infinity too
    ):
        raise BadAnswer(f"usage.{field} is {shown(value)}, not a token count")
    if value > MAX_TOKEN_COUNT:
        raise BadAnswer(
            f"usage.{field} is {shown(value)}, more tokens than any request holds "
            f"(at most {MAX_TOKEN_COUNT:,})"
        )
    return max(0, int(value))  # a negative count (some servers' "unknown") counts nothing


def optional_text(value: Any, field: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise BadAnswer(f"{field} is {shown(value)}, not a string")


def required_text(value: Any, field: str) -> str:
    if isinstance(value, str):
        return value
    raise BadAnswer(f"{field} is {shown(value)}, not a string")

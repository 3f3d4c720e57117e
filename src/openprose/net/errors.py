"""Every way an HTTP exchange can fail, as one small family of exceptions.

A caller maps these (and `TimeoutError`) to its own errors in one place: the providers in
`providers/http_errors.transport_error`, the OTLP exporter in its retry rule.
"""

from __future__ import annotations

__all__ = [
    "AnswerTooLarge",
    "CannotConnect",
    "ConnectionBroke",
    "HttpFailure",
    "NotHttp",
    "TlsFailure",
]


class HttpFailure(Exception):
    """An exchange that did not produce a complete answer."""


class CannotConnect(HttpFailure):
    """No connection could be made (name lookup, refused, unreachable, proxy refused)."""


class TlsFailure(HttpFailure):
    """The TLS handshake failed: a certificate not trusted or not for this host."""


class ConnectionBroke(HttpFailure):
    """The connection closed or was reset before the answer was complete."""

    def __init__(self, message: str, *, before_answer: bool = False) -> None:
        super().__init__(message)
        self.before_answer = before_answer  # no byte of the answer had arrived


class NotHttp(HttpFailure):
    """The bytes the server sent are not an HTTP/1.x answer this client can read."""


class AnswerTooLarge(HttpFailure):
    """The answer's head or body is over its limit."""

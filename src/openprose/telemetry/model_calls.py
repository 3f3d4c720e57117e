"""What a tracer reads of a model call: the request and its answer, described by the
attributes it uses. The providers' `ModelRequest` and `ModelResponse` fit these, so
telemetry needs no import of the providers (it sits below them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class CallMessage(Protocol):
    @property
    def role(self) -> str: ...
    @property
    def content(self) -> str: ...


class CallRequest(Protocol):
    """What a model call span reads of the request (`providers.ModelRequest` fits)."""

    @property
    def model(self) -> str: ...
    @property
    def messages(self) -> Sequence[CallMessage]: ...
    @property
    def system(self) -> str | None: ...
    @property
    def max_tokens(self) -> int: ...
    @property
    def temperature(self) -> float | None: ...


class CallUsage(Protocol):
    @property
    def input_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...
    @property
    def cache_read_tokens(self) -> int: ...
    @property
    def cache_write_tokens(self) -> int: ...


class CallAnswer(Protocol):
    """What a model call span reads of the answer (`providers.ModelResponse` fits)."""

    @property
    def text(self) -> str: ...
    @property
    def usage(self) -> CallUsage: ...
    @property
    def finish_reason(self) -> str | None: ...
    @property
    def request_id(self) -> str | None: ...
    @property
    def model(self) -> str: ...

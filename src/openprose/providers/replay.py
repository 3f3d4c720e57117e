"""Replay a recorded cassette, and record one from a live provider.

A cassette is JSONL, one `{"key", "request", "response"}` record per line, where `key` is
`ModelRequest.key()`. Identical repeated requests are answered in recorded order.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from openprose.providers.base import (
    ModelRequest,
    ModelResponse,
    Provider,
    ProviderConfigError,
    ProviderError,
    _canonical_sha256,
)

__all__ = ["RecordingProvider", "ReplayProvider", "read_cassette"]

PROMPT_PREVIEW_CHARS = 80


def read_cassette(path: Path) -> list[tuple[ModelRequest, ModelResponse]]:
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ProviderConfigError(f"replay: cannot read cassette {path}: {exc.strerror}") from None
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            records.append(
                (
                    ModelRequest.from_dict(record["request"]),
                    ModelResponse.from_dict(record["response"]),
                )
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ProviderConfigError(
                f"replay: {path}:{number} is not a cassette record ({exc})"
            ) from None
    return records


class ReplayProvider:
    """Answers each request with the next unused recorded response for it.

    A request matches a record exactly by `key()`; failing that, by everything but the
    model id, since a replay run resolves aliases (`sonnet`) differently from the
    recording run (`claude-sonnet-4-5`).
    """

    name = "replay"

    def __init__(
        self, records: Iterable[tuple[ModelRequest, ModelResponse]], *, source: str = "records"
    ) -> None:
        self._source = source
        self._responses: list[ModelResponse] = []
        self._used: list[bool] = []
        self._by_key: dict[str, deque[int]] = {}
        self._by_prompt: dict[str, deque[int]] = {}
        for index, (request, response) in enumerate(records):
            self._responses.append(response)
            self._used.append(False)
            self._by_key.setdefault(request.key(), deque()).append(index)
            self._by_prompt.setdefault(_prompt_key(request), deque()).append(index)

    @classmethod
    def from_file(cls, path: Path) -> ReplayProvider:
        return cls(read_cassette(path), source=str(path))

    async def complete(self, request: ModelRequest) -> ModelResponse:
        index = self._take(self._by_key.get(request.key()))
        if index is None:
            index = self._take(self._by_prompt.get(_prompt_key(request)))
        if index is None:
            preview = request.last_user_text()[:PROMPT_PREVIEW_CHARS].replace("\n", " ")
            raise ProviderError(
                f"replay: no recorded response left in {self._source} for request "
                f"{request.key()[:16]} (model {request.model!r}, prompt {preview!r}...)",
                provider=self.name,
            )
        recorded = self._responses[index]
        # Positional construction: `dataclasses.replace` costs several times more per call.
        return ModelResponse(
            recorded.text,
            recorded.usage,
            recorded.finish_reason,
            recorded.request_id,
            recorded.model,
            self.name,
        )

    async def aclose(self) -> None:
        return None

    def _take(self, candidates: deque[int] | None) -> int | None:
        while candidates:
            index = candidates.popleft()
            if not self._used[index]:
                self._used[index] = True
                return index
        return None


class RecordingProvider:
    """Passes requests to `inner` and appends each answered exchange to a cassette file.

    One line per exchange, flushed at once, so a killed run keeps what it recorded.
    """

    def __init__(self, inner: Provider, path: Path) -> None:
        self._inner = inner
        self.name = inner.name
        self.path = Path(path)
        self._file: IO[str] = self.path.open("a", encoding="utf-8")

    async def complete(self, request: ModelRequest) -> ModelResponse:
        response = await self._inner.complete(request)
        record = {
            "key": request.key(),
            "request": request.to_dict(),
            "response": response.to_dict(),
        }
        self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._file.flush()
        return response

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            self._file.close()


def _prompt_key(request: ModelRequest) -> str:
    body = request.to_dict()
    del body["model"]
    return _canonical_sha256(body)

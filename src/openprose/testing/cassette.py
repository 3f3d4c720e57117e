"""A case's cassette, replayed strictly: a request the cassette does not hold is a sign that
the program changed since it was recorded, so the answer is an error and the case fails with
a diff between the request recorded nearest to it and the one sent now.

Requests may name the folders of the machine they were made on (a skill's files, the case's
temporary folder): a cassette keeps them as `$PROGRAM_DIR` and `$CASE_DIR`, and a replay
compares requests masked the same way, so cassettes recorded in one checkout replay in any."""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections import deque
from pathlib import Path
from typing import Any

from openprose.providers.base import ModelRequest, ModelResponse, ProviderError

__all__ = ["CassetteProvider", "PathMask", "request_text", "save_masked"]

DIFF_CONTEXT = 2  # lines around each change


def request_text(request: ModelRequest) -> list[str]:
    """A request as lines a person can compare: system prompt, each message, tools. Not the
    model: a replay matches without it (it resolves aliases unlike the recording run)."""
    lines: list[str] = []
    if request.system:
        lines += [f"system: {line}" for line in request.system.splitlines()]
    for message in request.messages:
        lines += [
            f"{message.role}: {line}".rstrip() for line in message.content.splitlines() or [""]
        ]
        lines += [f"{message.role} calls {c.name} {c.arguments}" for c in message.tool_calls]
        for result in message.tool_results:
            lines += [
                f"{message.role} result: {line}".rstrip() for line in result.content.splitlines()
            ]
    if request.tools:
        lines.append("tools: " + ", ".join(sorted(t.name for t in request.tools)))
    return lines


class PathMask:
    """Replaces this machine's folders in a request with the names a cassette keeps."""

    def __init__(self, program_dir: Path, case_dir: Path) -> None:
        pairs: dict[str, str] = {}
        for folder, name in ((program_dir, "$PROGRAM_DIR"), (case_dir, "$CASE_DIR")):
            for shown in {str(folder), str(folder.resolve())}:
                pairs[json.dumps(shown)[1:-1]] = name  # as the path appears inside JSON text
        self._pairs = sorted(pairs.items(), key=lambda pair: -len(pair[0]))  # longest first

    def body(self, body: dict[str, Any]) -> dict[str, Any]:
        text = json.dumps(body, ensure_ascii=False)
        if not any(path in text for path, _ in self._pairs):
            return body
        for path, name in self._pairs:
            text = text.replace(path, name)
        masked: dict[str, Any] = json.loads(text)
        return masked

    def request(self, request: ModelRequest) -> ModelRequest:
        body = request.to_dict()
        masked = self.body(body)
        return request if masked is body else ModelRequest.from_dict(masked)


def save_masked(recorded: Path, cassette: Path, mask: PathMask) -> None:
    """Write the exchanges `recorded` holds to `cassette`, their requests masked."""
    lines = []
    for line in recorded.read_text(encoding="utf-8").split("\n"):
        if not line.strip():
            continue
        record = json.loads(line)
        record["request"] = mask.body(record["request"])
        record["key"] = ModelRequest.from_dict(record["request"]).key()
        lines.append(json.dumps(record, ensure_ascii=False) + "\n")
    cassette.parent.mkdir(parents=True, exist_ok=True)
    cassette.write_text("".join(lines), encoding="utf-8")


def _prompt_key(request: ModelRequest) -> str:
    """The key without the model: a replay resolves aliases differently from the recording."""
    return dataclasses.replace(request, model="").key()


class CassetteProvider:
    """Answers each request with the next unused recorded answer to the same request."""

    name = "replay"

    def __init__(
        self,
        records: list[tuple[ModelRequest, ModelResponse]],
        *,
        source: Path,
        mask: PathMask | None = None,
    ) -> None:
        self.source = source
        self._mask = mask
        self._records = records
        self._used = [False] * len(records)
        self._by_key: dict[str, deque[int]] = {}
        for index, (request, _) in enumerate(records):
            self._by_key.setdefault(_prompt_key(request), deque()).append(index)
        self.mismatch: str | None = None  # the diff of the first request not recorded

    @classmethod
    def from_file(cls, path: Path, mask: PathMask | None = None) -> CassetteProvider:
        from openprose.providers.replay import read_cassette

        return cls(read_cassette(path), source=path, mask=mask)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if self._mask is not None:
            request = self._mask.request(request)
        candidates = self._by_key.get(_prompt_key(request))
        while candidates:
            index = candidates.popleft()
            if not self._used[index]:
                self._used[index] = True
                recorded = self._records[index][1]
                return dataclasses.replace(recorded, provider=self.name)
        if self.mismatch is None:
            self.mismatch = self._diff(request)
        raise ProviderError(
            f"the cassette {self.source} holds no answer for this request "
            f"(the program changed since it was recorded)",
            provider=self.name,
        )

    def _diff(self, request: ModelRequest) -> str:
        """The unified diff from the closest recorded request not yet answered to `request`."""
        now = request_text(request)
        unused = [r for (r, _), used in zip(self._records, self._used, strict=True) if not used]
        if not unused:
            return "\n".join(["the cassette holds no more requests; the run sent one more:", *now])

        def likeness(recorded: ModelRequest) -> float:
            return difflib.SequenceMatcher(None, request_text(recorded), now).ratio()

        closest = max(unused, key=likeness)
        return "\n".join(
            difflib.unified_diff(
                request_text(closest),
                now,
                fromfile=f"recorded ({self.source.name})",
                tofile="sent now",
                n=DIFF_CONTEXT,
                lineterm="",
            )
        )

    @property
    def unused(self) -> int:
        """How many recorded answers no request asked for."""
        return self._used.count(False)

    async def aclose(self) -> None:
        return None

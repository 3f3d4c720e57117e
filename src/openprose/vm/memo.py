"""The answer cache across runs (`[vm] memo = true`): a model call whose exact request was
answered before, by this project's runs, gets that answer again without being sent.

Keyed by the provider, the model id and the whole request as sent (messages, system prompt,
`max_tokens`, temperature, response schema, grammar): anything that could change the
answer changes the key. Stored as one JSON file per key under `.prose/memo/`. Requests that
offer tools are never answered from here: between a tool loop's turns, tools act on the
world, and an old answer would skip or repeat that.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openprose.providers.base import ModelRequest, ModelResponse

__all__ = ["MEMO_DIR", "AnswerMemo", "Remembered", "memo_key"]

MEMO_DIR = Path(".prose") / "memo"
MAX_ENTRY_BYTES = 64 * 1024 * 1024  # beyond any answer; a bigger file is not ours


def memo_key(provider: str, request: ModelRequest) -> str:
    body = {"provider": provider, "request": request.to_dict()}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Remembered:
    response: ModelResponse
    run: str  # the run that asked first
    step: str  # and its step


class AnswerMemo:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def get(self, key: str) -> Remembered | None:
        """The remembered answer, or None (none, or a file that is not a whole entry:
        asking the model again is always right)."""
        path = self._path(key)
        try:
            with path.open("rb") as handle:
                data = json.loads(handle.read(MAX_ENTRY_BYTES))
            return Remembered(
                ModelResponse.from_dict(data["response"]), str(data["run"]), str(data["step"])
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, response: ModelResponse, run: str, step: str) -> None:
        """Remember an answer (written whole or not at all: temp file, then rename)."""
        path = self._path(key)
        entry: dict[str, Any] = {"response": response.to_dict(), "run": run, "step": step}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".entry-")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(entry, handle, ensure_ascii=False)
            os.replace(temp, path)
        except OSError:
            pass  # a full disk costs the next run a call, never this run its answer

    def entries(self) -> list[Path]:
        return sorted(self.folder.glob("??/*.json")) if self.folder.is_dir() else []

    def clear(self) -> int:
        """Forget every answer; how many there were."""
        gone = 0
        for path in self.entries():
            path.unlink(missing_ok=True)
            gone += 1
        return gone

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

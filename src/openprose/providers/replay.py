"""Replay a recorded cassette or a previous run's journal, and record a cassette live.

A cassette is JSONL, one `{"key", "request", "response"}` record per line, where `key` is
`ModelRequest.key()`. A run's `journal.jsonl` serves as well: its `session_finished` events
carry the same request and response. Identical repeated requests are answered in recorded
order.

A tool loop's later turns are journaled as deltas (`request_delta`: the base turn's step,
the model, and only the messages added since that turn), so a long conversation costs the
journal the same per turn at turn 50 as at turn 1; `exchanges` rebuilds the whole requests.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

import orjson

from openprose.providers.base import (
    ModelRequest,
    ModelResponse,
    Provider,
    ProviderConfigError,
    ProviderError,
    _canonical_sha256,
    single_attempt,
)
from openprose.record.codec import EventDamaged, decode, is_event_line, readable
from openprose.record.exchanges import ANSWERED, Exchanges, answered, exchanges
from openprose.record.journal import JOURNAL_FILE, read_journal

__all__ = [
    "RecordingProvider",
    "ReplayProvider",
    "exchanges",
    "read_cassette",
    "replay_file",
    "request_delta",
    "write_cassette",
]

PROMPT_PREVIEW_CHARS = 80
CASSETTE_LIMIT = 1024 * 1024 * 1024  # bytes: a cassette or journal of a very long run
FIRST_LINE_LIMIT = 1 << 20  # bytes of a file read to tell whether it is a cassette


def replay_file(path: Path) -> Path:
    """The file to replay: a cassette or journal file as given, or a run folder's journal.
    (A run id is resolved to its folder above the providers: `openprose.vm.replay_source`.)"""
    path = Path(path)
    if path.is_symlink() and not path.exists():  # a loop or a broken link: say which
        from openprose.files import unreadable_reason

        raise ProviderConfigError(f"replay: cannot read {path}: {unreadable_reason(path)}")
    if path.is_dir():
        journal = path / JOURNAL_FILE
        if not journal.is_file():
            raise ProviderConfigError(
                f"replay: {path} is a folder without a {JOURNAL_FILE}; give a cassette file "
                f"or a run folder"
            )
        return journal
    return path  # read_cassette reports it when missing


def request_delta(request: ModelRequest, base: str, new_messages: int) -> dict[str, Any]:
    """What the journal keeps of a tool-loop turn's request: the step of the turn it
    continues, the model, and the `new_messages` messages added since (the assistant's tool
    calls and their results). Everything else is the base turn's, by construction."""
    added = request.messages[len(request.messages) - new_messages :] if new_messages else ()
    return {"base": base, "model": request.model, "messages": [m.to_dict() for m in added]}


def read_cassette(path: Path) -> list[tuple[ModelRequest, ModelResponse]]:
    """The exchanges of a cassette, or of a run journal's finished sessions."""
    from openprose.files import FileProblem, read_limited

    try:
        # split on newlines only: JSON keeps U+2028 and U+0085 raw, which str.splitlines() breaks on
        lines = read_limited(Path(path), CASSETTE_LIMIT).decode("utf-8").split("\n")
    except FileProblem as problem:
        raise ProviderConfigError(
            f"replay: cannot read {problem}; give a cassette "
            f"(`prose run --record FILE`), a run's {JOURNAL_FILE}, a run folder or a run id"
        ) from None
    except UnicodeDecodeError as exc:
        raise ProviderConfigError(f"replay: {path}: not UTF-8 (byte {exc.start})") from None
    records = []
    journal = False
    rebuilt = Exchanges()
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            if not isinstance(record, dict):
                raise TypeError("not a JSON object")
            # In a journal, finished sessions (and early versions' tool turns) hold them.
            if is_event_line(record):
                journal = True
                try:
                    exchange = answered(decode(record).event)
                except EventDamaged as damaged:
                    if damaged.kind in ANSWERED:
                        raise  # an exchange it cannot read: said, not dropped
                    continue  # another event's damage is nothing to a replay
                request = None if exchange is None else rebuilt.request_of(exchange)
                if exchange is None or request is None:
                    continue
                response = exchange.response
            else:
                request, response = record["request"], record["response"]
            records.append((ModelRequest.from_dict(request), ModelResponse.from_dict(response)))
        except RecursionError:
            raise ProviderConfigError(
                f"replay: {path}:{index + 1}: JSON nested too deeply"
            ) from None
        except (ValueError, KeyError, TypeError, AttributeError, OverflowError) as exc:
            if isinstance(exc, json.JSONDecodeError) and (journal or _torn(line)):
                continue  # a line torn by a killed run (the VM's journal reader skips them too)
            raise ProviderConfigError(
                f"replay: {path}:{index + 1} is not a cassette record or journal event ({exc})"
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
        self._requests: list[ModelRequest] = []
        self._responses: list[ModelResponse] = []
        self._used: list[bool] = []
        self._by_key: dict[str, deque[int]] = {}
        # Made at the first request no record matches exactly: a replay of the same
        # program's run (the usual one) never needs it, and each key is a canonical JSON
        # dump and a sha256 per record.
        self._by_prompt: dict[str, deque[int]] | None = None
        for index, (request, response) in enumerate(records):
            self._requests.append(request)
            self._responses.append(response)
            self._used.append(False)
            self._by_key.setdefault(request.key(), deque()).append(index)

    @classmethod
    def from_file(cls, path: Path) -> ReplayProvider:
        """From a cassette, a run journal or a run folder (see `replay_file`)."""
        source = replay_file(path)
        return cls(read_cassette(source), source=str(source))

    async def complete(self, request: ModelRequest) -> ModelResponse:
        index = self._take(self._by_key.get(request.key()))
        if index is None:
            index = self._take(self._prompt_index().get(_prompt_key(request)))
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
            recorded.tool_calls,
        )

    async def aclose(self) -> None:
        return None

    def _prompt_index(self) -> dict[str, deque[int]]:
        """The records by everything but the model id, in recorded order (those already
        used stay in: `_take` skips them)."""
        if self._by_prompt is None:
            self._by_prompt = {}
            for index, request in enumerate(self._requests):
                self._by_prompt.setdefault(_prompt_key(request), deque()).append(index)
            self._requests = []  # only this index needed them
        return self._by_prompt

    def _take(self, candidates: deque[int] | None) -> int | None:
        while candidates:
            index = candidates.popleft()
            if not self._used[index]:
                self._used[index] = True
                return index
        return None


def cassette_problem(path: Path) -> str | None:
    """Why exchanges must not be appended to `path`, or None: a file that does not exist, is
    empty, or starts with a cassette record may be recorded to. A program, a run's journal or
    any other file would be damaged for its own reader and be no cassette either."""
    try:
        with Path(path).open("rb") as handle:
            if not Path(path).is_file():
                return None  # a device such as /dev/null: nothing to damage
            first = b""
            while not first.strip():
                first = handle.readline(FIRST_LINE_LIMIT)
                if not first:
                    return None  # empty, or blank lines only
    except OSError:
        return None  # missing (created by the recording), or the open reports it
    if first.lstrip().startswith(b'{"key"'):
        return None  # a record as `RecordingProvider` writes it (perhaps long, or torn)
    try:
        record = json.loads(first)
    except ValueError:
        record = None
    if isinstance(record, dict) and is_event_line(record):
        return f"it is a run's journal ({JOURNAL_FILE}), not a cassette"
    if isinstance(record, dict) and "request" in record and "response" in record:
        return None
    return "it is not a cassette: its first line is not a recorded exchange"


class RecordingProvider:
    """Passes requests to `inner` and appends each answered exchange to a cassette file.

    One line per exchange, flushed at once, so a killed run keeps what it recorded.
    """

    def __init__(self, inner: Provider, path: Path) -> None:
        self._inner = inner
        self.name = inner.name
        self.path = Path(path)
        self._file: IO[str] = self.path.open("a", encoding="utf-8")
        if self._file.tell() > 0 and not _ends_with_newline(self.path):
            self._file.write("\n")  # a killed run tore the last line: start on a new one

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return self._record(request, await self._inner.complete(request))

    async def complete_once(self, request: ModelRequest) -> ModelResponse:
        """One attempt of the inner provider (see `SingleAttemptProvider`), recorded."""
        return self._record(request, await single_attempt(self._inner)(request))

    def _record(self, request: ModelRequest, response: ModelResponse) -> ModelResponse:
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
    body.pop("response_schema", None)  # as in ModelRequest.key
    body.pop("grammar", None)
    return _canonical_sha256(body)


def _torn(line: str) -> bool:
    """The start of a record we wrote, cut short: what a run killed mid-write leaves."""
    return line.startswith(('{"key"', '{"ev"'))


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(-1, 2)
        return handle.read(1) == b"\n"


def write_cassette(journal: Path, cassette: Path) -> int:
    """Every exchange a run's journal holds, as a replay cassette (`{"key", "request",
    "response"}` lines) for `--provider replay:FILE`; returns how many were written."""
    count = 0
    with cassette.open("wb") as out:
        for request, response in exchanges(r.event for r in readable(read_journal(journal))):
            key = ModelRequest.from_dict(request).key()
            record = {"key": key, "request": request, "response": response}
            out.write(orjson.dumps(record) + b"\n")
            count += 1
    return count

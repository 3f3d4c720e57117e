"""Threads: checks across messages, correction chains and the effective version of a message.

:class:`ThreadChecker` streams (one pass, memory per message id, not per message) and is
what ``vlp validate`` uses; :class:`Thread` holds a whole thread in memory for
``effective`` and rendering.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from vlp.errors import CorrectionCycleError, Problem
from vlp.validate import is_valid

_SEVERITY = {"safe": 0, "review": 1, "block": 2}


def references(msg: dict[str, Any]) -> list[str]:
    """The ids a message refers to, as a list (``refers_to`` may be one id or a list)."""
    refs = msg.get("refers_to")
    if isinstance(refs, str):
        return [refs]
    if isinstance(refs, list):
        return [ref for ref in refs if isinstance(ref, str)]
    return []


def safety_level(msg: Any) -> str:
    """The message's safety level, read even from invalid messages ("safe" if none)."""
    safety = msg.get("safety") if isinstance(msg, dict) else None
    level = safety.get("level") if isinstance(safety, dict) else None
    return level if isinstance(level, str) and level in _SEVERITY else "safe"


class ThreadChecker:
    """Streaming checks across the valid messages of one thread, fed in order.

    ``add`` returns the problems it can see at once; ``finish`` returns those that need
    the whole thread (references that never resolved, correction cycles).
    """

    def __init__(self) -> None:
        self._kind: dict[str, str] = {}
        self._line: dict[str, int | None] = {}
        self._corrects: dict[str, list[str]] = {}
        self._pending: dict[str, list[tuple[int | None, str, str]]] = {}
        self._last_seq: dict[str, int] = {}

    def _root_kind(self, ident: str) -> str | None:
        """Type of the message a correction chain ultimately amends."""
        seen: set[str] = set()
        while ident in self._corrects and ident not in seen:
            seen.add(ident)
            targets = [t for t in self._corrects[ident] if t in self._kind]
            if not targets:
                return None
            ident = targets[0]
        return self._kind.get(ident)

    def _evidence_problem(self, line: int | None, ident: str, target: str) -> Problem | None:
        root = self._root_kind(target)
        if root is None or root == "claim":
            return None
        return Problem(
            "VLP306",
            f"evidence attaches to {target}, a {self._kind[target]}"
            + ("" if root == self._kind[target] else f" of a {root}")
            + "; evidence supports claims",
            line,
            ident,
        )

    def add(self, msg: dict[str, Any], line: int | None = None) -> list[Problem]:
        found: list[Problem] = []
        ident: str = msg["id"]
        kind: str = msg["type"]
        refs = references(msg)
        for ref in refs:
            if ref == ident:
                code = "VLP307" if kind == "correction" else "VLP303"
                found.append(Problem(code, f"{kind} {ident} refers to itself", line, ident))
            elif ref in self._kind:
                if kind == "evidence":
                    problem = self._evidence_problem(line, ident, ref)
                    if problem is not None:
                        found.append(problem)
            else:
                self._pending.setdefault(ref, []).append((line, ident, kind))
        if ident in self._kind:
            first = self._line[ident]
            where = f" (first on line {first})" if first is not None else ""
            found.append(Problem("VLP301", f"duplicate id {ident!r}{where}", line, ident))
        else:
            self._kind[ident] = kind
            self._line[ident] = line
            if kind == "correction":
                self._corrects[ident] = [ref for ref in refs if ref != ident]
            for ref_line, referrer, referrer_kind in self._pending.pop(ident, ()):
                found.append(
                    Problem("VLP303", f"refers_to {ident!r}, which comes later", ref_line, referrer)
                )
                if referrer_kind == "evidence":
                    problem = self._evidence_problem(ref_line, referrer, ident)
                    if problem is not None:
                        found.append(problem)
        session, seq = msg.get("session_id"), msg.get("seq")
        if isinstance(session, str) and isinstance(seq, (int, float)):
            seq = int(seq)
            last = self._last_seq.get(session)
            if last is not None:
                if seq <= last:
                    found.append(
                        Problem(
                            "VLP305",
                            f"seq {seq} in session {session} follows seq {last}",
                            line,
                            ident,
                        )
                    )
                elif seq > last + 1:
                    missing = f"{last + 1}" if seq == last + 2 else f"{last + 1}..{seq - 1}"
                    found.append(
                        Problem(
                            "VLP304",
                            f"seq jumps from {last} to {seq} in session {session} "
                            f"(missing {missing})",
                            line,
                            ident,
                        )
                    )
            self._last_seq[session] = seq if last is None else max(last, seq)
        return found

    def finish(self) -> list[Problem]:
        found = [
            Problem(
                "VLP302",
                f"refers_to {ref!r}, which no valid message of the thread has",
                line,
                referrer,
            )
            for ref, referrers in self._pending.items()
            for line, referrer, _ in referrers
        ]
        self._pending.clear()
        for cycle in _correction_cycles(self._corrects):
            found.append(
                Problem(
                    "VLP307",
                    "corrections form a cycle: " + " -> ".join(cycle + [cycle[0]]),
                    self._line.get(cycle[0]),
                    cycle[0],
                )
            )
        return found


def _correction_cycles(corrects: dict[str, list[str]]) -> Iterator[list[str]]:
    """Each cycle among corrections once (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    for start, first_targets in corrects.items():
        if start in state:
            continue
        path: list[str] = []
        stack: list[tuple[str, Iterator[str]]] = [(start, iter(first_targets))]
        state[start] = 1
        path.append(start)
        while stack:
            node, targets = stack[-1]
            for target in targets:
                if target not in corrects or target == node:
                    continue
                if state.get(target) == 1:
                    yield path[path.index(target) :]
                elif target not in state:
                    state[target] = 1
                    path.append(target)
                    stack.append((target, iter(corrects[target])))
                    break
            else:
                state[node] = 2
                path.pop()
                stack.pop()


def check_thread(messages: Iterable[dict[str, Any]]) -> list[Problem]:
    """Problems across the valid messages of a thread (invalid ones are skipped)."""
    checker = ThreadChecker()
    found: list[Problem] = []
    for msg in messages:
        if is_valid(msg):
            found.extend(checker.add(msg))
    found.extend(checker.finish())
    return found


@dataclass(frozen=True)
class Effective:
    """The current version of a message after all corrections."""

    id: str
    message: dict[str, Any]
    chain: tuple[dict[str, Any], ...]

    @property
    def content(self) -> Any:
        return self.message.get("content")

    @property
    def confidence(self) -> Any:
        return self.message.get("confidence")

    @property
    def provenance(self) -> list[Any]:
        provenance = self.message.get("provenance")
        return provenance if isinstance(provenance, list) else []

    @property
    def corrected(self) -> bool:
        return len(self.chain) > 1

    @property
    def chain_ids(self) -> tuple[str, ...]:
        return tuple(msg["id"] for msg in self.chain)

    @property
    def safety_level(self) -> str:
        """The most severe level along the chain: a correction cannot lift a hold or halt."""
        return max((safety_level(msg) for msg in self.chain), key=_SEVERITY.__getitem__)


class Thread:
    """The messages of one thread, in order, indexed for corrections and references."""

    def __init__(self, messages: Iterable[Any], lines: Iterable[int | None] | None = None) -> None:
        self.messages: list[Any] = list(messages)
        self.lines: list[int | None] = (
            list(lines) if lines is not None else [None] * len(self.messages)
        )
        self.valid: list[bool] = [is_valid(msg) for msg in self.messages]
        self.by_id: dict[str, dict[str, Any]] = {}
        self.position: dict[str, int] = {}
        self._corrections: dict[str, list[str]] = {}
        for index, msg in enumerate(self.messages):
            if not self.valid[index] or msg["id"] in self.by_id:
                continue
            self.by_id[msg["id"]] = msg
            self.position[msg["id"]] = index
        for msg in self.valid_messages():
            if msg["type"] == "correction" and self.by_id.get(msg["id"]) is msg:
                for ref in references(msg):  # a correction of itself is a cycle
                    self._corrections.setdefault(ref, []).append(msg["id"])

    def valid_messages(self) -> Iterator[dict[str, Any]]:
        return (msg for msg, ok in zip(self.messages, self.valid) if ok)

    def problems(self) -> list[Problem]:
        checker = ThreadChecker()
        found: list[Problem] = []
        for msg, ok, line in zip(self.messages, self.valid, self.lines):
            if ok:
                found.extend(checker.add(msg, line))
        found.extend(checker.finish())
        return found

    def corrections_of(self, ident: str) -> list[dict[str, Any]]:
        """Valid corrections that name ``ident`` directly, in thread order."""
        return [self.by_id[c] for c in self._corrections.get(ident, [])]

    def effective(self, ident: str) -> Effective:
        """The latest correction reachable from ``ident`` (through corrections of
        corrections) is the source of truth; the chain is the path from ``ident`` to it."""
        if ident not in self.by_id:
            raise KeyError(f"no valid message with id {ident!r} in the thread")
        # Iterative depth-first search: long chains must not hit the recursion limit.
        parent: dict[str, str | None] = {ident: None}
        best = ident
        stack: list[tuple[str, Iterator[str]]] = [(ident, iter(self._corrections.get(ident, ())))]
        on_path = {ident}
        while stack:
            node, corrections = stack[-1]
            for correction in corrections:
                if correction in on_path:
                    path = [entry for entry, _ in stack]
                    cycle = path[path.index(correction) :] + [correction]
                    raise CorrectionCycleError(
                        [
                            Problem(
                                "VLP307",
                                "corrections form a cycle: " + " -> ".join(cycle),
                                id=correction,
                            )
                        ]
                    )
                if correction in parent:
                    continue  # reached before through another correction
                parent[correction] = node
                if self.position[correction] > self.position[best]:
                    best = correction
                on_path.add(correction)
                stack.append((correction, iter(self._corrections.get(correction, ()))))
                break
            else:
                on_path.discard(node)
                stack.pop()
        chain_ids: list[str] = []
        step: str | None = best
        while step is not None:
            chain_ids.append(step)
            step = parent[step]
        chain = tuple(self.by_id[i] for i in reversed(chain_ids))
        return Effective(ident, chain[-1], chain)


def effective(thread: Thread | Iterable[dict[str, Any]], ident: str) -> Effective:
    """Current version of message ``ident`` after all corrections, with the chain."""
    if not isinstance(thread, Thread):
        thread = Thread(thread)
    return thread.effective(ident)

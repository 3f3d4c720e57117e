"""Threads: checks across messages, correction chains and the effective version of a message.

:class:`ThreadChecker` streams (one pass, memory per message id, not per message) and is
what ``vlp validate`` uses; :class:`Thread` holds a whole thread in memory for
``effective`` and rendering.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from operator import lt
from typing import Any, TypeAlias, TypeGuard

from vlp.errors import CorrectionCycleError, Problem
from vlp.validate import is_valid

_SEVERITY = {"safe": 0, "review": 1, "block": 2}
SAFETY_LEVELS_BY_SEVERITY = tuple(_SEVERITY)


def references(msg: dict[str, Any]) -> list[str]:
    """The ids a message refers to, as a list (``refers_to`` may be one id or a list)."""
    return _reference_list(msg.get("refers_to"))


def _reference_list(refs: object) -> list[str]:
    if isinstance(refs, str):
        return [refs] if refs else []
    if isinstance(refs, list):
        return [ref for ref in refs if isinstance(ref, str)]
    return []


_MAX_SEQ = 2**63  # larger numbers are not sequence numbers a producer meant
_SALVAGED_ID = re.compile(rb'"id"\s*:\s*"([^"\\]{1,256})"')
_SALVAGED_SESSION = re.compile(rb'"session_id"\s*:\s*"([^"\\]{1,256})"')
_SALVAGED_SEQ = re.compile(rb'"seq"\s*:\s*([0-9]{1,18})(?![0-9.eE])')


def _is_seq(value: object) -> TypeGuard[int | float]:
    """A usable sequence number: a non-negative whole number below 2**63."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return (isinstance(value, int) or value.is_integer()) and 0 <= value < _MAX_SEQ


def _salvage(msg: Any, raw: bytes | None) -> tuple[str | None, str | None, int | None]:
    """``id``, ``session_id`` and ``seq`` of an invalid message, each when it is usable;
    from an unparsable line, read off its bytes (the line was cut or garbled after them)."""
    if isinstance(msg, dict):
        ident, session, seq = msg.get("id"), msg.get("session_id"), msg.get("seq")
        return (
            ident if isinstance(ident, str) and ident else None,
            session if isinstance(session, str) and session else None,
            int(seq) if _is_seq(seq) else None,
        )
    if raw is None:
        return None, None, None
    found = [pattern.search(raw) for pattern in (_SALVAGED_ID, _SALVAGED_SESSION, _SALVAGED_SEQ)]
    texts = [match.group(1).decode("utf-8", "replace") if match else None for match in found]
    return texts[0], texts[1], int(texts[2]) if texts[2] is not None else None


def safety_level(msg: Any) -> str:
    """The message's safety level, read even from invalid messages ("safe" if none)."""
    safety = msg.get("safety") if isinstance(msg, dict) else None
    level = safety.get("level") if isinstance(safety, dict) else None
    return level if isinstance(level, str) and level in _SEVERITY else "safe"


ThreadFields: TypeAlias = tuple[str, str, Any, str, int]
"""What the thread checks read of a valid message: ``(id, type, refers_to, session_id,
seq)``, an absent reference or session being "" and an absent seq -1."""


def thread_fields(msg: dict[str, Any]) -> ThreadFields:
    """The :data:`ThreadFields` of a valid message."""
    seq = msg.get("seq")
    return (
        msg["id"],
        msg["type"],
        msg.get("refers_to") or "",
        msg.get("session_id") or "",
        int(seq) if _is_seq(seq) else -1,
    )


class ThreadChecker:
    """Streaming checks across the valid messages of one thread, fed in order.

    ``add`` returns the problems it can see at once; ``finish`` returns those that need
    the whole thread (references that never resolved, correction cycles).
    """

    def __init__(self) -> None:
        self._kind: dict[str, str] = {}
        self._line: dict[str, int | None] = {}  # where each id was first seen
        self._corrects: dict[str, list[str]] = {}
        self._pending: dict[str, list[tuple[int | None, str, str]]] = {}
        self._last_seq: dict[str, int] = {}
        self._invalid_ids: set[str] = set()  # ids seen only on invalid messages
        self._line[""] = 0  # an absent reference ("") is one to an earlier message

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
        """Problems the valid message ``msg`` shows with the messages before it."""
        return list(
            self.add_fields(
                msg["id"],
                msg["type"],
                msg.get("refers_to"),
                msg.get("session_id"),
                msg.get("seq"),
                line,
            )
        )

    def add_fields(
        self,
        ident: str,
        kind: str,
        refers_to: Any,
        session: Any,
        seq: Any,
        line: int | None,
    ) -> Sequence[Problem]:
        """:meth:`add` for a message given by the fields the checks read (a missing one
        may be None, or "" / -1 as :class:`vlp.fastpath.LineShape` gives them). The common
        message (a new id, one reference to an earlier message, the next seq of its
        session) is settled here in a few lookups."""
        kinds = self._kind
        if ident not in kinds and (
            refers_to.__class__ is str
            and refers_to in kinds
            and refers_to != ident
            and (kind != "evidence" or kinds[refers_to] == "claim")
            or refers_to.__class__ is not str
            and not refers_to
        ):
            if session and seq.__class__ is int and seq >= 0:
                last = self._last_seq.get(session)
                if last is not None and seq != last + 1:
                    return self._add_slow(ident, kind, refers_to, session, seq, line)
                self._last_seq[session] = seq
            elif seq.__class__ is float and session:
                return self._add_slow(ident, kind, refers_to, session, seq, line)
            kinds[ident] = kind
            self._line[ident] = line
            if kind == "correction":
                self._corrects[ident] = [refers_to]
            if self._pending:
                pending = self._pending.pop(ident, None)
                if pending is not None:
                    return self._resolve_pending(ident, pending)
            return ()
        return self._add_slow(ident, kind, refers_to, session, seq, line)

    def add_run(self, run: Sequence[ThreadFields], first_line: int) -> bool:
        """Check a run of consecutive valid messages (their :data:`ThreadFields`) with
        whole-column operations, and take them in
        when none shows a problem: new ids, references to earlier messages only (evidence
        to claims), consecutive seq in one session. False (nothing taken in) when any
        message needs a closer look: the caller then gives them to :meth:`add_fields`.
        """
        count = len(run)
        ids, types, refs, sessions, seqs = zip(*run)
        line_of = self._line
        if len(set(ids)) != count or not line_of.keys().isdisjoint(ids):
            return False
        if self._pending and not self._pending.keys().isdisjoint(ids):
            return False
        session = sessions[0]
        last = self._last_seq.get(session)
        if session and (
            sessions.count(session) != count
            or seqs[0] < 0
            or last is not None
            and seqs[0] != last + 1
            or seqs != tuple(range(seqs[0], seqs[0] + count))
        ):
            return False
        if not session and sessions.count("") != count:
            return False
        own = range(first_line, first_line + count)
        line_of.update(zip(ids, own))  # so that references within the run resolve
        try:
            positions: Iterator[Any] = map(line_of.get, refs, repeat(first_line + count))
            refs_earlier = all(map(lt, positions, own))
        except TypeError:  # a list of references: unhashable
            refs_earlier = False
        kinds = self._kind
        if refs_earlier and "evidence" in types:
            kinds.update(zip(ids, types))
            refs_earlier = all(
                pair[1] == "claim"
                for pair in set(zip(types, map(kinds.get, refs)))
                if pair[0] == "evidence"
            )
            if not refs_earlier:
                for ident in ids:
                    del kinds[ident]
        if not refs_earlier:
            for ident in ids:
                del line_of[ident]
            return False
        kinds.update(zip(ids, types))
        if session:
            self._last_seq[session] = seqs[-1]
        if "correction" in types:
            for ident, kind, ref in zip(ids, types, refs):
                if kind == "correction":
                    self._corrects[ident] = [ref]
        return True

    def _add_slow(
        self,
        ident: str,
        kind: str,
        refers_to: object,
        session: object,
        seq: object,
        line: int | None,
    ) -> list[Problem]:
        found: list[Problem] = []
        refs = _reference_list(refers_to)
        for ref in refs:
            if ref == ident:
                code = "VLP307" if kind == "correction" else "VLP303"
                found.append(Problem(code, f"{kind} {ident} refers to itself", line, ident))
            elif ref in self._kind:
                if kind == "evidence":
                    problem = self._evidence_problem(line, ident, ref)
                    if problem is not None:
                        found.append(problem)
            elif ref not in self._invalid_ids:
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
            found.extend(self._resolve_pending(ident, self._pending.pop(ident, ())))
        found.extend(self._seq_problems(ident, session, seq, line))
        return found

    def _resolve_pending(
        self, ident: str, referrers: Iterable[tuple[int | None, str, str]]
    ) -> list[Problem]:
        """Problems of the earlier messages that referred forward to ``ident``."""
        found: list[Problem] = []
        for ref_line, referrer, referrer_kind in referrers:
            found.append(
                Problem("VLP303", f"refers_to {ident!r}, which comes later", ref_line, referrer)
            )
            if referrer_kind == "evidence" and ident in self._kind:
                problem = self._evidence_problem(ref_line, referrer, ident)
                if problem is not None:
                    found.append(problem)
        return found

    def _seq_problems(
        self, ident: str | None, session: object, seq: object, line: int | None
    ) -> list[Problem]:
        if not isinstance(session, str) or not session or not _is_seq(seq):
            return []
        number = int(seq)
        found: list[Problem] = []
        last = self._last_seq.get(session)
        if last is not None:
            if number <= last:
                found.append(
                    Problem(
                        "VLP305",
                        f"seq {number} in session {session} follows seq {last}",
                        line,
                        ident,
                    )
                )
            elif number > last + 1:
                missing = f"{last + 1}" if number == last + 2 else f"{last + 1}..{number - 1}"
                found.append(
                    Problem(
                        "VLP304",
                        f"seq jumps from {last} to {number} in session {session} (missing {missing})",
                        line,
                        ident,
                    )
                )
        self._last_seq[session] = number if last is None else max(last, number)
        return found

    def note_invalid(
        self, msg: Any, raw: bytes | None = None, line: int | None = None
    ) -> list[Problem]:
        """Take note of an invalid message (or unparsable line ``raw``): its id and seq still
        count as seen, so one bad line yields one problem — not also a dangling reference
        or a seq gap at the next valid message. Returns forward references it resolves."""
        ident, session, seq = _salvage(msg, raw)
        if session is not None and seq is not None:
            last = self._last_seq.get(session)
            self._last_seq[session] = seq if last is None else max(last, seq)
        if ident is None or ident in self._kind:
            return []
        self._invalid_ids.add(ident)
        self._line.setdefault(ident, line)
        return self._resolve_pending(ident, self._pending.pop(ident, ()))

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
        else:
            found.extend(checker.note_invalid(msg))
    found.extend(checker.finish())
    return found


@dataclass(frozen=True)
class _Resolved:
    """Where the corrections of one message lead: computed once for every message."""

    best: str  # the latest message reachable through corrections (the source of truth)
    step: str | None  # the next correction on the way to ``best`` (None: it is ``best``)
    hops: int  # corrections between the message and ``best``
    severity: int  # the most severe safety level along that path
    cycle: tuple[str, ...] | None  # a correction cycle reachable from the message


@dataclass(frozen=True)
class Effective:
    """The current version of a message after all corrections."""

    id: str
    message: dict[str, Any]
    chain_ids: tuple[str, ...]
    safety_level: str
    _thread: Thread = field(repr=False, compare=False)

    @property
    def chain(self) -> tuple[dict[str, Any], ...]:
        return tuple(self._thread.by_id[ident] for ident in self.chain_ids)

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
        return len(self.chain_ids) > 1


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
        self._resolved: dict[str, _Resolved] | None = None
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
            else:
                found.extend(checker.note_invalid(msg, line=line))
        found.extend(checker.finish())
        return found

    def corrections_of(self, ident: str) -> list[dict[str, Any]]:
        """Valid corrections that name ``ident`` directly, in thread order."""
        return [self.by_id[c] for c in self._corrections.get(ident, [])]

    def resolved(self, ident: str) -> _Resolved:
        """Where the corrections of ``ident`` lead (KeyError for an unknown id)."""
        if ident not in self.by_id:
            raise KeyError(f"no valid message with id {ident!r} in the thread")
        if self._resolved is None:
            self._resolved = self._resolve_all()
        return self._resolved[ident]

    def _resolve_all(self) -> dict[str, _Resolved]:
        """One iterative post-order walk over the correction graph, every message once:
        a message's answer is built from its corrections' answers (linear, no recursion)."""
        done: dict[str, _Resolved] = {}
        on_path: set[str] = set()
        corrections = self._corrections
        for root in self.by_id:
            if root in done:
                continue
            path: list[str] = [root]
            stack: list[Iterator[str]] = [iter(corrections.get(root, ()))]
            on_path.add(root)
            cycles: dict[str, tuple[str, ...]] = {}
            while stack:
                node = path[-1]
                for correction in stack[-1]:
                    if correction in on_path:
                        start = path.index(correction)
                        cycles.setdefault(node, (*path[start:], correction))
                    elif correction not in done:
                        path.append(correction)
                        stack.append(iter(corrections.get(correction, ())))
                        on_path.add(correction)
                        break
                else:
                    stack.pop()
                    path.pop()
                    on_path.discard(node)
                    done[node] = self._resolve_one(node, done, cycles.get(node))
        return done

    def _resolve_one(
        self, node: str, done: dict[str, _Resolved], cycle: tuple[str, ...] | None
    ) -> _Resolved:
        own = _SEVERITY[safety_level(self.by_id[node])]
        best, step, hops, severity = node, None, 0, own
        for correction in self._corrections.get(node, ()):
            below = done.get(correction)
            if below is None:  # still on the path: the cycle was recorded
                continue
            if cycle is None:
                cycle = below.cycle
            if self.position[below.best] > self.position[best]:
                best, step, hops = below.best, correction, below.hops + 1
                severity = max(own, below.severity)
        return _Resolved(best, step, hops, severity, cycle)

    def effective(self, ident: str) -> Effective:
        """The latest correction reachable from ``ident`` (through corrections of
        corrections) is the source of truth; the chain is the path from ``ident`` to it."""
        resolved = self.resolved(ident)
        if resolved.cycle is not None:
            raise CorrectionCycleError(
                [
                    Problem(
                        "VLP307",
                        "corrections form a cycle: " + " -> ".join(resolved.cycle),
                        id=resolved.cycle[-1],
                    )
                ]
            )
        chain_ids = [ident]
        step = resolved.step
        while step is not None:
            chain_ids.append(step)
            step = self._resolved[step].step if self._resolved is not None else None
        level = SAFETY_LEVELS_BY_SEVERITY[resolved.severity]
        return Effective(ident, self.by_id[resolved.best], tuple(chain_ids), level, self)


def effective(thread: Thread | Iterable[dict[str, Any]], ident: str) -> Effective:
    """Current version of message ``ident`` after all corrections, with the chain."""
    if not isinstance(thread, Thread):
        thread = Thread(thread)
    return thread.effective(ident)

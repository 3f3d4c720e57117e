"""Threads: checks across messages, correction chains and the effective version of a message.

:class:`ThreadChecker` streams (one pass, memory per message id, not per message) and is
what ``vlp validate`` uses; :class:`Thread` holds a whole thread in memory for
``effective`` and rendering.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import compress, groupby, repeat
from operator import and_, ge, lt, or_, truth
from typing import Any, TypeAlias, TypeGuard

from vlp._keytable import KeyTable
from vlp.errors import CorrectionCycleError, Problem
from vlp.schema import KIND_CODES
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
            seq
            if seq.__class__ is int and 0 <= seq < _MAX_SEQ  # the usual seq, at once
            else int(seq)
            if _is_seq(seq)
            else None,
        )
    if raw is None:
        return None, None, None
    # Straight searches, no comprehensions: every unparsable line pays this.
    ident, session, seq = (
        _SALVAGED_ID.search(raw),
        _SALVAGED_SESSION.search(raw),
        _SALVAGED_SEQ.search(raw),
    )
    return (
        None if ident is None else ident[1].decode("utf-8", "replace"),
        None if session is None else session[1].decode("utf-8", "replace"),
        None if seq is None else int(seq[1]),  # ASCII digits: int reads the bytes
    )


def safety_level(msg: Any) -> str:
    """The message's safety level, read even from invalid messages ("safe" if none): also
    from a level written in place of the object (``"safety": "block"``, any letter case),
    which is invalid (VLP102) but says what its writer meant."""
    safety = msg.get("safety") if isinstance(msg, dict) else None
    level = safety.get("level") if isinstance(safety, dict) else safety
    if isinstance(level, str) and level not in _SEVERITY:
        level = level.strip().lower()
    return level if isinstance(level, str) and level in _SEVERITY else "safe"


ThreadFields: TypeAlias = tuple[str, int, Any, str, int]
"""What the thread checks read of a valid message: ``(id, type code, refers_to, session_id,
seq)``, the code from :data:`vlp.schema.KIND_CODES`, an absent reference or session being
"" and an absent (or unusable) seq -1."""


Columns: TypeAlias = tuple[
    Sequence[str], Sequence[int], Sequence[Any], Sequence[str], Sequence[int]
]
"""The :data:`ThreadFields` of consecutive lines, one sequence per field."""


def thread_fields(msg: dict[str, Any]) -> ThreadFields:
    """The :data:`ThreadFields` of a valid message."""
    seq = msg.get("seq")
    return (
        msg["id"],
        KIND_CODES[msg["type"]],
        msg.get("refers_to") or "",
        msg.get("session_id") or "",
        int(seq) if _is_seq(seq) else -1,
    )


def salvaged_fields(msg: Any, raw: bytes | None) -> ThreadFields:
    """The :data:`ThreadFields` of an invalid message (or unparsable line ``raw``): the
    ``id``, ``session_id`` and ``seq`` that can be read, type code 0 and no reference."""
    ident, session, seq = _salvage(msg, raw)
    return ident or "", 0, "", session or "", -1 if seq is None else seq


# Memory per id is one entry of a table in C (vlp._keytable: the id's bytes and one int64,
# 70-100 bytes an 11-character id, off Python's heap): where the id was first seen and the
# type of its valid message, packed in one int, (line + 1) << 3 | type code (code 0: seen
# on invalid messages only; line 0: unknown; lines below 2**60).
_INVALID = 0
_CODE_BITS = 3
_CODE_MASK = (1 << _CODE_BITS) - 1
assert len(KIND_CODES) <= _CODE_MASK, "type codes fit in the packed int"
_KIND_NAMES: tuple[str | None, ...] = (None, *KIND_CODES)
_CLAIM, _EVIDENCE, _CORRECTION = (KIND_CODES[k] for k in ("claim", "evidence", "correction"))
_EVIDENCE_TARGETS = frozenset({_CLAIM, _INVALID})
# A slice's type codes as bytes, translated to 1 where the type is the one named: selectors
# for compress, made in C (a map of eq over the codes costs ~10 times more).
_ONLY_EVIDENCE, _ONLY_CORRECTIONS = (
    bytes(int(code == kind) for code in range(256)) for kind in (_EVIDENCE, _CORRECTION)
)
_LATER = 1 << 126  # more than any packed value: "not seen yet"
_CHECKED_ONE_BY_ONE = 8  # a batch with a problem is halved down to this size


def _packed(line: int | None, code: int) -> int:
    return (0 if line is None else line + 1) << _CODE_BITS | code


def _line_of(packed: int) -> int | None:
    line = (packed >> _CODE_BITS) - 1
    return None if line < 0 else line


class ThreadChecker:
    """Streaming checks across the valid messages of one thread, fed in order.

    ``add`` returns the problems it can see at once; ``finish`` returns those that need
    the whole thread (references that never resolved, correction cycles).
    """

    def __init__(self) -> None:
        self._seen = KeyTable()  # id -> packed line and type
        self._seen[""] = 0  # "": no reference
        self._corrects: dict[str, list[str]] = {}
        self._pending: dict[str, list[tuple[int | None, str, str]]] = {}
        self._last_seq: dict[str, int] = {}

    def _kind(self, ident: str) -> str | None:
        """The type of the valid message with this id; None if there is none (yet)."""
        return _KIND_NAMES[self._seen.get(ident, _INVALID) & _CODE_MASK]

    def _root_kind(self, ident: str) -> str | None:
        """Type of the message a correction chain ultimately amends."""
        visited: set[str] = set()
        while ident in self._corrects and ident not in visited:
            visited.add(ident)
            targets = [t for t in self._corrects[ident] if self._kind(t) is not None]
            if not targets:
                return None
            ident = targets[0]
        return self._kind(ident)

    def _evidence_problem(self, line: int | None, ident: str, target: str) -> Problem | None:
        root = self._root_kind(target)
        if root is None or root == "claim":
            return None
        kind = self._kind(target)
        return Problem(
            "VLP306",
            f"evidence attaches to {target}, a {kind}"
            + ("" if root == kind else f" of a {root}")
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
        may be None, or "" / -1). The common message (a new id, one reference to an
        earlier message, the next seq of its session) is settled here in a few lookups."""
        seen = self._seen
        code = KIND_CODES[kind]
        if not seen.get(ident, _INVALID) & _CODE_MASK and (
            refers_to.__class__ is str
            and refers_to != ident
            and (
                not refers_to
                or (target := seen.get(refers_to, _INVALID) & _CODE_MASK)
                and (code != _EVIDENCE or target == _CLAIM)
            )
            or refers_to.__class__ is not str
            and not refers_to
        ):
            if session and seq.__class__ is int and 0 <= seq < _MAX_SEQ:
                last = self._last_seq.get(session)
                if last is not None and seq != last + 1:
                    return self._add_slow(ident, code, refers_to, session, seq, line)
                self._last_seq[session] = seq
            elif seq.__class__ is float and session:
                return self._add_slow(ident, code, refers_to, session, seq, line)
            seen[ident] = _packed(line, code)
            if code == _CORRECTION:
                self._corrects[ident] = [refers_to]
            if self._pending:
                pending = self._pending.pop(ident, None)
                if pending is not None:
                    return self._resolve_pending(ident, pending)
            return ()
        return self._add_slow(ident, code, refers_to, session, seq, line)

    def _add_slow(
        self,
        ident: str,
        code: int,
        refers_to: object,
        session: object,
        seq: object,
        line: int | None,
    ) -> list[Problem]:
        found: list[Problem] = []
        seen = self._seen
        kind = _KIND_NAMES[code]
        refs = _reference_list(refers_to)
        for ref in refs:
            if ref == ident:
                code_found = "VLP307" if code == _CORRECTION else "VLP303"
                found.append(Problem(code_found, f"{kind} {ident} refers to itself", line, ident))
            elif seen.get(ref, _INVALID) & _CODE_MASK:
                if code == _EVIDENCE:
                    problem = self._evidence_problem(line, ident, ref)
                    if problem is not None:
                        found.append(problem)
            elif ref not in seen:  # neither valid nor seen on an invalid message
                self._pending.setdefault(ref, []).append((line, ident, kind or ""))
        known = seen.get(ident, _INVALID)
        if known & _CODE_MASK:
            first = _line_of(known)
            where = f" (first on line {first})" if first is not None else ""
            found.append(Problem("VLP301", f"duplicate id {ident!r}{where}", line, ident))
        else:
            seen[ident] = _packed(line, code)
            if code == _CORRECTION:
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
            if referrer_kind == "evidence" and self._kind(ident) is not None:
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
        return self._note_salvaged(ident, session, seq, line)

    def _note_salvaged(
        self, ident: str | None, session: str | None, seq: int | None, line: int | None
    ) -> list[Problem]:
        if session and seq is not None and seq >= 0:
            last = self._last_seq.get(session)
            self._last_seq[session] = seq if last is None else max(last, seq)
        if not ident or ident in self._seen:
            return []
        self._seen[ident] = _packed(line, _INVALID)
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
            first = self._seen.get(cycle[0])
            found.append(
                Problem(
                    "VLP307",
                    "corrections form a cycle: " + " -> ".join(cycle + [cycle[0]]),
                    None if first is None else _line_of(first),
                    cycle[0],
                )
            )
        return found

    def add_batch(self, columns: Columns, first_line: int) -> list[Problem]:
        """The checks for consecutive lines given as :data:`Columns` (type code 0: an
        invalid message or line, with what :func:`salvaged_fields` read of it): the same
        problems, in the same order, as :meth:`add_fields` and :meth:`note_invalid` line
        by line. Whole columns are checked at once while they show nothing; a part with a
        problem is halved, down to a few lines checked one by one."""
        ids, codes, refs, sessions, seqs = columns
        found: list[Problem] = []
        pending = [(0, len(ids))]
        while pending:
            start, end = pending.pop()
            part = (
                columns
                if end - start == len(ids)  # the whole batch: most often, not copied
                else (
                    ids[start:end],
                    codes[start:end],
                    refs[start:end],
                    sessions[start:end],
                    seqs[start:end],
                )
            )
            if self._take(part, first_line + start):
                continue
            if end - start > _CHECKED_ONE_BY_ONE:
                middle = (start + end) // 2
                pending.append((middle, end))
                pending.append((start, middle))
                continue
            for line, row in enumerate(zip(*part), first_line + start):
                found.extend(self._one(*row, line))
        return found

    def _one(
        self, ident: str, code: int, refers_to: Any, session: str, seq: int, line: int
    ) -> Sequence[Problem]:
        if code == _INVALID:
            return self._note_salvaged(ident, session, seq if seq >= 0 else None, line)
        kind = _KIND_NAMES[code]
        assert kind is not None
        return self.add_fields(ident, kind, refers_to, session, seq, line)

    def _take(self, columns: Columns, first_line: int) -> bool:
        """Take in consecutive lines in one go when none of them shows a problem: new
        distinct ids, references to earlier lines only (evidence to claims), each
        session's seq counting up by one. False (nothing changed) when any line needs a
        closer look."""
        ids, codes, refs, sessions, seqs = columns
        if self._pending and not self._pending.keys().isdisjoint(ids):
            return False
        last_seqs = self._following_seqs(sessions, seqs)
        if last_seqs is None:
            return False
        seen = self._seen
        floor = _packed(first_line, 0)
        own = range(floor, floor + (len(ids) << _CODE_BITS), 1 << _CODE_BITS)
        packed = list(map(or_, own, codes))
        known = len(seen)
        # New distinct ids, all or none; "" (lines without an id) is always there.
        if not seen.add_all(ids, packed) and not ("" in ids and seen.add_all(*_named(ids, packed))):
            return False
        kinds = bytes(codes)
        if not self._refer_back(refs, kinds, packed):
            seen.truncate(known)
            return False
        self._last_seq.update(last_seqs)
        if _CORRECTION in kinds:
            corrections = kinds.translate(_ONLY_CORRECTIONS)
            for ident, ref in zip(compress(ids, corrections), compress(refs, corrections)):
                self._corrects[ident] = [ref]
        return True

    def _refer_back(self, refs: Sequence[Any], kinds: bytes, packed: list[int]) -> bool:
        """Whether each line's reference is to an id first seen on an earlier line (a packed
        int below the line's own: they order by line first), an evidence's to a claim (or
        an invalid message)."""
        try:
            targets = self._seen.get_all(refs, _LATER)
        except TypeError:  # a list of references
            return False
        if not all(map(lt, targets, packed)):
            return False
        if _EVIDENCE not in kinds:
            return True
        evidence = compress(targets, kinds.translate(_ONLY_EVIDENCE))
        return _EVIDENCE_TARGETS.issuperset(map(and_, evidence, repeat(_CODE_MASK)))

    def _following_seqs(
        self, sessions: Sequence[str], seqs: Sequence[int]
    ) -> dict[str, int] | None:
        """Each session's last seq after these lines if, in every session, each seq is the
        one after the last (valid lines: no gap, no repeat; invalid ones: nothing to
        decide); None when some line needs a closer look."""
        session = sessions[0] if sessions else ""
        first = seqs[0] if seqs else -1
        if (  # the usual slice: one session counting up
            session
            and 0 <= first
            and seqs[-1] < _MAX_SEQ
            and sessions.count(session) == len(sessions)
            and seqs == list(range(first, first + len(seqs)))
        ):
            before = self._last_seq.get(session)
            return None if before is not None and first != before + 1 else {session: seqs[-1]}
        if -1 in seqs or "" in sessions:  # lines without a session or a seq
            counted = list(map(and_, map(truth, sessions), map(ge, seqs, repeat(0))))
            sessions, seqs = list(compress(sessions, counted)), list(compress(seqs, counted))
            if not seqs:
                return {}
        if max(seqs) >= _MAX_SEQ:
            return None
        last: dict[str, int] = {}
        position = 0
        for session, run in groupby(sessions):
            size = len(list(run))
            first = seqs[position]
            before = last.get(session, self._last_seq.get(session))
            if before is not None and first != before + 1:
                return None
            end = position + size
            if size > 1 and seqs[position:end] != list(range(first, first + size)):
                return None
            last[session] = first + size - 1
            position = end
        return last


def _named(ids: Sequence[str], packed: list[int]) -> tuple[list[str], list[int]]:
    """The ids that are not "" and their packed ints."""
    named = list(map(truth, ids))
    return list(compress(ids, named)), list(compress(packed, named))


def _correction_cycles(corrects: dict[str, list[str]]) -> Iterator[list[str]]:
    """Each cycle among corrections once (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    # Only a correction of a correction can be on a cycle: a search from any other finds
    # nothing and marks only itself done, so those are not searched from (most of them).
    names = corrects.keys()
    starts = [start for start, targets in corrects.items() if not names.isdisjoint(targets)]
    for start in starts:
        if start in state:
            continue
        first_targets = corrects[start]
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


class _Resolved:
    """Where the corrections of one message lead: computed once for every message. A
    plain class, not a dataclass: `vlp validate` imports this module and never makes one,
    and a dataclass costs ~4 M instructions at each start-up (docs/decisions.md, vlp35k)."""

    __slots__ = ("best", "cycle", "hops", "severity", "step")

    def __init__(
        self,
        best: str,  # the latest message reachable through corrections (the source of truth)
        step: str | None,  # the next correction on the way to ``best`` (None: it is ``best``)
        hops: int,  # corrections between the message and ``best``
        severity: int,  # the most severe safety level along that path
        cycle: tuple[str, ...] | None,  # a correction cycle reachable from the message
    ) -> None:
        self.best = best
        self.step = step
        self.hops = hops
        self.severity = severity
        self.cycle = cycle


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

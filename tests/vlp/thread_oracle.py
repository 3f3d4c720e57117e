"""The thread rules written as plainly as possible, message by message, for the tests to
compare the fast checker (packed ints, whole columns) against: what `vlp validate`
reported before the issue-11 fast path, in the same order."""

from __future__ import annotations

from typing import Any

from vlp.errors import Problem
from vlp.thread import _correction_cycles, _reference_list, _salvage


def _usable_seq(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    return int(value) if 0 <= value < 2**63 else None


class OracleChecker:
    def __init__(self) -> None:
        self.kinds: dict[str, str] = {}  # id -> type, for valid messages
        self.lines: dict[str, int | None] = {}  # id -> where it was (first) seen
        self.waiting: dict[str, list[tuple[int | None, str, str]]] = {}
        self.highest: dict[str, int] = {}  # session -> highest seq seen
        self.corrections: dict[str, list[str]] = {}

    def _amended_kind(self, ident: str) -> str | None:
        visited = set()
        while ident in self.corrections and ident not in visited:
            visited.add(ident)
            known = [target for target in self.corrections[ident] if target in self.kinds]
            if not known:
                return None
            ident = known[0]
        return self.kinds.get(ident)

    def _evidence(self, line: int | None, ident: str, target: str) -> list[Problem]:
        root = self._amended_kind(target)
        if root in (None, "claim"):
            return []
        kind = self.kinds[target]
        text = f"evidence attaches to {target}, a {kind}"
        if root != kind:
            text += f" of a {root}"
        return [Problem("VLP306", text + "; evidence supports claims", line, ident)]

    def _arrived(self, ident: str) -> list[Problem]:
        out: list[Problem] = []
        for line, referrer, kind in self.waiting.pop(ident, []):
            out.append(Problem("VLP303", f"refers_to {ident!r}, which comes later", line, referrer))
            if kind == "evidence" and ident in self.kinds:
                out += self._evidence(line, referrer, ident)
        return out

    def valid(self, msg: dict[str, Any], line: int | None) -> list[Problem]:
        ident, kind = msg["id"], msg["type"]
        refs = _reference_list(msg.get("refers_to"))
        out: list[Problem] = []
        for ref in refs:
            if ref == ident:
                code = "VLP307" if kind == "correction" else "VLP303"
                out.append(Problem(code, f"{kind} {ident} refers to itself", line, ident))
            elif ref in self.kinds:
                if kind == "evidence":
                    out += self._evidence(line, ident, ref)
            elif ref not in self.lines:
                self.waiting.setdefault(ref, []).append((line, ident, kind))
        if ident in self.kinds:
            first = self.lines[ident]
            where = "" if first is None else f" (first on line {first})"
            out.append(Problem("VLP301", f"duplicate id {ident!r}{where}", line, ident))
        else:
            self.kinds[ident], self.lines[ident] = kind, line
            if kind == "correction":
                self.corrections[ident] = [ref for ref in refs if ref != ident]
            out += self._arrived(ident)
        session, seq = msg.get("session_id"), _usable_seq(msg.get("seq"))
        if isinstance(session, str) and session and seq is not None:
            last = self.highest.get(session)
            if last is not None and seq <= last:
                text = f"seq {seq} in session {session} follows seq {last}"
                out.append(Problem("VLP305", text, line, ident))
            elif last is not None and seq > last + 1:
                gap = str(last + 1) if seq == last + 2 else f"{last + 1}..{seq - 1}"
                text = f"seq jumps from {last} to {seq} in session {session} (missing {gap})"
                out.append(Problem("VLP304", text, line, ident))
            self.highest[session] = seq if last is None else max(last, seq)
        return out

    def invalid(self, msg: Any, raw: bytes | None, line: int | None) -> list[Problem]:
        ident, session, seq = _salvage(msg, raw)
        if session is not None and seq is not None:
            self.highest[session] = max(self.highest.get(session, seq), seq)
        if ident is None or ident in self.kinds or ident in self.lines:
            return []
        self.lines[ident] = line
        return self._arrived(ident)

    def finish(self) -> list[Problem]:
        out = [
            Problem(
                "VLP302", f"refers_to {ref!r}, which no valid message of the thread has", line, who
            )
            for ref, referrers in self.waiting.items()
            for line, who, _ in referrers
        ]
        self.waiting.clear()
        for cycle in _correction_cycles(self.corrections):
            text = "corrections form a cycle: " + " -> ".join([*cycle, cycle[0]])
            out.append(Problem("VLP307", text, self.lines.get(cycle[0]), cycle[0]))
        return out

"""The thread checker as it was before the fast path (commit 966e13c): the baseline the
thread-check speed-up of bench/vlp_validate.py is measured against. Only ``add`` is used."""

from __future__ import annotations

from typing import Any

from vlp.errors import Problem


def references(msg: dict[str, Any]) -> list[str]:
    """The ids a message refers to, as a list (``refers_to`` may be one id or a list)."""
    refs = msg.get("refers_to")
    if isinstance(refs, str):
        return [refs]
    if isinstance(refs, list):
        return [ref for ref in refs if isinstance(ref, str)]
    return []


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

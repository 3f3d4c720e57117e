"""Sessions: ids, monotonically increasing ``seq`` per session, and a closing
``session_context`` message that persists what the session was."""

from __future__ import annotations

import re
import secrets
import threading
from datetime import UTC, datetime
from typing import Any

from vlp.message import make_message, utc_timestamp


class SessionClosedError(ValueError):
    """The session has ended; it issues no more sequence numbers."""


def _slug(agent: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", agent).strip("-").lower() or "agent"


class Session:
    """One open session of one agent. Create it through :class:`SessionRegistry`."""

    def __init__(self, session_id: str, agent: str) -> None:
        self.id = session_id
        self.agent = agent
        self.opened_at = utc_timestamp()
        self.last_seq = 0
        self.closed = False
        self._lock = threading.Lock()

    def next_seq(self) -> int:
        """The next sequence number: 1, 2, 3... never repeated, never reordered."""
        with self._lock:
            if self.closed:
                raise SessionClosedError(f"session {self.id} has ended")
            self.last_seq += 1
            return self.last_seq

    def message(self, type: str, **fields: Any) -> dict[str, Any]:
        """A message in this session: ``make_message`` with session_id and seq filled in.

        The seq is spent only when the message is made: a refused message (VLPError)
        leaves no gap in the session.
        """
        fields.setdefault("sender", self.agent)
        with self._lock:
            if self.closed:
                raise SessionClosedError(f"session {self.id} has ended")
            msg = make_message(type, session_id=self.id, seq=self.last_seq + 1, **fields)
            self.last_seq += 1
            return msg

    def end(
        self,
        content: str | dict[str, Any] | None = None,
        *,
        confidence: float = 1.0,
        provenance: list[str | dict[str, Any]] | None = None,
        **fields: Any,
    ) -> dict[str, Any]:
        """Close the session and return its ``session_context`` message (the last seq).

        By default the content is the session's own record (message count, open and
        close times) and the provenance points at the session itself, which is where
        those facts come from. If the message is refused (VLPError) the session stays
        open.
        """
        if provenance is None:
            provenance = [{"ref": self.id, "type": "vlp_session"}]
        fields.setdefault("sender", self.agent)
        with self._lock:
            if self.closed:
                raise SessionClosedError(f"session {self.id} has ended")
            seq = self.last_seq + 1
            if content is None:
                content = {
                    "messages": self.last_seq,
                    "opened_at": self.opened_at,
                    "closed_at": utc_timestamp(),
                }
            msg = make_message(
                "session_context",
                session_id=self.id,
                seq=seq,
                content=content,
                confidence=confidence,
                provenance=provenance,
                **fields,
            )
            self.last_seq = seq
            self.closed = True
            return msg


class SessionRegistry:
    """Issues session ids and keeps the open sessions of a process (thread-safe)."""

    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def open(self, agent: str, *, session_id: str | None = None) -> Session:
        """Start a session for ``agent``; ids look like ``S-2025-12-14-agent-1a2b3c``."""
        with self._lock:
            if session_id is None:
                day = datetime.now(UTC).strftime("%Y-%m-%d")
                session_id = f"S-{day}-{_slug(agent)}-{secrets.token_hex(3)}"
                while session_id in self._sessions:
                    session_id = f"S-{day}-{_slug(agent)}-{secrets.token_hex(3)}"
            elif session_id in self._sessions:
                raise ValueError(f"session {session_id} is already open")
            session = Session(session_id, agent)
            self._sessions[session_id] = session
            return session

    def get(self, session_id: str) -> Session:
        with self._lock:
            try:
                return self._sessions[session_id]
            except KeyError:
                raise KeyError(f"no open session {session_id!r}") from None

    def next_seq(self, session_id: str) -> int:
        return self.get(session_id).next_seq()

    def end(
        self, session_id: str, content: str | dict[str, Any] | None = None, **fields: Any
    ) -> dict[str, Any]:
        """End a session and return its ``session_context`` message."""
        session = self.get(session_id)
        message = session.end(content, **fields)
        with self._lock:
            self._sessions.pop(session_id, None)
        return message

    @property
    def open_sessions(self) -> list[str]:
        with self._lock:
            return list(self._sessions)

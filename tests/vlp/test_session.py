"""Session registry: ids, monotonic seq, closing session_context."""

from __future__ import annotations

import threading

import pytest

from vlp import SessionClosedError, SessionRegistry, check_thread, validate_vlp


def test_sessions_issue_increasing_seq_and_close_with_context() -> None:
    registry = SessionRegistry()
    session = registry.open("The Observer")
    assert session.id.startswith("S-") and "the-observer" in session.id
    first = session.message("claim", content="did it", confidence=0.5)
    second = session.message("query", content="?", sender="Archivist")
    assert (first["seq"], second["seq"]) == (1, 2)
    assert first["session_id"] == second["session_id"] == session.id
    closing = registry.end(session.id)
    assert closing["type"] == "session_context" and closing["seq"] == 3
    assert closing["content"]["messages"] == 2
    assert validate_vlp(closing) == (True, None)
    assert check_thread([first, second, closing]) == []
    assert session.id not in registry.open_sessions
    with pytest.raises(SessionClosedError):
        session.next_seq()


def test_seq_is_unique_under_threads() -> None:
    session = SessionRegistry().open("agent")
    issued: list[int] = []
    lock = threading.Lock()

    def work() -> None:
        for _ in range(200):
            value = session.next_seq()
            with lock:
                issued.append(value)

    workers = [threading.Thread(target=work) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert sorted(issued) == list(range(1, 801))


def test_registry_ids_are_distinct_and_lookup_fails_clearly() -> None:
    registry = SessionRegistry()
    ids = {registry.open("a").id for _ in range(20)}
    assert len(ids) == 20
    with pytest.raises(KeyError, match="no open session"):
        registry.get("S-missing")
    with pytest.raises(ValueError, match="already open"):
        registry.open("b", session_id=next(iter(ids)))

"""Session registry: ids, monotonic seq, closing session_context."""

from __future__ import annotations

import threading

import pytest

from vlp import SessionClosedError, SessionRegistry, VLPError, check_thread, validate_vlp


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


def test_a_refused_message_spends_no_seq() -> None:
    session = SessionRegistry().open("agent")
    first = session.message("claim", content="a", confidence=0.5)
    with pytest.raises(VLPError, match="VLP204"):
        session.message("claim", content="b", confidence=0.95)
    second = session.message("claim", content="c", confidence=0.5)
    assert (first["seq"], second["seq"]) == (1, 2)
    assert check_thread([first, second]) == []


def test_a_refused_end_leaves_the_session_open_and_an_end_is_final() -> None:
    registry = SessionRegistry()
    session = registry.open("agent")
    session.message("claim", content="a", confidence=0.5)
    with pytest.raises(VLPError, match="VLP204"):
        registry.end(session.id, confidence=0.95, provenance=[])
    assert session.id in registry.open_sessions and not session.closed
    closing = registry.end(session.id)
    assert closing["seq"] == 2
    with pytest.raises(SessionClosedError):
        session.end()
    with pytest.raises(SessionClosedError):
        session.message("claim", content="late", confidence=0.5)

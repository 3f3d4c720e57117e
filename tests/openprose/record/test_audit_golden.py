"""The trail of a journal is the same bytes whatever reads the journal: the trails in
`data/trails` were made by the translator before it took typed events (the rows read the
lines' dicts; rec30d), from the journals beside them (every example program, a retried
call with a corrected judgment, a tool loop, a thrown error, a journal from before issue
30)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from openprose.record.audit import AuditTrail, Translator, translate_lines
from openprose.record.codec import decode_line
from openprose.record.journal import read_journal

TRAILS = Path(__file__).parent / "data" / "trails"
JOURNALS = {path.name.removesuffix(".audit.ndjson"): path for path in TRAILS.glob("*.audit.ndjson")}
BEFORE_30 = Path(__file__).parent / "data" / "journal-before-30.jsonl"


def journal_of(name: str) -> Path:
    return BEFORE_30 if name == "journal-before-30" else TRAILS / f"{name}.jsonl"


def run_id_of(trail: bytes) -> str:
    return str(orjson.loads(trail.split(b"\n", 1)[0])["session_id"])


def test_the_journals_cover_the_rows() -> None:
    assert len(JOURNALS) >= 20
    lines = (line for name in JOURNALS for line in journal_of(name).read_bytes().splitlines())
    kinds = {orjson.loads(line)["ev"] for line in lines}
    assert kinds >= {
        "run_started", "agents", "session_started", "session_finished", "session_failed",
        "session_cancelled", "request_retried", "decision", "decision_failed", "tool_call",
        "permission", "approval_requested", "approval_decided", "tool_result",
        "question_asked", "question_answered", "error_caught", "skill_loaded", "run_finished",
    }  # fmt: skip


@pytest.mark.parametrize("name", sorted(JOURNALS))
def test_a_journal_read_back_makes_the_same_trail(name: str) -> None:
    expected = JOURNALS[name].read_bytes()
    made = b"".join(
        translate_lines(read_journal(journal_of(name)), run_id_of(expected), "main.prose")
    )
    assert made == expected


@pytest.mark.parametrize("name", sorted(JOURNALS))
def test_events_as_recorded_make_the_same_trail(name: str, tmp_path: Path) -> None:
    """The live path: each decoded event handed to `AuditTrail.add` as `Shared.emit` does."""
    expected = JOURNALS[name].read_bytes()
    trail = AuditTrail(tmp_path / "audit.ndjson", run_id_of(expected), "main.prose")
    for line in journal_of(name).read_bytes().splitlines():
        recorded = decode_line(line)
        assert recorded is not None
        trail.add(*recorded)
    trail.close()
    assert trail.error is None
    assert (tmp_path / "audit.ndjson").read_bytes() == expected


def test_feed_takes_a_line_and_add_an_event_alike() -> None:
    name = "tool-loop"
    expected = JOURNALS[name].read_bytes()
    fed = Translator(run_id_of(expected), "main.prose")
    for line in journal_of(name).read_bytes().splitlines():
        fed.feed(orjson.loads(line))
    assert fed.take_bytes() == expected


def test_an_event_the_trail_cannot_translate_stops_it_not_the_run(tmp_path: Path) -> None:
    """`AuditTrail.add` is the translator's own `add` (no call of its own per event): an
    event it cannot translate is kept as the trail's error and the trail stops; a
    translator of a journal read back (`prose show --vlp`) raises instead."""
    from tests.support.events import make

    odd = make("session_finished", "1", {"response": "not an object", "attempt": 1})
    trail = AuditTrail(tmp_path / "audit.ndjson", "run-1", "main.prose")
    trail.add(odd, 1.0)
    assert isinstance(trail.error, AttributeError)
    trail.add(make("run_finished", "", {"status": "failed", "error": "x"}), 2.0)
    trail.close()
    assert not (tmp_path / "audit.ndjson").exists()  # nothing after the event it stopped at
    with pytest.raises(AttributeError):
        Translator("run-1", "main.prose").add(odd, 1.0)


def test_a_resume_skips_a_line_the_codec_cannot_decode(tmp_path: Path) -> None:
    """As the resume's replay skips a damaged line it does not serve: the rest is written."""
    name = "hello"
    expected = JOURNALS[name].read_bytes()
    lines = [orjson.loads(line) for line in journal_of(name).read_bytes().splitlines()]
    damaged = [{"ev": "agents", "step": "", "t": 1.0}, *lines]  # `agents` lacks its field
    path = tmp_path / "audit.ndjson"
    AuditTrail.resume(path, run_id_of(expected), "main.prose", damaged).close()
    assert path.read_bytes() == expected


def test_every_event_listed_as_a_notice_is_said_as_one_with_its_fields() -> None:
    """The events the stored journals lack included (typed answers, ignored answers)."""
    from openprose.record.audit import ROWS
    from openprose.record.codec import fields_of
    from tests.support.events import make

    noticed = [kind for kind, kinds in ROWS.items() if kinds == ("notice",)]
    for kind in noticed:
        if kind.ev in ("agents", "decision_failed", "permission", "session_cancelled"):
            continue  # rows of their own (the journals above hold them)
        event = make(kind.ev, "3", {})
        translator = Translator("run-1", "main.prose")
        translator.add(event, 1.0)
        (message,) = translator.take()
        assert message["type"] == "notice" and message["topic"] == kind.ev
        assert message["payload"] == {"step": "3", **fields_of(event)}

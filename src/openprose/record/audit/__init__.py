"""The run's audit trail: every journal event that matters to an auditor, as VLP 1.1
messages in `audit.ndjson` (one VLP session per run, `seq` 1, 2, 3...).

The trail is a pure function of the journal: `Translator` turns the event sequence into
messages whose ids (`{run_id}/{seq}`) and timestamps (the event's `t`) depend only on that
sequence. So a resumed run re-derives what the crash kept from being written — it counts
the messages already on disk, translates the journal again without writing those, and goes
on from the next `seq` — and a run made before the trail existed can be shown from its
journal. The translator reads typed events (`openprose.record.events`): `Translator.add` is
a `match` over their classes, and a journal line read back is decoded by the codec first
(`feed`, `translate_lines`: a damaged line stops them with `EventDamaged`). `ROWS` is the
one table of event -> message kinds (`tests/openprose/record/test_audit.py` checks every
event type is listed and makes the kinds listed; `test_audit_golden.py` that stored
journals make the same bytes as before the rows were typed).

`AuditTrail.add` is the translator's `add` itself, called as `Shared.emit` records each
event, on the event loop; it keeps no event but a session's start while its call is out:
holding events (with their request and response dicts) for a writer thread
to translate kept thousands of objects alive across garbage collections, as costly as the
translation in some runs (docs/decisions.md, issue 13, session 13). The lines wait in the
translator's list until the journal has written their events (`AuditTrail.written`, a
journal hook), then the process's background writer (`openprose.record.writer`, which writes
binding files too) appends them with one `write` per batch. A process killed before a flush
loses only what the resume re-derives.

A session's query and answer are most of a trail, and a statement's sessions differ only in
their own values (ids, times, step, prompt, answer, usage): the first session of a
statement makes the template of both lines with the same builders as any other message
(`Translator._template`), the others join its parts with their values, each encoded alone
(~35 k instructions a session on the event loop, against ~60 k for two dicts encoded whole;
docs/decisions.md, issue 13, session 14).

What a reviewer needs beyond the exchanges is derived from the journal too: the run's
inputs (`run_started`) and outputs (`run_finished`), as values or digests (`shown_value`);
the binding of each answer, kept by name so a query refers to the answers its `context:`
holds and the final claim to those its outputs hold; provider-level retries
(`request_retried`), held until their call's query is written; and, when a resumed run
starts, the calls the earlier attempt left without an answer (`_lost`).

Messages made by `say` are checked by the VLP validator before they are written; the two a
session makes (`_asked`, `session_finished`) are built field by field in a shape the
validator accepts by construction — the check would cost as much as the rest of the trail
— and `tests/openprose/record/test_audit.py` validates them on every example program.
"""

from openprose.record.audit.messages import (
    AUDIT_FILE,
    LARGE_VALUE,
    encode,
    shown_value,
    shown_values,
)
from openprose.record.audit.trail import AuditTrail, written_count
from openprose.record.audit.translator import ROWS, Translator, translate, translate_lines

__all__ = [
    "AUDIT_FILE",
    "LARGE_VALUE",
    "ROWS",
    "AuditTrail",
    "Translator",
    "encode",
    "shown_value",
    "shown_values",
    "translate",
    "translate_lines",
    "written_count",
]

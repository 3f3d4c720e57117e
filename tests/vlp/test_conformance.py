"""VLP transcripts as people and tools produce them (docs/decisions.md, "Conformance
(protocol transcripts)").

The fixtures in transcripts/ are the seeds' example messages as printed and a thread of
our own modelled on the reference's dialogue. Each is also fed through the ways real
tools write the same messages: CRLF, a BOM, trailing whitespace, blank lines, Markdown
code fences, pretty-printing (one document, an array, or ``jq .``'s stream of objects),
and every reader (`vlp validate`, `show`, `gate`, `read_records`) must agree that
nothing is wrong.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cliconventions.test_four_clis import run
from vlp.ndjson import read_records
from vlp.validate import check_message

HERE = Path(__file__).with_name("transcripts")
THREAD = HERE / "audit_thread.ndjson"


def _vlp(*args: str) -> subprocess.CompletedProcess[str]:
    return run("vlp", *args)


def _messages() -> list[dict[str, object]]:
    return [json.loads(line) for line in THREAD.read_text(encoding="utf-8").splitlines()]


def _pretty_stream() -> bytes:  # what `jq . thread.ndjson` prints
    return "".join(json.dumps(m, indent=2, ensure_ascii=False) + "\n" for m in _messages()).encode()


VARIANTS: dict[str, Callable[[bytes], bytes]] = {
    "as written": lambda raw: raw,
    "crlf": lambda raw: raw.replace(b"\n", b"\r\n"),
    "bom": lambda raw: b"\xef\xbb\xbf" + raw,
    "bom+crlf": lambda raw: b"\xef\xbb\xbf" + raw.replace(b"\n", b"\r\n"),
    "trailing whitespace": lambda raw: raw.replace(b"\n", b" \t \n"),
    "blank lines between": lambda raw: raw.replace(b"\n", b"\n\n"),
    "no final newline": lambda raw: raw.rstrip(b"\n"),
    "fenced ndjson": lambda raw: b"```ndjson\n" + raw + b"```\n",
    "fenced json, crlf": lambda raw: (b"```json\n" + raw + b"```").replace(b"\n", b"\r\n"),
    "tilde fence": lambda raw: b"~~~\n" + raw + b"~~~\n",
    "pretty array": lambda raw: json.dumps(_messages(), indent=2).encode(),
    "pretty array, tabs": lambda raw: json.dumps(_messages(), indent="\t").encode(),
    "fenced pretty array": lambda raw: (
        b"```json\n" + json.dumps(_messages(), indent=2).encode() + b"\n```\n"
    ),
    "jq stream": lambda raw: _pretty_stream(),
    "jq stream, crlf + bom": lambda raw: b"\xef\xbb\xbf" + _pretty_stream().replace(b"\n", b"\r\n"),
    "fenced jq stream": lambda raw: b"```json\n" + _pretty_stream() + b"```\n",
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_reader_accepts_the_thread_however_it_is_written(
    variant: str, tmp_path: Path
) -> None:
    path = tmp_path / "thread.ndjson"
    path.write_bytes(VARIANTS[variant](THREAD.read_bytes()))
    records = list(read_records(path))
    assert [r.message["id"] for r in records if r.ok] == [m["id"] for m in _messages()]
    assert all(r.ok for r in records), [r.problems for r in records]
    checked = _vlp("validate", str(path))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "6 message(s), 6 valid, 0 problem(s)" in checked.stdout
    shown = _vlp("show", str(path))
    assert shown.returncode == 0 and "now: Page 12 re-indexed" in shown.stdout, shown.stderr
    gated = _vlp("gate", str(path))  # A4 asks for review: held, and nothing unreadable
    assert gated.returncode == 3 and "unreadable" not in gated.stdout, gated.stdout


def test_the_seeds_example_messages_validate_as_printed() -> None:
    checked = _vlp(
        "validate", str(HERE / "seed_readme_claim.json"), str(HERE / "seed_overview_claim.json")
    )
    assert checked.returncode == 0, checked.stdout
    assert "2 message(s), 2 valid, 0 problem(s)" in checked.stdout


def test_a_fence_line_is_never_counted_as_a_message() -> None:
    raw = b"```json\n" + THREAD.read_bytes() + b"```\n"
    checked = subprocess.run(
        [sys.executable, "-m", "vlp.cli", "validate", "--json", "-"],
        input=raw,
        capture_output=True,
        check=False,
    )
    report = json.loads(checked.stdout)
    assert (report["ok"], report["messages"], report["valid"]) == (True, 6, 6)


def test_a_bad_value_in_a_pretty_stream_is_one_problem_and_loses_nothing(tmp_path: Path) -> None:
    text = _pretty_stream().decode().split("\n")
    broken = next(n for n, line in enumerate(text) if line.startswith('  "id": "A3"'))
    text[broken] = '  "id": A3,'  # unquoted: not JSON
    path = tmp_path / "stream.json"
    path.write_text("\n".join(text), encoding="utf-8")
    records = list(read_records(path))
    assert [r.message["id"] for r in records if r.ok] == ["A1", "A2", "A4", "A5", "A6"]
    (bad,) = [r for r in records if not r.ok]
    assert bad.line == broken + 1 and bad.problems[0].code == "VLP001"
    assert (
        f"{path}:{broken + 1}: VLP001 invalid JSON at column 9"
        in _vlp("validate", str(path)).stdout
    )


def test_one_document_followed_by_junk_still_reads_the_document(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    path.write_text((HERE / "seed_readme_claim.json").read_text() + "thanks!\n")
    records = list(read_records(path))
    assert records[0].ok and records[0].message["id"] == "MSG001"
    assert [(r.line, r.problems[0].code) for r in records[1:]] == [(11, "VLP001")]


@pytest.mark.parametrize(
    ("stamp", "fix"),
    [
        ("2025-12-14T10:30:00+00:00", "write '2025-12-14T10:30:00Z'"),  # Python's isoformat()
        ("2025-12-14T11:30:00.25+01:00", "write '2025-12-14T10:30:00.25Z'"),
        ("2025-12-14T05:30:00-05:00", "write '2025-12-14T10:30:00Z'"),
        ("2025-12-14t10:30:00z", "write '2025-12-14T10:30:00Z'"),
        ("2025-12-14 10:30:00Z", "write '2025-12-14T10:30:00Z'"),
        ("2025-12-14T10:30Z", "write '2025-12-14T10:30:00Z'"),
        ("2025-12-14T10:30:00", "write '2025-12-14T10:30:00Z' if the time is in UTC"),
    ],
)
def test_a_timestamp_written_another_way_stays_an_error_that_shows_the_fix(
    stamp: str, fix: str
) -> None:
    msg = {**_messages()[0], "timestamp": stamp}
    (problem,) = check_message(msg) or []
    assert problem.code == "VLP107"
    assert problem.message.endswith(fix), problem.message
    assert "VLP/1.1 writes UTC with 'T' and 'Z'" in problem.message


def test_no_fix_is_guessed_for_what_is_no_date_time() -> None:
    for stamp in ("14/12/2025 10:30", "2025-02-30T10:00:00+00:00", "yesterday"):
        (problem,) = check_message({**_messages()[0], "timestamp": stamp}) or []
        assert problem.message.endswith("like 2025-12-14T10:30:00Z"), problem.message


@pytest.mark.parametrize(
    ("field", "value", "hint"),
    [
        ("confidence", 95, "(a percentage? write 0.95)"),
        ("confidence", "0.9", "; write 0.9 without quotes"),
        ("type", "Claim", "(types are lowercase: write 'claim')"),
        ("protocol", "vlp/1.1", "(the protocol id is exact: write 'VLP/1.1')"),
    ],
)
def test_near_misses_name_the_fix(field: str, value: object, hint: str) -> None:
    msg = {**_messages()[0], field: value}
    assert any(p.message.endswith(hint) for p in check_message(msg) or []), check_message(msg)


def test_numbers_in_every_spelling_are_the_same_number(tmp_path: Path) -> None:
    # 0.9, 0.90, 9e-1 and 90E-2 are one value; each is high confidence, so each needs
    # provenance, and with it each is valid.
    base = dict(_messages()[0])
    lines = []
    for n, spelling in enumerate(["0.9", "0.90", "9e-1", "90E-2", "0.900000"]):
        msg = json.dumps({**base, "id": f"N{n}", "seq": n + 1})
        lines.append(msg.replace('"confidence": 0.92', f'"confidence": {spelling}'))
    path = tmp_path / "numbers.ndjson"
    path.write_text("\n".join(lines) + "\n")
    assert _vlp("validate", str(path)).returncode == 0
    path.write_text("\n".join(line.replace('"provenance"', '"x_provenance"') for line in lines))
    report = _vlp("validate", "--no-thread", str(path)).stdout
    assert report.count("VLP204") == 5, report


@pytest.mark.parametrize(
    ("line", "hint"),
    [
        (
            "{'id': 'M1', 'protocol': 'VLP/1.1'}",
            "JSON takes double quotes: this looks like a Python dict; write it with json.dumps",
        ),
        ('{"id": "M1", "confidence": NaN}', "NaN and Infinity are not JSON numbers"),
        ('{"id": "Ü1", "confidence": -Infinity}', "NaN and Infinity are not JSON numbers"),
        ("// the thread", "JSON has no comments"),
        ('{"id": "M1", /* why */ "x": 1}', "JSON has no comments"),
        ('data: {"id": "M1"}', "a server-sent events line: keep only the JSON after 'data:'"),
        # Session 13: a stream that lost its line breaks, and lines copied out of an array.
        (
            '{"id": "M1"}{"id": "M2"}',
            (
                "a second JSON value on the same line: NDJSON takes one message a line;"
                " break the line before column 13"
            ),
        ),
        (
            '{"id": "M1"}  {"id": "M2"}',
            (
                "a second JSON value on the same line: NDJSON takes one message a line;"
                " break the line before column 15"
            ),
        ),
        ('{"id": "M1"},', "NDJSON lines end without a comma: remove it"),
        (
            '{"id": "M1", "confidence": 1e400}',
            "no VLP field holds a number this large: confidence is between 0 and 1",
        ),
        (
            '\x00{\x00"\x00i\x00d\x00"',
            "NUL characters: the text looks like UTF-16; save it as UTF-8",
        ),
    ],
)
def test_almost_json_lines_say_what_they_need(line: str, hint: str, tmp_path: Path) -> None:
    path = tmp_path / "t.ndjson"
    path.write_text(line + "\n", encoding="utf-8")
    (record,) = list(read_records(path))
    (problem,) = record.problems
    assert problem.code == "VLP001" and problem.message.endswith(f"({hint})"), problem.message


def test_a_utf16_file_is_named_as_such(tmp_path: Path) -> None:
    path = tmp_path / "t.ndjson"
    path.write_bytes('{"id": "M1"}\n'.encode("utf-16"))
    problems = [p for record in read_records(path) for p in record.problems]
    assert problems[0].line == 1
    assert problems[0].message.endswith("(the text looks like UTF-16: save it as UTF-8)")
    checked = run("vlp", "validate", str(path))
    assert checked.returncode == 1 and "Traceback" not in checked.stderr
    assert "looks like UTF-16" in checked.stdout


@pytest.mark.parametrize("chunk", [3, 64, 1 << 20])
def test_ndjson_with_a_cut_last_line_is_never_taken_for_a_stream(chunk: int) -> None:
    # Found by the thread-scan property test: a blank first line, then one message a line
    # with the last one cut. Every value sits on its own line, so it is NDJSON: the cut
    # line is reported where it is, as the NDJSON reader reports it.
    import io

    good, cut = THREAD.read_bytes().splitlines()[:2]
    data = b"\n" + good + b"\n" + cut[: cut.index(b'"seq"') + 5] + b"\n"  # ends on a key
    records = list(read_records(io.BytesIO(data), chunk_bytes=chunk))
    assert [(r.line, r.ok) for r in records] == [(2, True), (3, False)]
    assert records[1].problems[0].message.endswith("unexpected end of data")  # orjson's


def test_an_object_that_holds_the_messages_says_so(tmp_path: Path) -> None:
    message = json.loads((HERE / "seed_readme_claim.json").read_text(encoding="utf-8"))
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"messages": [message, message]}), encoding="utf-8")
    (record,) = list(read_records(path))
    assert [(p.code, p.message) for p in record.problems] == [
        (
            "VLP002",
            (
                "not a message: this object holds 2 message(s) under 'messages';"
                " write them one a line (NDJSON) or as a JSON array"
            ),
        )
    ]
    # An object with message fields is still a message with problems, whatever it holds.
    assert check_message({"id": "x", "items": [message]}) is not None
    assert next(p.code for p in check_message({"id": "x", "items": [message]}) or []) == "VLP101"

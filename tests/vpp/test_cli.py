from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vpp import build_footer
from vpp.cli import main
from vpp.versions import Version

SAMPLE = Path("/work/shared/reference/vpp/v1.4/examples/sample-transcript-1.md")
TRANSCRIPTS_1_5 = Path("/work/shared/reference/vpp/v1.5/transcripts.md")


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def footer(tag: str, index: int, version: Version = "1.4", cycle: int = 1) -> str:
    return build_footer(tag, index, cycle=cycle, locus="default", version=version)


def test_check_compliant_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(SAMPLE)]) == 0
    assert "compliant with VPP 1.4" in capsys.readouterr().out


def test_check_reports_line_numbers_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = f"User: !<q>\nAssistant: <o>\nbody\n{footer('q', 1)}\n"
    path = write(tmp_path, "t.txt", text)
    assert main(["check", path]) == 1
    out = capsys.readouterr().out
    assert f"{path}:2: turn 2 (assistant): tag-mismatch:" in out
    assert "1 violation(s) in 1 of 2 turns" in out


def test_check_shows_a_footer_value_with_its_controls_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    title = "\x1b]0;pwned\x07\u202e"
    bad = footer("q", 1).replace("Cycle=1/3", f"Cycle={title}")
    path = write(tmp_path, "t.txt", f"User: !<q>\nAssistant: <q>\nbody\n{bad}\n")
    assert main(["check", path]) == 1
    out = capsys.readouterr().out
    assert "\\x1b]0;pwned\\x07\\u202e" in out
    assert not any(char in out for char in ("\x1b", "\x07", "\u202e"))


def test_check_json_several_files_is_one_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write(tmp_path, "good.txt", f"User: !<q>\nAssistant: <q>\nbody\n{footer('q', 1)}\n")
    missing = str(tmp_path / "missing.txt")
    assert main(["check", "--format", "json", good, good, missing]) == 2
    captured = capsys.readouterr()
    report = json.loads(captured.out)  # one document, not one line per file
    assert report["ok"] is False
    assert [f["ok"] for f in report["files"]] == [True, True, False]
    assert [sorted(f) for f in report["files"]] == [["ok", "path", "turns"]] * 2 + [
        ["error", "ok", "path"]
    ]
    assert report["files"][0]["turns"][1]["role"] == "assistant"
    assert "cannot read" in report["files"][2]["error"]
    assert "missing.txt" in captured.err


def test_check_json_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    turns = [
        {"role": "user", "content": "!<q> --minor --major"},
        {"role": "assistant", "content": "<c>\nnope\n" + footer("c", 1, "1.5")},
    ]
    path = write(tmp_path, "t.json", json.dumps(turns, indent=2))
    assert main(["check", "--version", "1.5", "--format", "json", path]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False
    # Exactly the shape, no other keys at any level; in 1.5 the user's command
    # error is a note on the user turn (issue 20 item 17), not a violation.
    assert sorted(report) == ["ok", "turns"]
    assert sorted(report["turns"][0]) == ["index", "notes", "ok", "role", "violations"]
    assert [n["code"] for n in report["turns"][0]["notes"]] == ["conflicting-severity"]
    assert sorted(report["turns"][1]) == ["index", "ok", "role", "violations"]
    violations = [v for t in report["turns"] for v in t["violations"]]
    assert violations and all(sorted(v) == ["code", "line", "message"] for v in violations)
    assert [(t["index"], t["role"], t["ok"]) for t in report["turns"]] == [
        (1, "user", True),
        (2, "assistant", False),  # "nope" is not the recovery body
    ]
    assert report["turns"][0]["notes"][0] == {
        "code": "conflicting-severity",
        "message": "--minor and --major are mutually exclusive.",
        "line": 2,
    }
    assert [v["code"] for v in report["turns"][1]["violations"]] == ["recovery-body-mismatch"]


@pytest.mark.parametrize(
    ("path", "version", "status", "flagged"),
    [
        (SAMPLE, "1.4", 0, []),
        (SAMPLE.with_name("end-to-end.md"), "1.4", 0, []),
        (TRANSCRIPTS_1_5, "1.5", 0, []),
    ],
)
def test_check_the_spec_example_files_as_published(
    path: Path,
    version: str,
    status: int,
    flagged: list[tuple[int, str]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["check", "--version", version, "--format", "json", str(path)]) == status
    report = json.loads(capsys.readouterr().out)
    found = [(v["line"], v["code"]) for t in report["turns"] for v in t["violations"]]
    assert found == flagged


def test_repair_of_a_markdown_example_changes_only_the_wrong_footer(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    original = SAMPLE.with_name("end-to-end.md").read_text()
    assert main(["repair", str(SAMPLE.with_name("end-to-end.md"))]) == 0
    assert capsys.readouterr().out.rstrip("\n") == original.rstrip("\n")  # compliant as is
    broken = write(
        tmp_path,
        "e2e.md",
        original.replace(
            "Tag=q_1 | Sources=none | Assumptions=0 | Cycle=1/3",
            "Tag=q_1 | Sources=none | Assumptions=0 | Cycle=3/3",
        ),
    )
    assert main(["repair", str(broken)]) == 0
    out = capsys.readouterr().out
    changed = [(a, b) for a, b in zip(original.split("\n"), out.split("\n"), strict=True) if a != b]
    assert changed == []  # the repaired file is the published one again


def test_check_lenient_tolerates_cosmetic_variants(tmp_path: Path) -> None:
    text = "User: !<q>\nAssistant: <q>\nx\n[Version=v1.4 | Tag=<q> | Sources=<none> | Assumptions=0 | Cycle=1/3]\n"
    path = write(tmp_path, "t.txt", text)
    assert main(["check", path]) == 1
    assert main(["check", "--lenient", path]) == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["check", "/no/such/file"], "/no/such/file: cannot read"),
        (["check", "BAD_JSON"], "bad.json:2: invalid JSON"),
        (["repair", "BAD_JSON"], "bad.json:2: invalid JSON"),
    ],
)
def test_input_errors_exit_2_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    bad = write(tmp_path, "bad.json", '[{"role": "user",\n "content": ]')
    assert main([bad if a == "BAD_JSON" else a for a in args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize("args", [["check"], ["check", "--version", "1.6", "x"], ["nope"], []])
def test_usage_errors_exit_2(args: list[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(args)
    assert caught.value.code == 2


def test_one_bad_file_among_many_still_checks_the_rest(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(SAMPLE), "/no/such/file"]) == 2
    assert "compliant" in capsys.readouterr().out


def test_parse_valid_and_invalid(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", "!<o> --correct --<q>\n!<x> ignored"]) == 0
    out = capsys.readouterr().out
    assert "destination: q" in out and "reply: <q>" in out
    assert main(["parse", "!<q> --correct --incorrect"]) == 1
    out = capsys.readouterr().out
    assert "conflicting-correctness" in out and "Example: !<q> --incorrect" in out


def test_parse_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", "--json", "--version", "1.5", "!<e> --<g> --<q>"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert sorted(report) == sorted(
        ["ok", "tag", "modifiers", "destination", "assistant_tag", "errors"]
    )
    assert report["ok"] is False and report["tag"] == "e" and report["assistant_tag"] == "c"
    assert report["errors"] == [
        {
            "code": "multiple-pipeline-destinations",
            "message": "Only one pipeline destination is allowed.",
        }
    ]
    assert main(["parse", "--json", "!<o> --incorrect --minor"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["modifiers"], report["destination"], report["assistant_tag"]) == (
        ["incorrect", "minor"],
        None,
        "c",
    )
    assert report["errors"] == []


def test_repair_keeps_crlf_line_ends_of_a_text_transcript(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    path = tmp_path / "t.txt"
    path.write_bytes(b"User: !<q>\r\nhi\r\n\r\nAssistant: <g>\r\nbody  \r\n[Tag=q_1]\r\n")
    assert main(["repair", str(path)]) == 0
    out = capsysbinary.readouterr().out
    assert out.startswith(b"User: !<q>\r\nhi\r\n\r\nAssistant: <q>\r\nbody  \r\n[Version=")
    assert b"\n" not in out.replace(b"\r\n", b"")
    fixed = tmp_path / "fixed.txt"
    fixed.write_bytes(out)
    assert main(["check", str(fixed)]) == 0


def test_repair_prints_the_transcript_in_its_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [
        json.dumps({"role": "user", "content": "!<g>"}),
        json.dumps({"role": "assistant", "content": "Idea only."}),
    ]
    path = write(tmp_path, "t.jsonl", "\n".join(lines) + "\n")
    assert main(["repair", path]) == 0
    out = capsys.readouterr().out
    repaired = [json.loads(line) for line in out.splitlines()]
    assert repaired[1]["content"] == "<g>\nIdea only.\n" + footer("g", 1)
    fixed = write(tmp_path, "fixed.jsonl", out)
    assert main(["check", fixed]) == 0


def test_snippet(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["snippet", "--version", "1.5"]) == 0
    assert "Version=v1.5" in capsys.readouterr().out


def test_version_may_be_written_as_in_footers(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", "--version", "v1.5", "--json", "!<o> --assumptions=2"]) == 1
    assert json.loads(capsys.readouterr().out)["errors"][0]["code"] == "invalid-modifier"
    with pytest.raises(SystemExit):
        main(["parse", "--version", "v1.6", "!<g>"])
    assert "unsupported VPP version 'v1.6'" in capsys.readouterr().err


def test_console_script_reads_stdin() -> None:
    text = f"User: !<q>\nAssistant: <q>\nok\n{footer('q', 1)}\n"
    done = subprocess.run(
        [sys.executable, "-m", "vpp.cli", "check", "-"],
        check=False,
        input=text,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "-: compliant" in done.stdout


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "deep.json",
            "[" * 100_000 + "]" * 100_000,
            "deep.json:1: invalid JSON: nested too deeply",
        ),
        ("deep.jsonl", '{"a": ' + "[" * 100_000, "deep.jsonl:1: invalid JSON line: nested"),
        ("bin.txt", "", "bin.txt:1:1: not UTF-8 (byte 0x"),
        ("dir", "", "dir: cannot read"),
    ],
)
def test_hostile_input_is_a_located_error_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, message: str
) -> None:
    path = tmp_path / name
    if name == "dir":
        path.mkdir()
    elif name == "bin.txt":
        path.write_bytes(b"\xff\xfe\x00\x81 binary")
    else:
        path.write_text(text)
    for command in ("check", "repair"):
        assert main([command, str(path)]) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err


def test_output_the_terminal_cannot_encode_is_escaped_not_a_crash(tmp_path: Path) -> None:
    turns = [
        {"role": "user", "content": "!<q>\ncaf\u00e9 !<x>"},
        {"role": "assistant", "content": "<q>\n\udc00"},  # a lone surrogate, as JSON allows
    ]
    path = write(tmp_path, "t.json", json.dumps(turns))
    for command in ("check", "repair"):
        done = subprocess.run(
            [sys.executable, "-m", "vpp.cli", command, path],
            check=False,
            capture_output=True,
            env={"PYTHONIOENCODING": "ascii", "PATH": ""},
        )
        assert b"Traceback" not in done.stderr
        assert done.returncode == (1 if command == "check" else 0)
    repaired = json.loads(done.stdout)  # still valid JSON, with \u escapes
    assert repaired[0] == turns[0]
    assert repaired[1]["content"].startswith("<q>\n\udc00\n[Version=v1.4 | Tag=q_1")


BIG = "9" * 5000


@pytest.mark.parametrize(
    "text",
    [
        '{"messages": [{"role": "user", "content": "!<g>", "n": ' + BIG + "}]}",
        '{"role": "user", "content": "!<g>", "n": ' + BIG + "}\n",
        (
            "USER: !<g>\nhi\nASSISTANT: <g>\nbody\n"
            f"[Version=v1.4 | Tag=g_{BIG} | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=default]\n"
        ),
        (
            "USER: !<g>\nhi\nASSISTANT: <g>\nbody\n"
            f"[Version=v1.4 | Tag=g_1 | Sources=none | Assumptions={BIG} | Cycle={BIG}/3 | Locus=x]\n"
        ),
        f"USER: !<o> --assumptions={BIG}\nhi\nASSISTANT: <o>\nbody\n",
    ],
)
@pytest.mark.parametrize("command", ["check", "repair"])
def test_integers_beyond_4300_digits_are_reported_not_raised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, command: str
) -> None:
    path = write(tmp_path, "big.txt", text)
    code = main([command, path])
    captured = capsys.readouterr()
    assert code in (0, 1, 2) and "Traceback" not in captured.err
    assert "int_max_str_digits" not in captured.out + captured.err  # int()'s own limit
    if command == "check":  # reports quote long values cut (repair prints the transcript)
        assert max(map(len, (captured.out + captured.err).splitlines() or [""])) < 400


def test_parse_bounds_the_assumptions_count(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", f"!<o> --assumptions={BIG}"]) == 1
    assert "invalid-modifier" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["check", "repair"])
def test_devices_fifos_and_directories_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # no writer: opening it for reading would block forever
    for path in ("/dev/zero", str(fifo)):
        assert main([command, path]) == 2
        assert "not a regular file" in capsys.readouterr().err


def test_an_object_without_messages_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "t.json", '{\n  "conversation": []\n}\n')
    assert main(["check", path]) == 2
    assert 'a JSON object transcript needs a "messages" list' in capsys.readouterr().err


# Lines people and tools put in transcripts: every marker style and speaker name, commands,
# tags, footers whole and mangled, fences, JSON fragments (session 13 fuzz).
_FUZZ_LINES = [
    "User: !<g>",
    "Human: !<q> --minor",
    "H: !<c> --incorrect",
    "A: <c>",
    "Assistant: <g>",
    "AI:",
    "Model: <o>",
    "**User:** !<o> --correct --<q>",
    "**Assistant:**",
    "## User",
    "### Claude",
    "You said:",
    "ChatGPT said:",
    "GPT-4o: <q>",
    "System: be brief",
    "!<e> --<g>",
    "!<e_o>",
    "!<o_f> --incorrect",
    "!<x>",
    "<q>",
    "<o_f>",
    "[Version=v1.4 | Tag=q_1 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=default]",
    "[Version=v1.5 | Tag=c_3 | Sources=web | Assumptions=2 | Cycle=2/3 | Locus=locus-2]",
    "[Version=v1.4 | Tag=<o>_<9> | Sources=<none> | Cycle=<3>/3]",
    "**[Version=v1.5 | Tag=g_99999999999999999999 | Cycle=9/3 | Locus=|]**",
    "[Version=",
    "```",
    "```json",
    "# Locus jump",
    '{"role": "user", "content": "!<g>"}',
    '[{"from": "human", "value": "!<q>"}]',
    '{"messages": [',
    "Escape options: !<e> --<g> !<e_o>",
    # session 14: timestamps, HTML-escaped tags, the setup snippet, exports
    "[10:42] User: !<q>",
    "Assistant (10:43 PM):",
    "User · 10:44",
    "[2024-05-01 10:42:07] ChatGPT:",
    "User: !&lt;o&gt;",
    "&lt;o&gt;",
    "Viable-Prompt Protocol:",
    '[{"title": "t", "current_node": "a", "mapping": {"a": {"parent": null, "message": {',
    '"author": {"role": "assistant"}, "content": {"content_type": "text", "parts": ["<q>"]}}}}}]',
    '{"mapping": {}, "current_node": null}',
    "",
    "body with ünïcødé ✓ and a very long line " + "x" * 300,
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(_FUZZ_LINES), max_size=14),
    st.sampled_from(["\n", "\r\n"]),
    st.booleans(),
    st.sampled_from(["1.4", "1.5"]),
)
def test_fuzz_any_transcript_gets_a_report_or_a_located_error(
    lines: list[str], newline: str, bom: bool, version: str
) -> None:
    text = ("\ufeff" if bom else "") + newline.join(lines)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.txt"
        path.write_bytes(text.encode("utf-8"))
        for argv in (
            ["check", "--version", version, str(path)],
            [
                "check",
                "--version",
                version,
                "--lenient",
                "--from-start",
                "--format",
                "json",
                str(path),
            ],
            ["repair", "--version", version, str(path)],
        ):
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(argv)
            assert code in (0, 1, 2), (argv, err.getvalue())
            assert "Traceback" not in err.getvalue()
            if code == 2:  # an input error names the file and the line
                assert re.match(rf"vpp: error: {re.escape(str(path))}:\d+: \S", err.getvalue())
            elif "--format" in argv:
                assert set(json.loads(out.getvalue())) == {"ok", "turns"}

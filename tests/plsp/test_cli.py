from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plsp.cli import main

EXAMPLES = Path(__file__).parents[2] / "examples" / "plsp"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_parse_prints_the_canonical_form(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "parse", "S{ $a:1 ; !wait , 500 ; }S") == (0, "S{$a:1;!wait,500;}S\n", "")


def test_parse_json_structure(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "parse", "--json", 'S{$a:"x";>$a,2;!go}S')
    data = json.loads(out)
    assert code == 0 and data["canonical"] == 'S{$a:"x";>$a,2;!go;}S'
    assert data["statements"] == [
        {"type": "assign", "name": "a", "value": {"type": "string", "text": "x"}},
        {"type": "log", "values": [{"type": "ref", "name": "a"}, {"type": "number", "text": "2"}]},
        {"type": "action", "name": "go", "params": []},
    ]


def test_parse_error_is_positioned_without_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "parse", "S{$a:1;\n$b # x}S")
    assert (code, out) == (1, "")
    assert err == "plsp: error: line 2, column 4: comments (#) are not allowed\n$b # x}S\n   ^\n"


def test_parse_instr_and_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run(capsys, "parse", "INSTR: @set:$a=1; @zz:q;")
    assert (code, out) == (0, "INSTR:@set:$a=1;@zz:q;\n")
    assert "warning: line 1, column 19: unknown directive @zz" in err
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"S{$a1:2}S\n")))
    code, out, err = run(capsys, "parse", "-")
    assert (code, out) == (0, "S{$a1:2;}S\n") and "extended identifier" in err
    # Bytes that are not UTF-8 are refused, not replaced (that would change the value).
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b'S{$a:"\xff";}S')))
    code, out, err = run(capsys, "parse", "-")
    assert (code, out) == (1, "") and "stdin is not UTF-8 text (byte 6 is invalid)" in err


def test_run_dry_run_then_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(EXAMPLES, tmp_path / "ex")
    trace = tmp_path / "trace.ndjson"
    code, out, _ = run(
        capsys, "run", str(tmp_path / "ex" / "thermostat.yaml"), "--dry-run", "--trace", str(trace)
    )
    assert code == 0
    assert "── cycle 5 ── accepted" in out and "PAGE op: boiler hot" in out
    assert '> ["hot", 83]' in out
    assert 'stopped (policy: stop_when $p=="hot" holds) after 5 cycles' in out
    assert len(trace.read_text().splitlines()) == 5
    code, out, _ = run(capsys, "check", str(trace))
    assert code == 0 and out.endswith("5 cycles, 0 failing\n")


def test_a_dry_run_without_trace_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's `plsp run examples/plsp/thermostat.yaml --dry-run`, run in a checkout,
    leaves the checkout as it was."""
    shutil.copytree(EXAMPLES, tmp_path / "ex")
    monkeypatch.chdir(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    code, out, _ = run(capsys, "run", "ex/thermostat.yaml", "--dry-run")
    assert code == 0 and "after 5 cycles" in out
    assert out.rstrip().endswith("no trace (a dry run: --trace PATH keeps one)")
    assert sorted(tmp_path.rglob("*")) == before
    # A run with a model (here the replies file) still writes the default trace.
    loop = tmp_path / "loop.yaml"
    loop.write_text("initial: '@set:$a=1;'\nmax_cycles: 1\nreplies: replies.ndjson\n")
    (tmp_path / "replies.ndjson").write_text('"S{$a:1}S"\n')
    code, out, _ = run(capsys, "run", "loop.yaml", "--quiet")
    assert code == 0 and out.rstrip().endswith("trace loop.trace.ndjson")
    assert len((tmp_path / "loop.trace.ndjson").read_text().splitlines()) == 1


def test_run_with_replies_file_re_asks_and_check_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loop = tmp_path / "loop.yaml"
    loop.write_text(
        "initial: '@set:$a=1;'\notherwise: '@upd:$a=2;'\nmax_cycles: 2\nreplies: replies.ndjson\n"
    )
    replies = ["Here: S{$a:1}S", "S{$a:1}S", "S{$a:1}S", {"reply": "S{$a:1}S"}]
    (tmp_path / "replies.ndjson").write_text("\n".join(json.dumps(r) for r in replies))
    trace = tmp_path / "t.ndjson"
    code, out, _ = run(capsys, "run", str(loop), "--trace", str(trace), "--quiet")
    # The second cycle is rejected: the run ends on a rejected reply, so it exits 1.
    assert code == 1 and "stopped (max_cycles) after 2 cycles; state S{$a:1;}S" in out
    assert "── cycle" not in out
    code, out, _ = run(capsys, "check", str(trace))
    assert code == 1
    assert "line 2 cycle 2: FAIL" in out and "! wrong_value: $a is 1, expected 2" in out


def test_run_errors_are_messages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "run", str(tmp_path / "missing.yaml"), "--dry-run")
    assert code == 2 and err.startswith("plsp: error: ") and "No such file" in err
    loop = tmp_path / "loop.yaml"
    loop.write_text("initial: '@set:$a=1;'\n")
    code, _, err = run(
        capsys,
        "run",
        str(loop),
        "--replies",
        str(tmp_path / "none.json"),
        "--trace",
        str(tmp_path / "t.ndjson"),
    )
    assert code == 2 and "none.json" in err
    (tmp_path / "r.json").write_text("[]")
    code, _, err = run(
        capsys,
        "run",
        str(loop),
        "--replies",
        str(tmp_path / "r.json"),
        "--trace",
        str(tmp_path / "t.ndjson"),
    )
    assert code == 2 and "all 0 replies are used up" in err and "Traceback" not in err


@pytest.mark.parametrize("where", ["folder", "missing/t.ndjson"])
def test_run_unwritable_trace_names_the_path(
    where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loop = tmp_path / "loop.yaml"
    loop.write_text("initial: '@set:$a=1;'\nmax_cycles: 1\n")
    (tmp_path / "folder").mkdir()
    trace = tmp_path / where
    code, out, err = run(capsys, "run", str(loop), "--dry-run", "--trace", str(trace))
    assert code == 2 and out == ""
    assert err.startswith(f"plsp: error: {trace}: ") and "Errno" not in err


def test_run_binary_inputs_name_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    binary = tmp_path / "b.yaml"
    binary.write_bytes(b"\xb1\xff\x00initial")
    code, _, err = run(capsys, "run", str(binary), "--dry-run")
    assert (code, err) == (2, f"plsp: error: {binary}:1:1: not UTF-8 text (byte 0xb1)\n")
    loop = tmp_path / "loop.yaml"
    loop.write_text("initial: '@set:$a=1;'\n")
    code, _, err = run(
        capsys, "run", str(loop), "--replies", str(binary), "--trace", str(tmp_path / "t.ndjson")
    )
    assert (code, err) == (2, f"plsp: error: {binary}:1:1: not UTF-8 text (byte 0xb1)\n")


@pytest.mark.parametrize("bad", ["0", "-3", "x"])
def test_run_max_cycles_must_be_positive(
    bad: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loop = tmp_path / "loop.yaml"
    loop.write_text("initial: '@set:$a=1;'\nrules: [{instr: '@set:$a=2;'}]\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["run", str(loop), "--dry-run", "--max-cycles", bad])
    assert exit_info.value.code == 2
    assert "--max-cycles" in capsys.readouterr().err
    code, out, _ = run(
        capsys,
        "run",
        str(loop),
        "--dry-run",
        "--quiet",
        "--max-cycles",
        "1",
        "--trace",
        str(tmp_path / "t.ndjson"),
    )
    assert code == 0 and "after 1 cycles" in out


def test_check_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "check", str(tmp_path / "absent.ndjson"))
    assert code == 2 and err.startswith("plsp: error: ")


def test_check_rejects_binary_and_mistyped_traces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    binary = tmp_path / "b.ndjson"
    binary.write_bytes(b'{"cycle": 1}\n\xb1\xff\x00')
    code, _, err = run(capsys, "check", str(binary))
    assert (
        code == 2 and "b.ndjson:2:1: not UTF-8 text (byte 0xb1)" in err and "Traceback" not in err
    )
    record = {
        "cycle": 1,
        "instr": "INSTR:@set:$a=1;",
        "previous": "S{}S",
        "reply": "S{$a:1;}S",
        "next": "S{$a:1;}S",
        "accepted": True,
    }
    good = tmp_path / "g.ndjson"
    good.write_text(json.dumps(record) + "\n")
    assert run(capsys, "check", str(good))[0] == 0
    for key, bad in (("accepted", "false"), ("reply", None), ("instr", 5), ("next", 1)):
        path = tmp_path / f"{key}.ndjson"
        path.write_text(json.dumps({**record, key: bad}) + "\n")
        code, _, err = run(capsys, "check", str(path))
        assert code == 2 and f"wrong type for ['{key}']" in err


def test_console_script_is_wired() -> None:
    script = Path(sys.executable).parent / "plsp"
    done = subprocess.run(
        [str(script), "parse", "S{$a:01}S"], capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout) == (0, "S{$a:1;}S\n")


def test_replies_demo_shows_each_re_ask(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(EXAMPLES, tmp_path / "ex")
    code, out, _ = run(
        capsys,
        "run",
        str(tmp_path / "ex" / "thermostat.yaml"),
        "--replies",
        str(tmp_path / "ex" / "thermostat.replies.ndjson"),
        "--trace",
        str(tmp_path / "t.ndjson"),
    )
    assert code == 0 and 'stopped (policy: stop_when $p=="hot" holds) after 5 cycles' in out
    assert out.count("accepted after 2 attempts") == 3
    assert '! dropped_variable: $u is missing (expected "op")' in out
    assert (
        "! stray_text: line 1, column 1: text outside the block: 'Here is the next state:'" in out
    )
    assert '! unrequested_action: !reboot,"boiler" was not signalled by the instruction' in out
    assert "!reboot [" not in out  # never run: action lines read "!name [args] -> ..."
    assert "!wait [200] -> ok 200" in out


def test_parse_refuses_an_argument_that_is_not_utf8(capsys: pytest.CaptureFixture[str]) -> None:
    # Undecodable argv bytes reach Python as lone surrogates; they must not be echoed
    # back as if they were a value.
    code, out, err = run(capsys, "parse", 'S{$a:"\udcff"}S')
    assert (code, out) == (1, "")
    assert err == "plsp: error: the argument is not UTF-8 text (character 7 is invalid)\n"


def test_check_a_directory_is_a_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "check", str(tmp_path)) == (
        2,
        "",
        f"plsp: error: {tmp_path}: Is a directory\n",
    )


_CRASH = re.compile(
    r"Traceback|error: (TypeError|KeyError|AttributeError|IndexError|"
    r"AssertionError|RecursionError|UnboundLocalError)"
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.one_of(
        st.binary(max_size=120),
        st.text(alphabet="initalrusgoxwhen:[]{}-\"'$@=;,!>#\n 0123", max_size=120).map(str.encode),
    )
)
def test_fuzz_cli_inputs_never_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: bytes
) -> None:
    trace = str(tmp_path / "t.ndjson")
    for name, argv in (
        ("f.yaml", ["run", "--dry-run", "--quiet", "--trace", trace]),
        ("f.toml", ["run", "--dry-run", "--quiet", "--trace", trace]),
        ("f.ndjson", ["check"]),
    ):
        path = tmp_path / name
        path.write_bytes(data)
        code = main([*argv, str(path)])
        err = capsys.readouterr().err
        assert code in (0, 1, 2) and not _CRASH.search(err), err
    text = data.decode("utf-8", errors="surrogateescape")
    code = main(["parse", "--", text if text != "-" else "--"])  # "-" would read stdin
    assert code in (0, 1) and not _CRASH.search(capsys.readouterr().err)


def test_run_says_why_the_policy_stopped_and_takes_one_model_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loop = tmp_path / "loop.yaml"
    loop.write_text("initial: '@set:$a=1;'\nrules: [{when: '$a<1', instr: '@upd:$a=2;'}]\n")
    code, out, _ = run(
        capsys, "run", str(loop), "--dry-run", "--quiet", "--trace", str(tmp_path / "t.ndjson")
    )
    assert code == 0
    assert "stopped (policy: no rule matched and there is no 'otherwise') after 1 cycles" in out
    with pytest.raises(SystemExit) as exit_info:
        main(["run", str(loop), "--dry-run", "--provider", "local"])
    assert exit_info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_run_on_a_terminal_shows_a_status_line_while_the_model_answers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    loop = tmp_path / "loop.yaml"
    loop.write_text("initial: '@set:$a=1;'\n")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    code, out, _ = run(capsys, "run", str(loop), "--dry-run", "--trace", str(tmp_path / "t.ndjson"))
    assert code == 0
    assert out.startswith("  ... asking the model (request 1)\r\x1b[2K── cycle 1 ── accepted")


def test_deeply_nested_inputs_are_messages(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000)
    assert run(capsys, "check", str(deep)) == (
        2,
        "",
        f"plsp: error: {deep}:1: nested too deeply to read\n",
    )
    loop = tmp_path / "loop.yaml"
    loop.write_text("initial: '@set:$a=1;'\n")
    code, _, err = run(
        capsys, "run", str(loop), "--replies", str(deep), "--trace", str(tmp_path / "t.ndjson")
    )
    assert (code, err) == (2, f"plsp: error: {deep}: nested too deeply to read\n")
    deep_yaml = tmp_path / "deep.yaml"
    deep_yaml.write_text("a: " + "[" * 100_000)
    code, _, err = run(capsys, "run", str(deep_yaml), "--dry-run")
    assert (code, err) == (2, f"plsp: error: {deep_yaml}: nested too deeply to read\n")


def test_output_survives_a_terminal_that_is_not_utf8(tmp_path: Path) -> None:
    # Box-drawing rules and non-ASCII state used to end in a UnicodeEncodeError traceback.
    import os

    shutil.copytree(EXAMPLES, tmp_path / "ex")
    env = dict(os.environ, PYTHONIOENCODING="ascii")
    for argv in (
        ["parse", 'S{$a:"caf\u00e9";}S'],
        [
            "run",
            str(tmp_path / "ex" / "thermostat.yaml"),
            "--dry-run",
            "--trace",
            str(tmp_path / "t.ndjson"),
        ],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "plsp.cli", *argv],
            capture_output=True,
            env=env,
            check=False,
            timeout=60,
        )
        assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    assert done.stdout.startswith(b"\\u2500\\u2500 cycle 1 \\u2500\\u2500 accepted")


@pytest.mark.parametrize("command", ["check", "run"])
def test_devices_fifos_and_directories_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in ("/dev/zero", str(fifo)):
        argv = [command, path] + (["--dry-run"] if command == "run" else [])
        assert main(argv) == 2
        assert "not a regular file" in capsys.readouterr().err


def test_check_bounds_long_integers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.ndjson"
    record = '{"cycle": %s, "instr": "INSTR:@set:$a=1;", "previous": "S{}S", "reply": "S{}S", "accepted": true}'
    trace.write_text(record % ("9" * 5000) + "\n")
    assert main(["check", str(trace)]) == 2
    assert "5,000 digits" in capsys.readouterr().err


def test_parse_neutralises_terminal_escapes(capsys: pytest.CaptureFixture[str]) -> None:
    main(["parse", 'S{ $a: "x\x1b[31mred\u202e\x9b"; }S'])
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out and "\x9b" not in out
    assert "\\x1b[31m" in out
    main(["parse", 'S{ $a = "\x1b]0;title\x07" }S'])
    assert "\x1b" not in capsys.readouterr().err


def test_parse_reads_the_seeds_example_instruction(capsys: pytest.CaptureFixture[str]) -> None:
    seed = 'INSTR: @set:$p="run"; @upd:$t=val; @if:cond? then:else; @sig:!act;'
    code, out, err = run(capsys, "parse", seed)
    assert (code, out) == (0, 'INSTR:@set:$p="run";@upd:$t=val;@if:cond? then:else;@sig:!act;\n')
    assert err.count("passed through verbatim") == 2
    code, out, err = run(capsys, "parse", "--strict", seed)
    assert code == 1 and "column 31" in err

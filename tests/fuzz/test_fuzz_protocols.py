"""0 tracebacks: every protocol parser and CLI file argument on mutated corpora.

Each target may refuse an input only in its documented way (an error value, a usage
error, a non-zero exit); any other exception fails the test with the input that caused it.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from hypothesis import HealthCheck, given, settings

import plsp.cli
import vlp
import vlp.cli
import vpp.cli
from plsp.diagnostics import ParseError
from plsp.instr import parse_instr
from plsp.loopfile import LoopFileError, load_loop
from plsp.syntax import parse as parse_block
from plsp.trace import TraceError, check_trace
from tests.fuzz.conftest import CLI_EXAMPLES, DERANDOMIZED_UP_TO, EXAMPLES, count_input
from tests.fuzz.mutations import corpus, mutated, text
from vlp.render import render_thread
from vpp import parse_command, validate_transcript
from vpp.transcript import TranscriptError, read_transcript

_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large]
# CI's budget tries the same inputs every run; a larger budget (the long run) random ones.
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize=EXAMPLES <= DERANDOMIZED_UP_TO,
    suppress_health_check=_HEALTH,
)
FUZZ_CLI = settings(FUZZ, max_examples=CLI_EXAMPLES, derandomize=CLI_EXAMPLES <= DERANDOMIZED_UP_TO)

VLP_SEEDS = corpus("thread.*")
VPP_SEEDS = corpus("chat-*")
PLSP_BLOCKS = [
    line.split(b'"', 1)[-1].rsplit(b'"', 1)[0].replace(b'\\"', b'"')
    for line in corpus("*.replies.ndjson")[0].splitlines()
] + corpus("*.trace.ndjson")
PLSP_FILES = corpus("*.yaml", "*.toml", "*.trace.ndjson")


def cli(main: Callable[[list[str]], int], argv: list[str], allowed: tuple[int, ...]) -> None:
    """Run a CLI in process: it must exit with an allowed code, never raise."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as done:  # argparse usage errors
            code = done.code if isinstance(done.code, int) else 2
    assert code in allowed, (argv, code, err.getvalue()[-2000:])
    assert "Traceback" not in err.getvalue()


def with_file(data: bytes, suffix: str, run: Callable[[str], None]) -> None:
    with tempfile.TemporaryDirectory(prefix="fuzz-") as folder:
        path = os.path.join(folder, "input" + suffix)
        Path(path).write_bytes(data)
        run(path)


# --- VLP -------------------------------------------------------------------------------


@FUZZ
@given(mutated(VLP_SEEDS))
def test_vlp_readers_and_views(data: bytes) -> None:
    count_input()
    checker = vlp.ThreadChecker()
    problems: list[vlp.Problem] = []
    vlp.scan(io.BytesIO(data), problems.append, thread=checker)
    checker.finish()
    records = list(vlp.read_records(io.BytesIO(data)))
    thread = vlp.Thread(
        [r.message for r in records if r.message is not None],
        [r.line for r in records if r.message is not None],
    )
    render_thread(thread)
    vlp.gate(thread)
    for record in records:
        vlp.validate_vlp(record.message)


@FUZZ_CLI
@given(mutated(VLP_SEEDS))
def test_vlp_cli(data: bytes) -> None:
    count_input()

    def run(path: str) -> None:
        cli(vlp.cli.main, ["validate", path], (0, 1))
        cli(vlp.cli.main, ["validate", "--format", "json", path], (0, 1))
        cli(vlp.cli.main, ["show", path], (0,))
        cli(vlp.cli.main, ["gate", path], (0, 3, 4))

    with_file(data, ".ndjson", run)


# --- VPP -------------------------------------------------------------------------------


@FUZZ
@given(mutated(VPP_SEEDS))
def test_vpp_reader_and_checker(data: bytes) -> None:
    count_input()
    source = text(data)
    for version in ("1.4", "1.5"):
        parse_command(source, version)
    try:
        transcript = read_transcript(source)
    except TranscriptError:
        return
    for version in ("1.4", "1.5"):
        validate_transcript(transcript, version, repair=True)
        validate_transcript(transcript, version, strict=False)


@FUZZ_CLI
@given(mutated(VPP_SEEDS))
def test_vpp_cli(data: bytes) -> None:
    count_input()

    def run(path: str) -> None:
        for version in ("1.4", "1.5"):
            cli(vpp.cli.main, ["check", "--version", version, path], (0, 1, 2))
            cli(vpp.cli.main, ["repair", "--version", version, path], (0, 1, 2))
        cli(vpp.cli.main, ["check", "--format", "json", path], (0, 1, 2))

    with_file(data, ".txt", run)


# --- PLSP ------------------------------------------------------------------------------


@FUZZ
@given(mutated(PLSP_BLOCKS))
def test_plsp_parsers(data: bytes) -> None:
    count_input()
    source = text(data)
    for parser in (parse_block, parse_instr):
        try:
            parsed = parser(source)
        except ParseError as error:
            error.excerpt()
        else:
            parsed.dumps()
    cli(plsp.cli.main, ["parse", source], (0, 1, 2))
    cli(plsp.cli.main, ["parse", "--json", source], (0, 1, 2))


@FUZZ_CLI
@given(mutated(PLSP_FILES))
def test_plsp_files(data: bytes) -> None:
    count_input()

    def run(path: str) -> None:
        try:
            check_trace(path)
        except (TraceError, OSError):
            pass
        for suffix in (".yaml", ".toml"):
            loop_path = Path(path).with_suffix(suffix)
            loop_path.write_bytes(data)
            try:
                load_loop(loop_path)
            except LoopFileError:
                pass
        cli(plsp.cli.main, ["check", path], (0, 1, 2))

    with_file(data, ".ndjson", run)

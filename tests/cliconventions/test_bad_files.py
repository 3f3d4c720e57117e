"""Every command of the four CLIs that reads a file the user names, given a file it cannot
use — missing, a folder, binary (not UTF-8), far too large — says so in one line that starts
with the tool's name and names the file (with line and column where a byte is to blame),
exits with the documented status, and prints no traceback. Real processes, real files (the
large one is sparse)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.commands import run_tool

# tool, arguments before the file, and the status for a file whose content is unusable
# (binary): 2 where the file cannot be taken at all, 1 where a validator reports it as a
# problem of the input (VLP001 per line).
COMMANDS = [
    ("prose", ["check"], 1),  # E100 at its line:col: a diagnostic like any other
    ("prose", ["compile"], 1),
    ("prose", ["fmt", "--check"], 1),
    ("prose", ["run", "--provider", "scripted:rules.yaml"], 2),
    ("prose", ["install"], 2),
    ("prose", ["batch", "p.prose", "--provider", "scripted:rules.yaml"], 1),  # invalid cases
    ("vlp", ["validate"], 1),
    ("vlp", ["show"], 0),  # shows what it can, the problems on stderr
    ("vpp", ["check"], 2),
    ("vpp", ["repair"], 2),
    ("plsp", ["check"], 2),
    ("plsp", ["run", "--dry-run"], 2),
]


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "p.prose").write_text('input topic: "t"\nsession "About {topic}"\n')
    (tmp_path / "rules.yaml").write_text('default: "ok"\n')
    (tmp_path / "folder").mkdir()
    (tmp_path / "binary").write_bytes(b'{"a": 1}\n\xff\xfe\x00\x9c garbage\n')
    with (tmp_path / "huge").open("wb") as huge:
        huge.truncate(2 * 1024**3)  # sparse: a log or data file named by mistake
    return tmp_path


@pytest.mark.parametrize(("tool", "before", "binary_status"), COMMANDS)
@pytest.mark.parametrize("kind", ["missing", "folder", "binary", "huge"])
def test_a_file_that_cannot_be_used_is_one_line_naming_it(
    tool: str, before: list[str], binary_status: int, kind: str, files: Path
) -> None:
    where = 2 if before[0] == "batch" else len(before)  # batch: PROGRAM then the cases file
    done = run_tool(tool, *before[:where], kind, *before[where:], cwd=files)
    said = done.stdout + done.stderr
    assert "Traceback" not in said and "internal error" not in said, said
    expected = binary_status if kind == "binary" else 2
    if kind == "huge" and tool == "vlp":
        expected = 0 if before == ["show"] else 1  # VLP003: a line over the limit, skipped
    if kind == "huge" and before[0] == "batch":
        expected = 1  # its one line is over the 16 MiB line limit: an invalid case
    if kind == "folder" and tool == "prose" and before[0] in ("check", "fmt"):
        expected = 0  # a folder is walked for programs (none here), as ruff walks one
    assert done.returncode == expected, said
    if expected == 0:
        return
    assert kind in said, said  # the file is named
    named = [line for line in said.splitlines() if kind in line]
    if kind == "binary" and tool != "vlp":  # where the first bad byte is, as path:line:col
        assert any(f"{kind}:2:" in line or f"{kind}:1:" in line for line in named), said
    if done.stderr.strip() and expected == 2:
        first = done.stderr.strip().splitlines()[-1]
        assert first.startswith((f"{tool}: ", f"{tool} ")) or ":" in first, said


def test_an_unreachable_provider_is_one_line_naming_it_once(tmp_path: Path) -> None:
    """`vlp ask` and `vpp chat` against a port nothing listens on: exit 3, the provider's
    own message (it starts with the provider's name: not repeated)."""
    import os
    import socket

    with socket.socket() as probe:  # a port that was free a moment ago: refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (tmp_path / "prose.toml").write_text("[retry]\nmax_attempts = 1\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROSE_", "OPENAI_"))}
    env.update(OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1", OPENAI_API_KEY="sk-test-refused")
    env.pop("ANTHROPIC_API_KEY", None)
    for tool, argv in (("vlp", ["ask", "hello"]), ("vpp", ["chat"])):
        done = run_tool(tool, *argv, cwd=tmp_path, env=env, stdin="!<g>\nhello\n")
        assert done.returncode == 3, done.stderr
        line = done.stderr.strip().splitlines()[-1]
        assert line.startswith(f"{tool} {argv[0]}: openai (model "), line
        assert "cannot connect to the server" in line and "openai: openai" not in line

"""Issue 17, item 9: escape sequences from models, inputs and run folders are shown, not
obeyed, when `prose run` and `prose show` print to a terminal; piped output keeps them."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from openprose.cli import main
from openprose.terminal import neutralise
from tests.support.events import feed

HOSTILE = "title\x1b]0;pwned\x07 clear\x1b[2J bell\x07 c1\x9b31m done"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_neutralise_shows_every_control_but_newline_and_tab() -> None:
    shown = neutralise(HOSTILE + "\n\tnext")
    assert "\x1b" not in shown and "\x07" not in shown and "\x9b" not in shown
    assert "\\x1b]0;pwned\\x07" in shown and "\\x9b31m" in shown
    assert shown.endswith("\n\tnext")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROSE_PROVIDER", raising=False)
    (tmp_path / "p.prose").write_text('output o = session "Say it"\n')
    answer = HOSTILE.encode("unicode_escape").decode()
    (tmp_path / "rules.yaml").write_text(f'default: "{answer}"\n')
    return tmp_path


@pytest.mark.parametrize("tty", [True, False])
def test_run_and_show_neutralise_model_output_on_a_terminal_only(
    project: Path, monkeypatch: pytest.MonkeyPatch, tty: bool
) -> None:
    for command in (["run", "p.prose", "--provider", "scripted:rules.yaml"], ["show", ""]):
        out = Terminal() if tty else io.StringIO()
        monkeypatch.setattr(sys, "stdout", out)
        if command[0] == "show":
            command[1] = next((project / ".prose" / "runs").iterdir()).name
        assert main(command) == 0
        printed = out.getvalue()
        assert "pwned" in printed
        if tty:
            assert "\x1b" not in printed and "\x07" not in printed and "\x9b" not in printed
        else:
            assert "\x1b]0;pwned\x07" in printed  # piped: the real bytes


def test_the_live_views_answer_column_shows_controls_and_markup_as_text() -> None:
    from rich.console import Console

    from openprose.vm.progress import LiveView

    view = LiveView()
    feed(view, "session_started", "1", {"agent": "writer", "model": "opus"})
    view.answer_text("1", "clear\x1b[2J [bold red]loud[/] \u202eevil")
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(view._render())
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "clear\\x1b[2J [bold red]loud[/] \\u202eevil" in text
    assert "\x1b" not in text and "\u202e" not in text

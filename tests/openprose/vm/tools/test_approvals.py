"""The terminal prompt: shows the exact action, re-asks on a bad answer, EOF denies."""

from __future__ import annotations

import io

import pytest

from openprose.vm.tools.approvals import ApprovalRequest, TerminalApprover

REQUEST = ApprovalRequest("3~t0.0:bash", "bash", "rm -rf build", "run_command", "builder")


@pytest.mark.parametrize(
    ("typed", "answer"),
    [("y\n", "once"), ("maybe\na\n", "run"), ("n\n", "deny"), ("", "deny")],
)
async def test_terminal_answers(
    typed: str, answer: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(typed))
    held: list[str] = []

    class Hold:
        def __enter__(self) -> None:
            held.append("paused")

        def __exit__(self, *exc: object) -> None:
            held.append("resumed")

    approver = TerminalApprover()
    approver.hold = Hold
    assert await approver.ask(REQUEST) == answer
    shown = capsys.readouterr().err
    assert "agent builder wants to run the shell command rm -rf build" in shown
    assert "[a] allow for this run" in shown
    assert held == ["paused", "resumed"]

"""VPP 1.5: a two-message exchange checked alone is the start of a conversation, as the
1.5 reference runtime checks it; `--after FOOTER` says where a continued one starts
(issue 34)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vpp import validate_transcript
from vpp.audit import INFERRED_START
from vpp.cli import main


def footer(tag: str, cycle: int = 1, locus: str = "default") -> str:
    return (
        f"[Version=v1.5 | Tag={tag} | Sources=none | Assumptions=0 | Cycle={cycle}/3 | "
        f"Locus={locus}]"
    )


def exchange(user: str, tag: str, field: str, cycle: int = 1, locus: str = "default") -> list:
    reply = f"<{tag}>\nWhich city?\n{footer(field, cycle, locus)}"
    return [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]


def codes(turns: list, **options: object) -> list[str]:
    result = validate_transcript(turns, "1.5", **options)  # type: ignore[arg-type]
    return [v.code for v in result.violations]


@pytest.mark.parametrize(
    ("field", "cycle", "locus", "code"),
    [
        ("q_3", 1, "default", "footer-tag-mismatch"),
        ("q_1", 2, "default", "cycle-mismatch"),
        ("q_1", 1, "research", "locus-mismatch"),
    ],
)
def test_a_lone_exchange_is_checked_from_a_fresh_start(
    field: str, cycle: int, locus: str, code: str
) -> None:
    turns = exchange("!<q>", "q", field, cycle, locus)
    assert codes(turns) == [code]
    result = validate_transcript(turns, "1.5")
    assert not any(n.code == INFERRED_START for t in result.turns for n in t.notes)
    assert codes(turns, from_start=False) == []  # said to be an excerpt: inferred


def test_a_wrong_reply_tag_reports_the_wrapper_and_the_footer() -> None:
    assert codes(exchange("!<q>", "g", "g_1")) == ["tag-mismatch", "footer-tag-mismatch"]
    assert codes(exchange("!<q>", "q", "q_1")) == []


def test_a_longer_transcript_without_its_start_is_still_an_excerpt() -> None:
    turns = exchange("!<q>", "q", "q_3", 2) + exchange("!<g>", "g", "g_2", 2)
    result = validate_transcript(turns, "1.5")
    assert result.ok
    assert result.turns[1].notes[0].code == INFERRED_START


def test_after_gives_the_state_a_continued_transcript_starts_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.txt"
    reply = f"<q>\nWhich city?\n{footer('q_3', 2, 'research')}"
    path.write_text(f"USER: !<q>\nASSISTANT: {reply}\n")
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert "footer-tag-mismatch" in out and "cycle-mismatch" in out and "locus-mismatch" in out
    after = footer("q_2", 2, "research")
    assert main(["check", "--after", after, str(path)]) == 0
    assert "compliant with VPP 1.5" in capsys.readouterr().out
    assert main(["check", "--after", footer("g_2", 2, "research"), str(path)]) == 1
    assert "Expected Tag=q_1" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("after", "says"),
    [
        ("no footer", "--after: not a VPP footer"),
        ("[Version=v1.5 | Sources=none | Cycle=1/3]", "--after: the footer needs a Tag="),
    ],
)
def test_a_bad_after_is_a_usage_error_of_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], after: str, says: str
) -> None:
    path = tmp_path / "t.txt"
    path.write_text(f"USER: !<q>\nASSISTANT: <q>\nx\n{footer('q_1')}\n")
    assert main(["check", "--after", after, str(path)]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1 and "Traceback" not in err
    with pytest.raises(SystemExit) as exited:
        main(["check", "--after", footer("q_1"), "--from-start", str(path)])
    assert exited.value.code == 2

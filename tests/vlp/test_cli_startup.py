"""`vlp validate` builds the parser of every command: building it must not load what only
`vlp ask` runs (the asking machinery, message making)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import vlp

SRC = str(Path(vlp.__file__).resolve().parents[1])


def test_building_the_parser_leaves_the_ask_machinery_unloaded() -> None:
    code = (
        "import sys, vlp.cli; vlp.cli.build_parser(); "
        "print(sorted({'vlp.ask', 'vlp.message'} & set(sys.modules)))"
    )
    env = {**os.environ, "PYTHONPATH": SRC}  # this tree's code, not an installed copy
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == "[]"


def test_the_ask_command_still_offers_the_askable_types() -> None:
    from vlp.ask import ASKABLE_TYPES
    from vlp.cli import build_parser

    args = build_parser().parse_args(["ask", "why?", "--type", ASKABLE_TYPES[-1]])
    assert args.type == ASKABLE_TYPES[-1]
    assert "session_context" not in ASKABLE_TYPES


def test_validating_leaves_pathlib_and_pickle_unloaded(tmp_path: Path) -> None:
    # Start-up is most of a small `vlp validate`: pathlib (~17 M instructions) and pickle
    # (workers only) are loaded where they are used (docs/decisions.md, vlp35h).
    empty = tmp_path / "empty.ndjson"
    empty.touch()
    code = (
        "import sys, vlp.cli\n"
        f"code = vlp.cli.main(['validate', '--jobs', '1', {str(empty)!r}])\n"
        "print(code, sorted({'pathlib', 'pickle'} & set(sys.modules)))"
    )
    env = {**os.environ, "PYTHONPATH": SRC}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.splitlines()[-1] == "0 []"

from __future__ import annotations

from pathlib import Path

import pytest

RULES = """default: "ok"
rules:
  - match: "Write about fail"
    answer: "never"
    failures: [error, error, error, error, error, error]
"""

PROGRAM = """input topic: "what to write about"
let text = session "Write about {topic}"
output answer = text
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROSE_PROVIDER", raising=False)
    (tmp_path / "rules.yaml").write_text(RULES)
    (tmp_path / "p.prose").write_text(PROGRAM)
    return tmp_path

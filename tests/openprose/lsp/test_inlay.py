"""Inlay hints: an import's expected inputs, the model an alias resolves to."""

from __future__ import annotations

from pathlib import Path

from openprose.lsp.documents import Documents
from openprose.lsp.inlay import inlay_hints, project_models

TEXT = """\
use "./research.prose" as research
use "./nothing.prose" as nothing
agent writer:
  model: sonnet
"""


def _hints(folder: Path, resolve: dict[str, str]) -> list[tuple[int, int, str]]:
    store = Documents()
    analysis = store.update((folder / "main.prose").as_uri(), TEXT, 1)
    found = inlay_hints(store, analysis, (0, len(TEXT)), resolve.get)
    return [(h.position.line, h.position.character, str(h.label)) for h in found]


def test_an_import_shows_its_inputs_and_an_alias_its_model(tmp_path: Path) -> None:
    (tmp_path / "research.prose").write_text(
        'input topic: "what"\ninput depth: "how deep"\noutput s = session "s"\n', encoding="utf-8"
    )
    hints = _hints(tmp_path, {"sonnet": "claude-x (anthropic)"})
    assert hints == [
        (0, len('use "./research.prose" as research'), "inputs: topic, depth"),
        (3, len("  model: sonnet"), "→ claude-x (anthropic)"),
    ]


def test_no_hint_where_nothing_is_known(tmp_path: Path) -> None:
    assert _hints(tmp_path, {}) == []  # no file to read, no provider configured


def test_project_models_follow_the_project_settings(tmp_path: Path) -> None:
    (tmp_path / "prose.toml").write_text(
        'provider = "openai"\n[providers.openai.models]\nsonnet = "my-model"\n', encoding="utf-8"
    )
    resolve = project_models(tmp_path)
    assert resolve("sonnet") == "my-model (openai)"
    assert resolve("haiku") == "gpt-4.1-nano (openai)"


def test_broken_settings_resolve_nothing(tmp_path: Path) -> None:
    (tmp_path / "prose.toml").write_text('provider = "no-such-provider"\n', encoding="utf-8")
    assert project_models(tmp_path)("sonnet") is None

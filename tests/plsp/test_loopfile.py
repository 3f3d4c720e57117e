from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml  # type: ignore[import-untyped]
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plsp.instr import parse_instr
from plsp.loopfile import _TOP_KEYS, LoopFileError, load_loop, result_literal
from plsp.middleware import CycleRecord, PolicyContext
from plsp.syntax import Num, Str, parse

EXAMPLES = Path(__file__).parents[2] / "examples" / "plsp"


def record(accepted: bool = True, actions: list[tuple[str, object]] | None = None) -> CycleRecord:
    from plsp.actions import ActionResult

    results = [ActionResult(name, (), True, value) for name, value in actions or []]
    return CycleRecord(
        1, "INSTR:", "S{}S", [], "S{}S" if accepted else None, accepted, actions=results
    )


def write(tmp_path: Path, text: str, name: str = "loop.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_thermostat_examples_load_the_same_in_yaml_and_toml() -> None:
    yaml_spec = load_loop(EXAMPLES / "thermostat.yaml")
    toml_spec = load_loop(EXAMPLES / "thermostat.toml")
    assert yaml_spec.initial == toml_spec.initial
    assert [r.ran for r in yaml_spec.rules] == [r.ran for r in toml_spec.rules] == [("fetch",)]

    def filled(template: str) -> str:
        return parse_instr(
            "INSTR:" + template.replace("{fetch}", "1").replace("{cycle}", "2")
        ).dumps()

    assert filled(yaml_spec.rules[0].template) == filled(toml_spec.rules[0].template)
    assert yaml_spec.max_cycles == 10 and yaml_spec.stop_when == toml_spec.stop_when


def test_policy_first_rules_then_stop(tmp_path: Path) -> None:
    spec = load_loop(
        write(
            tmp_path,
            """
initial: '@set:$t=0;@sig:!fetch,"s.txt";'
rules:
  - when: ran:fetch
    instr: '@set:$t={fetch};@sig:!fetch,"s{cycle}.txt";'
  - when: '$t>80'
    instr: '@sig:!page,"op","hot";'
stop_when: '$t>=90'
""",
        )
    )
    first = spec(PolicyContext(1, parse("S{}S"), None))
    assert first == parse_instr('INSTR:@set:$t=0;@sig:!fetch,"s.txt";')
    cool = spec(PolicyContext(2, parse("S{$t:0}S"), record(actions=[("fetch", "85\n")])))
    assert cool is not None and cool.dumps() == 'INSTR:@set:$t=85;@sig:!fetch,"s2.txt";'
    hot = spec(PolicyContext(3, parse("S{$t:85}S"), record(actions=[("fetch", "88")])))
    assert (
        hot is not None
        and hot.dumps() == 'INSTR:@set:$t=88;@sig:!fetch,"s3.txt";@sig:!page,"op","hot";'
    )
    assert spec(PolicyContext(4, parse("S{$t:95}S"), record(actions=[("fetch", "1")]))) is None


def test_rejected_cycle_repeats_the_instruction(tmp_path: Path) -> None:
    spec = load_loop(write(tmp_path, "initial: '@set:$a=1;'\n"))
    first = spec(PolicyContext(1, parse("S{}S"), None))
    assert spec(PolicyContext(2, parse("S{}S"), record(accepted=False))) == first
    assert spec(PolicyContext(3, parse("S{$a:1}S"), record())) is None  # no rule matches


def test_otherwise_is_used_when_no_rule_matches(tmp_path: Path) -> None:
    spec = load_loop(
        write(
            tmp_path,
            "initial: 'INSTR:@set:$a=1;'\n"
            "rules: [{when: '$a==2', instr: '@set:$a=3;'}]\n"
            "otherwise: '@upd:$a=2;'\n",
        )
    )
    spec(PolicyContext(1, parse("S{}S"), None))
    nxt = spec(PolicyContext(2, parse("S{$a:1}S"), record()))
    assert nxt is not None and nxt.dumps() == "INSTR:@upd:$a=2;"


def test_string_results_become_string_literals() -> None:
    assert result_literal("fetch", " 7.50 ") == Num("7.5")
    assert result_literal("fetch", "warm") == Str("warm")
    with pytest.raises(LoopFileError, match="cannot be inserted"):
        result_literal("fetch", 'say "hi"')


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("rules: []\n", "'initial' (the first INSTR:) is required"),
        ("initial: '@set:$a=1'\n", "initial: line 1, column 16: expected ';' after the directive"),
        ("initial: '@set:$a=1;'\nbogus: 1\n", "unknown keys ['bogus']"),
        ("1: x\ninitial: '@set:$a=1;'\nbogus: 1\n", "unknown keys ['1', 'bogus']"),
        ("initial: '@set:$a=1;'\nactions: {1: {}}\n", "actions.1: expected one of"),
        (
            "initial: '@set:$a=1;'\nrules: [{instr: '@set:$a={fetch};'}]\n",
            "{fetch} needs 'ran:fetch'",
        ),
        (
            "initial: '@set:$a=1;'\nrules: [{when: '$a=1', instr: '@del:$a;'}]\n",
            "rules[0].when: line 1, column 3: expected a comparison",
        ),
        ("initial: '@set:$a=1;'\nrules: [{instr: '@del:a;'}]\n", "rules[0].instr: line 1"),
        ("initial: '@set:$a=1;'\nrules: [{when: x}]\n", "a rule is a mapping with 'instr'"),
        ("initial: '@set:$a=1;'\nmax_cycles: many\n", "'max_cycles' must be int"),
        ("initial: '@set:$a=1;'\nactions: {page: {to: x}}\n", "actions.page: expected one of"),
        ("initial: '@set:$a=1;'\nstop_when: '$a'\n", "stop_when: line 1, column 3"),
        ("initial: [unclosed\n", "line 1"),
        ("initial: @set:$a=1;\n", "YAML reserves '@': quote directives"),
        ("- a list\n", "expected a mapping at the top level"),
        ("initial: 5\n", "'initial' must be str, got 5"),
        ("initial: '@set:$a=1;'\nrules: {a: 1}\n", "'rules' must be list"),
        ("initial: '@set:$a=1;'\nmax_cycles: 0\n", "'max_cycles' must be at least 1"),
        ("initial: '@set:$a=1;'\nstrict: 1\n", "'strict' must be bool"),
        (
            "initial: '@set:$a=1;'\nactions: {wait: {max_ms: x}}\n",
            "actions.wait.'max_ms' must be int",
        ),
        (
            "initial: '@set:$a=1;'\nactions: {page: {sink: 'smtp://x'}}\n",
            "actions.page.sink: page sink must be",
        ),
        (
            "initial: '@set:$a=1;'\nactions: {fetch: {urls: [1]}}\n",
            "actions.fetch.urls must be a list of strings",
        ),
    ],
)
def test_errors_name_the_file_and_the_key(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(LoopFileError) as caught:
        load_loop(path)
    assert message in str(caught.value)
    assert str(path) in str(caught.value)


def test_toml_errors_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(LoopFileError, match="loop.toml"):
        load_loop(write(tmp_path, "initial = ", "loop.toml"))
    with pytest.raises(LoopFileError, match="No such file"):
        load_loop(tmp_path / "absent.yaml")


async def test_build_actions_uses_paths_relative_to_the_file(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES, tmp_path / "ex")
    spec = load_loop(tmp_path / "ex" / "thermostat.yaml")
    registry = spec.build_actions()
    fetched = await registry.run("fetch", [Str("sensor/1.txt")])
    assert fetched.ok and fetched.value.strip() == "71"
    waited = await registry.run("wait", [Num("5000")])
    assert waited.value == 1000  # the loop file's max_ms bound


def test_logs_go_to_a_file_relative_to_the_loop_file(tmp_path: Path) -> None:
    spec = load_loop(write(tmp_path, "initial: '@set:$a=1;'\nlogs: file:out/logs.ndjson\n"))
    (tmp_path / "out").mkdir()
    sink = spec.build_log_sink()
    assert sink is not None
    sink(3, ["hot", 83])
    [line] = (tmp_path / "out" / "logs.ndjson").read_text().splitlines()
    record = json.loads(line)
    assert (record["cycle"], record["values"]) == (3, ["hot", 83])
    assert load_loop(write(tmp_path, "initial: '@set:$a=1;'\n")).build_log_sink() is None
    with pytest.raises(LoopFileError, match="'logs' must be 'file:PATH'"):
        load_loop(write(tmp_path, "initial: '@set:$a=1;'\nlogs: stdout\n"))


def test_failed_and_combined_clauses(tmp_path: Path) -> None:
    from plsp.actions import ActionResult

    spec = load_loop(
        write(
            tmp_path,
            """
initial: '@set:$t=0;'
rules:
  - when: failed:fetch
    instr: '@sig:!page,"op","sensor down";'
  - when: [ran:fetch, '$t>=0']
    instr: '@set:$t={fetch};'
""",
        )
    )
    spec(PolicyContext(1, parse("S{}S"), None))
    down = record()
    down.actions = [ActionResult("fetch", ("s.txt",), False, error="FileNotFoundError")]
    nxt = spec(PolicyContext(2, parse("S{$t:0}S"), down))
    assert nxt is not None and nxt.dumps() == 'INSTR:@sig:!page,"op","sensor down";'
    nxt = spec(PolicyContext(3, parse("S{$t:0}S"), record(actions=[("fetch", "7")])))
    assert nxt is not None and nxt.dumps() == "INSTR:@set:$t=7;"
    assert (
        spec(PolicyContext(4, parse('S{$t:"x"}S'), record(actions=[("fetch", "7")]))) is None
    )  # '$t>=0' is undecidable on a string, so it does not hold


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from(
        ["", "x", "@set:$a=1;", "ran:fetch", "$a>1", "{fetch}", "file:l.ndjson", "stdout"]
    ),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                ["when", "instr", "wait", "page", "fetch", "max_ms", "sink", "urls", "folder", "x"]
            ),
            inner,
            max_size=3,
        )
    ),
    max_leaves=8,
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.sampled_from(sorted(_TOP_KEYS) + ["junk"]), json_values, max_size=6))
def test_fuzz_loop_files_load_or_fail_with_a_message(
    tmp_path: Path, data: dict[str, object]
) -> None:
    path = write(tmp_path, yaml.safe_dump(data))
    try:
        spec = load_loop(path)
    except LoopFileError as error:
        assert str(path) in str(error)
        return
    spec.build_actions()
    spec.build_log_sink()
    spec(PolicyContext(1, parse("S{}S"), None))


@pytest.mark.parametrize(
    ("suffix", "text"), [(".toml", "max_cycles = {}\n"), (".yaml", "max_cycles: {}\n")]
)
def test_a_number_beyond_4300_digits_is_a_loop_file_error(
    tmp_path: Path, suffix: str, text: str
) -> None:
    path = tmp_path / f"loop{suffix}"
    path.write_text(text.format("9" * 5000))
    with pytest.raises(LoopFileError, match="digits"):
        load_loop(path)

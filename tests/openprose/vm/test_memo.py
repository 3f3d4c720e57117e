"""The answer cache across runs (`[vm] memo = true`): a second run asks nothing and gives
the same outputs; hits are journaled with their key and the run they came from; tool
turns, changed requests and runs without the setting are never answered from it."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from openprose.providers.base import Message, ModelRequest, ModelResponse, Usage
from openprose.vm.memo import MEMO_DIR, AnswerMemo, memo_key
from tests.openprose.vm.conftest import FAST
from tests.openprose.vm.test_vm_tools import REVIEW_TURNS, REVIEWER, _project
from tests.support.commands import run_tool

MEMO = dataclasses.replace(FAST, memo=True)
PROGRAM = """\
let colour = session "Name a colour"
if **the colour is warm**:
  output verdict = session "Say why it is warm"
    context: colour
else:
  output verdict = session "Say why it is cold"
    context: colour
"""
RULES = [
    {"match": "Name a colour", "answer": "red"},
    {"match": "the colour is warm", "answer": '{"verdict": true, "reason": "red"}'},
    {"match": "warm", "answer": "like fire"},
]


def test_a_second_run_asks_nothing_and_gives_the_same_outputs(vm: Any) -> None:
    first_provider, second_provider = vm.spy(RULES, default=None), vm.spy(RULES, default=None)
    first = vm.run(PROGRAM, first_provider, config=MEMO)
    second = vm.run(PROGRAM, second_provider, config=MEMO)
    assert first.status == second.status == "succeeded"
    assert len(first_provider.requests) == 3  # two sessions and the judgment
    assert second_provider.requests == []
    assert second.outputs == first.outputs == {"verdict": "like fire"}
    assert second.usage["requests_sent"] == 0
    assert second.usage["requests_served_from_memo"] == 3
    assert second.usage["input_tokens"] == 0 and second.usage["cost_usd"] == 0
    hits = vm.events(second, "session_finished")
    assert [h["memo"]["run"] for h in hits] == [first.run_id] * 3
    assert [h["memo"]["step"] for h in hits] == [e["step"] for e in hits]
    sent = vm.events(first, "session_finished")
    keys = {memo_key("scripted", ModelRequest.from_dict(e["request"])) for e in sent}
    assert {h["memo"]["key"] for h in hits} == keys
    assert all(h["attempt"] == 0 and h["response"]["usage"]["input_tokens"] == 0 for h in hits)


def test_without_the_setting_nothing_is_remembered_or_served(vm: Any) -> None:
    vm.run(PROGRAM, vm.spy(RULES, default=None), config=MEMO)
    provider = vm.spy(RULES, default=None)
    result = vm.run(PROGRAM, provider)
    assert len(provider.requests) == 3
    assert "requests_served_from_memo" not in result.usage
    fresh = vm.project / "fresh"
    fresh.mkdir()
    vm.project = fresh  # a project never run with the setting has no memo folder
    vm.run(PROGRAM, vm.spy(RULES, default=None))
    assert not (fresh / MEMO_DIR).exists()


def test_a_changed_request_is_asked_again(vm: Any) -> None:
    vm.run('output a = session "Name a colour"\n', vm.spy(RULES), config=MEMO)
    provider = vm.spy(RULES)
    vm.run(
        'output a = session "Name a colour"\n',
        provider,
        config=dataclasses.replace(MEMO, max_tokens=99),
    )
    assert len(provider.requests) == 1  # max_tokens is part of the key


def test_tool_turns_are_never_answered_from_the_memo(vm: Any, tmp_path: Path) -> None:
    project = _project(tmp_path)
    vm.project = project
    for _ in range(2):
        provider = vm.spy([{"match": "Review the code", "turns": REVIEW_TURNS}])
        result = vm.run(REVIEWER, provider, config=MEMO)
        assert result.status == "succeeded", result.error
        assert len(provider.requests) == 4  # every turn sent, both times
    assert AnswerMemo(project / MEMO_DIR).entries() == []


def test_a_damaged_entry_is_asked_again(tmp_path: Path) -> None:
    memo = AnswerMemo(tmp_path)
    memo.put("ab" + "0" * 62, ModelResponse("hi", Usage(3, 1)), "run1", "1")
    assert memo.get("ab" + "0" * 62).response.text == "hi"  # type: ignore[union-attr]
    (tmp_path / "ab" / ("ab" + "0" * 62 + ".json")).write_text('{"response": ')
    assert memo.get("ab" + "0" * 62) is None
    assert memo.get("cd" + "0" * 62) is None


def test_the_key_covers_provider_model_and_sampling() -> None:
    base = ModelRequest("m", (Message("user", "hi"),), temperature=0.5)
    variants = [
        dataclasses.replace(base, model="n"),
        dataclasses.replace(base, temperature=0.7),
        dataclasses.replace(base, system="s"),
        dataclasses.replace(base, response_schema={"type": "object"}),
    ]
    keys = {memo_key("anthropic", r) for r in [base, *variants]} | {memo_key("openai", base)}
    assert len(keys) == 6


def test_prose_cache_shows_and_clears(tmp_path: Path) -> None:
    (tmp_path / "prose.toml").write_text("")
    AnswerMemo(tmp_path / MEMO_DIR).put("ab" + "1" * 62, ModelResponse("x"), "r", "1")
    shown = run_tool("prose", "cache", "--json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert '"answers": 1' in shown.stdout
    cleared = run_tool("prose", "cache", "--clear", cwd=tmp_path)
    assert cleared.returncode == 0 and "cleared 1 remembered answer(s)" in cleared.stdout
    assert AnswerMemo(tmp_path / MEMO_DIR).entries() == []


def test_prose_run_memo_flag_turns_it_on_for_one_run(tmp_path: Path) -> None:
    import json

    (tmp_path / "prose.toml").write_text("")
    (tmp_path / "p.prose").write_text('output a = session "Name a colour"\n')
    (tmp_path / "rules.yaml").write_text('default: "red"\n')
    argv = ["run", "p.prose", "--provider", "scripted:rules.yaml", "--json"]
    runs = [run_tool("prose", *argv, "--memo", cwd=tmp_path) for _ in range(2)]
    runs.append(run_tool("prose", *argv, cwd=tmp_path))  # without the flag: asked again
    shown = [json.loads(r.stdout) for r in runs]
    assert [s["usage"]["requests_sent"] for s in shown] == [1, 0, 1]
    assert [s["outputs"] for s in shown] == [{"a": "red"}] * 3


def test_prose_show_names_the_run_an_answer_came_from(vm: Any) -> None:
    import json

    first = vm.run(PROGRAM, vm.spy(RULES, default=None), config=MEMO)
    second = vm.run(PROGRAM, vm.spy(RULES, default=None), config=MEMO)
    text = run_tool("prose", "show", second.run_id, cwd=vm.project)
    assert text.returncode == 0, text.stderr
    assert text.stdout.count(f"(memo of run {first.run_id})") == 3
    shown = json.loads(run_tool("prose", "show", second.run_id, "--json", cwd=vm.project).stdout)
    assert {s["memo"]["run"] for s in shown["steps"]} == {first.run_id}
    earlier = json.loads(run_tool("prose", "show", first.run_id, "--json", cwd=vm.project).stdout)
    assert not any("memo" in s for s in earlier["steps"])


def test_the_same_request_twice_in_one_run_is_sent_twice(vm: Any) -> None:
    source = 'parallel:\n  a = session "Name a colour"\n  b = session "Name a colour"\n'
    provider = vm.spy(RULES, default=None)
    result = vm.run(source, provider, config=dataclasses.replace(MEMO, max_concurrency=1))
    assert result.status == "succeeded", result.error
    assert len(provider.requests) == 2
    assert "requests_served_from_memo" not in result.usage

"""`vlp.ask`: the grammar the embedded model decodes in, and the safety level judged by the
runtime's rule rather than defaulted (issue 34)."""

from __future__ import annotations

import json

import pytest

from openprose.providers import ModelRequest, ScriptedProvider, ScriptRule, local_model_installed
from vlp import is_valid
from vlp.answer_grammar import answer_grammar
from vlp.ask import SYSTEM, ask, ask_async

SAFE = {
    "content": "Yes, go ahead.",
    "confidence": 0.7,
    "provenance": ["man pages"],
    "keywords": ["passwd"],
    "safety": {"level": "safe"},
}


def scripted(reply: dict[str, object]) -> tuple[ScriptedProvider, list[ModelRequest]]:
    seen: list[ModelRequest] = []

    def answer(request: ModelRequest) -> str:
        seen.append(request)
        return json.dumps(reply)

    return ScriptedProvider([ScriptRule(answer=answer)]), seen


async def test_a_risky_question_cannot_come_back_safe() -> None:
    provider, seen = scripted(SAFE)
    answer = await ask_async(provider, "Is it safe to delete /etc/passwd?", model="m")
    assert answer.ok and answer.message is not None and is_valid(answer.message)
    safety = answer.message["safety"]
    assert safety["level"] == "review"
    codes = {i["code"] for i in safety["issues"]}
    assert codes == {"rule:destructive-action", "rule:system-file", "rule:credential"}
    request = seen[0]
    assert request.grammar == answer_grammar(("review", "block"))  # `safe` is not decodable
    assert request.response_schema is not None
    assert request.response_schema["properties"]["safety"]["properties"]["level"]["enum"] == [
        "review",
        "block",
    ]
    assert "must be review or block" in request.last_user_text()


async def test_a_stricter_level_than_the_floor_is_kept_and_a_harmless_one_untouched() -> None:
    provider, _ = scripted({**SAFE, "safety": {"level": "block"}})
    answer = await ask_async(provider, "Is it safe to delete /etc/passwd?", model="m")
    assert answer.message is not None and answer.message["safety"] == {"level": "block"}
    provider, seen = scripted({**SAFE, "content": "Canberra."})
    answer = await ask_async(provider, "What is the capital of Australia?", model="m")
    assert answer.message is not None and answer.message["safety"] == {"level": "safe"}
    assert seen[0].grammar == answer_grammar()


async def test_a_risky_answer_to_a_harmless_question_is_held_to_review() -> None:
    provider, _ = scripted({**SAFE, "content": "Run rm -rf / to free space."})
    answer = await ask_async(provider, "How do I free disk space?", model="m")
    assert answer.message is not None and answer.message["safety"]["level"] == "review"


def test_the_prompt_gives_no_values_to_copy() -> None:
    assert "0.9" not in SYSTEM and "0.8" not in SYSTEM and "Example" not in SYSTEM


def test_the_grammar_strings_admit_no_raw_control_characters() -> None:
    grammar = answer_grammar()
    rules = dict(line.split(" ::= ", 1) for line in grammar.splitlines())
    assert rules["char"] == '[^"\\\\\\x00-\\x1F\\x7F] | "\\\\" ["\\\\/nt]'
    assert rules["level"] == '"\\"safe\\"" | "\\"review\\"" | "\\"block\\""'
    with pytest.raises(ValueError, match="at least one"):
        answer_grammar(())


@pytest.mark.skipif(not local_model_installed(), reason="needs the [local] extra")
def test_llama_cpp_parses_the_grammar_and_the_model_writes_valid_json_in_it() -> None:
    from openprose.providers.local import grammar_parses

    assert grammar_parses(answer_grammar()) and grammar_parses(answer_grammar(("review", "block")))
    question = 'Write a two-line poem about "tabs" and newlines, with a quote in it.'
    answer = ask("local", question, temperature=0.0, max_reasks=0)
    assert answer.ok, [a.text for a in answer.attempts]
    json.loads(answer.attempts[0].text)
    risky = ask("local", "Is it safe to delete /etc/passwd?", temperature=0.0, max_reasks=0)
    assert risky.message is not None and risky.message["safety"]["level"] != "safe"

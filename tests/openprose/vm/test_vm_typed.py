"""Typed results in the VM: the shape is asked for, the answer validated and bound as data,
an invalid answer asked again once with what was wrong, then a catchable failure; resume
serves both calls; outputs with a declared shape are checked."""

from __future__ import annotations

import json
from typing import Any

import jsonschema

REVIEW = """let review = session "Review the change"
  returns:
    title: string
    severity: "low" | "medium" | "high"
    files: list of string
    notes: optional string
"""

VALID = '{"title": "Null check", "severity": "high", "files": ["a.py", "b.py"]}'


def test_the_answer_is_bound_as_data_and_read_by_fields(vm: Any) -> None:
    source = REVIEW + 'output fix = session "Fix {review.title} ({review.severity})"\n'
    provider = vm.spy([{"match": "^Review", "answer": VALID}])
    result = vm.run(source, provider)
    assert result.status == "succeeded", result.error
    asked = provider.sent("^Review")[0]
    assert asked.structured and asked.response_schema is not None
    jsonschema.validate(json.loads(VALID), asked.response_schema)
    assert "matching this JSON Schema" in asked.last_user_text()
    assert provider.prompts()[1].startswith("Fix Null check (high)\n")
    assert len(provider.requests) == 2  # valid on the first try
    assert not vm.events(result, "typed_invalid")


def test_typed_values_reach_context_outputs_and_the_api_as_dicts(vm: Any) -> None:
    source = REVIEW + "output review_out = review\n"
    provider = vm.spy([{"match": "^Review", "answer": "```json\n" + VALID + "\n```"}])
    result = vm.run(source, provider)
    assert result.status == "succeeded", result.error
    expected = {**json.loads(VALID), "notes": None}  # an absent optional field reads as empty
    assert result.outputs["review_out"] == expected
    assert json.loads((result.run_dir / "outputs.json").read_text()) == {"review_out": expected}


def test_an_invalid_answer_is_asked_again_once_with_what_was_wrong(vm: Any) -> None:
    wrong = '{"title": "T", "severity": "urgent", "files": "a.py"}'
    provider = vm.spy([{"match": "^Review|^Your answer", "answer": [wrong, VALID]}])
    result = vm.run(REVIEW + "output r = review\n", provider)
    assert result.status == "succeeded", result.error
    reask = provider.requests[1].last_user_text()
    assert "severity: 'urgent' is not one of" in reask
    assert "files: 'a.py' is not of type 'array'" in reask
    assert provider.requests[1].messages[-2].content == wrong  # the model sees its answer
    assert result.outputs["r"]["severity"] == "high"
    (invalid,) = vm.events(result, "typed_invalid")
    assert len(invalid["problems"]) == 2


def test_a_second_invalid_answer_fails_the_session_and_can_be_caught(vm: Any) -> None:
    provider = vm.spy([{"match": "^Review|^Your answer", "answer": "not json"}])
    result = vm.run(REVIEW, provider)
    assert result.status == "failed"
    assert "does not match its declared shape, asked twice" in str(result.error)
    assert "not JSON" in str(result.error)
    assert len(vm.events(result, "typed_failed")) == 1
    caught = "try:\n" + "".join("  " + line + "\n" for line in REVIEW.splitlines())
    caught += 'catch as err:\n  output why = session "Explain {err.message}"\n'
    provider = vm.spy([{"match": "^Review|^Your answer", "answer": "not json"}])
    result = vm.run(caught, provider)
    assert result.status == "succeeded", result.error
    assert "does not match its declared shape" in provider.prompts()[-1]


def test_resume_serves_the_answer_and_its_reask_without_asking_again(vm: Any) -> None:
    wrong = '{"title": "T"}'
    source = REVIEW + 'session "Use {review.title}"\n'
    provider = vm.spy(
        [
            {"match": "^Review|^Your answer", "answer": [wrong, VALID]},
            {"match": "^Use", "answer": "x", "failures": ["error"]},
        ]
    )
    first = vm.run(source, provider)
    assert first.status == "failed"
    again = vm.spy([{"match": "^Use", "answer": "done"}])
    resumed = vm.resume(first.run_dir, again)
    assert resumed.status == "succeeded", resumed.error
    # the typed answer and its re-ask were served: only the failed session is asked again
    assert [prompt.splitlines()[0] for prompt in again.prompts()] == ["Use Null check"]


def test_a_resume_at_the_typed_invalid_line_journals_it_once(vm: Any) -> None:
    # The run stops right after `typed_invalid` (a kill there: the lines after it cut off);
    # the resume serves the invalid answer, reads it as invalid again and re-asks, but the
    # journal (and so anything counting its events) holds the invalid answer once.
    wrong = '{"title": "T"}'
    provider = vm.spy(
        [
            {"match": "^Review", "answer": wrong},
            {"match": "^Your answer", "answer": "x", "failures": ["error"]},
        ]
    )
    first = vm.run(REVIEW + "output r = review\n", provider)
    assert first.status == "failed"
    journal = first.run_dir / "journal.jsonl"
    lines = journal.read_bytes().splitlines(keepends=True)
    (at,) = [i for i, line in enumerate(lines) if b'"ev":"typed_invalid"' in line]
    journal.write_bytes(b"".join(lines[: at + 1]))
    again = vm.spy([{"match": "^Your answer", "answer": VALID}])
    resumed = vm.resume(first.run_dir, again)
    assert resumed.status == "succeeded", resumed.error
    assert again.prompts()[0].startswith("Your answer")  # only the re-ask is sent
    assert len(again.requests) == 1  # the first answer was served
    assert len(vm.events(resumed, "typed_invalid")) == 1
    assert resumed.outputs["r"]["severity"] == "high"


def test_an_output_shape_is_asked_for_and_checked(vm: Any) -> None:
    source = 'output score: {value: integer, ok: boolean} = session "Score it"\n'
    provider = vm.spy([{"match": "^Score", "answer": '{"value": 3, "ok": true}'}])
    result = vm.run(source, provider)
    assert result.status == "succeeded", result.error
    assert provider.requests[0].structured
    assert result.outputs["score"] == {"value": 3, "ok": True}
    wrong = 'let n = session "Count"\noutput count: integer = n\n'
    result = vm.run(wrong, vm.spy([{"match": "^Count", "answer": "many"}]))
    assert result.status == "failed"
    assert "output 'count' does not match its declared shape" in str(result.error)


def test_a_schema_file_beside_the_program_is_the_shape(vm: Any) -> None:
    schema = {
        "type": "object",
        "properties": {"tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["tags"],
    }
    (vm.project / "tags.schema.json").write_text(json.dumps(schema))
    source = 'let t = session "Tag it"\n  returns: schema "tags.schema.json"\noutput o = t\n'
    provider = vm.spy([{"match": "^Tag", "answer": '{"tags": ["x"]}'}])
    result = vm.run(source, provider)
    assert result.status == "succeeded", result.error
    assert provider.requests[0].response_schema == schema
    assert result.outputs["o"] == {"tags": ["x"]}


def test_an_inline_json_schema_is_the_shape(vm: Any) -> None:
    source = (
        'let t = session "Name one"\n'
        '  returns: schema """\n{"type": "string", "enum": ["a", "b"]}"""\n'
        "output o = t\n"
    )
    provider = vm.spy([{"match": "^Name", "answer": '"b"'}])
    result = vm.run(source, provider)
    assert result.status == "succeeded", result.error
    assert result.outputs["o"] == "b"


def test_the_run_view_shows_the_shape_a_session_asked_for(vm: Any) -> None:
    from openprose.record.journal import read_journal
    from openprose.record.runview import RunDigest

    result = vm.run(REVIEW + 'session "Plain"\n', vm.spy([{"match": "^Review", "answer": VALID}]))
    digest = RunDigest()
    digest.add_all(read_journal(result.run_dir / "journal.jsonl"))
    typed, plain = digest.sessions.values()
    assert typed["shape"]["properties"]["severity"]["enum"] == ["low", "medium", "high"]
    assert json.loads(typed["answer"]) == json.loads(VALID)
    assert plain["shape"] is None

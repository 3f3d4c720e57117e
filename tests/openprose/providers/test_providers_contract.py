"""The contract records: round trips, stable keys, cheap package import."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest

from openprose.providers import (
    Message,
    ModelRequest,
    ModelResponse,
    ProviderConfigError,
    ProviderError,
    TransientProviderError,
    Usage,
)

REQUEST = ModelRequest(
    model="claude-sonnet-5-5",
    messages=(Message("user", "héllo"), Message("assistant", "hi"), Message("user", "more")),
    system="be brief",
    max_tokens=99,
    temperature=0.5,
)


def test_request_round_trips_through_json() -> None:
    assert ModelRequest.from_dict(json.loads(json.dumps(REQUEST.to_dict()))) == REQUEST


def test_response_round_trips_through_json() -> None:
    response = ModelResponse("text", Usage(1, 2), "stop", "req_9", "gpt-4.1", "openai")
    assert ModelResponse.from_dict(json.loads(json.dumps(response.to_dict()))) == response


def test_key_is_stable_and_sensitive_to_every_field() -> None:
    assert REQUEST.key() == ModelRequest.from_dict(REQUEST.to_dict()).key()
    assert len(REQUEST.key()) == 64
    variants = [
        ModelRequest("other", REQUEST.messages, REQUEST.system, 99, 0.5),
        ModelRequest(REQUEST.model, REQUEST.messages[:1], REQUEST.system, 99, 0.5),
        ModelRequest(REQUEST.model, REQUEST.messages, None, 99, 0.5),
        ModelRequest(REQUEST.model, REQUEST.messages, REQUEST.system, 100, 0.5),
        ModelRequest(REQUEST.model, REQUEST.messages, REQUEST.system, 99, None),
    ]
    assert len({REQUEST.key(), *(v.key() for v in variants)}) == 6


def test_key_is_the_sha256_of_the_canonical_json() -> None:
    # pinned: a cassette recorded today must still match tomorrow
    request = ModelRequest(model="m", messages=(Message("user", "x"),))
    canonical = (
        '{"max_tokens":1024,"messages":[{"content":"x","role":"user"}],'
        '"model":"m","system":null,"temperature":null}'
    )
    assert request.key() == hashlib.sha256(canonical.encode()).hexdigest()


def test_a_response_schema_round_trips_and_is_absent_when_unset() -> None:
    schema = {"type": "object", "properties": {"verdict": {"type": "boolean"}}}
    constrained = ModelRequest("m", (Message("user", "x"),), response_schema=schema)
    assert ModelRequest.from_dict(json.loads(json.dumps(constrained.to_dict()))) == constrained
    assert constrained.to_dict()["response_schema"] == schema
    assert "response_schema" not in ModelRequest("m", (Message("user", "x"),)).to_dict()


def test_the_response_schema_does_not_change_the_replay_key() -> None:
    # It constrains decoding and follows from the prompt: cassettes recorded before
    # judgments carried a schema must still answer them.
    plain = ModelRequest("m", (Message("user", "x"),))
    constrained = ModelRequest("m", (Message("user", "x"),), response_schema={"type": "object"})
    assert constrained.key() == plain.key()


def test_message_role_is_checked() -> None:
    with pytest.raises(ValueError, match="role"):
        Message("system", "x")


def test_error_hierarchy() -> None:
    transient = TransientProviderError("slow", provider="openai", status=429, retry_after=2.0)
    assert isinstance(transient, ProviderError) and transient.retry_after == 2.0
    assert issubclass(ProviderConfigError, ProviderError)
    assert not issubclass(ProviderConfigError, TransientProviderError)


def test_package_import_leaves_sdks_unimported() -> None:
    code = (
        "import sys, openprose.providers\n"
        "heavy = [m for m in ('anthropic', 'openai', 'aiohttp', 'llama_cpp', 'yaml', 'httpx2')"
        " if m in sys.modules]\n"
        "print(heavy)\n"
    )
    output = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert output.strip() == "[]"

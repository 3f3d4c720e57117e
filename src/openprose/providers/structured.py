"""Native structured output of the hosted APIs, for typed results (`returns:`).

OpenAI constrains the answer with `response_format: {type: json_schema}`; Anthropic has no
such field, so the answer is a forced call of one tool whose input schema is the shape, and
the call's input becomes the answer text. Anthropic's tool input must be an object: any other
shape (a list, an enum) is wrapped as the one field of an object and unwrapped again.
The local model needs nothing here: llama.cpp turns `response_schema` into a grammar."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from openprose.providers.base import ModelRequest, ModelResponse

ANSWER_TOOL = "answer"  # the tool Anthropic is made to call with the answer as its input
_WRAPPED = "value"  # the field a non-object answer is wrapped in


def wanted(request: ModelRequest) -> dict[str, Any] | None:
    """The schema to ask for natively: a typed request's, when it offers no tools (a tool
    loop's turns must be free to call tools; its answer is checked after the loop)."""
    if request.structured and request.response_schema is not None and not request.tools:
        return request.response_schema
    return None


def openai_response_format(schema: dict[str, Any]) -> dict[str, Any]:
    """OpenAI's `response_format`. Strict mode (the answer guaranteed to match) accepts only
    closed objects whose fields are all required; any other schema is sent non-strict."""
    return {
        "type": "json_schema",
        "json_schema": {"name": ANSWER_TOOL, "schema": schema, "strict": strict_ready(schema)},
    }


def strict_ready(schema: Any) -> bool:
    """Whether OpenAI's strict mode takes ``schema``: every object closed and complete."""
    if isinstance(schema, list):
        return all(strict_ready(item) for item in schema)
    if not isinstance(schema, dict):
        return True
    if schema.get("type") == "object":
        properties = schema.get("properties")
        if not isinstance(properties, dict) or schema.get("additionalProperties") is not False:
            return False
        if set(schema.get("required") or ()) != set(properties):
            return False
    return all(strict_ready(value) for value in schema.values() if isinstance(value, dict | list))


def anthropic_answer_tool(schema: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The `tools` entry and the `tool_choice` that make Claude answer through the tool."""
    input_schema = schema
    if not _is_object(schema):
        input_schema = {
            "type": "object",
            "properties": {_WRAPPED: schema},
            "required": [_WRAPPED],
        }
    tool = {
        "name": ANSWER_TOOL,
        "description": "Give your final answer, in the shape this tool's input asks for.",
        "input_schema": input_schema,
    }
    return tool, {"type": "tool", "name": ANSWER_TOOL}


def from_answer_tool(response: ModelResponse, request: ModelRequest) -> ModelResponse:
    """Claude's forced call of the answer tool, as the answer text (its input as JSON)."""
    schema = wanted(request)
    if schema is None:
        return response
    for call in response.tool_calls:
        if call.name == ANSWER_TOOL:
            value: Any = call.arguments
            if not _is_object(schema) and isinstance(value, dict) and _WRAPPED in value:
                value = value[_WRAPPED]
            text = json.dumps(value, ensure_ascii=False)
            return replace(response, text=text, tool_calls=(), finish_reason="end_turn")
    return response


def _is_object(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "object"

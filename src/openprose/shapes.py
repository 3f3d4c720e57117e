"""Typed results: a declared shape as a JSON Schema, and an answer checked against it.

The checker (unknown fields, broken schemas), the VM (the schema sent to the provider, the
answer validated) and the docs read shapes through this module. ``jsonschema`` is imported
only when an answer is validated or a schema checked: untyped programs never load it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from openprose import nodes as n

SCALARS: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "number": {"type": "number"},
    "integer": {"type": "integer"},
    "boolean": {"type": "boolean"},
}


def returns_of(node: object) -> n.Shape | None:
    """The shape a session declares with `returns:`, if it is one that does."""
    if not isinstance(node, n.Session):
        return None
    for prop in node.properties:
        if prop.name.id == "returns" and isinstance(prop.value, n.SHAPE_TYPES):
            return prop.value  # type: ignore[return-value]
    return None


class ShapeError(ValueError):
    """A shape that cannot become a schema: an unknown type, a missing or broken schema."""


def json_schema(shape: n.Shape, base_dir: Path | None) -> dict[str, Any]:
    """The JSON Schema a shape stands for. Compact objects are closed (no other fields:
    a typo in the model's answer is a validation error, not a silently missing value) and
    every field is required but those marked ``optional``."""
    match shape:
        case n.ScalarType():
            if shape.name not in SCALARS:
                raise ShapeError(f"unknown type {shape.name!r}")
            return dict(SCALARS[shape.name])
        case n.ListType():
            return {"type": "array", "items": json_schema(shape.item, base_dir)}
        case n.EnumType():
            return {"type": "string", "enum": [option.value for option in shape.options]}
        case n.ObjectType():
            properties = {f.name.id: json_schema(f.shape, base_dir) for f in shape.fields}
            required = [f.name.id for f in shape.fields if not f.optional]
            return {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            }
        case n.SchemaRef():
            return load_schema(shape, base_dir)


def load_schema(ref: n.SchemaRef, base_dir: Path | None) -> dict[str, Any]:
    """The schema written inline, or read from its file (relative to the program's folder),
    checked to be a JSON Schema."""
    if ref.inline:
        text, origin = ref.source.value, "the inline schema"
    else:
        path = Path(ref.source.value)
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ShapeError(f"schema file {ref.source.value!r} not found") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ShapeError(f"schema file {ref.source.value!r} cannot be read: {exc}") from None
        origin = f"schema file {ref.source.value!r}"
    try:
        schema = json.loads(text)
    except ValueError as exc:
        raise ShapeError(f"{origin} is not JSON: {exc}") from None
    if not isinstance(schema, dict):
        raise ShapeError(f"{origin} is not a JSON Schema object")
    from jsonschema import SchemaError, validators  # type: ignore[import-untyped]

    try:
        validators.validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        raise ShapeError(f"{origin} is not a valid JSON Schema: {exc.message}") from None
    return schema


def problems(value: Any, schema: dict[str, Any], limit: int = 5) -> list[str]:
    """What is wrong with ``value`` against ``schema``, one line each (at most ``limit``),
    with where in the value (`files[2]: 3 is not of type 'string'`)."""
    from jsonschema import validators

    validator = validators.validator_for(schema)(schema)
    found = []
    for error in sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path)):
        where = _path_text(error.absolute_path)
        found.append(f"{where}: {error.message}" if where else error.message)
        if len(found) == limit:
            break
    return found


def _path_text(path: Any) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def decode_answer(text: str) -> Any:
    """The JSON value of a typed answer: the text itself, or inside a Markdown code fence as
    chat models often write it. Raises ValueError when it is no JSON."""
    stripped = text.strip()
    if stripped.startswith("```"):
        first_newline = stripped.find("\n")
        closing = stripped.rfind("```")
        if first_newline != -1 and closing > first_newline:
            stripped = stripped[first_newline + 1 : closing].strip()
    return json.loads(stripped)


def fill_optional(value: Any, shape: n.Shape) -> Any:
    """An answer with its absent optional fields present as None, so that `{review.notes}`
    reads as empty rather than failing (compact shapes only: a schema file says itself)."""
    if isinstance(shape, n.ObjectType) and isinstance(value, dict):
        filled = dict(value)
        for f in shape.fields:
            if f.name.id in filled:
                filled[f.name.id] = fill_optional(filled[f.name.id], f.shape)
            elif f.optional:
                filled[f.name.id] = None
        return filled
    if isinstance(shape, n.ListType) and isinstance(value, list):
        return [fill_optional(item, shape.item) for item in value]
    return value


def fields_of(schema: dict[str, Any]) -> list[str] | None:
    """The fields an object schema allows, when it allows no others; None when any name
    may be there (or the value is no object)."""
    if schema.get("type") != "object" or schema.get("additionalProperties") is not False:
        return None
    properties = schema.get("properties")
    return list(properties) if isinstance(properties, dict) else []


def field_schema(schema: dict[str, Any], name: str) -> dict[str, Any]:
    """The schema of one field (empty: anything, when the schema does not say)."""
    properties = schema.get("properties")
    if isinstance(properties, dict) and isinstance(properties.get(name), dict):
        found: dict[str, Any] = properties[name]
        return found
    return {}

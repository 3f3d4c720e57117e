"""The packaged JSON Schema: where it lives and the constants the validator reads from it."""

from __future__ import annotations

import os
import re
from functools import cache
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from pathlib import Path

# A plain string: importing pathlib costs `vlp validate` ~17 M instructions of start-up.
_SCHEMA_FILE = os.path.join(os.path.dirname(__file__), "vlp-1.1.schema.json")


def schema_path() -> Path:
    """Filesystem path of the Draft 2020-12 schema (for ajv, jsonschema, editors)."""
    from pathlib import Path

    return Path(_SCHEMA_FILE)


@cache
def _schema_bytes() -> bytes:
    with open(_SCHEMA_FILE, "rb") as schema:
        return schema.read()


def load_schema() -> dict[str, Any]:
    """A fresh copy of the schema as a dict."""
    schema: dict[str, Any] = orjson.loads(_schema_bytes())
    return schema


# The validator takes its vocabularies from the schema so the two cannot drift apart.
_SCHEMA = load_schema()
_PROPS: dict[str, Any] = _SCHEMA["properties"]

PROTOCOL: str = _PROPS["protocol"]["const"]
MESSAGE_TYPES: tuple[str, ...] = tuple(_PROPS["type"]["enum"])
SAFETY_LEVELS: tuple[str, ...] = tuple(_PROPS["safety"]["properties"]["level"]["enum"])
REQUIRED_FIELDS: tuple[str, ...] = tuple(_SCHEMA["required"])
RESERVED_TYPES: tuple[str, ...] = ("observation", "alert", "task")
#: A small number per message type (1, 2, ...; 0 is "no valid message"), so that the
#: thread checks keep a message's line and type packed in one int.
KIND_CODES: dict[str, int] = {kind: code for code, kind in enumerate(MESSAGE_TYPES, 1)}
TIMESTAMP_PATTERN: re.Pattern[str] = re.compile(_SCHEMA["$defs"]["utc_timestamp"]["pattern"])

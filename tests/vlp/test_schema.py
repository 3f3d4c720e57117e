"""The packaged schema and the documented code list."""

from __future__ import annotations

import re
from pathlib import Path

import jsonschema  # type: ignore[import-untyped]

import vlp
from vlp import CODES, schema_path


def test_schema_ships_with_the_package_and_is_draft_2020_12() -> None:
    path = schema_path()
    assert path.is_file() and path.parent == Path(vlp.__file__).parent
    schema = vlp.load_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["type"]["enum"] == list(vlp.MESSAGE_TYPES)
    assert len(vlp.MESSAGE_TYPES) == 7


def test_docs_list_every_problem_code() -> None:
    docs = (Path(__file__).parents[2] / "docs" / "vlp.md").read_text()
    documented = set(re.findall(r"\bVLP\d{3}\b", docs))
    assert documented == set(CODES)

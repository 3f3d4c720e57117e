"""Hover, go to definition and find references over stdio, within a file and across `use`."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_asyncio
from lsprotocol import types as lsp

from openprose.lsp.language import KEYWORD_DOCS, PROPERTY_DOCS, VALUE_DOCS

from .conftest import Editor, position

pytestmark = pytest.mark.asyncio(loop_scope="module")

LIBRARY = """\
input topic: "What to research"
input depth: "How deep to go"

let notes = session "Research {topic} to {depth}"
output findings = session "List the findings"
  context: notes
output sources = session "List the sources"
"""

MAIN = """\
use "./lib/research.prose" as research

agent writer:
  model: opus
  prompt: "You write tight summaries"
  backoff: linear

block polish(draft):
  session: writer
    prompt: "Polish {draft}"

let result = research(topic: "tides", depth: "shallow")
let draft = session: writer
  context: [result.findings]
for item in ["a", "b"]:
  session "Look at {item}"
do polish(draft)
output summary = session "Sum up {draft}"
"""

OTHER = """\
use "./lib/research.prose" as digging

let found = digging(topic: "waves", depth: "deep")
session "Read {found}"
"""


@pytest.fixture(scope="module")
def files(workspace: Path) -> dict[str, Path]:
    (workspace / "lib").mkdir()
    paths = {
        "library": workspace / "lib" / "research.prose",
        "main": workspace / "main.prose",
        "other": workspace / "other.prose",
    }
    for name, text in (("library", LIBRARY), ("main", MAIN), ("other", OTHER)):
        paths[name].write_text(text, encoding="utf-8")
    return paths


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def main_uri(editor: Editor, files: dict[str, Path]) -> str:
    uri = files["main"].as_uri()
    editor.open(uri, MAIN)
    assert await editor.diagnostics(uri) == []  # a clean program, its import resolved
    return uri


async def _hover(editor: Editor, uri: str, at: lsp.Position) -> str:
    found = await editor.client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), at)
    )
    assert found is not None
    assert isinstance(found.contents, lsp.MarkupContent)
    return found.contents.value


async def _definition(editor: Editor, uri: str, at: lsp.Position) -> list[lsp.Location]:
    found = await editor.client.text_document_definition_async(
        lsp.DefinitionParams(lsp.TextDocumentIdentifier(uri), at)
    )
    assert isinstance(found, list)
    return found


async def test_hover_on_keywords_properties_and_values(editor: Editor, main_uri: str) -> None:
    assert KEYWORD_DOCS["block"] in await _hover(editor, main_uri, position(MAIN, "block polish"))
    assert PROPERTY_DOCS["model"] in await _hover(editor, main_uri, position(MAIN, "model:"))
    assert VALUE_DOCS["opus"] in await _hover(editor, main_uri, position(MAIN, "opus", 1))
    assert VALUE_DOCS["linear"] in await _hover(editor, main_uri, position(MAIN, "linear"))


async def test_hover_on_names_shows_their_definition(editor: Editor, main_uri: str) -> None:
    agent = await _hover(editor, main_uri, position(MAIN, "writer", 1, occurrence=1))
    assert "agent writer" in agent
    assert "model: opus" in agent
    assert 'prompt: "You write tight summaries"' in agent
    block = await _hover(editor, main_uri, position(MAIN, "polish(draft)\n", 2))
    assert "block polish(draft)" in block
    program = await _hover(editor, main_uri, position(MAIN, "research(topic", 1))
    assert "inputs: topic, depth; outputs: findings, sources" in program
    argument = await _hover(editor, main_uri, position(MAIN, "topic:"))
    assert 'input topic: "What to research"' in argument
    binding = await _hover(editor, main_uri, position(MAIN, "{draft}", 1, occurrence=1))
    assert "let draft = session: writer" in binding


async def test_no_hover_on_plain_text(editor: Editor, main_uri: str) -> None:
    found = await editor.client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(main_uri), position(MAIN, "tight"))
    )
    assert found is None


async def test_definition_within_the_file(editor: Editor, main_uri: str) -> None:
    (agent,) = await _definition(editor, main_uri, position(MAIN, "writer", 1, occurrence=1))
    assert agent.uri == main_uri
    assert agent.range.start == position(MAIN, "writer:")
    (block,) = await _definition(editor, main_uri, position(MAIN, "do polish", 4))
    assert block.range.start == position(MAIN, "polish(draft):")
    # Inside the block, `draft` is its parameter; outside, the `let`.
    (param,) = await _definition(editor, main_uri, position(MAIN, "{draft}", 1))
    assert param.range.start == position(MAIN, "draft):")
    (binding,) = await _definition(editor, main_uri, position(MAIN, "polish(draft)\n", 8))
    assert binding.range.start == position(MAIN, "draft = session")
    (loop_var,) = await _definition(editor, main_uri, position(MAIN, "{item}", 1))
    assert loop_var.range.start == position(MAIN, "item in")


async def test_definition_across_files(
    editor: Editor, main_uri: str, files: dict[str, Path]
) -> None:
    library = files["library"].resolve().as_uri()
    (file,) = await _definition(editor, main_uri, position(MAIN, "./lib", 1))
    assert file.uri == library
    assert file.range.start == lsp.Position(0, 0)
    (program,) = await _definition(editor, main_uri, position(MAIN, "research(topic", 2))
    assert (program.uri, program.range.start) == (main_uri, position(MAIN, "research\n"))
    (input_,) = await _definition(editor, main_uri, position(MAIN, "topic:", 2))
    assert (input_.uri, input_.range.start) == (library, position(LIBRARY, "topic:"))
    (output,) = await _definition(editor, main_uri, position(MAIN, "findings]", 3))
    assert (output.uri, output.range.start) == (library, position(LIBRARY, "findings ="))


async def test_references_within_the_file(editor: Editor, main_uri: str) -> None:
    found = await editor.client.text_document_references_async(
        lsp.ReferenceParams(
            text_document=lsp.TextDocumentIdentifier(main_uri),
            position=position(MAIN, "writer:"),
            context=lsp.ReferenceContext(include_declaration=True),
        )
    )
    assert found is not None
    starts = sorted((loc.range.start.line, loc.range.start.character) for loc in found)
    assert starts == [(2, 6), (8, 11), (12, 21)]


async def test_references_to_an_input_across_importers(
    editor: Editor, main_uri: str, files: dict[str, Path]
) -> None:
    # From an invocation in main.prose: the input in the library, its own use there, and the
    # argument names in both importers — other.prose is not open; it is found on disk.
    found = await editor.client.text_document_references_async(
        lsp.ReferenceParams(
            text_document=lsp.TextDocumentIdentifier(main_uri),
            position=position(MAIN, "topic:", 1),
            context=lsp.ReferenceContext(include_declaration=True),
        )
    )
    assert found is not None
    where = sorted((Path(loc.uri[len("file://") :]).name, loc.range.start.line) for loc in found)
    assert where == [
        ("main.prose", 11),
        ("other.prose", 2),
        ("research.prose", 0),
        ("research.prose", 3),
    ]


async def test_a_skill_leads_to_its_import(editor: Editor) -> None:
    text = 'use "@anthropic/web-search" as search\n\nagent a:\n  skills: ["search"]\n'
    uri = "untitled:skills"
    editor.open(uri, text)
    (found,) = await _definition(editor, uri, position(text, '"search"', 2))
    assert found.range.start == position(text, "search\n")
    assert "@anthropic/web-search" in await _hover(editor, uri, position(text, '"search"', 3))


async def test_words_inside_strings_and_comments_are_not_keywords(editor: Editor) -> None:
    text = 'session "do it if you can"  # or else\n'
    uri = "untitled:words"
    editor.open(uri, text)
    assert KEYWORD_DOCS["session"] in await _hover(editor, uri, position(text, "session"))
    for word in ("if", "else"):
        found = await editor.client.text_document_hover_async(
            lsp.HoverParams(lsp.TextDocumentIdentifier(uri), position(text, word))
        )
        assert found is None


async def test_occurrences_of_a_name_are_highlighted(editor: Editor, main_uri: str) -> None:
    found = await editor.client.text_document_document_highlight_async(
        lsp.DocumentHighlightParams(lsp.TextDocumentIdentifier(main_uri), position(MAIN, "writer:"))
    )
    assert found is not None
    assert [(h.range.start.line, h.kind) for h in found] == [
        (2, lsp.DocumentHighlightKind.Write),
        (8, lsp.DocumentHighlightKind.Read),
        (12, lsp.DocumentHighlightKind.Read),
    ]

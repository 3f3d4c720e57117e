"""Every code block in README.md and docs/ is checked (see doc_blocks.py for what each kind
of block promises)."""

from __future__ import annotations

import ast
import json
import tomllib
from pathlib import Path

import pytest
import yaml

from openprose import check_source
from openprose.parser import read_source
from tests.docs.doc_blocks import (
    KNOWN,
    ROOT,
    Block,
    blocks_of,
    check_console,
    prepare_project,
    tool_commands,
)

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCKS = [block for doc in DOCS for block in blocks_of(doc)]


def test_every_block_says_its_language() -> None:
    untagged = [f"{b.where}: `{b.language}`" for b in BLOCKS if b.language not in KNOWN]
    assert not untagged, f"tag these blocks with one of {sorted(KNOWN)}: {untagged}"


def _id(block: Block) -> str:
    return f"{block.where}-{block.language}"


def _codes(path: Path) -> list[str]:
    source, problems = read_source(path)
    assert source is not None, problems
    return [d.code for d in check_source(source) if not d.code.startswith("I")]


PROGRAM_DOCS = [d for d in DOCS if any(b.language == "prose" for b in blocks_of(d))]


@pytest.mark.parametrize("doc", PROGRAM_DOCS, ids=lambda d: d.name)
def test_program_blocks_check_as_the_doc_says(doc: Path, tmp_path: Path) -> None:
    """Each program is checked as a file of the doc's folder, where the programs shown
    before it (`<!-- file: NAME -->`) are, so that its imports resolve."""
    problems = []
    for number, block in enumerate(b for b in blocks_of(doc) if b.language == "prose"):
        path = tmp_path / block.marks.get("file", f"block-{number}.prose")
        path.write_text(block.text, encoding="utf-8")
        expected = block.marks.get("expect", "").split()
        if (found := _codes(path)) != expected:
            problems.append(f"{block.where}: expected {expected}, found {found}\n{block.text}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "doc",
    [d for d in DOCS if any(b.language == "console" for b in blocks_of(d))],
    ids=lambda d: d.name,
)
def test_console_blocks_print_what_they_show(doc: Path, tmp_path: Path) -> None:
    prepare_project(tmp_path)
    problems: list[str] = []
    for block in blocks_of(doc):
        if block.language == "prose" and "file" in block.marks:
            (tmp_path / block.marks["file"]).write_text(block.text, encoding="utf-8")
        elif block.language == "console":
            problems += check_console(block, tmp_path)
    assert not problems, "\n\n".join(problems)


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.language == "sh"], ids=_id)
def test_shell_lines_use_real_options(block: Block) -> None:
    for words in tool_commands(block):
        _parse(words, block)


def _parse(words: list[str], block: Block) -> None:
    tool, args = words[0], words[1:]
    if tool == "prose":
        from openprose.cli import COMMANDS, command_parser

        if args and args[0].startswith("-"):
            assert args[0] in {"--version", "--help", "--completion", "-q", "-v"}, block.where
            return
        assert args and args[0] in COMMANDS, f"{block.where}: {' '.join(words)}"
        command_parser(args[0]).parse_args(args[1:])
        return
    import importlib

    module = importlib.import_module(f"{tool}.cli")
    build = getattr(module, "build_parser", None) or module._parser
    build().parse_args(args)


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.language == "python"], ids=_id)
def test_python_blocks_compile(block: Block) -> None:
    compile(block.text, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


@pytest.mark.parametrize(
    "block", [b for b in BLOCKS if b.language in ("toml", "yaml", "json")], ids=_id
)
def test_data_blocks_parse(block: Block) -> None:
    if block.language == "toml":
        tomllib.loads(block.text)
    elif block.language == "yaml":
        yaml.safe_load(block.text)
    else:
        json.loads(block.text)

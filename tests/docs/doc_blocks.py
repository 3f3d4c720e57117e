"""The code blocks of the docs, and how each kind is checked (used by test_docs.py).

Every fenced block needs a language tag:

* ``prose``: a program. `prose check` must report no error and no warning, unless the line
  before the fence is ``<!-- expect: CODE CODE... -->``: then it must report exactly those
  codes (in order; notes I0xx are ignored). ``<!-- file: NAME -->`` before it also saves it
  as NAME in the doc's project folder, for later console blocks.
* ``console``: ``$ COMMAND`` lines, each followed by the output it prints (stdout and
  stderr, as they arrive). ``$ cat FILE`` writes the shown text into FILE; ``prose``, ``vlp``, ``vpp`` and
  ``plsp`` commands are run in the doc's project folder (a fresh folder per doc, holding a
  copy of examples/) with ``NO_COLOR=1`` and no provider variables, and their output must be
  what the block shows. Run ids, timings and the folder's path vary from run to run: they
  are compared as RUN_ID, elapsed times and ``~/demo``.
* ``sh``: command lines; each `prose`/`vlp`/`vpp`/`plsp` command must be accepted by its
  option parser (not run: they may need keys or a network).
* ``python``: compiles; ``toml``, ``yaml``, ``json``: parse.
* ``text``, ``ebnf``: prose for humans (synopses, diagrams, grammars); nothing to run.

``python -m tests.docs.doc_blocks --update docs/guide.md`` rewrites the console outputs of a
doc with what the commands print now (review the diff before committing it).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KNOWN = {"prose", "console", "sh", "python", "toml", "yaml", "json", "text", "ebnf"}
TOOLS = {"prose": "openprose.cli", "vlp": "vlp.cli", "vpp": "vpp.cli", "plsp": "plsp.cli"}
_FENCE = re.compile(r"^```(\S*)\s*$")
_MARK = re.compile(r"^<!--\s*(expect|file):\s*(.*?)\s*-->\s*$")


@dataclass
class Block:
    doc: Path
    line: int  # of the opening fence, 1-based
    language: str
    text: str
    marks: dict[str, str]

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


def blocks_of(doc: Path) -> list[Block]:
    lines = doc.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if not match:
            index += 1
            continue
        marks: dict[str, str] = {}
        back = index - 1
        while back >= 0 and (mark := _MARK.match(lines[back])):
            marks[mark.group(1)] = mark.group(2)
            back -= 1
        end = index + 1
        while end < len(lines) and lines[end].rstrip() != "```":
            end += 1
        text = "\n".join(lines[index + 1 : end]) + "\n"
        found.append(Block(doc, index + 1, match.group(1), text, marks))
        index = end + 1
    return found


# --- console sessions ---------------------------------------------------------------------


@dataclass
class Step:
    command: str
    shown: str  # the output the doc shows


def steps_of(block: Block) -> list[Step]:
    steps: list[Step] = []
    for line in block.text.splitlines():
        if line.startswith("$ "):
            steps.append(Step(line[2:], ""))
        elif steps:
            steps[-1].shown += line + "\n"
    for step in steps:  # a blank line separates one command's output from the next command
        step.shown = step.shown.rstrip("\n") + "\n" if step.shown.strip() else ""
    return steps


def prepare_project(folder: Path) -> None:
    shutil.copytree(ROOT / "examples", folder / "examples")


def run_step(step: Step, folder: Path) -> str:
    """What the command prints now, normalised like the shown output."""
    words = shlex.split(step.command)
    if words[0] == "cat":
        target = folder / words[1]
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(step.shown, encoding="utf-8")
        return target.read_text(encoding="utf-8")
    if words[0] not in TOOLS:
        raise AssertionError(f"cannot run {step.command!r} (only cat, prose, vlp, vpp, plsp)")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY") and k not in {"PROSE_PROVIDER", "OPENAI_BASE_URL"}
    }
    env.update(NO_COLOR="1", PROSE_REGISTRY="http://127.0.0.1:9", HOME=str(folder / ".home"))
    env.pop("FORCE_COLOR", None)
    done = subprocess.run(
        [sys.executable, "-m", TOOLS[words[0]], *words[1:]],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # in the order a terminal would show them
        text=True,
        timeout=120,
        check=False,
    )
    return normalise(done.stdout, folder)


_RUN_ID = re.compile(r"\b\d{8}-\d{6}-[0-9a-f]{6}\b")
_ELAPSED = re.compile(r"\b\d+\.\d\ds\b")


def normalise(text: str, folder: Path | None = None) -> str:
    if folder is not None:
        text = text.replace(str(folder.resolve()), "~/demo").replace(str(folder), "~/demo")
    text = _RUN_ID.sub("RUN_ID", text)
    return _ELAPSED.sub("0.00s", text)


def check_console(block: Block, folder: Path) -> list[str]:
    problems = []
    for step in steps_of(block):
        actual = run_step(step, folder)
        if normalise(step.shown).rstrip() != actual.rstrip():
            problems.append(
                f"{block.where}: `{step.command}` prints\n{actual}\nbut the doc shows\n{step.shown}"
            )
    return problems


# --- shell lines ----------------------------------------------------------------------------


def tool_commands(block: Block) -> list[list[str]]:
    """The prose/vlp/vpp/plsp command lines of a sh block, split into words."""
    found = []
    for line in block.text.splitlines():
        line = re.sub(r"\s+#.*$", "", line).strip()
        for part in line.split("&&"):
            words = shlex.split(part.rstrip().removesuffix("&"))  # `cmd &`: run in background
            if words and Path(words[0]).name in TOOLS:
                found.append([Path(words[0]).name, *words[1:]])
    return found


def update(doc: Path) -> None:
    """Rewrite the shown output of every console block of `doc` (see the module docstring)."""
    import tempfile

    lines = doc.read_text(encoding="utf-8").splitlines()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        prepare_project(folder)
        out: list[str] = []
        cursor = 0
        for block in blocks_of(doc):
            if block.language == "prose" and "file" in block.marks:
                (folder / block.marks["file"]).write_text(block.text, encoding="utf-8")
            if block.language != "console":
                continue
            body: list[str] = []
            for step in steps_of(block):
                actual = run_step(step, folder).rstrip("\n")
                if body:
                    body.append("")
                body.append(f"$ {step.command}")
                if actual:
                    body.extend(actual.splitlines())
            start = block.line  # the fence line (1-based) -> body starts at index `start`
            end = start + len(block.text.splitlines())
            out.extend(lines[cursor:start])
            out.extend(body)
            cursor = end
        out.extend(lines[cursor:])
    doc.write_text("\n".join(out) + "\n", encoding="utf-8")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "--update":
        raise SystemExit("usage: python -m tests.docs.doc_blocks --update DOC.md")
    update(Path(sys.argv[2]).resolve())

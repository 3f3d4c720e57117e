"""A project beside an 'outside' folder, and a snapshot of everything the agent must not change."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from openprose.providers.base import ToolCall
from openprose.vm.tools import Permissions, Toolbox, ToolOutcome, sandbox_problem

SECRET = "top-secret-value-4711"


@dataclass
class World:
    root: Path  # the project
    outside: Path  # a folder beside it, never to be touched
    allowed: tuple[Path, ...]  # folders the agent may change

    def snapshot(self) -> dict[str, str]:
        """Every file under the test's tmp folder except the allowed ones, with a hash."""
        seen: dict[str, str] = {}
        base = self.root.parent
        for folder, dirs, files in os.walk(base):
            here = Path(folder)
            if any(here == a or a in here.parents for a in self.allowed):
                continue
            for name in files + [d for d in dirs if (here / d).is_symlink()]:
                path = here / name
                try:
                    data = (
                        path.read_bytes() if not path.is_symlink() else os.readlink(path).encode()
                    )
                except OSError:
                    data = b"<unreadable>"
                seen[str(path.relative_to(base))] = hashlib.sha256(data).hexdigest()
        return seen


@pytest.fixture
def world(tmp_path: Path) -> World:
    root = tmp_path / "project"
    outside = tmp_path / "outside"
    for folder in (
        root / "src",
        root / "output",
        root / "scripts",
        root / ".prose" / "runs",
        outside,
    ):
        folder.mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hello')\n")
    (root / "README.md").write_text("# Project\n")
    (root / "private.txt").write_text(f"project-private {SECRET}\n")
    (root / ".prose" / "runs" / "journal.jsonl").write_text("{}\n")
    (root / "scripts" / "ok.sh").write_text("#!/bin/sh\necho script-ran\n")
    (root / "scripts" / "ok.sh").chmod(0o755)
    (outside / "secret.txt").write_text(f"{SECRET}\n")
    (outside / "evil.sh").write_text("#!/bin/sh\necho evil > /dev/null\n")
    (outside / "evil.sh").chmod(0o755)
    return World(root, outside, (root / "output",))


def make_toolbox(world: World, **rules: object) -> Toolbox:
    return Toolbox(world.root, Permissions.from_mapping(rules), agent="tester")


async def call(toolbox: Toolbox, tool: str, /, **arguments: object) -> ToolOutcome:
    return await toolbox.call(ToolCall("c1", tool, dict(arguments)))


needs_sandbox = pytest.mark.skipif(
    sandbox_problem() is not None,
    reason=f"shell sandbox unavailable: {sandbox_problem()}",
)

Check = Callable[[ToolOutcome], None]

"""Persistent agent memory: `memory.md` plus one `{name}-NNN.md` segment per session.

| persist   | folder                              | lifetime            |
| --------- | ----------------------------------- | ------------------- |
| `true`    | `.prose/runs/{id}/agents/{name}/`   | the run             |
| `project` | `.prose/agents/{name}/`             | the project         |
| `user`    | `~/.prose/agents/{name}/`           | across projects     |
| `"path"`  | that path (relative to the project) | the user's decision |
"""

from __future__ import annotations

from pathlib import Path

from openprose.files import write_atomically
from openprose.locks import locked
from openprose.record.runstore import utc_now

LOCK_NAME = ".lock"  # held while a session's memory and segment are written


def keeps_memory_in_run(persist: str | None) -> bool:
    """Whether an agent with this `persist` keeps its memory in the run folder (`for_agent`)."""
    if persist is None:
        return False
    return not persist.startswith("path:") and persist not in ("project", "user")


class AgentMemory:
    def __init__(self, name: str, folder: Path) -> None:
        self.name = name
        self.folder = folder

    @classmethod
    def for_agent(
        cls, name: str, persist: str, *, run_agents: Path, project_dir: Path
    ) -> AgentMemory:
        if persist.startswith("path:"):
            folder = Path(persist.removeprefix("path:")).expanduser()
            if not folder.is_absolute():
                folder = project_dir / folder
        elif persist == "project":
            folder = project_dir / ".prose" / "agents" / name
        elif persist == "user":
            folder = Path.home() / ".prose" / "agents" / name
        else:
            folder = run_agents / name
        return cls(name, folder)

    @property
    def path(self) -> Path:
        return self.folder / "memory.md"

    def read(self) -> str | None:
        try:
            return self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def exists(self) -> bool:
        return self.path.exists()

    def write(
        self, text: str, task: str, *, segment: int | None = None, replayed: bool = False
    ) -> int:
        """Store the new memory and this session's segment record; returns the segment number.

        Two runs may share a `project` or `user` memory: the segment number is chosen and its
        file written under the folder's lock, so neither run's segment replaces the other's."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with locked(self.folder / LOCK_NAME):
            number = segment if segment is not None else self._next_segment()
            write_atomically(self.path, text.rstrip() + "\n")
            segment_path = self.folder / f"{self.name}-{number:03d}.md"
            if not (replayed and segment_path.exists()):
                record = (
                    f"# Segment {number:03d}\ntimestamp: {utc_now()}\nprompt: {task!r}\n\n"
                    f"{text.rstrip()}\n"
                )
                write_atomically(segment_path, record)
        return number

    def _next_segment(self) -> int:
        prefix = f"{self.name}-"
        numbers = [
            int(p.stem[len(prefix) :])
            for p in self.folder.glob(f"{prefix}*.md")
            if p.stem[len(prefix) :].isdigit()
        ]
        return max(numbers, default=0) + 1

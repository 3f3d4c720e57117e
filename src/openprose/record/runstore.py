"""The run folder `.prose/runs/{YYYYMMDD}-{HHMMSS}-{rand6}/` and everything written into it.

program.prose   the program as run          run.json      how it was started, its status
state.md        append-only markers         journal.jsonl every event, keyed by step id
bindings/       one {name}.md per binding   outputs.json  the program's outputs
agents/         persist: true memories      imports/      invoked programs, same layout
.lock           held (flock) by the one process writing the run
"""

from __future__ import annotations

import asyncio
import itertools
import secrets
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from cliconventions.terminal import one_line
from openprose.files import write_bytes_atomically, write_chunks_atomically
from openprose.locks import FileLock, LockHeld, try_lock
from openprose.record.journal import JOURNAL_FILE
from openprose.record.writer import shared_writer
from openprose.statefiles import read_state_file, valid_pid

RUNS_DIR = Path(".prose") / "runs"


def new_run_id(now: float | None = None) -> str:
    stamp = datetime.fromtimestamp(time.time() if now is None else now, UTC)
    return f"{stamp:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


_made_runs_dirs: set[Path] = set()


def reserve_run_id(project_dir: Path) -> str:
    """A new run id whose folder this call created: ids are random within a second, so
    two runs started in the same second (a batch starts thousands) must not share one."""
    runs = project_dir / RUNS_DIR
    if runs not in _made_runs_dirs:  # once per process: a batch reserves thousands
        runs.mkdir(parents=True, exist_ok=True)
        _made_runs_dirs.add(runs)
    while True:
        run_id = new_run_id()
        try:
            (runs / run_id).mkdir()
        except FileExistsError:
            continue
        return run_id


_last_stamp: tuple[int, str] = (0, "")


def utc_now() -> str:
    """The time to the second, as run.json and state.md give it (formatted once a second:
    a batch asks thousands of times)."""
    global _last_stamp
    now = int(time.time())
    if _last_stamp[0] != now:
        _last_stamp = (now, datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return _last_stamp[1]


def process_started(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot, Linux), or None when unknown.
    With the pid it tells a live run from an unrelated process that reused its pid."""
    if valid_pid(pid) is None:
        return None
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()
    try:
        return int(fields[19])  # field 22 of proc(5); fields[0] is field 3
    except (IndexError, ValueError):
        return None


LOCK_NAME = ".lock"


class RunBusy(ValueError):
    """Another process is writing the run (it holds the run's lock)."""

    def __init__(self, run_dir: Path, pid: int | None) -> None:
        who = f"pid {pid}" if pid is not None else "another process"
        super().__init__(f"run {run_dir.name} is being written by {who}")
        self.pid = pid


def lock_run(run_dir: Path) -> FileLock:
    """The run's one-writer lock, held until released or until this process exits (the kernel
    drops it on any exit, kill -9 included). Everything that writes a run takes it first:
    `prose run`, `prose resume`, a batch resuming its runs. Another process holding it is
    `RunBusy` ("run RUN is being written by pid N"); this process may take it again."""
    try:
        return try_lock(run_dir / LOCK_NAME)
    except LockHeld as held:
        raise RunBusy(run_dir, held.pid) from None
    except OSError as error:
        raise DamagedRun(f"{run_dir}: cannot lock the run ({error.strerror})") from None


def _dump_json(value: Any) -> bytes:
    # orjson's own newline: `+ b"\n"` copied the whole text (2.6 MB for 100,000 outputs)
    return orjson.dumps(
        value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE
    )


Text = str | Iterable[str]  # a file's text, whole or in pieces (written one at a time)


def _write_binding(path: Path, texts: list[Text]) -> None:
    """On the writer thread: the latest text of a binding (a name rewritten many times in
    one batch, `draft = session ...` in a loop, is written once; the earlier pieces are never
    made), atomically (temp + rename), never fsynced: bindings are views of the journal (a
    resume rewrites them)."""
    text = texts[-1]
    if isinstance(text, str):
        write_bytes_atomically(path, text.encode("utf-8"))
    else:
        write_chunks_atomically(path, text)


def state_header(run_id: str, program_name: str) -> str:
    """The first line of a run's state.md."""
    return f"# run:{run_id} {program_name}\n"


class RunStore:
    """One run folder (or one `imports/{handle}--{slug}/` namespace inside it).

    A batch's runs use `openprose.record.runlog.LoggedRunStore`, which records the same writes
    in the batch's run log instead; the folder is made from them when first asked for."""

    keeps_audit_trail = True  # writes audit.ndjson as the run goes (else made from the journal)
    # Its files are files (not records after the journal's in one log): what they say must
    # wait for the journal to hold it.
    writes_files = True
    _held_state: list[str] | None = None  # state.md lines waiting for the journal's write

    def __init__(self, root: Path, run_id: str) -> None:
        self.root = root
        self.run_id = run_id
        self.bindings = root / "bindings"
        self.agents = root / "agents"
        self.imports = root / "imports"
        self._state: Any = None
        self._meta: dict[str, Any] | None = None  # run.json as last written by this process
        self._writer = shared_writer()
        self._run_lock: FileLock | None = None

    @classmethod
    def create(
        cls,
        project_dir: Path,
        program_text: str,
        program_name: str,
        run_id: str | None = None,
    ) -> RunStore:
        """A new run folder; `run_id` is one `reserve_run_id` gave or a batch's id for the
        run, else a fresh one. The run's writer lock is taken before anything is written."""
        if run_id is None:
            run_id = reserve_run_id(project_dir)
        store = cls(project_dir / RUNS_DIR / run_id, run_id)
        store.root.mkdir(parents=True, exist_ok=True)  # a batch's ids are not reserved
        store.take_lock()
        store._lay_out(program_text, program_name)
        return store

    def take_lock(self) -> None:
        """Become the run's one writer (`lock_run`) until `close`; `RunBusy` otherwise."""
        if self._run_lock is None:
            self._run_lock = lock_run(self.root)

    @classmethod
    def open(cls, root: Path) -> RunStore:
        store = cls(root, "")
        store.run_id = str(store.read_meta().get("run_id") or root.name)
        return store

    def namespace(self, name: str, program_text: str, program_name: str) -> RunStore:
        child = RunStore(self.imports / name, self.run_id)
        if not (child.root / "program.prose").exists():
            child._lay_out(program_text, program_name)
        return child

    def _lay_out(self, program_text: str, program_name: str) -> None:
        for folder in (self.root, self.bindings, self.agents, self.imports):
            folder.mkdir(parents=True, exist_ok=True)
        (self.root / "program.prose").write_text(program_text, encoding="utf-8")
        state = self.root / "state.md"
        if not state.exists():
            state.write_text(state_header(self.run_id, program_name), encoding="utf-8")

    # --- files -------------------------------------------------------------------------

    @property
    def journal_path(self) -> Path:
        return self.root / JOURNAL_FILE

    @property
    def meta_path(self) -> Path:
        return self.root / "run.json"

    def read_meta(self) -> dict[str, Any]:
        """run.json; `DamagedRun` (naming the file and why) when it cannot be read."""
        try:
            data = orjson.loads(read_state_file(self.meta_path))
        except OSError as error:
            raise DamagedRun(f"{self.meta_path}: cannot read ({error.strerror})") from None
        except orjson.JSONDecodeError as error:
            raise DamagedRun(f"{self.meta_path}: damaged, not valid JSON ({error})") from None
        if not isinstance(data, dict):
            raise DamagedRun(f"{self.meta_path}: damaged, not a run record")
        self._meta = data
        return dict(data)

    def write_meta(self, meta: dict[str, Any]) -> None:
        self._meta = dict(meta)
        write_bytes_atomically(self.meta_path, _dump_json(meta))

    def written_meta(self) -> dict[str, Any]:
        """run.json as this process last wrote or read it (no disk read), else read."""
        return dict(self._meta) if self._meta is not None else self.read_meta()

    def has_journal_events(self) -> bool:
        """Whether the journal holds anything yet (a run killed before its first event
        has an empty or missing one)."""
        try:
            return self.journal_path.stat().st_size > 0
        except OSError:
            return False

    def update_meta(self, **changes: Any) -> None:
        # This process wrote (or read) run.json last, so no need to read it back.
        meta = self._meta if self._meta is not None else self.read_meta()
        self.write_meta({**meta, **changes})

    def open_state(self) -> None:
        """Open state.md for appending now (from a worker thread: a batch opens thousands)."""
        if self._state is None:
            self._state = (self.root / "state.md").open("a", encoding="utf-8")

    def state(self, line: str) -> None:
        """Append one marker line to state.md (never rewritten), every control character
        escaped: state.md is read with `cat`, and a model's words are in its lines."""
        line = one_line(line)
        if self._held_state is not None:
            self._held_state.append(line + "\n")
            return
        self.open_state()
        self._state.write(line + "\n")
        self._state.flush()

    def hold_state(self, holding: bool = True) -> None:
        """While held, state.md lines wait for `write_held_state`, which the VM calls after
        each journal write: state.md never says more than the journal holds (a line for a
        session a kill -9 then lost), and a turn's lines go out in one `write`.
        `hold_state(False)` writes what waits and stops holding."""
        self.write_held_state()
        self._held_state = [] if holding else None

    def write_held_state(self) -> None:
        held = self._held_state
        if held:
            self._held_state = []
            self.open_state()
            self._state.write("".join(held))
            self._state.flush()

    def write_binding(
        self,
        name: str,
        kind: str,
        source: str,
        value_text: Text,
        execution_id: int | None = None,
    ) -> None:
        """`value_text`: the value's text, or its pieces (taken on the writer thread, so a
        big value's text is never built whole)."""
        file_name = f"{name}__{execution_id}.md" if execution_id else f"{name}.md"
        scope = f"execution_id: {execution_id}\n" if execution_id else ""
        # state/filesystem.md's layout, blank lines included.
        head = f"# {name}\n\nkind: {kind}\n{scope}\nsource:\n```prose\n{source}\n```\n\n---\n\n"
        if isinstance(value_text, str):
            self._write_view(f"bindings/{file_name}", f"{head}{value_text}\n")
        else:
            self._write_view(f"bindings/{file_name}", itertools.chain((head,), value_text, "\n"))

    def _write_view(self, name: str, text: Text) -> None:
        """A file that only shows what the journal holds (a binding): written soon, unsynced.
        `name` is relative to the run folder."""
        self._writer.put(_write_binding, self.root / name, text)

    def write_outputs(self, outputs: dict[str, Any]) -> None:
        write_bytes_atomically(self.root / "outputs.json", _dump_json(outputs))

    def read_outputs(self) -> dict[str, Any] | None:
        """outputs.json; None when missing, `DamagedRun` when it cannot be read."""
        path = self.root / "outputs.json"
        try:
            data = orjson.loads(read_state_file(path))
        except FileNotFoundError:
            return None
        except OSError as error:
            raise DamagedRun(f"{path}: cannot read ({error.strerror})") from None
        except orjson.JSONDecodeError as error:
            raise DamagedRun(f"{path}: damaged, not valid JSON ({error})") from None
        return data if isinstance(data, dict) else None

    async def offload(self, work: Callable[[], None]) -> None:
        """Run `work` (file writes) on a worker thread: a batch's other runs go on meanwhile."""
        await asyncio.to_thread(work)

    async def aflush(self) -> None:
        """Wait until this process's pending binding files (and audit batches) are written."""
        await self._writer.aflush()

    def close(self) -> None:
        """Flush this run's bindings and close state.md (blocking: from async code, await
        `aflush` first)."""
        self._writer.flush()
        self.write_held_state()
        if self._state is not None:
            self._state.close()
            self._state = None
        if self._run_lock is not None:
            self._run_lock.release()
            self._run_lock = None


class AmbiguousRun(ValueError):
    """A run id prefix that matches several runs; the message lists them all."""

    SHOWN = 12  # a batch's id prefix matches thousands of runs: name the first ones

    def __init__(self, spec: str, matches: list[Path]) -> None:
        names = ", ".join(m.name for m in matches[: self.SHOWN])
        if len(matches) > self.SHOWN:
            names += f", ... ({len(matches) - self.SHOWN} more)"
        super().__init__(
            f"{spec!r} is ambiguous, it matches {len(matches)} runs: {names}; "
            f"give more of the run id"
        )
        self.matches = matches


class DamagedRun(ValueError):
    """A run folder whose run.json cannot be read; the message names the file and why."""


def find_run(
    project_dir: Path, spec: str, *, marker: str = "run.json", exclude: Path | None = None
) -> Path | None:
    """A run by folder path, by exact id, or by unique id prefix under `.prose/runs/`; None
    when nothing matches. A run counts when its folder holds `marker` (`prose replay:` asks
    for the journal). `exclude` is never a candidate for an id or prefix. A prefix matching
    several runs raises `AmbiguousRun`, never a guess. `prose show`, `prose resume` and
    `--provider replay:ID` all resolve runs here."""
    direct = Path(spec)
    if len(direct.parts) != 1 and (direct / marker).exists():
        return direct
    runs = project_dir / RUNS_DIR
    skip = None if exclude is None else exclude.resolve()
    candidates = (
        sorted(
            p
            for p in runs.iterdir()
            if p.name.startswith(spec) and (p / marker).is_file() and p.resolve() != skip
        )
        if runs.is_dir() and spec
        else []
    )
    exact = [p for p in candidates if p.name == spec]
    matches = exact or candidates
    if len(matches) > 1:
        raise AmbiguousRun(spec, matches)
    if matches:
        return matches[0]
    if (direct / marker).exists():  # a run folder named by a bare relative path
        return direct
    return None


def list_runs(project_dir: Path) -> list[Path]:
    runs = project_dir / RUNS_DIR
    if not runs.is_dir():
        return []
    return sorted(p for p in runs.iterdir() if (p / "run.json").exists())

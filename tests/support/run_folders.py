"""A run folder as comparable data: what two runs of the same program and inputs must
share, whatever wrote them (a folder run, a run materialized from a batch's run log, a
Ray worker)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

# Fields that differ between any two runs: times, the process, where the program lives,
# the provider's request ids (the scripted provider numbers its answers per process).
VOLATILE = {"t", "elapsed", "started", "finished", "pid", "pid_started", "program_dir", "program"}
VOLATILE |= {"request_id"}


def scrub(value: Any, run_id: str = "") -> Any:
    """`value` without what differs between two runs of it (times, pids, the run id)."""
    if isinstance(value, dict):
        return {k: scrub(v, run_id) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [scrub(v, run_id) for v in value]
    if isinstance(value, str):
        value = value.replace(run_id, "RUN") if run_id else value
        return re.sub(r"\d{4}-\d\d-\d\dT[\d:.]+Z", "TIME", value)
    return value


def run_tree(root: Path) -> dict[str, Any]:
    """relative path -> scrubbed content (JSON parsed) of every file and folder of a run."""
    files: dict[str, Any] = {}
    for path in sorted(root.rglob("*")):
        name = path.relative_to(root).as_posix()
        if path.is_dir():
            files[name + "/"] = None
        elif name == ".lock":
            continue
        elif path.suffix == ".json":
            files[name] = scrub(json.loads(path.read_text()), root.name)
        elif path.suffix in (".jsonl", ".ndjson"):
            lines = path.read_text().splitlines()
            files[name] = [scrub(json.loads(x), root.name) for x in lines]
        else:
            files[name] = scrub(path.read_text(), root.name)
    return files

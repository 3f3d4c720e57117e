"""The Ray executor on a local Ray instance: the same rows as in process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openprose.cli import main
from tests.support.run_folders import run_tree

pytest.importorskip("ray", reason="the [ray] extra is not installed")


def rows_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def comparable(path: Path) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    keep = ("line", "status", "outputs", "error")
    cleaned = []
    for row in sorted(rows, key=lambda r: r["line"]):
        entry = {k: row[k] for k in keep}
        if entry["error"]:  # the message names the run's statement, not the run id
            entry["error"] = entry["error"].split(": ", 1)[1]
        cleaned.append(entry)
    return cleaned


@pytest.mark.timeout(240)
def test_ray_rows_equal_in_process_rows(project: Path) -> None:
    (project / "in.jsonl").write_text(
        "".join(f'{{"topic": "t{i}"}}\n' for i in range(8))
        + '{"topic": "fail me"}\nnot json\n{"topic": "last"}\n'
    )
    base = ["batch", "p.prose", "in.jsonl", "--provider", "scripted:rules.yaml"]
    assert main([*base, "-o", "local.jsonl"]) == 1
    assert main([*base, "-o", "ray.jsonl", "--executor", "ray", "--max-runs", "4"]) == 1
    local, ray_rows = comparable(project / "local.jsonl"), comparable(project / "ray.jsonl")
    assert ray_rows == local
    assert [r["status"] for r in ray_rows].count("succeeded") == 9
    # the workers wrote normal run folders under this project; the in-process runs are in
    # their batch's run log, and the folder `prose show` makes from it is the same folder
    runs = project / ".prose" / "runs"
    ray_ids = [json.loads(x)["run_id"] for x in (project / "ray.jsonl").read_text().splitlines()]
    for run_id in filter(None, ray_ids):
        meta = json.loads((runs / run_id / "run.json").read_text())
        assert meta["status"] in ("succeeded", "failed")
    local_ids = {r["line"]: r["run_id"] for r in rows_of(project / "local.jsonl")}
    ray_by_line = {r["line"]: r["run_id"] for r in rows_of(project / "ray.jsonl")}
    for line in (1, 9):  # a success and a failure
        assert main(["show", local_ids[line]]) == 0
        assert without_limit(run_tree(runs / local_ids[line])) == without_limit(
            run_tree(runs / ray_by_line[line])
        )


def without_limit(tree: dict) -> dict:
    """A run's files but the provider limit it records: a Ray worker's run ran with its
    worker's share of the batch's limit, and says so."""
    meta = tree["run.json"]
    assert isinstance(meta["config"]["max_concurrency"], int)
    meta["config"].pop("max_concurrency")
    meta.get("launch", {}).pop("max_concurrency", None)
    return tree


def test_unreachable_ray_cluster_is_a_usage_error(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "in.jsonl").write_text('{"topic": "a"}\n')
    code = main(
        [
            "batch",
            "p.prose",
            "in.jsonl",
            "--provider",
            "scripted:rules.yaml",
            "--executor",
            "ray",
            "--ray-address",
            "127.0.0.1:1",
        ]
    )
    assert code == 2
    assert "cannot start Ray (127.0.0.1:1): nothing answers there" in capsys.readouterr().err
    assert not (project / ".prose" / "batches").exists()

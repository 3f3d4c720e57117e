"""Resume: finished sessions and decisions come from the journal, never from a provider."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from openprose.providers import ModelRequest, ModelResponse


class Crash(BaseException):
    """Stands in for the process dying mid-run."""


class CrashAfter:
    """Answers like `inner` until `limit` requests were answered, then dies on the next one."""

    name = "scripted"

    def __init__(self, inner: Any, limit: int) -> None:
        self.inner, self.limit, self.answered = inner, limit, 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if self.answered >= self.limit:
            raise Crash
        response: ModelResponse = await self.inner.complete(request)
        self.answered += 1
        return response

    async def aclose(self) -> None:
        return None


PROGRAM = """agent critic:
  model: opus
  prompt: "You criticise"
let draft = session "Write draft"
loop until **the draft is polished** (max: 4) as round:
  draft = session: critic
    prompt: "Improve {draft} round {round}"
parallel:
  a = session "Branch A about {draft}"
  b = session "Branch B about {draft}"
let items = ["x", "y", "z"] | pmap:
  session "Item {item}"
output final = session "Final {a} {b}"
  context: items
"""


def rules(vm: Any) -> list[dict[str, Any]]:
    # Answers depend only on the request, so a resumed run meets the same answers.
    def polished(r: ModelRequest) -> str:
        return f'{{"verdict": {str("d0++" in r.last_user_text()).lower()}}}'

    return [
        {"match": "^Condition: the draft is polished", "answer": polished},
        {"match": "^Write draft", "answer": "d0"},
        {"match": "^Improve", "answer": lambda r: r.last_user_text().split()[1] + "+"},
        {"match": "^Branch A", "answer": "A"},
        {"match": "^Branch B", "answer": "B"},
        {"match": "^Item", "answer": lambda r: "I" + r.last_user_text().split()[1].split("\n")[0]},
        {"match": "^Final", "answer": lambda r: r.last_user_text()},
    ]


@pytest.mark.parametrize("crash_after", [1, 3, 5, 7, 9])
def test_resume_after_crash_sends_only_unfinished_work(vm: Any, crash_after: int) -> None:
    reference = vm.run(PROGRAM, vm.spy(rules(vm)))
    assert reference.status == "succeeded"

    first = vm.spy(rules(vm))
    with pytest.raises(Crash):
        vm.run(PROGRAM, CrashAfter(first, crash_after))
    run_dir = max((vm.project / ".prose" / "runs").iterdir(), key=lambda p: p.stat().st_mtime)
    finished = {
        json.dumps(e["request"]["messages"]) for e in vm.events_in(run_dir, "session_finished")
    }
    assert len(finished) == crash_after

    second = vm.spy(rules(vm))
    resumed = vm.resume(run_dir, second)
    assert resumed.status == "succeeded", resumed.error
    assert resumed.outputs == reference.outputs
    resent = [
        r
        for r in second.requests
        if json.dumps([{"role": m.role, "content": m.content} for m in r.messages]) in finished
    ]
    assert resent == []
    assert resumed.usage["requests_served_from_journal"] == crash_after
    assert resumed.usage["requests_sent"] + crash_after == reference.usage["requests_sent"]
    assert json.loads((run_dir / "outputs.json").read_text()) == reference.outputs


def test_resume_of_failed_run_retries_only_the_failure(vm: Any) -> None:
    source = 'let a = session "One"\nlet b = session "Two"\noutput c = session "Three {a} {b}"\n'
    broken = vm.spy([{"match": "^Two", "answer": "x", "failures": ["error"]}])
    failed = vm.run(source, broken)
    assert failed.status == "failed"
    again = vm.spy()
    resumed = vm.resume(failed.run_dir, again)
    assert resumed.status == "succeeded"
    assert [p.split("\n")[0] for p in again.prompts()] == ["Two", "Three ok ok"]


PROSE = "import sys; from openprose.cli import main; sys.exit(main(sys.argv[1:]))"


def _prose(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", PROSE, *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


CHAIN = (
    'let acc = "s"\nrepeat 12 as i:\n  acc = session "Step {i} after {acc}"\noutput last = acc\n'
)
FANOUT = (
    "let xs = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]\n"
    'let ys = xs | pmap:\n  session "Item {item}"\noutput last = session "Sum"\n  context: []\n'
)


@pytest.mark.parametrize(("program", "total"), [(CHAIN, 12), (FANOUT, 13)], ids=["chain", "pmap"])
def test_sigkill_mid_run_then_resume_resends_nothing_finished(
    tmp_path: Path, program: str, total: int
) -> None:
    (tmp_path / "chain.prose").write_text(program)
    (tmp_path / "rules.yaml").write_text('latency_ms: 100\ndefault: "ok"\nrules: []\n')
    process = _prose(
        "run",
        "chain.prose",
        "--provider",
        "scripted:rules.yaml",
        "--max-concurrency",
        "3",
        cwd=tmp_path,
    )
    runs = tmp_path / ".prose" / "runs"
    deadline = time.monotonic() + 20
    journal: Path | None = None
    while time.monotonic() < deadline:
        found = list(runs.glob("*/journal.jsonl")) if runs.exists() else []
        if found and found[0].read_text().count('"session_finished"') >= 4:
            journal = found[0]
            break
        time.sleep(0.01)
    assert journal is not None, process.communicate()
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    shown = process.stderr.read() if process.stderr else ""
    # The journal is written once per event-loop turn; what a person could read before the
    # kill (progress lines on stderr, state.md) never says more than it holds.
    journaled = {
        json.loads(line)["step"]
        for line in journal.read_text().splitlines()
        if '"session_finished"' in line
    }
    progress = [line.split("✓ ")[1].split()[0] for line in shown.splitlines() if "✓ " in line]
    assert progress and set(progress) <= journaled, (progress, journaled)
    marked = [
        line.split("→")[0]
        for line in (journal.parent / "state.md").read_text().splitlines()
        if line.endswith("✓")
    ]
    assert set(marked) <= journaled, (marked, journaled)
    # Binding files are written by a background thread: after SIGKILL each one is absent or
    # whole (temp file + rename), never torn.
    for binding in (journal.parent / "bindings").glob("*.md"):
        text = binding.read_text()
        assert text.startswith(f"# {binding.stem}\n") and "\n---\n" in text, text
        assert text.endswith("\n")
    finished_before = [
        json.loads(line)
        for line in journal.read_text().splitlines()
        if '"session_finished"' in line
    ]
    assert 4 <= len(finished_before) < total
    listing = subprocess.run(
        [sys.executable, "-c", PROSE, "runs"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert "interrupted" in listing.stdout

    cassette = tmp_path / "resent.jsonl"
    resumed = _prose(
        "resume", journal.parent.name, "--json", "--record", str(cassette), cwd=tmp_path
    )
    out, err = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, err
    result = json.loads(out)
    assert result["status"] == "succeeded"
    assert result["outputs"] == {"last": "ok"}
    assert result["usage"]["requests_served_from_journal"] == len(finished_before)
    assert result["usage"]["requests_sent"] == total - len(finished_before)
    # Independently of the journal: what the resumed run sent, as recorded at the provider.
    sent = [json.loads(line)["request"] for line in cassette.read_text().splitlines()]
    finished_prompts = {e["request"]["messages"][0]["content"] for e in finished_before}
    assert len(sent) == total - len(finished_before)
    assert finished_prompts.isdisjoint(r["messages"][0]["content"] for r in sent)
    events = [json.loads(line) for line in journal.read_text().splitlines()]
    restart = max(i for i, e in enumerate(events) if e["ev"] == "run_started")
    started_after = {e["step"] for e in events[restart:] if e["ev"] == "session_started"}
    assert started_after.isdisjoint({e["step"] for e in finished_before})
    assert len(started_after) == total - len(finished_before)


def test_resumed_anonymous_sessions_keep_their_names(vm: Any) -> None:
    source = 'session "One"\nsession "Two"\nsession "Three"\n'
    failed = vm.run(source, vm.spy([{"match": "^Three", "answer": "x", "failures": ["error"]}]))
    assert failed.status == "failed"
    resumed = vm.resume(failed.run_dir, vm.spy())
    assert resumed.status == "succeeded"
    names = sorted(p.name for p in (failed.run_dir / "bindings").iterdir())
    assert names == ["anon_001.md", "anon_002.md", "anon_003.md"]


def test_resumed_run_returns_the_same_final_result(vm: Any) -> None:
    program = 'session "Write draft"\nsession "Final"\n'
    reference = vm.run(program, vm.spy(rules(vm)))
    assert reference.outputs == {} and reference.result and reference.result.startswith("Final")
    with pytest.raises(Crash):
        vm.run(program, CrashAfter(vm.spy(rules(vm)), 1))
    run_dir = max((vm.project / ".prose" / "runs").iterdir(), key=lambda p: p.stat().st_mtime)
    resumed = vm.resume(run_dir, vm.spy(rules(vm)))
    assert resumed.result == reference.result
    assert json.loads((run_dir / "run.json").read_text())["result"] == reference.result


def test_resumed_races_resend_no_cancelled_loser(vm: Any) -> None:
    def latency(match: str, seconds: float, answer: str) -> dict[str, Any]:
        return {"match": match, "answer": answer, "latency_ms": seconds * 1000}

    def answers(*extra: dict[str, Any]) -> Any:
        return vm.spy(
            [
                *extra,
                {"match": "^Finish", "answer": lambda r: r.last_user_text()},
                latency("^Slow", 5.0, "late"),
                latency("^Quick", 0.01, "quick"),
                latency("^Item b", 0.01, "B"),
                latency("^Item c", 0.02, "C"),
                latency("^Item", 5.0, "late item"),
            ]
        )

    source = """let w = parallel ("first"):
  session "Slow way"
  session "Quick way"
let two = parallel ("any", count: 2) for x in ["a", "b", "c", "d"]:
  session "Item {x}"
output out = session "Finish {w} {two}"
  context: []
"""
    reference = vm.run(source, answers())
    assert reference.outputs == {"out": "Finish quick [1] B\n\n[2] C"}
    failed = vm.run(source, answers({"match": "^Finish", "answer": "x", "failures": ["error"]}))
    assert failed.status == "failed"
    decided = {e["step"]: (e["won"], e["failed"]) for e in vm.events(failed, "race_decided")}
    assert decided == {"1": ([1], []), "2": ([1, 2], [])}
    again = answers()
    resumed = vm.resume(failed.run_dir, again)
    assert resumed.status == "succeeded" and resumed.outputs == reference.outputs
    # Only the failed session goes out again: the winners are served, the losers stay cancelled.
    assert [p.split("\n")[0] for p in again.prompts()] == ["Finish quick [1] B"]
    assert again.cancelled == 0
    assert resumed.usage["requests_served_from_journal"] == 3

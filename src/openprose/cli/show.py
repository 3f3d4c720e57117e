"""``prose show RUN``: a run's steps, decisions, bindings and outputs."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from openprose.record.journal import JOURNAL_FILE


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_ref", metavar="RUN", help="run id (or unique prefix) or run folder")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--vlp",
        action="store_true",
        help="print the run's audit trail (VLP 1.1 NDJSON; pipe it to `vlp validate -`)",
    )
    parser.add_argument(
        "--cassette",
        metavar="FILE",
        help="also write the run's model exchanges as a replay cassette (for --provider replay:FILE)",
    )


def run(args: argparse.Namespace) -> int:
    from openprose.project import runs_home
    from openprose.record.logged_runs import resolve_run
    from openprose.record.runstore import RUNS_DIR, AmbiguousRun, DamagedRun, RunBusy, RunStore
    from openprose.session.runs import resume_command, status_of

    home = runs_home()
    try:
        run_dir = resolve_run(home, args.run_ref)
        if run_dir is None:
            print(f"prose: no run {args.run_ref!r} under {home / RUNS_DIR}", file=sys.stderr)
            return 2
        store = RunStore.open(run_dir)
        meta = store.read_meta()
    except (AmbiguousRun, DamagedRun, RunBusy) as error:
        print(f"prose: {error}", file=sys.stderr)
        return 2
    if args.vlp:
        return _print_trail(store.root, store.run_id, str(meta.get("program") or ""))
    if args.cassette:
        from openprose.providers.replay import write_cassette

        try:
            count = write_cassette(store.journal_path, Path(args.cassette))
        except OSError as error:
            print(f"prose: --cassette {args.cassette}: {error.strerror}", file=sys.stderr)
            return 2
        except (KeyError, TypeError, ValueError, OverflowError) as error:
            print(
                f"prose: --cassette {args.cassette}: {store.journal_path} holds a damaged "
                f"exchange ({type(error).__name__}: {error})",
                file=sys.stderr,
            )
            return 2
        plural = "exchange" if count == 1 else "exchanges"
        print(f"wrote {count} {plural} to {args.cassette}", file=sys.stderr)
    damaged: list[str] = []  # what could not be shown, and why
    view = _journal(store.journal_path, damaged)
    bindings = (
        sorted(p.stem for p in store.bindings.glob("*.md")) if store.bindings.is_dir() else []
    )
    outputs = _outputs(store.root / "outputs.json", damaged)
    status = status_of(meta, store.root)
    shown = {
        "run_id": store.run_id,
        "status": status,
        "program": meta.get("program"),
        **_parent(meta),
        "error": meta.get("error") or _why_it_stopped(status, meta, store.root),
        "resume": resume_command(_run_ref(store.root, home), status, meta.get("error"), store.root),
        **view,
        "bindings": bindings,
        "outputs": outputs,
        "result": meta.get("result"),
        "usage": meta.get("usage"),
        **({"damaged": damaged} if damaged else {}),
    }
    if args.json:
        print(json.dumps(shown, indent=2, ensure_ascii=False))
        return 0
    _print_text(shown, meta)
    return 0


def _parent(meta: dict[str, Any]) -> dict[str, Any]:
    """A fork's parent (`forked_from`: run, step, the inputs and values it changed)."""
    parent = meta.get("forked_from")
    return {"forked_from": parent} if isinstance(parent, dict) else {}


def inherited_text(origin: dict[str, Any]) -> str:
    """Where a fork's answer came from: its parent's step, or `prose fork --set`."""
    if "set" in origin:
        return f"set by the fork: {origin['set']}"
    return f"from run {origin.get('run')} step {origin.get('step')}"


def _run_ref(run_dir: Path, home: Path) -> str:
    """How `prose resume` finds the run from here: its id in this project, else its folder."""
    from openprose.record.runstore import RUNS_DIR

    in_project = run_dir.resolve().parent == (home / RUNS_DIR).resolve()
    return run_dir.name if in_project else str(run_dir.resolve())


def _why_it_stopped(status: str, meta: dict[str, Any], run_dir: Path) -> str | None:
    """For a run whose process is gone without a word in run.json: the crash report's first
    line and where the report is, or that the process ended before the run did."""
    from openprose.vm.crashes import crash_report

    if status == "crashed" and (report := crash_report(run_dir, meta)) is not None:
        first, path = report
        return f"the process (pid {meta.get('pid')}) crashed: {first} (report: {path})"
    if status == "interrupted" and meta.get("status") == "running":
        return (
            f"the process running it (pid {meta.get('pid')}) ended before the run did "
            "(killed, or stopped with its batch)"
        )
    return None


def _print_text(shown: dict[str, Any], meta: dict[str, Any]) -> None:
    """The human view; every value from the run folder is neutralised on a terminal."""
    from openprose.terminal import printable as p

    print(f"run {p(shown['run_id'])}  {shown['status']}  {p(meta.get('program'))}")
    if "forked_from" in shown:
        parent = shown["forked_from"]
        print(f"forked from run {p(str(parent.get('run')))} at step {p(str(parent.get('step')))}")
    if shown["error"]:
        print(f"error: {p(shown['error'])}")
    if shown["resume"]:
        print(f"continue it with: {p(shown['resume'])}")
    steps = shown["steps"]
    print(f"\nsteps ({len(steps)}):")
    from openprose.providers.prices import cache_text

    for s in steps:
        answer = " ".join(p(s["answer"]).split())[:70]
        label = p(s["binding"] or s["kind"])
        cached = cache_text(s["cache_read_tokens"], s["cache_write_tokens"])
        if s.get("memo"):
            cached += f" (memo of run {p(str(s['memo'].get('run')))})"
        if s.get("inherited"):
            cached += f" ({p(inherited_text(s['inherited']))})"
        print(
            f"  {p(s['step']):<18} {label:<12} {p(s['model']):<10} {s['tokens']:>6} tok{cached}"
            f"  {answer}"
        )
    if shown["decisions"]:
        print(f"\ndecisions ({len(shown['decisions'])}):")
        from openprose.vm.progress import shown_verdict

        for d in shown["decisions"]:
            question = p(d["question"])[:40]
            verdict = shown_verdict(d["verdict"])
            print(
                f"  {p(d['step']):<18} {p(d['kind']):<9} {question}  → {p(verdict)}  "
                f"({p(d['reason'])})"
            )
    if shown["errors"]:
        print(f"\nerrors ({len(shown['errors'])}):")
        for e in shown["errors"]:
            print(f"  {p(e.get('step', '')):<18} {p(e.get('error') or e.get('question'))}")
    if shown["cancelled"]:
        print(f"\ncancelled ({len(shown['cancelled'])}): {p(', '.join(shown['cancelled']))}")
    _print_tools(
        shown["tool_calls"], shown["permissions"], shown["approvals"], shown["pending_approvals"]
    )
    _print_questions(shown["questions"])
    print(f"\nbindings ({len(shown['bindings'])}): {p(', '.join(shown['bindings']))}")
    if shown["outputs"]:
        print("\noutputs:")
        for name, value in shown["outputs"].items():
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            print(f"  {p(name)}: {p(text)}")
    if shown["result"] is not None:
        print(f"\nresult: {p(shown['result'])}")
    if shown.get("damaged"):
        print(f"\ndamaged ({len(shown['damaged'])}):")
        for problem in shown["damaged"]:
            print(f"  {p(problem)}")


def _print_questions(questions: list[dict[str, Any]]) -> None:
    """The run's `ask` questions: those answered (by whom, through what) and those waiting."""
    from openprose.terminal import neutralise, one_line

    if not questions:
        return
    print(f"\nquestions ({len(questions)}):")
    for q in questions:
        options = q.get("options") or []
        offered = " [" + " | ".join(f"{i}) {one_line(o)}" for i, o in enumerate(options, 1)) + "]"
        head = f"  {q['id']}: {one_line(str(q['question']))}{offered if options else ''}"
        if q.get("answer") is None:
            said = "waiting: prose answer RUN " + str(q["id"]) + " TEXT"
            if q.get("ignored"):
                said += f" (an answer was ignored: {q['ignored']})"
        elif q.get("by") == "timeout":
            said = f"no answer in time, took the default {q['answer']!r}"
        else:
            who = f"{q['user']} via " if q.get("user") else "via "
            said = f"answered {q['answer']!r} ({who}{q.get('by')})"
        print(neutralise(f"{head}  → {one_line(said)}"))


def _journal(path: Path, damaged: list[str]) -> dict[str, Any]:
    """Steps, decisions, errors, cancelled steps and the tool loop's events from the journal
    (`RunDigest`, which `prose ui` shows too). An event of the wrong shape is skipped and
    named in `damaged`, as is a journal that cannot be read."""
    from openprose.record.journal import read_journal
    from openprose.record.runview import RunDigest

    digest = RunDigest(str(path))
    try:
        digest.add_all(read_journal(path))
    except OSError as error:
        damaged.append(f"{path}: cannot read ({error.strerror or error})")
    damaged.extend(digest.damaged)
    steps = [
        {k: session[k] for k in STEP_FIELDS}
        | {"answer": session["answer"]}
        | ({"memo": session["memo"]} if session["memo"] else {})
        | ({"inherited": session["inherited"]} if session.get("inherited") else {})
        for session in map(digest.sessions.__getitem__, dict.fromkeys(digest.finished))
    ]
    return {
        "steps": steps,
        "decisions": [_plain(d) for d in digest.decisions],
        "errors": [_plain(e) for e in digest.errors],
        "cancelled": digest.cancelled,
        "tool_calls": [_plain(c) for c in digest.tool_calls],
        "permissions": [_plain(p) for p in digest.permissions],
        "approvals": [_plain(a) for a in digest.approvals],
        "pending_approvals": [
            {k: v for k, v in r.items() if k != "step"} for r in digest.pending.values()
        ],
        "questions": list(digest.questions.values()),
    }


STEP_FIELDS = (
    "step",
    "kind",
    "agent",
    "model",
    "binding",
    "tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "elapsed",
)


def _plain(record: dict[str, Any]) -> dict[str, Any]:
    """A digest record without the digest's bookkeeping (its index and version)."""
    return {k: v for k, v in record.items() if k not in ("n", "v")}


def _outputs(path: Path, damaged: list[str]) -> dict[str, Any] | None:
    import orjson

    from openprose.statefiles import read_state_file

    try:
        data = orjson.loads(read_state_file(path))
    except FileNotFoundError:
        return None
    except OSError as error:
        damaged.append(f"{path}: cannot read ({error.strerror or error})")
        return None
    except orjson.JSONDecodeError as error:
        damaged.append(f"{path}: not valid JSON ({error})")
        return None
    if not isinstance(data, dict):
        damaged.append(f"{path}: not a JSON object of outputs")
        return None
    return data


def _print_trail(run_dir: Path, run_id: str, program: str) -> int:
    """audit.ndjson as written; for a run made before trails existed (or with the trail
    turned off), the same messages derived from its journal."""
    from openprose.record.audit import AUDIT_FILE, translate_lines
    from openprose.record.journal import read_journal

    out = sys.stdout.buffer
    path = run_dir / AUDIT_FILE
    if path.exists():
        from openprose.statefiles import open_state_file

        try:  # a regular file only: a FIFO or /dev/zero in its place must not hang us
            trail = open_state_file(path)
        except OSError as error:
            print(f"prose: --vlp: {path}: cannot read ({error.strerror})", file=sys.stderr)
            return 2
        with trail:
            while chunk := trail.read(1 << 20):
                out.write(chunk)
    else:
        journal = run_dir / JOURNAL_FILE
        try:
            for line in translate_lines(read_journal(journal), run_id, Path(program).name):
                out.write(line)
        except (AttributeError, KeyError, TypeError, ValueError, OverflowError) as error:
            out.flush()
            print(
                f"prose: --vlp: {journal} holds a damaged event, the trail stops before it "
                f"({type(error).__name__}: {error})",
                file=sys.stderr,
            )
            return 2
    out.flush()
    return 0


def _print_tools(
    calls: list[dict[str, Any]],
    permissions: list[dict[str, Any]],
    approvals: list[dict[str, Any]],
    pending: list[dict[str, Any]],
) -> None:
    from openprose.terminal import neutralise, one_line
    from openprose.terminal import printable as shown

    # an action (a path, command, URL) is always shown escaped, on a terminal or not: the
    # person approving it must see what will run
    if calls:
        print(f"\ntool calls ({len(calls)}):")
        for c in calls:
            args = one_line(json.dumps(c["arguments"], ensure_ascii=False))[:60]
            if c["result"] is None:
                outcome = "no result (in flight when the run stopped)"
            else:
                outcome = ("error: " if c["is_error"] else "") + " ".join(str(c["result"]).split())[
                    :50
                ]
                if c["omitted_bytes"]:
                    outcome += f" [cut {c['omitted_bytes']} bytes]"
            print(shown(f"  {c['at']:<14} {c['tool']!s:<12} {args}  → {outcome}"))
    if permissions:
        print(f"\npermissions ({len(permissions)}):")
        for p in permissions:
            print(
                neutralise(
                    f"  {p['at']:<14} {p['decision']!s:<8} {p['kind']} {one_line(p['action'])}  "
                    f"({p['reason']})"
                )
            )
    if approvals:
        print(f"\napprovals ({len(approvals)}):")
        for a in approvals:
            action = one_line(str(a["action"]))
            print(neutralise(f"  {a['id']}: {a['answer']} ({a['kind']} {action}, by {a['by']})"))
    if pending:
        print(f"\nwaiting for approval ({len(pending)}): answer with prose approve / prose deny")
        for r in pending:
            action = one_line(str(r["action"]))
            print(neutralise(f"  {r['id']}: {r['tool']} wants to {r['kind']} {action}"))

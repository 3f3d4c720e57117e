"""``prose show RUN``: a run's steps, decisions, bindings and outputs."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


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
    from openprose.cli.runs import status_of
    from openprose.project import runs_home
    from openprose.vm.journal import read_journal
    from openprose.vm.runstore import RUNS_DIR, AmbiguousRun, DamagedRun, RunStore, find_run

    home = runs_home()
    try:
        run_dir = find_run(home, args.run_ref)
        if run_dir is None:
            print(f"prose: no run {args.run_ref!r} under {home / RUNS_DIR}", file=sys.stderr)
            return 2
        store = RunStore.open(run_dir)
        meta = store.read_meta()
    except (AmbiguousRun, DamagedRun) as error:
        print(f"prose: {error}", file=sys.stderr)
        return 2
    if args.vlp:
        return _print_trail(store.root, store.run_id, str(meta.get("program") or ""))
    if args.cassette:
        from openprose.vm.journal import write_cassette

        try:
            count = write_cassette(store.journal_path, Path(args.cassette))
        except OSError as error:
            print(f"prose: --cassette {args.cassette}: {error.strerror}", file=sys.stderr)
            return 2
        plural = "exchange" if count == 1 else "exchanges"
        print(f"wrote {count} {plural} to {args.cassette}", file=sys.stderr)
    steps: list[dict[str, Any]] = []
    decisions: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    cancelled: list[str] = []
    tool_calls: list[dict[str, Any]] = []
    permissions: list[dict[str, Any]] = []
    approvals: list[dict[str, Any]] = []
    pending: dict[str, dict[str, Any]] = {}
    for event in read_journal(store.journal_path):
        kind = event.get("ev")
        if kind in TOOL_EVENTS:
            _tool_event(event, tool_calls, permissions, approvals, pending)
            continue
        if kind == "session_finished":
            usage = event["response"]["usage"]
            steps.append(
                {
                    "step": event["step"],
                    "kind": event.get("kind", "session"),
                    "agent": event.get("agent"),
                    "model": event.get("model"),
                    "binding": event.get("binding"),
                    "tokens": usage["input_tokens"] + usage["output_tokens"],
                    "elapsed": event.get("elapsed"),
                    "answer": event["response"]["text"],
                }
            )
        elif kind == "decision":
            decisions.append(
                {k: event.get(k) for k in ("step", "kind", "question", "verdict", "reason")}
            )
        elif kind in ("session_failed", "error_caught", "decision_failed"):
            errors.append({k: v for k, v in event.items() if k != "t"})
        elif kind == "session_cancelled":
            cancelled.append(str(event["step"]))
    bindings = sorted(p.stem for p in store.bindings.glob("*.md"))
    outputs = store.read_outputs()
    shown = {
        "run_id": store.run_id,
        "status": status_of(meta),
        "program": meta.get("program"),
        "error": meta.get("error"),
        "steps": steps,
        "decisions": decisions,
        "errors": errors,
        "cancelled": cancelled,
        "tool_calls": tool_calls,
        "permissions": permissions,
        "approvals": approvals,
        "pending_approvals": list(pending.values()),
        "bindings": bindings,
        "outputs": outputs,
        "result": meta.get("result"),
        "usage": meta.get("usage"),
    }
    if args.json:
        print(json.dumps(shown, indent=2, ensure_ascii=False))
        return 0
    print(f"run {store.run_id}  {shown['status']}  {meta.get('program')}")
    if shown["error"]:
        print(f"error: {shown['error']}")
    print(f"\nsteps ({len(steps)}):")
    for s in steps:
        answer = " ".join(str(s["answer"]).split())[:70]
        label = s["binding"] or s["kind"]
        print(f"  {s['step']:<18} {label:<12} {s['model']:<10} {s['tokens']:>6} tok  {answer}")
    if decisions:
        from openprose.vm.progress import shown_verdict

        print(f"\ndecisions ({len(decisions)}):")
        for d in decisions:
            verdict = shown_verdict(d["verdict"])
            question = f"{d['question']!s:.40}"
            print(f"  {d['step']:<18} {d['kind']:<9} {question}  → {verdict}  ({d['reason']})")
    if errors:
        print(f"\nerrors ({len(errors)}):")
        for e in errors:
            print(f"  {e.get('step', ''):<18} {e.get('error') or e.get('question')}")
    if cancelled:
        print(f"\ncancelled ({len(cancelled)}): {', '.join(cancelled)}")
    _print_tools(tool_calls, permissions, approvals, list(pending.values()))
    print(f"\nbindings ({len(bindings)}): {', '.join(bindings)}")
    if outputs:
        print("\noutputs:")
        for name, value in outputs.items():
            print(f"  {name}: {value if isinstance(value, str) else json.dumps(value)}")
    if shown["result"] is not None:
        print(f"\nresult: {shown['result']}")
    return 0


def _print_trail(run_dir: Path, run_id: str, program: str) -> int:
    """audit.ndjson as written; for a run made before trails existed (or with the trail
    turned off), the same messages derived from its journal."""
    from openprose.vm.audit import AUDIT_FILE, encode, translate
    from openprose.vm.journal import read_journal

    out = sys.stdout.buffer
    path = run_dir / AUDIT_FILE
    if path.exists():
        with path.open("rb") as trail:
            for line in trail:
                out.write(line)
    else:
        for message in translate(
            read_journal(run_dir / "journal.jsonl"), run_id, Path(program).name
        ):
            out.write(encode(message))
    out.flush()
    return 0


TOOL_EVENTS = ("tool_call", "tool_result", "permission", "approval_requested", "approval_decided")


def _tool_event(
    event: dict[str, Any],
    calls: list[dict[str, Any]],
    permissions: list[dict[str, Any]],
    approvals: list[dict[str, Any]],
    pending: dict[str, dict[str, Any]],
) -> None:
    """Sort one tool-loop event into what `show` lists."""
    kind = event["ev"]
    where = f"{event.get('step', '')}~t{event.get('turn', 0)}.{event.get('index', 0)}"
    if kind == "tool_call":
        call = event.get("call") or {}
        calls.append(
            {"at": where, "tool": call.get("name"), "arguments": call.get("arguments"),
             "result": None, "is_error": None, "omitted_bytes": 0}
        )  # fmt: skip
    elif kind == "tool_result":
        for entry in reversed(calls):
            if entry["at"] == where and entry["result"] is None:
                entry.update(
                    result=event.get("content"),
                    is_error=event.get("is_error"),
                    omitted_bytes=event.get("omitted_bytes", 0),
                )
                break
    elif kind == "permission":
        permissions.append(
            {
                "at": where,
                **{k: event.get(k) for k in ("tool", "kind", "action", "decision", "reason")},
            }
        )
    elif kind == "approval_requested":
        pending[str(event["id"])] = {
            k: event.get(k) for k in ("id", "tool", "kind", "action", "agent")
        }
    else:
        pending.pop(str(event.get("id")), None)
        approvals.append({k: event.get(k) for k in ("id", "answer", "kind", "action", "by")})


def _print_tools(
    calls: list[dict[str, Any]],
    permissions: list[dict[str, Any]],
    approvals: list[dict[str, Any]],
    pending: list[dict[str, Any]],
) -> None:
    if calls:
        print(f"\ntool calls ({len(calls)}):")
        for c in calls:
            args = json.dumps(c["arguments"], ensure_ascii=False)[:60]
            if c["result"] is None:
                outcome = "no result (in flight when the run stopped)"
            else:
                outcome = ("error: " if c["is_error"] else "") + " ".join(str(c["result"]).split())[
                    :50
                ]
                if c["omitted_bytes"]:
                    outcome += f" [cut {c['omitted_bytes']} bytes]"
            print(f"  {c['at']:<14} {c['tool']:<12} {args}  → {outcome}")
    if permissions:
        print(f"\npermissions ({len(permissions)}):")
        for p in permissions:
            print(f"  {p['at']:<14} {p['decision']:<8} {p['kind']} {p['action']}  ({p['reason']})")
    if approvals:
        print(f"\napprovals ({len(approvals)}):")
        for a in approvals:
            print(f"  {a['id']}: {a['answer']} ({a['kind']} {a['action']}, by {a['by']})")
    if pending:
        print(f"\nwaiting for approval ({len(pending)}): answer with prose approve / prose deny")
        for r in pending:
            print(f"  {r['id']}: {r['tool']} wants to {r['kind']} {r['action']}")

"""`--estimate` of `prose run` and `prose check`: the bounds of a run printed instead of
it, and the refusal of a run whose upper bound is over a budget given on the command line
(`--max-sessions`, `--max-cost`) unless `--yes`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from openprose.vm.estimates import Estimate


def refusal(estimate: Estimate, budgets: dict[str, Any]) -> str | None:
    """Why a run with these command-line budgets is refused before it starts, or None."""
    sessions = estimate.sessions.high
    limit = budgets.get("max_sessions")
    if limit is not None:
        if sessions is None:
            why = f"may make unbounded model calls ({_why(estimate)})"
            return _refused(why, "--max-sessions", limit)
        if sessions > limit:
            return _refused(f"may make up to {sessions:,} model calls", "--max-sessions", limit)
    dollars = budgets.get("max_cost")
    cost = estimate.cost
    if dollars is not None and cost is not None:
        if cost.high is None:
            return _refused(f"may cost without bound ({_why(estimate)})", "--max-cost", dollars)
        if cost.high > dollars:
            return _refused(f"may cost up to ${cost.high:.4f}", "--max-cost", dollars)
    return None


def _refused(what: str, flag: str, limit: object) -> str:
    return f"refused before any call: the run {what}, over {flag} {limit}; pass --yes to run anyway"


def _why(estimate: Estimate) -> str:
    if not estimate.unbounded:
        return "no upper bound"
    more = len(estimate.unbounded) - 1
    return estimate.unbounded[0] + (f"; and {more} more" if more else "")


def print_estimates(estimates: list[Estimate], as_json: bool, stream: TextIO) -> None:
    if as_json:
        shown: Any = [e.to_json() for e in estimates]
        stream.write(json.dumps(shown[0] if len(shown) == 1 else shown, ensure_ascii=False) + "\n")
        return
    stream.write("\n\n".join(e.table() for e in estimates) + "\n")

"""Budgets for unbounded work: how many model calls, tokens and dollars a run may spend.

Checked before every model call that would be sent (calls served from the journal are free,
but count: a budget is for the whole run, across resumes). Hitting one stops the run as
`stopped: budget`; it stays resumable, and `prose resume RUN --max-sessions N` with a larger
budget goes on from there. Tokens and cost are known only once a call returns, so those two
stop the first call made after the limit is reached (a run may pass them by the calls in
flight at that moment)."""

from __future__ import annotations

from openprose import nodes as n
from openprose.vm.expressions import literal
from openprose.vm.runtime import RunStats, VMConfig

# `prose run` flags and the [vm] keys they set.
FLAGS = {
    "max_sessions": "--max-sessions",
    "max_run_tokens": "--max-tokens",
    "max_cost": "--max-cost",
}


class BudgetExhausted(Exception):
    """The run reached a budget. Not a program error: `try`/`catch` cannot catch it."""

    def __init__(self, limit: str, message: str) -> None:
        super().__init__(message)
        self.limit = limit  # the VMConfig field: max_sessions, max_run_tokens or max_cost


def check(config: VMConfig, stats: RunStats) -> None:
    """Raise `BudgetExhausted` when one more model call would go past a budget."""
    calls = stats.served + stats.sent + stats.in_flight
    if config.max_sessions is not None and calls >= config.max_sessions:
        raise BudgetExhausted(
            "max_sessions", f"{calls} model calls made, the limit is {config.max_sessions}"
        )
    tokens = stats.input_tokens + stats.output_tokens
    if config.max_run_tokens is not None and tokens >= config.max_run_tokens:
        raise BudgetExhausted(
            "max_run_tokens", f"{tokens} tokens spent, the limit is {config.max_run_tokens}"
        )
    if config.max_cost is not None and stats.cost >= config.max_cost:
        raise BudgetExhausted(
            "max_cost", f"${stats.cost:.4f} spent, the limit is ${config.max_cost:.4f}"
        )


def models_named(program: n.Program, config: VMConfig) -> set[str]:
    """The model aliases (or ids) a run of `program` may call, as far as its text says:
    the default model, the evaluator when something is judged, and every `model:` of an
    agent or a session. (Imported programs' models are checked when called.)"""
    found = {config.default_model}
    for node in n.walk(program):
        if isinstance(node, n.Property) and node.name.id == "model":
            value = literal(node.value)
            if isinstance(value, str):
                found.add(value)
        elif isinstance(node, n.Discretion) or (isinstance(node, n.PipeOp) and node.op == "filter"):
            found.add(config.evaluator_model)  # a judgment: the evaluator is asked
    return found

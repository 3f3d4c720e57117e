"""An estimate as people read it: per model, the bounds of calls, requests, tokens and
cost, priced with the run's price table; the totals; and why a bound is missing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from openprose.providers.prices import Prices
from openprose.vm.estimates.bounds import ZERO, Range, Tally


@dataclass(frozen=True, slots=True)
class Cost:
    low: float
    high: float | None  # None: unbounded


@dataclass(frozen=True, slots=True)
class ModelRow:
    alias: str  # as the program names it (`sonnet`)
    model: str  # the model id it is routed to
    calls: Range
    requests: Range
    input_tokens: Range
    output_tokens: Range
    cost: Cost | None  # None: the model has no price


@dataclass(frozen=True, slots=True)
class Estimate:
    """The bounds of one run of a program, worked out from its text (and inputs)."""

    path: str
    models: tuple[ModelRow, ...]
    unbounded: tuple[str, ...]  # `path:line: why`, one per cause

    @property
    def sessions(self) -> Range:
        """Model calls, judgments and memory updates included (what `--max-sessions` counts)."""
        return sum((row.calls for row in self.models), ZERO)

    @property
    def requests(self) -> Range:
        return sum((row.requests for row in self.models), ZERO)

    @property
    def input_tokens(self) -> Range:
        return sum((row.input_tokens for row in self.models), ZERO)

    @property
    def output_tokens(self) -> Range:
        return sum((row.output_tokens for row in self.models), ZERO)

    @property
    def cost(self) -> Cost | None:
        """None when a model the run may call has no price."""
        total = Cost(0.0, 0.0)
        for row in self.models:
            if row.cost is None:
                return None
            high = (
                None if total.high is None or row.cost.high is None else total.high + row.cost.high
            )
            total = Cost(total.low + row.cost.low, high)
        return total

    @property
    def unpriced(self) -> list[str]:
        return sorted({row.model for row in self.models if row.cost is None})

    def to_json(self) -> dict[str, Any]:
        cost = self.cost
        return {
            "program": self.path,
            "sessions": _range(self.sessions),
            "requests": _range(self.requests),
            "input_tokens": _range(self.input_tokens),
            "output_tokens": _range(self.output_tokens),
            "cost_usd": _dollars(cost),
            "unpriced_models": self.unpriced,
            "models": [
                {
                    "alias": row.alias,
                    "model": row.model,
                    "sessions": _range(row.calls),
                    "requests": _range(row.requests),
                    "input_tokens": _range(row.input_tokens),
                    "output_tokens": _range(row.output_tokens),
                    "cost_usd": _dollars(row.cost),
                }
                for row in self.models
            ],
            "unbounded": list(self.unbounded),
        }

    def table(self) -> str:
        """The estimate as a text table, then the totals and the reasons for ∞."""
        header = ("model", "sessions", "requests", "input tokens", "output tokens", "cost")
        rows = [header]
        for row in self.models:
            name = row.alias if row.alias == row.model else f"{row.alias} ({row.model})"
            rows.append(
                (
                    name,
                    _shown(row.calls),
                    _shown(row.requests),
                    _shown(row.input_tokens),
                    _shown(row.output_tokens),
                    _cost(row.cost),
                )
            )
        rows.append(
            (
                "total",
                _shown(self.sessions),
                _shown(self.requests),
                _shown(self.input_tokens),
                _shown(self.output_tokens),
                _cost(self.cost),
            )
        )
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        lines = [
            "  ".join(
                cell.ljust(w) if i == 0 else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(r, widths, strict=True))
            ).rstrip()
            for r in rows
        ]
        lines.insert(1, "  ".join("-" * w for w in widths))
        out = [f"estimate for {self.path} (lowest – highest; ∞: no upper bound)", *lines]
        if self.unpriced:
            out.append(f"no price for: {', '.join(self.unpriced)} (add [prices] to prose.toml)")
        out += [f"unbounded: {why}" for why in self.unbounded]
        return "\n".join(out)


def priced(
    path: str,
    tally: Tally,
    unbounded: list[str],
    prices: Prices,
    resolve: Callable[[str], str],
) -> Estimate:
    rows = []
    for alias in sorted(tally.by_model):
        use = tally.by_model[alias]
        model = resolve(alias)
        price = prices.price_of(model)
        cost: Cost | None = None
        if price is not None:
            # the base rates: the lows add up many requests, each of which may be short
            low = (use.input.low * price.input + use.output.low * price.output) / 1_000_000
            high: float | None = None
            if use.input.high is not None and use.output.high is not None:
                # above a tier's threshold every token costs the long price: the upper
                # bound takes it as soon as one request may pass the threshold
                tiered = price.long_prompt_tokens is not None and (
                    use.largest_input is None or use.largest_input > price.long_prompt_tokens
                )
                rate_in = price.long_input if tiered and price.long_input else price.input
                rate_out = price.long_output if tiered and price.long_output else price.output
                high = (use.input.high * rate_in + use.output.high * rate_out) / 1_000_000
            cost = Cost(low, high)
        rows.append(ModelRow(alias, model, use.calls, use.requests, use.input, use.output, cost))
    return Estimate(path, tuple(rows), tuple(unbounded))


def _dollars(cost: Cost | None) -> dict[str, float | None] | None:
    """Rounded as `usage.cost_usd` is, to the millionth of a dollar."""
    if cost is None:
        return None
    return {"low": round(cost.low, 6), "high": None if cost.high is None else round(cost.high, 6)}


def _range(value: Range) -> dict[str, int | None]:
    return {"low": value.low, "high": value.high}


def _shown(value: Range) -> str:
    high = "∞" if value.high is None else f"{value.high:,}"
    return f"{value.low:,}" if value.high == value.low else f"{value.low:,} – {high}"


def _cost(cost: Cost | None) -> str:
    if cost is None:
        return "no price"
    if cost.high == 0:
        return "free"
    high = "∞" if cost.high is None else f"${cost.high:.4f}"
    return f"${cost.low:.4f} – {high}"

"""Lower and upper bounds, and the model calls a part of a program may make, as numbers that
add (one part after another), multiply (a loop) and branch (`if`, `choice`): the lower bound
of a branch is its cheapest path, the upper its dearest. `None` as an upper bound: unbounded."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Range:
    low: int
    high: int | None  # None: no upper bound

    def __add__(self, other: Range) -> Range:
        return Range(self.low + other.low, _add(self.high, other.high))

    def __mul__(self, other: Range) -> Range:
        return Range(self.low * other.low, _mul(self.high, other.high))

    def either(self, other: Range) -> Range:
        """One of the two: the cheaper low, the dearer high."""
        return Range(min(self.low, other.low), _max(self.high, other.high))

    def capped(self, cap: int) -> Range:
        return Range(min(self.low, cap), cap if self.high is None else min(self.high, cap))


ZERO = Range(0, 0)
ONE = Range(1, 1)


def exactly(count: int) -> Range:
    return Range(count, count)


@dataclass(frozen=True, slots=True)
class Use:
    """What one model (alias) is asked: calls, the requests they may take (`retry:`),
    input and output tokens, and the largest single request's input (tiered prices)."""

    calls: Range = ZERO
    requests: Range = ZERO
    input: Range = ZERO
    output: Range = ZERO
    largest_input: int | None = 0

    def __add__(self, other: Use) -> Use:
        return Use(
            self.calls + other.calls,
            self.requests + other.requests,
            self.input + other.input,
            self.output + other.output,
            _max(self.largest_input, other.largest_input),
        )

    def __mul__(self, times: Range) -> Use:
        return Use(
            self.calls * times,
            self.requests * times,
            self.input * times,
            self.output * times,
            self.largest_input if times.high != 0 else 0,
        )

    def either(self, other: Use) -> Use:
        return Use(
            self.calls.either(other.calls),
            self.requests.either(other.requests),
            self.input.either(other.input),
            self.output.either(other.output),
            _max(self.largest_input, other.largest_input),
        )


@dataclass(frozen=True, slots=True)
class Tally:
    """The calls of a part of a program, by model alias."""

    by_model: dict[str, Use] = field(default_factory=dict)

    def __add__(self, other: Tally) -> Tally:
        merged = dict(self.by_model)
        for model, use in other.by_model.items():
            merged[model] = merged[model] + use if model in merged else use
        return Tally(merged)

    def __mul__(self, times: Range) -> Tally:
        return Tally({model: use * times for model, use in self.by_model.items()})

    def either(self, other: Tally) -> Tally:
        """One path or the other (a model missing from a path is asked nothing there)."""
        merged: dict[str, Use] = {}
        for model in self.by_model.keys() | other.by_model.keys():
            merged[model] = self.by_model.get(model, Use()).either(other.by_model.get(model, Use()))
        return Tally(merged)

    def lows_of(self, other: Tally) -> Tally:
        """This tally's upper bounds with `other`'s lower bounds."""
        merged: dict[str, Use] = {}
        for model in self.by_model.keys() | other.by_model.keys():
            high, low = self.by_model.get(model, Use()), other.by_model.get(model, Use())
            merged[model] = Use(
                Range(low.calls.low, high.calls.high),
                Range(low.requests.low, high.requests.high),
                Range(low.input.low, high.input.high),
                Range(low.output.low, high.output.high),
                high.largest_input,
            )
        return Tally(merged)

    @property
    def output(self) -> Range:
        return sum((use.output for use in self.by_model.values()), ZERO)


def in_sequence(tallies: Iterable[Tally]) -> Tally:
    return sum(tallies, Tally())


def one_of(tallies: Iterable[Tally]) -> Tally:
    paths = list(tallies)
    if not paths:
        return Tally()
    chosen = paths[0]
    for path in paths[1:]:
        chosen = chosen.either(path)
    return chosen


def cheapest(tallies: list[Tally], needed: int) -> Tally:
    """Lower bounds of a race that ends after `needed` of `tallies` finished: per model, the
    sum of its `needed` smallest lows (upper bounds: every racer's, all may have run)."""
    total = in_sequence(tallies)
    lows: dict[str, Use] = {}
    for model in total.by_model:
        uses = [t.by_model.get(model, Use()) for t in tallies]

        def smallest(pick: str, uses: list[Use] = uses) -> int:
            return sum(sorted(getattr(u, pick).low for u in uses)[:needed])

        lows[model] = Use(
            exactly(smallest("calls")),
            exactly(smallest("requests")),
            exactly(smallest("input")),
            exactly(smallest("output")),
        )
    return total.lows_of(Tally(lows))


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def _mul(a: int | None, b: int | None) -> int | None:
    if a == 0 or b == 0:
        return 0
    return None if a is None or b is None else a * b


def _max(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else max(a, b)

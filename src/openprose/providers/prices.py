"""What a model call costs: the packaged price table (`prices.toml`), extended by the
`[prices]` table of prose.toml. One table, one reader; a model with no price is reported as
such, never counted as free."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from openprose.providers.base import ProviderConfigError

TABLE = Path(__file__).with_name("prices.toml")
PER = 1_000_000  # prices are per million tokens
# A dated snapshot costs what its model does: claude-sonnet-4-5-20250929, gpt-4.1-2025-04-14.
_SNAPSHOT = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$")
_KEYS = (
    "input",
    "output",
    "cache_read",
    "cache_write",
    "long_prompt_tokens",
    "long_input",
    "long_output",
)


@dataclass(frozen=True, slots=True)
class Price:
    input: float  # USD per million input tokens
    output: float  # USD per million output tokens
    # Above this many prompt tokens, a request costs the long prices.
    long_prompt_tokens: int | None = None
    long_input: float | None = None
    long_output: float | None = None
    # Prompt tokens read from and written to the provider's prompt cache. A model without
    # them is priced as if every prompt token paid `input`: never less than it costs.
    cache_read: float | None = None
    cache_write: float | None = None

    def cost(
        self, input_tokens: int, output_tokens: int, cache_read: int = 0, cache_write: int = 0
    ) -> float:
        """USD for one request. `input_tokens` is the whole prompt; `cache_read` and
        `cache_write` are the parts of it billed at the cache rates."""
        rate_in, rate_out = self.input, self.output
        read = self.cache_read if self.cache_read is not None else self.input
        write = self.cache_write if self.cache_write is not None else self.input
        if self.long_prompt_tokens is not None and input_tokens > self.long_prompt_tokens:
            if self.long_input is not None and self.input:
                # the cache rates keep their ratio to the input rate
                scale = self.long_input / self.input
                rate_in, read, write = self.long_input, read * scale, write * scale
            rate_out = self.long_output if self.long_output is not None else rate_out
        full = max(0, input_tokens - cache_read - cache_write)
        return (
            full * rate_in + cache_read * read + cache_write * write + output_tokens * rate_out
        ) / PER


class Prices:
    def __init__(self, table: Mapping[str, Price]) -> None:
        self.table = dict(table)

    @classmethod
    def default(cls) -> Prices:
        """The packaged table."""
        return _packaged()

    def extended(self, table: Any, where: str = "prose.toml") -> Prices:
        """This table with `[prices]` of a settings file added over it (checked)."""
        if not isinstance(table, dict):
            raise ProviderConfigError(f"{where}: [prices] must be a table of models")
        return Prices({**self.table, **_parse(table, where)})

    def price_of(self, model: str) -> Price | None:
        return self.table.get(model) or self.table.get(_SNAPSHOT.sub("", model))


def cost_amount(cost: float, models: Iterable[str]) -> str:
    """A run's or batch's cost of priced calls as the summaries say it: `free (local
    model)` when the embedded model answered alone, `free (priced at $0: M)` for models
    priced at nothing, `under $0.0001`, else dollars to four places — never `$0.0000`."""
    if cost > 0:
        return "under $0.0001" if cost < 0.0001 else f"${cost:.4f}"
    from openprose.providers.settings import LOCAL_MODEL_ID

    used = sorted(set(models))
    if used and all(model == LOCAL_MODEL_ID for model in used):
        return "free (local model)"
    return f"free (priced at $0: {', '.join(used)})" if used else "$0 (no model was asked)"


def cache_text(read: int, written: int) -> str:
    """What of a prompt count the prompt cache served, as summaries add it after the input
    tokens: ` (1200 cache read, 300 cache write)`; nothing when the cache played no part."""
    parts = [f"{read} cache read"] * bool(read) + [f"{written} cache write"] * bool(written)
    return f" ({', '.join(parts)})" if parts else ""


@cache
def _packaged() -> Prices:
    with TABLE.open("rb") as handle:
        return Prices(_parse(tomllib.load(handle), str(TABLE)))


def _parse(table: Mapping[str, Any], where: str) -> dict[str, Price]:
    prices: dict[str, Price] = {}
    for model, entry in table.items():
        at = f"{where}: [prices.{model!r}]" if where != str(TABLE) else f"{where}: [{model}]"
        if not isinstance(entry, dict):
            raise ProviderConfigError(f"{at} must be a table: input = USD, output = USD")
        unknown = sorted(set(entry) - set(_KEYS))
        if unknown:
            raise ProviderConfigError(
                f"{at}: unknown key(s) {', '.join(unknown)}; known: {', '.join(_KEYS)}"
            )
        for key in ("input", "output"):
            if key not in entry:
                raise ProviderConfigError(f"{at}: `{key}` (USD per million tokens) is missing")
        values: dict[str, Any] = {}
        for key, value in entry.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ProviderConfigError(f"{at}: `{key}` must be a number >= 0, got {value!r}")
            values[key] = int(value) if key == "long_prompt_tokens" else float(value)
        prices[str(model)] = Price(**values)
    return prices

"""How to run a program: one value built once where the options arrive — `prose run`'s and
`prose resume`'s flags, `openprose.run`'s keywords, a batch's spec — and passed down whole,
so that adding an option touches the edge that reads it and the step that uses it, not every
layer between."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DEFAULT_OPTIONS", "RunOptions"]


@dataclass(frozen=True, slots=True)
class RunOptions:
    """A run's options. For a resume, an option left unset (None, empty) means "as the run
    was started with"; a budget given replaces the recorded one."""

    provider: str | None = None  # `--provider` spec (`anthropic`, `replay:RUN`...)
    models: tuple[str, ...] = ()  # `--model alias=provider:model`, as given
    max_concurrency: int | None = None
    evaluator: str | None = None  # the model alias for AI judgments
    record: str | None = None  # a cassette that every model exchange is appended to
    budgets: Mapping[str, Any] = field(default_factory=dict)  # VMConfig fields; None lifts
    yes: bool = False  # approve every `prompt` permission
    permission_mode: str = "default"  # or `plan` (read-only)
    offline: bool = False  # `--offline` (PROSE_OFFLINE asks for it too)
    update_pins: bool = False  # `--update-pins`: fetch imports again and re-pin them
    interactive: bool = False  # a person at the terminal may answer `prompt` permissions


DEFAULT_OPTIONS = RunOptions()  # every option as `prose run` has it without flags

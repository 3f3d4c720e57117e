"""What a model sees besides its task: a session's `context:` (or, without one, its thread's
recent outputs), an agent's memory, cut to the character budget — and the same for judgments."""

from __future__ import annotations

from typing import Any

from openprose import nodes as n
from openprose.record import events as ev
from openprose.record.runstore import RunStore
from openprose.vm.errors import ProseRuntimeError
from openprose.vm.expressions import Expressions, Placeholder, dotted
from openprose.vm.frame import Ctx
from openprose.vm.prompts import ContextItem, fit_to_budget, window_note
from openprose.vm.runtime import Shared
from openprose.vm.values import Absent, Value, render


class Contexts:
    def __init__(self, shared: Shared, store: RunStore, expressions: Expressions) -> None:
        self.shared = shared
        self.config = shared.config
        self.store = store
        self.expressions = expressions

    def placeholder(self, step: str) -> Placeholder:
        """What a session at `step` sees for a name bound only in a body that did not run
        (an `if` branch not taken, a loop that ran zero times...): a note saying so, recorded
        in the journal (`unbound_placeholder`) and state.md, instead of a failed run."""

        def note(name: str) -> Value:
            self.shared.emit(ev.UnboundPlaceholder(step=step, name=name))
            self.store.state(f"{step}→ {name}: unbound (placeholder)")
            return Absent.unbound(name)

        return note

    def for_session(
        self, expr: Any, ctx: Ctx, step: str, fixed: int = 0, memory: str | None = None
    ) -> list[ContextItem]:
        """The context items (after the memory, when given, as the first item), cut to fit
        the budget that `fixed` characters of task and system prompt leave."""
        if expr is None:
            items = self._recent(ctx, step)
        else:
            items = self._named(expr, ctx, self.placeholder(step))
        if memory is not None:
            items.insert(0, ContextItem("memory", memory))
        budget = self.config.context_budget - fixed
        if budget < 0:
            # The task itself is over budget: it is sent whole (cutting it would change the
            # instruction), and that is recorded too.
            self.shared.emit(ev.PromptOverBudget(step=step, task_chars=fixed))
            self.store.state(f"{step}→ prompt:over budget by {-budget} chars")
            budget = 0
        fitted, trims = fit_to_budget(items, budget)
        for trim in trims:
            self.shared.emit(
                ev.ContextTrimmed(step=step, label=trim.label, omitted_chars=trim.omitted)
            )
            self.store.state(f"{step}→ context:trimmed {trim.label} -{trim.omitted} chars")
        return fitted

    def for_judgment(self, ctx: Ctx, step: str) -> str:
        items = self.for_session(None, ctx, step)
        return "\n\n".join(f"### {i.label}\n{i.text}" for i in items)

    def _recent(self, ctx: Ctx, step: str) -> list[ContextItem]:
        """The thread's most recent outputs; older ones left out are noted in the prompt, the
        journal (`context_windowed`) and state.md."""
        if not len(ctx.history):  # a fresh thread (a `pmap` item of an empty one...)
            return []
        limit = self.config.history_items
        items = ctx.history.recent(limit)
        hidden = len(ctx.history) - len(items)
        if hidden > 0:
            items.insert(0, window_note(hidden, len(items)))
            self.shared.emit(ev.ContextWindowed(step=step, omitted_items=hidden, shown_items=limit))
            self.store.state(f"{step}→ context:window -{hidden} earlier outputs")
        return items

    def _named(self, expr: Any, ctx: Ctx, placeholder: Placeholder) -> list[ContextItem]:
        """The items a `context:` property names."""
        values = self.expressions
        if isinstance(expr, n.ArrayLit):
            items: list[ContextItem] = []
            for element in expr.elements:
                items.extend(self._named(element, ctx, placeholder))
            return items
        if isinstance(expr, n.ObjectContext):
            return [
                ContextItem(x.id, render(values.lookup(x.id, x, ctx, placeholder)))
                for x in expr.names
            ]
        if isinstance(expr, n.Name):
            return [ContextItem(expr.id, render(values.lookup(expr.id, expr, ctx, placeholder)))]
        if isinstance(expr, n.Attribute):
            return [ContextItem(dotted(expr), render(values.attribute(expr, ctx, placeholder)))]
        if isinstance(expr, n.StringLit):
            return [ContextItem("context", values.interpolate(expr, ctx, placeholder))]
        if isinstance(expr, n.NumberLit):
            return [ContextItem("context", str(expr.value))]
        raise ProseRuntimeError("context must name variables", where=values.where(expr))

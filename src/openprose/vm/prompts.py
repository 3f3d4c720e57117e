"""What a session sees: its task, its context, its memory — within a size budget.

Without a `context:` property a session sees the outputs that came before it on its own thread
of execution (the reference's "Select the best idea from the options above"): the most recent
`DEFAULT_HISTORY_ITEMS` outputs, oldest first, after a note saying how many older ones are left
out. A parallel branch or pipeline item starts from what its parent had seen at the fork; after
the join, the parent sees every branch's outputs. `context: []` starts fresh. Whatever is cut to
fit the budget is replaced by a visible note and reported back to the caller, which journals
it — nothing is dropped silently.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

DEFAULT_CONTEXT_BUDGET = 200_000  # characters of context per request (about 50k tokens)
DEFAULT_HISTORY_ITEMS = 20


class ContextItem(NamedTuple):
    """A tuple of two strings, which the garbage collector stops tracking: a run keeps one
    per session, so this keeps full collections cheap at 100,000 sessions."""

    label: str
    text: str


class History:
    """Earlier outputs on one thread of execution; forks share their parent's prefix.

    Sessions see only the `keep` most recent outputs (`VMConfig.history_items`), so a
    thread holds at most about twice that many and counts the older ones it let go: a
    100,000-item `pmap` or loop keeps memory flat, and the window note still says how many
    outputs are not shown."""

    __slots__ = ("base", "dropped", "entries", "keep", "parent", "parent_own")

    def __init__(self, parent: History | None = None, keep: int = DEFAULT_HISTORY_ITEMS) -> None:
        self.parent = parent
        self.keep: int = parent.keep if parent is not None else max(1, keep)
        # The parent's own outputs at the fork (let go ones included): what this fork sees.
        self.parent_own = parent.own() if parent is not None else 0
        # How many outputs this thread inherited (its parents' visible entries).
        self.base: int = len(parent) if parent is not None else 0
        self.dropped = 0  # own outputs let go: older than the `keep` most recent
        self.entries: list[ContextItem] = []

    def __len__(self) -> int:
        """Every output visible on this thread, inherited and let go ones included."""
        return self.base + self.dropped + len(self.entries)

    def own(self) -> int:
        """Outputs added on this thread itself (joined forks' included)."""
        return self.dropped + len(self.entries)

    def add(self, label: str, text: str) -> None:
        self.entries.append(ContextItem(label, text))
        self._let_go()

    def fork(self) -> History:
        return History(self)

    def join(self, branches: list[History]) -> None:
        for branch in branches:
            if branch.dropped:
                # The branch kept its `keep` most recent: everything before them is older.
                self.dropped += len(self.entries) + branch.dropped
                self.entries = list(branch.entries)
            else:
                self.entries.extend(branch.entries)
        self._let_go()

    def join_forks(self, forks: ForkOutputs) -> None:
        """The forks of a fan-out, in input order (those `forks` let go counted only)."""
        held = forks.finish()
        if forks.let_go:
            self.dropped += len(self.entries) + forks.let_go
            self.entries = []
        self.join(held)

    def recent(self, limit: int) -> list[ContextItem]:
        found: list[ContextItem] = []
        for item in self._backwards():
            if len(found) >= limit:
                break
            found.append(item)
        found.reverse()
        return found

    def _let_go(self) -> None:
        """Keep the `keep` most recent own outputs, once twice as many have gathered."""
        excess = len(self.entries) - self.keep
        if excess >= self.keep:
            del self.entries[:excess]
            self.dropped += excess

    def _backwards(self) -> Iterator[ContextItem]:
        node: History | None = self
        end = len(self.entries)
        while node is not None:
            for index in range(end - 1, -1, -1):
                yield node.entries[index]
            if node.dropped:  # older outputs of this thread were let go: none to show
                return
            if node.parent is not None:
                end = max(0, node.parent_own - node.parent.dropped)
            node = node.parent


class ForkOutputs:
    """The outputs of a fan-out's forks, to be joined in input order once all are back.

    Only forks whose outputs can still be among the `keep` most recent after the join are
    held: a finished fork is let go (its outputs counted) as soon as finished forks after
    it hold `keep` outputs, since later forks can only add more."""

    __slots__ = ("held", "keep", "let_go")

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.held: dict[int, History] = {}
        self.let_go = 0  # outputs of the forks let go

    def add(self, index: int, fork: History) -> None:
        if fork.own():
            self.held[index] = fork
            if len(self.held) > 4 * self.keep:
                self._sweep()

    def finish(self) -> list[History]:
        """The held forks in input order, after a last sweep."""
        self._sweep()
        return [self.held[index] for index in sorted(self.held)]

    def _sweep(self) -> None:
        later = 0
        indexes = sorted(self.held, reverse=True)
        for position, index in enumerate(indexes):
            later += self.held[index].own()
            if later >= self.keep:
                for older in indexes[position + 1 :]:
                    self.let_go += self.held.pop(older).own()
                return


def window_note(hidden: int, shown: int) -> ContextItem:
    """Stands first in a default context that leaves older outputs out, so the model knows."""
    return ContextItem(
        "earlier outputs",
        f"[VM: {hidden} earlier output(s) of this thread are not shown; "
        f"only the {shown} most recent are]",
    )


@dataclass(frozen=True, slots=True)
class Trim:
    label: str
    omitted: int  # characters cut


def fit_to_budget(items: list[ContextItem], budget: int) -> tuple[list[ContextItem], list[Trim]]:
    """Shorten the longest items first until the total fits (water-filling); each cut item
    ends with a note saying how much was omitted."""
    total = sum(len(i.text) for i in items)
    if total <= budget or not items:
        return items, []
    lengths = sorted(len(i.text) for i in items)
    remaining, cap = budget, 0
    for count_left, length in zip(range(len(lengths), 0, -1), lengths, strict=True):
        share = remaining // count_left
        if length <= share:
            remaining -= length
            continue
        cap = share
        break
    fitted, trims = [], []
    for item in items:
        if len(item.text) > cap:
            omitted = len(item.text) - cap
            note = f"\n[VM: {omitted} characters of {item.label} omitted to fit the context budget]"
            fitted.append(ContextItem(item.label, item.text[:cap] + note))
            trims.append(Trim(item.label, omitted))
        else:
            fitted.append(item)
    return fitted, trims


def render_context(items: list[ContextItem]) -> str:
    return "\n\n".join(f"### {item.label}\n{item.text}" for item in items)


# Context this long goes before the task: the placement long documents are advised to
# take, and the one a prompt cache can cover (caches keep prefixes; the task varies). 4,096
# characters is about 1,024 tokens, the shortest prefix Anthropic or OpenAI caches. Shorter
# context stays after the task, where it always was.
LONG_CONTEXT_CHARS = 4096


def user_message(
    task: str, context: list[ContextItem], memory: str | None = None
) -> tuple[str, int]:
    """The session's user message, and how many of its leading characters are the context
    other sessions may share (0 when the context follows the task)."""
    if not context and memory is None:
        return task, 0
    rendered = f"## Context\n{render_context(context)}" if context else ""
    remembered = f"## Your memory\n{memory}" if memory is not None else ""
    if len(rendered) >= LONG_CONTEXT_CHARS:
        head = rendered + "\n\n"
        rest = "\n\n".join(part for part in (remembered, f"## Your task\n{task}") if part)
        return head + rest, len(head)
    return "\n\n".join(part for part in (task, remembered, rendered) if part), 0


NO_TASK = "Carry out your role as described in your instructions."


def memory_update_message(agent: str, memory: str, task: str, answer: str) -> str:
    """Asked of a persistent agent after each of its sessions (primitives/session.md §3)."""
    return (
        f"Update your memory, agent {agent}. Compact, do not summarize: keep specific "
        "findings, decisions with rationale, numbers and open concerns. Reply with the whole "
        "new memory file in Markdown (sections: Current Understanding, Decisions Made, Open "
        "Concerns, Segment Summary) and nothing else.\n\n"
        f"## Memory so far\n{memory or '(empty)'}\n\n## This session's task\n{task}\n\n"
        f"## Your answer\n{answer}"
    )

"""Where a transcript starts: the state before its first exchange when it was cut from
the middle of a conversation.

A pasted excerpt (`Tag=c_3`, `Cycle=2/3`, a named locus) cannot be checked against the
starting state: its earlier turns are gone. What they left is in the footers, so the
state before the first checked reply is read back from them:

* a leading assistant turn with a VPP footer is the tail of an earlier exchange: the
  state after it is the one its footer shows;
* otherwise, when the first reply is wrong for the starting state, the candidates for
  the unseen history (each earlier count of the reply's tag, cycle, closed cycle or
  rejection streak, locus) are tried and the one that explains the reply best is kept,
  provided it explains it better than the start does.

A tag first seen later in an excerpt has an unknown earlier count too; its first
footer index is taken as given (`learn_count`). Everything after that is checked.
`ExcerptStart` applies these rules exchange by exchange as a transcript is read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from vpp.footer import Footer
from vpp.state import ConversationState, Expectation, expect
from vpp.validate import ExchangeResult
from vpp.versions import (
    ASSISTANT_TAGS,
    CYCLE_LIMIT,
    DEFAULT_LOCUS,
    LOCUS_NAME_1_5,
    UNNAMED_LOCUS,
)


class ExcerptStart:
    """What the unseen history of a transcript left, learnt as its exchanges are read.
    With `infer=False` (a whole conversation) every check starts where it is told."""

    def __init__(self, infer: bool) -> None:
        self.first = infer  # no exchange read yet: any history its footer shows may apply
        self.unsettled = infer  # closed cycle or loop still unknown (until a valid command)
        self.loop_known = False
        # Tags whose earlier count is known: all of them when the conversation starts here.
        self.known = set() if infer else set(ASSISTANT_TAGS)

    def leading_reply(
        self, footer: Footer | None, state: ConversationState
    ) -> ConversationState | None:
        """The state a reply before any user turn leaves, when it is an excerpt's first
        turn with a footer; None when it is no such thing."""
        shown = state_shown(footer, state) if self.first and footer is not None else None
        if shown is not None:
            # A <c> may answer an invalid command, which leaves a closed loop closed.
            self.first, self.loop_known = False, footer is not None and footer.tag != "c"
            self.known.update(tag for tag in ASSISTANT_TAGS if shown.count(tag))
        return shown

    def check(
        self,
        check: Callable[[ConversationState], ExchangeResult],
        user: str,
        footer: Footer | None,
        state: ConversationState,
    ) -> tuple[ExchangeResult, bool]:
        """`check` the exchange from `state` or from the history its footer shows, and
        whether that history was inferred (worth a note)."""
        expectation = expect(user, state)
        inferred = False
        if footer and footer.tag in expectation.reply_tags and footer.tag not in self.known:
            learned = learn_count(state, footer, expectation)
            inferred, state = learned.count(footer.tag) > 0, learned
        if self.unsettled:
            exchange, history = self._settled(check, user, footer, state)
            inferred = inferred or (history and self.first)
            self.unsettled = not exchange.expectation.command.ok
        else:
            exchange = check(state)
        self.known.add(exchange.reply_tag)
        self.first = False
        return exchange, inferred

    def _settled(
        self,
        check: Callable[[ConversationState], ExchangeResult],
        user: str,
        footer: Footer | None,
        state: ConversationState,
    ) -> tuple[ExchangeResult, bool]:
        at_start = check(state)
        if at_start.ok or footer is None:
            return at_start, False
        best = at_start
        candidates = candidate_states(
            user, footer, state, flags_only=not self.first, loop_known=self.loop_known
        )
        for candidate in candidates:
            tried = check(candidate)
            if len(tried.violations) < len(best.violations):
                best = tried
        return best, best is not at_start


def state_shown(footer: Footer, state: ConversationState) -> ConversationState | None:
    """The state after the reply that carries `footer` (a leading assistant turn), or
    None when the footer does not show where the conversation was."""
    if footer.tag not in ASSISTANT_TAGS or footer.index is None or footer.index < 1:
        return None
    counts = list(state.tag_counts)
    counts[ASSISTANT_TAGS.index(footer.tag)] = footer.index
    shown = replace(
        state,
        tag_counts=tuple(counts),
        cycle=footer.cycle if footer.cycle and footer.cycle <= CYCLE_LIMIT else state.cycle,
        loop_closed=footer.tag == "o_f",
        cycle_closed=state.version == "1.5" and footer.tag == "c",
    )
    return _at_locus(shown, footer.locus) or shown


def candidate_states(
    user: str,
    footer: Footer,
    state: ConversationState,
    *,
    flags_only: bool = False,
    loop_known: bool = False,
) -> Iterator[ConversationState]:
    """States the unseen history may have left, simplest first. `flags_only` once the
    counts, cycle and locus are known: what no footer shows (whether the cycle or, unless
    `loop_known`, the loop was closed; the rejection streak) may still be open."""
    counted = state if flags_only else learn_count(state, footer, expect(user, state))
    jumps = expect(user, state).command.tag == "e"
    loci = [counted]
    if footer.locus and footer.locus != state.locus and not flags_only:
        loci = [s for s in (_at_locus(counted, footer.locus, jumps), counted) if s is not None]
    cycles = [state.cycle] if flags_only else range(1, CYCLE_LIMIT + 1)
    if not loop_known:  # an <o_f> reply just before the excerpt closed the loop
        loci += [replace(located, loop_closed=True) for located in loci]
    for located in loci:
        for cycle in cycles:
            if state.version == "1.5":
                for closed in (False, True):
                    yield replace(located, cycle=cycle, cycle_closed=closed)
            else:
                for streak in range(CYCLE_LIMIT):
                    yield replace(located, cycle=cycle, unaccepted=streak)


def learn_count(
    state: ConversationState, footer: Footer | None, expectation: Expectation
) -> ConversationState:
    """`state` with the earlier count of the reply's tag read from its footer index."""
    if footer is None or footer.tag not in expectation.reply_tags:
        return state
    if footer.index is None or footer.index < 1:
        return state
    counts = list(state.tag_counts)
    counts[ASSISTANT_TAGS.index(footer.tag)] = footer.index - 1
    return replace(state, tag_counts=tuple(counts))


def _at_locus(
    state: ConversationState, locus: str | None, before_jump: bool = False
) -> ConversationState | None:
    """`state` at the locus a footer names (1.5 numbers unnamed loci: `locus-3` is the
    third; a jump's footer names the locus after it)."""
    if not locus or (state.version == "1.5" and not LOCUS_NAME_1_5.match(locus)):
        return None
    if "|" in locus or "]" in locus:
        return None
    found = UNNAMED_LOCUS.match(locus)
    index = int(found.group(1)) if found else (1 if locus == DEFAULT_LOCUS else 2)
    if before_jump:
        index = max(1, index - 1)
        locus = DEFAULT_LOCUS if index == 1 else f"locus-{index}" if found else state.locus
    return replace(state, locus=locus, locus_index=index)

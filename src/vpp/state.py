"""Conversation state: which reply each user command calls for, with its
instance index, cycle, locus and whether the escape hint is due.

Both versions share the mirror rule and conversation-global tag indices; they
differ in when the cycle advances (see docs/decisions.md, VPP):

* 1.5 (exact): a valid `!<c>` is answered at the current cycle and closes it; the
  next valid ordinary command opens the next cycle, capped at 3.
* 1.4 (as resolved here): a command carrying `--incorrect` rejects the current
  attempt and its reply opens the next cycle, capped at 3; the escape hint is due
  on the reply to the third rejection in a row without a `--correct`.

In both, `!<e> --<tag>` (new locus), `!<e_o>`, `!<o> --correct --<tag>` and any
valid command after an `<o_f>` reply restart at cycle 1. Invalid commands get a
`<c>` recovery reply and leave cycle and locus untouched.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from vpp.grammar import Command, parse_command, recovery_body
from vpp.versions import (
    ASSISTANT_TAGS,
    CYCLE_LIMIT,
    DEFAULT_LOCUS,
    LOCUS_NAME_1_5,
    VERSIONS,
    Version,
    unnamed_locus,
)

_NO_COUNTS = (0,) * len(ASSISTANT_TAGS)


@dataclass(frozen=True)
class ConversationState:
    """Everything the protocol carries from one exchange to the next."""

    version: Version = "1.4"
    cycle: int = 1
    locus: str = DEFAULT_LOCUS
    locus_index: int = 1
    tag_counts: tuple[int, ...] = _NO_COUNTS
    cycle_closed: bool = False  # 1.5: a valid !<c> closed the cycle
    loop_closed: bool = False  # an <o_f> reply closed the loop
    unaccepted: int = 0  # 1.4: rejections since the last acceptance or restart

    def count(self, tag: str) -> int:
        """How many `<tag>` replies the conversation has had so far."""
        return self.tag_counts[ASSISTANT_TAGS.index(tag)]

    def with_reply(self, tag: str) -> ConversationState:
        counts = list(self.tag_counts)
        counts[ASSISTANT_TAGS.index(tag)] += 1
        return replace(self, tag_counts=tuple(counts))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form for clients that carry state between requests."""
        return {
            "version": self.version,
            "cycle": self.cycle,
            "locus": self.locus,
            "locus_index": self.locus_index,
            "tag_counts": dict(zip(ASSISTANT_TAGS, self.tag_counts, strict=True)),
            "cycle_closed": self.cycle_closed,
            "loop_closed": self.loop_closed,
            "unaccepted": self.unaccepted,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ConversationState:
        """Rebuild client-carried state, refusing anything `to_dict` could not produce."""
        return _StateReader(data).read()


class StateError(ValueError):
    """Client-carried state is invalid; `code` is one of the `invalid-state-*` codes."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


class _StateReader:
    _KEYS = frozenset(ConversationState().to_dict())

    def __init__(self, data: Mapping[str, Any]) -> None:
        if not isinstance(data, Mapping) or set(data) != self._KEYS:
            raise StateError("invalid-state-shape", f"state must have exactly {sorted(self._KEYS)}")
        self.data = data

    def _integer(self, key: str, value: Any, lowest: int, code: str) -> int:
        if type(value) is not int or value < lowest:
            raise StateError(code, f"{key} must be an integer >= {lowest}, got {value!r}")
        return value

    def _flag(self, key: str) -> bool:
        value = self.data[key]
        if type(value) is not bool:
            raise StateError("invalid-state-flags", f"{key} must be true or false")
        return value

    def read(self) -> ConversationState:
        data = self.data
        version = data["version"]
        if version not in VERSIONS:
            raise StateError("invalid-state-version", f"version must be one of {VERSIONS}")
        cycle = self._integer("cycle", data["cycle"], 1, "invalid-state-cycle")
        if cycle > CYCLE_LIMIT:
            raise StateError("invalid-state-cycle", f"cycle must be at most {CYCLE_LIMIT}")
        counts = data["tag_counts"]
        if not isinstance(counts, Mapping) or set(counts) != set(ASSISTANT_TAGS):
            raise StateError("invalid-state-tag-counts", f"tag_counts needs keys {ASSISTANT_TAGS}")
        state = ConversationState(
            version=version,
            cycle=cycle,
            locus=self._locus(data["locus"], version),
            locus_index=self._integer("locus_index", data["locus_index"], 1, "invalid-state-locus"),
            tag_counts=tuple(
                self._integer(f"tag_counts.{t}", counts[t], 0, "invalid-state-tag-counts")
                for t in ASSISTANT_TAGS
            ),
            cycle_closed=self._flag("cycle_closed"),
            loop_closed=self._flag("loop_closed"),
            unaccepted=self._integer(
                "unaccepted", data["unaccepted"], 0, "invalid-state-unaccepted"
            ),
        )
        self._check_consistent(state)
        return state

    @staticmethod
    def _locus(name: Any, version: Version) -> str:
        try:
            _check_locus(name if isinstance(name, str) else "", version)
        except ValueError as error:
            raise StateError("invalid-state-locus", str(error)) from None
        return str(name)

    @staticmethod
    def _check_consistent(state: ConversationState) -> None:
        if state.cycle_closed and (state.version == "1.4" or state.count("c") == 0):
            raise StateError(
                "invalid-state-flags", "cycle_closed needs a 1.5 state with a <c> reply"
            )
        if state.loop_closed and state.count("o_f") == 0:
            raise StateError("invalid-state-flags", "loop_closed needs an <o_f> reply")
        if state.version == "1.5" and state.unaccepted:
            raise StateError("invalid-state-unaccepted", "1.5 state does not count rejections")


def initial_state(version: Version = "1.4", locus: str = DEFAULT_LOCUS) -> ConversationState:
    """State at the start of a conversation: cycle 1, no replies yet."""
    _check_locus(locus, version)
    return ConversationState(version=version, locus=locus)


@dataclass(frozen=True)
class Expectation:
    """What the assistant's reply to one user message must look like."""

    command: Command
    before: ConversationState
    after: ConversationState  # state once the preferred reply tag is given
    escape_due: bool
    recovery_body: str | None  # the deterministic body when the command is invalid

    @property
    def reply_tags(self) -> tuple[str, ...]:
        return self.command.reply_tags

    @property
    def reply_tag(self) -> str:
        return self.command.reply_tag

    @property
    def cycle(self) -> int:
        return self.after.cycle

    @property
    def cycles(self) -> tuple[int, ...]:
        """The `Cycle` values a reply's footer may show. One, except for a plain `!<c>` in
        1.4: its two published examples answer it at the current cycle
        (`sample-transcript-1.md`) and at the next (`end-to-end.md`), and 1.4 says no more,
        so both are accepted and the value shown is carried forward (1.5 fixes the first)."""
        command, cycle = self.command, self.after.cycle
        if (
            self.version == "1.4"
            and command.ok
            and command.tag == "c"
            and not command.has("incorrect")
            and not command.has("correct")
            and not _restarts(command, self.before)
        ):
            return (cycle, min(CYCLE_LIMIT, cycle + 1)) if cycle < CYCLE_LIMIT else (cycle,)
        return (cycle,)

    @property
    def locus(self) -> str:
        return self.after.locus

    @property
    def version(self) -> Version:
        return self.before.version

    def tag_index(self, tag: str | None = None) -> int:
        """Instance index the footer gives `tag` (default: the preferred reply tag)."""
        return self.before.count(tag or self.reply_tag) + 1

    def next_state(
        self, reply_tag: str | None = None, locus: str | None = None, cycle: int | None = None
    ) -> ConversationState:
        """State after a reply tagged `reply_tag` (one of `reply_tags`).

        In 1.4 the locus name is free-form, so the name the reply's footer gave is
        carried forward; 1.5 names loci deterministically and ignores it. A footer's
        `cycle` is carried forward where the protocol allows more than one (`cycles`).
        """
        tag = reply_tag or self.reply_tag
        if tag not in self.reply_tags:
            raise ValueError(f"<{tag}> is not a valid reply here; expected {self.reply_tags}")
        state = replace(self.after, tag_counts=self.before.with_reply(tag).tag_counts)
        if self.command.ok:
            state = replace(state, loop_closed=tag == "o_f")
        if locus and self.version == "1.4" and "|" not in locus and "]" not in locus:
            state = replace(state, locus=locus)
        if cycle is not None and cycle != state.cycle and cycle in self.cycles:
            state = replace(state, cycle=cycle)
        return state


def expect(
    user_message: str, state: ConversationState | None = None, *, new_locus: str | None = None
) -> Expectation:
    """Plan the reply to `user_message` given the conversation `state`.

    `new_locus` names the locus an `!<e> --<tag>` jump opens; unnamed jumps get
    `locus-2`, `locus-3`, ...
    """
    state = state or initial_state()
    if new_locus is not None:
        _check_locus(new_locus, state.version)
    command = parse_command(user_message, state.version)
    if not command.ok:
        return Expectation(command, state, state.with_reply("c"), False, recovery_body(command))
    if state.version == "1.5":
        after, escape_due = _advance_1_5(command, state, new_locus)
    else:
        after, escape_due = _advance_1_4(command, state, new_locus)
    after = replace(after.with_reply(command.reply_tag), loop_closed=command.reply_tag == "o_f")
    return Expectation(command, state, after, escape_due, None)


def _restarts(command: Command, state: ConversationState) -> bool:
    return command.tag in ("e", "e_o") or command.starts_pipeline or state.loop_closed


def _restart(
    command: Command, state: ConversationState, new_locus: str | None
) -> ConversationState:
    restarted = replace(state, cycle=1, cycle_closed=False, loop_closed=False, unaccepted=0)
    if command.tag != "e":
        return restarted
    index = state.locus_index + 1
    return replace(restarted, locus_index=index, locus=new_locus or unnamed_locus(index))


def _advance_1_5(
    command: Command, state: ConversationState, new_locus: str | None
) -> tuple[ConversationState, bool]:
    if _restarts(command, state):
        after = _restart(command, state, new_locus)
    elif state.cycle_closed:
        after = replace(state, cycle=min(CYCLE_LIMIT, state.cycle + 1))
    else:
        after = state
    after = replace(after, cycle_closed=command.tag == "c")
    return after, command.tag == "c" and after.cycle == CYCLE_LIMIT


def _advance_1_4(
    command: Command, state: ConversationState, new_locus: str | None
) -> tuple[ConversationState, bool]:
    if _restarts(command, state):
        return _restart(command, state, new_locus), False
    if command.has("incorrect"):
        unaccepted = state.unaccepted + 1
        after = replace(state, cycle=min(CYCLE_LIMIT, state.cycle + 1), unaccepted=unaccepted)
        return after, unaccepted >= CYCLE_LIMIT
    if command.has("correct"):
        return replace(state, unaccepted=0), False
    return state, False


def _check_locus(name: str, version: Version) -> None:
    if version == "1.5" and not LOCUS_NAME_1_5.match(name):
        raise ValueError(
            f"invalid locus name {name!r}: use 1-64 letters, digits, spaces, '.', '_', '/' or '-'"
        )
    if not name or any(bad in name for bad in "|]\n"):
        raise ValueError(f"invalid locus name {name!r}")

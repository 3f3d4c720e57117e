"""A conversation held to VPP: plan each reply, check or format it, keep the state."""

from __future__ import annotations

from vpp.state import ConversationState, Expectation, expect, initial_state
from vpp.validate import ExchangeResult, format_reply, validate_exchange
from vpp.versions import DEFAULT_VERSION, Version


class Conversation:
    """Carries `ConversationState` from exchange to exchange.

    >>> chat = Conversation("1.5")
    >>> chat.reply("!<q>\\nWhere do we start?", "Which users matter most?").splitlines()[-1]
    '[Version=v1.5 | Tag=q_1 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=default]'
    """

    def __init__(
        self, version: Version = DEFAULT_VERSION, *, state: ConversationState | None = None
    ) -> None:
        self.state = state or initial_state(version)
        if self.state.version != version:
            raise ValueError(f"state is for VPP {self.state.version}, not {version}")

    @property
    def version(self) -> Version:
        return self.state.version

    def expect(self, user_message: str, *, new_locus: str | None = None) -> Expectation:
        """What the reply to `user_message` must look like; the state does not move."""
        return expect(user_message, self.state, new_locus=new_locus)

    def check(
        self,
        user_message: str,
        assistant_message: str,
        *,
        strict: bool = True,
        repair: bool = False,
        new_locus: str | None = None,
    ) -> ExchangeResult:
        """Validate one exchange and move on (as if the reply had been correct)."""
        result = validate_exchange(
            user_message,
            assistant_message,
            self.state,
            strict=strict,
            repair=repair,
            new_locus=new_locus,
        )
        self.state = result.next_state
        return result

    def reply(
        self,
        user_message: str,
        body: str,
        *,
        tag: str | None = None,
        sources: str = "none",
        assumptions: int | None = None,
        new_locus: str | None = None,
        locus: str | None = None,
    ) -> str:
        """Wrap `body` as the compliant reply to `user_message` and move on."""
        expectation = self.expect(user_message, new_locus=new_locus)
        message = format_reply(
            expectation, body, tag=tag, sources=sources, assumptions=assumptions, locus=locus
        )
        self.state = expectation.next_state(tag, locus)
        return message

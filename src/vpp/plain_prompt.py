"""The prompt of a model that decodes inside the reply grammar (the embedded model).

The grammar writes the frame, so the model needs only what its body is for. A 135M model
given the protocol's header and the frame copies them instead of answering: "(your
answer)" as the body, or the user's message back (issue 34). So it gets a short task per
reply tag and the conversation as plain text: the user's words without the command line,
its own earlier bodies without their frame.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from vpp.reply import read_reply
from vpp.state import Expectation

if TYPE_CHECKING:
    from openprose.providers.base import Message

__all__ = ["plain_messages", "plain_system"]

_TASKS = {
    "g": "Answer the user's message.",
    "q": "Ask the user one or two questions that would help you answer well.",
    "c": "Critique the previous answer: say what is wrong or missing.",
    "o": "Give the final answer, complete and short.",
    "o_f": "Give the final answer, complete and short.",
}


def plain_system(expectation: Expectation) -> str:
    task = _TASKS.get(expectation.reply_tag, _TASKS["g"])
    return (
        f"You are a helpful assistant. {task} Use your own words and never repeat the "
        "user's message. Write at most two short sentences."
    )


def plain_messages(conversation: Sequence[Message], expectation: Expectation) -> list[Message]:
    from openprose.providers.base import Message

    plain = []
    for message in conversation:
        if message.role == "assistant":
            body = read_reply(message.content, expectation.version).body
            plain.append(Message("assistant", body or message.content))
            continue
        first, _, rest = message.content.partition("\n")
        plain.append(Message(message.role, rest.strip() or first))
    return plain

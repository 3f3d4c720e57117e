"""Step ids: where an event happened, spelled as its full execution path.

A step id is built from statement numbers (1-based) joined by `.`, plus one marker per kind of
repetition or nesting, so two executions of the same statement never share an id:

    3            third top-level statement          3.2       its second nested statement
    3[4].1       for/repeat iteration 4 (from 0)    3#2.1     loop iteration 2
    3|2          parallel branch 2                  3:1[17].1 pipeline stage 1, item 17
    3>review.1   inside `do review` called at 3     3@lib.2   inside program `lib` called at 3
    3/try.1      try / catch / finally / if-clause / choice option bodies
    3?c1 3?#2    a judgment (condition of clause 1, loop check before iteration 2)
    3!memory     the memory update after a persistent agent's session
    3~t2         a tool loop's model turn 2 (turn 0 is the session's own step)

Since a resumed run takes the same decisions (they are served from the journal), it walks the
same paths and meets the same ids.
"""

from __future__ import annotations


def statement(prefix: str, number: int) -> str:
    return f"{prefix}.{number}" if prefix else str(number)


def iteration(step: str, index: int) -> str:
    return f"{step}[{index}]"


def loop_iteration(step: str, index: int) -> str:
    return f"{step}#{index}"


def branch(step: str, number: int) -> str:
    return f"{step}|{number}"


def stage_item(step: str, stage: int, index: int) -> str:
    return f"{step}:{stage}[{index}]"


def call(step: str, block: str) -> str:
    return f"{step}>{block}"


def program_call(step: str, program: str) -> str:
    return f"{step}@{program}"


def clause(step: str, tag: str) -> str:
    return f"{step}/{tag}"


def judgment(step: str, tag: str = "") -> str:
    return f"{step}?{tag}"


def memory_update(step: str) -> str:
    return f"{step}!memory"


def turn_step(step: str, turn: int) -> str:
    """The step id of a tool loop's model turn: the session's own for the first."""
    return step if turn == 0 else f"{step}~t{turn}"

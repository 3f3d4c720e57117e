"""The middleware loop: instruct, ask the model, verify, re-ask, act, log, trace."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from plsp.actions import ActionRegistry, ActionResult, builtin_actions
from plsp.diagnostics import Violation
from plsp.instr import Instruction, parse_instr, read_instr
from plsp.syntax import Scanner, StateBlock, parse
from plsp.verify import Verdict, verify

__all__ = [
    "SYSTEM_PROMPT",
    "Attempt",
    "CycleRecord",
    "Loop",
    "LoopResult",
    "Model",
    "Policy",
    "PolicyContext",
    "build_prompt",
    "read_prompt",
]

Model: TypeAlias = Callable[[str, str], Awaitable[str] | str]
"""Any callable `(system, prompt) -> reply text`, async (usual) or plain."""

SYSTEM_PROMPT = """\
You are a PLSP state engine. Each turn you get an INSTR: line and the previous state \
block S{...}S. Apply the directives in order to the previous state and answer with ONLY \
the next state block: no other text.
State block: S{statement;statement;}S. Statements: $x:value (variable), >v1,v2 (log), \
!name,p1,p2 (action). Values: "text" (no quotes inside), digits[.digits], or $x. \
No comments.
Directives:
@set:$x=v; sets $x to v.
@upd:$x=v; updates the existing $x to v ($y as a value means the current value of $y).
@del:$x; removes $x.
@fetch:src,$x; gets src and stores it in $x.
@if:A op B?D1&D2:D3; applies D1 and D2 when the comparison holds, else D3 \
(op is one of == != < <= > >=).
@sig:!name,p; puts the command !name,p in the next block. @sig:>v; puts >v in it.
Keep EVERY variable of the previous state unless @del removes it; change nothing else.
Commands (! and >) of the previous block are done: write only those @sig asks for now.
Example:
INSTR:@upd:$l=$t;@set:$t=82;@if:$t>80?@sig:!page,$u,"hot":@sig:!wait,1000;
S{$u:"op";$t:75;$l:70;}S
Answer: S{$u:"op";$t:82;$l:75;!page,$u,"hot";}S"""


def build_prompt(instruction: Instruction, previous: StateBlock) -> str:
    return f"{instruction.dumps()}\n{previous.dumps()}"


def read_prompt(prompt: str) -> tuple[Instruction, StateBlock]:
    """The instruction and previous state of a prompt made by `build_prompt` (a re-ask's
    list of violations after them is ignored). Read with the scanner, not by lines: a
    string value may hold a newline."""
    scanner = Scanner(prompt)
    instruction = read_instr(scanner)
    scanner.skip_whitespace()
    return instruction, scanner.read_block()


@dataclass(frozen=True)
class Attempt:
    reply: str
    violations: tuple[Violation, ...]


@dataclass
class CycleRecord:
    """One cycle, exactly as written to the trace."""

    cycle: int
    instr: str
    previous: str
    attempts: list[Attempt]
    next: str | None
    accepted: bool
    violations: list[Violation] = field(default_factory=list)
    actions: list[ActionResult] = field(default_factory=list)
    logs: list[list[Any]] = field(default_factory=list)
    strict: bool = True

    @property
    def reply(self) -> str:
        return self.attempts[-1].reply

    def results(self) -> dict[str, ActionResult]:
        """The last successful result of each action run in this cycle."""
        return {result.name: result for result in self.actions if result.ok}

    def to_json(self) -> dict[str, Any]:
        return {
            "cycle": self.cycle,
            "instr": self.instr,
            "previous": self.previous,
            "reply": self.reply,
            "next": self.next,
            "accepted": self.accepted,
            "strict": self.strict,
            "attempts": [
                {"reply": a.reply, "violations": [v.to_json() for v in a.violations]}
                for a in self.attempts
            ],
            "violations": [v.to_json() for v in self.violations],
            "actions": [a.to_json() for a in self.actions],
            "logs": self.logs,
        }


@dataclass(frozen=True)
class PolicyContext:
    """What the policy sees when writing the next instruction."""

    cycle: int
    state: StateBlock
    last: CycleRecord | None

    @property
    def results(self) -> dict[str, ActionResult]:
        return self.last.results() if self.last and self.last.accepted else {}


PolicyAnswer: TypeAlias = Instruction | str | None
Policy: TypeAlias = Callable[[PolicyContext], PolicyAnswer | Awaitable[PolicyAnswer]]
"""User code writing the next `INSTR:`; None ends the loop."""


@dataclass(frozen=True)
class LoopResult:
    state: StateBlock
    cycles: list[CycleRecord]
    stop_reason: Literal["policy", "max_cycles", "rejected"]


class Loop:
    """Runs cycles until the policy returns None, `max_cycles`, or repeated rejections.

    A reply with blocking violations is re-asked `retries` times with the violations
    quoted; if it still fails, the cycle is rejected: no action runs and the state stays.
    """

    def __init__(
        self,
        model: Model,
        policy: Policy,
        *,
        actions: ActionRegistry | None = None,
        logs: Callable[[int, list[Any]], object] | None = None,
        on_cycle: Callable[[CycleRecord], object] | None = None,
        strict: bool = True,
        retries: int = 1,
        max_cycles: int = 100,
        max_rejections: int = 3,
        goal: str | None = None,
    ) -> None:
        if retries < 0 or max_cycles < 0 or max_rejections < 1:
            raise ValueError("retries and max_cycles must be >= 0, max_rejections >= 1")
        self.model = model
        self.policy = policy
        self.actions = actions if actions is not None else builtin_actions()
        self.logs = logs
        self.on_cycle = on_cycle
        self.strict = strict
        self.retries = retries
        self.max_cycles = max_cycles
        self.max_rejections = max_rejections
        self.system = SYSTEM_PROMPT + (f"\nGoal of this loop: {goal}" if goal else "")

    async def _instruction(self, context: PolicyContext) -> Instruction | None:
        answer = self.policy(context)
        if inspect.isawaitable(answer):
            answer = await answer
        if isinstance(answer, str):
            return parse_instr(answer)
        if answer is not None and not isinstance(answer, Instruction):
            raise TypeError(
                f"the policy returned {type(answer).__name__}; expected an "
                "Instruction, an INSTR: string or None"
            )
        return answer

    async def run(self, state: StateBlock | None = None) -> LoopResult:
        state = state or StateBlock()
        cycles: list[CycleRecord] = []
        rejections = 0
        for number in range(1, self.max_cycles + 1):
            context = PolicyContext(number, state, cycles[-1] if cycles else None)
            instruction = await self._instruction(context)
            if instruction is None:
                return LoopResult(state, cycles, "policy")
            record = await self.cycle(number, instruction, state)
            cycles.append(record)
            if record.accepted and record.next is not None:
                state = parse(record.next)
                rejections = 0
            else:
                rejections += 1
            if self.on_cycle is not None:
                self.on_cycle(record)
            if rejections >= self.max_rejections:
                return LoopResult(state, cycles, "rejected")
        return LoopResult(state, cycles, "max_cycles")

    async def cycle(
        self, number: int, instruction: Instruction, previous: StateBlock
    ) -> CycleRecord:
        prompt = build_prompt(instruction, previous)
        attempts: list[Attempt] = []
        verdict: Verdict | None = None
        for _ in range(1 + self.retries):
            answer = self.model(self.system, prompt)
            reply = await answer if inspect.isawaitable(answer) else answer
            if not isinstance(reply, str):
                raise TypeError(
                    f"the model returned {type(reply).__name__}; expected the reply text (str)"
                )
            verdict = verify(previous, instruction, reply, strict=self.strict)
            attempts.append(Attempt(reply, verdict.violations))
            if verdict.acceptable:
                break
            prompt = (
                build_prompt(instruction, previous)
                + "\nYour last answer was rejected:\n"
                + "\n".join(f"- {v}" for v in verdict.blocking)
                + "\nAnswer again with only the corrected state block."
            )
        assert verdict is not None
        record = CycleRecord(
            number,
            instruction.dumps(),
            previous.dumps(),
            attempts,
            verdict.block.dumps() if verdict.block else None,
            verdict.acceptable,
            list(verdict.violations),
            strict=self.strict,
        )
        if verdict.acceptable and verdict.block is not None:
            await self._act(verdict.block, record)
        return record

    async def _act(self, block: StateBlock, record: CycleRecord) -> None:
        for action in block.actions:
            values = [block.resolve(param) for param in action.params]
            if action.name not in self.actions:
                record.violations.append(
                    Violation(
                        "unknown_action", f"!{action.name} is not registered; not executed", False
                    )
                )
                continue
            result = await self.actions.run(action.name, values)
            record.actions.append(result)
            if not result.ok:
                record.violations.append(
                    Violation("action_failed", f"!{action.name}: {result.error}", False)
                )
        for log in block.logs:
            data: list[Any] = [block.resolve(v).python() for v in log.values]
            record.logs.append(data)
            if self.logs is not None:
                outcome = self.logs(record.cycle, data)
                if inspect.isawaitable(outcome):
                    await outcome

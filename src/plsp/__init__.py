"""PLSP 0.5: the `S{...}S` state block, `INSTR:` directives and the middleware loop.

from plsp import Instruction, Loop, parse

block = parse('S{$t:75;!wait,500;}S')
instr = Instruction().upd("t", 80).sig("wait", 500)
"""

from __future__ import annotations

from cliconventions.lazy import lazy_names

TYPE_CHECKING = False  # `typing` costs start-up time that `plsp --version` should not pay
if TYPE_CHECKING:
    from plsp.actions import ActionRegistry, ActionResult, FetchPolicy, builtin_actions
    from plsp.diagnostics import ParseError, ParseWarning, Violation
    from plsp.engine import ANY, Expectation, expect
    from plsp.instr import Instruction, parse_condition, parse_instr
    from plsp.loopfile import LoopFileError, LoopSpec, load_loop
    from plsp.middleware import CycleRecord, Loop, LoopResult, Model, PolicyContext
    from plsp.syntax import Action, Assign, Log, Num, Ref, StateBlock, Str, extract, literal, parse
    from plsp.trace import TraceWriter, check_trace
    from plsp.verify import Verdict, verify

# Every name is loaded from its module on first use: `plsp --version` needs none of them,
# and `plsp parse` no aiohttp (plsp.actions).
_MODULES = {
    "actions": ("ActionRegistry", "ActionResult", "FetchPolicy", "builtin_actions"),
    "diagnostics": ("ParseError", "ParseWarning", "Violation"),
    "engine": ("ANY", "Expectation", "expect"),
    "instr": ("Instruction", "parse_condition", "parse_instr"),
    "loopfile": ("LoopFileError", "LoopSpec", "load_loop"),
    "middleware": ("CycleRecord", "Loop", "LoopResult", "Model", "PolicyContext"),
    "syntax": (
        "Action",
        "Assign",
        "Log",
        "Num",
        "Ref",
        "StateBlock",
        "Str",
        "extract",
        "literal",
        "parse",
    ),
    "trace": ("TraceWriter", "check_trace"),
    "verify": ("Verdict", "verify"),
}
__getattr__, __dir__ = lazy_names(__name__, _MODULES, "verify")


__all__ = [
    "ANY",
    "Action",
    "ActionRegistry",
    "ActionResult",
    "Assign",
    "CycleRecord",
    "Expectation",
    "FetchPolicy",
    "Instruction",
    "Log",
    "Loop",
    "LoopFileError",
    "LoopResult",
    "LoopSpec",
    "Model",
    "Num",
    "ParseError",
    "ParseWarning",
    "PolicyContext",
    "Ref",
    "StateBlock",
    "Str",
    "TraceWriter",
    "Verdict",
    "Violation",
    "builtin_actions",
    "check_trace",
    "expect",
    "extract",
    "literal",
    "load_loop",
    "parse",
    "parse_condition",
    "parse_instr",
    "verify",
]

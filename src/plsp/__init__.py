"""PLSP 0.5: the `S{...}S` state block, `INSTR:` directives and the middleware loop.

from plsp import Instruction, Loop, parse

block = parse('S{$t:75;!wait,500;}S')
instr = Instruction().upd("t", 80).sig("wait", 500)
"""

from __future__ import annotations

import sys
from importlib import import_module
from types import ModuleType

TYPE_CHECKING = False  # `typing` costs start-up time that `plsp --version` should not pay
if TYPE_CHECKING:
    from typing import Any

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
_HOME = {name: module for module, names in _MODULES.items() for name in names}


def __getattr__(name: str) -> Any:
    if name == "__version__":  # the distribution's, written once
        from cliconventions import __version__

        return __version__
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'plsp' has no attribute {name!r}")
    value = getattr(import_module(f"plsp.{module}"), name)
    globals()[name] = value  # once loaded, an ordinary attribute
    return value


class _Package(ModuleType):
    """Importing the submodule plsp.verify binds it as the package's attribute ``verify``: the
    function of that name stays bound instead, as ``plsp.verify(...)`` expects."""

    def __setattr__(self, name: str, value: object) -> None:
        if name == "verify" and isinstance(value, ModuleType):
            value = value.verify
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOME])


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

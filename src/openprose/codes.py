"""Every diagnostic code, its severity and its meaning — the one table the docs are built from.

E001-E028 and W001-W011 are the reference's codes. Rows of the reference's per-section
validation tables that carry no code get codes of ours:
  E100-E139 / W100-W139  scanner and parser
  E140-E199 / W140-W199  checker
  I001-I099              notes: checks deferred to run time
"""

from __future__ import annotations

from dataclasses import dataclass

from openprose.diagnostics import Severity


@dataclass(frozen=True, slots=True)
class Code:
    code: str
    severity: Severity
    meaning: str


E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

_TABLE: tuple[Code, ...] = (
    # --- reference: errors -------------------------------------------------------------------
    Code("E001", E, "Unterminated string literal"),
    Code("E002", E, "Unknown escape sequence in string"),
    Code("E003", E, "Session missing prompt or agent"),
    Code("E004", E, "Unexpected token"),
    Code("E005", E, "Invalid syntax"),
    Code("E006", E, "Duplicate agent definition"),
    Code("E007", E, "Undefined agent reference"),
    Code("E008", E, "Invalid model value"),
    Code("E009", E, "Duplicate property"),
    Code("E010", E, "Duplicate use statement"),
    Code("E011", E, "Empty use path"),
    Code("E012", E, "Invalid use path format"),
    Code("E013", E, "Skills must be an array"),
    Code("E014", E, "Skill name must be a string"),
    Code("E015", E, "Permissions must be a block"),
    Code("E016", E, "Permission pattern must be a string"),
    Code("E017", E, "`resume:` requires persistent agent"),
    Code("E018", E, "`resume:` with no existing memory"),
    Code("E019", E, "Duplicate variable name (flat namespace)"),
    Code("E020", E, "Empty input name"),
    Code("E021", E, "Duplicate input declaration"),
    Code("E022", E, "Input after executable statement"),
    Code("E023", E, "Empty output name"),
    Code("E024", E, "Duplicate output declaration"),
    Code("E025", E, "Unknown program in invocation"),
    Code("E026", E, "Missing required input"),
    Code("E027", E, "Unknown input name in invocation"),
    Code("E028", E, "Unknown output property access"),
    # --- reference: warnings -----------------------------------------------------------------
    Code("W001", W, "Empty session prompt"),
    Code("W002", W, "Whitespace-only session prompt"),
    Code("W003", W, "Session prompt exceeds 10,000 characters"),
    Code("W004", W, "Empty prompt property"),
    Code("W005", W, "Unknown property name"),
    Code("W006", W, "Unknown import source format"),
    Code("W007", W, "Skill not imported"),
    Code("W008", W, "Unknown permission type"),
    Code("W009", W, "Unknown permission value"),
    Code("W010", W, "Empty skills array"),
    Code("W011", W, "`session:` on persistent agent with existing memory"),
    # --- ours: scanner and parser (E100-E139, W100-W139) ---------------------------------------
    Code("E100", E, "Source is not valid UTF-8"),
    Code("E101", E, "Tab character (OpenProse indents with spaces)"),
    Code("E102", E, "Unexpected character"),
    Code("E103", E, "Unindent does not match any outer indentation level"),
    Code("E104", E, "Unexpected indent"),
    Code("E105", E, "Expected an indented block"),
    Code("E106", E, 'Opening """ must be followed by a newline'),
    Code("E107", E, "Unterminated discretion `**`"),
    Code("E108", E, "Unterminated multi-line discretion `***`"),
    Code("E109", E, "Unclosed bracket"),
    Code("E110", E, "Elif without if"),
    Code("E111", E, "Else without if"),
    Code("E112", E, "Multiple else (or elif after else)"),
    Code("E113", E, "catch/finally without try"),
    Code("E114", E, "option outside a choice block"),
    Code("E115", E, "Nesting too deep (more than 1000 levels)"),
    Code("E116", E, "A bare value is not a statement"),
    Code("E117", E, "Too many diagnostics; reporting stopped"),
    Code("E118", E, "Cannot read source file"),
    Code("E119", E, "Misplaced catch/finally clause (duplicate, or catch after finally)"),
    Code("E120", E, "Invalid pipe operator (expected map, filter, reduce, pmap)"),
    Code("E121", E, "Reduce without accumulator and item variables"),
    Code("E122", E, "Number literal too long (more than 1000 characters)"),
    # --- ours: checker (E140-E199, W140-W199, I001-I099) ---------------------------------------
    Code("E140", E, "Undefined variable"),
    Code("E141", E, "Undefined variable in string interpolation"),
    Code("E142", E, "Undefined variable in context"),
    Code("E143", E, "Context elements must be variable references"),
    Code("E144", E, "Cannot reassign a const (const, loop, parameter or error variable)"),
    Code("E145", E, "Variable name conflicts with agent name"),
    Code("E146", E, "Output name conflicts with variable"),
    Code("E147", E, "Alias required when importing programs with the same name"),
    Code("E148", E, "Undefined block reference"),
    Code("E149", E, "Duplicate block definition"),
    Code("E150", E, "Block name conflicts with agent name"),
    Code("E151", E, "Empty block name"),
    Code("E152", E, 'Invalid join strategy (must be "all", "first" or "any")'),
    Code("E153", E, 'Invalid on-fail policy (must be "fail-fast", "continue" or "ignore")'),
    Code("E154", E, 'Count is only valid with the "any" strategy'),
    Code("E155", E, "Count must be at least 1"),
    Code("E156", E, "Repeat count must be positive"),
    Code("E157", E, "Repeat count must be an integer"),
    Code("E158", E, "Undefined collection variable"),
    Code("E159", E, "Max iterations must be positive"),
    Code("E160", E, "Max iterations must be an integer"),
    Code("E161", E, "Empty discretion condition (loop, if/elif, choice criteria)"),
    Code("E162", E, "Try block without catch or finally"),
    Code("E163", E, "Retry count must be positive"),
    Code("E164", E, "Retry count must be an integer"),
    Code("E165", E, "Invalid backoff strategy (must be none, linear or exponential)"),
    Code("E166", E, "Choice block without options"),
    Code("E167", E, "Invalid persist value (must be true, project, user or a path string)"),
    Code("E168", E, "Unknown or duplicate modifier in parallel/loop parentheses"),
    Code("E169", E, "Duplicate argument in program invocation"),
    Code("E170", E, "Imported program file not found"),
    Code("W140", W, "Input has an empty description"),
    Code("W141", W, "Block argument count does not match its parameters"),
    Code("W142", W, "Block parameter shadows outer variable"),
    Code("W143", W, "Count exceeds number of parallel branches"),
    Code("W144", W, "Loop variable shadows outer variable"),
    Code("W145", W, "Unbounded loop without max iterations"),
    Code("W146", W, "Very short discretion condition may be ambiguous"),
    Code("W147", W, "Pipeline variable shadows outer variable"),
    Code("W148", W, "Error variable shadows outer variable"),
    Code("W149", W, "Throw message is empty"),
    Code("W150", W, "Retry count is unusually high (more than 10)"),
    Code("W151", W, "Retry on agent definition (only valid in session statements)"),
    Code("W152", W, "Duplicate option label"),
    Code("W153", W, "Option has empty body"),
    Code("W154", W, "Condition branch has empty body"),
    Code("W155", W, "Too many warnings; reporting stopped (no error was left out)"),
    Code("W156", W, "Variable may be unbound: bound only in a body that may not run"),
    Code("I001", I, "Agent memory check (E018/W011) deferred to run time"),
    Code("I002", I, "Imported program contract checks (E026-E028) deferred to run time"),
)

CODES: dict[str, Code] = {c.code: c for c in _TABLE}


def severity_of(code: str) -> Severity:
    return CODES[code].severity

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
    # (scanner/parser helper: add rows here)
    # --- ours: checker (E140-E199, W140-W199, I001-I099) ---------------------------------------
    # (checker helper: add rows here)
)

CODES: dict[str, Code] = {c.code: c for c in _TABLE}


def severity_of(code: str) -> Severity:
    return CODES[code].severity

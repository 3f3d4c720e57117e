"""Signature help: the parameters of the block (``do review(|``) or the inputs of the imported
program (``research(topic: x, |``) whose call the cursor is in.

Read from the text before the cursor on its line (the call is being typed, so it rarely
parses): the innermost parenthesis left open, outside strings, and the name before it.
"""

from __future__ import annotations

import re

from lsprotocol import types as lsp

from openprose.lsp.documents import Analysis, Documents

_CALLEE = re.compile(r"(?:\b(?P<do>do)\s+)?(?P<name>[A-Za-z_][\w-]*)\s*$")
_LABEL = re.compile(r"\s*(?P<label>[A-Za-z_][\w-]*)\s*:")


def signature_help(store: Documents, analysis: Analysis, offset: int) -> lsp.SignatureHelp | None:
    source = analysis.source
    line, column = source.position(offset)
    before = source.line_text(line)[: column - 1]
    call = _open_call(before)
    if call is None:
        return None
    paren, arguments = call
    callee = _CALLEE.search(before[:paren])
    if callee is None:
        return None
    name = callee.group("name")
    if callee.group("do"):
        blocks = analysis.index.named(name, "block")
        if not blocks:
            return None
        params = [p.id for p in blocks[0].node.params]
        active = len(arguments) - 1
        shown = params
    else:
        inputs = _inputs(store, analysis, name)
        if inputs is None:
            return None
        params = list(inputs)
        typed = _LABEL.match(arguments[-1])
        active = params.index(typed["label"]) if typed and typed["label"] in params else -1
        if active < 0 and not typed:  # a new argument: the first input not given yet
            given = {m["label"] for a in arguments[:-1] if (m := _LABEL.match(a))}
            active = next((i for i, p in enumerate(params) if p not in given), -1)
        shown = [f"{p}: …" for p in params]
    label = ("do " if callee.group("do") else "") + name + "("
    parameters = []
    for number, text in enumerate(shown):
        if number:
            label += ", "
        parameters.append(lsp.ParameterInformation(label=(len(label), len(label) + len(text))))
        label += text
    label += ")"
    signature = lsp.SignatureInformation(label=label, parameters=parameters)
    return lsp.SignatureHelp(
        signatures=[signature],
        active_signature=0,
        active_parameter=active if 0 <= active < len(params) else None,
    )


def _inputs(store: Documents, analysis: Analysis, name: str) -> tuple[str, ...] | None:
    """The inputs of the program imported as ``name``, when its contract can be known."""
    base = analysis.path.parent if analysis.path is not None else None
    for definition in analysis.index.named(name, "program"):
        contract = store.contract(definition.node.path.value, base)
        if contract is not None:
            return contract.inputs
    return None


def _open_call(before: str) -> tuple[int, list[str]] | None:
    """Where the innermost open ``(`` is, and the text of each argument after it (split at
    its top-level commas); None when every parenthesis is closed."""
    stack: list[tuple[int, list[str]]] = []
    current: list[str] = []
    in_string = False
    i = 0
    while i < len(before):
        char = before[i]
        if in_string:
            if char == "\\":
                i += 1
            elif char == '"':
                in_string = False
            current.append(char)
        elif char == '"':
            in_string = True
            current.append(char)
        elif char == "(":
            stack.append((i, []))
            current = []
        elif char == ")":
            if stack:
                stack.pop()
            current = []
        elif char == "," and stack:
            stack[-1][1].append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    if not stack:
        return None
    paren, arguments = stack[-1]
    return paren, [*arguments, "".join(current)]

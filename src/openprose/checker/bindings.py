"""Variables: declarations (let, const, input, output), references, strings and context."""

from __future__ import annotations

from bisect import bisect_right

from openprose import nodes as n
from openprose.checker.context_text import text_context_fix
from openprose.checker.imports import call_result, check_output_access
from openprose.checker.renames import rename_fix, scope_of
from openprose.checker.scope import FlatKind, ScopedKind, Var
from openprose.checker.shapes import check_output_shape
from openprose.checker.state import (
    Checker,
    Handler,
    head,
    span_of,
    tail,
)
from openprose.contracts import ProgramContract
from openprose.diagnostics import Edit, Fix
from openprose.source import Span

_WHAT: dict[str, str] = {
    "let": "variable",
    "const": "const",
    "input": "input",
    "output": "output",
    "branch": "parallel result",
    "loop": "loop variable",
    "pipeline": "pipeline variable",
    "error": "error variable",
    "param": "block parameter",
}


def describe(var: Var) -> str:
    return f"{_WHAT[var.kind]} '{var.name}' (line {var.span.line})"


# --- declarations ----------------------------------------------------------------------------


def declare(
    ck: Checker,
    name: n.Name,
    kind: FlatKind,
    *,
    program: str | None = None,
    contract: ProgramContract | None = None,
    value: n.Expr | None = None,
) -> None:
    """Declare a flat-namespace name, reporting every collision the reference forbids
    (``value``: what a `let` binds, for the fix of a second `let` of the same name)."""
    ident = name.id
    if not ident:
        return  # the declaring statement reports the empty name
    agent = ck.agents.get(ident)
    if agent is not None:
        ck.emit(
            "E145",
            name.span,
            f"Variable name '{ident}' conflicts with agent '{ident}' "
            f"(line {agent.node.name.span.line})",
            fix=rename_fix(ck, name),
        )
    prior = ck.scope.flat.get(ident) or ck.scope.visible.get(ident)
    if prior is not None:
        if kind == "output" and prior.kind == "output":
            if not _branch_collision(ck, "E024", name, prior, "output"):
                ck.emit(
                    "E024",
                    name.span,
                    f"Output '{ident}' already declared (line {prior.span.line})",
                    fix=_rename_later(ck, name, prior),
                )
        elif kind == "output" or prior.kind == "output":
            ck.emit(
                "E146",
                name.span,
                f"Output name '{ident}' conflicts with {describe(prior)}"
                if kind == "output"
                else f"Variable name '{ident}' conflicts with {describe(prior)}",
                fix=_rename_later(ck, name, prior),
            )
        elif kind == "input" and prior.kind == "input":
            ck.emit("E021", name.span, f"Input '{ident}' already declared (line {prior.span.line})")
        else:
            if not _branch_collision(ck, "E019", name, prior, "let"):
                fix = _reassign_fix(ck, name, kind, prior, value)
                reassigns = fix is not None
                if fix is None and prior.kind != "input":
                    fix = _rename_later(ck, name, prior)
                ck.emit(
                    "E019",
                    name.span,
                    f"Variable '{ident}' already defined ({_WHAT[prior.kind]}, line "
                    f"{prior.span.line}); variable names must be unique in a program",
                    help=f"to give it a new value, assign it: `{ident} = ...` (no `let`)"
                    if reassigns
                    else None,
                    fix=fix,
                )
    ck.scope.declare_flat(Var(ident, kind, name.span, program, contract, ck.guards))


def _rename_later(ck: Checker, name: n.Name, prior: Var) -> Fix | None:
    """The rename of a second binding (see `renames`), when it is bound at least wherever the
    first one is: at the first's level or further out. Inside a body the first is not in (an
    `else` beside the first's `if`), uses after it could read either, so no rename says it."""
    here = ck.guards
    if prior.guards[: len(here)] != here:
        return None
    return rename_fix(ck, name)


def _branch_collision(ck: Checker, code: str, name: n.Name, prior: Var, keyword: str) -> bool:
    """Report a name declared again in another branch of the same `if`/`choice` (E019 for
    `let`, E024 for `output`) with the fix that declares it once before; False when the
    two declarations are not such branches."""
    group = ck.branch_groups.get(name.span.start)
    if group is None or prior.span.start not in group.starts:
        return False
    ident, where = name.id, f"another branch of this {group.keyword} (line {prior.span.line})"
    ck.branch_collided.add(ident)
    ck.emit(
        code,
        name.span,
        f"Output '{ident}' already declared in {where}; an output is declared once"
        if keyword == "output"
        else f"Variable '{ident}' already defined in {where}; variable names must be unique "
        "in a program, also across branches",
        help=f'declare {ident} once before the {group.keyword}: {keyword} {ident} = "" '
        f"(then `{ident} = ...` in each branch)",
        fix=group.fix,
    )
    return True


def _reassign_fix(
    ck: Checker, name: n.Name, kind: FlatKind, prior: Var, value: n.Expr | None
) -> Fix | None:
    """`let smell = …` again inside a loop, branch or `try` body, where `smell` is a visible
    `let` from outside it: in the flat namespace that is the same variable, so what the
    author wrote means giving it a new value — `smell = …` ("Variable reassignment … for
    let only"). At the same level a second `let` may as well be a second name, unless its
    value reads the name itself (`let draft = session … context: draft`): that is a
    revision of the variable, offered as an unsafe fix."""
    if kind != "let" or prior.kind != "let" or ck.scope.visible.get(name.id) is not prior:
        return None
    if ck.scope.in_block and not ck.scope.declared_in_this_block(name.id):
        return None  # a block re-using a program's name most likely means a name of its own
    guards = ck.guards
    safe = True
    if len(guards) <= len(prior.guards) or guards[: len(prior.guards)] != prior.guards:
        # not deeper in (in a loop, branch or try): a second name, or a typo?
        if value is None or not _mentions(value, name.id):
            return None
        safe = False
    if ck.source is None:
        return None
    text = ck.source_text
    line_start = text.rfind("\n", 0, name.span.start) + 1
    before = text[line_start : name.span.start]
    keyword = before.lstrip(" ")
    if not keyword.startswith("let") or keyword[3:].strip(" ") or len(keyword) == 3:
        return None  # not `let NAME` at the start of its line (a branch `x = let ...`?)
    at = line_start + len(before) - len(keyword)
    return Fix(
        f"assign `{name.id}` (drop `let`): it is the variable of line {prior.span.line}",
        (Edit(ck.span_at(at, name.span.start), ""),),
        safe=safe,
    )


def _mentions(value: n.Expr, ident: str) -> bool:
    """Whether ``value`` reads the variable ``ident`` (as a name, in context or in `{…}`)."""
    return any(
        (node.id if isinstance(node, n.Name) else node.name) == ident
        for node in n.walk(value)
        if isinstance(node, n.Name | n.Interpolation)
    )


def bind_scoped(ck: Checker, ident: str, span: Span, kind: ScopedKind, shadow_code: str) -> None:
    """Bind a body-local name (loop variable, parameter...); shadowing is only a warning."""
    outer = ck.scope.visible.get(ident)
    if outer is not None:
        ck.emit(
            shadow_code,
            span,
            f"{_WHAT[kind].capitalize()} '{ident}' shadows outer {describe(outer)}",
        )
    agent = ck.agents.get(ident)
    if agent is not None:
        name = n.Name(span=span, id=ident)
        ck.emit(
            "E145",
            span,
            f"Variable name '{ident}' conflicts with agent '{ident}' "
            f"(line {agent.node.name.span.line})",
            fix=rename_fix(ck, name, within=scope_of(ck, name)),
        )
    ck.scope.bind_scoped(Var(ident, kind, span))


def _binding(ck: Checker, node: n.Binding) -> None:
    ck.visit(node.value)
    program, contract = call_result(ck, node.value)
    target = node.target
    if isinstance(target, n.Name):
        declare(ck, target, node.kind, program=program, contract=contract, value=node.value)
        return
    for name in target.names:
        declare(ck, name, node.kind)
        if program is not None:
            check_output_access(ck, program, contract, name.id, name.span)


def _assign(ck: Checker, node: n.Assign) -> None:
    ck.visit(node.value)
    target = node.target
    var = ck.resolve(
        target.id,
        target.span,
        "E140",
        f"Undefined variable '{target.id}' (declare it with let before assigning)",
    )
    if var is None:
        return
    if var.is_const:
        ck.emit(
            "E144",
            target.span,
            f"Cannot reassign {describe(var)}",
            fix=_const_to_let_fix(ck, var),
        )
        return
    var.program, var.contract = call_result(ck, node.value)


def _const_to_let_fix(ck: Checker, var: Var) -> Fix | None:
    """A `const` reassigned later: the program treats it as a variable, so the fix declares
    it with `let` (unsafe: the author may have meant a new name instead)."""
    text = ck.source_text
    if var.kind != "const" or not text:
        return None
    line_start = text.rfind("\n", 0, var.span.start) + 1
    before = text[line_start : var.span.start]
    keyword = before.rfind("const")
    if keyword == -1 or before[keyword:].split() != ["const"]:
        return None
    at = line_start + keyword
    return Fix(
        f"declare '{var.name}' with `let`",
        (Edit(ck.span_at(at, at + 5), "let"),),
        safe=False,
    )


def _output(ck: Checker, node: n.Output) -> None:
    if not node.name.id:
        ck.emit("E023", head(node.span, 6), "Output name cannot be empty")
    ck.visit(node.value)
    if node.shape is not None:
        check_output_shape(ck, node.shape)
    program, contract = call_result(ck, node.value)
    declare(ck, node.name, "output", program=program, contract=contract)


def _input(ck: Checker, node: n.Input) -> None:
    if not node.name.id:
        ck.emit("E020", head(node.span, 5), "Input name cannot be empty")
    if ck.depth or ck.seen_executable:
        ck.emit(
            "E022",
            head(node.span, 5),
            "Inputs must be declared before executable statements",
            fix=_move_input_fix(ck, node),
        )
    description = node.description
    if not node.text.strip():
        ck.emit("W140", description.span, "Consider adding a description")
    ck.visit(description)
    declare(ck, node.name, "input")


# --- references ------------------------------------------------------------------------------


# Literals of other languages that programs write as values (`let done = false`).
_FOREIGN_LITERALS = frozenset(("true", "false", "True", "False", "null", "None", "nil"))


def _name(ck: Checker, node: n.Name) -> None:
    ident = node.id
    if ident in _FOREIGN_LITERALS and ident not in ck.declared and ident not in ck.scope.visible:
        _foreign_literal(ck, node)
        return
    ck.resolve(ident, node.span, "E140", f"Undefined variable '{ident}'")


def _foreign_literal(ck: Checker, node: n.Name) -> None:
    """`true`, `false`, `null` as a value: the grammar's values are strings, numbers, names,
    arrays and what sessions return; a flag is text a model reads (or a **condition** it
    judges). Quoting it keeps what the author wrote and what the model will see."""
    ident = node.id
    fix = None
    if ck.source is not None and ck.source_text[node.span.start : node.span.end] == ident:
        fix = Fix(f'write it as text: "{ident}"', (Edit(node.span, f'"{ident}"'),))
    ck.emit(
        "E140",
        node.span,
        f"Undefined variable '{ident}': OpenProse has no boolean or null values",
        help=f'write it as text, `"{ident}"`, or let a **condition** judge what it stands for',
        fix=fix,
    )


def check_attribute(ck: Checker, node: n.Attribute, code: str) -> None:
    """``result.field``: the base must be defined; the field must be an output (when known)."""
    first = node
    while isinstance(first.value, n.Attribute):
        first = first.value
    base = first.value
    assert isinstance(base, n.Name)
    var = ck.resolve(base.id, base.span, code, f"Undefined variable '{base.id}'")
    if var is not None and var.program is not None:
        check_output_access(
            ck, var.program, var.contract, first.attr, tail(first.span, len(first.attr))
        )


def _attribute(ck: Checker, node: n.Attribute) -> None:
    check_attribute(ck, node, "E140")


def _string(ck: Checker, node: n.StringLit) -> None:
    for part in node.parts:
        if type(part) is str:
            continue
        assert isinstance(part, n.Interpolation)
        var = ck.resolve(
            part.name,
            part.span,
            "E141",
            f"Undefined variable '{part.name}' in string interpolation",
            None if part.name in ck.scope.visible else _escape_fix(ck, part),
        )
        if var is not None:
            _template_braces(ck, part)
        if var is not None and var.program is not None and part.path:
            # point at `field` in `{result.field}`, as for `result.field` outside strings
            # (an interpolation never spans lines)
            field, span = part.path[0], part.span
            skip = 2 + len(part.name)
            at = Span(
                span.start + skip,
                span.start + skip + len(field),
                span.line,
                span.column + skip,
                span.line,
                span.column + skip + len(field),
            )
            check_output_access(ck, var.program, var.contract, field, at)


def _template_braces(ck: Checker, part: n.Interpolation) -> None:
    """`{{name}}` (Jinja, Mustache) or `${name}` (JavaScript, shell) around a variable: the
    interpolation is `{name}`, so the model would read `{Ada}` or `$Ada`. W171 with the safe
    fix that removes the extra characters (the value is what the author meant to show)."""
    text = ck.source_text
    start, end = part.span.start, part.span.end
    edits: tuple[Edit, ...]
    if not text or text[start : start + 1] != "{" or text[end - 1 : end] != "}":
        return
    if text[start - 1 : start] == "{" and text[end : end + 1] == "}":
        edits = (Edit(ck.span_at(start - 1, start), ""), Edit(ck.span_at(end, end + 1), ""))
        shown, at = "{" + text[start:end] + "}", ck.span_at(start - 1, end + 1)
    elif text[start - 1 : start] == "$" and text[start - 2 : start - 1] != "\\":
        edits = (Edit(ck.span_at(start - 1, start), ""),)
        shown, at = "$" + text[start:end], ck.span_at(start - 1, end)
    else:
        return
    ck.emit(
        "W171",
        at,
        f"`{shown}`: OpenProse interpolates `{text[start:end]}`; the extra characters stay in "
        "the text",
        fix=Fix(f"write `{text[start:end]}`", edits),
    )


def _move_input_fix(ck: Checker, node: n.Input) -> Fix | None:
    """An `input` below executable statements (or inside a body): the author meant "ask at
    this point", the language asks every input when the run starts. The fix moves the line,
    with its comment, to just above the first executable statement (or the top-level
    statement holding it), unindented; a `{name}` in its description that is no input
    declared by then is escaped, since it would be read before it is bound. From the top
    level and with its text kept it is safe (the caller gives every input before the run
    either way, so nothing that runs changes); out of a body or with an escape, unsafe."""
    text = ck.source_text
    program = ck.program
    if not text or program is None:
        return None
    # The top-level statement holding the input (a bisection: a linear scan per misplaced
    # input made a long program's check quadratic).
    index = bisect_right(program.body, node.span.start, key=lambda s: s.span.start) - 1
    holder = program.body[index] if index >= 0 else None
    if holder is not None and not node.span.start < holder.span.end:
        holder = None
    targets = [s for s in (ck.first_executable, holder) if s is not None]
    if not targets:
        return None
    first = min(targets, key=lambda s: s.span.start)
    start = text.rfind("\n", 0, node.span.start) + 1
    end = text.find("\n", node.span.end)
    end = len(text) if end == -1 else end + 1
    target = text.rfind("\n", 0, first.span.start) + 1
    if text[start : node.span.start].strip(" ") or text[target : first.span.start]:
        return None  # not at the start of their lines
    flat = ck.scope.flat  # looked up per interpolation: a set of all inputs per fix was quadratic
    line = (
        text[node.span.start : end]
        if text[start:end].endswith("\n")
        else text[node.span.start : end] + "\n"
    )
    parts = node.description.parts if isinstance(node.description, n.StringLit) else ()
    escaped = False
    for part in reversed(parts):
        if isinstance(part, n.Interpolation) and not _input_before(flat.get(part.name), target):
            at = part.span.start - node.span.start
            if line[at : at + 1] == "{":
                line = line[:at] + "\\" + line[at:]
                escaped = True
    return Fix(
        f"move `input {node.name.id}` to the top: it is asked when the run starts, "
        "not at this point",
        (Edit(ck.span_at(target, target), line), Edit(ck.span_at(start, end), "")),
        safe=not ck.depth and not escaped,
    )


def _input_before(var: Var | None, offset: int) -> bool:
    """Whether `var` is an input declared before `offset` (one a moved input may name)."""
    return var is not None and var.kind == "input" and var.span.start < offset


def _escape_fix(ck: Checker, part: n.Interpolation) -> Fix | None:
    """`{name}` naming nothing the program declares anywhere (and no agent, block or import)
    is text meant literally — a JSON or template example: escape it as `\\{name}` ("Backslash
    can escape braces"), which keeps the text the model reads and the program valid. A name
    that exists only in another scope (a block's parameter, a name of its body) gets the
    same escape as an unsafe fix: the value is not there to read, the text stays."""
    name = part.name
    if name in ck.agents or name in ck.blocks or name in ck.imports:
        return None
    if ck.source is None or ck.source_text[part.span.start : part.span.start + 1] != "{":
        return None
    at = part.span
    elsewhere = name in ck.declared
    if elsewhere and not _only_in_a_block(ck, name):
        return None  # declared later, or in a body: moving a statement is the answer
    if elsewhere:
        bind = _bind_call_fix(ck, name, at.start)
        if bind is not None:
            return bind
    return Fix(
        f"escape the brace: \\{{{name}}} is literal text"
        + (" (the variable exists only in another scope)" if elsewhere else ""),
        (Edit(ck.span_at(at.start, at.start), "\\"),),
        safe=not elsewhere,
    )


def _array(ck: Checker, node: n.ArrayLit) -> None:
    visit = ck.visit
    for element in node.elements:
        visit(element)


def _object(ck: Checker, node: n.ObjectContext) -> None:
    for name in node.names:
        ck.resolve(name.id, name.span, "E142", f"Undefined variable '{name.id}' in context")


def check_context(ck: Checker, value: n.PropertyValue) -> None:
    """``context:`` takes a variable, an array of variables, or ``{ a, b }``."""
    if isinstance(value, n.ArrayLit):
        fix = None
        for element in value.elements:
            if isinstance(element, n.Name | n.Attribute):
                _context_ref(ck, element, value)
            else:
                if fix is None and isinstance(element, n.StringLit):
                    fix = text_context_fix(ck, value)
                ck.emit(
                    "E143",
                    span_of(element),
                    "Context array elements must be variable references",
                    fix=fix,
                )
    elif isinstance(value, n.Name | n.Attribute):
        _context_ref(ck, value)
    elif isinstance(value, n.ObjectContext):
        _object(ck, value)
    elif isinstance(value, n.PermissionsBlock):
        _context_block(ck, value)
    elif not isinstance(value, n.Invalid):
        ck.emit(
            "E143",
            span_of(value),
            "Context must be a variable, an array of variables or { a, b }",
            help='to have files read, say so in the prompt ("Read docs/*.md first."); '
            "else bind the value to a variable and pass the variable",
            fix=text_context_fix(ck, value) if isinstance(value, n.StringLit) else None,
        )


def _context_block(ck: Checker, block: n.PermissionsBlock) -> None:
    """`context:` with `file: PATH` lines under it (published programs write this): the
    grammar's context is names on the property's own line. One E143; when every line's value
    is a name, the unsafe fix lists them (`context: [a, b]`) — the `file:` hint is lost."""
    names = [rule.value for rule in block.rules if isinstance(rule.value, n.Name)]
    fix = None
    if names and len(names) == len(block.rules) and ck.source_text:
        text = ck.source_text
        line_start = text.rfind("\n", 0, block.span.start)
        start = line_start if line_start > 0 and text[line_start - 1] != "\r" else line_start - 1
        listed = " [" + ", ".join(name.id for name in names) + "]"
        fix = Fix(
            f"write `context:{listed}`",
            (Edit(ck.span_at(max(start, 0), block.span.end), listed),),
            safe=False,
        )
    ck.emit(
        "E143",
        span_of(block),
        "`context:` takes names on its own line, not a block of `key: value` lines",
        help="list the variables: `context: [a, b]` (bind a path or text to a variable first)",
        fix=fix,
    )


def _context_ref(ck: Checker, ref: n.Name | n.Attribute, array: n.ArrayLit | None = None) -> None:
    if isinstance(ref, n.Name):
        ident = ref.id
        if (
            ident in _FOREIGN_LITERALS
            and ident not in ck.declared
            and ident not in ck.scope.visible
        ):
            ck.emit(
                "E142",
                ref.span,
                f"Undefined variable '{ident}' in context: OpenProse has no boolean or null "
                "values, and context lists variables",
                help=f"remove `{ident}` from the context",
                fix=_drop_element_fix(ck, ref, array),
            )
            return
        fix = None
        # A visible name gets no fix (`resolve` reports nothing): skip looking for one, which
        # reads every block (once per context name, it made a long program's check quadratic).
        if ident not in ck.scope.visible and _only_in_a_block(ck, ident):
            fix = _bind_call_fix(ck, ident, ref.span.start) or _drop_context_fix(ck, ref, array)
        ck.resolve(ident, ref.span, "E142", f"Undefined variable '{ident}' in context", fix)
    else:
        check_attribute(ck, ref, "E142")


def _drop_element_fix(ck: Checker, ref: n.Name, array: n.ArrayLit | None) -> Fix | None:
    """`context: [notes, null]`: a null passes nothing, so removing it (with its comma)
    keeps what the session sees. Unsafe: the author may have meant a variable of that name."""
    text = ck.source_text
    if array is None or len(array.elements) < 2 or not text:
        return None
    index = next(i for i, e in enumerate(array.elements) if e is ref)
    if index + 1 < len(array.elements):
        start, end = ref.span.start, array.elements[index + 1].span.start
    else:
        start, end = array.elements[index - 1].span.end, ref.span.end
    if "\n" in text[start:end] or "#" in text[start:end]:
        return None
    return Fix(f"remove `{ref.id}`", (Edit(ck.span_at(start, end), ""),), safe=False)


def _drop_context_fix(ck: Checker, ref: n.Name, array: n.ArrayLit | None) -> Fix | None:
    """A name in `context:` that exists only in another scope (a block's body): the session
    cannot be given it here, so the unsafe fix leaves it out — the element, or the whole
    `context:` line when it is the only name."""
    if array is not None and len(array.elements) > 1:
        return _drop_element_fix(ck, ref, array)
    text = ck.source_text
    start = text.rfind("\n", 0, ref.span.start) + 1
    end = text.find("\n", ref.span.end)
    end = len(text) if end == -1 else end + 1
    if not _only_context(text[start:end], ref.id):
        return None
    edit = Edit(ck.span_at(start, end), "")
    return Fix(f"remove `{ref.id}` from the context", (edit,), safe=False)


def _only_in_a_block(ck: Checker, name: str) -> bool:
    """Whether ``name`` is declared only as a block's parameter or in a block's body."""
    program = ck.program
    if ck.scope.in_block or program is None:
        return False
    if name not in ck.block_locals and name not in ck.block_params:
        return False
    return name not in ck.declared_outside_blocks


def _bind_call_fix(ck: Checker, name: str, used_at: int) -> Fix | None:
    """`do draft-post("x")` run bare, then `post` used: when the block's last statement binds
    `post`, the block's value is that value, so binding the call (`let post = do …`) gives
    the program exactly the name it reads. Unsafe: one bare call of the block before the use
    and nothing else of that name at the top level are the only evidence."""
    program, text = ck.program, ck.source_text
    inside = ck.block_locals.get(name)
    if program is None or inside is None or not text:
        return None
    block = ck.blocks.get(inside[0])
    last = block.body[-1] if block is not None and block.body else None
    bound = (
        last.target.id
        if isinstance(last, n.Binding) and isinstance(last.target, n.Name)
        else last.name.id
        if isinstance(last, n.Output)
        else None
    )
    if bound != name:
        return None
    calls = [
        s
        for s in program.body
        if isinstance(s, n.DoCall) and s.name.id == inside[0] and s.span.start < used_at
    ]
    if len(calls) != 1 or text[calls[0].span.start - 1 : calls[0].span.start] not in ("", "\n"):
        return None
    at = calls[0].span.start
    return Fix(
        f"bind the block's result: `let {name} = do {inside[0]}(…)`",
        (Edit(ck.span_at(at, at), f"let {name} = "),),
        safe=False,
    )


def _only_context(line: str, ident: str) -> bool:
    """`context: NAME` or `context: [NAME]` alone on its line (no comment to lose)."""
    return line.strip().replace("[", " ").replace("]", " ").split() == ["context:", ident]


HANDLERS: dict[type, Handler] = {
    n.Binding: _binding,
    n.Assign: _assign,
    n.Output: _output,
    n.Input: _input,
    n.Name: _name,
    n.Attribute: _attribute,
    n.StringLit: _string,
    n.ArrayLit: _array,
    n.ObjectContext: _object,
}

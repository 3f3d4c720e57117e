"""The `guided` request for a small local model: a prompt laid out for copying and a
grammar of the next block's shape, with every value left to the model.

The 135M embedded model cannot apply directives written as `INSTR:` (it copies the previous
block: docs/decisions.md, plsp34c), but it copies well. So the prompt shows the untouched
variables as a block and then one line per directive (the values a reference or a
comparison reads beside it), and the grammar fixes what the instruction's *text* names,
never what evaluating it gives:

* the variable names: the untouched ones (required), then each name a directive targets,
  optional where a `@del` or an `@if` branch may remove or add it;
* the commands: each `@sig` outside an `@if` gives one command with its head (`!name` or
  `>`) and number of values; each `@if` gives a choice between its two branches' commands;
* references only to names the block may hold; strings without the characters that end a
  statement or a block, unless a string the model was shown has one.

Every value (kept, set, updated, fetched, command parameters), whether a deleted variable
is left out, and which `@if` branch ran are the model's. The verifier then checks the
reply as it checks any other.
"""

from __future__ import annotations

from collections.abc import Sequence

from plsp import syntax
from plsp.gbnf import MAX_DIGITS, MAX_NAME_CHARS, MAX_VALUES, gbnf_literal, regex_to_gbnf
from plsp.instr import Delete, Directive, Fetch, If, Instruction, Opaque, Set, Signal, Update
from plsp.syntax import Action, Assign, Log, Ref, StateBlock, Str, Value

__all__ = ["GUIDED_SYSTEM", "guided_grammar", "guided_prompt"]

MAX_STRING_CHARS = 40

GUIDED_SYSTEM = """\
You apply changes to a state. You get the old state S{...}S, then the changes, one a line. \
Write the new state S{...}S: the old state's variables as they are, then each changed \
variable with its NEW value (from set, never the old value); a variable removed by del is \
left out; then the commands sig asks for. For "if", decide the comparison and write the \
commands of the branch that runs.
Examples:
S{$u: "op";$l: 70;}S
set $t: 82
del $x
sig !wait, 1000
Answer: S{$u: "op";$l: 70;$t: 82;!wait, 1000;}S
S{$b: 3;}S
set $a: "cold"
sig > "low", $b
if $b>1 ($b is 3) then sig !page, $b, "hi" else sig !wait, 200
Answer: S{$b: 3;$a: "cold";> "low", $b;!page, $b, "hi";}S"""


def _targets(directives: tuple[Directive, ...]) -> list[Set | Update | Delete | Fetch]:
    """The directives that name a variable, branches included, in order."""
    found: list[Set | Update | Delete | Fetch] = []
    for directive in directives:
        if isinstance(directive, If):
            found += _targets(directive.then + directive.otherwise)
        elif isinstance(directive, Set | Update | Delete | Fetch):
            found.append(directive)
    return found


def _name(directive: Set | Update | Delete | Fetch) -> str:
    return directive.dest if isinstance(directive, Fetch) else directive.name


def _touched(instruction: Instruction) -> list[str]:
    return list(dict.fromkeys(_name(d) for d in _targets(instruction.directives)))


def _value_note(value: Value, previous: StateBlock) -> str:
    if isinstance(value, Ref) and value.name in previous.variables:
        return f" (${value.name} is {previous.variables[value.name].dumps()})"
    return ""


def _spaced(statement: Assign | Action | Log) -> str:
    """A statement with a space before each value: the tokens the model writes after the
    grammar's fixed `$x:` or `,` are then the prompt's (`:"` is one token, `: "` two)."""
    if isinstance(statement, Assign):
        return f"${statement.name}: {statement.value.dumps()}"
    if isinstance(statement, Action):
        return f"!{statement.name}" + "".join(f", {p.dumps()}" for p in statement.params)
    return ">" + ",".join(f" {v.dumps()}" for v in statement.values)


def _block(statements: Sequence[Assign | Action | Log]) -> str:
    return "S{" + "".join(_spaced(s) + ";" for s in statements) + "}S"


def _line(directive: Directive, previous: StateBlock) -> str:
    if isinstance(directive, Set | Update):
        assignment = _spaced(Assign(directive.name, directive.value))
        return f"set {assignment}" + _value_note(directive.value, previous)
    if isinstance(directive, Delete):
        return f"del ${directive.name}"
    if isinstance(directive, Fetch):
        return f"fetch {directive.source} into ${directive.dest}"
    if isinstance(directive, Signal):
        return f"sig {_spaced(directive.command)}"
    if isinstance(directive, If):
        condition = directive.condition
        notes = "".join(_value_note(side, previous) for side in (condition.left, condition.right))
        text = f"if {condition.dumps()}{notes} then " + " and ".join(
            _line(d, previous) for d in directive.then
        )
        if directive.otherwise:
            text += " else " + " and ".join(_line(d, previous) for d in directive.otherwise)
        return text
    return directive.dumps()  # an unknown directive, as written


def guided_prompt(instruction: Instruction, previous: StateBlock) -> str:
    """The untouched variables as a block, then one line per directive."""
    touched = set(_touched(instruction))
    kept = [s for s in previous.statements if isinstance(s, Assign) and s.name not in touched]
    return "\n".join([_block(kept), *(_line(d, previous) for d in instruction.directives)])


def _command(command: Action | Log) -> str:
    if isinstance(command, Action):
        return gbnf_literal(f"!{command.name}") + ' "," value' * len(command.params)
    return '">" value' + ' "," value' * (len(command.values) - 1)


def _commands(directives: tuple[Directive, ...]) -> list[str]:
    """One part per directive that asks for commands: a `@sig`'s command, or an `@if`'s
    choice between its branches' commands (a branch without any: nothing)."""
    parts: list[str] = []
    for directive in directives:
        if isinstance(directive, Signal):
            parts.append(f'{_command(directive.command)} ";"')
        elif isinstance(directive, If):
            branches = [
                " ".join(_commands(branch)) or '""'
                for branch in (directive.then, directive.otherwise)
            ]
            if branches != ['""', '""']:
                parts.append(f"({' | '.join(branches)})")
    return parts


def guided_grammar(instruction: Instruction, previous: StateBlock) -> str:
    """GBNF of the next block's shape: fixed names and command heads, free values."""
    touched = _touched(instruction)
    branches = [d for d in instruction.directives if isinstance(d, If)]
    conditional = {_name(t) for d in branches for t in _targets(d.then + d.otherwise)}
    deleted = {d.name for d in _targets(instruction.directives) if isinstance(d, Delete)}
    parts = [
        f'{gbnf_literal(f"${name}:")} value ";"'
        for name in previous.variables
        if name not in touched
    ]
    for name in touched:
        item = f'{gbnf_literal(f"${name}:")} value ";"'
        may_be_absent = name in deleted or (name in conditional and name not in previous.variables)
        parts.append(f"({item})?" if may_be_absent else item)
    parts += _commands(instruction.directives)
    if any(isinstance(d, Opaque) for d in instruction.directives):  # it may ask for any
        name = regex_to_gbnf(syntax._ACTION_NAME.pattern, max_repeat=MAX_NAME_CHARS)
        values = f'value ("," value){{0,{MAX_VALUES - 1}}}'
        parts.append(f'(("!" {name} ("," {values})? | ">" {values}) ";"){{0,{MAX_VALUES}}}')
    shown = _shown_strings(instruction, previous)
    # A small model runs on inside a string ("run;}S. The above..."): the characters that
    # end a statement or a block are out of its strings unless a string it was shown has one.
    stops = "".join(c for c in "\n;{}" if not any(c in text for text in shown))
    longest = max((len(text) for text in shown), default=0)
    # a reference can only be to a name the block may hold
    names = sorted({*previous.variables, *touched})
    references = (
        [f'variable ::= "$" ({" | ".join(gbnf_literal(n) for n in names)})'] if names else []
    )
    kinds = "string | number | variable" if names else "string | number"
    return "\n".join(
        [
            f'root ::= "S{{" {" ".join(parts)} "}}S"',
            f'value ::= " " ({kinds})',
            *references,
            f"number ::= {regex_to_gbnf(syntax._NUMBER.pattern, max_repeat=MAX_DIGITS)}",
            f'string ::= "\\"" {_not_in(stops)}{{0,{max(MAX_STRING_CHARS, longest)}}} "\\""',
        ]
    )


def _not_in(stops: str) -> str:
    escaped = stops.replace("\n", "\\n")
    return f'[^"{escaped}]'


def _shown_strings(instruction: Instruction, previous: StateBlock) -> list[str]:
    """The text of every string literal in the prompt's state and instruction."""
    found = [v.text for v in previous.variables.values() if isinstance(v, Str)]
    for directive in _all(instruction.directives):
        values: tuple[Value, ...] = ()
        if isinstance(directive, Set | Update):
            values = (directive.value,)
        elif isinstance(directive, Signal):
            command = directive.command
            values = command.params if isinstance(command, Action) else command.values
        elif isinstance(directive, If):
            values = (directive.condition.left, directive.condition.right)
        elif isinstance(directive, Opaque) and directive.body:
            found.append(directive.body)
        found += [v.text for v in values if isinstance(v, Str)]
    for statement in previous.statements:
        if isinstance(statement, Action | Log):
            params = statement.params if isinstance(statement, Action) else statement.values
            found += [v.text for v in params if isinstance(v, Str)]
    return found


def _all(directives: tuple[Directive, ...]) -> list[Directive]:
    """Every directive, an `@if`'s branches' too."""
    found: list[Directive] = []
    for directive in directives:
        found.append(directive)
        if isinstance(directive, If):
            found += _all(directive.then + directive.otherwise)
    return found

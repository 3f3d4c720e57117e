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
* references only to names the block may hold (a variable's own value never to itself);
  strings without the characters that end a statement or a block, unless a string the
  model was shown has one;
* before the block, one decision line per `@if` with commands (`if $p>34 ($p is 31;
  31>34 is false)`): the model writes `true` or `false` and the block then holds that
  branch's commands. The provider takes the lines off (`without_decisions`).

Every value (kept, set, updated, fetched, command parameters), whether a deleted variable
is left out, and each `@if`'s outcome (so which branch ran) are the model's. The verifier
then checks the reply as it checks any other.
"""

from __future__ import annotations

from collections.abc import Sequence

from plsp import syntax
from plsp.engine import Expectation, compare, expect
from plsp.gbnf import MAX_DIGITS, MAX_NAME_CHARS, MAX_VALUES, gbnf_literal, regex_to_gbnf
from plsp.instr import (
    Condition,
    Delete,
    Directive,
    Fetch,
    If,
    Instruction,
    Opaque,
    Set,
    Signal,
    Update,
)
from plsp.syntax import Action, Assign, Log, Num, Ref, StateBlock, Str, Value
from plsp.value_kinds import ANY_KIND, Kinds, ValueKinds

__all__ = [
    "GUIDED_SYSTEM",
    "decisions",
    "effective",
    "guided_grammar",
    "guided_prompt",
    "without_decisions",
]

MAX_STRING_CHARS = 40

GUIDED_SYSTEM = """\
You apply changes to a state. You get the old state S{...}S, then the changes, one a line. \
Write the new state S{...}S: the old state's variables as they are, then each changed \
variable with its NEW value (from set, never the old value); a variable removed by del is \
left out; then the commands sig asks for. Before the new state, write one line per "if": \
the comparison and whether it is true or false; then write the commands of the branch that runs.
Examples:
S{$u: "op";$l:70;}S
set $t:82
del $x
sig !wait,1000
Answer: S{$u: "op";$l:70;$t:82;!wait,1000;}S
S{$b:3;}S
set $a: "cold"
sig > "low", $b
if $b>1 ($b is 3; 3>1 is true) then sig !page, $b, "hi" else sig !wait,200
Answer: if $b>1 ($b is 3; 3>1 is true)
S{$b:3;$a: "cold";> "low", $b;!page, $b, "hi";}S"""


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
    """The names the directives write or remove, in the order the prompt's lines show them."""
    shown = tuple(
        d for i, d in enumerate(instruction.directives) if not _overwritten(instruction, i)
    )
    return list(dict.fromkeys(_name(d) for d in _targets(shown)))


def _overwritten(instruction: Instruction, index: int) -> bool:
    """Whether the directive at `index` is a `set` that a later directive outside an `@if`
    writes or removes before anything reads the name: it leaves no trace in the next
    block, so the prompt leaves its line out. Shown, it was copied by the 135M model
    (`$f:65.6` for `@set:$f=65.6;@upd:$z=40;@set:$f=7`; `""` after `@upd:$y=$y;@upd:$y="west"`)."""
    directive = instruction.directives[index]
    if not isinstance(directive, Set | Update):
        return False
    for later in instruction.directives[index + 1 :]:
        reads = _reads(later)
        if reads is None or directive.name in reads:
            return False
        if isinstance(later, Set | Update | Delete | Fetch) and _name(later) == directive.name:
            return True
    return False


def _own_values(directive: Directive) -> tuple[Value, ...]:
    """The values written in a directive itself: a set's or update's value, a signal's
    parameters, an `@if`'s two operands (not its branches'); none for the others."""
    if isinstance(directive, Set | Update):
        return (directive.value,)
    if isinstance(directive, Signal):
        command = directive.command
        return command.params if isinstance(command, Action) else command.values
    if isinstance(directive, If):
        return (directive.condition.left, directive.condition.right)
    return ()


def _reads(directive: Directive) -> set[str] | None:
    """The names a directive's values read; None for an unknown directive (any)."""
    if isinstance(directive, Opaque):
        return None
    names = {v.name for v in _own_values(directive) if isinstance(v, Ref)}
    if isinstance(directive, If):
        branches = [_reads(d) for d in directive.then + directive.otherwise]
        if any(b is None for b in branches):
            return None
        return names.union(*(b or set() for b in branches))
    return names


def _literal(value: Value, known: Expectation) -> Num | Str | None:
    """The literal `value` holds at this point of the instruction, if the runtime knows it."""
    resolved = known.value_of(value)
    return resolved if isinstance(resolved, Num | Str) else None


def _value_note(value: Value, known: Expectation) -> str:
    """What a reference holds at this point of the instruction, for the model to copy."""
    resolved = _literal(value, known)
    if isinstance(value, Ref) and resolved is not None:
        return f"${value.name} is {resolved.dumps()}"
    return ""


def _condition_facts(condition: Condition, known: Expectation) -> tuple[list[str], bool | None]:
    """The references' values and, where the runtime can decide it, the comparison's
    outcome: without it the 135M model took the wrong branch half the time."""
    notes = [_value_note(side, known) for side in (condition.left, condition.right)]
    left, right = _literal(condition.left, known), _literal(condition.right, known)
    outcome = None if left is None or right is None else compare(condition, left, right)
    if left is not None and right is not None and outcome is not None:
        notes.append(f"{left.dumps()}{condition.op}{right.dumps()} is")
    return [n for n in notes if n], outcome


def _condition_note(condition: Condition, known: Expectation) -> str:
    """The facts as the prompt states them (`($e is 59; 59>51 is true)`). The grammar still
    offers both branches; which one the reply holds is the model's."""
    notes, outcome = _condition_facts(condition, known)
    if outcome is not None:
        notes[-1] += f" {str(outcome).lower()}"
    return f" ({'; '.join(notes)})" if notes else ""


def _decision_head(condition: Condition, known: Expectation) -> tuple[str, str]:
    """The text around the outcome word of a reply's decision line: the prompt's own
    words up to `is`, so the model's `true`/`false` comes where it read one."""
    notes, outcome = _condition_facts(condition, known)
    if outcome is None:
        return f"if {condition.dumps()} is ", ""
    return f"if {condition.dumps()} ({'; '.join(notes)} ", ")"


def _spaced(statement: Assign | Action | Log) -> str:
    """A statement with a space before each string or reference (none before a number):
    the tokens the model writes after the grammar's fixed `$x:` or `,` are then the
    prompt's (` "` and ` $` are single tokens, `:"` another). A space before numbers too
    made the lone ` ` token the model's first choice in every slot; where a string was
    due it was then left to close an empty `""`."""
    if isinstance(statement, Assign):
        return f"${statement.name}:{_spaced_value(statement.value)}"
    if isinstance(statement, Action):
        return f"!{statement.name}" + "".join(f",{_spaced_value(p)}" for p in statement.params)
    return ">" + ",".join(_spaced_value(v) for v in statement.values)


def _spaced_value(value: Value) -> str:
    return value.dumps() if isinstance(value, Num) else f" {value.dumps()}"


def _block(statements: Sequence[Assign | Action | Log]) -> str:
    return "S{" + "".join(_spaced(s) + ";" for s in statements) + "}S"


def _line(directive: Directive, known: Expectation, replaced: bool = False) -> str:
    if isinstance(directive, Set | Update):
        assignment = _spaced(Assign(directive.name, directive.value))
        notes = [_value_note(directive.value, known), "replaced below" if replaced else ""]
        note = "; ".join(n for n in notes if n)
        return f"set {assignment}" + (f" ({note})" if note else "")
    if isinstance(directive, Delete):
        return f"del ${directive.name}"
    if isinstance(directive, Fetch):
        return f"fetch {directive.source} into ${directive.dest}"
    if isinstance(directive, Signal):
        return f"sig {_spaced(directive.command)}"
    if isinstance(directive, If):
        text = f"if {directive.condition.dumps()}{_condition_note(directive.condition, known)}"
        text += " then " + " and ".join(_line(d, known) for d in directive.then)
        if directive.otherwise:
            text += " else " + " and ".join(_line(d, known) for d in directive.otherwise)
        return text
    return directive.dumps()  # an unknown directive, as written


def effective(instruction: Instruction, previous: StateBlock) -> Instruction:
    """The instruction without `@upd:$x=$x` (or `@set`) of a variable the previous block
    holds and nothing wrote before: it changes nothing, so `$x` stays with the untouched
    variables. Shown as `set $x: $x`, the 135M model wrote `$x: $y` (seed 16 and 17)."""
    kept: list[Directive] = []
    for directive in instruction.directives:
        no_op = (
            isinstance(directive, Set | Update)
            and directive.value == Ref(directive.name)
            and directive.name in previous.variables
            and all(_name(d) != directive.name for d in _targets(tuple(kept)))
        )
        if not no_op:
            kept.append(directive)
    return Instruction(tuple(kept))


def guided_prompt(instruction: Instruction, previous: StateBlock) -> str:
    """The untouched variables as a block, then one line per directive (an overwritten
    `set` left out), each with what the references it reads hold at that point and
    whether a later line replaces it."""
    instruction = effective(instruction, previous)
    touched = set(_touched(instruction))
    kept = [s for s in previous.statements if isinstance(s, Assign) and s.name not in touched]
    directives = instruction.directives
    lines = [
        _line(d, expect(previous, Instruction(directives[:i])), _replaced(directives, i))
        for i, d in enumerate(directives)
        if not _overwritten(instruction, i)
    ]
    return "\n".join([_block(kept), *lines])


def _replaced(directives: tuple[Directive, ...], index: int) -> bool:
    """Whether a later directive outside an `@if` writes or removes the name this one
    sets: the 135M model copied the first of two `@set`s of one name."""
    directive = directives[index]
    if not isinstance(directive, Set | Update):
        return False
    later = directives[index + 1 :]
    return any(
        isinstance(d, Set | Update | Delete | Fetch) and _name(d) == directive.name for d in later
    )


class _ValueRules:
    """One GBNF rule per combination of kinds in use (`value-number-string`...): a value
    of the kinds the instruction's text allows there, a space before it unless it is a
    number (see `_spaced`). A variable's own value never refers to itself (`$r: $r` is
    always circular, and the 135M model wrote it for `@upd:$r=$r`), so its references
    leave its own name out."""

    def __init__(self, names: Sequence[str]) -> None:
        self._names = list(names)  # the names the block may hold: what a reference may name
        self.used: dict[str, str] = {}

    def __call__(self, kinds: Kinds, owner: str | None = None) -> str:
        targets = [n for n in self._names if n != owner]
        usable: list[str] = sorted(k for k in kinds if targets or k != "variable")
        usable = usable or ["number", "string"]
        name = "value-" + "-".join(usable)
        if "variable" in usable and owner is not None and owner in self._names:
            # rule names are `[a-z0-9-]`: the owner is named by its place among the names
            reference = f"variable-but-{self._names.index(owner)}"
            self.used[reference] = f'"$" ({" | ".join(gbnf_literal(n) for n in targets)})'
            name += f"-but-{self._names.index(owner)}"
            usable = [reference if k == "variable" else k for k in usable]
        spaced = [k for k in usable if k != "number"]
        alternatives = ["number"] if "number" in usable else []
        alternatives += [f'" " ({" | ".join(spaced)})'] if spaced else []
        self.used[name] = " | ".join(alternatives)
        return name

    def definitions(self) -> list[str]:
        references = [f'variable ::= "$" ({" | ".join(map(gbnf_literal, self._names))})']
        return [f"{name} ::= {body}" for name, body in self.used.items()] + (
            references if self._names else []
        )


def _command(command: Action | Log, kinds: ValueKinds, rule: _ValueRules) -> str:
    if isinstance(command, Action):
        head, values = gbnf_literal(f"!{command.name}"), command.params
        return head + "".join(f' "," {rule(kinds.of_value(v))}' for v in values)
    slots = [rule(kinds.of_value(v)) for v in command.values]
    return '">" ' + ' "," '.join(slots)


def _commands(
    directives: tuple[Directive, ...],
    kinds: ValueKinds,
    rule: _ValueRules,
    chosen: dict[int, bool] | None = None,
) -> list[str]:
    """One part per directive that asks for commands: a `@sig`'s command, or an `@if`'s
    choice between its branches' commands (a branch without any: nothing); an `@if` whose
    outcome the reply's decision line gave (`chosen`, by place) gives that branch's."""
    parts: list[str] = []
    for index, directive in enumerate(directives):
        if isinstance(directive, Signal):
            parts.append(f'{_command(directive.command, kinds, rule)} ";"')
        elif isinstance(directive, If):
            branches = [
                " ".join(_commands(branch, kinds, rule)) or '""'
                for branch in (directive.then, directive.otherwise)
            ]
            if chosen is not None and index in chosen:
                parts.append(branches[0] if chosen[index] else branches[1])
            elif branches != ['""', '""']:
                parts.append(f"({' | '.join(branches)})")
    return parts


MAX_DECISIONS = 3
"""Decision lines a reply starts with at most: the grammar holds one block per combination
of outcomes (2**3 = 8); further `@if`s are a choice inside the block, as before."""


def decisions(instruction: Instruction, previous: StateBlock) -> list[tuple[int, str, str]]:
    """The reply's decision lines: for each `@if` of the instruction (not in a branch)
    with commands in a branch, its place and the text before and after the model's
    `true`/`false`. The 135M model, shown `31>34 is false`, still wrote the other branch's
    command three times in 20 cycles; writing the word first (a copy of what it read) and
    the branch it selects is one decision in one token."""
    found: list[tuple[int, str, str]] = []
    instruction = effective(instruction, previous)  # the places are the effective one's
    directives = instruction.directives
    for index, directive in enumerate(directives):
        if (
            isinstance(directive, If)
            and len(found) < MAX_DECISIONS
            and _commands((directive,), ValueKinds(instruction, previous), _ValueRules([]))
        ):
            known = expect(previous, Instruction(directives[:index]))
            found.append((index, *_decision_head(directive.condition, known)))
    return found


def without_decisions(reply: str, instruction: Instruction, previous: StateBlock) -> str:
    """The block of a guided reply: its decision lines taken off (a reply without them,
    e.g. a hosted model's, is returned as it is). The lines are the request's working,
    not part of the protocol's reply."""
    rest = reply
    for _index, head, tail in decisions(instruction, previous):
        for word in ("true", "false"):
            line = f"{head}{word}{tail}\n"
            if rest.startswith(line):
                rest = rest[len(line) :]
                break
        else:
            return reply
    return rest


def guided_grammar(instruction: Instruction, previous: StateBlock) -> str:
    """GBNF of the next block's shape: fixed names, command heads and value kinds (string,
    number, reference, as the text writes them), free values."""
    instruction = effective(instruction, previous)
    touched = _touched(instruction)
    branches = [d for d in instruction.directives if isinstance(d, If)]
    conditional = {_name(t) for d in branches for t in _targets(d.then + d.otherwise)}
    deleted = {d.name for d in _targets(instruction.directives) if isinstance(d, Delete)}
    # a reference can only be to a name the block may hold
    names = sorted({*previous.variables, *touched})
    kinds, rule = ValueKinds(instruction, previous), _ValueRules(names)

    def assignment(name: str) -> str:
        return f'{gbnf_literal(f"${name}:")} {rule(kinds.of_name(name), name)} ";"'

    parts = [assignment(name) for name in previous.variables if name not in touched]
    for name in touched:
        may_be_absent = name in deleted or (name in conditional and name not in previous.variables)
        parts.append(f"({assignment(name)})?" if may_be_absent else assignment(name))
    opaque = []
    if any(isinstance(d, Opaque) for d in instruction.directives):  # it may ask for any
        name = regex_to_gbnf(syntax._ACTION_NAME.pattern, max_repeat=MAX_NAME_CHARS)
        value = rule(ANY_KIND)
        values = f'{value} ("," {value}){{0,{MAX_VALUES - 1}}}'
        opaque.append(f'(("!" {name} ("," {values})? | ">" {values}) ";"){{0,{MAX_VALUES}}}')
    lines = decisions(instruction, previous)

    def reply(chosen: dict[int, bool]) -> str:
        """Decision lines from the `len(chosen)`-th on, then the block they select."""
        if len(chosen) == len(lines):
            commands = _commands(instruction.directives, kinds, rule, chosen)
            return f'"S{{" {" ".join(parts + commands + opaque)} "}}S"'
        index, head, tail = lines[len(chosen)]
        outcomes = [
            f"{gbnf_literal(word + tail + chr(10))} {reply({**chosen, index: outcome})}"
            for word, outcome in (("true", True), ("false", False))
        ]
        return f"{gbnf_literal(head)} ({' | '.join(outcomes)})"

    shown = _shown_strings(instruction, previous)
    # A small model runs on inside a string ("run;}S. The above..."): the characters that
    # end a statement or a block are out of its strings unless a string it was shown has one.
    stops = "".join(c for c in "\n;{}" if not any(c in text for text in shown))
    longest = max((len(text) for text in shown), default=0)
    return "\n".join(
        [
            f"root ::= {reply({})}",
            *rule.definitions(),
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
        if isinstance(directive, Opaque) and directive.body:
            found.append(directive.body)
        found += [v.text for v in _own_values(directive) if isinstance(v, Str)]
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

"""Control flow: parallel, loops, pipelines, try/catch/throw, choice and if."""

from __future__ import annotations

from openprose import nodes as n
from openprose.checker.agents import quoted_number_fix
from openprose.checker.bindings import bind_scoped, declare
from openprose.checker.imports import call_result
from openprose.checker.state import Checker, Handler, head, span_of
from openprose.diagnostics import Edit, Fix
from openprose.suggest import closest

JOIN_STRATEGIES = ("all", "first", "any")
FAIL_POLICIES = ("fail-fast", "continue", "ignore")
IMPLICIT_ITEM_OPS = frozenset({"map", "filter", "pmap"})
# A discretion condition shorter than this (or a single word) is too vague to judge reliably.
SHORT_CONDITION_CHARS = 8
SHORT_CONDITION_WORDS = 2


# --- discretion ------------------------------------------------------------------------------


def check_condition(ck: Checker, condition: n.Discretion, what: str) -> None:
    text = condition.text.strip()
    if not text:
        ck.emit("E161", condition.span, f"{what} cannot be empty")
    elif len(text) < SHORT_CONDITION_CHARS or len(text.split()) < SHORT_CONDITION_WORDS:
        ck.emit("W146", condition.span, f"Discretion condition '{text}' may be ambiguous")


# --- parallel --------------------------------------------------------------------------------


def check_parallel_modifiers(
    ck: Checker, modifiers: tuple[n.Modifier, ...], branches: int | None
) -> None:
    strategy: str | None = None
    strategy_valid = True
    count: n.Modifier | None = None
    seen: set[str] = set()
    for modifier in modifiers:
        value = modifier.value
        key = "strategy" if modifier.name is None else modifier.name.id
        if key in seen:
            ck.emit("E168", span_of(modifier), f"Modifier '{key}' already given")
            continue
        seen.add(key)
        if key == "strategy":
            if isinstance(value, n.StringLit) and value.value in JOIN_STRATEGIES:
                strategy = value.value
            else:
                strategy_valid = False
                ck.emit(
                    "E152",
                    span_of(value),
                    'Invalid join strategy: must be "all", "first", or "any"'
                    + _suggest(value, JOIN_STRATEGIES),
                    fix=_quote_fix(value, JOIN_STRATEGIES),
                )
        elif key == "on-fail":
            if not (isinstance(value, n.StringLit) and value.value in FAIL_POLICIES):
                ck.emit(
                    "E153",
                    span_of(value),
                    'Invalid on-fail policy: must be "fail-fast", "continue", or "ignore"'
                    + _suggest(value, FAIL_POLICIES),
                    fix=_quote_fix(value, FAIL_POLICIES),
                )
        elif key == "count":
            count = modifier
        else:
            assert modifier.name is not None
            guess = closest(key, ("on-fail", "count"))
            ck.emit(
                "E168",
                modifier.name.span,
                f"Unknown modifier '{key}'"
                + (
                    f" (did you mean `{guess}`?)"
                    if guess
                    else " (expected a join strategy, on-fail: or count:)"
                ),
                help=f"write `{guess}:`" if guess else None,
            )
    if count is None:
        return
    assert count.name is not None
    if strategy_valid and strategy != "any":
        ck.emit("E154", count.name.span, 'Count is only valid with "any" strategy')
    value = count.value
    if not isinstance(value, n.NumberLit) or not isinstance(value.value, int) or value.value < 1:
        ck.emit("E155", span_of(value), "Count must be at least 1 (a whole number)")
    elif branches is not None and value.value > branches:
        ck.emit(
            "W143",
            value.span,
            f"Count {value.value} exceeds number of parallel branches ({branches})",
        )


def _quote_fix(value: n.Expr, known: tuple[str, ...]) -> Fix | None:
    """`parallel (first):`: the grammar's strategies and policies are strings; an unquoted
    valid one gets its quotes."""
    if isinstance(value, n.Name) and value.id in known:
        return Fix(f'quote it: "{value.id}"', (Edit(value.span, f'"{value.id}"'),))
    return None


def _suggest(value: n.Expr, known: tuple[str, ...]) -> str:
    word = value.id if isinstance(value, n.Name) else getattr(value, "value", None)
    if not isinstance(word, str) or word in known:
        return " (quote it)" if isinstance(value, n.Name) and word in known else ""
    guess = closest(word, known)
    return f" (did you mean `{guess}`?)" if guess else ""


def _parallel(ck: Checker, node: n.Parallel) -> None:
    check_parallel_modifiers(ck, node.modifiers, len(node.branches))
    named = [(branch, branch.name) for branch in node.branches if branch.name is not None]
    outer = ck.joining
    ck.joining = outer | {name.id for _, name in named}
    ck.depth += 1
    racing = ck.racing
    bound: set[str] = set()
    for branch in node.branches:
        # a `let` in an earlier branch is bound concurrently with this one
        ck.racing = racing | bound
        ck.visit(branch.body)
        body = branch.body
        if isinstance(body, n.Binding | n.Output):
            target = body.target if isinstance(body, n.Binding) else body.name
            bound.update(
                [target.id] if isinstance(target, n.Name) else [t.id for t in target.names]
            )
    ck.racing = racing
    ck.depth -= 1
    ck.joining = outer
    # Branches run concurrently: their results exist only once the block has joined.
    for branch, name in named:
        program, contract = call_result(ck, branch.body)
        declare(ck, name, "branch", program=program, contract=contract)


# --- loops -----------------------------------------------------------------------------------


def _repeat(ck: Checker, node: n.Repeat) -> None:
    count = node.count
    if isinstance(count, n.Name):
        _named_count(ck, count, "E157", "Repeat count", "repeat 3:")
    elif not isinstance(count, n.NumberLit) or not isinstance(count.value, int):
        ck.emit(
            "E157", span_of(count), "Repeat count must be an integer", fix=quoted_number_fix(count)
        )
    elif count.value <= 0:
        ck.emit("E156", count.span, "Repeat count must be positive")
    ck.scope.open()
    if node.index is not None:
        bind_scoped(ck, node.index.id, node.index.span, "loop", "W144")
    if isinstance(count, n.NumberLit) and isinstance(count.value, int) and count.value > 0:
        ck.body(node.body)
    else:
        with ck.conditional("repeat body", node.span):
            ck.body(node.body)
    ck.scope.close()


def _named_count(ck: Checker, name: n.Name, code: str, what: str, form: str) -> None:
    """`repeat MAX:` / `(max: LIMIT)`: the grammar's count is a NUMBER written in the program
    (fixed before the run, so a reader sees how often the body runs). A `const` bound to a
    whole number is that number: the safe fix writes it in. A `let` bound to one may be
    reassigned before the loop, so its fix is unsafe; any other name is a value only the run
    knows, and the help names the forms that take one."""
    bound = _bound_number(ck, name.id)
    if bound is not None:
        kind, number, line = bound
        ck.emit(
            code,
            name.span,
            f"{what} must be an integer written in the program: '{name.id}' is a variable "
            f"({kind} {name.id} = {number}, line {line})",
            help=f"write the number: `{number}`",
            fix=Fix(f"write `{number}`", (Edit(name.span, str(number)),), safe=kind == "const"),
        )
        return
    ck.emit(
        code,
        name.span,
        f"{what} must be an integer written in the program, not the variable '{name.id}'",
        help=f"write a whole number (`{form}`); for a count known only when the program "
        "runs, loop over a list (`for x in items:`) or until a condition "
        "(`loop until **…** (max: N):`)",
    )


def _bound_number(ck: Checker, ident: str) -> tuple[str, int, int] | None:
    """(kind, number, line) when ``ident`` is a visible `let`/`const` declared at the
    program's top level with a positive whole number as its value."""
    var = ck.scope.visible.get(ident)
    if var is None or var.kind not in ("let", "const") or ck.program is None:
        return None
    for stmt in ck.program.body:
        if (
            isinstance(stmt, n.Binding)
            and isinstance(stmt.target, n.Name)
            and stmt.target.id == ident
            and stmt.target.span == var.span
            and isinstance(stmt.value, n.NumberLit)
            and isinstance(stmt.value.value, int)
            and not isinstance(stmt.value.value, bool)
            and stmt.value.value > 0
        ):
            return stmt.kind, stmt.value.value, stmt.target.span.line
    return None


def _collection(ck: Checker, collection: n.Expr) -> None:
    if isinstance(collection, n.Name):
        ck.resolve(
            collection.id,
            collection.span,
            "E158",
            f"Undefined collection variable '{collection.id}'",
        )
    else:
        ck.visit(collection)


def _for_each(ck: Checker, node: n.ForEach) -> None:
    _collection(ck, node.collection)
    if node.modifiers:
        check_parallel_modifiers(ck, node.modifiers, None)
    ck.scope.open()
    bind_scoped(ck, node.item.id, node.item.span, "loop", "W144")
    if node.index is not None:
        bind_scoped(ck, node.index.id, node.index.span, "loop", "W144")
    with ck.conditional("for body", node.span):  # the collection may be empty
        ck.body(node.body)
    ck.scope.close()


def _loop(ck: Checker, node: n.Loop) -> None:
    if node.condition is not None:
        check_condition(ck, node.condition, "Discretion condition")
    has_max = False
    for modifier in node.modifiers:
        name = modifier.name
        if name is None or name.id != "max":
            where = span_of(modifier) if name is None else name.span
            word = name.id if name is not None else ""
            guess = closest(word, ("max",)) if word else None
            ck.emit(
                "E168",
                where,
                "Unknown loop modifier"
                + (f" '{word}' (did you mean `max`?)" if guess else " (expected max: N)"),
            )
            continue
        if has_max:
            ck.emit("E168", name.span, "Modifier 'max' already given")
            continue
        has_max = True
        value = modifier.value
        if isinstance(value, n.Name):
            _named_count(ck, value, "E160", "Max iterations", "(max: 10)")
        elif not isinstance(value, n.NumberLit) or not isinstance(value.value, int):
            ck.emit(
                "E160",
                span_of(value),
                "Max iterations must be an integer",
                fix=quoted_number_fix(value),
            )
        elif value.value <= 0:
            ck.emit("E159", value.span, "Max iterations must be positive")
    if node.kind == "loop" and not has_max:
        ck.emit("W145", head(node.span, 4), "Unbounded loop without max iterations: add (max: N)")
    ck.scope.open()
    if node.index is not None:
        bind_scoped(ck, node.index.id, node.index.span, "loop", "W144")
    if node.condition is None:  # a bare loop runs its body at least once
        ck.body(node.body)
    else:
        with ck.conditional(f"loop {node.kind} body", node.span):
            ck.body(node.body)
    ck.scope.close()


# --- pipelines -------------------------------------------------------------------------------


def _pipeline(ck: Checker, node: n.Pipeline) -> None:
    _collection(ck, node.source)
    for op in node.ops:
        ck.scope.open()
        if op.op in IMPLICIT_ITEM_OPS:
            bind_scoped(ck, "item", op.span, "pipeline", "W147")
        elif op.accumulator is None and op.item is None:
            # `reduce:` without its names is E121 already; a body reading `item` (as in
            # map) is that same slip, not a second problem
            bind_scoped(ck, "item", op.span, "pipeline", "W147")
        else:
            for name in (op.accumulator, op.item):
                if name is not None:
                    bind_scoped(ck, name.id, name.span, "pipeline", "W147")
        ck.body(op.body)
        ck.scope.close()


# --- errors ----------------------------------------------------------------------------------


def _try(ck: Checker, node: n.Try) -> None:
    if node.catch is None and node.finally_body is None:
        ck.emit("E162", head(node.span, 3), 'Try block must have at least "catch:" or "finally:"')
    with ck.conditional("try body", node.span):  # an error may end it before the binding
        ck.body(node.body)
    catch = node.catch
    if catch is not None:
        ck.scope.open()
        if catch.error is not None:
            bind_scoped(ck, catch.error.id, catch.error.span, "error", "W148")
        with ck.conditional("catch body", catch.span):
            ck.body(catch.body)
        ck.scope.close()
    if node.finally_body is not None:
        ck.body(node.finally_body)


def _throw(ck: Checker, node: n.Throw) -> None:
    message = node.message
    if message is not None:
        if not message.value.strip():
            ck.emit("W149", message.span, "Throw message is empty")
        ck.visit(message)


# --- choice and if ---------------------------------------------------------------------------


def _choice(ck: Checker, node: n.Choice) -> None:
    check_condition(ck, node.criteria, "Choice criteria")
    if not node.options:
        ck.emit("E166", head(node.span, 6), "Choice block must have at least one option")
    labels: dict[str, n.ChoiceOption] = {}
    for option in node.options:
        label = option.label.value
        earlier = labels.get(label)
        if earlier is not None:
            ck.emit(
                "W152",
                option.label.span,
                f'Duplicate option label "{label}" (line {earlier.span.line})',
            )
        else:
            labels[label] = option
        if not option.body:
            ck.emit("W153", head(option.span, 6), "Option has empty body")
        with ck.conditional("option", option.span):
            ck.body(option.body)


def _if(ck: Checker, node: n.If) -> None:
    for index, branch in enumerate(node.branches):
        check_condition(ck, branch.condition, "If/elif condition")
        if not branch.body:
            ck.emit("W154", head(branch.span, 2 if index == 0 else 4), "Condition has empty body")
        with ck.conditional("if branch" if index == 0 else "elif branch", branch.span):
            ck.body(branch.body)
    if node.else_body is not None:
        if not node.else_body and node.else_span is not None:
            ck.emit("W154", head(node.else_span, 4), "Else has empty body")
        with ck.conditional("else branch", node.else_span or node.span):
            ck.body(node.else_body)


HANDLERS: dict[type, Handler] = {
    n.Parallel: _parallel,
    n.Repeat: _repeat,
    n.ForEach: _for_each,
    n.Loop: _loop,
    n.Pipeline: _pipeline,
    n.Try: _try,
    n.Throw: _throw,
    n.Choice: _choice,
    n.If: _if,
}

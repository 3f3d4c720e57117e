"""Property-based round trips for the printer, formatter and compiler.

* Random ASTs (built directly, covering every statement kind) print to text that parses back
  to the same tree, and compile to text that parses back to the canonicalized tree.
* Example programs with random comments and blank lines sprinkled in format faithfully.
* Mutated programs (bytes deleted, inserted, duplicated) never raise from parse, check,
  format or compile, and whenever they parse cleanly the round trips hold.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openprose import nodes as n
from openprose.compiler import canonicalize, compile_program
from openprose.formatter import format_source
from openprose.parser import parse_text
from openprose.printer import print_program
from openprose.scanner import KEYWORDS
from openprose.source import Span

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "examples").glob("*.prose"))]
SPAN = Span(0, 0, 1, 1, 1, 1)
PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- AST strategies --------------------------------------------------------------------------

identifiers = st.from_regex(r"\A[a-z_][a-z0-9_]{0,6}(-[a-z0-9]{1,3})?\Z").filter(
    lambda s: s not in KEYWORDS
)
names = identifiers.map(lambda s: n.Name(span=SPAN, id=s))
# Text that exercises every escape: quotes, backslashes, braces, tabs, '#', '**'.
text_chars = st.sampled_from(list('ab Z#*"\\{}.\t') + ["é", "→"])
texts = st.text(text_chars, max_size=12)


def _join_parts(raw: list[Any]) -> tuple[Any, ...]:
    """Merge adjacent text and drop empty text, as the scanner does."""
    parts: list[Any] = []
    for part in raw:
        if isinstance(part, str):
            if not part:
                continue
            if parts and isinstance(parts[-1], str):
                parts[-1] += part
                continue
        parts.append(part)
    return tuple(parts)


def _string_from(raw: list[Any], triple: bool) -> n.StringLit:
    parts = _join_parts(raw)
    value = "".join(
        p if isinstance(p, str) else "{" + ".".join((p.name, *p.path)) + "}" for p in parts
    )
    return n.StringLit(span=SPAN, value=value, parts=parts, triple=triple)


interpolations = st.builds(
    lambda name, path: n.Interpolation(span=SPAN, name=name, path=tuple(path)),
    identifiers,
    st.lists(identifiers, max_size=2),
)
single_strings = st.lists(st.one_of(texts, interpolations), max_size=4).map(
    lambda raw: _string_from(raw, triple=False)
)
triple_strings = st.lists(
    st.one_of(texts, st.just("\n"), st.just('""'), interpolations), max_size=6
).map(lambda raw: _string_from(raw, triple=True))
strings = st.one_of(single_strings, single_strings, triple_strings)
numbers = st.integers(min_value=0, max_value=10**6).map(
    lambda v: n.NumberLit(span=SPAN, value=v, raw=str(v))
)
conditions = st.one_of(
    st.text(st.sampled_from(list("abc xyz,.")), min_size=1, max_size=15).map(
        lambda t: n.Discretion(span=SPAN, text=t)
    ),
    st.text(st.sampled_from(list("abc \n")), min_size=1, max_size=20).map(
        lambda t: n.Discretion(span=SPAN, text=t, triple=True)
    ),
)


def arrays(elements: st.SearchStrategy[Any]) -> st.SearchStrategy[n.ArrayLit]:
    return st.lists(elements, max_size=3).map(lambda e: n.ArrayLit(span=SPAN, elements=tuple(e)))


object_contexts = st.lists(names, max_size=3).map(
    lambda ns: n.ObjectContext(span=SPAN, names=tuple(ns))
)
attributes = st.builds(lambda v, a: n.Attribute(span=SPAN, value=v, attr=a), names, identifiers)
simple_values = st.one_of(names, strings, numbers, attributes, arrays(names), object_contexts)


def prop(name: str, value: st.SearchStrategy[Any]) -> st.SearchStrategy[n.Property]:
    return value.map(lambda v: n.Property(span=SPAN, name=n.Name(span=SPAN, id=name), value=v))


session_props = st.lists(
    st.one_of(
        prop(
            "model",
            st.sampled_from(["sonnet", "opus", "haiku"]).map(lambda m: n.Name(span=SPAN, id=m)),
        ),
        prop("prompt", strings),
        prop("context", st.one_of(names, arrays(names), object_contexts)),
        prop("retry", numbers),
        prop("backoff", names),
        prop("color", simple_values),
    ),
    max_size=4,
).map(tuple)
permission_rules = st.lists(
    st.one_of(prop("read", arrays(single_strings)), prop("bash", names)), min_size=1, max_size=3
).map(lambda rules: n.PermissionsBlock(span=SPAN, rules=tuple(rules)))
agent_props = (
    st.lists(
        st.one_of(
            session_props.map(lambda ps: ps[0] if ps else None),
            prop("permissions", permission_rules),
        ),
        min_size=1,
        max_size=4,
    )
    .map(lambda ps: tuple(p for p in ps if p is not None))
    .filter(bool)
)


@st.composite
def sessions(draw: st.DrawFn, with_block: bool = True) -> n.Session:
    form = draw(st.sampled_from(["prompt", "agent", "named", "resume"]))
    props = draw(session_props) if with_block else ()
    if form == "prompt":
        return n.Session(span=SPAN, prompt=draw(strings), properties=props)
    if form == "named":
        return n.Session(span=SPAN, name=draw(names), agent=draw(names), properties=props)
    if form == "resume":
        return n.Session(span=SPAN, kind="resume", agent=draw(names), properties=props)
    return n.Session(span=SPAN, agent=draw(names), properties=props)


def modifiers(names_: list[str]) -> st.SearchStrategy[tuple[n.Modifier, ...]]:
    keyword = st.builds(
        lambda k, v: n.Modifier(span=SPAN, name=n.Name(span=SPAN, id=k), value=v),
        st.sampled_from(names_),
        st.one_of(numbers, single_strings),
    )
    positional = single_strings.map(lambda v: n.Modifier(span=SPAN, name=None, value=v))
    return st.lists(st.one_of(keyword, positional), max_size=3).map(tuple)


def statements(depth: int) -> st.SearchStrategy[Any]:
    """Any statement, nesting blocks at most ``depth`` deep."""
    leaves = st.one_of(
        sessions(),
        st.builds(
            lambda p, a: n.Use(span=SPAN, path=p, alias=a), single_strings, st.none() | names
        ),
        st.builds(lambda nm, d: n.Input(span=SPAN, name=nm, description=d), names, strings),
        st.builds(lambda nm, ps: n.AgentDef(span=SPAN, name=nm, properties=ps), names, agent_props),
        st.builds(
            lambda nm, args, parens: n.DoCall(
                span=SPAN, name=nm, args=tuple(args), has_parens=parens or bool(args)
            ),
            names,
            st.lists(simple_values, max_size=2),
            st.booleans(),
        ),
        st.builds(
            lambda c, args: n.ProgramCall(span=SPAN, callee=c, args=tuple(args)),
            names,
            st.lists(
                st.builds(
                    lambda k, v: n.KeywordArg(span=SPAN, name=k, value=v), names, simple_values
                ),
                max_size=2,
            ),
        ),
        st.builds(lambda m: n.Throw(span=SPAN, message=m), st.none() | strings),
        st.builds(
            lambda steps, last: n.Arrow(span=SPAN, steps=(*steps, last)),
            st.lists(sessions(with_block=False), min_size=1, max_size=2),
            sessions(),
        ),
    )
    if depth == 0:
        return leaves
    inner = statements(depth - 1)
    body = st.lists(inner, min_size=1, max_size=3).map(tuple)
    # Empty bodies parse everywhere but in try/catch/finally (statement+).
    maybe_empty = st.lists(inner, min_size=0, max_size=2).map(tuple)
    index = st.none() | names
    values = st.one_of(simple_values, inner.filter(_is_expression))
    blocks = st.one_of(
        st.builds(lambda b: n.DoBlock(span=SPAN, body=b), maybe_empty),
        st.builds(
            lambda nm, ps, parens, b: n.BlockDef(
                span=SPAN, name=nm, params=tuple(ps), body=b, has_parens=parens or bool(ps)
            ),
            names,
            st.lists(names, max_size=2),
            st.booleans(),
            maybe_empty,
        ),
        st.builds(
            lambda mods, parens, branches: n.Parallel(
                span=SPAN, modifiers=mods, branches=tuple(branches), has_parens=parens or bool(mods)
            ),
            modifiers(["on-fail", "count"]),
            st.booleans(),
            st.lists(
                st.one_of(
                    st.builds(
                        lambda s: n.ParallelBranch(span=SPAN, name=None, body=s),
                        inner.filter(lambda s: not isinstance(s, n.Assign)),
                    ),
                    st.builds(
                        lambda nm, v: n.ParallelBranch(span=SPAN, name=nm, body=v), names, values
                    ),
                ),
                min_size=1,
                max_size=3,
            ),
        ),
        st.builds(
            lambda c, i, b: n.Repeat(span=SPAN, count=c, index=i, body=b),
            numbers,
            index,
            maybe_empty,
        ),
        st.builds(
            lambda it, i, coll, b, par, mods: n.ForEach(
                span=SPAN,
                item=it,
                index=i,
                collection=coll,
                body=b,
                parallel=par,
                modifiers=mods if par else (),
            ),
            names,
            index,
            st.one_of(names, arrays(single_strings)),
            maybe_empty,
            st.booleans(),
            modifiers(["on-fail"]),
        ),
        st.builds(
            _loop,
            st.sampled_from(["loop", "until", "while"]),
            conditions,
            modifiers(["max"]),
            st.booleans(),
            index,
            maybe_empty,
        ),
        st.builds(
            lambda src, ops: n.Pipeline(span=SPAN, source=src, ops=tuple(ops)),
            st.one_of(names, arrays(single_strings)),
            st.lists(
                st.one_of(
                    st.builds(
                        lambda op, b: n.PipeOp(span=SPAN, op=op, body=b),
                        st.sampled_from(["map", "filter", "pmap"]),
                        maybe_empty,
                    ),
                    st.builds(
                        lambda a, i, b: n.PipeOp(
                            span=SPAN, op="reduce", body=b, accumulator=a, item=i
                        ),
                        names,
                        names,
                        maybe_empty,
                    ),
                ),
                min_size=1,
                max_size=3,
            ),
        ),
        st.builds(_try, body, st.none() | names, st.none() | body, st.none() | body),
        st.builds(
            lambda c, opts: n.Choice(span=SPAN, criteria=c, options=tuple(opts)),
            conditions,
            st.lists(
                st.builds(
                    lambda lbl, b: n.ChoiceOption(span=SPAN, label=lbl, body=b),
                    single_strings,
                    maybe_empty,
                ),
                min_size=1,
                max_size=2,
            ),
        ),
        st.builds(
            lambda brs, els: n.If(span=SPAN, branches=tuple(brs), else_body=els),
            st.lists(
                st.builds(
                    lambda c, b: n.CondBranch(span=SPAN, condition=c, body=b),
                    conditions,
                    maybe_empty,
                ),
                min_size=1,
                max_size=2,
            ),
            st.none() | maybe_empty,
        ),
    )
    bindings = st.one_of(
        st.builds(
            lambda kind, target, v: n.Binding(span=SPAN, kind=kind, target=target, value=v),
            st.sampled_from(["let", "const"]),
            st.one_of(
                names,
                st.lists(names, min_size=1, max_size=2).map(
                    lambda ns: n.Destructure(span=SPAN, names=tuple(ns))
                ),
            ),
            values,
        ),
        st.builds(lambda t, v: n.Assign(span=SPAN, target=t, value=v), names, values),
        st.builds(lambda t, v: n.Output(span=SPAN, name=t, value=v), names, values),
    )
    return st.one_of(leaves, blocks, bindings)


def _is_expression(node: Any) -> bool:
    return isinstance(
        node,
        (
            n.Session,
            n.DoBlock,
            n.DoCall,
            n.Parallel,
            n.Repeat,
            n.ForEach,
            n.Loop,
            n.Pipeline,
            n.ProgramCall,
            n.Arrow,
        ),
    )


def _loop(
    kind: Literal["loop", "until", "while"],
    cond: n.Discretion,
    mods: tuple[n.Modifier, ...],
    parens: bool,
    index: n.Name | None,
    body: tuple[Any, ...],
) -> n.Loop:
    return n.Loop(
        span=SPAN,
        kind=kind,
        condition=None if kind == "loop" else cond,
        modifiers=mods,
        index=index,
        body=body,
        has_parens=parens or bool(mods),
    )


def _try(
    body: tuple[Any, ...],
    error: n.Name | None,
    catch: tuple[Any, ...] | None,
    final: tuple[Any, ...] | None,
) -> n.Try:
    if catch is None and final is None:
        catch = body
    clause = None if catch is None else n.CatchClause(span=SPAN, error=error, body=catch)
    return n.Try(span=SPAN, body=body, catch=clause, finally_body=final)


programs = st.lists(statements(2), max_size=4).map(lambda b: n.Program(span=SPAN, body=tuple(b)))


@PROPS
@given(programs)
def test_printed_ast_parses_back_to_itself(program: n.Program) -> None:
    text = print_program(program)
    result = parse_text(text)
    assert result.ok, (text, [d.message for d in result.diagnostics])
    assert result.program == program, text
    assert format_source(result) == text


@PROPS
@given(programs)
def test_compiled_ast_parses_back_to_its_canonical_form(program: n.Program) -> None:
    text = compile_program(program)
    result = parse_text(text)
    assert result.ok, (text, [d.message for d in result.diagnostics])
    assert result.program == canonicalize(program), text
    assert compile_program(result.program) == text


# --- text mutations --------------------------------------------------------------------------

comment_texts = st.text(st.sampled_from(list('ab #"{}*-')), max_size=8)


@st.composite
def commented_examples(draw: st.DrawFn) -> str:
    """An example with comment lines, trailing comments and blank lines added at random."""
    lines = draw(st.sampled_from(EXAMPLES)).splitlines()
    for _ in range(draw(st.integers(0, 6))):
        at = draw(st.integers(0, len(lines)))
        kind = draw(st.sampled_from(["own", "trailing", "blank"]))
        if kind == "own":
            lines.insert(at, " " * draw(st.integers(0, 8)) + "#" + draw(comment_texts))
        elif kind == "trailing" and at < len(lines) and lines[at].strip():
            lines[at] += "  #" + draw(comment_texts)
        else:
            lines.insert(at, "")
    return "\n".join(lines) + "\n"


@PROPS
@given(commented_examples())
def test_formatting_keeps_comments_and_the_ast(source: str) -> None:
    before = parse_text(source)
    if not before.ok:  # a comment appended inside a multi-line construct can break it
        return
    out = format_source(before)
    after = parse_text(out)
    assert after.ok, out
    assert after.program == before.program
    assert sorted(c.text.rstrip() for c in after.program.comments) == sorted(
        c.text.rstrip() for c in before.program.comments
    )
    assert format_source(after) == out


@st.composite
def mutated_examples(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(EXAMPLES))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["delete", "insert", "duplicate"]))
        if action == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 20)) :]
        elif action == "insert":
            text = (
                text[:at]
                + draw(st.text(st.sampled_from(list(' \n\t"*#{}():|->=,[]\\az\x00é')), max_size=6))
                + text[at:]
            )
        else:
            end = min(len(text), at + draw(st.integers(1, 40)))
            text = text[:at] + text[at:end] + text[at:]
    return text


@PROPS
@given(mutated_examples())
def test_mutated_programs_yield_only_diagnostics(source: str) -> None:
    from openprose.checker import check

    result = parse_text(source)
    check(result)
    formatted = format_source(result)
    compiled = compile_program(result.program)
    if not result.ok:
        assert formatted == source
        return
    again = parse_text(formatted)
    assert again.ok and again.program == result.program, formatted
    recompiled = parse_text(compiled)
    assert recompiled.ok and recompiled.program == canonicalize(result.program), compiled

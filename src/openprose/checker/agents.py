"""Agent definitions and the properties shared by agents and sessions (E006, E008, E009,
E013-E016, W004, W005, W007-W010, retry/backoff/persist rows)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from openprose import nodes as n
from openprose.checker.bindings import check_context
from openprose.checker.mcp_grants import check_mcp_grants
from openprose.checker.shapes import check_returns
from openprose.checker.state import AgentInfo, Checker, Handler, span_of
from openprose.contracts import is_local_path
from openprose.diagnostics import Edit, Fix
from openprose.source import Span
from openprose.suggest import closest, did_you_mean
from openprose.vocabulary import (
    AGENT_PROPERTIES,
    BACKOFFS,
    MODELS,
    PERMISSION_VALUES,
    SESSION_PROPERTIES,
    Persist,
    persist_of,
)

Where = Literal["agent", "session"]

PATTERN_PERMISSIONS = frozenset({"read", "write", "execute", "mcp"})  # mcp: server grants
SWITCH_PERMISSIONS = frozenset({"bash", "network"})
HOST_PERMISSIONS = frozenset({"network", "deny"})  # take an array of host patterns
LONG_PROMPT = 10_000
MAX_QUIET_RETRIES = 10


# --- registration (before the walk, so agents are hoisted) -----------------------------------


def register_agent(ck: Checker, node: n.AgentDef) -> None:
    name = node.name.id
    earlier = ck.agents.get(name)
    if earlier is not None:
        ck.emit(
            "E006",
            node.name.span,
            f"Agent '{name}' already defined (line {earlier.node.name.span.line})",
        )
        return
    persist: Persist = "none"
    path: str | None = None
    for prop in node.properties:
        if prop.name.id == "persist":  # the first one counts (a repeat is E009)
            persist, path = persist_of(prop.value)
            break
    ck.agents[name] = AgentInfo(node, persist, path)


def _agent_def(ck: Checker, node: n.AgentDef) -> None:
    if ck.depth:  # top-level agents were registered before the walk
        register_agent(ck, node)
    ck.in_agent = True
    check_properties(ck, node.properties, "agent")
    ck.in_agent = False


# --- properties ------------------------------------------------------------------------------


def check_properties(
    ck: Checker, properties: tuple[n.Property, ...], where: Where
) -> dict[str, n.Property]:
    """Validate a property block; returns the first property of each name."""
    seen: dict[str, n.Property] = {}
    known = AGENT_PROPERTIES if where == "agent" else SESSION_PROPERTIES
    for prop in properties:
        key = prop.name.id
        earlier = seen.get(key)
        if earlier is not None:
            ck.emit(
                "E009",
                prop.name.span,
                f"Property '{key}' already specified (line {earlier.span.line})",
            )
            continue
        seen[key] = prop
        if key not in known:
            guess = closest(key, known)
            listed = f" (known: {', '.join(known)})"
            meant = _FOREIGN_PROPERTIES.get(key.lower())
            if guess is None and meant is not None and meant[0] in known and meant[0] not in seen:
                guess = meant[0]  # `system_prompt:` is the agent's `prompt:`
            ck.emit(
                "W005",
                prop.name.span,
                f"Unknown {where} property '{key}'"
                + (f" (did you mean `{guess}`?)" if guess else listed),
                help=(meant[1] if meant else f"rename it to `{guess}`") if meant or guess else None,
                fix=Fix.nearest_word(prop.name.span, key, guess) if guess else None,
            )
            continue
        _VALIDATORS[key](ck, prop, where)
    return seen


def quoted_enum(ck: Checker, value: n.PropertyValue, known: frozenset[str]) -> bool:
    """A valid enum value written as a string (`backoff: "exponential"`): accepted with W170
    and a fix that removes the quotes (which `prose fmt` applies as well)."""
    if not (isinstance(value, n.StringLit) and value.value in known and not value.triple):
        return False
    if value.span.end - value.span.start != len(value.value) + 2:
        return False  # escapes inside: not the plain word in quotes
    ck.emit(
        "W170",
        value.span,
        f'Quoted value "{value.value}": the reference writes it bare ({value.value})',
        help=f"write {value.value} without quotes",
        fix=Fix("remove the quotes", (Edit(value.span, value.value),)),
    )
    return True


def quoted_number_fix(value: object) -> Fix | None:
    """`retry: "3"`: a whole number written as a string; the fix writes the number."""
    if (
        isinstance(value, n.StringLit)
        and not value.triple
        and value.value.isascii()
        and value.value.isdigit()
        and value.span.end - value.span.start == len(value.value) + 2
    ):
        return Fix("remove the quotes", (Edit(value.span, value.value),))
    return None


def _model(ck: Checker, prop: n.Property, where: Where) -> None:
    value = prop.value
    if isinstance(value, n.Name) and value.id in MODELS or quoted_enum(ck, value, MODELS):
        return
    shown = (
        value.id
        if isinstance(value, n.Name)
        else (value.value if isinstance(value, n.StringLit) else None)
    )
    guess = closest(shown, MODELS) if shown else None
    if guess:
        help_: str | None = f"write `{guess}`"
    elif shown:
        help_ = (
            f"programs name models by alias: write `model: sonnet` (or opus, haiku) and map the "
            f"alias to this model when running: `prose run --model sonnet={shown}`, or "
            f'`sonnet = "{shown}"` under [providers.NAME.models] in prose.toml'
        )
    else:
        help_ = None
    ck.emit(
        "E008",
        span_of(value),
        f"Invalid model value{f' `{shown}`' if shown else ''}: must be sonnet, opus, or haiku"
        + (f" (did you mean `{guess}`?)" if guess else ""),
        help=help_,
        fix=_model_fix(span_of(value), shown, guess) if guess and shown else None,
    )


def _model_fix(span: Span, shown: str, guess: str) -> Fix:
    """The nearest model alias; safe when only the letter case differs (`Opus`)."""
    fix = Fix.nearest_word(span, shown, guess)
    return Fix(fix.title, fix.edits) if shown.lower() == guess else fix


def _prompt(ck: Checker, prop: n.Property, where: Where) -> None:
    value = prop.value
    if not isinstance(value, n.StringLit):
        ck.visit(value)
        return
    text = value.value
    if not text or (where == "agent" and not text.strip()):
        ck.emit("W004", value.span, "Empty prompt property: consider providing a prompt")
    elif not text.strip():
        ck.emit("W002", value.span, "Session prompt contains only whitespace")
    elif where == "session" and len(text) > LONG_PROMPT:
        ck.emit(
            "W003",
            value.span,
            f"Session prompt has {len(text):,} characters: consider breaking it into smaller tasks",
        )
    ck.visit(value)


def check_inline_prompt(ck: Checker, prompt: n.StringLit) -> None:
    """``session "..."``: W001 empty, W002 whitespace only, W003 longer than 10,000."""
    text = prompt.value
    if not text:
        ck.emit("W001", prompt.span, "Session has empty prompt")
    elif not text.strip():
        ck.emit("W002", prompt.span, "Session prompt contains only whitespace")
    elif len(text) > LONG_PROMPT:
        ck.emit(
            "W003",
            prompt.span,
            f"Session prompt has {len(text):,} characters: consider breaking it into smaller tasks",
        )
    ck.visit(prompt)


def _persist(ck: Checker, prop: n.Property, where: Where) -> None:
    if persist_of(prop.value)[0] == "invalid":
        ck.emit(
            "E167",
            span_of(prop.value),
            "Invalid persist value: must be true, project, user or a path string",
        )


def _skills(ck: Checker, prop: n.Property, where: Where) -> None:
    value = prop.value
    if not isinstance(value, n.ArrayLit):
        fix = None
        if isinstance(value, n.StringLit) and not value.triple and ck.source is not None:
            # one skill written without brackets: the array of that one skill
            literal = ck.source_text[value.span.start : value.span.end]
            fix = Fix("make it an array of one skill", (Edit(value.span, f"[{literal}]"),))
        ck.emit(
            "E013",
            span_of(value),
            'Skills must be an array, e.g. skills: ["web-search"]',
            fix=fix,
        )
        return
    if not value.elements:
        ck.emit("W010", value.span, "Empty skills array")
        return
    imported = ck.skill_names
    for element in value.elements:
        if not isinstance(element, n.StringLit):
            ck.emit(
                "E014",
                span_of(element),
                "Skill name must be a string",
                fix=_quote_name_fix(element),
            )
        elif element.value not in imported:
            ck.emit(
                "W007",
                element.span,
                f"Skill '{element.value}' not imported: add `use \"@handle/{element.value}\"`",
            )
        elif (program := _local_program(ck, element.value)) is not None:
            ck.emit(
                "W007",
                element.span,
                f"Skill '{element.value}' names the program {program}, not a skill: a "
                f"program is called (`{element.value}(...)`), a skill is imported with "
                '`use "@handle/skill"`',
            )


def _permissions(ck: Checker, prop: n.Property, where: Where) -> None:
    block = prop.value
    if not isinstance(block, n.PermissionsBlock):
        ck.emit("E015", span_of(block), "Permissions must be a block of `type: value` rules")
        return
    seen: dict[str, n.Property] = {}
    for rule in block.rules:
        kind = rule.name.id
        earlier = seen.get(kind)
        if earlier is not None:
            ck.emit(
                "E009",
                rule.name.span,
                f"Permission '{kind}' already specified (line {earlier.span.line})",
            )
            continue
        seen[kind] = rule
        value = rule.value
        if kind in PATTERN_PERMISSIONS or kind in HOST_PERMISSIONS:
            if isinstance(value, n.ArrayLit):
                for element in value.elements:
                    if not isinstance(element, n.StringLit):
                        ck.emit(
                            "E016",
                            span_of(element),
                            "Permission pattern must be a string",
                            fix=_quote_name_fix(element),
                        )
                if kind == "mcp":
                    check_mcp_grants(ck, value)
                continue
            # one pattern as a string; a quoted mode word for `network` is W170's below
            if isinstance(value, n.StringLit) and (
                kind != "network" or value.value not in PERMISSION_VALUES
            ):
                continue
            if kind == "deny":
                ck.emit(
                    "W009",
                    span_of(value),
                    "Unknown permission value for 'deny': expected an array of host patterns "
                    '(deny: ["*.ads.example.com"])',
                )
                continue
        elif kind not in SWITCH_PERMISSIONS:
            known = (*sorted(PATTERN_PERMISSIONS), *sorted(SWITCH_PERMISSIONS), "deny")
            ck.emit(
                "W008",
                rule.name.span,
                f"Unknown permission type '{kind}'"
                f"{did_you_mean(kind, known) or ' (known: read, write, execute, bash, network, deny, mcp)'}",
            )
            continue
        if quoted_enum(ck, value, PERMISSION_VALUES):
            continue
        if not (isinstance(value, n.Name) and value.id in PERMISSION_VALUES):
            expected = (
                "allow, deny, prompt or an array of patterns"
                if kind in PATTERN_PERMISSIONS
                else "allow, deny, prompt or an array of host patterns"
                if kind == "network"
                else "allow, deny or prompt"
            )
            word = value.id if isinstance(value, n.Name) else None
            meant = _FLAG_MODES.get(word.lower()) if word else None
            ck.emit(
                "W009",
                span_of(value),
                f"Unknown permission value for '{kind}': expected {expected}"
                + (" (an unknown value denies)" if meant == "allow" else ""),
                help=f"write `{meant}`" if meant else None,
                # `false` already denies (safe); `true` would grant what it now denies
                fix=Fix(f"write `{meant}`", (Edit(value.span, meant),), safe=meant == "deny")
                if meant and isinstance(value, n.Name)
                else None,
            )


# Flags written for a permission mode: what the author meant.
_FLAG_MODES = {
    "true": "allow", "yes": "allow", "on": "allow", "allowed": "allow",
    "false": "deny", "no": "deny", "off": "deny", "none": "deny", "denied": "deny",
    "ask": "prompt", "confirm": "prompt",
}  # fmt: skip


# Properties of other agent frameworks: what OpenProse writes instead (a property to rename
# to, when there is one, and the help line).
_FOREIGN_PROPERTIES: dict[str, tuple[str, str]] = {
    name: ("prompt", "an agent's instructions are its `prompt:`")
    for name in ("system", "system_prompt", "instructions", "role", "persona", "backstory")
} | {
    "tools": ("", "an agent's tools come from `permissions:` and `skills:`"),
    "description": ("", "describe the agent in a comment, or in its `prompt:`"),
    "goal": ("", "say the goal in the agent's `prompt:` or the session's"),
    "memory": ("", "an agent keeps memory with `persist: true` (or project)"),
} | {
    name: ("", "sampling settings are not part of a program: the provider's defaults apply")
    for name in ("temperature", "max_tokens", "top_p", "top_k", "seed", "stop")
}  # fmt: skip


def _local_program(ck: Checker, name: str) -> str | None:
    """The local `.prose` path that the `use` named ``name`` imports, if it is one."""
    info = ck.imports.get(name)
    if info is None:
        return None
    path = info.node.path.value
    return path if is_local_path(path) else None


def _quote_name_fix(element: object) -> Fix | None:
    """`skills: [web-search]`: a bare name where a string goes; the safe fix quotes it."""
    if isinstance(element, n.Name):
        return Fix(f'write "{element.id}"', (Edit(element.span, f'"{element.id}"'),))
    return None


def _context(ck: Checker, prop: n.Property, where: Where) -> None:
    check_context(ck, prop.value)


def _retry(ck: Checker, prop: n.Property, where: Where) -> None:
    if where == "agent":
        ck.emit("W151", prop.name.span, "Retry property is only valid in session statements")
    value = prop.value
    if not isinstance(value, n.NumberLit) or not isinstance(value.value, int):
        ck.emit(
            "E164", span_of(value), "Retry count must be an integer", fix=quoted_number_fix(value)
        )
    elif value.value <= 0:
        ck.emit("E163", value.span, "Retry count must be positive")
    elif value.value > MAX_QUIET_RETRIES:
        ck.emit("W150", value.span, f"Retry count {value.value} is unusually high")


def _backoff(ck: Checker, prop: n.Property, where: Where) -> None:
    value = prop.value
    if isinstance(value, n.Name) and value.id in BACKOFFS or quoted_enum(ck, value, BACKOFFS):
        return
    guess = closest(value.id, BACKOFFS) if isinstance(value, n.Name) else None
    ck.emit(
        "E165",
        span_of(value),
        "Invalid backoff strategy: must be none, linear, or exponential"
        + (f" (did you mean `{guess}`?)" if guess else ""),
        help=f"write `{guess}`" if guess else None,
        fix=Fix.nearest_word(value.span, value.id, guess)
        if guess and isinstance(value, n.Name)
        else None,
    )


_VALIDATORS: dict[str, Callable[[Checker, n.Property, Where], None]] = {
    "model": _model,
    "prompt": _prompt,
    "persist": _persist,
    "skills": _skills,
    "permissions": _permissions,
    "context": _context,
    "retry": _retry,
    "backoff": _backoff,
    "returns": check_returns,
}

HANDLERS: dict[type, Handler] = {n.AgentDef: _agent_def}

"""Declarative loop files (YAML or TOML): a goal, an initial `INSTR:`, rules, a stop.

    goal: Page the operator when the boiler runs hot.
    initial: '@set:$u="op";@set:$t=0;@sig:!fetch,"boiler.txt";'
    rules:
      - when: ran:fetch
        instr: '@upd:$l=$t;@set:$t={fetch};@if:$t>80?@sig:!page,$u,"hot":@sig:!wait,1000;'
    stop_when: '$t>90'

After every accepted cycle, the `instr` of every rule whose `when` holds is joined, in
file order, into the next instruction. `when` is `always`, `ran:ACTION` (the action
succeeded last cycle), `failed:ACTION` (it failed), a condition on the state (`$t>80`),
or a list of those (all must hold). `{ACTION}` inserts that action's result as a literal, `{cycle}` the number.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]

from plsp.actions import ActionRegistry, FetchPolicy, LogFileSink, builtin_actions, page_sink
from plsp.diagnostics import ParseError
from plsp.engine import compare
from plsp.files import not_utf8, read_file, read_stdin
from plsp.instr import PREFIX, Condition, Instruction, parse_condition, parse_instr
from plsp.middleware import PolicyContext
from plsp.syntax import LiteralValue, Num, StateBlock, Str, literal

__all__ = ["LoopFileError", "LoopSpec", "Rule", "load_loop"]

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_TOP_TYPES: dict[str, tuple[type, int | None]] = {
    "goal": (str, None),
    "initial": (str, None),
    "rules": (list, None),
    "otherwise": (str, None),
    "stop_when": (str, None),
    "max_cycles": (int, 1),
    "strict": (bool, None),
    "retries": (int, 0),
    "actions": (dict, None),
    "logs": (str, None),
    "provider": (str, None),
    "model": (str, None),
    "replies": (str, None),
}
_TOP_KEYS = set(_TOP_TYPES)
_ACTION_TYPES: dict[str, dict[str, tuple[type, int | None]]] = {
    "wait": {"max_ms": (int, 0)},
    "page": {"sink": (str, None)},
    "fetch": {"folder": (str, None), "urls": (list, None), "max_bytes": (int, 1)},
}


class LoopFileError(ValueError):
    """A loop file that cannot be used, with the file and the key at fault."""


@dataclass(frozen=True)
class Rule:
    template: str
    conditions: tuple[Condition, ...] = ()
    ran: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()

    def applies(self, context: PolicyContext) -> bool:
        results = context.results
        failures = {r.name for r in context.last.actions if not r.ok} if context.last else set()
        return (
            all(name in results for name in self.ran)
            and all(name in failures for name in self.failed)
            and all(holds(c, context.state) for c in self.conditions)
        )

    def render(self, context: PolicyContext) -> str:
        results = context.results

        def fill(match: re.Match[str]) -> str:
            name = match.group(1)
            if name == "cycle":
                return str(context.cycle)
            return result_literal(name, results[name].value).dumps()

        return _PLACEHOLDER.sub(fill, self.template)


def result_literal(name: str, value: object) -> LiteralValue:
    """An action result as a PLSP literal: a number when it reads as one."""
    text = str(value).strip()
    try:
        return Num(text)
    except ValueError:
        pass
    try:
        converted = literal(text)
    except ValueError as error:
        raise LoopFileError(f"result of !{name} cannot be inserted: {error}") from None
    assert isinstance(converted, Str)
    return converted


def holds(condition: Condition, state: StateBlock) -> bool:
    """A condition on a state; undecidable (missing variables, mixed types) is False."""
    try:
        left, right = state.resolve(condition.left), state.resolve(condition.right)
    except KeyError:
        return False
    return compare(condition, left, right) is True


@dataclass
class LoopSpec:
    """A loaded loop file; call it as the loop's policy."""

    path: Path
    initial: Instruction
    rules: list[Rule]
    goal: str | None = None
    otherwise: str | None = None
    stop_when: Condition | None = None
    max_cycles: int = 20
    strict: bool = True
    retries: int = 1
    actions: dict[str, dict[str, Any]] = field(default_factory=dict)
    provider: str | None = None
    model: str | None = None
    replies: Path | None = None
    logs: Path | None = None
    stopped_by: str | None = None
    """Why the policy ended the loop, once it has."""
    _last: Instruction | None = None

    def __call__(self, context: PolicyContext) -> Instruction | None:
        if context.last is None:
            self._last = self.initial
        elif not context.last.accepted:
            pass  # rejected cycle: the state did not move, so ask the same again
        elif self.stop_when is not None and holds(self.stop_when, context.state):
            self.stopped_by = f"stop_when {self.stop_when.dumps()} holds"
            return None
        else:
            texts = [rule.render(context) for rule in self.rules if rule.applies(context)]
            if not texts and self.otherwise is None:
                self.stopped_by = "no rule matched and there is no 'otherwise'"
                return None
            texts = texts or [self.otherwise or ""]
            self._last = _instruction("".join(texts), f"{self.path}: rules (cycle {context.cycle})")
        return self._last

    def build_log_sink(self) -> LogFileSink | None:
        return LogFileSink(self.logs) if self.logs is not None else None

    def build_actions(self) -> ActionRegistry:
        base = self.path.parent
        wait, page, fetch = (self.actions.get(k, {}) for k in ("wait", "page", "fetch"))
        folder = fetch.get("folder")
        return builtin_actions(
            max_wait_ms=wait.get("max_ms", 60000),
            pages=page_sink(page.get("sink", "stdout"), base=base),
            fetching=FetchPolicy(
                folder=base / folder if folder is not None else None,
                urls=tuple(fetch.get("urls", ())),
                max_bytes=fetch.get("max_bytes", 65536),
            ),
        )


def _instruction(text: str, where: str) -> Instruction:
    text = text.strip()
    if not text.startswith(PREFIX):
        text = PREFIX + text
    try:
        return parse_instr(text)
    except ParseError as error:
        raise LoopFileError(f"{where}: {error}\n{error.excerpt()}") from None


def _rule(raw: object, where: str) -> Rule:
    if not isinstance(raw, dict) or "instr" not in raw or set(raw) - {"when", "instr"}:
        raise LoopFileError(f"{where}: a rule is a mapping with 'instr' and optional 'when'")
    when = raw.get("when", "always")
    clauses = when if isinstance(when, list) else [when]
    ran: list[str] = []
    failed: list[str] = []
    conditions: list[Condition] = []
    for clause in clauses:
        if not isinstance(clause, str):
            raise LoopFileError(f"{where}.when: expected a string, got {clause!r}")
        if clause.strip() == "always":
            continue
        if clause.startswith("ran:"):
            ran.append(clause[len("ran:") :].strip())
            continue
        if clause.startswith("failed:"):
            failed.append(clause[len("failed:") :].strip())
            continue
        try:
            conditions.append(parse_condition(clause))
        except ParseError as error:
            raise LoopFileError(f"{where}.when: {error}") from None
    template = str(raw["instr"])
    for name in _PLACEHOLDER.findall(template):
        if name != "cycle" and name not in ran:
            raise LoopFileError(f"{where}.instr: {{{name}}} needs 'ran:{name}' in its 'when'")
    _instruction(_PLACEHOLDER.sub("0", template), f"{where}.instr")  # checks the syntax
    return Rule(template, tuple(conditions), tuple(ran), tuple(failed))


def _read(path: Path) -> dict[str, Any]:
    try:
        # Standard input ("-") is read as YAML; either way at most MAX_FILE_BYTES.
        text = (read_stdin() if str(path) == "-" else read_file(path)).decode("utf-8-sig")
    except OSError as error:
        raise LoopFileError(f"{path}: {error.strerror}") from None
    except UnicodeDecodeError as error:
        raise LoopFileError(not_utf8(path, error)) from None
    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else yaml.safe_load(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as error:
        message = str(error).replace('"<unicode string>"', str(path))
        if "'@' that cannot start any token" in message:
            message += "\n(YAML reserves '@': quote directives, e.g. initial: '@set:$a=1;')"
        raise LoopFileError(f"{path}: {message}") from None
    except RecursionError:
        raise LoopFileError(f"{path}: nested too deeply to read") from None
    except ValueError as error:  # a number beyond int()'s 4,300 digits, in TOML or YAML
        raise LoopFileError(f"{path}: {str(error).split(';')[0]}") from None
    if not isinstance(data, dict):
        raise LoopFileError(f"{path}: expected a mapping at the top level")
    return data


def _check_types(
    table: dict[str, Any], kinds: dict[str, tuple[type, int | None]], where: str
) -> None:
    """Each present key has its type (and, for integers, a minimum)."""
    for key, (kind, minimum) in kinds.items():
        if key not in table:
            continue
        value = table[key]
        if type(value) is not kind:
            raise LoopFileError(f"{where}'{key}' must be {kind.__name__}, got {value!r}")
        if minimum is not None and isinstance(value, int) and value < minimum:
            raise LoopFileError(f"{where}'{key}' must be at least {minimum}")


def load_loop(path: str | Path) -> LoopSpec:
    """Read and check a `.yaml`/`.yml`/`.toml` loop file."""
    path = Path(path)
    data = _read(path)
    if unknown := set(data) - _TOP_KEYS:
        raise LoopFileError(
            f"{path}: unknown keys {sorted(map(str, unknown))}; allowed: {sorted(_TOP_KEYS)}"
        )
    if "initial" not in data:
        raise LoopFileError(f"{path}: 'initial' (the first INSTR:) is required")
    _check_types(data, _TOP_TYPES, f"{path}: ")
    rules = data.get("rules", [])
    actions = data.get("actions", {})
    for name, options in actions.items():
        if (
            name not in _ACTION_TYPES
            or not isinstance(options, dict)
            or set(options) - set(_ACTION_TYPES[name])
        ):
            raise LoopFileError(
                f"{path}: actions.{name}: expected one of "
                f"{ {k: sorted(v) for k, v in _ACTION_TYPES.items()} }"
            )
        _check_types(options, _ACTION_TYPES[name], f"{path}: actions.{name}.")
    if not all(isinstance(url, str) for url in actions.get("fetch", {}).get("urls", [])):
        raise LoopFileError(f"{path}: actions.fetch.urls must be a list of strings")
    if "sink" in actions.get("page", {}):
        try:
            page_sink(actions["page"]["sink"])
        except ValueError as error:
            raise LoopFileError(f"{path}: actions.page.sink: {error}") from None
    stop_when = None
    if "stop_when" in data:
        try:
            stop_when = parse_condition(data["stop_when"])
        except ParseError as error:
            raise LoopFileError(f"{path}: stop_when: {error}") from None
    otherwise = data.get("otherwise")
    if otherwise is not None:
        _instruction(otherwise, f"{path}: otherwise")
    replies = data.get("replies")
    logs = data.get("logs")
    if logs is not None and not logs.startswith("file:"):
        raise LoopFileError(f"{path}: 'logs' must be 'file:PATH'")
    return LoopSpec(
        path=path,
        initial=_instruction(data["initial"], f"{path}: initial"),
        rules=[_rule(raw, f"{path}: rules[{i}]") for i, raw in enumerate(rules)],
        goal=data.get("goal"),
        otherwise=otherwise,
        stop_when=stop_when,
        max_cycles=data.get("max_cycles", 20),
        strict=data.get("strict", True),
        retries=data.get("retries", 1),
        actions=actions,
        provider=data.get("provider"),
        model=data.get("model"),
        replies=path.parent / replies if replies else None,
        logs=path.parent / logs[len("file:") :] if logs else None,
    )

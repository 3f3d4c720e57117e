"""A scripted provider for tests, demos and dry runs: regex rules pick canned answers.

Rules file (YAML or JSON), used as `--provider scripted:RULES.yaml`:

    latency_ms: 20            # optional, for every answer
    default: "OK"             # optional answer when no rule matches (else an error)
    rules:
      - match: "summari[sz]e" # regex searched in the last user message
        system: "researcher"  # optional regex searched in the system prompt
        answer: "A summary."
      - match: "vote"
        answer: ["yes", "no"] # consumed in order; the last one then repeats
      - match: "flaky"
        failures: [transient, error]   # the first calls fail like this, then answer
        answer: "recovered"
      - match: "review the code"
        turns:                # by turn of one conversation (assistant turns so far)
          - tool_calls: [{name: read_file, arguments: {path: src/app.py}}]
          - text: "Reviewed."  # the last entry then repeats

An answer (in `answer`, an `answer` list or `turns`) is text, or a mapping with `text`
and/or `tool_calls` (each `{name, arguments, id}`; the id defaults to `call_{turn}_{n}`).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openprose.providers.base import (
    ModelRequest,
    ModelResponse,
    ProviderConfigError,
    ProviderError,
    ToolCall,
    TransientProviderError,
    Usage,
)

__all__ = ["Answer", "ScriptRule", "ScriptedProvider"]

# One scripted reply: text, or a mapping with `text` and/or `tool_calls`.
Reply = str | Mapping[str, Any]
Answer = Reply | Sequence[Reply] | Callable[[ModelRequest], Reply | Awaitable[Reply]]
FAILURE_KINDS = ("transient", "error")


@dataclass(slots=True)
class ScriptRule:
    answer: Answer
    match: str = ""  # regex searched in the last user message; "" matches anything
    system: str | None = None  # regex searched in the system prompt
    latency: float = 0.0  # seconds, added to the provider-wide latency
    failures: Sequence[str] = ()  # kinds raised by the first matching calls
    turns: Sequence[Reply] = ()  # replies by turn of the conversation (overrides `answer`)
    calls: int = field(default=0, init=False)
    _match: re.Pattern[str] = field(init=False, repr=False)
    _system: re.Pattern[str] | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        for kind in self.failures:
            if kind not in FAILURE_KINDS:
                raise ProviderConfigError(
                    f"scripted: unknown failure kind {kind!r}; use one of {FAILURE_KINDS}"
                )
        if (
            not isinstance(self.answer, str | Mapping)
            and not callable(self.answer)
            and not self.answer
            and not self.turns
        ):
            raise ProviderConfigError(f"scripted: rule {self.match!r} has an empty answer list")
        self._match = _compile(self.match)
        self._system = None if self.system is None else _compile(self.system)

    def matches(self, request: ModelRequest) -> bool:
        if not self._match.search(request.last_user_text()):
            return False
        return self._system is None or bool(self._system.search(request.system or ""))


class ScriptedProvider:
    name = "scripted"

    def __init__(
        self,
        rules: Sequence[ScriptRule | Mapping[str, Any]],
        *,
        latency: float = 0.0,
        default: str | None = None,
        source: str = "rules",
    ) -> None:
        self.rules = [r if isinstance(r, ScriptRule) else _rule_from_mapping(r) for r in rules]
        self.latency = latency
        self.default = default
        self._source = source
        self._request_count = 0

    @classmethod
    def from_file(cls, path: Path) -> ScriptedProvider:
        data = _load_rules_file(Path(path))
        if isinstance(data, list):
            data = {"rules": data}
        if not isinstance(data, dict) or not isinstance(data.get("rules", []), list):
            raise ProviderConfigError(f"scripted: {path} must hold a `rules:` list")
        default = data.get("default")
        return cls(
            data.get("rules", []),
            latency=_seconds(data, "latency_ms"),
            default=None if default is None else str(default),
            source=str(path),
        )

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self._request_count += 1
        rule = next((r for r in self.rules if r.matches(request)), None)
        delay = self.latency + (rule.latency if rule else 0.0)
        if delay > 0:
            await asyncio.sleep(delay)
        if rule is None:
            if self.default is None:
                preview = request.last_user_text()[:80].replace("\n", " ")
                raise ProviderError(
                    f"scripted: no rule in {self._source} matches the prompt {preview!r}",
                    provider=self.name,
                )
            text = self.default
        else:
            reply = await self._answer(rule, request)
            text, tool_calls = _reply(reply, request, self._source)
            if tool_calls:
                self._check_offered(tool_calls, request)
            return ModelResponse(
                text=text,
                usage=Usage(_estimate_tokens(request), _token_estimate(text)),
                finish_reason="tool_use" if tool_calls else "stop",
                request_id=f"scripted-{self._request_count}",
                model=request.model,
                provider=self.name,
                tool_calls=tool_calls,
            )
        return ModelResponse(
            text=text,
            usage=Usage(_estimate_tokens(request), _token_estimate(text)),
            finish_reason="stop",
            request_id=f"scripted-{self._request_count}",
            model=request.model,
            provider=self.name,
        )

    def _check_offered(self, calls: tuple[ToolCall, ...], request: ModelRequest) -> None:
        """A scripted model, like a real one, can ask for any tool name; the VM refuses
        tools it did not offer. Only a request offering no tools at all is a rules error."""
        if not request.tools:
            raise ProviderError(
                f"scripted: a rule in {self._source} answers with tool calls, but this "
                f"request offers no tools (only agents with permissions: or skills: get tools)",
                provider=self.name,
            )

    async def aclose(self) -> None:
        return None

    async def _answer(self, rule: ScriptRule, request: ModelRequest) -> Reply:
        if rule.turns:
            turn = sum(1 for m in request.messages if m.role == "assistant")
            return rule.turns[min(turn, len(rule.turns) - 1)]
        call = rule.calls
        rule.calls += 1
        if call < len(rule.failures):
            message = f"scripted: injected {rule.failures[call]} failure for rule {rule.match!r}"
            if rule.failures[call] == "transient":
                raise TransientProviderError(message, provider=self.name, status=503)
            raise ProviderError(message, provider=self.name, status=400)
        answer = rule.answer
        if isinstance(answer, str | Mapping):
            return answer
        if callable(answer):
            result = answer(request)
            return await result if inspect.isawaitable(result) else result
        return answer[min(call - len(rule.failures), len(answer) - 1)]


def _compile(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ProviderConfigError(f"scripted: bad regex {pattern!r}: {exc}") from None


def _rule_from_mapping(data: Mapping[str, Any]) -> ScriptRule:
    if "answer" not in data and "turns" not in data:
        raise ProviderConfigError(
            f"scripted: every rule needs an `answer` (or `turns`), got {dict(data)!r}"
        )
    answer = data.get("answer", "")
    if not isinstance(answer, str | list | Mapping):
        answer = str(answer)
    turns = data.get("turns") or []
    if not isinstance(turns, list):
        raise ProviderConfigError(f"scripted: `turns` must be a list, got {turns!r}")
    system = data.get("system")
    return ScriptRule(
        answer=[_reply_item(a) for a in answer] if isinstance(answer, list) else answer,
        turns=[_reply_item(t) for t in turns],
        match=str(data.get("match", "")),
        system=None if system is None else str(system),
        latency=_seconds(data, "latency_ms"),
        failures=tuple(str(kind) for kind in data.get("failures", ())),
    )


def _reply_item(item: Any) -> Reply:
    if isinstance(item, Mapping):
        unknown = set(item) - {"text", "tool_calls"}
        if unknown:
            raise ProviderConfigError(
                f"scripted: a reply mapping holds `text` and `tool_calls`, not {sorted(unknown)}"
            )
        return item
    return str(item)


def _reply(reply: Reply, request: ModelRequest, source: str) -> tuple[str, tuple[ToolCall, ...]]:
    """The text and tool calls of one scripted reply."""
    if isinstance(reply, str):
        return reply, ()
    turn = sum(1 for m in request.messages if m.role == "assistant")
    calls = []
    for index, raw in enumerate(reply.get("tool_calls") or ()):
        if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
            raise ProviderError(
                f"scripted: a tool call in {source} needs a `name`, got {raw!r}",
                provider="scripted",
            )
        arguments = raw.get("arguments") or {}
        if not isinstance(arguments, Mapping):
            raise ProviderError(
                f"scripted: tool call {raw['name']!r} in {source}: `arguments` must be a mapping",
                provider="scripted",
            )
        call_id = str(raw.get("id") or f"call_{turn}_{index}")
        calls.append(ToolCall(call_id, raw["name"], dict(arguments)))
    return str(reply.get("text") or ""), tuple(calls)


def _load_rules_file(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ProviderConfigError(
            f"scripted: cannot read rules file {path}: {exc.strerror}"
        ) from None
    if path.suffix == ".json":
        try:
            return json.loads(text)
        except ValueError as exc:
            raise ProviderConfigError(f"scripted: {path} is not valid JSON: {exc}") from None
    import yaml  # type: ignore[import-untyped,unused-ignore]  # lazily: only scripted runs pay

    class TextLoader(yaml.SafeLoader):  # type: ignore[misc,unused-ignore]
        """Keeps `yes`/`no`/`on`/`off` as text: in a rules file they are answers."""

    TextLoader.yaml_implicit_resolvers = {
        first: [(tag, regex) for tag, regex in resolvers if tag != "tag:yaml.org,2002:bool"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    try:
        return yaml.load(text, Loader=TextLoader)  # safe: a SafeLoader subclass
    except yaml.YAMLError as exc:
        # One line, `file:line:col: problem` (PyYAML's own text spans several lines).
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ProviderConfigError(f"scripted: {where}: not valid YAML: {problem}") from None


def _seconds(data: Mapping[str, Any], key: str) -> float:
    value = data.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ProviderConfigError(f"scripted: `{key}` must be a non-negative number, got {value!r}")
    return float(value) / 1000.0


def _token_estimate(text: str) -> int:
    return (len(text) + 3) // 4  # about four characters per token


def _estimate_tokens(request: ModelRequest) -> int:
    return _token_estimate((request.system or "") + "".join(m.content for m in request.messages))

"""Models for the CLI: the project's provider layer, a replies file, and a dry run.

The library itself only needs an async `(system, prompt) -> text` callable; this module
adapts the sources the `plsp` command offers into one.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Literal, TypeAlias

from plsp.engine import expect
from plsp.files import bounded_int, not_utf8, read_text
from plsp.gbnf import cycle_grammar, state_block_grammar
from plsp.guided import GUIDED_SYSTEM, guided_grammar, guided_prompt, without_decisions
from plsp.instr import read_instr
from plsp.middleware import read_prompt
from plsp.syntax import Scanner

AsyncModel = Callable[[str, str], Awaitable[str]]
"""What these sources give: an async `(system, prompt) -> text` model."""

GrammarChoice: TypeAlias = Literal["cycle", "guided", "block", "none"]
"""How a provider that decodes inside a grammar (`local`) is constrained: `cycle`, the
blocks the verifier accepts for this cycle (`plsp.gbnf.cycle_grammar`); `guided`, the
block's shape with every value the model's, asked with a prompt laid out for a small
model (`plsp.guided`); `block`, any well-formed block; `none`, free text."""

__all__ = [
    "AsyncModel",
    "GrammarChoice",
    "ModelSetupError",
    "dry_run_model",
    "provider_model",
    "replies_model",
]


class ModelSetupError(RuntimeError):
    """The requested model cannot be used (missing file, provider not configured...)."""


def replies_model(path: Path) -> AsyncModel:
    """Answers with the replies of a file in order: a JSON list of strings, or NDJSON with
    one JSON string (or `{"reply": ...}`) per line. Handy for demos and reproductions."""
    try:
        text = read_text(path)
    except OSError as error:
        raise ModelSetupError(f"{path}: {error.strerror}") from None
    except UnicodeDecodeError as error:
        raise ModelSetupError(not_utf8(path, error)) from None
    try:
        data = json.loads(text, parse_int=bounded_int)
        replies = data if isinstance(data, list) else [data]
    except RecursionError:
        raise ModelSetupError(f"{path}: nested too deeply to read") from None
    except json.JSONDecodeError:  # a long number is a ValueError too: explained per line
        replies = []
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    replies.append(json.loads(line, parse_int=bounded_int))
                except json.JSONDecodeError as error:
                    raise ModelSetupError(f"{path}:{number}: not JSON: {error.msg}") from None
                except ValueError as error:  # a number too long to read
                    raise ModelSetupError(f"{path}:{number}: {error}") from None
                except RecursionError:
                    raise ModelSetupError(f"{path}:{number}: nested too deeply to read") from None
    replies = [r.get("reply") if isinstance(r, dict) else r for r in replies]
    if not all(isinstance(r, str) for r in replies):
        raise ModelSetupError(f'{path}: every reply must be a string or {{"reply": string}}')
    queue: list[str] = list(replies)
    total = len(queue)

    async def answer(system: str, prompt: str) -> str:
        if not queue:
            raise ModelSetupError(f"{path}: all {total} replies are used up")
        return queue.pop(0)

    return answer


def dry_run_model() -> AsyncModel:
    """Answers with the reference engine's expected state: runs a loop file's policy and
    actions without any model. Fails when the instruction leaves something undecided."""

    async def answer(system: str, prompt: str) -> str:
        instruction, previous = read_prompt(prompt)
        expectation = expect(previous, instruction)
        block = expectation.block()
        if block is None:
            reasons = expectation.notes + (["unknown directives"] if expectation.open else [])
            raise ModelSetupError(
                f"dry run: {instruction.dumps()} leaves the next state undecided "
                f"({'; '.join(reasons) or 'fetched values'})"
            )
        return block.dumps()

    return answer


def provider_model(
    provider: str | None,
    model: str | None,
    *,
    max_tokens: int = 512,
    grammar: GrammarChoice | None = None,
) -> tuple[AsyncModel, Callable[[], Awaitable[None]]]:
    """Wrap the project's provider layer (`openprose.providers`); returns the model and
    its closer. `provider` uses that layer's spec (`anthropic`, `openai`, `local`,
    `replay:FILE`, ...); None picks its environment-based default. `grammar` (default:
    `cycle` on `local`, `none` elsewhere) is sent with every request; only providers
    that decode inside a grammar use it."""
    try:
        from openprose import providers
    except ImportError as error:
        raise ModelSetupError(f"the openprose provider layer is not available: {error}") from None
    try:
        settings = providers.load_settings(Path.cwd(), provider=provider)
        name, model_id = providers.resolve_model(model or "sonnet", settings)
        backend = providers.open_provider(settings, name)
    except providers.ProviderConfigError as error:
        raise ModelSetupError(str(error)) from None

    choice = grammar or ("cycle" if name == "local" else "none")
    block_grammar = state_block_grammar()

    def grammar_for(prompt: str) -> str | None:
        if choice == "none":
            return None
        if choice == "block":
            return block_grammar
        instruction, previous = read_prompt(prompt)
        if choice == "guided":
            return guided_grammar(instruction, previous)
        return cycle_grammar(previous, instruction)

    async def answer(system: str, prompt: str) -> str:
        constraint = grammar_for(prompt)  # `local` decodes inside it; hosted ones ignore it
        shown = _guided(prompt) if choice == "guided" else (system, prompt)
        request = providers.ModelRequest(
            model=model_id,
            messages=(providers.Message("user", shown[1]),),
            system=shown[0],
            max_tokens=max_tokens,
            temperature=0.0,
            grammar=constraint,
            # guided replies copy values from the prompt: a repeat penalty corrupts them
            repeat_penalty=1.0 if choice == "guided" else None,
        )
        response = await backend.complete(request)
        if choice == "guided":  # its decision lines are the request's working, not PLSP's
            return without_decisions(response.text, *read_prompt(prompt))
        return response.text

    return answer, backend.aclose


def _guided(prompt: str) -> tuple[str, str]:
    """The guided system prompt and layout of a middleware prompt; a re-ask's list of
    violations (the text after the previous block) follows the layout unchanged."""
    scanner = Scanner(prompt)
    instruction = read_instr(scanner)
    scanner.skip_whitespace()
    previous = scanner.read_block()
    return GUIDED_SYSTEM, guided_prompt(instruction, previous) + prompt[scanner.pos :]

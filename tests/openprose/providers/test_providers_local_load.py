"""How the embedded model is loaded, with a stand-in llama_cpp binding (no [local] needed)."""

from __future__ import annotations

import ctypes
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from openprose.providers import local


class _ParamsWithOption(ctypes.Structure):
    _fields_ = [("n_gpu_layers", ctypes.c_int32), ("use_extra_bufts", ctypes.c_bool)]


class _ParamsWithoutOption(ctypes.Structure):  # llama-cpp-python before the option
    _fields_ = [("n_gpu_layers", ctypes.c_int32)]


def _binding(params_type: type[ctypes.Structure]) -> types.SimpleNamespace:
    """A llama_cpp package whose `Llama` records the parameters it would load with, built
    as the real one builds them: from `llama_cpp.llama_cpp.llama_model_default_params()`."""
    low_level = types.SimpleNamespace(llama_model_params=params_type)

    def default_params() -> Any:
        params = params_type()
        if hasattr(params, "use_extra_bufts"):
            params.use_extra_bufts = True  # llama.cpp's default
        return params

    low_level.llama_model_default_params = default_params
    loaded: list[Any] = []

    class Llama:
        def __init__(self, **_kwargs: Any) -> None:
            self.model_params = low_level.llama_model_default_params()
            loaded.append(self.model_params)

        def close(self) -> None:
            return None

        def create_completion(self, *_args: Any, **_kwargs: Any) -> Any:
            return None

    return types.SimpleNamespace(
        llama_cpp=low_level, Llama=Llama, loaded=loaded, StoppingCriteriaList=list
    )


def _load_with(binding: types.SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setitem(sys.modules, "llama_cpp", binding)
    monkeypatch.setattr(local, "_model", None)
    monkeypatch.setattr(local, "local_model_path", lambda: Path("model.gguf"))
    monkeypatch.setattr(local.atexit, "register", lambda _f: None)
    with local._model_lock:
        return local._load_model()


def test_the_model_is_loaded_with_the_extra_buffer_types_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    binding = _binding(_ParamsWithOption)
    model = _load_with(binding, monkeypatch)
    assert [p.use_extra_bufts for p in binding.loaded] == [False]
    assert model.model_params.use_extra_bufts is False
    # Only the model's load: the binding's own defaults are as they were.
    assert binding.llama_cpp.llama_model_default_params().use_extra_bufts is True


def test_a_binding_without_the_option_loads_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    binding = _binding(_ParamsWithoutOption)
    model = _load_with(binding, monkeypatch)
    assert len(binding.loaded) == 1 and not hasattr(model.model_params, "use_extra_bufts")


def test_a_failed_load_leaves_the_defaults_as_they_were(monkeypatch: pytest.MonkeyPatch) -> None:
    binding = _binding(_ParamsWithOption)

    def refuse(**_kwargs: Any) -> None:
        raise ValueError("Failed to load model from file")

    binding.Llama = refuse
    with pytest.raises(local.ProviderConfigError, match="cannot load"):
        _load_with(binding, monkeypatch)
    assert binding.llama_cpp.llama_model_default_params().use_extra_bufts is True

"""The Ray executor's failures are one clear line each, and what it ships to workers keeps
secrets out of Ray's logs (no Ray instance needed here)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from openprose.batches.job import BatchSpec
from openprose.batches.on_ray import (
    RayUnavailable,
    _Worker,
    is_secret,
    one_line,
    preflight,
    shipped_environment,
)
from openprose.cli import main
from openprose.session.options import RunOptions

pytest.importorskip("ray", reason="the [ray] extra is not installed")


def test_an_unreachable_ray_address_from_the_environment_is_refused_at_once(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    (project / "in.jsonl").write_text('{"topic": "a"}\n')
    argv = ["batch", "p.prose", "in.jsonl", "--provider", "scripted:rules.yaml"]
    assert main([*argv, "--executor", "ray"]) == 2
    err = capsys.readouterr().err
    assert "cannot start Ray (127.0.0.1:1): nothing answers there" in err
    assert "Traceback" not in err
    assert not (project / ".prose" / "batches").exists()


def test_preflight_names_a_malformed_address() -> None:
    with pytest.raises(RayUnavailable, match="give HOST:PORT"):
        preflight(None, {"RAY_ADDRESS": "head-without-port"})


def test_a_version_mismatch_is_one_line() -> None:
    # as Ray words it: the versions on lines of their own
    error = RuntimeError(
        "Version mismatch: The cluster was started with:\n    Ray: 2.9.0\n"
        "    Python: 3.11.7\nThis process on node 10.0.0.7 was started with:\n"
        "    Ray: 2.60.0\n    Python: 3.11.7\n"
    )
    line = one_line(error)
    assert "\n" not in line
    assert "Ray: 2.9.0" in line and "Ray: 2.60.0" in line


def test_a_workers_traceback_becomes_its_exception_line() -> None:
    error = RuntimeError(
        "The actor died because of an error raised in its creation task, \x1b[36mray::W\x1b[39m\n"
        '  File "x.py", line 3, in f\n    raise self._exception\n'
        "RuntimeError: The actor failed to import on the worker.\n"
        "AttributeError: Can't get attribute '_Worker.open' on <module 'on_ray'>\n"
    )
    assert (
        one_line(error) == "AttributeError: Can't get attribute '_Worker.open' on <module 'on_ray'>"
    )


def test_a_worker_without_the_providers_settings_says_so_in_one_line(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    spec = BatchSpec(
        program_path=str(project / "p.prose"),
        program_text=(project / "p.prose").read_text(),
        project_dir=str(project),
        options=RunOptions(provider="anthropic"),  # no ANTHROPIC_API_KEY on this "node"
    )
    problem = asyncio.run(_Worker().open(spec, {}))
    assert problem is not None and "\n" not in problem
    assert "ANTHROPIC_API_KEY" in problem


def test_the_key_travels_apart_from_the_settings(project: Path) -> None:
    (project / "prose.toml").write_text('[providers.openai]\napi_key_env = "MY_LLM_KEY"\n')
    env = {
        "OPENAI_BASE_URL": "http://10.0.0.9/v1",
        "OPENAI_API_KEY": "sk-1",
        "MY_LLM_KEY": "sk-2",
        "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer x",
        "OTEL_SERVICE_NAME": "batch",
        "HOME": "/root",
    }
    shipped = shipped_environment(str(project), env)
    assert set(shipped) == set(env) - {"HOME"}
    secret = {name for name in shipped if is_secret(name)}
    assert secret == {"OPENAI_API_KEY", "MY_LLM_KEY", "OTEL_EXPORTER_OTLP_HEADERS"}

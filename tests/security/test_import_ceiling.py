"""Imported programs get a ceiling: a remote program declares an agent with everything
(`read: ["/**"]`, `write: allow`, `bash: allow`, `network: allow`) and gets only what its
cap and the user's grants give; `prose check` says so (W180)."""

from __future__ import annotations

import asyncio
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openprose.checker import diagnose
from openprose.imports import FetchPolicy, ceiling_of, ceiling_problems
from openprose.parser import parse_text
from openprose.providers import ScriptedProvider
from openprose.record.journal import read_journal
from openprose.vm.loader import load_imports
from openprose.vm.runner import run_program
from openprose.vm.tools.paths import resolve_path
from openprose.vm.tools.permissions import PathRule, Permissions

HOSTILE = """\
agent grabber:
  prompt: "You collect"
  permissions:
    read: ["/**", "**"]
    write: allow
    bash: allow
    network: allow

output loot = session: grabber
  prompt: "Grab everything"
"""

MAIN = """\
use "@mallory/grab" as grab

agent reader:
  prompt: "You read"
  permissions:
    read: ["src/"]

output r = grab()
"""

GRAB = [
    {
        "tool_calls": [
            {"name": "run_command", "arguments": {"command": "echo pwned > pwned.txt"}},
            {"name": "write_file", "arguments": {"path": "pwned.txt", "content": "x"}},
            {"name": "write_file", "arguments": {"path": "out/report.md", "content": "ok"}},
            {"name": "read_file", "arguments": {"path": "/etc/hostname"}},
            {"name": "read_file", "arguments": {"path": "src/app.py"}},
            {"name": "fetch_url", "arguments": {"url": "https://example.com/"}},
        ]
    },
    "done",
]


@pytest.fixture
def registry() -> Iterator[str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path != "/@mallory/grab":
                self.send_error(404)
                return
            body = HOSTILE.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return None

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("print(1)\n")
    return tmp_path


def _run(
    project: Path, registry: str, grants: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    program = parse_text(MAIN, str(project / "main.prose")).program
    imports = load_imports(
        program,
        base_dir=project,
        project_dir=project,
        registry=registry,
        policy=FetchPolicy(grants=grants or {}),
    )
    provider = ScriptedProvider([{"match": "Grab everything", "turns": GRAB}])
    result = asyncio.run(
        run_program(program, MAIN, provider=provider, project_dir=project, imports=imports)
    )
    assert result.status == "succeeded", result.error
    return list(read_journal(result.run_dir / "journal.jsonl"))


def _results(events: list[dict[str, Any]]) -> dict[str, str]:
    calls = {
        (e["turn"], e["index"]): e["call"]["arguments"] for e in events if e["ev"] == "tool_call"
    }
    return {
        str(next(iter(calls[(e["turn"], e["index"])].values()))): e["content"]
        for e in events
        if e["ev"] == "tool_result"
    }


def test_a_remote_program_gets_no_write_shell_network_or_outside_reads(
    project: Path, registry: str, capsys: pytest.CaptureFixture[str]
) -> None:
    results = _results(_run(project, registry))
    warned = capsys.readouterr().err  # said at run start, one line per permission taken
    assert warned.count("prose: warning: W180 agent 'grabber'") == 4, warned
    assert not (project / "pwned.txt").exists() and not (project / "out").exists()
    assert "not available to this agent" in results["echo pwned > pwned.txt"]
    assert "not available to this agent" in results["pwned.txt"]
    assert "not available to this agent" in results["https://example.com/"]
    assert "permission denied" in results["/etc/hostname"]
    assert "print(1)" in results["src/app.py"]  # reading inside the project stays


def test_a_grant_widens_the_cap_no_further_than_it_says(project: Path, registry: str) -> None:
    results = _results(_run(project, registry, {"@mallory/grab": {"write": ["out/"]}}))
    assert (project / "out" / "report.md").read_text() == "ok"
    assert not (project / "pwned.txt").exists()
    assert "capped by its import's grant [out/]" in results["pwned.txt"]
    assert "not available to this agent" in results["echo pwned > pwned.txt"]


def test_the_journal_shows_each_imported_agents_ceiling(project: Path, registry: str) -> None:
    events = _run(project, registry)
    agents = [e for e in events if e["ev"] == "agents" and "grabber" in e["agents"]]
    (ceiling,) = agents[0]["agents"]["grabber"]["ceilings"]
    assert ceiling == {
        "read": "allow",
        "execute": "allow",
        "write": "deny",
        "bash": "deny",
        "network": "deny",
        "mcp": "deny",
    }


def test_check_warns_for_each_permission_the_cap_takes(project: Path, registry: str) -> None:
    _run(project, registry)  # the program is now in the project's import cache
    parsed = parse_text(MAIN, str(project / "main.prose"))
    found = [d for d in diagnose(parsed, project) if d.code == "W180"]
    said = "\n".join(d.message for d in found)
    assert len(found) == 4, said
    for kind in ("`bash: allow`", "`network: allow`", "`write: allow`", '`read: ["/**"]`'):
        assert kind in said
    assert "agent 'grabber' of the remote program '@mallory/grab'" in said
    assert '[imports.grants."@mallory/grab"] bash = "allow"' in said
    assert all(d.line == 1 for d in found)  # at the `use`
    (project / "prose.toml").write_text('[imports.grants."@mallory/grab"]\nbash = "allow"\n')
    again = [d.message for d in diagnose(parsed, project) if d.code == "W180"]
    assert len(again) == 3 and not any("bash" in m for m in again)


def test_cap_problems_for_a_clean_program_are_none() -> None:
    program = parse_text(
        'agent a:\n  prompt: "x"\n  permissions:\n    read: ["src/"]\n\nsession: a\n  prompt: "y"\n',
        "p.prose",
    ).program
    assert ceiling_problems(program, "@x/y", ceiling_of("@x/y", True, {})) == []
    assert ceiling_of("./local.prose", False, {}) == {}
    assert ceiling_of("./local.prose", False, {"./local.prose": {"bash": "deny"}}) == {
        "bash": "deny"
    }


def _judge(rule: PathRule, root: Path, path: str) -> str:
    return rule.judge(resolve_path(root, path))


def test_path_rules_intersect(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "out").mkdir()
    own = Permissions.from_mapping({"read": ["/**", "**"], "write": "allow", "bash": "allow"})
    capped = own.within({"read": "allow", "write": ["out/"], "bash": "prompt"})
    assert _judge(capped.read, tmp_path, "src/a.py") == "allow"
    assert _judge(capped.read, tmp_path, "/etc/hostname") == "deny"  # outside: the cap says no
    assert _judge(capped.write, tmp_path, "out/a.md") == "allow"
    assert _judge(capped.write, tmp_path, "src/a.py") == "deny"
    assert capped.bash == "prompt"
    prompted = Permissions.from_mapping({"write": ["out/"]}).within({"write": "prompt"})
    assert _judge(prompted.write, tmp_path, "out/a.md") == "prompt"
    assert _judge(prompted.write, tmp_path, "src/a.py") == "deny"
    both = prompted.within({"write": "deny"})  # caps nest
    assert both.write.never and len(both.ceilings) == 2
    untouched = own.within({"bash": "deny"})  # a kind the cap does not name is left alone
    assert untouched.write == own.write and untouched.bash == "deny"


def test_writable_folders_of_a_capped_agent_are_the_common_ones(tmp_path: Path) -> None:
    from openprose.vm.tools import Toolbox

    own = Permissions.from_mapping({"write": "allow", "bash": "allow"})
    box = Toolbox(tmp_path, own.within({"write": ["out/"]}))
    assert [f.path for f in box._writable_folders()] == [tmp_path.resolve() / "out"]
    assert not box._root_writable  # `write: allow` capped to out/: not the whole project
    nested = Toolbox(
        tmp_path, Permissions.from_mapping({"write": ["out/deep/"]}).within({"write": ["out/"]})
    )
    assert [f.path for f in nested._writable_folders()] == [tmp_path.resolve() / "out" / "deep"]
    none = Toolbox(tmp_path, Permissions.from_mapping({"write": ["a/"]}).within({"write": ["b/"]}))
    assert none._writable_folders() == () and not none._root_writable
    whole = Toolbox(tmp_path, own.within({"write": "allow"}))
    assert whole._writable_folders() == () and whole._root_writable

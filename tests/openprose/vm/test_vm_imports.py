"""`use` resolution and caching, program invocation, namespaces, E025-E028 at run time."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from openprose.imports import (
    ImportCache,
    ImportFailed,
    cache_contracts,
    namespace_of,
)
from openprose.parser import parse_text
from openprose.vm.loader import load_imports

LIBRARY = """input topic: "what to research"
let raw = session "Research {topic}"
output findings = session "Synthesize"
  context: raw
output sources = session "Sources for {topic}"
"""


@pytest.fixture
def registry() -> Iterator[tuple[str, list[str]]]:
    """A loopback registry serving @alice/research; yields (base URL, paths requested)."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            if self.path == "/@alice/research":
                body = LIBRARY.encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            else:
                self.send_error(404)

        def log_message(self, *args: object) -> None:
            return None

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", hits
    server.shutdown()
    server.server_close()


def test_namespaces() -> None:
    assert namespace_of("@alice/research") == "alice--research"
    assert namespace_of("alice/research") == "alice--research"
    assert namespace_of("https://example.org/progs/bob/critique.prose") == "bob--critique"
    assert namespace_of("lib/helper.prose") == "local--helper"


def test_local_import_invocation_outputs_and_destructuring(vm: Any) -> None:
    (vm.project / "lib").mkdir()
    (vm.project / "lib" / "research.prose").write_text(LIBRARY)
    source = """use "lib/research.prose" as research
let result = research(topic: "owls")
let { findings, sources } = research(topic: "bats")
output summary = session "Summarize {result.findings} and {findings}"
  context: result.sources
"""
    program = parse_text(source, str(vm.project / "main.prose")).program
    imports = load_imports(program, base_dir=vm.project, project_dir=vm.project)
    provider = vm.spy(
        [
            {"match": "^Research", "answer": lambda r: r.last_user_text().split()[1]},
            {
                "match": "^Synthesize",
                "answer": lambda r: "F:" + r.last_user_text().split("### raw\n")[1],
            },
        ]
    )
    result = vm.run(source, provider, imports=imports)
    assert result.status == "succeeded", result.error
    summary = provider.sent("^Summarize")[0].last_user_text()
    assert summary.startswith("Summarize F:owls and F:bats")
    assert "### result.sources\nok" in summary
    ns = result.run_dir / "imports" / "local--research"
    assert (ns / "program.prose").read_text() == LIBRARY
    assert (ns / "bindings" / "findings.md").exists() and (ns / "bindings" / "raw.md").exists()
    assert not (result.run_dir / "bindings" / "raw.md").exists()  # namespaces do not mix
    meta = (result.run_dir / "run.json").read_text()
    assert imports["research"].content_hash in meta


def test_invocation_errors_have_codes_and_locations(vm: Any) -> None:
    (vm.project / "research.prose").write_text(LIBRARY)
    cases = {
        'use "research.prose"\nlet r = nothere(topic: "x")\n': ("E025", "2:9"),
        'use "research.prose"\nlet r = research()\n': ("E026", "2:9"),
        'use "research.prose"\nlet r = research(topic: "x", depth: "y")\n': ("E027", "2:30"),
        'use "research.prose"\nlet r = research(topic: "x")\nsession "{r.nope}"\n': ("E028", "3:"),
        'use "research.prose"\nlet { findings, nope } = research(topic: "x")\n': ("E028", "2:"),
    }
    for source, (code, where) in cases.items():
        program = parse_text(source, str(vm.project / "main.prose")).program
        imports = load_imports(program, base_dir=vm.project, project_dir=vm.project)
        result = vm.run(source, vm.spy(), imports=imports)
        assert result.status == "failed", source
        assert code in (result.error or "") and f"main.prose:{where}" in (result.error or ""), (
            result.error
        )


def test_registry_fetch_is_cached_and_pinned(vm: Any, registry: tuple[str, list[str]]) -> None:
    base, hits = registry
    source = 'use "@alice/research" as research\noutput r = research(topic: "x")\n'
    program = parse_text(source, "main.prose").program
    imports = load_imports(program, base_dir=vm.project, project_dir=vm.project, registry=base)
    assert hits == ["/@alice/research"]
    loaded = imports["research"]
    assert loaded.namespace == "alice--research"
    pins = {loaded.spec: loaded.content_hash}
    # Offline, with the pin (what a resume does), the cached text is used; no request.
    again = load_imports(
        program,
        base_dir=vm.project,
        project_dir=vm.project,
        registry=base,
        pinned=pins,
        offline=True,
    )
    assert again["research"].text == LIBRARY and hits == ["/@alice/research"]
    # The checker can read contracts from the cache without the network.
    contract = cache_contracts(vm.project)("@alice/research", None)
    assert (
        contract is not None
        and contract.inputs == ("topic",)
        and contract.outputs == ("findings", "sources")
    )
    result = vm.run(source, vm.spy(), imports=imports)
    assert result.status == "succeeded"
    assert (result.run_dir / "imports" / "alice--research" / "outputs.json").exists()
    with pytest.raises(ImportFailed):
        load_imports(
            parse_text('use "@alice/missing"\nlet m = missing()\n', "m.prose").program,
            base_dir=vm.project,
            project_dir=vm.project,
            registry=base,
        )
    assert ImportCache(vm.project).latest("@alice/research") is not None


def test_unreachable_registry_falls_back_to_cache(vm: Any, registry: tuple[str, list[str]]) -> None:
    base, _ = registry
    program = parse_text('use "@alice/research"\nlet r = research(topic: "x")\n', "m.prose").program
    load_imports(program, base_dir=vm.project, project_dir=vm.project, registry=base)
    offline = load_imports(
        program, base_dir=vm.project, project_dir=vm.project, registry="http://127.0.0.1:9"
    )
    assert offline["research"].text == LIBRARY


def test_skill_imports_are_not_fetched(vm: Any) -> None:
    program = parse_text('use "@nobody/skill"\nsession "x"\n', "m.prose").program
    assert (
        load_imports(
            program, base_dir=vm.project, project_dir=vm.project, registry="http://127.0.0.1:9"
        )
        == {}
    )


def test_import_cycle_is_reported(vm: Any) -> None:
    (vm.project / "a.prose").write_text('use "b.prose"\nlet x = b()\n')
    (vm.project / "b.prose").write_text('use "a.prose"\nlet y = a()\n')
    program = parse_text('use "a.prose"\nlet z = a()\n', "main.prose").program
    with pytest.raises(ImportFailed, match="cycle"):
        load_imports(program, base_dir=vm.project, project_dir=vm.project)


def test_resume_reuses_imported_work(vm: Any) -> None:
    (vm.project / "research.prose").write_text(LIBRARY)
    source = 'use "research.prose"\nlet r = research(topic: "x")\noutput s = session "Use {r.findings}"\n'
    program = parse_text(source, str(vm.project / "main.prose")).program
    imports = load_imports(program, base_dir=vm.project, project_dir=vm.project)
    broken = vm.spy([{"match": "^Use", "answer": "x", "failures": ["error"]}])
    failed = vm.run(source, broken, imports=imports)
    assert failed.status == "failed"
    again = vm.spy()
    resumed = vm.resume(failed.run_dir, again, imports=imports)
    assert resumed.status == "succeeded"
    assert [p.split("\n")[0] for p in again.prompts()] == ["Use ok"]

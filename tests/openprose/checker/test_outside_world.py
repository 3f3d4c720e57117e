"""Checks that need the outside world: agent memory on disk (E018, W011) and imported programs'
contracts (E026-E028). They run when the information is at hand and otherwise say they are
deferred (I001, I002) — never a silent skip."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from openprose.contracts import ProgramContract, contract_of, local_contracts
from openprose.diagnostics import Diagnostic, Severity
from openprose.parser import parse_text

Check = Callable[..., list[Diagnostic]]


def found(diagnostics: list[Diagnostic]) -> list[tuple[str, int, int]]:
    return [(d.code, d.line, d.column) for d in diagnostics]


def remember(root: Path, *parts: str) -> None:
    """Create an agent memory file under ``root``."""
    directory = root.joinpath(*parts)
    directory.mkdir(parents=True)
    (directory / "memory.md").write_text("# Agent Memory\n", encoding="utf-8")


PROJECT_RESUME = "agent advisor:\n  persist: project\nresume: advisor\n"
PROJECT_SESSION = "agent advisor:\n  persist: project\nsession: advisor\n"


# --- agent memory ----------------------------------------------------------------------------


def test_resume_of_project_agent_without_project_dir_is_deferred(checked: Check) -> None:
    diagnostics = checked(PROJECT_RESUME)
    assert found(diagnostics) == [("I001", 3, 9)]
    note = diagnostics[0]
    assert note.severity is Severity.INFO
    assert note.message.startswith("whether 'advisor' has memory to resume is checked at run time")


def test_resume_of_project_agent_without_memory_on_disk(checked: Check, project: Path) -> None:
    diagnostics = checked(PROJECT_RESUME, project_dir=project)
    assert found(diagnostics) == [("E018", 3, 9)]
    assert str(project / ".prose" / "agents" / "advisor" / "memory.md") in diagnostics[0].message


def test_resume_of_project_agent_with_memory_on_disk(checked: Check, project: Path) -> None:
    remember(project, ".prose", "agents", "advisor")
    assert checked(PROJECT_RESUME, project_dir=project) == []


def test_session_of_project_agent_with_memory_on_disk_warns(checked: Check, project: Path) -> None:
    remember(project, ".prose", "agents", "advisor")
    assert found(checked(PROJECT_SESSION, project_dir=project)) == [("W011", 3, 10)]


def test_session_of_project_agent_without_memory_is_clean(checked: Check, project: Path) -> None:
    assert checked(PROJECT_SESSION, project_dir=project) == []


def test_session_of_project_agent_without_project_dir_is_deferred(checked: Check) -> None:
    diagnostics = checked(PROJECT_SESSION)
    assert found(diagnostics) == [("I001", 3, 10)]
    assert diagnostics[0].message.startswith("whether `session:` would ignore existing memory")


def test_user_memory_lives_in_the_home_directory(
    checked: Check, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    source = "agent inspector:\n  persist: user\nresume: inspector\n"
    # the disk is read only when the user names the project (issue 20 item 4)
    assert found(checked(source)) == [("I001", 3, 9)]
    assert found(checked(source, project_dir=tmp_path)) == [("E018", 3, 9)]
    remember(tmp_path, ".prose", "agents", "inspector")
    assert found(checked(source)) == [("I001", 3, 9)]
    assert checked(source, project_dir=tmp_path) == []


def test_custom_memory_path_is_relative_to_the_project(checked: Check, project: Path) -> None:
    source = 'agent shared:\n  persist: ".prose/custom/shared-agent/"\nresume: shared\n'
    assert found(checked(source)) == [("I001", 3, 9)]
    assert found(checked(source, project_dir=project)) == [("E018", 3, 9)]
    remember(project, ".prose", "custom", "shared-agent")
    assert checked(source, project_dir=project) == []


def test_execution_memory_exists_after_an_earlier_session_in_the_program(checked: Check) -> None:
    source = "agent captain:\n  persist: true\nsession: captain\nresume: captain\nresume: captain\n"
    assert checked(source) == []


def test_resume_in_a_block_counts_sessions_anywhere_in_the_program(checked: Check) -> None:
    source = (
        "agent captain:\n  persist: true\nblock follow-up:\n  resume: captain\n"
        "session: captain\ndo follow-up\n"
    )
    assert checked(source) == []
    lonely = "agent captain:\n  persist: true\nblock follow-up:\n  resume: captain\ndo follow-up\n"
    assert found(checked(lonely)) == [("E018", 4, 11)]


# --- imported programs -----------------------------------------------------------------------

LIBRARY = (
    'input topic: "What to research"\nif **deep research needed**:\n'
    '  output findings = session "Find"\noutput sources = session "Cite"\n'
)


def test_contract_of_collects_nested_inputs_and_outputs_in_order() -> None:
    contract = contract_of(parse_text(LIBRARY).program)
    assert (contract.inputs, contract.outputs) == (("topic",), ("findings", "sources"))


def write_library(directory: Path) -> Path:
    (directory / "lib").mkdir()
    library = directory / "lib" / "research.prose"
    library.write_text(LIBRARY, encoding="utf-8")
    return library


def test_local_import_contract_is_checked(checked: Check, tmp_path: Path) -> None:
    write_library(tmp_path)
    main = tmp_path / "main.prose"
    source = (
        'use "lib/research.prose" as research\n'
        'let r = research(depth: 2)\nsession "S"\n  context: r.summary\n'
    )
    assert found(checked(source, str(main))) == [("E026", 2, 9), ("E027", 2, 18), ("E028", 4, 14)]


def test_local_import_with_a_string_path_uses_the_project_dir(
    checked: Check, tmp_path: Path
) -> None:
    write_library(tmp_path)
    source = 'use "lib/research.prose" as research\nlet r = research(topic: "x")\n'
    assert checked(source, project_dir=tmp_path) == []
    diagnostics = checked(source)
    assert found(diagnostics) == [("I002", 1, 5)]
    assert "directory is unknown" in diagnostics[0].message


def test_missing_local_import_is_an_error_not_a_deferral(checked: Check, tmp_path: Path) -> None:
    source = 'use "lib/nothing.prose" as nothing\nlet r = nothing(topic: "x")\n'
    assert found(checked(source, str(tmp_path / "main.prose"))) == [("E170", 1, 5)]


def test_local_contracts_needs_a_base_for_relative_paths(tmp_path: Path) -> None:
    library = write_library(tmp_path)
    assert local_contracts("lib/research.prose", None) is None
    assert local_contracts("@alice/research", tmp_path) is None
    absolute = local_contracts(str(library), None)
    assert absolute is not None and absolute.inputs == ("topic",)


def test_uncached_registry_import_is_deferred_once(checked: Check) -> None:
    source = (
        'use "@alice/research" as research\nlet a = research(topic: "x")\n'
        'let b = research(topic: "y")\nsession "S"\n  context: a.anything\n'
    )
    diagnostics = checked(source)
    assert found(diagnostics) == [("I002", 1, 5)]
    assert diagnostics[0].message == (
        "the inputs and outputs of 'research' are checked at run time: the contract of "
        "'@alice/research' is unknown offline because its cache is in the project, and no "
        "project was found (no prose.toml, no .prose/ from a run; or --project-dir DIR)"
    )


def test_registry_import_missing_from_the_project_cache_is_deferred(
    checked: Check, project: Path
) -> None:
    source = 'use "@alice/research" as research\nlet a = research(topic: "x")\n'
    diagnostics = checked(source, project_dir=project)
    assert found(diagnostics) == [("I002", 1, 5)]
    assert "not in the project's import cache" in diagnostics[0].message


def test_cached_registry_import_is_checked_against_its_contract(
    checked: Check, project: Path
) -> None:
    # What `prose run` fetched is cached under .prose/imports/; with the project directory
    # known, E026-E028 run against that text instead of being deferred.
    from openprose.imports import Fetched, ImportCache, sha256_of

    text = 'input topic: "t"\noutput findings = session "Research {topic}"\n'
    ImportCache(project).store(
        Fetched("@alice/research", text, sha256_of(text), "https://p.prose.md/@alice/research")
    )
    source = (
        'use "@alice/research" as research\nlet a = research(color: "x")\n'
        'session "S"\n  context: a.sources\n'
    )
    assert found(checked(source, project_dir=project)) == [
        ("E026", 2, 9),
        ("E027", 2, 18),
        ("E028", 4, 14),
    ]
    assert checked('use "@alice/research" as research\nlet a = research(topic: "x")\n',
                   project_dir=project) == []  # fmt: skip


def test_imports_never_invoked_need_no_contract(checked: Check) -> None:
    source = 'use "@anthropic/web-search"\nagent a:\n  skills: ["web-search"]\n'
    assert checked(source) == []


def test_a_failing_lookup_is_reported_not_raised(checked: Check) -> None:
    def broken(path: str, base: Path | None) -> ProgramContract | None:
        raise OSError("cache unreadable")

    source = 'use "@alice/research" as research\nlet a = research(topic: "x")\n'
    diagnostics = checked(source, contracts=broken)
    assert found(diagnostics) == [("I002", 1, 5)]
    assert "cache unreadable" in diagnostics[0].message


def test_supplied_lookup_receives_the_importing_directory(checked: Check, tmp_path: Path) -> None:
    seen: list[tuple[str, Path | None]] = []

    def lookup(path: str, base: Path | None) -> ProgramContract | None:
        seen.append((path, base))
        return ProgramContract(("topic",), ("findings",))

    source = 'use "@alice/research" as research\nlet { findings, extra } = research(topic: "x")\n'
    assert found(checked(source, str(tmp_path / "main.prose"), contracts=lookup)) == [
        ("E028", 2, 17)
    ]
    assert seen == [("@alice/research", tmp_path)]


def test_unknown_output_in_interpolation_points_at_the_field(
    checked: Check, tmp_path: Path
) -> None:
    # `{r.summary}` is reported at `summary`, as `r.summary` is outside a string.
    write_library(tmp_path)
    source = (
        'use "lib/research.prose" as research\n'
        'let r = research(topic: "x")\nsession "see {r.summary} and {r.findings}"\n'
    )
    (diagnostic,) = checked(source, str(tmp_path / "main.prose"))
    assert diagnostic.code == "E028"
    span = (diagnostic.line, diagnostic.column, diagnostic.end_line, diagnostic.end_column)
    assert span == (3, 17, 3, 24)

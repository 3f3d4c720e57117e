"""The front end (scanner, parser, checker, compiler, formatter, imports...) stands on its own:
nothing in it imports the VM, the CLI or the providers — not even inside a function — so
checking a program can never pull in the machinery that runs one. And no two packages import
each other at any depth; only the CLI imports the CLI."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import openprose

PACKAGE = Path(openprose.__file__).parent
# What runs programs: the VM, the CLI, the providers, the run/batch API above them, and the
# web view of runs (`prose ui`); `__main__` is `python -m openprose`, the `prose` command itself.
BACK_END = ("vm", "cli", "providers", "api", "session", "batches", "ui", "testing", "__main__")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _front_end() -> list[Path]:
    return sorted(
        p
        for p in PACKAGE.rglob("*.py")
        if p.relative_to(PACKAGE).with_suffix("").parts[0] not in BACK_END
    )


def _imported(path: Path) -> set[str]:
    """Every module an import statement anywhere in `path` names (relative ones resolved),
    and every string that is a module name of ours (`importlib.import_module("...")`)."""
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path.parent)
    # The package's own __init__ names `openprose.api` in its table of lazy exports
    # (`openprose.run` loads it on first use); the fresh-interpreter test below proves that
    # importing the package loads none of it.
    lazy_table = path == PACKAGE / "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and not lazy_table:
            if re.fullmatch(r"openprose(\.\w+)+", node.value):
                found.add(node.value)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _is_back_end(module: str) -> bool:
    return any(
        module == f"openprose.{part}" or module.startswith(f"openprose.{part}.")
        for part in BACK_END
    )


def test_the_front_end_is_most_of_the_package() -> None:
    names = {_module_name(p) for p in _front_end()}
    assert {"openprose.parser", "openprose.checker", "openprose.imports"} <= names
    assert not any(_is_back_end(name) for name in names)


# The editor's inlay hints show the model an alias resolves to with the project's settings:
# the language server reads prose.toml's provider table (settings only, never a provider).
ALLOWED = {"openprose.lsp.inlay": ("openprose.providers.base", "openprose.providers.settings")}


def test_no_front_end_module_imports_the_vm() -> None:
    offenders = {
        name: sorted(
            m
            for m in _imported(path)
            # `m` is a module or a name imported from one
            if _is_back_end(m) and {m, m.rsplit(".", 1)[0]}.isdisjoint(ALLOWED.get(name, ()))
        )
        for path in _front_end()
        for name in [_module_name(path)]
    }
    assert {name: found for name, found in offenders.items() if found} == {}


def test_importing_and_using_the_front_end_loads_no_vm() -> None:
    # A fresh interpreter: importing every front-end module and checking a program that
    # uses an import leaves no VM, CLI or provider module loaded.
    names = [_module_name(p) for p in _front_end()]
    script = (
        "import importlib, sys, pathlib, tempfile\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "import openprose\n"
        "for name in openprose.__all__:\n"
        "    if openprose._LAZY.get(name) != 'openprose.api':  # the front end's exports\n"
        "        getattr(openprose, name)\n"
        "from openprose.checker import diagnose\n"
        "from openprose.parser import parse_text\n"
        "project = pathlib.Path(tempfile.mkdtemp())\n"
        "parsed = parse_text('use \"@a/b\" as b\\nlet x = b(topic: \"t\")\\n', 'main.prose')\n"
        "diagnose(parsed, project)\n"
        "loaded = [m for m in sys.modules if m.split('.')[:2] in "
        "(['openprose', 'vm'], ['openprose', 'cli'], ['openprose', 'providers'])]\n"
        "print(','.join(sorted(loaded)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == ""


def _edges() -> dict[str, set[str]]:
    """module -> the modules of ours it imports, anywhere in it (`from pkg import sub` is an
    edge to `pkg.sub` alone when `sub` is a module)."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                subs = [f"{node.module}.{a.name}" for a in node.names]
                subs = [s for s in subs if s in modules]
                targets = subs if len(subs) == len(node.names) else [node.module, *subs]
            edges[name].update(t for t in targets if t in modules and t != name)
    return edges


def test_no_import_cycles_between_modules() -> None:
    edges = _edges()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(edges[module]):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    assert cycles == []


# --- packages: no loop at any depth ------------------------------------------------------------

SOURCE_ROOT = PACKAGE.parent  # src/: openprose and the protocols beside it


def _room(module: str, root: Path) -> str:
    """The package a module belongs to, as `import-loops` counts them: its top package plus
    one level (`openprose.vm`, `openprose.imports`), or the top package alone (`vlp`)."""
    parts = module.split(".")
    if len(parts) >= 2 and (
        (root / parts[0] / parts[1]).is_dir() or (root / parts[0] / f"{parts[1]}.py").is_file()
    ):
        return ".".join(parts[:2])
    return parts[0]


def _package_edges(root: Path) -> dict[tuple[str, str], list[str]]:
    """(package, package it imports) -> where: every import statement in every module under
    `root`, those inside functions and under `if TYPE_CHECKING:` included."""
    edges: dict[tuple[str, str], list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).with_suffix("")
        parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
        module = ".".join(parts)
        package = module if relative.name == "__init__" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            sinks = {
                _room(target, root)
                for target in targets
                if target and (root / target.split(".")[0]).is_dir()  # not a dependency's
            }
            source = _room(module, root)
            for sink in sorted(sinks):
                # a package and its own subpackage are one room (cliconventions.completion)
                if not (
                    source == sink
                    or f"{sink}.".startswith(f"{source}.")
                    or f"{source}.".startswith(f"{sink}.")
                ):
                    where = f"{path.relative_to(root)}:{node.lineno}"
                    edges.setdefault((source, sink), []).append(where)
    return edges


def _loops(edges: dict[tuple[str, str], list[str]]) -> list[list[str]]:
    """The groups of packages that reach one another through imports (each group sorted)."""
    reach: dict[str, set[str]] = {}
    for source, sink in edges:
        reach.setdefault(source, set()).add(sink)
        reach.setdefault(sink, set())
    closure = {package: set(sinks) for package, sinks in reach.items()}
    changed = True
    while changed:  # transitive closure: a few dozen packages, a few rounds
        changed = False
        for package, sinks in closure.items():
            grown = sinks.union(*(closure[s] for s in sinks))
            if grown != sinks:
                closure[package], changed = grown, True
    groups = {
        tuple(sorted({package} | {o for o in closure[package] if package in closure[o]}))
        for package in closure
        if package in closure[package]
    }
    return sorted(list(group) for group in groups)


def test_no_package_imports_another_that_imports_it_back() -> None:
    edges = _package_edges(SOURCE_ROOT)
    # the walk sees the packages and the imports it is about (a function-level one included)
    assert ("openprose.cli", "openprose.session") in edges
    assert ("openprose.vm", "openprose.providers") in edges
    loops = _loops(edges)
    shown = {
        " <-> ".join(group): [
            f"{a} -> {b}: {edges[(a, b)][0]}" for a in group for b in group if (a, b) in edges
        ]
        for group in loops
    }
    assert shown == {}


def test_the_loop_finder_sees_an_import_hidden_in_a_function(tmp_path: Path) -> None:
    for name in ("top", "top/low", "top/high"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / "top" / "high" / "view.py").write_text("from top.low import core\n")
    (tmp_path / "top" / "low" / "core.py").write_text(
        "def late():\n    from ..high import view\n    return view\n"
    )
    (tmp_path / "top" / "alone.py").write_text("import top.low.core\n")
    edges = _package_edges(tmp_path)
    assert edges[("top.low", "top.high")] == ["top/low/core.py:2"]
    assert _loops(edges) == [["top.high", "top.low"]]


def test_nothing_outside_the_cli_imports_it() -> None:
    """The commands sit on top: the API, batches, the web view and the LSP use the
    application layer (`openprose.session`), never a command's module. `python -m openprose`
    (`__main__.py`) is the `prose` command, as `scripts/prose` is."""
    cli = PACKAGE / "cli"
    command = PACKAGE / "__main__.py"
    offenders = {
        _module_name(path): sorted(
            m for m in _imported(path) if m == "openprose.cli" or m.startswith("openprose.cli.")
        )
        for path in SOURCE_ROOT.rglob("*.py")
        if cli not in path.parents and path != command
    }
    assert {name: found for name, found in offenders.items() if found} == {}

"""Program contracts: the inputs a program needs and the outputs it gives back.

The checker uses them to validate invocations of imported programs (E026-E028). A contract can be
known offline when the import is a local ``.prose`` file or a program already cached under
``.prose/``; the VM supplies a lookup that knows its cache, ``local_contracts`` knows local files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from openprose import nodes as n


@dataclass(frozen=True, slots=True)
class ProgramContract:
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    path: Path | None = None
    # What its agents ask for beyond a remote program's cap (W180; `imports.ceiling_problems`).
    ceiling_problems: tuple[str, ...] = ()


# Given a `use` path string and the importing file's directory, the contract when it can be known
# without the network, else None.
ContractLookup = Callable[[str, Path | None], ProgramContract | None]


def is_local_path(use_path: str) -> bool:
    """A `use` path naming a program file on disk rather than a registry entry or URL."""
    return use_path.endswith(".prose") and "://" not in use_path


def contract_of(program: n.Program) -> ProgramContract:
    """Every ``input`` and ``output`` name the program declares, in source order."""
    inputs: list[str] = []
    outputs: list[str] = []
    for node in n.walk(program):  # inputs and outputs may sit in any body, at any depth
        if type(node) is n.Input:
            inputs.append(node.name.id)
        elif type(node) is n.Output:
            outputs.append(node.name.id)
    return ProgramContract(
        tuple(dict.fromkeys(inputs)),
        tuple(dict.fromkeys(outputs)),
        None if program.path.startswith("<") else Path(program.path),
    )


def local_contracts(use_path: str, base_dir: Path | None) -> ProgramContract | None:
    """The default lookup: contracts of local ``.prose`` files only."""
    if not is_local_path(use_path):
        return None
    file = Path(use_path)
    if not file.is_absolute():
        if base_dir is None:
            return None
        file = base_dir / file
    from openprose.parser import parse, read_source  # the parser never needs contracts

    source, _ = read_source(file)  # bounded: a huge file named by mistake is not read
    if source is None:
        return None
    return contract_of(parse(source).program)

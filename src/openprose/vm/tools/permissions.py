"""An agent's permissions (the reference's table) and how a resolved action is judged.

`read`, `write`, `execute`: a list of glob patterns, or `allow` / `deny` / `prompt`.
`bash`: `allow` / `deny` / `prompt`. `network`: those, or a list of host patterns, with
`deny:` host patterns that win over it (`network.NetworkRule`). A kind an agent does not
name is denied (least privilege), unless the project default (`prose.toml`
`[permissions]`) names it; `deny:` patterns of the default and the agent both hold.

Patterns are matched against the project-relative real path, as gitignore does: a pattern
without a `/` matches a name at any depth (`*.md`), one with a `/` is anchored at the
project root (`src/*.py`), a trailing `/` means the folder and everything below it, `**`
spans folders. A pattern also covers everything below what it matches (`docs` = `docs/**`).
A path outside the project matches only an absolute pattern that names it (`/data/**`).

Protected, at any depth and in any letter case: `.prose/` (journals, bindings, approvals,
memories) is never written by a tool and read only through a pattern that names it;
`.git/`, `prose.toml`, `prose.lock` and `pyproject.toml` are written only through a
pattern that names them (`write: [".git/hooks/"]`) — never through `allow`, `**` or `*.toml`.
The approval key (`approval_seal.key_folder`) is neither readable nor writable whatever a
pattern says.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Literal

from openprose.record.approval_seal import in_folder, real_key_folder
from openprose.vm.tools.mcp_grants import McpRule
from openprose.vm.tools.network import NetworkRule
from openprose.vm.tools.paths import (
    RUN_STATE,
    ResolvedPath,
    folded,
    installed_skill,
    protected_part,
)

__all__ = ["Mode", "PermissionError_", "Permissions", "glob_regex"]

Mode = Literal["allow", "deny", "prompt"]
MODES: tuple[str, ...] = ("allow", "deny", "prompt")
PATH_KINDS = ("read", "write", "execute")
SWITCH_KINDS = ("bash", "network")
HOST_KINDS = ("network", "deny")  # take a list of host patterns
KINDS = (*PATH_KINDS, *SWITCH_KINDS, "deny", "mcp")


class PermissionError_(ValueError):
    """A permissions table that cannot be understood (a project default in prose.toml)."""


STRICTNESS = {"deny": 0, "prompt": 1, "allow": 2}


def stricter(first: Mode, second: Mode) -> Mode:
    """The stricter of two modes (deny < prompt < allow): what an intersection allows."""
    return first if STRICTNESS[first] <= STRICTNESS[second] else second


@dataclass(frozen=True, slots=True)
class PathRule:
    mode: Mode | None  # a plain mode, or None when `patterns` decide
    patterns: tuple[str, ...] = ()
    ceiling: PathRule | None = None  # an import's cap: the stricter of the two decides

    @property
    def never(self) -> bool:
        own = self.mode == "deny" or (self.mode is None and not self.patterns)
        return own or (self.ceiling is not None and self.ceiling.never)

    def within(self, ceiling: PathRule) -> PathRule:
        capped = ceiling if self.ceiling is None else self.ceiling.within(ceiling)
        return PathRule(self.mode, self.patterns, capped)

    def judge(self, path: ResolvedPath, protected: str | None = None) -> Mode:
        """`protected`: the path's protected part, which a pattern must name literally."""
        own = self._own_judge(path, protected)
        if self.ceiling is None:
            return own
        return stricter(own, self.ceiling.judge(path, protected))

    def _own_judge(self, path: ResolvedPath, protected: str | None) -> Mode:
        if self.mode is not None:
            # A plain mode speaks for the project only; outside it, only absolute patterns;
            # and never for a protected path.
            return self.mode if path.inside and protected is None else "deny"
        for pattern in self.patterns:
            if protected is not None and protected not in map(folded, pattern.split("/")):
                continue
            if pattern.startswith("/"):
                if glob_regex(pattern).fullmatch(str(path.real)):
                    return "allow"
            elif path.relative is not None and glob_regex(pattern).fullmatch(path.relative):
                return "allow"
        return "deny"


@dataclass(frozen=True, slots=True)
class Permissions:
    read: PathRule = field(default_factory=lambda: PathRule("deny"))
    write: PathRule = field(default_factory=lambda: PathRule("deny"))
    execute: PathRule = field(default_factory=lambda: PathRule("deny"))
    bash: Mode = "deny"
    network: NetworkRule = field(default_factory=lambda: NetworkRule("deny"))
    mcp: McpRule = field(default_factory=lambda: McpRule("deny"))  # MCP servers' tools
    ceilings: tuple[Mapping[str, Any], ...] = ()  # the caps of the imports it runs under
    # The approval key's folder, never reached by a file tool (looked up once, not per path).
    key_folder: str = field(default_factory=lambda: str(real_key_folder()))

    @classmethod
    def from_mapping(
        cls, rules: Mapping[str, Any], default: Mapping[str, Any] | None = None
    ) -> Permissions:
        """From an agent's `permissions:` rules over the project default. Unknown kinds
        (the checker's W008) are ignored; an unknown value denies."""
        merged = {**(default or {}), **rules}
        denied = [*_listed((default or {}).get("deny")), *_listed(rules.get("deny"))]
        return cls(
            read=_path_rule(merged.get("read")),
            write=_path_rule(merged.get("write")),
            execute=_path_rule(merged.get("execute")),
            bash=_mode(merged.get("bash")),
            network=NetworkRule.from_values(merged.get("network"), denied),
            mcp=McpRule.from_value(merged.get("mcp")),
        )

    def within(self, ceiling: Mapping[str, Any]) -> Permissions:
        """Capped by an import's ceiling (`use`d programs): each kind the ceiling names
        becomes the intersection of both; a kind it does not name is left as it is."""
        cap = Permissions.from_mapping(ceiling)
        network = self.network
        if "network" in ceiling:
            network = network.within(cap.network)
        elif cap.network.deny:
            network = replace(network, deny=(*network.deny, *cap.network.deny))
        return Permissions(
            read=self.read.within(cap.read) if "read" in ceiling else self.read,
            write=self.write.within(cap.write) if "write" in ceiling else self.write,
            execute=self.execute.within(cap.execute) if "execute" in ceiling else self.execute,
            bash=stricter(self.bash, cap.bash) if "bash" in ceiling else self.bash,
            network=network,
            mcp=self.mcp.within(cap.mcp) if "mcp" in ceiling else self.mcp,
            ceilings=(*self.ceilings, dict(ceiling)),
        )

    def within_all(self, ceilings: Iterable[Mapping[str, Any]]) -> Permissions:
        capped = self
        for ceiling in ceilings:
            capped = capped.within(ceiling)
        return capped

    def judge_path(self, kind: str, path: ResolvedPath) -> Mode:
        rule: PathRule = getattr(self, kind)
        if in_folder(path.real, self.key_folder):
            return "deny"  # the key that seals approvals: no pattern reaches it
        protected = protected_part(path)
        if protected == RUN_STATE and kind != "read":
            return "deny"  # the run's own state: never changed or run by a tool
        if protected == RUN_STATE and installed_skill(path):
            protected = None  # a downloaded skill's files: read as the permissions say
        if protected is not None and protected != RUN_STATE and kind == "read":
            protected = None  # git's folder and the settings files may be read as usual
        return rule.judge(path, protected)

    def to_dict(self) -> dict[str, Any]:
        def rule(r: PathRule) -> Any:
            return r.mode if r.mode is not None else list(r.patterns)

        shown = {
            "read": rule(self.read),
            "write": rule(self.write),
            "execute": rule(self.execute),
            "bash": self.bash,
            "network": self.network.describe(),
        }
        if not self.mcp.never:
            shown["mcp"] = self.mcp.shown()
        if self.network.deny:
            shown["deny"] = [p.text for p in self.network.deny]
        return shown


def validate_default(table: Any, source: str, name: str = "[permissions]") -> dict[str, Any]:
    """A `[permissions]` table (or another table of the same keys, `name`) from prose.toml,
    checked: a usage error names the bad key."""
    if not isinstance(table, dict):
        raise PermissionError_(f"{source}: {name} must be a table")
    for key, value in table.items():
        if key not in KINDS:
            raise PermissionError_(
                f"{source}: unknown permission {key!r} in {name}; known: {', '.join(KINDS)}"
            )
        ok_list = key in (*PATH_KINDS, *HOST_KINDS, "mcp") and isinstance(value, list)
        if ok_list and all(isinstance(p, str) for p in value):
            continue
        if key == "deny" or value not in MODES:
            expected = (
                "a list of host patterns"
                if key == "deny"
                else "allow, deny, prompt"
                + (" or a list of patterns" if key in PATH_KINDS else "")
                + (" or a list of host patterns" if key == "network" else "")
                + (
                    ' or a list of server grants (["notes", "search.lookup"])'
                    if key == "mcp"
                    else ""
                )
            )
            raise PermissionError_(f"{source}: {name} {key} must be {expected}, got {value!r}")
    return dict(table)


def _listed(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _mode(value: Any) -> Mode:
    return value if value in MODES else "deny"


def _path_rule(value: Any) -> PathRule:
    if isinstance(value, str) and value in MODES:
        return PathRule(value)  # type: ignore[arg-type]
    if isinstance(value, str):
        value = [value]
    if isinstance(value, list):
        return PathRule(None, tuple(str(p) for p in value if isinstance(p, str) and p.strip()))
    return PathRule("deny")


@lru_cache(maxsize=512)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A compiled regex for one permission pattern (see the module docstring)."""
    absolute = pattern.startswith("/")
    body = pattern.strip()
    if not absolute:
        while body.startswith("./"):
            body = body[2:]
    if body.endswith("/"):
        body = body.rstrip("/") + "/**"
    anchored = absolute or "/" in body.rstrip("/")
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if body.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif body.startswith("**", i):
            out.append(".*")
            i += 2
        elif ch == "*":
            out.append("[^/]*")
            i += 1
        elif ch == "?":
            out.append("[^/]")
            i += 1
        elif ch == "[":
            end = body.find("]", i + 2)
            if end == -1:
                out.append(re.escape(ch))
                i += 1
            else:
                inner = body[i + 1 : end].replace("\\", "\\\\")
                if inner.startswith("!"):
                    inner = "^" + inner[1:]
                out.append(f"(?!/)[{inner}]")
                i = end + 1
        else:
            out.append(re.escape(ch))
            i += 1
    core = "".join(out)
    prefix = "" if anchored else "(?:.*/)?"
    return re.compile(f"{prefix}{core}(?:/.*)?", re.DOTALL)

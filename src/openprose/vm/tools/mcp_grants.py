"""Which MCP tools an agent is granted: its `mcp:` permission.

Written like the other kinds of the permissions table: `allow` (every tool of every server
the project declares), `prompt` (the same, each call asked), `deny` (none; the default), or
a list of grants — `"notes"` (every tool of the server `notes`), `"notes.search"` (one tool),
`"notes.get_*"` (a glob over tool names).
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Literal

__all__ = ["McpRule", "grant_parts"]

Mode = Literal["allow", "deny", "prompt"]
_STRICTNESS = {"deny": 0, "prompt": 1, "allow": 2}


def grant_parts(grant: str) -> tuple[str, str]:
    """(server, tool pattern) of one grant: `notes` -> (notes, *), `notes.search` -> both."""
    server, dot, tool = grant.partition(".")
    return server, (tool if dot and tool else "*")


@dataclass(frozen=True, slots=True)
class McpRule:
    mode: Mode | None  # a plain mode, or None when `grants` decide
    grants: tuple[str, ...] = ()
    ceiling: McpRule | None = None  # an import's cap: the stricter of the two decides

    @classmethod
    def from_value(cls, value: Any) -> McpRule:
        if value in ("allow", "deny", "prompt"):
            return cls(value)
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list):
            return cls(None, tuple(g.strip() for g in value if isinstance(g, str) and g.strip()))
        return cls("deny")  # an unknown value denies

    @property
    def never(self) -> bool:
        own = self.mode == "deny" or (self.mode is None and not self.grants)
        return own or (self.ceiling is not None and self.ceiling.never)

    def within(self, ceiling: McpRule) -> McpRule:
        capped = ceiling if self.ceiling is None else self.ceiling.within(ceiling)
        return McpRule(self.mode, self.grants, capped)

    def servers(self, declared: list[str]) -> list[str]:
        """The declared servers this rule may grant a tool of (started for the session)."""
        return [s for s in declared if self._may_reach(s)]

    def _may_reach(self, server: str) -> bool:
        own = self.mode in ("allow", "prompt") or any(
            grant_parts(g)[0] == server for g in self.grants
        )
        return own and (self.ceiling is None or self.ceiling._may_reach(server))

    def judge(self, server: str, tool: str) -> Mode:
        own: Mode = self.mode or (
            "allow"
            if any(s == server and fnmatchcase(tool, t) for s, t in map(grant_parts, self.grants))
            else "deny"
        )
        if self.ceiling is None:
            return own
        capped = self.ceiling.judge(server, tool)
        return own if _STRICTNESS[own] <= _STRICTNESS[capped] else capped

    def shown(self) -> Any:
        return self.mode if self.mode is not None else list(self.grants)

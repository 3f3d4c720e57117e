"""The tool registry: one row per tool an agent can be offered.

A row holds what the model is shown (the tool's name, description and JSON Schema), the
permission kind that decides whether the tool is offered at all, whether a call changes
something (such calls run alone, in order; `toolloop`), and the handler that runs a call.
The built-in tools are rows of this table; each MCP server's tools become rows of the same
kind when a session starts (`mcp_tools`), so the tool loop, the journal, approvals and the
output cap treat both alike.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from openprose.providers.base import ToolCall, ToolSpec
from openprose.vm.tools.permissions import Permissions

__all__ = [
    "BUILTINS",
    "BUILTIN_SPECS",
    "BuiltinTool",
    "Handler",
    "ToolFailed",
    "ToolRow",
    "builtin_offered",
]

# handler(call, call_key) -> the result text; raises what `Toolbox` turns into error results
Handler = Callable[[ToolCall, str], Awaitable[str]]


class ToolFailed(Exception):
    """Raised by a handler: ends the call with an error result the model sees."""


@dataclass(frozen=True, slots=True)
class ToolRow:
    spec: ToolSpec
    permission: str  # the permission kind that grants it: read, write, ..., skill, mcp
    handler: Handler
    mutating: bool  # run alone and in order, never beside another call


@dataclass(frozen=True, slots=True)
class BuiltinTool:
    """A built-in tool before it is bound to one session's toolbox."""

    spec: ToolSpec
    permission: str
    mutating: bool


def builtin_offered(permission: str, rules: Permissions, has_skills: bool) -> bool:
    """Whether a built-in tool needing `permission` is offered at all under `rules`."""
    if permission == "read":
        return not rules.read.never
    if permission == "write":
        return not rules.write.never
    if permission == "execute":  # run_command: a shell (`bash`) or listed programs
        return rules.bash != "deny" or not rules.execute.never
    if permission == "network":
        return not rules.network.never
    if permission == "skill":
        return has_skills
    return False


def _builtin(name: str, permission: str, *, mutating: bool = False) -> BuiltinTool:
    return BuiltinTool(BUILTIN_SPECS[name], permission, mutating)


_OBJ = "object"
BUILTIN_SPECS: dict[str, ToolSpec] = {
    "read_file": ToolSpec(
        "read_file",
        "Read a text file of the project. Lines start at 1; `offset` is the first line to "
        "read and `limit` how many lines.",
        {
            "type": _OBJ,
            "properties": {
                "path": {"type": "string"},
                "offset": {"type": "integer", "minimum": 1},
                "limit": {"type": "integer", "minimum": 1},
            },
            "required": ["path"],
        },
    ),
    "list_files": ToolSpec(
        "list_files",
        "List the project's files whose paths match a glob (`**` spans folders).",
        {"type": _OBJ, "properties": {"pattern": {"type": "string"}}, "required": []},
    ),
    "search_files": ToolSpec(
        "search_files",
        "Search file contents with a regular expression; answers `path:line: text` lines. "
        "`pattern` limits the files searched (a glob).",
        {
            "type": _OBJ,
            "properties": {"regex": {"type": "string"}, "pattern": {"type": "string"}},
            "required": ["regex"],
        },
    ),
    "write_file": ToolSpec(
        "write_file",
        "Write a whole file (created, or replaced atomically).",
        {
            "type": _OBJ,
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    ),
    "edit_file": ToolSpec(
        "edit_file",
        "Replace exact text in a file: `old_text` must occur exactly once unless "
        "`replace_all` is true.",
        {
            "type": _OBJ,
            "properties": {
                "path": {"type": "string"},
                "old_text": {"type": "string"},
                "new_text": {"type": "string"},
                "replace_all": {"type": "boolean"},
            },
            "required": ["path", "old_text", "new_text"],
        },
    ),
    "run_command": ToolSpec(
        "run_command",
        "Run a shell command in a sandbox at the project root; answers its exit code, "
        "stdout and stderr.",
        {
            "type": _OBJ,
            "properties": {
                "command": {"type": "string"},
                "timeout_seconds": {"type": "integer", "minimum": 1},
            },
            "required": ["command"],
        },
    ),
    "fetch_url": ToolSpec(
        "fetch_url",
        "GET a web page (http/https); HTML comes back as text.",
        {"type": _OBJ, "properties": {"url": {"type": "string"}}, "required": ["url"]},
    ),
    "load_skill": ToolSpec(
        "load_skill",
        "Load the full instructions of one of your skills by name.",
        {"type": _OBJ, "properties": {"name": {"type": "string"}}, "required": ["name"]},
    ),
}

# The built-in tools, in the order they are offered.
BUILTINS: Mapping[str, BuiltinTool] = {
    tool.spec.name: tool
    for tool in (
        _builtin("read_file", "read"),
        _builtin("list_files", "read"),
        _builtin("search_files", "read"),
        _builtin("write_file", "write", mutating=True),
        _builtin("edit_file", "write", mutating=True),
        _builtin("run_command", "execute", mutating=True),
        _builtin("fetch_url", "network"),
        _builtin("load_skill", "skill"),
    )
}

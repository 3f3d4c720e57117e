"""The built-in tools of one agent's session, offered and checked by its permissions.

A tool is offered only when the permissions allow it at all; a call of a tool that was not
offered (or of an unknown one) is refused like any other denied action. Every permission
decision goes to `on_decision` (the journal) as it is taken.
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import stat
from collections.abc import Callable, Mapping, MutableSet
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openprose.providers.base import ToolCall, ToolSpec
from openprose.vm.tools.approval_seal import KeyUnavailable, action_digest, key_folder_within
from openprose.vm.tools.approvals import ApprovalRequest, Approver, NobodyApprover
from openprose.vm.tools.paths import (
    PathRefused,
    ResolvedPath,
    open_beneath,
    resolve_path,
    write_atomically,
)
from openprose.vm.tools.permissions import PathRule, Permissions, glob_regex
from openprose.vm.tools.sandbox import SYSTEM_DIRS, Sandbox, SandboxUnavailable
from openprose.vm.tools.skills import Skill

__all__ = ["ToolLimits", "ToolOutcome", "Toolbox"]

SKIPPED_DIRS = {".prose", ".git"}
BINARY_SNIFF = 8192
MAX_READ_BYTES = 16 * 1024 * 1024
MAX_LISTED = 1000
MAX_MATCHES = 500
MAX_SEARCHED_FILE = 2 * 1024 * 1024

_SYSTEM_ROOTS = tuple(Path(d) for d in SYSTEM_DIRS)

Decision = Callable[[dict[str, Any]], None]
_recorder: ContextVar[Decision | None] = ContextVar("tool_decisions", default=None)


@dataclass(frozen=True, slots=True)
class ToolLimits:
    output_cap: int = 64 * 1024  # bytes of one tool result the model sees
    command_timeout: float = 60.0  # seconds, the most a command may ask for
    fetch_cap: int = 1024 * 1024  # bytes of a fetched body
    fetch_timeout: float = 20.0
    read_lines: int = 2000  # lines read_file returns without a `limit`


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    content: str
    is_error: bool = False
    omitted_bytes: int = 0  # cut by the output cap


class _Refused(Exception):
    """Ends a tool call with an error result the model sees."""


@dataclass
class Toolbox:
    root: Path
    permissions: Permissions
    agent: str | None = None
    skills: Mapping[str, Skill] = field(default_factory=dict)
    approver: Approver = field(default_factory=NobodyApprover)
    limits: ToolLimits = field(default_factory=ToolLimits)
    on_decision: Decision | None = None
    grants: MutableSet[tuple[str, str]] = field(default_factory=set)  # "allow for this run"
    # Seals an "allow for this run" given here, so a resume can tell it from a forged line.
    seal_grant: Callable[[str, str], str] | None = None

    def __post_init__(self) -> None:
        self.root = Path(os.path.realpath(self.root))
        self.specs: tuple[ToolSpec, ...] = tuple(
            spec for name, spec in _SPECS.items() if self._offered(name)
        )
        self._names = {spec.name for spec in self.specs}

    def _offered(self, name: str) -> bool:
        p = self.permissions
        if name in ("read_file", "list_files", "search_files"):
            return not p.read.never
        if name in ("write_file", "edit_file"):
            return not p.write.never
        if name == "run_command":
            return p.bash != "deny" or not p.execute.never
        if name == "fetch_url":
            return not p.network.never
        if name == "load_skill":
            return bool(self.skills)
        return False

    # --- the one entry point -------------------------------------------------------------

    async def call(
        self, call: ToolCall, call_key: str = "", *, on_decision: Decision | None = None
    ) -> ToolOutcome:
        """Run one tool call; every failure is an error result, never an exception (except
        ApprovalPending and cancellation, which stop the session). Decisions go to
        `on_decision` (else the toolbox's own), so concurrent calls keep theirs apart."""
        token = _recorder.set(on_decision or self.on_decision)
        try:
            return await self._call(call, call_key)
        finally:
            _recorder.reset(token)

    async def _call(self, call: ToolCall, call_key: str) -> ToolOutcome:
        if call.name not in self._names:
            self._decide(call, "tool", call.name, "denied", "not offered to this agent")
            offered = ", ".join(sorted(self._names)) or "none"
            return ToolOutcome(
                f"tool {call.name!r} is not available to this agent (its tools: {offered})",
                is_error=True,
            )
        handler = getattr(self, f"_tool_{call.name}")
        try:
            content: str = await handler(call, call_key or call.id)
        except _Refused as refusal:
            return self._capped(str(refusal), is_error=True)
        except PathRefused as refusal:
            self._decide(call, "path", "", "refused", str(refusal))
            return self._capped(str(refusal), is_error=True)
        except (TypeError, ValueError) as exc:
            return self._capped(f"bad arguments for {call.name}: {exc}", is_error=True)
        except OSError as exc:
            return self._capped(f"{call.name} failed: {exc.strerror or exc}", is_error=True)
        return self._capped(content)

    def _capped(self, content: str, *, is_error: bool = False) -> ToolOutcome:
        data = content.encode("utf-8", errors="replace")
        cap = self.limits.output_cap
        if len(data) <= cap:
            return ToolOutcome(content, is_error)
        omitted = len(data) - cap
        kept = data[:cap].decode("utf-8", errors="ignore")
        note = f"\n[VM: {omitted} more bytes of this result were cut (cap {cap} bytes)]"
        return ToolOutcome(kept + note, is_error, omitted)

    # --- permission gate -----------------------------------------------------------------

    def _decide(
        self,
        call: ToolCall,
        kind: str,
        action: str,
        result: str,
        why: str,
        scope: str = "",
        seal: str = "",
    ) -> None:
        record = _recorder.get()
        if record is not None:
            fields = {
                "call_id": call.id,
                "tool": call.name,
                "kind": kind,
                "action": action,
                "decision": result,
                "reason": why,
            }
            if scope:
                fields["scope"] = scope  # "run": remembered by a resume too
            if seal:
                fields["seal"] = seal
            record(fields)

    async def _gate(
        self, call: ToolCall, call_key: str, kind: str, mode: str, action: str, why: str = ""
    ) -> None:
        if mode == "allow":
            self._decide(call, kind, action, "allowed", "permitted by the agent's permissions")
            return
        if mode == "prompt":
            if (kind, action) in self.grants:
                self._decide(call, kind, action, "allowed", "approved earlier for this run")
                return
            digest = action_digest(call.name, kind, action, call.arguments)
            request = ApprovalRequest(
                f"{call_key}:{kind}", kind, action, call.name, self.agent, digest
            )
            self._decide(call, kind, action, "asked", request.describe())
            answer = await self.approver.ask(request)
            if answer == "run":
                self.grants.add((kind, action))
            if answer in ("once", "run"):
                scope = "for this run" if answer == "run" else "once"
                seal = self._seal_of(kind, action) if answer == "run" else ""
                self._decide(call, kind, action, "approved", f"approved {scope}", answer, seal)
                return
            self._decide(call, kind, action, "denied", "denied by the person asked")
            raise _Refused(
                f"permission denied: the person asked refused to let you {kind} {action}"
            )
        reason = why or self._rule_text(kind)
        self._decide(call, kind, action, "denied", reason)
        raise _Refused(f"permission denied: {kind} {action} is not allowed ({reason})")

    def _seal_of(self, kind: str, action: str) -> str:
        if self.seal_grant is None:
            return ""
        try:
            return self.seal_grant(kind, action)
        except KeyUnavailable:
            return ""  # the grant holds for this attempt; a resume asks again

    def _rule_text(self, kind: str) -> str:
        value = self.permissions.to_dict()[kind]
        text = f"this agent's permissions: {kind}: {_shown(value)}"
        caps = [c[kind] for c in self.permissions.ceilings if kind in c]
        if caps:  # an imported program's agent: what its import is granted caps it
            text += ", capped by its import's grant " + " and ".join(map(_shown, caps))
        return text

    async def _path(self, call: ToolCall, key: str, kind: str, raw: Any) -> ResolvedPath:
        if not isinstance(raw, str):
            raise TypeError("`path` must be a string")
        resolved = resolve_path(self.root, raw)
        mode = self.permissions.judge_path(kind, resolved)
        await self._gate(call, key, kind, mode, resolved.shown())
        return resolved

    # --- file tools ----------------------------------------------------------------------

    async def _tool_read_file(self, call: ToolCall, key: str) -> str:
        args = call.arguments
        path = await self._path(call, key, "read", args.get("path"))
        offset = _int(args, "offset", 1, minimum=1)
        limit = _int(args, "limit", self.limits.read_lines, minimum=1)
        data = _read_bytes(path)
        if b"\x00" in data[:BINARY_SNIFF]:
            return f"{path.shown()} is a binary file ({len(data)} bytes); not shown"
        lines = data.decode("utf-8", errors="replace").splitlines(keepends=True)
        chosen = lines[offset - 1 : offset - 1 + limit]
        text = "".join(chosen)
        last = offset - 1 + len(chosen)
        if offset > 1 or last < len(lines):
            text += f"\n[VM: lines {offset}-{last} of {len(lines)}; ask with offset for more]"
        return text

    async def _tool_list_files(self, call: ToolCall, key: str) -> str:
        pattern = call.arguments.get("pattern") or "**"
        if not isinstance(pattern, str):
            raise TypeError("`pattern` must be a string")
        if pattern.startswith("/") or ".." in pattern.split("/"):
            raise _Refused("list_files lists files inside the project: give a relative pattern")
        matcher = glob_regex(pattern)
        found = [rel for rel, mode in await asyncio.to_thread(self._walk) if mode != "deny"]
        listed = [rel for rel in found if matcher.fullmatch(rel)]
        self._decide(call, "read", f"list {pattern}", "allowed", "names of readable files only")
        if not listed:
            return f"no readable files match {pattern!r}"
        shown = listed[:MAX_LISTED]
        more = len(listed) - len(shown)
        return "\n".join(shown) + (f"\n[VM: {more} more files not listed]" if more else "")

    async def _tool_search_files(self, call: ToolCall, key: str) -> str:
        args = call.arguments
        regex = args.get("regex")
        pattern = args.get("pattern") or "**"
        if not isinstance(regex, str) or not isinstance(pattern, str):
            raise TypeError("`regex` (and `pattern`, when given) must be strings")
        try:
            compiled = re.compile(regex)
        except re.error as exc:
            raise _Refused(f"bad regex {regex!r}: {exc}") from None
        if pattern.startswith("/") or ".." in pattern.split("/"):
            raise _Refused("search_files searches inside the project: give a relative pattern")
        matcher = glob_regex(pattern)
        self._decide(
            call, "read", f"search {regex!r} in {pattern}", "allowed", "readable files only"
        )
        return await asyncio.to_thread(self._search, compiled, matcher)

    def _walk(self) -> list[tuple[str, str]]:
        """(project-relative path, read mode) of every file, symlinks not followed."""
        out: list[tuple[str, str]] = []
        for folder, dirs, files in os.walk(self.root):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
            base = Path(folder)
            for name in sorted(files):
                full = base / name
                if full.is_symlink():
                    continue
                rel = full.relative_to(self.root).as_posix()
                resolved = ResolvedPath(rel, full, rel)
                out.append((rel, self.permissions.judge_path("read", resolved)))
        return out

    def _search(self, regex: re.Pattern[str], matcher: re.Pattern[str]) -> str:
        hits: list[str] = []
        skipped = 0
        for rel, mode in self._walk():
            if not matcher.fullmatch(rel):
                continue
            if mode != "allow":
                skipped += mode == "prompt"
                continue
            try:
                data = _read_bytes(ResolvedPath(rel, self.root / rel, rel), MAX_SEARCHED_FILE)
            except (OSError, PathRefused):
                continue
            if b"\x00" in data[:BINARY_SNIFF]:
                continue
            for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
                if regex.search(line[:2000]):
                    hits.append(f"{rel}:{number}: {line[:300]}")
                    if len(hits) >= MAX_MATCHES:
                        return "\n".join(hits) + f"\n[VM: stopped at {MAX_MATCHES} matches]"
        note = f"\n[VM: {skipped} files that need approval were not searched]" if skipped else ""
        return ("\n".join(hits) if hits else "no matches") + note

    async def _tool_write_file(self, call: ToolCall, key: str) -> str:
        args = call.arguments
        content = args.get("content")
        if not isinstance(content, str):
            raise TypeError("`content` must be a string")
        path = await self._path(call, key, "write", args.get("path"))
        data = content.encode("utf-8")
        await asyncio.to_thread(write_atomically, path, data)
        return f"wrote {len(data)} bytes to {path.shown()}"

    async def _tool_edit_file(self, call: ToolCall, key: str) -> str:
        args = call.arguments
        old, new = args.get("old_text"), args.get("new_text")
        if not isinstance(old, str) or not isinstance(new, str) or not old:
            raise TypeError("`old_text` (not empty) and `new_text` must be strings")
        path = await self._path(call, key, "write", args.get("path"))
        text = _read_bytes(path).decode("utf-8", errors="strict")
        count = text.count(old)
        if count == 0:
            raise _Refused(f"old_text was not found in {path.shown()}; nothing changed")
        if count > 1 and not args.get("replace_all"):
            raise _Refused(
                f"old_text occurs {count} times in {path.shown()}; give more surrounding text "
                f"or set replace_all; nothing changed"
            )
        await asyncio.to_thread(write_atomically, path, text.replace(old, new).encode("utf-8"))
        return f"replaced {count} occurrence(s) in {path.shown()}"

    # --- commands, web, skills -----------------------------------------------------------

    async def _tool_run_command(self, call: ToolCall, key: str) -> str:
        args = call.arguments
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            raise TypeError("`command` must be a non-empty string")
        timeout = min(
            float(_int(args, "timeout_seconds", int(self.limits.command_timeout), minimum=1)),
            self.limits.command_timeout,
        )
        if self.permissions.bash != "deny":
            await self._gate(call, key, "bash", self.permissions.bash, command)
            argv = ["/bin/sh", "-c", command]
        else:
            try:
                argv = shlex.split(command)
            except ValueError as exc:
                raise _Refused(f"cannot split the command: {exc}") from None
            program = await self._path(call, key, "execute", argv[0])
            argv[0] = str(program.real)
        sandbox = Sandbox(
            self.root,
            writable=self._writable_folders(),
            network=self.permissions.network.unrestricted,
            # The approval key too, should it lie in a folder the sandbox mounts.
            hidden=(self.root / ".prose", *key_folder_within((self.root, *_SYSTEM_ROOTS))),
        )
        try:
            result = await sandbox.run(argv, timeout=timeout, output_cap=self.limits.output_cap)
        except SandboxUnavailable as exc:
            self._decide(call, "sandbox", command, "refused", str(exc))
            raise _Refused(f"the command was not run: {exc}") from None
        status = (
            f"killed after {timeout:g} s (time limit)"
            if result.timed_out
            else f"exit code {result.exit_code}"
        )
        parts = [status]
        if result.stdout:
            parts.append("--- stdout ---\n" + result.stdout.decode("utf-8", "replace"))
        if result.stderr:
            parts.append("--- stderr ---\n" + result.stderr.decode("utf-8", "replace"))
        if result.omitted_bytes:
            parts.append(f"[VM: {result.omitted_bytes} more bytes of output were cut]")
        return "\n".join(parts)

    def _writable_folders(self) -> tuple[Path, ...]:
        rule: PathRule | None = self.permissions.write
        folders = self._whole_folders(self.permissions.write)
        while (rule := rule.ceiling if rule else None) is not None:  # an import's cap
            folders = _common_folders(folders, self._whole_folders(rule))
        return folders

    def _whole_folders(self, rule: PathRule) -> tuple[Path, ...]:
        if rule.mode == "allow":
            return (self.root,)
        folders = []
        for pattern in rule.patterns:
            folder = _whole_folder(pattern)
            if folder is None:
                continue
            base = Path(folder) if folder.startswith("/") else self.root / folder
            real = Path(os.path.realpath(base))
            if not folder.startswith("/") and not real.is_relative_to(self.root):
                continue  # a symlinked folder pointing out of the project grants nothing
            if real.is_relative_to(self.root / ".prose"):
                continue
            if not real.exists() and real.is_relative_to(self.root):
                real.mkdir(parents=True, exist_ok=True)
            folders.append(real)
        return tuple(folders)

    async def _tool_fetch_url(self, call: ToolCall, key: str) -> str:
        from openprose.vm.tools.web import FetchError, fetch

        url = call.arguments.get("url")
        if not isinstance(url, str):
            raise TypeError("`url` must be a string")
        rule = self.permissions.network
        came_from = [url]

        async def permit(target: str, hop: int) -> None:
            # Every redirect target is judged (and asked about) like the URL itself.
            mode, why = rule.judge(target)
            if hop:
                why = f"{why}; redirected from {came_from[-1]}"
                came_from.append(target)
            await self._gate(call, f"{key}~r{hop}" if hop else key, "network", mode, target, why)

        try:
            fetched = await fetch(
                url,
                max_bytes=self.limits.fetch_cap,
                timeout=self.limits.fetch_timeout,
                rule=rule,
                permit=permit,
            )
        except FetchError as exc:
            self._decide(call, "network", came_from[-1], "refused", str(exc))
            raise _Refused(str(exc)) from None
        note = (
            f"\n[VM: {fetched.omitted_bytes}+ more bytes not downloaded (cap {self.limits.fetch_cap})]"
            if fetched.omitted_bytes
            else ""
        )
        moved = f" (redirected to {fetched.url})" if fetched.url != url else ""
        return f"HTTP {fetched.status} {fetched.content_type}{moved}\n\n{fetched.text}{note}"

    async def _tool_load_skill(self, call: ToolCall, key: str) -> str:
        name = call.arguments.get("name")
        skill = self.skills.get(name) if isinstance(name, str) else None
        if skill is None:
            raise _Refused(f"no skill {name!r}; this agent's skills: {', '.join(self.skills)}")
        self._decide(call, "skill", skill.name, "allowed", "one of the agent's skills")
        files = sorted(
            p.relative_to(skill.folder).as_posix()
            for p in skill.folder.rglob("*")
            if p.is_file() and p.name != "SKILL.md"
        )
        try:
            where = skill.folder.relative_to(self.root).as_posix()
        except ValueError:
            where = str(skill.folder)
        listing = "\n".join(f"- {where}/{f}" for f in files) or "(none)"
        return (
            f"# Skill: {skill.name}\n\n{skill.instructions}\n\n"
            f"Files of this skill (run scripts with run_command, read others with read_file):\n"
            f"{listing}"
        )


def _common_folders(first: tuple[Path, ...], second: tuple[Path, ...]) -> tuple[Path, ...]:
    """The folders writable under both sets: the inner one of each nested pair."""
    common = [a for a in first for b in second if a.is_relative_to(b)]
    common += [b for b in second for a in first if b.is_relative_to(a)]
    return tuple(dict.fromkeys(common))


def _whole_folder(pattern: str) -> str | None:
    """The folder a write pattern grants whole (`out/`, `out/**`, `out/**/*`), else None."""
    for suffix in ("/**/*", "/**", "/"):
        if pattern.endswith(suffix):
            folder = pattern[: -len(suffix)]
            if folder and not any(ch in folder for ch in "*?[") and ".." not in folder.split("/"):
                return folder.removeprefix("./")
    return None


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else "[" + ", ".join(map(str, value)) + "]"


def _int(args: Mapping[str, Any], key: str, default: int, *, minimum: int) -> int:
    value = args.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or value < minimum:
        raise ValueError(f"`{key}` must be a number >= {minimum}")
    return int(value)


def _read_bytes(path: ResolvedPath, limit: int = MAX_READ_BYTES) -> bytes:
    fd = open_beneath(path)
    try:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise _Refused(f"{path.shown()} is a folder; use list_files")
        chunks = []
        remaining = limit
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


_OBJ = "object"
_SPECS: dict[str, ToolSpec] = {
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

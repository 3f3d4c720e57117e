"""The built-in tools of one agent's session, offered and checked by its permissions.

A tool is offered only when the permissions allow it at all; a call of a tool that was not
offered (or of an unknown one) is refused like any other denied action. Every permission
decision goes to `on_decision` (the journal) as it is taken.
"""

from __future__ import annotations

import asyncio
import errno
import os
import re
import shlex
import stat
import time
from collections.abc import Callable, Iterable, Mapping, MutableSet
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import regex as timed_regex

from openprose.providers.base import ToolCall, ToolSpec
from openprose.record.approval_seal import KeyUnavailable, action_digest, key_folder_within
from openprose.vm.tools.approvals import ApprovalRequest, Approver, NobodyApprover
from openprose.vm.tools.limits import SandboxLimits
from openprose.vm.tools.mounts import (
    FolderRefused,
    ProjectScan,
    WritableFolder,
    resolve_writable,
    scan_project,
)
from openprose.vm.tools.paths import (
    PathRefused,
    ResolvedPath,
    linked_guarded,
    open_beneath,
    resolve_path,
    write_atomically,
)
from openprose.vm.tools.permissions import PathRule, Permissions, glob_regex
from openprose.vm.tools.registry import BUILTINS, Handler, ToolFailed, ToolRow, builtin_offered
from openprose.vm.tools.sandbox import SYSTEM_DIRS, CommandResult, Sandbox, SandboxUnavailable
from openprose.vm.tools.skills import Skill

__all__ = ["ToolLimits", "ToolOutcome", "Toolbox"]

SKIPPED_DIRS = {".prose", ".git"}
# What `--permission-mode plan` refuses: everything that changes something or reaches out.
PLAN_REFUSED = frozenset({"write", "execute", "bash", "network"})
BINARY_SNIFF = 8192
MAX_READ_BYTES = 16 * 1024 * 1024  # read_file reads this much; edit_file edits no larger
INLINE_READ_BYTES = 64 * 1024  # read_file reads this much on the event loop, the rest on a thread
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
    search_timeout: float = 10.0  # seconds one search_files call may take, regex included


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    content: str
    is_error: bool = False
    omitted_bytes: int = 0  # cut by the output cap


class _Refused(ToolFailed):
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
    sandbox_limits: SandboxLimits = field(default_factory=SandboxLimits)
    plan: bool = False  # `--permission-mode plan`: read-only, whatever the permissions say
    _writable: tuple[WritableFolder, ...] | None = field(default=None, init=False, repr=False)
    _root_writable: bool = field(default=False, init=False, repr=False)
    _scan: ProjectScan | None = field(default=None, init=False, repr=False)
    # Seals an "allow for this run" given here, so a resume can tell it from a forged line.
    seal_grant: Callable[[str, str], str] | None = None

    def __post_init__(self) -> None:
        self.root = Path(os.path.realpath(self.root))
        handlers: dict[str, Handler] = {
            "read_file": self._tool_read_file,
            "list_files": self._tool_list_files,
            "search_files": self._tool_search_files,
            "write_file": self._tool_write_file,
            "edit_file": self._tool_edit_file,
            "run_command": self._tool_run_command,
            "fetch_url": self._tool_fetch_url,
            "load_skill": self._tool_load_skill,
        }
        self.rows: dict[str, ToolRow] = {
            name: ToolRow(tool.spec, tool.permission, handlers[name], tool.mutating)
            for name, tool in BUILTINS.items()
            if builtin_offered(tool.permission, self.permissions, bool(self.skills))
        }
        self._linked_guarded = linked_guarded(self.root)

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        """What the model is offered: every row's spec, built-in tools first."""
        return tuple(row.spec for row in self.rows.values())

    def add_rows(self, rows: Iterable[ToolRow]) -> None:
        """Offer more tools (an MCP server's, at session start)."""
        for row in rows:
            self.rows[row.spec.name] = row

    def mutating(self, name: str) -> bool:
        """Whether a call of `name` runs alone (an unknown name: it is refused, alone)."""
        row = self.rows.get(name)
        return row is None or row.mutating

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
        row = self.rows.get(call.name)
        if row is None:
            self._decide(call, "tool", call.name, "denied", "not offered to this agent")
            offered = ", ".join(sorted(self.rows)) or "none"
            return ToolOutcome(
                f"tool {call.name!r} is not available to this agent (its tools: {offered})",
                is_error=True,
            )
        try:
            content = await row.handler(call, call_key or call.id)
        except ToolFailed as refusal:
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
        if self.plan and kind in PLAN_REFUSED:
            why = "plan mode (--permission-mode plan) is read-only"
            self._decide(call, kind, action, "refused", why)
            raise _Refused(
                f"refused: {kind} {action} — {why}: no writes, commands or network; "
                f"describe the change instead"
            )
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
        if kind != "read" and any(resolved.real.is_relative_to(t) for t in self._linked_guarded):
            why = "it is what the project's own prose.toml, prose.lock, pyproject.toml or .git links to"
            self._decide(call, kind, resolved.shown(), "denied", why)
            raise _Refused(f"permission denied: {kind} {resolved.shown()} ({why})")
        await self._gate(call, key, kind, mode, resolved.shown())
        return resolved

    # --- file tools ----------------------------------------------------------------------

    async def _tool_read_file(self, call: ToolCall, key: str) -> str:
        args = call.arguments
        path = await self._path(call, key, "read", args.get("path"))
        offset = _int(args, "offset", 1, minimum=1)
        limit = _int(args, "limit", self.limits.read_lines, minimum=1)
        fd, info = _open_regular(path)
        try:
            # A small file is read here: a thread hop costs more than the read (bench/
            # vm_tools.py). Whatever lies past INLINE_READ_BYTES, grown since or not, is
            # read on a worker thread, so the event loop never waits on a big read.
            data = _read_fd(fd, INLINE_READ_BYTES + 1)
            if len(data) > INLINE_READ_BYTES:
                data += await asyncio.to_thread(_read_fd, fd, MAX_READ_BYTES - len(data))
        finally:
            os.close(fd)
        return _lines(path, data, max(info.st_size, len(data)), offset, limit)

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
            # `regex` (not `re`): its matching takes a timeout, so `(a+)+$` cannot spin forever
            compiled = timed_regex.compile(regex)
        except (timed_regex.error, OverflowError, RecursionError) as exc:
            raise _Refused(f"bad regex {regex!r}: {exc}") from None
        if pattern.startswith("/") or ".." in pattern.split("/"):
            raise _Refused("search_files searches inside the project: give a relative pattern")
        matcher = glob_regex(pattern)
        self._decide(
            call, "read", f"search {regex!r} in {pattern}", "allowed", "readable files only"
        )
        return await asyncio.to_thread(self._search, compiled, matcher)

    def _walk(self, deadline: float | None = None) -> list[tuple[str, str]]:
        """(project-relative path, read mode) of every file, symlinks not followed."""
        out: list[tuple[str, str]] = []
        for folder, dirs, files in os.walk(self.root):
            if deadline is not None and time.monotonic() > deadline:
                raise _SearchTimeout
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

    def _search(self, regex: timed_regex.Pattern[str], matcher: re.Pattern[str]) -> str:
        budget = self.limits.search_timeout
        deadline = time.monotonic() + budget
        hits: list[str] = []
        try:
            return self._search_until(regex, matcher, deadline, hits)
        except _SearchTimeout:
            raise _Refused(
                f"search_files stopped after {budget:g} s, its time limit ([vm] search_timeout "
                f"= {budget:g}), with {len(hits)} matches found so far; use a simpler regex "
                f"or a narrower `pattern`"
            ) from None

    def _search_until(
        self,
        regex: timed_regex.Pattern[str],
        matcher: re.Pattern[str],
        deadline: float,
        hits: list[str],
    ) -> str:
        skipped = 0
        for rel, mode in self._walk(deadline):
            if not matcher.fullmatch(rel):
                continue
            if mode != "allow":
                skipped += mode == "prompt"
                continue
            try:
                path = ResolvedPath(rel, self.root / rel, rel)
                data, _ = _read_bytes(path, MAX_SEARCHED_FILE)
            except (OSError, PathRefused, _Refused):
                continue
            if b"\x00" in data[:BINARY_SNIFF]:
                continue
            for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise _SearchTimeout
                try:
                    found = regex.search(line[:2000], concurrent=True, timeout=left)
                except TimeoutError:
                    raise _SearchTimeout from None
                if found:
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
        replace_all = bool(args.get("replace_all"))
        return await asyncio.to_thread(_edit, path, old, new, replace_all)

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
        try:
            sandbox = await self.sandbox()
            result = await sandbox.run(argv, timeout=timeout, output_cap=self.limits.output_cap)
        except SandboxUnavailable as exc:
            self._decide(call, "sandbox", command, "refused", str(exc))
            raise _Refused(f"the command was not run: {exc}") from None
        except FolderRefused as exc:
            self._decide(call, "sandbox", command, "refused", str(exc))
            raise _Refused(f"the command was not run: {exc}") from None
        parts = [self._status(result, timeout)]
        if result.stdout:
            parts.append("--- stdout ---\n" + result.stdout.decode("utf-8", "replace"))
        if result.stderr:
            parts.append("--- stderr ---\n" + result.stderr.decode("utf-8", "replace"))
        if result.omitted_bytes:
            parts.append(f"[VM: {result.omitted_bytes} more bytes of output were cut]")
        return "\n".join(parts)

    async def sandbox(self) -> Sandbox:
        """The sandbox of this agent's commands (and stdio MCP servers): its writable
        folders, its network choice, the project's limits — in plan mode nothing writable
        and no network, whatever a server claims of its tools. Raises FolderRefused."""
        if self._scan is None:  # once a session: the run's state and guarded files now
            self._scan = await asyncio.to_thread(scan_project, self.root)
        writable = () if self.plan else self._writable_folders()
        return Sandbox(
            self.root,
            writable=writable,
            root_writable=self._root_writable and not self.plan,  # set by _writable_folders
            network=self.permissions.network.unrestricted and not self.plan,
            limits=self.sandbox_limits,
            scan=self._scan,
            # The approval key, should it lie in a folder the sandbox mounts.
            hidden=key_folder_within((self.root, *_SYSTEM_ROOTS)),
        )

    async def gate(
        self, call: ToolCall, call_key: str, kind: str, mode: str, action: str, *, changes: bool
    ) -> None:
        """Judge one action of a tool of another module (an MCP tool) like a built-in one's:
        journaled, asked when `prompt`, refused in plan mode when it `changes` something;
        raises ToolFailed when it is not allowed."""
        if self.plan and changes:
            why = "plan mode (--permission-mode plan) is read-only"
            self._decide(call, kind, action, "refused", why)
            raise _Refused(f"refused: {kind} {action} — {why}: the tool may change something")
        await self._gate(call, call_key, kind, mode, action, f"this agent's permissions: {kind}")

    def _status(self, result: CommandResult, timeout: float) -> str:
        """The first line of a command's result; a limit that stopped it (or that a cgroup
        enforced) is named with its setting."""
        if result.stopped_by is not None:
            setting = self.sandbox_limits.setting(result.stopped_by)
            return f"killed: the sandbox's {result.stopped_by} limit was reached ({setting})"
        if result.timed_out:
            return f"killed after {timeout:g} s (time limit)"
        status = f"exit code {result.exit_code}"
        hit = result.limits_hit or _limit_signs(result)
        if hit:
            named = ", ".join(f"{n} ({self.sandbox_limits.setting(n)})" for n in hit)
            verb = "reached" if result.limits_hit else "probably reached"
            status += f" — sandbox limit {verb}: {named}"
        return status

    def _writable_folders(self) -> tuple[WritableFolder, ...]:
        """The folders write patterns grant whole — under the agent's rule and every import's
        cap at once — resolved once (then re-checked by the sandbox at every command); sets
        `_root_writable` when every rule grants the whole project. Raises FolderRefused."""
        if self._writable is None:
            granted: dict[Path, str] | None = None  # None: the whole project
            rule: PathRule | None = self.permissions.write
            while rule is not None:  # the agent's own rule, then each import's cap
                if rule.mode != "allow":
                    own = self._whole_folders(rule)
                    granted = own if granted is None else _common_folders(granted, own)
                rule = rule.ceiling
            self._root_writable = granted is None
            folders = (granted or {}).values()
            self._writable = tuple(resolve_writable(self.root, folder) for folder in folders)
        return self._writable

    def _whole_folders(self, rule: PathRule) -> dict[Path, str]:
        """Each folder `rule`'s patterns grant whole, by its path as written (no link
        followed), with the folder as the pattern names it."""
        if rule.mode is not None:
            return {}
        folders = {}
        for folder in filter(None, map(_whole_folder, rule.patterns)):
            base = folder if folder.startswith("/") else self.root / folder
            folders[Path(os.path.normpath(base))] = folder
        return folders

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


def _common_folders(first: dict[Path, str], second: dict[Path, str]) -> dict[Path, str]:
    """The folders writable under both sets: the inner one of each nested pair."""
    common = {a: shown for a, shown in first.items() if any(a.is_relative_to(b) for b in second)}
    common.update(
        {b: shown for b, shown in second.items() if any(b.is_relative_to(a) for a in first)}
    )
    return common


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


# What a command's own error output says when a limit refused it something.
_LIMIT_SIGNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Resource temporarily unavailable", ("processes",)),
    ("fork: retry", ("processes",)),
    ("Cannot fork", ("processes",)),
    ("can't start new thread", ("processes", "memory")),  # EAGAIN: either one
    ("Cannot allocate memory", ("memory",)),
    ("MemoryError", ("memory",)),
    ("bad_alloc", ("memory",)),
    ("out of memory", ("memory",)),
    ("File size limit exceeded", ("disk_writes",)),
    ("File too large", ("disk_writes",)),  # Python ignores SIGXFSZ and sees EFBIG
    ("No space left on device", ("tmp_size",)),
)


def _limit_signs(result: CommandResult) -> tuple[str, ...]:
    text = result.stderr.decode("utf-8", "replace") + result.stdout.decode("utf-8", "replace")
    found: list[str] = []
    for sign, names in _LIMIT_SIGNS:
        if sign in text:
            found += [name for name in names if name not in found]
    if result.exit_code == 128 + 25 and "disk_writes" not in found:  # killed by SIGXFSZ
        found.append("disk_writes")
    return tuple(found)


def _int(args: Mapping[str, Any], key: str, default: int, *, minimum: int) -> int:
    value = args.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or value < minimum:
        raise ValueError(f"`{key}` must be a number >= {minimum}")
    return int(value)


class _SearchTimeout(Exception):
    """search_files ran out of its time budget."""


def _open_regular(path: ResolvedPath) -> tuple[int, os.stat_result]:
    """An fd of a regular file, and its stat; the caller closes it. Opened non-blocking and
    checked before any read: a FIFO, device or socket would block or never end."""
    try:
        fd = open_beneath(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket (or a device without its driver)
            raise _not_regular(path, os.lstat(path.real).st_mode) from None
        raise
    info = os.fstat(fd)
    if stat.S_ISREG(info.st_mode):
        return fd, info
    os.close(fd)
    if stat.S_ISDIR(info.st_mode):
        raise _Refused(f"{path.shown()} is a folder; use list_files")
    raise _not_regular(path, info.st_mode)


def _read_fd(fd: int, limit: int) -> bytes:
    chunks = []
    remaining = limit
    while remaining > 0:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _read_bytes(path: ResolvedPath, limit: int = MAX_READ_BYTES) -> tuple[bytes, int]:
    """At most `limit` bytes of a regular file, and the file's size."""
    fd, info = _open_regular(path)
    try:
        return _read_fd(fd, limit), info.st_size
    finally:
        os.close(fd)


def _not_regular(path: ResolvedPath, mode: int) -> _Refused:
    if stat.S_ISFIFO(mode):
        kind = "a FIFO (named pipe)"
    elif stat.S_ISSOCK(mode):
        kind = "a socket"
    elif stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        kind = "a device"
    else:
        kind = "a special file"
    return _Refused(
        f"{path.shown()} is {kind}, not a regular file; file tools open regular files only"
    )


def _lines(path: ResolvedPath, data: bytes, size: int, offset: int, limit: int) -> str:
    """What read_file answers for the bytes read of a file of `size` bytes."""
    if b"\x00" in data[:BINARY_SNIFF]:
        return f"{path.shown()} is a binary file ({size} bytes); not shown"
    lines = data.decode("utf-8", errors="replace").splitlines(keepends=True)
    chosen = lines[offset - 1 : offset - 1 + limit]
    text = "".join(chosen)
    last = offset - 1 + len(chosen)
    if offset > 1 or last < len(lines):
        text += f"\n[VM: lines {offset}-{last} of {len(lines)}; ask with offset for more]"
    if size > len(data):
        text += (
            f"\n[VM: {path.shown()} is {size} bytes; only its first {len(data)} bytes "
            f"can be read with read_file]"
        )
    return text


def _edit(path: ResolvedPath, old: str, new: str, replace_all: bool) -> str:
    """Replace `old` in the whole file, or change nothing: a file larger than read_file's
    limit is refused, never cut to it."""
    data, size = _read_bytes(path, MAX_READ_BYTES + 1)
    if len(data) > MAX_READ_BYTES or size > MAX_READ_BYTES:
        raise _Refused(
            f"{path.shown()} is {max(size, len(data))} bytes; edit_file edits files of at "
            f"most {MAX_READ_BYTES} bytes (16 MiB); nothing changed"
        )
    text = data.decode("utf-8", errors="strict")
    count = text.count(old)
    if count == 0:
        raise _Refused(f"old_text was not found in {path.shown()}; nothing changed")
    if count > 1 and not replace_all:
        raise _Refused(
            f"old_text occurs {count} times in {path.shown()}; give more surrounding text "
            f"or set replace_all; nothing changed"
        )
    write_atomically(path, text.replace(old, new).encode("utf-8"))
    return f"replaced {count} occurrence(s) in {path.shown()}"

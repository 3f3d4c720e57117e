"""Skills from a registry or a URL: fetched before a run, verified, unpacked, cached and
pinned, so every later run and every other machine gets exactly the same bytes.

`use "@scope/name"` (or `scope/name`) names a skill when an agent lists it in `skills:`;
it is fetched from `{registry}/@scope/name` (the registry programs come from), a URL
spec from the URL. The answer is a zip or a (gzipped) tar of the skill folder, or a bare
`SKILL.md`; it is refused unless its size, content type and contents pass the checks in
`unpack` (no absolute names, no `..`, no links or devices, bounded total size and file
count, a valid `SKILL.md` at the root). The downloaded bytes are kept under
`.prose/skills/.archives/{sha256}`, the folder unpacked to `.prose/skills/{scope}--{name}`,
and `prose.lock` records, per spec, the URL, the sha256 of the bytes and of the unpacked
tree (`skills` section). With a pin, a run checks the installed folder against it and
restores it from the archive when it differs; a server now sending other bytes is an error
until the user accepts them (`prose install --update`). A skill is data for the model:
nothing here runs any of its files.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import stat
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from openprose import nodes as n
from openprose.contracts import is_local_path
from openprose.imports import (
    FetchPolicy,
    ImportFailed,
    ImportPins,
    check_scheme,
    download,
    registry_url,
)
from openprose.vm.runtime import LoadedProgram
from openprose.vm.tools.skills import (
    SKILL_FILE,
    SkillError,
    load_skill,
    skill_folder_name,
    skill_kind,
    skill_uses,
)

__all__ = [
    "SkillInstall",
    "SkillLimits",
    "install_skills",
    "remote_skill_specs",
    "tree_sha256",
    "unpack",
]

ARCHIVES = ".archives"  # under .prose/skills/: a dot name is never a skill's folder
ACCEPT = "application/zip, application/gzip, application/x-tar, text/markdown, text/plain;q=0.5"
ZIP_TYPES = frozenset({"application/zip", "application/x-zip-compressed"})
TAR_TYPES = frozenset(
    {"application/gzip", "application/x-gzip", "application/x-tar", "application/x-gtar"}
)
TEXT_TYPES = frozenset({"text/markdown", "text/x-markdown", "text/plain"})
SNIFFED_TYPES = frozenset({"application/octet-stream", "binary/octet-stream", ""})


@dataclass(frozen=True, slots=True)
class SkillLimits:
    """`[skills]` in prose.toml: how large a downloaded skill may be."""

    max_bytes: int = 10 * 1024 * 1024  # the download
    max_unpacked_bytes: int = 50 * 1024 * 1024  # all its files together
    max_files: int = 1000
    max_depth: int = 16  # folder levels inside the skill


@dataclass(frozen=True, slots=True)
class SkillInstall:
    """What installing one spec did: `installed` (downloaded now), `restored` (from the
    pinned archive), `current` (already there as pinned) or `vendored` (a folder the user
    put there, used as is)."""

    spec: str
    folder: Path
    outcome: str
    sha256: str = ""


def remote_skill_specs(program: n.Program, imported: Iterable[LoadedProgram] = ()) -> list[str]:
    """The registry and URL specs that agents of `program`, or of the programs it imports
    (`LoadedProgram`s, recursively), name as skills."""
    found: list[str] = []
    stack: list[n.Program | LoadedProgram] = [program, *imported]
    while stack:
        item = stack.pop()
        if isinstance(item, n.Program):
            wanted = {skill for agent in _agents(item) for skill in agent}
            uses = skill_uses(item)
            for name in sorted(wanted):
                spec = uses.get(name)
                if (
                    spec is not None
                    and not is_local_path(spec)  # a program: W007, no skill
                    and skill_kind(spec) != "path"
                    and spec not in found
                ):
                    found.append(spec)
        else:
            stack.append(item.program)
            stack.extend(item.imports.values())
    return found


def _agents(program: n.Program) -> Iterator[tuple[str, ...]]:
    from openprose.vm.agents import agent_spec

    for node in n.walk(program):  # the VM hoists an agent from any depth
        if isinstance(node, n.AgentDef):
            yield agent_spec(node).skills


def install_skills(
    specs: Iterable[str],
    project_dir: Path,
    *,
    registry: str,
    policy: FetchPolicy,
    limits: SkillLimits | None = None,
    offline: bool = False,
    update: bool = False,
) -> list[SkillInstall]:
    """Make each spec's skill folder exist under `.prose/skills/` exactly as pinned in
    `prose.lock` (fetching and pinning what is not pinned yet). `offline`: no network —
    only pinned archives in the cache. `update`: fetch again and accept what the server
    sends now. Raises `ImportFailed` with what went wrong and how to fix it."""
    installer = _Installer(project_dir, registry, policy, limits or SkillLimits(), offline)
    return [installer.install(spec, update=update) for spec in specs]


class _Installer:
    def __init__(
        self,
        project_dir: Path,
        registry: str,
        policy: FetchPolicy,
        limits: SkillLimits,
        offline: bool,
    ) -> None:
        self.skills_dir = project_dir / ".prose" / "skills"
        self.archives = self.skills_dir / ARCHIVES
        self.pins = ImportPins(project_dir, section="skills")
        self.registry = registry
        self.policy = FetchPolicy(
            max_bytes=limits.max_bytes,
            timeout=policy.timeout,
            allow_http=policy.allow_http,
        )
        self.limits = limits
        self.offline = offline

    def install(self, spec: str, *, update: bool) -> SkillInstall:
        """One spec, under the skills folder's lock: two runs starting at once install
        each skill once, and neither sees the other's half-done folder."""
        from openprose.locks import LockHeld, locked

        self.skills_dir.mkdir(parents=True, exist_ok=True)
        try:
            with locked(self.skills_dir / ".install.lock", timeout=120):
                return self._install(spec, update=update)
        except ImportFailed as error:
            if str(error).startswith(f"skill {spec}:"):
                raise
            raise ImportFailed(f"skill {spec}: {error}") from None
        except LockHeld:
            raise ImportFailed(
                f"skill {spec}: another prose process has been installing skills in "
                f"{self.skills_dir} for two minutes; try again when it is done"
            ) from None

    def _install(self, spec: str, *, update: bool) -> SkillInstall:
        url = spec if skill_kind(spec) == "url" else registry_url(spec, self.registry)
        check_scheme(spec, url, self.policy)
        folder = self.skills_dir / skill_folder_name(spec)
        pin = self.pins.get(spec)
        if pin is not None and pin["url"] != url:
            pin = None  # the registry moved: that pin was for another address
        if pin is not None and not update:
            return self._as_pinned(spec, url, folder, pin)
        if pin is None and not update:
            vendored = self._vendored(spec, folder)
            if vendored is not None:
                return SkillInstall(spec, vendored, "vendored")
        if self.offline:
            raise ImportFailed(
                f"skill {spec}: not installed, and fetching is off (--offline or "
                f"PROSE_OFFLINE); run `prose install PROGRAM` with network access first"
            )
        data, content_type = self._download(url)
        files = unpack(data, content_type, url, self.limits)
        digest = hashlib.sha256(data).hexdigest()
        self._keep_archive(digest, data)
        tree = self._place(files, folder)
        self.pins.record(spec, url, digest, tree=tree, folder=folder.name)
        return SkillInstall(spec, folder, "installed", digest)

    def _as_pinned(self, spec: str, url: str, folder: Path, pin: Mapping[str, str]) -> SkillInstall:
        if folder.is_dir() and tree_sha256(folder) == pin.get("tree"):
            return SkillInstall(spec, folder, "current", pin["sha256"])
        data = self._archive(pin["sha256"])
        if data is None:
            if self.offline:
                raise ImportFailed(
                    f"skill {spec}: pinned in prose.lock ({pin['sha256'][:12]}) but not in "
                    f"{self.archives}, and fetching is off (--offline or PROSE_OFFLINE); "
                    f"run `prose install PROGRAM` with network access first"
                )
            data, content_type = self._download(url)
            digest = hashlib.sha256(data).hexdigest()
            if digest != pin["sha256"]:
                raise ImportFailed(
                    f"skill {spec}: {url} now sends other bytes than prose.lock pins "
                    f"(pinned {pin['sha256'][:12]}, now {digest[:12]}); review the new "
                    f"version, then accept it with `prose install --update PROGRAM`"
                )
            self._keep_archive(digest, data)
        else:
            content_type = ""
        if folder.is_dir():
            _warn(f"{folder} differs from the skill pinned in prose.lock; restored it")
        tree = self._place(unpack(data, content_type, url, self.limits), folder)
        if pin.get("tree") and tree != pin["tree"]:
            raise ImportFailed(
                f"skill {spec}: the pinned archive unpacks to another tree than prose.lock "
                f"records; fix or delete the `skills` entry for {spec!r} in prose.lock"
            )
        return SkillInstall(spec, folder, "restored", pin["sha256"])

    def _download(self, url: str) -> tuple[bytes, str]:
        return download(url, self.policy, accept=ACCEPT, size_setting="[skills] max_bytes")

    def _vendored(self, spec: str, folder: Path) -> Path | None:
        """A folder for `spec` the user put under `.prose/skills/` by hand (no pin): used
        as is, never overwritten."""
        name = spec.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
        for candidate in (folder, self.skills_dir / name):
            if (candidate / SKILL_FILE).is_file():
                return candidate
        return None

    def _archive(self, sha256: str) -> bytes | None:
        path = self.archives / sha256
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        if hashlib.sha256(data).hexdigest() != sha256:
            _warn(f"{path} is damaged (its sha256 changed); fetching it again")
            return None
        return data

    def _keep_archive(self, sha256: str, data: bytes) -> None:
        from openprose.files import write_bytes_atomically

        path = self.archives / sha256
        if not path.exists():
            self.archives.mkdir(parents=True, exist_ok=True)
            write_bytes_atomically(path, data)

    def _place(self, files: list[tuple[str, bytes, bool]], folder: Path) -> str:
        """Write `files` into a fresh folder beside `folder`, then swap it in: a crash
        leaves either the old folder or the new one, never half of one."""
        self.skills_dir.mkdir(parents=True, exist_ok=True)
        fresh = Path(tempfile.mkdtemp(prefix=".unpacking-", dir=self.skills_dir))
        try:
            for name, data, executable in files:
                target = fresh.joinpath(*PurePosixPath(name).parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                target.chmod(0o755 if executable else 0o644)
            fresh.chmod(0o755)
            old = None
            if folder.exists() or folder.is_symlink():
                old = folder.with_name(f".replaced-{folder.name}-{os.getpid()}")
                folder.rename(old)
            fresh.rename(folder)
            if old is not None:
                _remove(old)
        except BaseException:
            _remove(fresh)
            raise
        return tree_sha256(folder)


def unpack(
    data: bytes, content_type: str, url: str, limits: SkillLimits
) -> list[tuple[str, bytes, bool]]:
    """The files of a downloaded skill as (relative POSIX name, bytes, executable), checked:
    a zip, a tar (gzipped or not) or a bare SKILL.md; no absolute or `..` names, no links,
    devices or other special files, at most `limits` in count, size and depth, and a valid
    SKILL.md at the root (one top folder holding everything is stripped)."""
    kind = _kind_of(data, content_type, url)
    if kind == "text":
        files = [(SKILL_FILE, data, False)]
    else:
        files = _from_zip(data, url, limits) if kind == "zip" else _from_tar(data, url, limits)
        files = _strip_top_folder(files)
    if not any(name == SKILL_FILE for name, _, _ in files):
        raise ImportFailed(f"{url}: not a skill: there is no {SKILL_FILE} at its root")
    _check_skill_file({name: body for name, body, _ in files}[SKILL_FILE], url)
    return files


def _kind_of(data: bytes, content_type: str, url: str) -> str:
    sniffed = (
        "zip"
        if data.startswith(b"PK\x03\x04")
        else "tar"
        if data.startswith(b"\x1f\x8b") or data[257:262] == b"ustar"
        else "text"
    )
    declared = (
        "zip"
        if content_type in ZIP_TYPES
        else "tar"
        if content_type in TAR_TYPES
        else "text"
        if content_type in TEXT_TYPES
        else None
    )
    if content_type in SNIFFED_TYPES:
        return sniffed
    if declared is None:
        raise ImportFailed(
            f"{url}: answered with {content_type}, not a skill (a zip or tar.gz of the skill "
            f"folder, or its SKILL.md); is the registry address right?"
        )
    if declared != sniffed:
        raise ImportFailed(f"{url}: says it is {content_type}, but its bytes are not")
    return declared


def _from_zip(data: bytes, url: str, limits: SkillLimits) -> list[tuple[str, bytes, bool]]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        entries = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        raise ImportFailed(f"{url}: not a readable zip ({error})") from None
    budget = _Budget(url, limits)
    files: list[tuple[str, bytes, bool]] = []
    for entry in entries:
        mode = entry.external_attr >> 16
        name = _checked_name(entry.filename, url, limits)
        if name is None or entry.is_dir():
            continue
        if entry.flag_bits & 0x1:
            raise ImportFailed(f"{url}: {entry.filename} is encrypted")
        if mode and not (stat.S_ISREG(mode) or stat.S_IFMT(mode) == 0):
            raise ImportFailed(f"{url}: {entry.filename} is not a plain file (a link?)")
        budget.add_file(entry.filename)
        try:
            with archive.open(entry) as stream:
                body = budget.read(stream, entry.filename)
        except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError) as error:
            raise ImportFailed(f"{url}: cannot read {entry.filename} ({error})") from None
        files.append((name, body, bool(mode & 0o111)))
    return _no_duplicates(files, url)


def _from_tar(data: bytes, url: str, limits: SkillLimits) -> list[tuple[str, bytes, bool]]:
    budget = _Budget(url, limits)
    files: list[tuple[str, bytes, bool]] = []
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
            for member in archive:
                if member.isdir():
                    _checked_name(member.name, url, limits)
                    continue
                if not member.isfile():
                    raise ImportFailed(
                        f"{url}: {member.name} is not a plain file (links, devices and pipes "
                        f"are refused)"
                    )
                name = _checked_name(member.name, url, limits)
                if name is None:
                    continue
                budget.add_file(member.name)
                stream = archive.extractfile(member)
                if stream is None:
                    raise ImportFailed(f"{url}: cannot read {member.name}")
                files.append((name, budget.read(stream, member.name), bool(member.mode & 0o111)))
    except (tarfile.TarError, OSError, EOFError, ValueError) as error:
        raise ImportFailed(f"{url}: not a readable tar archive ({error})") from None
    return _no_duplicates(files, url)


class _Budget:
    """Counts files and bytes as they are read (headers can lie: a zip bomb's do)."""

    def __init__(self, url: str, limits: SkillLimits) -> None:
        self.url, self.limits = url, limits
        self.files = 0
        self.bytes = 0

    def add_file(self, name: str) -> None:
        self.files += 1
        if self.files > self.limits.max_files:
            raise ImportFailed(
                f"{self.url}: more than {self.limits.max_files} files (`max_files` under "
                f"[skills] in prose.toml)"
            )

    def read(self, stream: IO[bytes], name: str) -> bytes:
        body = bytearray()
        while chunk := stream.read(64 * 1024):
            body += chunk
            self.bytes += len(chunk)
            if self.bytes > self.limits.max_unpacked_bytes:
                raise ImportFailed(
                    f"{self.url}: unpacks to more than {self.limits.max_unpacked_bytes:,} "
                    f"bytes (at {name}; `max_unpacked_bytes` under [skills] in prose.toml)"
                )
        return bytes(body)


def _checked_name(raw: str, url: str, limits: SkillLimits) -> str | None:
    """The entry's name relative to the skill folder; None for the folder itself. An
    absolute name, a drive, a backslash, `..` or a too deep path is refused."""
    if "\\" in raw or "\x00" in raw or raw.startswith("/") or (len(raw) > 1 and raw[1] == ":"):
        raise ImportFailed(f"{url}: refusing the entry {raw!r}: names must be relative")
    parts = [p for p in PurePosixPath(raw).parts if p not in ("", ".")]
    if ".." in parts:
        raise ImportFailed(f"{url}: refusing the entry {raw!r}: `..` would leave the folder")
    if len(parts) > limits.max_depth:
        raise ImportFailed(f"{url}: refusing the entry {raw!r}: nested too deeply")
    return "/".join(parts) or None


def _no_duplicates(files: list[tuple[str, bytes, bool]], url: str) -> list[tuple[str, bytes, bool]]:
    seen: set[str] = set()
    prefixes = {
        "/".join(name.split("/")[:i]) for name, _, _ in files for i in range(1, name.count("/") + 1)
    }
    for name, _, _ in files:
        if name in seen or name in prefixes:
            raise ImportFailed(
                f"{url}: the entry {name!r} appears twice (or as a file and a folder)"
            )
        seen.add(name)
    return files


def _strip_top_folder(files: list[tuple[str, bytes, bool]]) -> list[tuple[str, bytes, bool]]:
    if any(name == SKILL_FILE for name, _, _ in files) or not files:
        return files
    tops = {name.split("/", 1)[0] for name, _, _ in files}
    if len(tops) != 1 or not all("/" in name for name, _, _ in files):
        return files
    return [(name.split("/", 1)[1], body, x) for name, body, x in files]


def _check_skill_file(body: bytes, url: str) -> None:
    """The downloaded SKILL.md must load as a skill (front matter, name, description)."""
    with tempfile.TemporaryDirectory(prefix="prose-skill-check-") as folder:
        Path(folder, SKILL_FILE).write_bytes(body)
        try:
            load_skill(Path(folder))
        except SkillError as error:
            problem = str(error).split(": ", 1)[-1]
            raise ImportFailed(f"{url}: not a usable skill: {SKILL_FILE}: {problem}") from None


def tree_sha256(folder: Path) -> str:
    """One hash over a skill folder: every file's relative name, executable bit and bytes,
    in name order (symlinks and special files count as their kind, never followed)."""
    digest = hashlib.sha256()
    entries = []
    for root, dirs, names in os.walk(folder):
        dirs.sort()
        for name in names:
            path = Path(root, name)
            entries.append((path.relative_to(folder).as_posix(), path))
    for relative, path in sorted(entries):
        info = path.lstat()
        digest.update(relative.encode("utf-8", "surrogateescape") + b"\0")
        if not stat.S_ISREG(info.st_mode):
            digest.update(b"special\0")
            continue
        digest.update(b"x\0" if info.st_mode & 0o100 else b"-\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)


def _warn(message: str) -> None:
    print(f"prose: warning: {message}", file=sys.stderr)

"""Resolve `use` specs to programs, and keep what was fetched so re-runs and resumes work offline.

A spec is a local path (`lib/research.prose`), an `http(s)://` URL, or a registry name
(`@handle/slug` or `handle/slug`, fetched from `{registry}/@handle/slug`, registry default
https://p.prose.md, or `PROSE_REGISTRY`). Every program text is cached content-addressed under
`.prose/imports/{sha256}.prose`, and `.prose/imports/index.json` maps each spec to its latest
hash; a run records the hashes it used, so resuming it reads exactly those texts.

A remote program (from a URL or the registry) is pinned on its first fetch in the project's
`prose.lock` (spec -> URL and sha256, like `uv.lock`): later runs use the pinned text from the
cache, and a server now sending something else is an error until the user accepts it
(`prose run --update-pins`). A download is bounded in size and in total time (`[imports]`
in prose.toml), plain `http://` is refused for anything but this machine unless allowed
there, and a remote program is confined: it may not import local files or keep agent memory
outside the run or project folder.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openprose.contracts import ContractLookup, ProgramContract, contract_of, is_local_path
from openprose.files import write_atomically
from openprose.locks import locked

if TYPE_CHECKING:
    from openprose.nodes import Program

DEFAULT_REGISTRY = "https://p.prose.md"
CACHE_DIR = Path(".prose") / "imports"
PINS_FILE = "prose.lock"
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


@dataclass(frozen=True, slots=True)
class FetchPolicy:
    """How remote programs are fetched: the `[imports]` table of prose.toml."""

    max_bytes: int = 1024 * 1024  # a program is text: a MiB is already very long
    timeout: float = 30.0  # seconds for the whole download, not per read
    allow_http: bool = False  # plain http:// to another machine
    update_pins: bool = False  # accept what the server sends now (`--update-pins`)
    # What the user grants imported programs' agents, by spec ([imports.grants."SPEC"]).
    grants: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


# What a program from a URL or the registry (and what it imports) may do at most, unless
# prose.toml grants more ([imports.grants."SPEC"], per kind): read and run programs inside
# the project — no writes, shell, network, MCP tools, nor reads outside the project.
REMOTE_CEILING: dict[str, Any] = {
    "read": "allow",
    "execute": "allow",
    "write": "deny",
    "bash": "deny",
    "network": "deny",
    "mcp": "deny",
}
CAPPED_KINDS = ("bash", "network", "write", "mcp")  # denied by REMOTE_CEILING


def ceiling_of(spec: str, remote: bool, grants: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The cap on one imported program's agents: for a remote one REMOTE_CEILING with the
    user's grant over it; for a local file only what a grant names (nothing: no cap)."""
    grant = dict(grants.get(spec, {}))
    return {**REMOTE_CEILING, **grant} if remote else grant


def ceiling_problems(program: Program, spec: str, ceiling: Mapping[str, Any]) -> list[str]:
    """What the agents of a remote program ask for and its cap will not give (W180): one
    line per agent and permission, naming the grant that would give it."""
    from openprose import nodes as n

    problems: list[str] = []
    for node in n.walk(program):
        if not isinstance(node, n.AgentDef):
            continue
        asked = _asked_permissions(node)
        for kind in CAPPED_KINDS:
            value = asked.get(kind)
            if value in (None, "deny") or ceiling.get(kind, "deny") != "deny":
                continue
            problems.append(_capped(spec, node.name.id, kind, value))
        outside = [p for p in _listed(asked.get("read")) if p.startswith("/")]
        if outside and not any(g.startswith("/") for g in _listed(ceiling.get("read"))):
            problems.append(_capped(spec, node.name.id, "read", outside))
    return problems


def warn_capped(program: Program, spec: str, ceiling: Mapping[str, Any]) -> None:
    """At run start: one warning line per permission a remote program's agent will not get
    (what `prose check` reports as W180 once the program is cached)."""
    for problem in ceiling_problems(program, spec, ceiling):
        _warn(f"W180 {problem}")


def _asked_permissions(agent: Any) -> dict[str, Any]:
    """An agent definition's `permissions:` rules as written (mode words, strings, lists)."""
    from openprose import nodes as n

    rules: dict[str, Any] = {}
    for prop in agent.properties:
        if prop.name.id != "permissions" or not isinstance(prop.value, n.PermissionsBlock):
            continue
        for rule in prop.value.rules:
            value = rule.value
            if isinstance(value, n.StringLit):
                rules[rule.name.id] = value.value
            elif isinstance(value, n.Name):
                rules[rule.name.id] = value.id
            elif isinstance(value, n.ArrayLit):
                rules[rule.name.id] = [
                    e.value for e in value.elements if isinstance(e, n.StringLit)
                ]
    return rules


def _listed(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value not in ("allow", "deny", "prompt") else []
    return [str(v) for v in value] if isinstance(value, list) else []


def _capped(spec: str, agent: str, kind: str, value: Any) -> str:
    shown = value if isinstance(value, str) else json.dumps(value)
    what = "reads outside the project" if kind == "read" else kind
    return (
        f"agent '{agent}' of the remote program '{spec}' asks for `{kind}: {shown}`, but a "
        f"remote program's agents get no {what} unless prose.toml grants it: "
        f'[imports.grants."{spec}"] {kind} = {json.dumps(value)}'
    )


class ImportFailed(Exception):
    """A `use` could not be resolved (not found, offline with nothing cached, or broken)."""


@dataclass(frozen=True, slots=True)
class Fetched:
    spec: str
    text: str
    sha256: str
    origin: str  # the file path or URL it came from


def kind_of(spec: str) -> str:
    if spec.startswith(("http://", "https://")):
        return "url"
    if is_local_path(spec):
        return "path"
    return "registry"


def namespace_of(spec: str) -> str:
    """`imports/{handle}--{slug}/` folder name for a spec."""
    kind = kind_of(spec)
    if kind == "path":
        return f"local--{Path(spec).stem}"
    parts = [p for p in spec.split("://", 1)[-1].strip("/").split("/") if p]
    if kind == "url":
        parts = parts[1:] or parts  # drop the host
    tail = [p.lstrip("@").removesuffix(".prose") for p in parts[-2:]]
    return "--".join(tail) if len(tail) == 2 else f"url--{tail[0]}"


def default_name(spec: str) -> str:
    """The name a program is called by without `as`: its slug."""
    return spec.rstrip("/").rsplit("/", 1)[-1].removesuffix(".prose")


def registry_url(spec: str, registry: str) -> str:
    handle, _, slug = spec.lstrip("@").partition("/")
    return f"{registry.rstrip('/')}/@{handle}/{slug}"


class ImportCache:
    def __init__(self, project_dir: Path) -> None:
        self.folder = project_dir / CACHE_DIR
        self._index_path = self.folder / "index.json"

    def _index(self) -> dict[str, dict[str, str]]:
        try:
            data = json.loads(self._index_path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def store(self, fetched: Fetched) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        body = self.folder / f"{fetched.sha256}.prose"
        if not body.exists():
            write_atomically(body, fetched.text)

        # Read, update and write the index under its lock: two runs storing imports at
        # once each keep the other's entries.
        with locked(self._index_path.with_suffix(".lock")):
            index = self._index()
            index[fetched.spec] = {"sha256": fetched.sha256, "origin": fetched.origin}
            text = json.dumps(index, indent=2, sort_keys=True) + "\n"
            write_atomically(self._index_path, text)

    def by_hash(self, sha256: str) -> str | None:
        """The cached text stored under `sha256`; None when missing. A file whose content no
        longer has that hash (edited by hand, damaged on disk) raises `ImportFailed`: a
        resume must run the program the run started with, or nothing."""
        path = self.folder / f"{sha256}.prose"
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as error:
            raise ImportFailed(f"{path}: cannot read the cached program ({error})") from None
        actual = sha256_of(text)
        if actual != sha256:
            raise ImportFailed(
                f"{path}: the cached program was changed since it was fetched (its sha256 is "
                f"now {actual[:12]}, not {sha256[:12]}); restore it, or start a new run"
            )
        return text

    def latest(self, spec: str) -> Fetched | None:
        entry = self._index().get(spec)
        if entry is None:
            return None
        text = self.by_hash(entry["sha256"])
        return (
            None if text is None else Fetched(spec, text, entry["sha256"], entry.get("origin", ""))
        )


def sha256_of(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ImportPins:
    """`prose.lock`: what every remote import of the project resolved to, by section —
    `imports` (programs: spec -> {"url", "sha256"}) and `skills` (registry and URL skills:
    spec -> {"url", "sha256", "tree", "folder"}, see `openprose.vm.tools.skill_registry`).
    Writing one section keeps the others."""

    REQUIRED = ("url", "sha256")

    def __init__(self, project_dir: Path, section: str = "imports") -> None:
        self.path = project_dir / PINS_FILE
        self.section = section
        self._guard = project_dir / ".prose" / "prose.lock.lock"

    def _document(self) -> dict[str, object]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, RecursionError) as error:
            raise ImportFailed(f"{self.path}: damaged ({error}); fix or delete it") from None
        if not isinstance(data, dict):
            raise ImportFailed(f"{self.path}: damaged, not a JSON object; fix or delete it")
        return data

    def read(self) -> dict[str, dict[str, str]]:
        pins = self._document().get(self.section, {})
        if not isinstance(pins, dict):
            raise ImportFailed(
                f"{self.path}: damaged, `{self.section}` is not an object; fix or delete it"
            )
        return {
            str(spec): pin
            for spec, pin in pins.items()
            if isinstance(pin, dict) and all(isinstance(pin.get(k), str) for k in self.REQUIRED)
        }

    def get(self, spec: str) -> dict[str, str] | None:
        return self.read().get(spec)

    def record(self, spec: str, url: str, sha256: str, **more: str) -> None:
        self._guard.parent.mkdir(parents=True, exist_ok=True)
        with locked(self._guard, timeout=30):  # two runs pinning at once keep both pins
            document = self._document()
            pins = self.read()
            pins[spec] = {"url": url, "sha256": sha256, **more}
            document.setdefault("version", 1)
            document[self.section] = pins
            text = json.dumps(document, indent=2, sort_keys=True)
            write_atomically(self.path, text + "\n")


def fetch(
    spec: str,
    *,
    base_dir: Path | None,
    cache: ImportCache,
    registry: str | None = None,
    pinned: str | None = None,
    offline: bool = False,
    policy: FetchPolicy | None = None,
    pins: ImportPins | None = None,
) -> Fetched:
    """The program text for `spec`: the pinned hash from the cache when given (resume), else
    a local file, else the text pinned in prose.lock, else the network (falling back to the
    cache, with a warning, when the server cannot be reached)."""
    if pinned is not None:
        text = cache.by_hash(pinned)
        if text is None:
            raise ImportFailed(
                f"{spec}: cached program {pinned[:12]} is missing from {cache.folder}"
            )
        return Fetched(spec, text, pinned, "cache")
    kind = kind_of(spec)
    if kind == "path":
        file = Path(spec) if Path(spec).is_absolute() or base_dir is None else base_dir / spec
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise ImportFailed(f"{spec}: cannot read {file}: {error}") from None
        fetched = Fetched(spec, text, sha256_of(text), str(file))
        cache.store(fetched)
        return fetched
    policy = policy or FetchPolicy()
    url = spec if kind == "url" else registry_url(spec, registry or _registry())
    check_scheme(spec, url, policy)
    if offline:
        cached = cache.latest(spec)
        if cached is None:
            raise ImportFailed(f"{spec}: not cached, and fetching is off")
        return cached
    pin = pins.get(spec) if pins is not None else None
    if pin is not None and pin["url"] != url:
        pin = None  # the registry moved: the pin was for another address
    if pin is not None and not policy.update_pins:
        text = cache.by_hash(pin["sha256"])
        if text is not None:
            return Fetched(spec, text, pin["sha256"], url)
    try:
        text = _http_get(url, policy)
    except ImportFailed as error:
        cached = cache.latest(spec)
        if cached is not None and (pin is None or cached.sha256 == pin["sha256"]):
            _warn(f"{error}; using the copy cached in {cache.folder} ({cached.sha256[:12]})")
            return cached
        raise
    fetched = Fetched(spec, text, sha256_of(text), url)
    if pin is not None and pin["sha256"] != fetched.sha256 and not policy.update_pins:
        raise ImportFailed(
            f"{url} changed since it was pinned in {PINS_FILE} (pinned {pin['sha256'][:12]}, "
            f"now {fetched.sha256[:12]}); review the new version, then accept it with "
            f"`prose run --update-pins`"
        )
    cache.store(fetched)
    if pins is not None:
        pins.record(spec, url, fetched.sha256)
    return fetched


def check_scheme(spec: str, url: str, policy: FetchPolicy) -> None:
    """Refuse plain http:// to another machine unless `[imports] allow_http` says so."""
    from urllib.parse import urlsplit

    if not url.startswith("http://") or policy.allow_http:
        return
    if (urlsplit(url).hostname or "") in LOOPBACK_HOSTS or url.startswith("http://127."):
        return  # this machine: nothing crosses a network
    raise ImportFailed(
        f"{spec}: refusing plain http:// ({url}): anyone on the way can change the program; "
        f"use https://, or set `allow_http = true` under [imports] in prose.toml"
    )


def _warn(message: str) -> None:
    import sys

    print(f"prose: warning: {message}", file=sys.stderr)


def _registry() -> str:
    return os.environ.get("PROSE_REGISTRY", DEFAULT_REGISTRY)


def _http_get(url: str, policy: FetchPolicy) -> str:
    """The body of `url` as text (see `download`)."""
    data, _ = download(url, policy, accept="text/plain")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ImportFailed(f"{url} is not UTF-8 text") from None


def download(
    url: str, policy: FetchPolicy, *, accept: str, size_setting: str = "[imports] max_bytes"
) -> tuple[bytes, str]:
    """The body of `url` and its content type (lower case, no parameters), at most
    `policy.max_bytes`, within `policy.timeout` seconds in all (connecting, headers and
    body: a server dripping a byte at a time cannot hold the run)."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_download(url, policy, accept, size_setting))
    from concurrent.futures import ThreadPoolExecutor  # in async code: its loop is busy

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, _download(url, policy, accept, size_setting)).result()


async def _download(
    url: str, policy: FetchPolicy, accept: str, size_setting: str
) -> tuple[bytes, str]:
    import aiohttp

    section, _, key = size_setting.partition(" ")
    too_big = ImportFailed(
        f"cannot fetch {url}: larger than {policy.max_bytes:,} bytes "
        f"(`{key}` under {section} in prose.toml)"
    )
    try:
        timeout = aiohttp.ClientTimeout(total=policy.timeout)
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.get(url, headers={"Accept": accept}) as answer,
        ):
            if answer.status != 200:
                raise ImportFailed(f"cannot fetch {url}: HTTP {answer.status} {answer.reason}")
            if (answer.content_length or 0) > policy.max_bytes:
                raise too_big
            body = bytearray()
            async for chunk in answer.content.iter_chunked(64 * 1024):
                body += chunk
                if len(body) > policy.max_bytes:
                    raise too_big
            return bytes(body), answer.content_type.lower()
    except TimeoutError:
        raise ImportFailed(
            f"cannot fetch {url}: no complete answer within {policy.timeout:g} s "
            f"(`timeout` under [imports] in prose.toml)"
        ) from None
    except (aiohttp.ClientError, OSError, ValueError) as error:
        raise ImportFailed(f"cannot fetch {url}: {error or type(error).__name__}") from None


def cache_contracts(project_dir: Path) -> ContractLookup:
    """A `ContractLookup` for the checker that reads local files and the import cache only."""
    cache = ImportCache(project_dir)
    granted: list[Mapping[str, Mapping[str, Any]]] = []  # read when a remote one is looked up

    def lookup(spec: str, base_dir: Path | None) -> ProgramContract | None:
        from openprose.parser import parse_text

        if kind_of(spec) == "path":
            from openprose.contracts import local_contracts

            return local_contracts(spec, base_dir)
        try:
            cached = cache.latest(spec)
        except ImportFailed:  # a damaged cache entry: the run reports it; the check defers
            return None
        if cached is None:
            return None
        program = parse_text(cached.text, cached.origin or spec).program
        if not granted:
            granted.append(_grants_of(project_dir))
        ceiling = ceiling_of(spec, True, granted[0])
        problems = tuple(ceiling_problems(program, spec, ceiling))
        return replace(contract_of(program), ceiling_problems=problems)

    return lookup


def _grants_of(project_dir: Path) -> Mapping[str, Mapping[str, Any]]:
    """`[imports.grants]` of the project's settings file as written: a check only reads
    them (`prose run` refuses a bad table), so an unreadable file grants nothing."""
    import tomllib

    table: Any = {}
    for name, inner in (("prose.toml", ()), ("pyproject.toml", ("tool", "prose"))):
        try:
            with (project_dir / name).open("rb") as handle:
                table = tomllib.load(handle)
        except (OSError, tomllib.TOMLDecodeError, RecursionError, ValueError):
            continue
        for key in inner:
            table = table.get(key, {}) if isinstance(table, dict) else {}
        break
    imports = table.get("imports", {}) if isinstance(table, dict) else {}
    grants = imports.get("grants", {}) if isinstance(imports, dict) else {}
    if not isinstance(grants, dict):
        return {}
    return {str(k): v for k, v in grants.items() if isinstance(v, dict)}


def confinement_problems(program: Program) -> list[str]:
    """What a program fetched from a URL or the registry may not do, each with its place:
    import local files (they would be read and sent to the model), or keep agent memory
    outside the run or project folder (`persist: user`, an absolute, `~` or `..` path)."""
    from openprose import nodes as n
    from openprose.vocabulary import persist_of

    problems: list[str] = []
    for node in n.walk(program):
        if isinstance(node, n.Use) and (
            kind_of(node.path.value) == "path"
            or node.path.value.startswith(("./", "../", "/", "~"))  # a skill folder
        ):
            problems.append(
                f"{program.path}:{node.span.line}:{node.span.column}: a remote program may not "
                f'import the local file "{node.path.value}"; import it by URL or registry name'
            )
        elif isinstance(node, n.AgentDef):
            for prop in node.properties:
                if prop.name.id != "persist":
                    continue
                scope, folder = persist_of(prop.value)
                where = f"{program.path}:{prop.span.line}:{prop.span.column}"
                if scope == "user":
                    problems.append(
                        f"{where}: a remote program may not keep memory in your home folder "
                        f"(`persist: user`); it may use `persist: true` or `persist: project`"
                    )
                elif scope == "path" and folder is not None and _escapes(folder):
                    problems.append(
                        f'{where}: a remote program may not keep memory at "{folder}" '
                        f"(outside the project); give a relative folder without `..`, or "
                        f"`persist: true`"
                    )
    return problems


def _escapes(folder: str) -> bool:
    path = Path(folder)
    return path.is_absolute() or folder.startswith("~") or ".." in path.parts
